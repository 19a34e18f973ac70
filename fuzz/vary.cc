// --vary texts, through `planner compare` (the baseline column and the varied one).
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string vary(reinterpret_cast<const char*>(data), size);
  if (vary.find('\0') != std::string::npos) return 0;
  fuzz::run_cli({"compare", "--model", fuzz::source("configs/models/gpt3-13b.yaml"), "--cluster",
                 fuzz::source("hw_profiles/dgx-h200.yaml"), "--plan", "tp=8,pp=2,mbs=1,gbs=512",
                 "--gpus", "64", "--vary", vary},
                vary);
  return 0;
}
