#include "calibrate/timing.h"

#include <algorithm>
#include <cmath>

namespace planner::calibrate {
namespace {

/// Quantile q of sorted `v` with linear interpolation between order statistics.
double quantile(const std::vector<double>& v, double q) {
  const double pos = q * double(v.size() - 1);
  const size_t lo = static_cast<size_t>(std::floor(pos));
  const size_t hi = std::min(lo + 1, v.size() - 1);
  return v[lo] + (pos - double(lo)) * (v[hi] - v[lo]);
}

}  // namespace

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return quantile(v, 0.5);
}

double relative_spread(std::vector<double> v) {
  if (v.size() < 2) return 0;
  std::sort(v.begin(), v.end());
  const double mid = quantile(v, 0.5);
  return mid > 0 ? (quantile(v, 0.75) - quantile(v, 0.25)) / mid : 0;
}

void Repeats::add(double per_op_s, double batch_s) {
  times_.push_back(per_op_s);
  spent_s_ += batch_s;
}

bool Repeats::done() const {
  const int n = static_cast<int>(times_.size());
  if (n < policy_.min_repeats) return false;
  if (n >= policy_.max_repeats || spent_s_ >= policy_.budget_s) return true;
  return relative_spread(times_) <= policy_.target_spread;
}

RepeatStats Repeats::stats() const {
  return {median(times_), relative_spread(times_), static_cast<int>(times_.size())};
}

int batch_iterations(double per_op_s, double min_batch_s, int max_iters) {
  if (!(per_op_s > 0)) return max_iters;
  const double n = std::ceil(min_batch_s / per_op_s);
  return static_cast<int>(std::clamp(n, 1.0, double(std::max(1, max_iters))));
}

}  // namespace planner::calibrate
