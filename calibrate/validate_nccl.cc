#include "calibrate/validate_nccl.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "calibrate/collectives.h"
#include "calibrate/device.h"
#include "calibrate/nccl_poll.h"
#include "calibrate/watchdog.h"
#include "planner/format.h"

namespace planner::calibrate {
namespace {

const CollectiveDef& def_of(Collective c) {
  switch (c) {
    case Collective::allreduce:
      return kAllReduce;
    case Collective::allgather:
      return kAllGather;
    case Collective::reduce_scatter:
      return kReduceScatter;
    case Collective::alltoall:
      return kAllToAll;
    case Collective::sendrecv:
      return kSendRecv;
  }
  return kAllReduce;
}

/// GPUs 0..n-1 of this host in one communicator, with S-byte send and receive buffers. Raw on
/// purpose (no destructor): after a watchdog abort nothing may wait on NCCL's kernels.
struct LocalTeam : TeamBuffers {
  int n = 0;
  std::vector<int> devices;
  std::vector<ncclComm_t> comms;
};

LocalTeam make_team(int n, double bytes, unsigned long long seed, Watchdog& wd) {
  LocalTeam t;
  t.n = n;
  for (int i = 0; i < n; ++i) t.devices.push_back(i);
  t.comms.resize(size_t(n));
  {
    ArmedStep step(wd, fmt("ncclCommInitAll of local GPUs 0-{}", n - 1));
    CAL_NCCL(ncclCommInitAll(t.comms.data(), n, t.devices.data()));
  }
  allocate_team_buffers(t, t.devices, t.devices, bytes, seed);  // device i is rank i
  CAL_CUDA(cudaSetDevice(0));
  return t;
}

void destroy(LocalTeam& t) {
  for (ncclComm_t c : t.comms) ncclCommDestroy(c);
  free_team_buffers(t, t.devices);
  cudaSetDevice(0);
  t = LocalTeam{};
}

PollTarget poll_target(const LocalTeam& t) { return nccl_poll_target(t.streams, t.comms); }

/// Median time of one call of `c` at nccl-tests size S (rounded to whole floats per rank).
double time_one(const LocalTeam& t, Collective c, double S, const RepeatPolicy& policy,
                Watchdog& wd) {
  const CollectiveDef& d = def_of(c);
  const double bytes = collective_bytes(d, S, t.n);
  if (bytes <= 0) return 0;
  const std::string what =
      fmt("{} of {:.0f} bytes on local GPUs 0-{}", to_string(c), bytes, t.n - 1);
  const PollTarget target = poll_target(t);
  TimedOp op;
  for (int i = 0; i < t.n; ++i) op.streams.push_back({t.devices[i], t.streams[i]});
  op.enqueue = [&](int iters) {
    ArmedStep step(wd, what);
    for (int it = 0; it < iters; ++it) {
      CAL_NCCL(ncclGroupStart());
      for (int i = 0; i < t.n; ++i)
        CAL_NCCL(
            d.launch(t.send[i], t.recv[i], size_t(bytes / 4), i, t.n, t.comms[i], t.streams[i]));
      CAL_NCCL(ncclGroupEnd());
    }
  };
  op.wait = [&] { wd.wait(target, what); };
  return measure(op, policy).median_s;
}

std::vector<double> tp_times(const RunnerWorkload& w, const RepeatPolicy& policy,
                             unsigned long long seed, Watchdog& wd,
                             const std::function<void(const std::string&)>& log) {
  int n = 0;
  double largest = 0;
  for (const WorkCollective& c : w.collectives)
    n = std::max(n, c.ranks), largest = std::max(largest, c.bytes);
  LocalTeam team = make_team(n, largest, seed, wd);
  std::map<std::pair<int, double>, double> seen;  // the same collective and size: measured once
  std::vector<double> out;
  for (const WorkCollective& c : w.collectives) {
    auto it = seen.find({int(c.coll), c.bytes});
    if (it == seen.end())
      it =
          seen.emplace(std::pair{int(c.coll), c.bytes}, time_one(team, c.coll, c.bytes, policy, wd))
              .first;
    out.push_back(it->second);
    log(fmt("# {:<18} {:<15} {:>12.0f} B over {} GPUs: {:>9.1f} us (predicted {:.1f} us)", c.name,
            to_string(c.coll), c.bytes, c.ranks, it->second * 1e6, c.predicted_s * 1e6));
  }
  destroy(team);
  return out;
}

double dp_time(const RunnerWorkload& w, const RepeatPolicy& policy, unsigned long long seed,
               Watchdog& wd, double max_chunk_bytes,
               const std::function<void(const std::string&)>& log) {
  const WorkCollective& dp = w.dp;
  const double chunk = std::min(dp.bytes, max_chunk_bytes);
  const double full = std::floor(dp.bytes / chunk), rest = dp.bytes - full * chunk;
  LocalTeam team = make_team(dp.ranks, chunk, seed, wd);
  double t = full * time_one(team, dp.coll, chunk, policy, wd);
  if (rest > 0) t += time_one(team, dp.coll, rest, policy, wd);
  destroy(team);
  log(
      fmt("# dp_gradients       {:<15} {:>12.0f} B over {} GPUs "
          "({:.0f} chunks of <= {:.0f} B): {:.3f} ms (predicted {:.3f} ms)",
          to_string(dp.coll), dp.bytes, dp.ranks, full + (rest > 0), chunk, t * 1e3,
          dp.predicted_s * 1e3));
  return t;
}

}  // namespace

CollectiveTimes time_collectives(const RunnerWorkload& w, const RepeatPolicy& policy,
                                 double timeout_s, unsigned long long seed, int local_gpus,
                                 const std::function<void(const std::string&)>& log,
                                 double max_chunk_bytes) {
  CollectiveTimes out;
  Watchdog wd(timeout_s);
  int tp_ranks = 0;
  for (const WorkCollective& c : w.collectives) tp_ranks = std::max(tp_ranks, c.ranks);
  if (!w.collectives.empty() && local_gpus >= tp_ranks)
    out.collectives_s = tp_times(w, policy, seed, wd, log);
  else if (!w.collectives.empty())
    log(
        fmt("# TP collectives: {} local GPU{}, the plan's need {}: not measured (the profile's "
            "times stand)",
            local_gpus, local_gpus == 1 ? "" : "s", tp_ranks));
  if (w.dp.bytes > 0 && w.dp.ranks > 1) {
    if (local_gpus >= w.dp.ranks)
      out.dp_s = dp_time(w, policy, seed, wd, max_chunk_bytes, log);
    else
      log(fmt("# DP reduction: {} local GPU{}, it needs {}: not measured", local_gpus,
              local_gpus == 1 ? "" : "s", w.dp.ranks));
  }
  return out;
}

}  // namespace planner::calibrate
