#pragma once
/// Never a silent hang: NCCL hangs are among the hardest problems on a cluster, so every NCCL
/// step of planner-calibrate is bounded.
///
/// - wait(): polls until the step's streams are done, the way NCCL's documentation (user guide,
///   "Communicators", fault tolerance) and nccl-tests' testStreamSynchronize do: cudaStreamQuery
///   and ncclCommGetAsyncError (nccl_sweep.cc supplies those as a PollTarget). On an
///   asynchronous error, or once the limit has passed, it aborts every communicator
///   (ncclCommAbort) and throws CollectiveTimeout naming the collective, the size and the ranks.
/// - arm()/disarm(): a backstop thread for steps that block inside a host call (communicator
///   set-up, a group launch, an MPI reduction): if one is still running `grace_s` after the
///   limit, it prints what was running and ends the process with exit code 3.
///
/// Plain C++ (no CUDA): tested on the CPU with fake targets.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>

namespace planner::calibrate {

class CollectiveTimeout : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// What wait() polls.
struct PollTarget {
  std::function<int()> pending;              ///< streams not done yet; throws on a device error
  std::function<std::string()> async_error;  ///< "" or the communicators' asynchronous error
  std::function<void()> abort;               ///< ncclCommAbort on every communicator
  std::function<void()> poke;                ///< while waiting: let MPI progress (may be empty)
};

class Watchdog {
 public:
  /// `limit_s`: the longest one step may take. `grace_s` < 0: max(10 s, limit / 4).
  explicit Watchdog(double limit_s, double grace_s = -1);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void arm(const std::string& what);
  void disarm();
  void wait(const PollTarget& target, const std::string& what) const;
  double limit_s() const { return limit_s_; }

 private:
  void backstop();
  double limit_s_, grace_s_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool armed_ = false, stop_ = false;
  std::chrono::steady_clock::time_point deadline_;
  std::string what_;
  std::thread thread_;
};

/// arm() for the lifetime of a scope.
class ArmedStep {
 public:
  ArmedStep(Watchdog& w, const std::string& what) : w_(w) { w_.arm(what); }
  ~ArmedStep() { w_.disarm(); }
  ArmedStep(const ArmedStep&) = delete;
  ArmedStep& operator=(const ArmedStep&) = delete;

 private:
  Watchdog& w_;
};

}  // namespace planner::calibrate
