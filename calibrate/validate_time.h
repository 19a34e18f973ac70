#pragma once
/// Timing one workload kernel at its real shape: fresh random inputs in device memory, the
/// kernel (or its short sequence of kernels) enqueued back to back behind a delay kernel, CUDA
/// events, warm-up, the median of batches by the harness's stopping rule (harness.h, timing.h).
#include <cublasLt.h>
#include <cuda_runtime.h>

#include "calibrate/timing.h"
#include "calibrate/validate_workload.h"

namespace planner::calibrate {

struct TimingSetup {
  int device = 0;
  cublasLtHandle_t lt = nullptr;
  cudaStream_t stream = nullptr;
  RepeatPolicy policy;
  unsigned long long seed = 42;
};

/// Device memory one run needs (inputs, outputs, workspaces), bytes.
double run_device_bytes(const KernelRun& r);

/// Median seconds of one execution of `r`. Throws DeviceError when it does not fit in free
/// memory or cuBLASLt has no algorithm for it.
RepeatStats time_run(const KernelRun& r, const TimingSetup& setup);

}  // namespace planner::calibrate
