// Latency-bandwidth fits: collectives per tier (nccl-tests' definitions) and memory bandwidth.
#include <Eigen/Dense>
#include <algorithm>
#include <cassert>
#include <cmath>
#include <map>
#include <stdexcept>

#include "calibrate/fit.h"
#include "calibrate/timing.h"
#include "planner/cost/communication.h"

namespace planner::calibrate {
namespace {

double rms_rel_err(const std::vector<double>& x, const std::vector<double>& t, double a, double b) {
  double sum = 0;
  for (size_t i = 0; i < x.size(); ++i) sum += std::pow((a + b * x[i] - t[i]) / t[i], 2);
  return std::sqrt(sum / double(x.size()));
}

}  // namespace

AlphaBeta fit_alpha_beta(const std::vector<double>& x, const std::vector<double>& t) {
  if (x.size() != t.size() || x.size() < 2)
    throw std::invalid_argument("an alpha-beta fit needs at least 2 samples");
  // Rows scaled by 1 / t_i: minimises sum ((alpha + beta x_i - t_i) / t_i)^2. Bytes are scaled
  // to GB so that both columns are of order one for the QR.
  const Eigen::Index n = static_cast<Eigen::Index>(x.size());
  Eigen::MatrixXd a(n, 2);
  Eigen::VectorXd b = Eigen::VectorXd::Ones(n);
  for (Eigen::Index i = 0; i < n; ++i) {
    assert(t[i] > 0);
    a(i, 0) = 1.0 / t[i];
    a(i, 1) = x[i] * 1e-9 / t[i];
  }
  Eigen::Vector2d ab = a.colPivHouseholderQr().solve(b);
  double alpha = ab(0), beta = ab(1) * 1e-9;
  if (alpha < 0) {  // refit through the origin: beta = sum(w x t) / sum(w x^2) with w = 1/t^2
    double num = 0, den = 0;
    for (size_t i = 0; i < x.size(); ++i) num += x[i] / t[i], den += x[i] * x[i] / (t[i] * t[i]);
    alpha = 0, beta = den > 0 ? num / den : 0;
  }
  if (!(beta > 0)) throw std::invalid_argument("no positive bandwidth fits these samples");
  return {alpha, beta, rms_rel_err(x, t, alpha, beta)};
}

CollectiveFit fit_collective(const std::vector<CollectiveSample>& samples) {
  if (samples.empty()) throw std::invalid_argument("no samples to fit");
  std::map<int, int> by_ranks;
  std::map<double, std::vector<double>> busbw_at;  // bytes -> busbw_Bps of each sample
  std::vector<double> x, t;
  for (const CollectiveSample& s : samples) {
    assert(s.tier == samples.front().tier && s.collective == samples.front().collective);
    ++by_ranks[s.ranks];
    x.push_back(s.bytes * bus_factor(s.collective, s.ranks));
    t.push_back(s.time_s);
    busbw_at[s.bytes].push_back(s.busbw_Bps());
  }
  const AlphaBeta ab = fit_alpha_beta(x, t);
  CollectiveFit f;
  f.cost.latency_s = ab.alpha_s;
  f.cost.busbw_Bps = 1.0 / ab.beta_s_per_byte;
  for (const auto& [bytes, bws] : busbw_at) f.cost.curve.emplace_back(bytes, median(bws));
  f.ranks = std::max_element(by_ranks.begin(), by_ranks.end(), [](auto& a, auto& b) {
              return a.second < b.second;
            })->first;
  f.samples = static_cast<int>(samples.size());
  f.rms_rel_err = ab.rms_rel_err;
  return f;
}

HbmFit fit_hbm(const std::vector<HbmSample>& samples, double min_bytes) {
  auto sustained = [&](HbmKind kind) {
    std::vector<double> x, t;
    for (const HbmSample& s : samples)
      if (s.kind == kind && s.bytes >= min_bytes) x.push_back(s.moved_bytes), t.push_back(s.time_s);
    if (x.empty()) return 0.0;
    if (x.size() == 1) return x[0] / t[0];
    try {
      return 1.0 / fit_alpha_beta(x, t).beta_s_per_byte;
    } catch (const std::invalid_argument&) {  // all sizes alike: take the best point
      double best = 0;
      for (size_t i = 0; i < x.size(); ++i) best = std::max(best, x[i] / t[i]);
      return best;
    }
  };
  HbmFit f;
  f.copy_Bps = sustained(HbmKind::d2d_copy);
  f.read_Bps = sustained(HbmKind::read);
  f.h2d_Bps = sustained(HbmKind::h2d);
  f.d2h_Bps = sustained(HbmKind::d2h);
  return f;
}

}  // namespace planner::calibrate
