// planner-validate: runs the kernels of one pipeline stage's layer, as `planner validate`
// describes them in a workload JSON, on this machine's GPU, checks each against a CPU reference,
// times them, and writes the measured times back as JSON for `planner validate` to compare with
// the prediction. Logs go to stderr; stdout carries only --dry-run's listing.
//
// Exit codes: 0 done; 1 CUDA, cuBLAS or NCCL error; 2 bad input or no CUDA device; 3 watchdog
// (a collective that did not finish); 4 a kernel failed its correctness check.
#include <cublasLt.h>
#include <cuda_runtime.h>
#include <fmt/core.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <cstdlib>
#include <map>

#include "calibrate/context.h"
#include "calibrate/harness.h"
#include "calibrate/matmul.h"
#include "calibrate/validate_check.h"
#include "calibrate/validate_nccl.h"
#include "calibrate/validate_time.h"
#include "calibrate/watchdog.h"
#include "planner/error.h"
#include "planner/format.h"
#include "planner/io/output.h"

using namespace planner;
using namespace planner::calibrate;

namespace {

struct Options {
  std::string workload, out;
  int iters = 20, device = 0;
  bool dry_run = false;
  double timeout_s = 120;
  unsigned long long seed = 42;
};

void log(const std::string& line) {
  fmt::print(stderr, "{}\n", line);
  std::fflush(stderr);
}

RepeatPolicy policy(const Options& o) {
  RepeatPolicy p;
  p.max_repeats = std::max(1, o.iters);
  p.min_repeats = std::min(p.min_repeats, p.max_repeats);
  return p;
}

std::string device_string(const RunContext& c) {
  return c.gpu + ", driver " + c.driver + ", CUDA " + c.cuda_runtime + ", cuBLAS " + c.cublas +
         ", NCCL " + c.nccl;
}

/// What a kernel achieved: TFLOP/s for matrix work, GB/s (its kernels' bytes) otherwise.
std::string achieved(const WorkKernel& k, const KernelRun& r, double t) {
  if (k.flops > 0) return planner::fmt("{:>7.1f} TFLOP/s", k.flops / t / 1e12);
  return planner::fmt("{:>7.0f} GB/s   ", run_bytes(r) / t / 1e9);
}

/// Times every kernel of the workload (each distinct run once) after a spin-up.
std::vector<double> time_kernels(const RunnerWorkload& w, const TimingSetup& setup) {
  std::vector<KernelRun> runs;
  for (size_t i = 0; i < w.kernels.size(); ++i) runs.push_back(kernel_run(w, i));
  TimingSetup spin = setup;  // clocks and power settle on the first kernel (~0.3 s)
  spin.policy.warmup_s = 0.3, spin.policy.min_repeats = spin.policy.max_repeats = 1;
  (void)time_run(runs.front(), spin);
  log("#\n#   i  kernel            pass             rec  pred_us   meas_us   diff%   achieved      "
      "   runs");
  std::map<std::string, RepeatStats> done;
  std::vector<double> times;
  for (size_t i = 0; i < runs.size(); ++i) {
    const WorkKernel& k = w.kernels[i];
    const std::string key = describe(runs[i]);
    auto it = done.find(key);
    if (it == done.end()) it = done.emplace(key, time_run(runs[i], setup)).first;
    const double t = it->second.median_s;
    times.push_back(t);
    const char* pass = k.pass == Pass::forward         ? "forward"
                       : k.pass == Pass::backward_data ? "backward_data"
                                                       : "backward_weight";
    log(
        planner::fmt("{:5}  {:<16}  {:<15}  {:<3} {:>8.1f}  {:>8.1f}  {:>+6.1f}  {}  "
                     "{} ({} reps, spread {:.1f}%)",
                     i, k.name, pass, k.recompute ? "yes" : "", k.predicted_s * 1e6, t * 1e6,
                     100 * (k.predicted_s - t) / t, achieved(k, runs[i], t), key,
                     it->second.repeats, 100 * it->second.spread));
  }
  return times;
}

int run(const Options& o, const RunnerWorkload& w) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess || count == 0) {
    fmt::print(stderr, "planner-validate: no CUDA device ({})\n",
               e != cudaSuccess ? cudaGetErrorString(e) : "none visible");
    return 2;
  }
  if (o.device < 0 || o.device >= count)
    throw InputError("", 0, "--device", planner::fmt("this machine has GPUs 0..{}", count - 1));
  CAL_CUDA(cudaSetDevice(o.device));
  RunnerResults results;
  const RunContext ctx = gather_context(o.device, {}, count, 1, "", "validate");
  results.device = device_string(ctx);
  log("# planner-validate " + std::string(PLANNER_VERSION) + " on " + results.device);
  for (const std::string& line : dry_run_lines(w, count)) log(line);
  cublasLtHandle_t lt = nullptr;
  CAL_CUBLAS(cublasLtCreate(&lt));
  cudaStream_t stream = nullptr;
  CAL_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  log("#\n# correctness against the CPU reference (relative error, tolerance " +
      planner::fmt("{:g}", kCheckTolerance) + "):");
  for (const CheckResult& c : check_kernels(w, lt, stream, o.seed, [](const CheckResult& c) {
         log(planner::fmt("#   {:<62} {:.2e}", c.kernel, c.relative_error));
       }))
    results.checks.push_back({c.kernel, c.relative_error});
  results.kernels_s = time_kernels(w, {o.device, lt, stream, policy(o), o.seed});
  cudaStreamDestroy(stream);
  cublasLtDestroy(lt);
  const CollectiveTimes ct = time_collectives(w, policy(o), o.timeout_s, o.seed, count, log);
  results.collectives_s = ct.collectives_s, results.dp_s = ct.dp_s;
  results.boundary_s = ct.boundary_s;
  results.collectives_exposed_s = ct.collectives_exposed_s;
  io::write_file_atomically(o.out, results_json(results));
  log("# wrote " + o.out);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "planner-validate: run a planner workload's kernels on this GPU, check and time them"};
  app.set_version_flag("--version", std::string("planner-validate ") + PLANNER_VERSION);
  Options o;
  app.add_option("--workload", o.workload, "workload JSON (planner validate --workload-out)")
      ->required();
  app.add_option("--out", o.out, "results JSON to write (what planner validate --measured reads)");
  app.add_option("--iters", o.iters,
                 "timed batches per kernel at most (median reported; default 20)");
  app.add_flag("--dry-run", o.dry_run, "list the kernels that would run; touches no GPU");
  app.add_option("--device", o.device, "CUDA device for the kernels (default 0)");
  app.add_option("--timeout-s", o.timeout_s,
                 "watchdog: longest one NCCL step may take (default 120)");
  app.add_option("--seed", o.seed, "seed of the random inputs");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  try {
    const RunnerWorkload w = load_runner_workload(o.workload);
    if (o.dry_run) {
      fmt::print("# planner-validate {} --dry-run: {}\n", PLANNER_VERSION, o.workload);
      for (const std::string& line : dry_run_lines(w, -1)) fmt::print("{}\n", line);
      return 0;
    }
    if (o.out.empty()) throw InputError("", 0, "--out", "is required (the results JSON to write)");
    return run(o, w);
  } catch (const InputError& e) {
    fmt::print(stderr, "planner-validate: error: {}\n", e.what());
    return 2;
  } catch (const CheckFailure& e) {
    fmt::print(stderr, "planner-validate: correctness check failed: {}\n", e.what());
    return 4;
  } catch (const CollectiveTimeout& e) {
    fmt::print(stderr, "planner-validate: watchdog: {}\n", e.what());
    std::fflush(stderr);
    std::_Exit(3);  // communicators were aborted: skip destructors that could wait on them
  } catch (const std::exception& e) {
    fmt::print(stderr, "planner-validate: error: {}\n", e.what());
    return 1;
  }
}
