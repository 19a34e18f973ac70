#include "calibrate/sweeps.h"

#include <algorithm>
#include <set>
#include <tuple>

#include "planner/units.h"

namespace planner::calibrate {
namespace {

struct Grid {
  std::vector<int> hidden, tp, tokens, squares;
  bool misaligned_pair = false;
};

/// Grids per sweep size. Default: 6 x 4 x 3 transformer shapes x 12 GEMMs for the first dtype,
/// about 70 s on an H200 (estimate_gemm_sweep_s; tests/test_calibrate_fit.cc keeps it < 150 s).
Grid primary_grid(SweepSize s) {
  switch (s) {
    case SweepSize::quick:
      return {{2048, 8192}, {1, 8}, {4096}, {2048, 8192}, true};
    case SweepSize::standard:
      return {{1024, 2048, 4096, 8192, 16384, 32768},
              {1, 2, 4, 8},
              {1024, 4096, 16384},
              {1024, 2048, 4096, 8192, 16384},
              true};
    case SweepSize::full:
      return {{1024, 2048, 4096, 8192, 16384, 32768},
              {1, 2, 4, 8},
              {1024, 2048, 4096, 8192, 16384, 32768},
              {1024, 2048, 4096, 8192, 16384},
              true};
  }
  return {};
}

Grid secondary_grid(SweepSize s) {
  switch (s) {
    case SweepSize::quick:
      return {{}, {}, {}, {2048, 8192}, false};
    case SweepSize::standard:
      return {{4096, 16384}, {1, 8}, {4096}, {1024, 2048, 4096, 8192, 16384}, false};
    case SweepSize::full:
      return primary_grid(s);
  }
  return {};
}

/// Maps a planner shape to cuBLAS (see GemmCase): fwd {T, out, in} -> TN C[out x T];
/// bwd_data {T, in, out} -> NN C[in x T]; bwd_weight {in, out, T} -> NT C[in x out].
GemmCase make_case(Dtype dt, const std::string& linear, const std::string& orientation,
                   const GemmShape& g) {
  GemmCase c;
  c.dtype = dt, c.linear = linear, c.orientation = orientation, c.shape = g;
  const bool weight = orientation == "bwd_weight";
  c.cm = weight ? g.m : g.n;
  c.cn = weight ? g.n : g.m;
  c.ck = g.k;
  c.transa = orientation == "fwd" ? 'T' : 'N';
  c.transb = weight ? 'T' : 'N';
  if (dt == Dtype::fp8) c.transa = 'T', c.transb = 'N';
  return c;
}

void add_linear(std::vector<GemmCase>& out, Dtype dt, const std::string& linear, int h, int tp,
                int tokens, const LinearShapes& s) {
  for (auto [name, g] : {std::pair{"fwd", s.fwd}, std::pair{"bwd_data", s.bwd_data},
                         std::pair{"bwd_weight", s.bwd_weight}}) {
    GemmCase c = make_case(dt, linear, name, g);
    c.hidden = h, c.tp = tp, c.tokens = tokens;
    out.push_back(c);
  }
}

void add_grid(std::vector<GemmCase>& out, Dtype dt, const Grid& g) {
  for (int h : g.hidden)
    for (int tp : g.tp)
      for (int t : g.tokens)
        for (const NamedLinear& l : layer_linears(h, tp, t))
          add_linear(out, dt, l.name, h, tp, t, l.shapes);
  for (int s : g.squares)
    out.push_back(make_case(dt, "square", "fwd", {double(s), double(s), double(s)}));
  if (g.misaligned_pair) {
    add_linear(out, dt, "ffn-aligned", 4096, 1, 4096, linear_shapes(4096, 4096, 10944));
    add_linear(out, dt, "ffn-misaligned", 4096, 1, 4096, linear_shapes(4096, 4096, 10922));
  }
}

}  // namespace

std::vector<NamedLinear> layer_linears(int hidden, int tp, int tokens) {
  const double h = hidden, t = tokens;
  return {{"qkv", linear_shapes(t, h, 3 * h / tp)},
          {"proj", linear_shapes(t, h / tp, h)},
          {"fc1", linear_shapes(t, h, 4 * h / tp)},
          {"fc2", linear_shapes(t, 4 * h / tp, h)}};
}

const char* to_string(SweepSize s) {
  switch (s) {
    case SweepSize::quick:
      return "quick";
    case SweepSize::standard:
      return "default";
    case SweepSize::full:
      return "full";
  }
  return "?";
}

std::vector<GemmCase> gemm_sweep(SweepSize size, const std::vector<Dtype>& dtypes) {
  std::vector<GemmCase> all;
  for (size_t i = 0; i < dtypes.size(); ++i)
    add_grid(all, dtypes[i], i == 0 ? primary_grid(size) : secondary_grid(size));
  std::vector<GemmCase> unique;
  std::set<std::tuple<int, char, char, double, double, double>> seen;
  for (const GemmCase& c : all)
    if (seen.insert({int(c.dtype), c.transa, c.transb, c.cm, c.cn, c.ck}).second)
      unique.push_back(c);
  return unique;
}

double gemm_operand_bytes(const GemmCase& c) {
  const double in = c.dtype == Dtype::fp8 ? 1 : c.dtype == Dtype::tf32 ? 4 : 2;
  const double out = c.dtype == Dtype::tf32 ? 4 : 2;  // fp8 GEMMs write bf16
  return in * (c.cm * c.ck + c.ck * c.cn) + out * c.cm * c.cn;
}

std::vector<double> hbm_sizes(SweepSize size) {
  if (size == SweepSize::quick) return {64 * kMiB, 256 * kMiB, kGiB};
  return {kMiB, 4 * kMiB, 16 * kMiB, 64 * kMiB, 256 * kMiB, kGiB, 4 * kGiB};
}

std::vector<double> pcie_sizes(SweepSize size) {
  if (size == SweepSize::quick) return {256 * kMiB};
  return {kMiB, 16 * kMiB, 256 * kMiB};
}

std::vector<double> message_sizes(double min_bytes, double max_bytes) {
  std::vector<double> sizes;
  for (double s = std::max(1.0, min_bytes); s <= max_bytes; s *= 2) sizes.push_back(s);
  return sizes;
}

double estimate_gemm_sweep_s(const std::vector<GemmCase>& cases, const Gpu& gpu,
                             const RepeatPolicy& p) {
  constexpr double kHostLaunchS = 5e-6;    // cuBLASLt enqueue per GEMM, covered by the delay kernel
  constexpr double kPerCaseSetupS = 2e-3;  // descriptors, heuristic query, synchronisation
  double total = 0;
  for (const GemmCase& c : cases) {
    const double t = gemm_time_s(gpu, c.dtype, c.shape);
    const int iters = batch_iterations(t, p.min_batch_s, p.max_batch_iters);
    const double batch = iters * t + iters * kHostLaunchS;
    const double warmup = 3 * t + std::max(p.warmup_s, batch);
    total += kPerCaseSetupS + warmup + p.min_repeats * batch;
  }
  return total;
}

}  // namespace planner::calibrate
