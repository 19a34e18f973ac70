#pragma once
/// The harness shared by every measurement of planner-calibrate (nccl-tests' common.cu in
/// spirit): error checks, CUDA-event timing with warm-up and the stopping rule, the `#` context
/// lines, tables and the progress bar. Host code; compiled by the C++ compiler.
#include <cuda_runtime.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "calibrate/samples.h"
#include "calibrate/timing.h"

namespace planner::calibrate {

/// A failed CUDA, cuBLAS or NCCL call: "gemm.cc:120: cublasLtMatmul(...): <status>".
class DeviceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};
[[noreturn]] void device_failure(const char* file, int line, const char* call,
                                 const std::string& what);

#define CAL_CUDA(call)                                                                             \
  do {                                                                                             \
    const cudaError_t cal_e_ = (call);                                                             \
    if (cal_e_ != cudaSuccess)                                                                     \
      ::planner::calibrate::device_failure(__FILE__, __LINE__, #call, cudaGetErrorString(cal_e_)); \
  } while (0)

/// A stream and the device it belongs to: the unit CUDA events are recorded on.
struct DeviceStream {
  int device = 0;
  cudaStream_t stream = nullptr;
};

/// One measurement: `enqueue(iters)` puts `iters` back-to-back operations on every stream;
/// `wait()` returns when they are done (default: cudaStreamSynchronize; NCCL: the watchdog's);
/// `reduce_max` is the max over all processes (MPI), so that every rank takes the same number
/// of iterations and stops after the same batch. `hide_launch_gaps` puts a delay kernel before
/// each batch so that the host has enqueued the whole batch before the GPU starts it: the batch
/// then measures GPU time, not launch rate (for GEMMs and copies of a few microseconds).
struct TimedOp {
  std::vector<DeviceStream> streams;
  std::function<void(int)> enqueue;
  std::function<void()> wait;
  std::function<double(double)> reduce_max;
  bool hide_launch_gaps = false;
};

/// Warm-up (two single operations for lazy initialisation, then batches for `warmup_s`), then
/// timed batches of at least `min_batch_s` until the stopping rule (timing.h) says enough.
/// Time per operation = the slowest stream's event time / iterations.
RepeatStats measure(const TimedOp& op, const RepeatPolicy& policy);

/// Results on stdout (only where `enabled`: MPI rank 0), and a progress bar on stderr when
/// stderr is a terminal; table lines clear the bar and redraw it, so both stay readable.
class Output {
 public:
  Output(bool enabled, int total_steps);
  ~Output();
  bool enabled() const { return enabled_; }
  void line(const std::string& text);  ///< one line on stdout
  void step(const std::string& what);  ///< one measurement done
  void finish();                       ///< removes the bar

 private:
  void draw();
  void clear();
  bool enabled_, bar_;
  int total_, done_ = 0;
  std::string what_;
  std::chrono::steady_clock::time_point start_;
};

/// A fixed-width table row: cells right-aligned to `widths`; the header row starts with '#'.
std::string table_row(const std::vector<int>& widths, const std::vector<std::string>& cells,
                      bool header = false);

/// GPU, driver, CUDA, cuBLAS and NCCL versions of `device`, hosts, date, command line.
RunContext gather_context(int device, const std::vector<std::string>& hosts, int gpus_per_node,
                          int nodes, const std::string& command_line, const std::string& sweep);
/// The context as `#` lines (nccl-tests' header style).
std::vector<std::string> context_lines(const RunContext& c);

}  // namespace planner::calibrate
