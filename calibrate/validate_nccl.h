#pragma once
/// The plan's collectives on the local GPUs: one process drives `ranks` GPUs through
/// ncclCommInitAll (nccl-tests -g), each collective at its real size S with the calibrate
/// definitions (collectives.h), timed by the harness, every step under the watchdog. A TP
/// collective the estimate overlaps with a GEMM is also timed beside that GEMM: the GEMM on a
/// compute stream of every GPU of the team, the collective on the team's NCCL stream, forked
/// from and joined back to the compute stream by CUDA events each iteration.
#include <functional>
#include <string>
#include <vector>

#include "calibrate/timing.h"
#include "calibrate/validate_workload.h"

namespace planner::calibrate {

struct CollectiveTimes {
  std::vector<double> collectives_s;  ///< one call each, alone, in workload order; empty: not run
  /// What each added to its GEMM run beside it (the pair's time less the GEMM's alone, at least
  /// 0); the time alone for those not overlapped. Empty when collectives_s is.
  std::vector<double> collectives_exposed_s;
  std::vector<double> boundary_s;  ///< one call of each stage-boundary collective, alone; or empty
  std::vector<double> dp_s;        ///< one call of each DP collective, alone; empty: not measured
};

/// Measures what the local GPUs allow: the TP collectives when there are at least their ranks
/// (all or none, as the planner reads them), the stage-boundary and the DP collectives likewise. A
/// DP collective larger than `max_chunk_bytes` runs as chunks of that size (buckets) and their
/// times are added. Throws CollectiveTimeout (watchdog.h) when a step exceeds `timeout_s`.
CollectiveTimes time_collectives(const RunnerWorkload& w, const RepeatPolicy& policy,
                                 double timeout_s, unsigned long long seed, int local_gpus,
                                 const std::function<void(const std::string&)>& log,
                                 double max_chunk_bytes = 1073741824.0);

}  // namespace planner::calibrate
