#pragma once
#include <chrono>
#include <functional>
#include <string>

namespace planner {

/// Seconds before a progress bar appears: work that ends sooner stays silent.
/// PLANNER_PROGRESS_DELAY_S (a number of seconds) overrides it, for tests.
inline constexpr double kProgressDelay_s = 2.0;

/// A one-line progress bar on stderr for searches and calibrations that run longer than
/// kProgressDelay_s (in planner_core, so that every program of the project can use it).
/// Silent when stderr is not a terminal or under --quiet (spdlog's level above warnings).
/// The line is cleared when the work ends.
class ProgressBar {
 public:
  explicit ProgressBar(std::string label);
  ~ProgressBar();
  ProgressBar(const ProgressBar&) = delete;
  ProgressBar& operator=(const ProgressBar&) = delete;
  /// `fraction` of the work done, 0..1; redraws at most ten times a second.
  void update(double fraction);
  /// Clears the line (if one was drawn); later updates are ignored.
  void finish();
  /// For SearchOptions::progress; the bar must outlive the search.
  std::function<void(double)> callback();

 private:
  std::string label_;
  bool enabled_ = false;
  bool drawn_ = false;
  double delay_s_ = kProgressDelay_s;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace planner
