// GEMM throughput with cuBLASLt over the shapes the planner's cost model asks about
// (sweeps.h), timed by the harness. Each result is a GemmSample in the planner's convention.
#include <cublasLt.h>

#include <algorithm>
#include <map>

#include "calibrate/device.h"
#include "calibrate/matmul.h"
#include "calibrate/measurements.h"
#include "planner/format.h"
#include "planner/units.h"

namespace planner::calibrate {
namespace {

using Types = MatmulTypes;
Types types_of(Dtype d) { return matmul_types(d); }
constexpr size_t kWorkspaceBytes = kMatmulWorkspaceBytes;

size_t align256(double bytes) { return (size_t(bytes) + 255) / 256 * 256; }
/// A's bytes rounded to 256 (B starts there), then B's: the inputs of one case.
size_t a_bytes(const GemmCase& c) {
  return align256(c.cm * c.ck * element_bytes(types_of(c.dtype).fill));
}
double input_bytes(const GemmCase& c) {
  return double(a_bytes(c)) + c.ck * c.cn * element_bytes(types_of(c.dtype).fill);
}
double output_bytes(const GemmCase& c) { return c.cm * c.cn * (c.dtype == Dtype::tf32 ? 4 : 2); }

/// Device memory for one dtype's cases: random inputs (filled once) and a separate output, so
/// that results never feed later inputs. Cases that do not fit in free memory are dropped.
struct Pool {
  DeviceBuffer inputs, outputs, workspace;
};

std::vector<GemmCase> fit_in_memory(std::vector<GemmCase> cases, Output& out) {
  size_t free_b = 0, total_b = 0;
  CAL_CUDA(cudaMemGetInfo(&free_b, &total_b));
  const double budget = 0.9 * double(free_b) - kWorkspaceBytes;
  std::sort(cases.begin(), cases.end(), [](const GemmCase& a, const GemmCase& b) {
    return input_bytes(a) + output_bytes(a) < input_bytes(b) + output_bytes(b);
  });
  const auto need = [](const std::vector<GemmCase>& v) {
    double in = 0, o = 0;
    for (const GemmCase& c : v) in = std::max(in, input_bytes(c)), o = std::max(o, output_bytes(c));
    return in + o;
  };
  while (!cases.empty() && need(cases) > budget) {
    out.line(fmt("#   skipped {} {:.0f}x{:.0f}x{:.0f}: needs more than the {:.1f} GiB free",
                 to_string(cases.back().dtype), cases.back().shape.m, cases.back().shape.n,
                 cases.back().shape.k, free_b / kGiB));
    cases.pop_back();
  }
  return cases;
}

const std::vector<int> kWidths = {15, 11, 7, 7, 7, 7, 7, 4, 7, 11, 9, 7, 5, 8};

void print_header(Dtype dt, const RepeatPolicy& p, Output& out) {
  const Types t = types_of(dt);
  out.line("");
  out.line(fmt(
      "# gemm {}: cuBLASLt, {} inputs{}, fp32 accumulation, random values in [-1, 1); "
      "median of {}..{} batches of >= {:.0f} ms",
      to_string(dt), to_string(dt), t.c == CUDA_R_16BF && dt == Dtype::fp8 ? ", bf16 output" : "",
      p.min_repeats, p.max_repeats, p.min_batch_s * 1e3));
  out.line("# m, n, k: the planner's shape (cost/compute.h); layout: cuBLAS op(A) op(B)");
  out.line(table_row(kWidths,
                     {"linear", "orient", "layout", "m", "n", "k", "hidden", "tp", "tokens",
                      "time_us", "TFLOP/s", "%peak", "reps", "spread%"},
                     true));
}

GemmSample measure_case(cublasLtHandle_t h, const GemmCase& c, const GemmRun& run, const Pool& pool,
                        cudaStream_t stream) {
  Matmul mm(h, c.dtype, {c.transa, c.transb, (long long)c.cm, (long long)c.cn, (long long)c.ck, 1});
  if (!mm.ok()) return {};
  const char* a = static_cast<const char*>(pool.inputs.get());
  const char* b = a + a_bytes(c);
  TimedOp op;
  op.streams = {{run.device, stream}};
  op.hide_launch_gaps = true;
  op.enqueue = [&](int iters) {
    for (int i = 0; i < iters; ++i) mm.run(a, b, pool.outputs.get(), pool.workspace.get(), stream);
  };
  const RepeatStats st = measure(op, run.policy);
  return {c.dtype,   c.linear,  c.orientation, c.layout(),  c.hidden,   c.tp,     c.tokens,
          c.shape.m, c.shape.n, c.shape.k,     st.median_s, st.repeats, st.spread};
}

void report(const GemmSample& g, const GemmRun& run, Output& out) {
  const double tflops = 2 * g.m * g.n * g.k / g.time_s / 1e12;
  const double peak = run.peak_flops[static_cast<int>(g.dtype)] / 1e12;
  out.line(
      table_row(kWidths, {g.linear, g.orientation, g.layout, fmt("{:.0f}", g.m), fmt("{:.0f}", g.n),
                          fmt("{:.0f}", g.k), fmt("{}", g.hidden), fmt("{}", g.tp),
                          fmt("{}", g.tokens), fmt("{:.2f}", g.time_s * 1e6), fmt("{:.1f}", tflops),
                          peak > 0 ? fmt("{:.1f}", 100 * tflops / peak) : "-", fmt("{}", g.repeats),
                          fmt("{:.1f}", 100 * g.spread)}));
}

void run_dtype(cublasLtHandle_t h, Dtype dt, const std::vector<GemmCase>& all, const GemmRun& run,
               Output& out, Samples& samples, cudaStream_t stream) {
  print_header(dt, run.policy, out);
  const std::vector<GemmCase> cases = fit_in_memory(all, out);
  double in = 0, o = 0;
  for (const GemmCase& c : cases)
    in = std::max(in, input_bytes(c)), o = std::max(o, output_bytes(c));
  Pool pool{DeviceBuffer(size_t(in)), DeviceBuffer(size_t(o)), DeviceBuffer(kWorkspaceBytes)};
  const ElementType fill = types_of(dt).fill;
  fill_uniform(pool.inputs.get(), size_t(in) / element_bytes(fill), fill, run.seed, stream);
  // A cuBLAS(Lt) status error (say, a shape no kernel supports) leaves the GPU usable: that case
  // is skipped; a sticky CUDA error ends the run (samples so far are saved by main). After
  // kMaxFailures failures in a row the dtype's remaining cases are skipped.
  constexpr int kMaxFailures = 5;
  int failures = 0;
  const auto guarded = [&](const GemmCase& c, const GemmRun& r, GemmSample& g) {
    try {
      g = measure_case(h, c, r, pool, stream);
      return std::string();
    } catch (const DeviceError& e) {
      if (cudaStreamSynchronize(stream) != cudaSuccess || cudaDeviceSynchronize() != cudaSuccess)
        throw;
      (void)cudaGetLastError();
      return std::string(e.what());
    }
  };
  if (!cases.empty()) {  // spin-up: clocks and power settle on the largest problem (~0.2 s)
    RepeatPolicy spin = run.policy;
    spin.warmup_s = 0.2, spin.min_repeats = spin.max_repeats = 1;
    GemmSample ignored;
    (void)guarded(cases.back(), {run.device, spin, run.seed, run.peak_flops}, ignored);
  }
  for (const GemmCase& c : all) {
    const auto kept = std::find_if(cases.begin(), cases.end(), [&](const GemmCase& k) {
      return k.cm == c.cm && k.cn == c.cn && k.ck == c.ck && k.transa == c.transa &&
             k.transb == c.transb;
    });
    if (kept != cases.end() && failures < kMaxFailures) {
      GemmSample g;
      const std::string error = guarded(c, run, g);
      failures = error.empty() ? 0 : failures + 1;
      if (!error.empty())
        out.line(fmt("#   {} {} {:.0f}x{:.0f}x{:.0f}: failed, skipped: {}", c.linear, c.orientation,
                     c.cm, c.cn, c.ck, error));
      else if (g.time_s > 0)
        samples.gemm.push_back(g), report(g, run, out);
      else
        out.line(fmt("#   {} {} {:.0f}x{:.0f}x{:.0f} ({}): no cuBLASLt algorithm, skipped",
                     c.linear, c.orientation, c.cm, c.cn, c.ck, c.layout()));
      if (failures == kMaxFailures)
        out.line(fmt("#   gemm {}: {} failures in a row: the remaining {} cases are skipped",
                     to_string(dt), kMaxFailures, to_string(dt)));
    }
    out.step(fmt("gemm {} {} {} {:.0f}x{:.0f}x{:.0f}", to_string(dt), c.linear, c.orientation,
                 c.shape.m, c.shape.n, c.shape.k));
  }
}

}  // namespace

void run_gemm_sweep(const std::vector<GemmCase>& cases, const GemmRun& run, Output& out,
                    Samples& samples) {
  CAL_CUDA(cudaSetDevice(run.device));
  int major = 0, minor = 0;
  CAL_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, run.device));
  CAL_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, run.device));
  cublasLtHandle_t handle = nullptr;
  CAL_CUBLAS(cublasLtCreate(&handle));
  cudaStream_t stream = nullptr;
  CAL_CUDA(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  std::map<Dtype, std::vector<GemmCase>> by_dtype;
  std::vector<Dtype> order;
  for (const GemmCase& c : cases) {
    if (by_dtype[c.dtype].empty()) order.push_back(c.dtype);
    by_dtype[c.dtype].push_back(c);
  }
  for (Dtype dt : order) {
    if (10 * major + minor < types_of(dt).min_cc) {
      out.line(fmt("# gemm {}: skipped: needs compute capability {:.1f}, this GPU has {}.{}",
                   to_string(dt), types_of(dt).min_cc / 10.0, major, minor));
      for (const GemmCase& c : by_dtype[dt]) out.step(fmt("gemm {} skipped", to_string(c.dtype)));
      continue;
    }
    run_dtype(handle, dt, by_dtype[dt], run, out, samples, stream);
  }
  CAL_CUDA(cudaStreamSynchronize(stream));
  cudaStreamDestroy(stream);
  cublasLtDestroy(handle);
}

}  // namespace planner::calibrate
