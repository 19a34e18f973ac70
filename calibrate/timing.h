#pragma once
/// How long to time, and when to stop: the pure part of the harness (no CUDA), shared by the
/// GEMM, HBM and NCCL measurements and tested on the CPU.
///
/// Method (as nccl-tests and nvbench do): warm up, then time batches of back-to-back operations
/// with CUDA events, and report the median batch time per operation. Repeat until the
/// interquartile range of the batches is within `target_spread` of the median, or `max_repeats`
/// or the time budget is reached. In a multi-process run every rank feeds the same (max-reduced)
/// times into the rule, so all ranks stop after the same batch.
#include <vector>

namespace planner::calibrate {

struct RepeatPolicy {
  int min_repeats = 3;          ///< never fewer timed batches
  int max_repeats = 15;         ///< never more
  double target_spread = 0.02;  ///< stop once IQR / median is at most this
  double budget_s = 0.5;        ///< stop once the timed batches took this long (after min_repeats)
  double min_batch_s = 1e-3;    ///< a batch lasts at least this (event resolution ~0.5 us)
  int max_batch_iters = 200;    ///< operations per batch at most
  double warmup_s = 0.01;       ///< warm-up time before timing (clocks, lazy initialisation)
};

/// Median of `v` (the mean of the two middle values for an even count); 0 for none.
double median(std::vector<double> v);
/// Interquartile range / median (linear interpolation between order statistics); 0 for < 2.
double relative_spread(std::vector<double> v);

struct RepeatStats {
  double median_s = 0;  ///< per operation
  double spread = 0;    ///< IQR / median of the batches
  int repeats = 0;
};

/// Accumulates per-operation batch times and says when to stop.
class Repeats {
 public:
  explicit Repeats(const RepeatPolicy& p) : policy_(p) {}
  /// `per_op_s`: batch time / operations; `batch_s`: the whole batch (for the budget).
  void add(double per_op_s, double batch_s);
  bool done() const;
  RepeatStats stats() const;

 private:
  RepeatPolicy policy_;
  std::vector<double> times_;
  double spent_s_ = 0;
};

/// Operations per batch so that one batch lasts at least `min_batch_s`, within [1, max_iters].
int batch_iterations(double per_op_s, double min_batch_s, int max_iters);

}  // namespace planner::calibrate
