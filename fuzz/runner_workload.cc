// The validate runner's workload JSON (planner validate --workload-out; planner-validate
// --workload): parse_runner_workload, then what the runner derives from it before any GPU work.
#include "calibrate/validate_workload.h"
#include "fuzz_common.h"
#include "planner/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace planner::calibrate;
  RunnerWorkload w;
  try {
    w = parse_runner_workload({reinterpret_cast<const char*>(data), size}, "workload.json");
  } catch (const planner::InputError&) {
    return 0;
  }
  for (int gpus : {1, 8}) (void)dry_run_lines(w, gpus);
  for (size_t i = 0; i < w.kernels.size(); ++i) {
    const KernelRun r = kernel_run(w, i);
    (void)describe(r);
    if (!(run_bytes(r) >= 0)) __builtin_trap();
  }
  return 0;
}
