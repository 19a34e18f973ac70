#include "calibrate/validate_nccl.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <memory>
#include <tuple>
#include <utility>

#include "calibrate/collectives.h"
#include "calibrate/device.h"
#include "calibrate/matmul.h"
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

/// One GEMM of the workload on every GPU of a team: per GPU a compute stream, a cuBLASLt
/// handle, random operands, and the events that fork the team's NCCL stream from the compute
/// stream and join it back. Raw like LocalTeam: released by destroy() only.
struct TeamGemm {
  std::vector<cudaStream_t> streams;
  std::vector<cublasLtHandle_t> handles;
  std::vector<std::unique_ptr<Matmul>> mm;
  std::vector<std::array<void*, 4>> bufs;  ///< A, B, C, workspace
  std::vector<cudaEvent_t> fork, join;
};

TeamGemm make_gemm(const LocalTeam& t, const KernelRun& r, unsigned long long seed) {
  TeamGemm g;
  const MatmulTypes ty = matmul_types(r.dtype);
  const size_t na = size_t(r.m) * r.k * r.batch, nb = size_t(r.k) * r.n * r.batch;
  const size_t c_bytes = size_t(r.m) * r.n * r.batch * element_bytes(ty.out);
  for (int i = 0; i < t.n; ++i) {
    CAL_CUDA(cudaSetDevice(t.devices[i]));
    g.streams.push_back(nullptr), g.handles.push_back(nullptr);
    g.fork.push_back(nullptr), g.join.push_back(nullptr), g.bufs.push_back({});
    CAL_CUDA(cudaStreamCreateWithFlags(&g.streams.back(), cudaStreamNonBlocking));
    CAL_CUBLAS(cublasLtCreate(&g.handles.back()));
    CAL_CUDA(cudaEventCreateWithFlags(&g.fork.back(), cudaEventDisableTiming));
    CAL_CUDA(cudaEventCreateWithFlags(&g.join.back(), cudaEventDisableTiming));
    std::array<void*, 4>& b = g.bufs.back();
    CAL_CUDA(cudaMalloc(&b[0], na * element_bytes(ty.fill)));
    CAL_CUDA(cudaMalloc(&b[1], nb * element_bytes(ty.fill)));
    CAL_CUDA(cudaMalloc(&b[2], c_bytes));
    CAL_CUDA(cudaMalloc(&b[3], kMatmulWorkspaceBytes));
    fill_uniform(b[0], na, ty.fill, seed + 31 * i, g.streams.back());
    fill_uniform(b[1], nb, ty.fill, seed + 31 * i + 1, g.streams.back());
    CAL_CUDA(cudaMemsetAsync(b[2], 0, c_bytes, g.streams.back()));
    g.mm.push_back(std::make_unique<Matmul>(
        g.handles.back(), r.dtype, MatmulShape{r.transa, r.transb, r.m, r.n, r.k, r.batch}));
    if (!g.mm.back()->ok()) throw DeviceError("cuBLASLt has no algorithm for " + describe(r));
    CAL_CUDA(cudaStreamSynchronize(g.streams.back()));
  }
  CAL_CUDA(cudaSetDevice(0));
  return g;
}

void destroy(TeamGemm& g, const LocalTeam& t) {
  for (size_t i = 0; i < g.streams.size(); ++i) {
    cudaSetDevice(t.devices[i]);
    cudaStreamSynchronize(g.streams[i]);
    for (void* p : g.bufs[i]) cudaFree(p);
    cudaEventDestroy(g.fork[i]), cudaEventDestroy(g.join[i]);
    g.mm[i].reset();
    cublasLtDestroy(g.handles[i]);
    cudaStreamDestroy(g.streams[i]);
  }
  cudaSetDevice(0);
  g = TeamGemm{};
}

/// `iters` of the GEMM on every GPU; with `d`, the collective of `bytes` beside each: the NCCL
/// stream waits for the compute stream (fork), both run, and the compute stream waits for the
/// collective (join), so every iteration's pair starts together and the next waits for both.
void enqueue_gemm(const LocalTeam& t, const TeamGemm& g, const CollectiveDef* d, double bytes,
                  int iters) {
  for (int it = 0; it < iters; ++it) {
    if (d) {
      for (int i = 0; i < t.n; ++i) {
        CAL_CUDA(cudaSetDevice(t.devices[i]));
        CAL_CUDA(cudaEventRecord(g.fork[i], g.streams[i]));
        CAL_CUDA(cudaStreamWaitEvent(t.streams[i], g.fork[i], 0));
      }
      CAL_NCCL(ncclGroupStart());
      for (int i = 0; i < t.n; ++i)
        CAL_NCCL(
            d->launch(t.send[i], t.recv[i], size_t(bytes / 4), i, t.n, t.comms[i], t.streams[i]));
      CAL_NCCL(ncclGroupEnd());
    }
    for (int i = 0; i < t.n; ++i) {
      CAL_CUDA(cudaSetDevice(t.devices[i]));
      const std::array<void*, 4>& b = g.bufs[i];
      g.mm[i]->run(b[0], b[1], b[2], b[3], g.streams[i]);
      if (!d) continue;
      CAL_CUDA(cudaEventRecord(g.join[i], t.streams[i]));
      CAL_CUDA(cudaStreamWaitEvent(g.streams[i], g.join[i], 0));
    }
  }
  CAL_CUDA(cudaSetDevice(0));
}

/// Median seconds per iteration of the GEMM on the team's GPUs, with `d` beside it when given.
double time_gemm(const LocalTeam& t, const TeamGemm& g, const CollectiveDef* d, double bytes,
                 const RepeatPolicy& policy, Watchdog& wd, const std::string& what) {
  const PollTarget target = nccl_poll_target(g.streams, t.comms);
  TimedOp op;
  for (int i = 0; i < t.n; ++i) op.streams.push_back({t.devices[i], g.streams[i]});
  op.hide_launch_gaps = true;
  op.enqueue = [&](int iters) {
    ArmedStep step(wd, what);
    enqueue_gemm(t, g, d, bytes, iters);
  };
  op.wait = [&] { wd.wait(target, what); };
  return measure(op, policy).median_s;
}

/// What collective `c` adds to the GEMM `r` when both run at once on every GPU of the team.
double time_beside(const LocalTeam& t, Collective c, double S, const KernelRun& r,
                   const RepeatPolicy& policy, unsigned long long seed, Watchdog& wd) {
  const CollectiveDef& d = def_of(c);
  const double bytes = collective_bytes(d, S, t.n);
  TeamGemm g = make_gemm(t, r, seed);
  const std::string what =
      fmt("{} beside {} on local GPUs 0-{}", to_string(c), describe(r), t.n - 1);
  const double alone = time_gemm(t, g, nullptr, 0, policy, wd, describe(r));
  const double pair = bytes > 0 ? time_gemm(t, g, &d, bytes, policy, wd, what) : alone;
  destroy(g, t);
  return std::max(0.0, pair - alone);
}

struct TpTimes {
  std::vector<double> alone, exposed;
};

TpTimes tp_times(const RunnerWorkload& w, const RepeatPolicy& policy, unsigned long long seed,
                 Watchdog& wd, const std::function<void(const std::string&)>& log) {
  double largest = 0;
  for (const WorkCollective& c : w.collectives) largest = std::max(largest, c.bytes);
  // Each collective over its own group's size (a layer's TP collectives over tp GPUs, a mixture of
  // experts' dispatcher over ep or etp x ep): one communicator at a time, rebuilt when the ranks
  // change. The same collective, size and ranks (and GEMM): measured once.
  LocalTeam team;
  std::map<std::tuple<int, double, int>, double> seen;
  std::map<std::tuple<int, double, int, std::string>, double> beside;
  TpTimes out;
  for (const WorkCollective& c : w.collectives) {
    const auto key = std::tuple{int(c.coll), c.bytes, c.ranks};
    auto it = seen.find(key);
    if (it == seen.end() || c.beside >= 0) {
      if (team.n != c.ranks) {
        if (team.n > 0) destroy(team);
        team = make_team(c.ranks, std::max(largest, 4.0 * c.ranks), seed, wd);
      }
    }
    if (it == seen.end()) it = seen.emplace(key, time_one(team, c.coll, c.bytes, policy, wd)).first;
    out.alone.push_back(it->second);
    out.exposed.push_back(it->second);
    if (c.beside >= 0) {
      const KernelRun r = kernel_run(w, size_t(c.beside));
      const auto pair = std::tuple{int(c.coll), c.bytes, c.ranks, describe(r)};
      auto b = beside.find(pair);
      if (b == beside.end())
        b = beside.emplace(pair, time_beside(team, c.coll, c.bytes, r, policy, seed, wd)).first;
      out.exposed.back() = b->second;
    }
    log(fmt("# {:<18} {:<15} {:>12.0f} B over {} GPUs: {:>9.1f} us (predicted {:.1f} us){}", c.name,
            to_string(c.coll), c.bytes, c.ranks, it->second * 1e6, c.predicted_s * 1e6,
            c.beside < 0 ? std::string()
                         : fmt("; beside kernel {} it adds {:.1f} us (the estimate charges {:.1f})",
                               c.beside, out.exposed.back() * 1e6, c.exposed_s * 1e6)));
  }
  if (team.n > 0) destroy(team);
  return out;
}

/// One call of `c`, in chunks of at most `max_chunk_bytes` whose times are added.
double chunked_time(const LocalTeam& team, const WorkCollective& c, const RepeatPolicy& policy,
                    Watchdog& wd, double max_chunk_bytes) {
  if (c.bytes <= 0) return 0;
  const double chunk = std::min(c.bytes, max_chunk_bytes);
  const double full = std::floor(c.bytes / chunk), rest = c.bytes - full * chunk;
  double t = full * time_one(team, c.coll, chunk, policy, wd);
  if (rest > 0) t += time_one(team, c.coll, rest, policy, wd);
  return t;
}

/// One call of each collective of `list`, alone (the stage boundaries' or DP's).
std::vector<double> alone_times(const std::vector<WorkCollective>& list, const RepeatPolicy& policy,
                                unsigned long long seed, Watchdog& wd, double max_chunk_bytes,
                                const std::function<void(const std::string&)>& log) {
  double largest = 0;
  for (const WorkCollective& c : list)
    largest = std::max(largest, std::min(c.bytes, max_chunk_bytes));
  LocalTeam team;  // one communicator at a time, rebuilt when the ranks change
  std::map<std::tuple<int, double, int>, double> seen;
  std::vector<double> out;
  for (const WorkCollective& c : list) {
    const auto key = std::tuple{int(c.coll), c.bytes, c.ranks};
    auto it = seen.find(key);
    if (it == seen.end()) {
      if (team.n != c.ranks) {
        if (team.n > 0) destroy(team);
        team = make_team(c.ranks, std::max(largest, 4.0 * c.ranks), seed, wd);
      }
      it = seen.emplace(key, chunked_time(team, c, policy, wd, max_chunk_bytes)).first;
    }
    out.push_back(it->second);
    log(fmt(
        "# {:<26} {:<15} {:>12.0f} B over {} GPUs (chunks of <= {:.0f} B): {:.3f} ms (predicted "
        "{:.3f} ms)",
        c.name, to_string(c.coll), c.bytes, c.ranks, max_chunk_bytes, it->second * 1e3,
        c.predicted_s * 1e3));
  }
  if (team.n > 0) destroy(team);
  return out;
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
  if (!w.collectives.empty() && local_gpus >= tp_ranks) {
    TpTimes t = tp_times(w, policy, seed, wd, log);
    out.collectives_s = std::move(t.alone), out.collectives_exposed_s = std::move(t.exposed);
  } else if (!w.collectives.empty()) {
    log(
        fmt("# a layer's collectives (TP, expert dispatch): {} local GPU{}, the largest group "
            "needs {}: none measured (the profile's times stand)",
            local_gpus, local_gpus == 1 ? "" : "s", tp_ranks));
  }
  // The stage boundaries' and DP's collectives, each list all or none, each call alone.
  auto alone = [&](const std::vector<WorkCollective>& list, const char* what) {
    int ranks = 0;
    for (const WorkCollective& c : list) ranks = std::max(ranks, c.ranks);
    if (!list.empty() && local_gpus >= ranks)
      return alone_times(list, policy, seed, wd, max_chunk_bytes, log);
    if (!list.empty())
      log(fmt("# {}: {} local GPU{}, they need {}: not measured", what, local_gpus,
              local_gpus == 1 ? "" : "s", ranks));
    return std::vector<double>{};
  };
  out.boundary_s = alone(w.boundary, "stage-boundary collectives");
  out.dp_s = alone(w.dp, "DP collectives");
  return out;
}

}  // namespace planner::calibrate
