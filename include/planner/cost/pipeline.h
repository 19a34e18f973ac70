#pragma once
#include <vector>

#include "planner/plan.h"

namespace planner {

/// Narayanan et al. 2021: bubble time / ideal time = (p-1)/m, and (1/v)(p-1)/m interleaved.
double bubble_fraction(Schedule s, int pp, int microbatches, int vpp);

/// Time of the pipelined part of an iteration with per-stage micro-batch times `stage_s`
/// (forward + backward of one micro-batch on each stage): the first micro-batch crosses every
/// stage, the others follow at the pace of the slowest: (m-1) t_max + sum t_i; interleaving
/// shrinks the fill and drain to (sum t_i - t_max)/v. Uniform stages give (m + p - 1) t.
double pipeline_time_s(Schedule s, int microbatches, int vpp, const std::vector<double>& stage_s);

/// The same from the slowest stage's time and the sum over stages (no allocation). ZB-H1 shrinks
/// the fill and drain by the deferred weight gradients, (p-1)(t_f + t_b - t_w) for uniform stages
/// (Qi et al. 2024), with `weight_fraction` = t_w / (t_f + t_b + t_w).
double pipeline_time_from(Schedule s, int microbatches, int vpp, double t_max, double sum,
                          double weight_fraction = 0);

}  // namespace planner
