// The validate runner's results JSON (planner-validate --out; planner validate --measured),
// through `planner validate` on the plan it was measured for: a data-parallel one, or (by the
// input's size) a pipelined one with TP and stage-boundary collectives.
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string measured =
      fuzz::as_file({reinterpret_cast<const char*>(data), size}, "measured.json");
  const bool staged = size % 4 >= 2;
  fuzz::run_cli({"validate", "--model",
                 fuzz::source(staged ? "configs/models/megatron-18.4b.yaml"
                                     : "configs/models/megatron-1.7b.yaml"),
                 "--cluster", fuzz::source("hw_profiles/dgx-h200.yaml"), "--plan",
                 staged ? "tp=8,pp=4,dp=2,mbs=1,gbs=32,vpp=2" : "tp=1,pp=1,dp=8,mbs=16,gbs=512",
                 "--measured", measured, size % 2 ? "--format=json" : "--format=text"},
                {reinterpret_cast<const char*>(data), size});
  return 0;
}
