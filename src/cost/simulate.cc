#include "planner/cost/simulate.h"

#include <algorithm>
#include <cassert>

#include "planner/limits.h"

namespace planner {

const char* to_string(TaskKind k) {
  switch (k) {
    case TaskKind::forward:
      return "F";
    case TaskKind::backward:
      return "B";
    case TaskKind::backward_input:
      return "B";
    case TaskKind::backward_weight:
      return "W";
    case TaskKind::transfer:
      return "P2P";
  }
  return "?";
}

namespace {

using Op = SimScratch::Op;

/// 1F1B (Narayanan et al. 2021): stage s warms up with min(p-1-s, m) forwards, then alternates.
/// With zero_bubble, B is only the input gradient, which the stage above waits for, and stage s
/// runs each weight gradient W s micro-batches after its B, the rest at the end: the later stages
/// hand their B on at once and their deferred W fill what would be the cool-down bubble
/// (ZB-H1, Qi et al. 2024, "Zero Bubble Pipeline Parallelism").
void one_f_one_b(int p, int s, int m, bool zero_bubble, std::vector<Op>& ops) {
  const int warm = std::min(p - 1 - s, m);
  const TaskKind bwd = zero_bubble ? TaskKind::backward_input : TaskKind::backward;
  for (int j = 0; j < warm; ++j) ops.push_back({TaskKind::forward, 0, j});
  int next_w = 0;
  for (int j = 0; j < m; ++j) {
    if (j + warm < m) ops.push_back({TaskKind::forward, 0, j + warm});
    ops.push_back({bwd, 0, j});
    if (zero_bubble && j - s >= 0) ops.push_back({TaskKind::backward_weight, 0, next_w++});
  }
  while (zero_bubble && next_w < m) ops.push_back({TaskKind::backward_weight, 0, next_w++});
}

void gpipe(int m, std::vector<Op>& ops) {
  for (int j = 0; j < m; ++j) ops.push_back({TaskKind::forward, 0, j});
  for (int j = 0; j < m; ++j) ops.push_back({TaskKind::backward, 0, j});
}

/// Megatron-LM's interleaved schedule (schedules.py, forward_backward_pipelining_with_
/// interleaving): micro-step k runs chunk (k mod pv) / p (reversed for backward) on micro-batch
/// (k / pv) p + k mod p; stage s warms up with (p-s-1)*2 + (v-1)*p forwards.
void interleaved(int p, int v, int s, int m, std::vector<Op>& ops) {
  const int total = m * v;
  auto chunk_of = [&](int k, bool fwd) {
    const int c = (k % (p * v)) / p;
    return fwd ? c : v - 1 - c;
  };
  auto mb_of = [&](int k) { return (k / (p * v)) * p + k % p; };
  int warm = m == p ? total : std::min((p - s - 1) * 2 + (v - 1) * p, total);
  for (int k = 0; k < warm; ++k) ops.push_back({TaskKind::forward, chunk_of(k, true), mb_of(k)});
  const int steady = total - warm;
  for (int k = 0; k < steady; ++k) {
    ops.push_back({TaskKind::forward, chunk_of(warm + k, true), mb_of(warm + k)});
    ops.push_back({TaskKind::backward, chunk_of(k, false), mb_of(k)});
  }
  for (int k = steady; k < total; ++k)
    ops.push_back({TaskKind::backward, chunk_of(k, false), mb_of(k)});
}

/// Buffers reused across calls: the search simulates dozens of plans, each with up to
/// pp x vpp x m x 3 tasks.

std::string check(const SimInput& in) {
  if (in.pp < 1 || in.vpp < 1 || in.microbatches < 1)
    return "pp, vpp and microbatches must be positive";
  if (static_cast<int>(in.chunks.size()) != in.pp * in.vpp)
    return "one cost per virtual stage is needed";
  if (in.vpp > 1 && in.schedule != Schedule::interleaved)
    return "vpp > 1 needs the interleaved schedule";
  if (1LL * in.pp * in.vpp * in.microbatches > limits::kSimulatedTasks)
    return "pp x vpp x micro-batches = " + std::to_string(1LL * in.pp * in.vpp * in.microbatches) +
           " tasks to simulate, over the limit of " + std::to_string(limits::kSimulatedTasks) +
           " (fewer micro-batches: a larger mbs or dp, or a smaller global batch)";
  if (in.schedule == Schedule::interleaved && in.microbatches % in.pp != 0)
    return "the interleaved schedule needs a multiple of pp micro-batches (" +
           std::to_string(in.microbatches) + " for pp=" + std::to_string(in.pp) +
           "): Megatron-LM refuses it, and a stage would wait forever";
  return "";
}

}  // namespace

SimResult simulate(const SimInput& in, SimScratch* reuse) {
  SimResult r;
  r.error = check(in);
  if (!r.ok()) return r;
  const int p = in.pp, v = in.vpp, m = in.microbatches, V = p * v;
  const bool zb = in.schedule == Schedule::zb_h1;
  SimScratch own;
  SimScratch& scratch = reuse ? *reuse : own;
  std::vector<Op>& ops = scratch.ops;
  ops.clear();
  ops.reserve(size_t(p) * m * v * (zb ? 3 : 2));
  scratch.begin.assign(1, 0);
  for (int s = 0; s < p; ++s) {
    if (in.schedule == Schedule::gpipe)
      gpipe(m, ops);
    else if (in.schedule == Schedule::interleaved)
      interleaved(p, v, s, m, ops);
    else
      one_f_one_b(p, s, m, zb, ops);
    scratch.begin.push_back(ops.size());
  }
  auto& finish = scratch.finish;
  for (int k = 0; k < (zb ? 3 : 2); ++k) finish[k].assign(size_t(V) * m, -1.0);
  auto slot = [&](TaskKind k) {
    return k == TaskKind::forward ? 0 : k == TaskKind::backward_weight ? 2 : 1;
  };
  std::vector<size_t> cursor(scratch.begin.begin(), scratch.begin.end() - 1);
  std::vector<double> free_at(p, 0.0);
  std::vector<int> in_flight(p, 0);
  r.busy_s.assign(p, 0.0);
  r.transfer_wait_s.assign(p, 0.0);
  r.peak_in_flight.assign(p, 0);
  std::vector<int> work;
  std::vector<char> queued(p, 1);
  for (int s = p - 1; s >= 0; --s) work.push_back(s);
  auto wake = [&](int s) {
    if (!queued[s]) queued[s] = 1, work.push_back(s);
  };
  while (!work.empty()) {
    const int s = work.back();
    work.pop_back();
    queued[s] = 0;
    for (; cursor[s] < scratch.begin[s + 1]; ++cursor[s]) {
      const Op op = ops[cursor[s]];
      const int vs = op.chunk * p + s;
      const ChunkCost& cc = in.chunks[vs];
      double ready = 0, dur = 0;
      if (op.kind == TaskKind::forward) {
        ready = vs == 0 ? 0.0 : finish[0][size_t(vs - 1) * m + op.mb];
        if (ready < 0) break;
        if (vs > 0) ready += in.p2p_s;
        dur = cc.fwd_s;
      } else if (op.kind == TaskKind::backward_weight) {
        ready = finish[1][size_t(vs) * m + op.mb];
        if (ready < 0) break;
        dur = cc.bwd_weight_s;
      } else {
        const bool last = vs == V - 1;
        ready = last ? finish[0][size_t(vs) * m + op.mb] : finish[1][size_t(vs + 1) * m + op.mb];
        if (ready < 0) break;
        if (!last) ready += in.p2p_s;
        dur = zb ? cc.bwd_s - cc.bwd_weight_s : cc.bwd_s;
      }
      const double start = std::max(free_at[s], ready);
      const bool received =
          in.p2p_s > 0 &&
          ((op.kind == TaskKind::forward && vs > 0) ||
           (op.kind != TaskKind::forward && op.kind != TaskKind::backward_weight && vs < V - 1));
      // Idle over [free_at, start]; the input was in flight over [ready - p2p, ready].
      if (received && ready > free_at[s])
        r.transfer_wait_s[s] += std::min(in.p2p_s, ready - free_at[s]);
      free_at[s] = start + dur;
      r.busy_s[s] += dur;
      finish[slot(op.kind)][size_t(vs) * m + op.mb] = free_at[s];
      if (op.kind == TaskKind::forward)
        r.peak_in_flight[s] = std::max(r.peak_in_flight[s], ++in_flight[s]);
      if (op.kind == (zb ? TaskKind::backward_weight : TaskKind::backward)) --in_flight[s];
      if (in.record_trace) {
        if (received)
          r.trace.push_back({s, op.chunk, op.mb, TaskKind::transfer, ready - in.p2p_s, ready});
        r.trace.push_back({s, op.chunk, op.mb, op.kind, start, free_at[s]});
      }
      if (op.kind == TaskKind::forward && vs + 1 < V) wake((vs + 1) % p);
      if (op.kind != TaskKind::forward && op.kind != TaskKind::backward_weight && vs > 0)
        wake((vs - 1) % p);
    }
  }
  for (int s = 0; s < p; ++s)
    if (cursor[s] < scratch.begin[s + 1]) {
      const Op op = ops[cursor[s]];
      r.error = "the schedule cannot complete: stage " + std::to_string(s) +
                " waits forever for its " + to_string(op.kind) + " of micro-batch " +
                std::to_string(op.mb) + " (chunk " + std::to_string(op.chunk) + ")";
      return r;
    }
  r.end_s = free_at;
  r.makespan_s = *std::max_element(free_at.begin(), free_at.end());
  r.idle_s.resize(p);
  for (int s = 0; s < p; ++s) r.idle_s[s] = r.makespan_s - r.busy_s[s];
  return r;
}

}  // namespace planner
