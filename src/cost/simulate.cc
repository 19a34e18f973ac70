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

bool pairs_passes(const SimInput& in) {
  return in.combined_1f1b &&
         (in.schedule == Schedule::one_f_one_b || in.schedule == Schedule::interleaved);
}

int warmup_forwards(const SimInput& in, int s) {
  const int p = in.pp, v = in.vpp, m = in.microbatches, total = m * v;
  // Combined 1F1B: one more (Megatron-Core adds it to the interleaved count; without a pipeline
  // its combined_1f1b_schedule_for_no_pipelining runs the first forward alone).
  const int extra = pairs_passes(in) ? 1 : 0;
  switch (in.schedule) {
    case Schedule::gpipe:
      return m;
    case Schedule::interleaved:
      // Megatron-LM's (p-s-1)*2 + (v-1)*p at d98e8a64 (microbatch_group_size_per_vp_stage at its
      // default p), or every forward when m == p and `all_warmup` (its versions through
      // 307dcf37).
      if (in.all_warmup_when_m_is_p && m == p) return total;
      return std::min((p - s - 1) * 2 + (v - 1) * p + extra, total);
    default:
      return std::min(p - 1 - s + extra, m);
  }
}

double unpaired_passes_s(const SimInput& in, const std::vector<ChunkCost>& chunks, int s) {
  if (!pairs_passes(in)) return 0.0;
  // Forward micro-step k runs chunk (k mod pv) / p, backward micro-step k chunk
  // v - 1 - (k mod pv) / p (MicroStep, below); the cool-down backwards are the last `warm`.
  const int p = in.pp, v = in.vpp, pv = p * v, total = v * in.microbatches;
  const int warm = warmup_forwards(in, s);
  double alone = 0;
  for (int k = 0; k < warm; ++k) {
    const int fwd_chunk = (k % pv) / p, bwd_chunk = v - 1 - ((total - 1 - k) % pv) / p;
    alone +=
        chunks[size_t(fwd_chunk) * p + s].unpaired_s + chunks[size_t(bwd_chunk) * p + s].unpaired_s;
  }
  return alone;
}

namespace {

using Op = SimScratch::Op;

/// 1F1B (Narayanan et al. 2021): stage s warms up with `warm` forwards (min(p-1-s, m)), then
/// alternates. With zero_bubble, B is only the input gradient, which the stage above waits for,
/// and stage s runs each weight gradient W s micro-batches after its B, the rest at the end: the
/// later stages hand their B on at once and their deferred W fill what would be the cool-down
/// bubble (ZB-H1, Qi et al. 2024, "Zero Bubble Pipeline Parallelism"). `combined`: the warm-up
/// forwards and the cool-down backwards run alone (combined 1F1B pairs the rest).
void one_f_one_b(int s, int m, int warm, bool zero_bubble, bool combined, std::vector<Op>& ops) {
  const TaskKind bwd = zero_bubble ? TaskKind::backward_input : TaskKind::backward;
  for (int j = 0; j < warm; ++j) ops.push_back({TaskKind::forward, combined, 0, j});
  int next_w = 0;
  for (int j = 0; j < m; ++j) {
    if (j + warm < m) ops.push_back({TaskKind::forward, false, 0, j + warm});
    ops.push_back({bwd, combined && j + warm >= m, 0, j});
    if (zero_bubble && j - s >= 0) ops.push_back({TaskKind::backward_weight, false, 0, next_w++});
  }
  while (zero_bubble && next_w < m) ops.push_back({TaskKind::backward_weight, false, 0, next_w++});
}

void gpipe(int m, std::vector<Op>& ops) {
  for (int j = 0; j < m; ++j) ops.push_back({TaskKind::forward, false, 0, j});
  for (int j = 0; j < m; ++j) ops.push_back({TaskKind::backward, false, 0, j});
}

/// Micro-step k of Megatron-LM's interleaved order, stepped one at a time without a division:
/// k = (group v + chunk) p + lane, so chunk is (k mod pv) / p and the micro-batch (k / pv) p +
/// k mod p is group p + lane.
struct MicroStep {
  int p, v, group = 0, chunk = 0, lane = 0;  // k = (group v + chunk) p + lane
  void next() {
    if (++lane < p) return;
    lane = 0;
    if (++chunk == v) chunk = 0, ++group;
  }
  int mb() const { return group * p + lane; }
};

/// Megatron-LM's interleaved schedule (schedules.py, forward_backward_pipelining_with_
/// interleaving): micro-step k runs chunk (k mod pv) / p (reversed for backward) on micro-batch
/// (k / pv) p + k mod p; stage s warms up with `warm` forwards (warmup_forwards), then alternates.
/// `combined`: the warm-up forwards and the cool-down backwards run alone.
void interleaved(int p, int v, int m, int warm, bool combined, std::vector<Op>& ops) {
  const int total = m * v;
  MicroStep f{p, v}, b{p, v};  // the next forward's and the next backward's micro-step
  auto forward = [&](bool alone) {
    ops.push_back({TaskKind::forward, alone, f.chunk, f.mb()}), f.next();
  };
  auto backward = [&](bool alone) {
    ops.push_back({TaskKind::backward, alone, v - 1 - b.chunk, b.mb()}), b.next();
  };
  for (int k = 0; k < warm; ++k) forward(combined);
  const int steady = total - warm;
  for (int k = 0; k < steady; ++k) forward(false), backward(false);
  for (int k = steady; k < total; ++k) backward(combined);
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

/// Every stage's task order, back to back, into scratch.ops: stage s runs
/// ops[begin[s]] .. ops[begin[s + 1] - 1].
void task_orders(const SimInput& in, SimScratch& scratch) {
  const int p = in.pp, v = in.vpp, m = in.microbatches;
  const bool zb = in.schedule == Schedule::zb_h1;
  std::vector<Op>& ops = scratch.ops;
  ops.clear();
  ops.reserve(size_t(p) * m * v * (zb ? 3 : 2));
  scratch.begin.assign(1, 0);
  const bool combined = pairs_passes(in);
  for (int s = 0; s < p; ++s) {
    if (in.schedule == Schedule::gpipe)
      gpipe(m, ops);
    else if (in.schedule == Schedule::interleaved)
      interleaved(p, v, m, warmup_forwards(in, s), combined, ops);
    else
      one_f_one_b(s, m, warmup_forwards(in, s), zb, combined, ops);
    scratch.begin.push_back(ops.size());
  }
}

/// Per stage: how far down its order it is, when it is next free, the micro-batches it holds.
struct StageState {
  std::vector<size_t> cursor;
  std::vector<double> free_at;
  std::vector<int> in_flight;
};

int slot(TaskKind k) { return k == TaskKind::forward ? 0 : k == TaskKind::backward_weight ? 2 : 1; }

/// The input of task `op` on virtual stage vs: false while the task it waits for has not run;
/// else when the input arrives (that task's finish, plus a transfer from another stage; `p2p` 0
/// where the transfer blocks, which the caller adds) and how long `op` runs.
bool input_of(const Op& op, int vs, int V, int m, bool zb, double p2p, const ChunkCost& cc,
              const double* const done[3], double& ready, double& dur) {
  if (op.kind == TaskKind::forward) {
    ready = vs == 0 ? 0.0 : done[0][size_t(vs - 1) * m + op.mb];
    if (ready < 0) return false;
    if (vs > 0) ready += p2p;
    dur = cc.fwd_s + (op.alone ? cc.unpaired_s : 0.0);
  } else if (op.kind == TaskKind::backward_weight) {
    ready = done[1][size_t(vs) * m + op.mb];
    if (ready < 0) return false;
    dur = cc.bwd_weight_s;
  } else {
    const bool last = vs == V - 1;
    ready = last ? done[0][size_t(vs) * m + op.mb] : done[1][size_t(vs + 1) * m + op.mb];
    if (ready < 0) return false;
    if (!last) ready += p2p;
    dur = (zb ? cc.bwd_s - cc.bwd_weight_s : cc.bwd_s) + (op.alone ? cc.unpaired_s : 0.0);
  }
  return true;
}

/// Runs the stages' tasks from a work list: each stage runs its order until a task waits for an
/// input not yet done (finish time < 0) and wakes the neighbours its results feed. Inputs and
/// arrays are read into locals first: through the references, each store of a finish time would
/// make the compiler load them again.
void run_tasks(const SimInput& in, const SimScratch& orders, double* const done[3], StageState& st,
               SimResult& r) {
  const int p = in.pp, m = in.microbatches, V = p * in.vpp;
  const bool zb = in.schedule == Schedule::zb_h1;
  const double p2p = in.p2p_s;
  const bool blocking = in.p2p_blocking;
  const double ahead = blocking ? 0.0 : p2p;  // the transfer before the receiver is free
  const bool trace = in.record_trace, combined = pairs_passes(in);
  const TaskKind releases = zb ? TaskKind::backward_weight : TaskKind::backward;
  const Op* ops = orders.ops.data();
  const ChunkCost* chunks = in.chunks.data();
  size_t* cursor = st.cursor.data();
  double *free_at = st.free_at.data(), *busy = r.busy_s.data(), *waited = r.transfer_wait_s.data();
  int *in_flight = st.in_flight.data(), *peak = r.peak_in_flight.data();
  std::vector<int> work;
  std::vector<int> queued(p, 1);  // int, not char: a char store would make every load reload
  for (int s = p - 1; s >= 0; --s) work.push_back(s);
  auto wake = [&](int s) {
    if (!queued[s]) queued[s] = 1, work.push_back(s);
  };
  while (!work.empty()) {
    const int s = work.back();
    work.pop_back();
    queued[s] = 0;
    const size_t end = orders.begin[s + 1];
    size_t at = cursor[s];
    for (; at < end; ++at) {
      const Op op = ops[at];
      const int vs = op.chunk * p + s;
      const ChunkCost& cc = chunks[vs];
      double ready = 0, dur = 0;
      if (!input_of(op, vs, V, m, zb, ahead, cc, done, ready, dur)) break;
      // A forward takes its input from the chunk below and hands its output up; a backward (or
      // ZB-H1's input gradient) takes the gradient from the chunk above and hands one down.
      const bool fwd = op.kind == TaskKind::forward;
      const bool grad = !fwd && op.kind != TaskKind::backward_weight;
      const bool received = p2p > 0 && ((fwd && vs > 0) || (grad && vs < V - 1));
      const bool sends_up = fwd && vs + 1 < V, sends_down = grad && vs > 0;
      // Blocking: the transfer runs once both ends are there, and the receiver waits it out.
      if (received && blocking) ready = std::max(free_at[s], ready) + p2p;
      const double start = std::max(free_at[s], ready);
      // Idle over [free_at, start]; the input was in flight over [ready - p2p, ready].
      if (received && ready > free_at[s]) waited[s] += std::min(p2p, ready - free_at[s]);
      free_at[s] = start + dur;
      busy[s] += dur;
      done[slot(op.kind)][size_t(vs) * m + op.mb] = free_at[s];
      // A combined 1F1B forward runs layer by layer beside its partner's backward, which frees a
      // layer's activations as the forward stores one: the pair adds no peak (the extra warm-up
      // forward holds the place of the plain schedule's forward before its first backward).
      if (fwd) {
        ++in_flight[s];
        if (op.alone || !combined) peak[s] = std::max(peak[s], in_flight[s]);
      }
      if (op.kind == releases) --in_flight[s];
      if (trace) {
        if (received)
          r.trace.push_back({s, op.chunk, op.mb, TaskKind::transfer, ready - p2p, ready});
        r.trace.push_back({s, op.chunk, op.mb, op.kind, start, start + dur});
      }
      // Blocking: the sender is held while its result goes to the neighbour.
      if (blocking && (sends_up || sends_down) && p2p > 0) {
        if (trace)
          r.trace.push_back({s, op.chunk, op.mb, TaskKind::transfer, free_at[s], free_at[s] + p2p});
        free_at[s] += p2p, waited[s] += p2p;
      }
      // The stage of chunk vs + 1 or vs - 1, without a division: vs % p is s.
      if (sends_up) wake(s + 1 == p ? 0 : s + 1);
      if (sends_down) wake(s == 0 ? p - 1 : s - 1);
    }
    cursor[s] = at;
  }
}

}  // namespace

SimResult simulate(const SimInput& in, SimScratch* reuse) {
  SimResult r;
  r.error = check(in);
  if (!r.ok()) return r;
  const int p = in.pp, m = in.microbatches, V = p * in.vpp;
  const bool zb = in.schedule == Schedule::zb_h1;
  SimScratch own;
  SimScratch& scratch = reuse ? *reuse : own;
  task_orders(in, scratch);
  auto& finish = scratch.finish;
  for (int k = 0; k < (zb ? 3 : 2); ++k) finish[k].assign(size_t(V) * m, -1.0);
  double* const done[3] = {finish[0].data(), finish[1].data(), zb ? finish[2].data() : nullptr};
  StageState st{std::vector<size_t>(scratch.begin.begin(), scratch.begin.end() - 1),
                std::vector<double>(p, 0.0), std::vector<int>(p, 0)};
  r.busy_s.assign(p, 0.0);
  r.transfer_wait_s.assign(p, 0.0);
  r.peak_in_flight.assign(p, 0);
  run_tasks(in, scratch, done, st, r);
  for (int s = 0; s < p; ++s)
    if (st.cursor[s] < scratch.begin[s + 1]) {
      const Op op = scratch.ops[st.cursor[s]];
      r.error = "the schedule cannot complete: stage " + std::to_string(s) +
                " waits forever for its " + to_string(op.kind) + " of micro-batch " +
                std::to_string(op.mb) + " (chunk " + std::to_string(op.chunk) + ")";
      return r;
    }
  r.end_s = st.free_at;
  r.makespan_s = *std::max_element(st.free_at.begin(), st.free_at.end());
  r.idle_s.resize(p);
  for (int s = 0; s < p; ++s) r.idle_s[s] = r.makespan_s - r.busy_s[s];
  return r;
}

}  // namespace planner
