#pragma once
#include <array>
#include <cstddef>
#include <map>
#include <vector>

namespace planner {

/// (memory per GPU in bytes, model TFLOP/s per GPU) of one feasible plan.
using PlotPoint = std::array<double, 2>;

/// A bounded, deterministic sample of the feasible plans a search ranks, for plots: every plan
/// while there are at most `capacity`, then every 2nd, 4th, ... in enumeration order (each time
/// the buffer fills, every other point is dropped and the stride doubles). The Pareto front
/// (no other plan needs less memory and runs faster) is kept exactly, whatever the capacity.
/// Capacity 0 keeps nothing and costs nothing.
class PlotSample {
 public:
  explicit PlotSample(std::size_t capacity = 0) : capacity_(capacity) {}
  void add(double memory_bytes, double tflops_per_gpu);
  const std::vector<PlotPoint>& points() const { return points_; }
  /// The Pareto front, ascending memory and ascending throughput.
  std::vector<PlotPoint> front() const;
  long long seen() const { return seen_; }  ///< points offered
  bool enabled() const { return capacity_ > 0; }

 private:
  std::size_t capacity_;
  long long seen_ = 0;
  long long stride_ = 1;
  std::vector<PlotPoint> points_;
  std::map<double, double> front_;  ///< memory -> throughput, both strictly increasing
};

}  // namespace planner
