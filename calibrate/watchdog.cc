#include "calibrate/watchdog.h"

#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

namespace planner::calibrate {

Watchdog::Watchdog(double limit_s, double grace_s)
    : limit_s_(limit_s),
      grace_s_(grace_s >= 0 ? grace_s : std::max(10.0, 0.25 * limit_s)),
      thread_([this] { backstop(); }) {}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void Watchdog::arm(const std::string& what) {
  std::lock_guard<std::mutex> lock(mutex_);
  armed_ = true;
  what_ = what;
  deadline_ = std::chrono::steady_clock::now() +
              std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                  std::chrono::duration<double>(limit_s_ + grace_s_));
}

void Watchdog::disarm() {
  std::lock_guard<std::mutex> lock(mutex_);
  armed_ = false;
}

void Watchdog::backstop() {
  std::unique_lock<std::mutex> lock(mutex_);
  while (!stop_) {
    if (armed_ && std::chrono::steady_clock::now() >= deadline_) {
      fmt::print(stderr,
                 "\nplanner-calibrate: watchdog: {}: still blocked in a host call {:g} s after "
                 "it started (limit {:g} s, --timeout-s); exiting with code 3\n",
                 what_, limit_s_ + grace_s_, limit_s_);
      std::fflush(stdout);
      std::fflush(stderr);
      std::_Exit(3);
    }
    cv_.wait_for(lock, std::chrono::milliseconds(std::clamp(int(grace_s_ * 100), 1, 200)));
  }
}

void Watchdog::wait(const PollTarget& t, const std::string& what) const {
  const auto start = std::chrono::steady_clock::now();
  while (true) {
    const int pending = t.pending();
    const std::string error = t.async_error ? t.async_error() : std::string();
    if (!error.empty()) {
      t.abort();
      throw CollectiveTimeout(what + ": NCCL reported '" + error +
                              "'; communicators aborted (ncclCommAbort)");
    }
    if (pending == 0) return;
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (waited > limit_s_) {
      t.abort();
      throw CollectiveTimeout(
          fmt::format("{} did not finish within {:g} s (--timeout-s); communicators aborted "
                      "(ncclCommAbort)",
                      what, limit_s_));
    }
    if (t.poke) t.poke();
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

}  // namespace planner::calibrate
