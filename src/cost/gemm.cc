// The GEMM model: a GEMM's efficiency from its shape (tiles, waves, the short-K penalty,
// alignment) and its time, corrected near the shapes a calibration measured.
#include <algorithm>
#include <cassert>
#include <cmath>

#include "planner/cost/compute.h"

namespace planner {
namespace {

/// Bytes per element of GEMM operands and outputs in each precision.
double element_bytes(Dtype d) {
  switch (d) {
    case Dtype::fp8:
      return 1;
    case Dtype::mxfp8:
      return 1 + kMxfp8ScaleBytesPerElement;
    case Dtype::tf32:
      return 4;
    default:
      return 2;
  }
}

/// Split-K factors cuBLAS may use when the output has too few tiles to fill the GPU.
constexpr int kSplitK[] = {1, 2, 4, 8};

bool aligned(double x, int alignment) { return std::fmod(x, alignment) == 0.0; }

}  // namespace

double gemm_efficiency(const Gpu& gpu, const GemmShape& g) {
  const GemmModel& gm = gpu.gemm;
  assert(g.m > 0 && g.n > 0 && g.k > 0 && gpu.sms > 0);
  double best = 0;
  for (const GemmTile& t : gm.tiles) {
    const double tiles = std::ceil(g.m / t.m) * std::ceil(g.n / t.n) * g.batch;
    for (int split : kSplitK) {
      const double k = g.k / split;
      if (split > 1 && k < 256) break;  // cuBLAS does not split short main loops
      const double waves = std::ceil(tiles * split / gpu.sms);
      const double useful = g.m * g.n * g.batch * split;
      const double quantization = useful / (waves * gpu.sms * t.m * t.n);
      const double mainloop = k / (k + gm.k_half);
      best = std::max(best, t.relative_efficiency * quantization * mainloop);
    }
  }
  const bool all_aligned =
      aligned(g.m, gm.alignment) && aligned(g.n, gm.alignment) && aligned(g.k, gm.alignment);
  return gm.max_efficiency * best * (all_aligned ? 1.0 : gm.misaligned_factor);
}

namespace {

/// The parametric model's time (no measured shapes).
double model_gemm_time_s(const Gpu& gpu, Dtype dtype, const GemmShape& g) {
  const double peak = gpu.peak_flops[static_cast<int>(dtype)];
  const double ratio = is_fp8(dtype) ? kFp8GemmRelativeEfficiency : 1.0;
  const double compute_s = g.flops() / (peak * ratio * gemm_efficiency(gpu, g));
  const double bytes = element_bytes(dtype) * g.batch * (g.m * g.k + g.k * g.n + g.m * g.n);
  const double memory_s = bytes / gpu.hbm_achieved_Bps();
  return std::max(compute_s, memory_s) + gpu.gemm.launch_s;
}

}  // namespace

double gemm_time_s(const Gpu& gpu, Dtype dtype, const GemmShape& g) {
  const double peak = gpu.peak_flops[static_cast<int>(dtype)];
  assert(peak > 0);
  const double model_s = model_gemm_time_s(gpu, dtype, g);
  if (gpu.gemm.measured.empty()) return model_s;
  // A measured shape replaces the model; measured shapes near it (within kMeasuredNearFactor in
  // each of m, n and k, same batch and precision) correct it by their measured/model time ratio,
  // weighted 1 - d / ln(factor) by their largest log distance d, beside the model's own weight.
  const double radius = std::log(kMeasuredNearFactor);
  double sum_w = kMeasuredPriorWeight, sum_log = 0;
  for (const MeasuredGemm& x : gpu.gemm.measured) {
    if (x.dtype != dtype || x.batch != g.batch) continue;
    const double d = std::max({std::fabs(std::log(g.m / x.m)), std::fabs(std::log(g.n / x.n)),
                               std::fabs(std::log(g.k / x.k))});
    if (d == 0) return g.flops() / (peak * x.efficiency);
    if (d >= radius) continue;
    const GemmShape at{x.m, x.n, x.k, x.batch};
    const double measured_s = at.flops() / (peak * x.efficiency);
    const double w = 1 - d / radius;
    sum_w += w, sum_log += w * std::log(measured_s / model_gemm_time_s(gpu, dtype, at));
  }
  return model_s * std::exp(sum_log / sum_w);
}

LinearShapes linear_shapes(double tokens, double in, double out) {
  LinearShapes s;
  s.fwd = {tokens, out, in};         // y[T x out] = x[T x in] W[in x out]
  s.bwd_data = {tokens, in, out};    // dx[T x in] = dy[T x out] W^T
  s.bwd_weight = {in, out, tokens};  // dW[in x out] = x^T dy, reduced over tokens
  return s;
}

}  // namespace planner
