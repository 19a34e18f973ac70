#include "planner/report/progress.h"

#include <fmt/core.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace planner {
namespace {

constexpr int kBarWidth = 30;
constexpr double kRedraw_s = 0.1;

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

ProgressBar::ProgressBar(std::string label)
    : label_(std::move(label)), start_(std::chrono::steady_clock::now()), last_draw_(start_) {
  enabled_ = isatty(STDERR_FILENO) == 1 && spdlog::get_level() <= spdlog::level::warn;
  if (const char* env = std::getenv("PLANNER_PROGRESS_DELAY_S")) delay_s_ = std::atof(env);
}

ProgressBar::~ProgressBar() { finish(); }

void ProgressBar::update(double fraction) {
  if (!enabled_) return;
  const double elapsed = seconds_since(start_);
  if (elapsed < delay_s_ || (drawn_ && seconds_since(last_draw_) < kRedraw_s)) return;
  last_draw_ = std::chrono::steady_clock::now();
  fraction = std::clamp(fraction, 0.0, 1.0);
  const int filled = static_cast<int>(fraction * kBarWidth);
  std::string bar(kBarWidth, ' ');
  std::fill(bar.begin(), bar.begin() + filled, '=');
  if (filled < kBarWidth) bar[filled] = '>';
  fmt::print(stderr, "\r{} [{}] {:>3.0f}% {:.1f} s", label_, bar, 100 * fraction, elapsed);
  std::fflush(stderr);
  drawn_ = true;
}

void ProgressBar::finish() {
  if (drawn_) {
    fmt::print(stderr, "\r{:>{}}\r", "", static_cast<int>(label_.size()) + kBarWidth + 20);
    std::fflush(stderr);
  }
  drawn_ = false;
  enabled_ = false;
}

std::function<void(double)> ProgressBar::callback() {
  return [this](double fraction) { update(fraction); };
}

}  // namespace planner
