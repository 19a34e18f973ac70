// The validate runner's results JSON (planner-validate --out; planner validate --measured),
// through `planner validate` on the plan it was measured for.
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string measured =
      fuzz::as_file({reinterpret_cast<const char*>(data), size}, "measured.json");
  fuzz::run_cli(
      {"validate", "--model", fuzz::source("configs/models/megatron-1.7b.yaml"), "--cluster",
       fuzz::source("hw_profiles/dgx-h200.yaml"), "--plan", "tp=1,pp=1,dp=8,mbs=16,gbs=512",
       "--measured", measured, size % 2 ? "--format=json" : "--format=text"},
      {reinterpret_cast<const char*>(data), size});
  return 0;
}
