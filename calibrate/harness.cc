#include "calibrate/harness.h"

#include <cublasLt.h>
#include <fmt/core.h>
#include <nccl.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "calibrate/context.h"
#include "calibrate/device.h"
#include "planner/format.h"
#include "planner/units.h"

namespace planner::calibrate {

void device_failure(const char* file, int line, const char* call, const std::string& what) {
  std::string f = file;
  f = f.substr(f.find_last_of('/') + 1);
  throw DeviceError(f + ":" + std::to_string(line) + ": " + call + ": " + what);
}

std::string table_row(const std::vector<int>& widths, const std::vector<std::string>& cells,
                      bool header) {
  std::string out = header ? "#" : " ";
  for (size_t i = 0; i < cells.size(); ++i) {
    const int w = i < widths.size() ? widths[i] : 10;
    out += std::string(std::max(1, w - int(cells[i].size())), ' ') + cells[i];
  }
  return out;
}

// ---- timing ---------------------------------------------------------------------------------

namespace {

/// A start and a stop event on every stream's device.
class EventPairs {
 public:
  explicit EventPairs(const std::vector<DeviceStream>& s) : streams_(s) {
    for (const DeviceStream& d : s) {
      CAL_CUDA(cudaSetDevice(d.device));
      start_.push_back(nullptr), stop_.push_back(nullptr);
      CAL_CUDA(cudaEventCreate(&start_.back()));
      CAL_CUDA(cudaEventCreate(&stop_.back()));
    }
  }
  ~EventPairs() {
    for (size_t i = 0; i < start_.size(); ++i)
      cudaEventDestroy(start_[i]), cudaEventDestroy(stop_[i]);
  }
  void record(bool start) {
    for (size_t i = 0; i < streams_.size(); ++i) {
      CAL_CUDA(cudaSetDevice(streams_[i].device));
      CAL_CUDA(cudaEventRecord(start ? start_[i] : stop_[i], streams_[i].stream));
    }
  }
  /// The slowest stream's start-to-stop time, seconds.
  double max_elapsed_s() const {
    float worst = 0;
    for (size_t i = 0; i < start_.size(); ++i) {
      float ms = 0;
      CAL_CUDA(cudaEventElapsedTime(&ms, start_[i], stop_[i]));
      worst = std::max(worst, ms);
    }
    return worst * 1e-3;
  }

 private:
  std::vector<DeviceStream> streams_;
  std::vector<cudaEvent_t> start_, stop_;
};

}  // namespace

RepeatStats measure(const TimedOp& op, const RepeatPolicy& p) {
  EventPairs events(op.streams);
  double host_per_op_s = 20e-6;  // enqueue cost per operation, relearned every batch
  const auto batch = [&](int iters) {
    if (op.hide_launch_gaps)
      for (const DeviceStream& d : op.streams) {
        CAL_CUDA(cudaSetDevice(d.device));
        enqueue_delay(d.stream, std::min(0.05, 1.5 * iters * host_per_op_s + 20e-6));
      }
    events.record(true);
    const auto t0 = std::chrono::steady_clock::now();
    op.enqueue(iters);
    host_per_op_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / iters;
    events.record(false);
    if (op.wait) {
      op.wait();
    } else {
      for (const DeviceStream& d : op.streams) CAL_CUDA(cudaStreamSynchronize(d.stream));
    }
    const double t = events.max_elapsed_s();
    return (op.reduce_max ? op.reduce_max(t) : t) / iters;
  };
  batch(1);  // lazy initialisation: module loads, heuristics, NCCL connections
  const int iters = batch_iterations(batch(1), p.min_batch_s, p.max_batch_iters);
  for (double warm = 0; warm < p.warmup_s;) warm += std::max(batch(iters) * iters, 1e-4);
  Repeats repeats(p);
  while (!repeats.done()) {
    const double per_op = batch(iters);
    repeats.add(per_op, per_op * iters);
  }
  return repeats.stats();
}

// ---- output ---------------------------------------------------------------------------------

Output::Output(bool enabled, int total_steps)
    : enabled_(enabled),
      bar_(enabled && isatty(STDERR_FILENO)),
      total_(std::max(1, total_steps)),
      start_(std::chrono::steady_clock::now()) {}

Output::~Output() { finish(); }

void Output::clear() {
  if (bar_) std::fputs("\r\033[K", stderr);
}

void Output::draw() {
  if (!bar_) return;
  constexpr int kWidth = 30;
  const int filled = std::min(kWidth, kWidth * done_ / total_);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  fmt::print(stderr, "\r[{}{}] {:3}% {}/{} {:>3.0f} s  {:.60}", std::string(filled, '#'),
             std::string(kWidth - filled, '.'), std::min(100, 100 * done_ / total_), done_, total_,
             s, what_);
  std::fflush(stderr);
}

void Output::line(const std::string& text) {
  if (!enabled_) return;
  clear();
  std::fputs((text + "\n").c_str(), stdout);
  std::fflush(stdout);
  draw();
}

void Output::step(const std::string& what) {
  ++done_;
  what_ = what;
  draw();
}

void Output::finish() {
  clear();
  bar_ = false;
}

// ---- context --------------------------------------------------------------------------------

namespace {

std::string driver_version() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string v = parse_nvrm_driver_version(ss.str());
  if (!v.empty()) return v;
  int api = 0;
  cudaDriverGetVersion(&api);
  return "unknown (CUDA driver API " + cuda_version_string(api) + ")";
}

}  // namespace

RunContext gather_context(int device, const std::vector<std::string>& hosts, int gpus_per_node,
                          int nodes, const std::string& command_line, const std::string& sweep) {
  cudaDeviceProp prop{};
  CAL_CUDA(cudaGetDeviceProperties(&prop, device));
  RunContext c;
  c.tool = std::string("planner-calibrate ") + PLANNER_VERSION;
  c.gpu = prop.name;
  c.sms = prop.multiProcessorCount;
  c.compute_capability = std::to_string(prop.major) + "." + std::to_string(prop.minor);
  c.hbm_bytes = double(prop.totalGlobalMem);
  c.l2_bytes = double(prop.l2CacheSize);
  c.driver = driver_version();
  int runtime = 0, nccl = 0;
  CAL_CUDA(cudaRuntimeGetVersion(&runtime));
  c.cuda_runtime = cuda_version_string(runtime);
  c.cublas = cublas_version_string(static_cast<long long>(cublasLtGetVersion()));
  c.nccl = ncclGetVersion(&nccl) == ncclSuccess ? nccl_version_string(nccl) : "unknown";
  c.hosts = hosts;
  c.gpus_per_node = gpus_per_node;
  c.nodes = nodes;
  c.date = utc_now_iso8601();
  c.command_line = command_line;
  c.sweep = sweep;
  return c;
}

std::vector<std::string> context_lines(const RunContext& c) {
  std::string hosts;
  for (const std::string& h : c.hosts) hosts += (hosts.empty() ? "" : ", ") + h;
  return {"# " + c.tool + ": GEMM (cuBLASLt), memory and NCCL micro-benchmarks for the planner",
          "# command: " + c.command_line,
          "# date: " + c.date + "   hosts: " + hosts +
              fmt("  ({} node{} x {} GPU{})", c.nodes, c.nodes > 1 ? "s" : "", c.gpus_per_node,
                  c.gpus_per_node > 1 ? "s" : ""),
          "# GPU: " + c.gpu + fmt(", {} SMs, compute capability ", c.sms) + c.compute_capability +
              fmt(", {:.1f} GiB HBM, {:.0f} MiB L2", c.hbm_bytes / kGiB, c.l2_bytes / kMiB),
          "# driver " + c.driver + ", CUDA runtime " + c.cuda_runtime + ", cuBLAS " + c.cublas +
              ", NCCL " + c.nccl};
}

}  // namespace planner::calibrate
