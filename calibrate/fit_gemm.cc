// The GEMM model's parameters fitted to measured cuBLASLt times, through the planner's own
// planner::gemm_time_s (include/planner/cost/compute.h), so that the fitted numbers mean
// exactly what the planner does with them.
#include <Eigen/Dense>
#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "calibrate/fit.h"
#include "calibrate/timing.h"
#include "planner/cost/compute.h"
#include "planner/units.h"

namespace planner::calibrate {
namespace {

/// One parameter of the search: where it lives in the GemmModel, its bounds and first step.
struct Param {
  double lo, hi, step, tolerance;
};

/// x = [max_efficiency, k_half, launch_us, misaligned_factor, tile 1 .. tile T-1 efficiency].
class GemmObjective {
 public:
  GemmObjective(const std::vector<GemmSample>& s, const Gpu& start, Dtype dt, bool misaligned)
      : gpu_(start), dtype_(dt), fit_misaligned_(misaligned) {
    gpu_.gemm.measured.clear();  // the fit is of the model itself, not of exact-shape overrides
    for (const GemmSample& g : s) {
      shapes_.push_back({g.m, g.n, g.k});
      log_measured_.push_back(std::log(g.time_s));
    }
  }

  std::vector<Param> params() const {
    std::vector<Param> p = {{0.05, 1.0, 0.05, 1e-5},  // max_efficiency
                            {0.0, 4096, 64, 0.01},    // k_half, elements
                            {0.0, 50, 1.0, 1e-4},     // launch_us
                            {0.05, 1.0, 0.1, 1e-5}};  // misaligned_factor
    for (size_t i = 1; i < gpu_.gemm.tiles.size(); ++i) p.push_back({0.05, 1.0, 0.1, 1e-5});
    return p;
  }

  std::vector<double> initial() const {
    const GemmModel& g = gpu_.gemm;
    std::vector<double> x = {g.max_efficiency, g.k_half, g.launch_s / kUs, g.misaligned_factor};
    for (size_t i = 1; i < g.tiles.size(); ++i) x.push_back(g.tiles[i].relative_efficiency);
    return x;
  }

  GemmModel model(const std::vector<double>& x) const {
    GemmModel g = gpu_.gemm;
    g.max_efficiency = x[0], g.k_half = x[1], g.launch_s = x[2] * kUs;
    if (fit_misaligned_) g.misaligned_factor = x[3];
    for (size_t i = 1; i < g.tiles.size(); ++i) g.tiles[i].relative_efficiency = x[3 + i];
    return g;
  }

  /// log predicted - log measured, per sample.
  Eigen::VectorXd residuals(const std::vector<double>& x) {
    ++evaluations;
    Gpu gpu = gpu_;
    gpu.gemm = model(x);
    Eigen::VectorXd r(static_cast<Eigen::Index>(shapes_.size()));
    for (size_t i = 0; i < shapes_.size(); ++i)
      r(Eigen::Index(i)) = std::log(gemm_time_s(gpu, dtype_, shapes_[i])) - log_measured_[i];
    return r;
  }
  /// Sum of squared log errors.
  double operator()(const std::vector<double>& x) { return residuals(x).squaredNorm(); }

  bool fits_misaligned() const { return fit_misaligned_; }
  int evaluations = 0;

 private:
  Gpu gpu_;
  Dtype dtype_;
  bool fit_misaligned_;
  std::vector<GemmShape> shapes_;
  std::vector<double> log_measured_;
};

/// Coarse grid over the three global parameters; the others stay at the start.
std::vector<double> coarse_grid(GemmObjective& f, std::vector<double> x) {
  double best = f(x);
  std::vector<double> best_x = x;
  for (double eff = 0.30; eff <= 1.0001; eff += 0.05)
    for (double kh : {0.0, 32.0, 64.0, 96.0, 128.0, 192.0, 256.0, 384.0, 512.0, 768.0, 1024.0})
      for (double launch : {0.0, 2.0, 4.0, 8.0}) {
        x[0] = std::min(eff, 1.0), x[1] = kh, x[2] = launch;
        const double v = f(x);
        if (v < best) best = v, best_x = x;
      }
  return best_x;
}

/// Levenberg-Marquardt on the log residuals with a forward-difference Jacobian, steps clamped
/// to the bounds: moves the coupled parameters (max_efficiency against k_half against the tile
/// efficiencies) together, which a search along one coordinate at a time cannot.
std::vector<double> levenberg_marquardt(GemmObjective& f, std::vector<double> x) {
  const std::vector<Param> p = f.params();
  std::vector<size_t> active;
  for (size_t i = 0; i < p.size(); ++i)
    if (i != 3 || f.fits_misaligned()) active.push_back(i);
  Eigen::VectorXd r = f.residuals(x);
  double cost = r.squaredNorm(), lambda = 1e-3;
  for (int iter = 0; iter < 100 && cost > 1e-24; ++iter) {
    Eigen::MatrixXd jac(r.size(), Eigen::Index(active.size()));
    for (size_t j = 0; j < active.size(); ++j) {
      const size_t i = active[j];
      std::vector<double> y = x;
      const double h = 1e-6 * std::max(1.0, std::abs(x[i]));
      y[i] = x[i] + h <= p[i].hi ? x[i] + h : x[i] - h;
      jac.col(Eigen::Index(j)) = (f.residuals(y) - r) / (y[i] - x[i]);
    }
    const Eigen::MatrixXd a = jac.transpose() * jac;
    const Eigen::VectorXd g = jac.transpose() * r;
    bool improved = false;
    while (!improved && lambda < 1e10) {
      Eigen::MatrixXd damped = a;
      damped.diagonal() += lambda * (a.diagonal().array() + 1e-12).matrix();
      const Eigen::VectorXd step = damped.ldlt().solve(-g);
      std::vector<double> y = x;
      for (size_t j = 0; j < active.size(); ++j)
        y[active[j]] =
            std::clamp(x[active[j]] + step(Eigen::Index(j)), p[active[j]].lo, p[active[j]].hi);
      const Eigen::VectorXd ry = f.residuals(y);
      if (ry.squaredNorm() < cost) {
        improved = cost - ry.squaredNorm() > 1e-14 * cost;
        x = y, r = ry, cost = ry.squaredNorm(), lambda = std::max(1e-9, lambda / 10);
        if (!improved) return x;
      } else {
        lambda *= 10;
      }
    }
    if (!improved) break;
  }
  return x;
}

/// Compass search: try +-step on each coordinate, keep any improvement, halve the steps when
/// none helps; restarted twice with larger steps to leave kinks of the max-over-tiles model.
std::vector<double> compass_search(GemmObjective& f, std::vector<double> x) {
  const std::vector<Param> p = f.params();
  double best = f(x);
  for (int restart = 0; restart < 3; ++restart) {
    std::vector<double> step(p.size());
    for (size_t i = 0; i < p.size(); ++i) step[i] = p[i].step / (1 << (2 * restart));
    for (int iter = 0; iter < 400 && f.evaluations < 40000; ++iter) {
      bool improved = false;
      for (size_t i = 0; i < p.size(); ++i) {
        if (i == 3 && !f.fits_misaligned()) continue;
        for (double sign : {1.0, -1.0}) {
          std::vector<double> y = x;
          y[i] = std::clamp(x[i] + sign * step[i], p[i].lo, p[i].hi);
          if (y[i] == x[i]) continue;
          const double v = f(y);
          if (v < best - 1e-15) best = v, x = y, improved = true;
        }
      }
      if (improved) continue;
      bool converged = true;
      for (size_t i = 0; i < p.size(); ++i) {
        step[i] /= 2;
        converged = converged && step[i] < p[i].tolerance;
      }
      if (converged) break;
    }
  }
  return x;
}

bool aligned(const GemmSample& g, int alignment) {
  return std::fmod(g.m, alignment) == 0 && std::fmod(g.n, alignment) == 0 &&
         std::fmod(g.k, alignment) == 0;
}

}  // namespace

GemmFit fit_gemm(const std::vector<GemmSample>& all, const Gpu& start, Dtype dtype) {
  std::vector<GemmSample> s;
  for (const GemmSample& g : all)
    if (g.dtype == dtype) s.push_back(g);
  if (s.empty())
    throw std::invalid_argument(std::string("no ") + to_string(dtype) + " GEMM samples");
  if (start.gemm.tiles.empty() || !(start.peak_flops[int(dtype)] > 0))
    throw std::invalid_argument("the base profile needs GEMM tiles and a peak for the dtype");
  const bool misaligned = std::any_of(
      s.begin(), s.end(), [&](const GemmSample& g) { return !aligned(g, start.gemm.alignment); });
  GemmObjective f(s, start, dtype, misaligned);
  std::vector<double> x = coarse_grid(f, f.initial());
  x = levenberg_marquardt(f, compass_search(f, levenberg_marquardt(f, x)));
  GemmFit fit;
  fit.model = f.model(x);
  fit.dtype = dtype;
  fit.samples = static_cast<int>(s.size());
  fit.misaligned_fitted = misaligned;
  fit.rms_log_err = std::sqrt(f(x) / double(s.size()));
  fit.evaluations = f.evaluations;
  Gpu gpu = start;
  gpu.gemm = fit.model;
  for (const GemmSample& g : s)
    fit.max_rel_err = std::max(fit.max_rel_err,
                               std::abs(gemm_time_s(gpu, dtype, {g.m, g.n, g.k}) / g.time_s - 1));
  return fit;
}

double median_time_ratio(const std::vector<GemmSample>& samples, const Gpu& gpu, Dtype dtype) {
  std::vector<double> r;
  for (const GemmSample& g : samples)
    if (g.dtype == dtype) r.push_back(g.time_s / gemm_time_s(gpu, dtype, {g.m, g.n, g.k}));
  return median(r);
}

}  // namespace planner::calibrate
