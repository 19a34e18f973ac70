// --plan strings, through `planner estimate` (and `--format json` for every other input).
#include "fuzz_common.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string plan(reinterpret_cast<const char*>(data), size);
  if (plan.find('\0') != std::string::npos) return 0;  // an argv string cannot hold NUL
  std::vector<std::string> args = {"estimate",
                                   "--model",
                                   fuzz::source("configs/models/gpt3-1.3b.yaml"),
                                   "--cluster",
                                   fuzz::source("hw_profiles/dgx-h100-80gb.yaml"),
                                   "--plan",
                                   plan,
                                   "--global-batch",
                                   "64"};
  if (size % 2) args.insert(args.end(), {"--format", "json"});
  fuzz::run_cli(args, plan);
  return 0;
}
