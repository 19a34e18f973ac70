#pragma once
/// Correctness before timing: every kernel planner-validate will time (its own CUDA kernels and
/// the cuBLASLt layouts) runs on small random inputs and is compared with the CPU reference
/// (validate_reference.h). Shapes are chosen to reach the edges: partial tiles, several loop
/// iterations per thread, causal offsets, grouped heads when the workload has them.
#include <cublasLt.h>
#include <cuda_runtime.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "calibrate/validate_workload.h"

namespace planner::calibrate {

/// Relative error allowed (max |got - want| / max |want|): bf16 keeps 8 bits of mantissa
/// (2^-8 = 0.4% per rounding); a few roundings and fp32 sums in another order stay well under.
inline constexpr double kCheckTolerance = 2e-2;

class CheckFailure : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct CheckResult {
  std::string kernel;  ///< "flash attention bwd dK (bf16, d=128)"
  double relative_error = 0;
};

/// Checks what the workload's kernels need; calls `report` after each comparison and throws
/// CheckFailure naming the kernel at the first one over kCheckTolerance.
std::vector<CheckResult> check_kernels(const RunnerWorkload& w, cublasLtHandle_t lt,
                                       cudaStream_t stream, unsigned long long seed,
                                       const std::function<void(const CheckResult&)>& report);

}  // namespace planner::calibrate
