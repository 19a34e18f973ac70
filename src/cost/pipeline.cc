#include "planner/cost/pipeline.h"

#include <algorithm>
#include <cassert>
#include <numeric>

namespace planner {

double bubble_fraction(Schedule s, int pp, int microbatches, int vpp) {
  assert(pp >= 1 && microbatches >= 1 && vpp >= 1);
  const double base = double(pp - 1) / microbatches;
  return s == Schedule::interleaved ? base / vpp : base;  // ZB-H1: see pipeline_time_from
}

double pipeline_time_s(Schedule s, int microbatches, int vpp, const std::vector<double>& stage_s) {
  assert(!stage_s.empty() && microbatches >= 1);
  const double t_max = *std::max_element(stage_s.begin(), stage_s.end());
  const double sum = std::accumulate(stage_s.begin(), stage_s.end(), 0.0);
  return pipeline_time_from(s, microbatches, vpp, t_max, sum);
}

double pipeline_time_from(Schedule s, int microbatches, int vpp, double t_max, double sum,
                          double weight_fraction) {
  const double fill_drain = sum - t_max;
  const double v = s == Schedule::interleaved ? vpp : 1;
  const double zb = s == Schedule::zb_h1 ? std::max(0.0, 1.0 - 2.0 * weight_fraction) : 1.0;
  return microbatches * t_max + fill_drain * zb / v;
}

}  // namespace planner
