// The NCCL sweeps (nccl-tests' harness in spirit): communicators per tier, one table per
// collective, every step under the watchdog.
#include <algorithm>

#include "calibrate/collectives.h"
#include "calibrate/context.h"
#include "calibrate/device.h"
#include "calibrate/measurements.h"
#include "calibrate/nccl_poll.h"
#include "calibrate/watchdog.h"
#include "planner/format.h"

namespace planner::calibrate {
namespace {

const CollectiveDef* const kCollectives[] = {&kAllReduce, &kAllGather, &kReduceScatter, &kAllToAll,
                                             &kSendRecv};

/// The local members of one communicator: all local GPUs (single process) or this rank's GPU.
/// The buffers (streams, send, recv) are freed by destroy() only: after a watchdog abort the
/// stack unwinds without cudaFree, which could wait on a kernel that NCCL failed to stop.
struct Team : TeamBuffers {
  Tier tier = Tier::intra_node;
  int nranks = 0;                   ///< communicator size n
  std::vector<int> devices, ranks;  ///< per local member: CUDA device, rank in the communicator
  std::vector<ncclComm_t> comms;
  std::string members;  ///< who, for messages: ranks, hosts, devices
};

/// Not a destructor: after a watchdog abort the communicators must not be destroyed.
void destroy(Team& t) {
  for (ncclComm_t c : t.comms) ncclCommDestroy(c);
  free_team_buffers(t, t.devices);
  t.comms.clear();
}

/// All local GPUs driven by this process (ncclCommInitAll, like nccl-tests -g n).
Team local_team(int n, const World& w, const NcclRun& run, Watchdog& wd) {
  Team t;
  t.tier = Tier::intra_node, t.nranks = n;
  for (int i = 0; i < n; ++i) t.devices.push_back(i), t.ranks.push_back(i);
  t.members = "ranks " + rank_list(t.ranks) + " (devices " + rank_list(t.devices) + " of host " +
              w.hosts.at(0) + ", one process)";
  t.comms.resize(size_t(n));
  {
    ArmedStep step(wd, "ncclCommInitAll of " + t.members);
    CAL_NCCL(ncclCommInitAll(t.comms.data(), n, t.devices.data()));
  }
  allocate_team_buffers(t, t.devices, t.ranks, run.sizes.empty() ? 0 : run.sizes.back(), run.seed);
  return t;
}

/// This rank's GPU in its tier's communicator: the node's ranks (intra_node), or the ranks with
/// this local rank on every node (inter_node: one NIC per GPU, all rails busy at once).
Team mpi_team(Tier tier, const World& w, const NcclRun& run, Watchdog& wd) {
  const bool intra = tier == Tier::intra_node;
  Group g(w, intra ? w.node : w.local_rank, intra ? w.local_rank : w.node);
  int count = 0;
  CAL_CUDA(cudaGetDeviceCount(&count));
  Team t;
  t.tier = tier, t.nranks = g.size();
  t.devices = {w.local_rank % count}, t.ranks = {g.rank()};
  t.members = std::string(to_string(tier)) + " communicator of " + std::to_string(g.size()) +
              " ranks (world ranks " + rank_list(g.world_ranks()) + ", " +
              (intra ? "host " + w.hosts[w.node]
                     : "local rank " + std::to_string(w.local_rank) + " of each node") +
              "; this is world rank " + std::to_string(w.rank) + ")";
  ncclUniqueId id{};
  if (g.rank() == 0) CAL_NCCL(ncclGetUniqueId(&id));
  g.broadcast(&id, sizeof id, 0);
  CAL_CUDA(cudaSetDevice(t.devices[0]));
  t.comms.resize(1);
  {
    ArmedStep step(wd, "ncclCommInitRank of the " + t.members);
    CAL_NCCL(ncclCommInitRank(&t.comms[0], g.size(), id, g.rank()));
  }
  allocate_team_buffers(t, t.devices, t.ranks, run.sizes.empty() ? 0 : run.sizes.back(), run.seed);
  return t;
}

/// The watchdog's view of a team: its streams and communicators.
PollTarget poll_target(const Team& t, const World& w) {
  PollTarget p = nccl_poll_target(t.streams, t.comms);
  p.poke = [&w] { world_poke(w); };
  return p;
}

const std::vector<int> kWidths = {12, 11, 6, 11, 11, 11, 5, 8};

void sweep(const CollectiveDef& d, Team& t, const NcclRun& run, const World& w, Watchdog& wd,
           Output& out, Samples& samples) {
  out.line("");
  out.line(fmt("# {} on {}: busbw = algbw x {}; float, sum; out of place", to_string(d.kind),
               t.members, d.bus_factor_text));
  out.line(table_row(
      kWidths, {"size", "count", "type", "time_us", "algbw_GBps", "busbw_GBps", "reps", "spread%"},
      true));
  std::vector<DeviceStream> streams;
  for (size_t i = 0; i < t.devices.size(); ++i) streams.push_back({t.devices[i], t.streams[i]});
  const PollTarget target = poll_target(t, w);
  for (double S : run.sizes) {
    const double bytes = collective_bytes(d, S, t.nranks);
    const std::string what =
        fmt("{} of {:.0f} bytes", to_string(d.kind), bytes) + " on " + t.members;
    if (bytes > 0) {
      TimedOp op;
      op.streams = streams;
      op.enqueue = [&](int iters) {
        ArmedStep step(wd, what);
        for (int it = 0; it < iters; ++it) {
          CAL_NCCL(ncclGroupStart());
          for (size_t i = 0; i < t.comms.size(); ++i)
            CAL_NCCL(d.launch(t.send[i], t.recv[i], size_t(bytes / 4), t.ranks[i], t.nranks,
                              t.comms[i], t.streams[i]));
          CAL_NCCL(ncclGroupEnd());
        }
      };
      op.wait = [&] { wd.wait(target, what); };
      op.reduce_max = [&](double v) {
        ArmedStep step(wd, what + " (waiting for the other ranks)");
        return world_max(w, v);
      };
      const RepeatStats st = measure(op, run.policy);
      const CollectiveSample s{t.tier, d.kind, t.nranks, bytes, st.median_s, st.repeats, st.spread};
      if (w.rank == 0) samples.collectives.push_back(s);
      out.line(table_row(
          kWidths,
          {fmt("{:.0f}", bytes), fmt("{:.0f}", bytes / 4), "float", fmt("{:.2f}", s.time_s * 1e6),
           fmt("{:.3f}", s.algbw_Bps() / 1e9), fmt("{:.3f}", s.busbw_Bps() / 1e9),
           fmt("{}", s.repeats), fmt("{:.1f}", 100 * s.spread)}));
    }
    out.step(fmt("{} {} {:.0f} B", to_string(t.tier), to_string(d.kind), bytes));
  }
}

void run_team(Team& t, const NcclRun& run, const World& w, Watchdog& wd, Output& out,
              Samples& samples) {
  for (const CollectiveDef* d : kCollectives) sweep(*d, t, run, w, wd, out, samples);
  destroy(t);
}

int local_gpus(const NcclRun& run) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) count = 0;
  return run.gpus > 0 ? std::min(count, run.gpus) : count;
}

}  // namespace

int nccl_steps(const NcclRun& run, const World& w) {
  const int tiers = w.mpi && w.size > 1 ? (w.local_size > 1) + (w.nodes > 1) : local_gpus(run) >= 2;
  return tiers * 5 * int(run.sizes.size());
}

void run_nccl_sweeps(const NcclRun& run, const World& w, Output& out, Samples& samples) {
  Watchdog wd(run.timeout_s);
  if (w.mpi && w.size > 1) {
    if (w.local_size > 1) {
      Team t = mpi_team(Tier::intra_node, w, run, wd);
      run_team(t, run, w, wd, out, samples);
    } else {
      out.line(
          "# intra_node: one rank per node, nothing to measure inside a node (the base "
          "profile's tier is kept)");
    }
    if (w.nodes > 1) {
      Team t = mpi_team(Tier::inter_node, w, run, wd);
      run_team(t, run, w, wd, out, samples);
    } else {
      out.line("# inter_node: all ranks on one node (the base profile's tier is kept)");
    }
    return;
  }
  const int n = local_gpus(run);
  if (n < 2) {
    out.line(
        "# collectives: skipped: one GPU and no MPI peers, so there is no NCCL "
        "communicator to measure; the intra_node and inter_node tiers come from the base "
        "profile (--base)");
    return;
  }
  Team t = local_team(n, w, run, wd);
  run_team(t, run, w, wd, out, samples);
  out.line(
      "# inter_node: not measured by a single process; run one rank per GPU under mpirun "
      "across nodes to measure it (the base profile's tier is kept)");
}

}  // namespace planner::calibrate
