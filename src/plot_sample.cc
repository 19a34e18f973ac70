#include "planner/plot_sample.h"

#include <iterator>

namespace planner {

void PlotSample::add(double memory_bytes, double tflops_per_gpu) {
  if (capacity_ == 0) return;
  if (seen_++ % stride_ == 0) {
    points_.push_back({memory_bytes, tflops_per_gpu});
    if (points_.size() > capacity_) {  // keep indices 0, 2, 4, ...: multiples of the new stride
      std::size_t kept = 0;
      for (std::size_t i = 0; i < points_.size(); i += 2) points_[kept++] = points_[i];
      points_.resize(kept);
      stride_ *= 2;
    }
  }
  // The front: the last entry at or below this memory is the fastest that needs no more.
  auto after = front_.upper_bound(memory_bytes);
  if (after != front_.begin() && std::prev(after)->second >= tflops_per_gpu) return;  // dominated
  auto it = front_.insert_or_assign(memory_bytes, tflops_per_gpu).first;
  for (auto next = std::next(it); next != front_.end() && next->second <= tflops_per_gpu;)
    next = front_.erase(next);
}

std::vector<PlotPoint> PlotSample::front() const {
  std::vector<PlotPoint> out;
  for (const auto& [memory, tflops] : front_) out.push_back({memory, tflops});
  return out;
}

}  // namespace planner
