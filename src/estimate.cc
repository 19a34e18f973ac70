#include "planner/estimate.h"

#include <algorithm>
#include <cmath>

#include "planner/cost/communication.h"
#include "planner/cost/data_parallel.h"
#include "planner/cost/offload.h"
#include "planner/cost/pipeline.h"
#include "planner/units.h"

namespace planner {
AttentionKernel attention_of(const Plan& p, const ClusterProfile& c) {
  return p.attention.value_or(c.software.attention);
}

void plan_partition(const ModelSpec& m, const BlockLayout& layout, const Plan& p, Partition& part) {
  if (m.encoders.empty())
    split_partition(m.layers, p, part);
  else
    even_partition(layout.count(), p.pp * p.vpp, part);
}

namespace {

/// Combined 1F1B's passes without a partner, per micro-batch on average on each stage
/// (unpaired_passes_s, the simulator's order). Empty without the overlap.
void unpaired_per_microbatch(const Stages& st, const Plan& p, bool all_warmup,
                             std::vector<double>& out) {
  out.clear();
  SimInput in;
  in.schedule = p.schedule, in.pp = p.pp, in.vpp = p.vpp, in.microbatches = p.microbatches();
  in.all_warmup_when_m_is_p = all_warmup, in.combined_1f1b = p.ep_comm_overlap.value_or(false);
  if (!pairs_passes(in)) return;
  out.resize(p.pp);
  for (int s = 0; s < p.pp; ++s) out[s] = unpaired_passes_s(in, st.chunks, s) / in.microbatches;
}

/// Step 3 of an estimate: per-stage times of one micro-batch, and the critical stage's parts.
/// A stage receives its input and its output's gradient per micro-batch and chunk; with blocking
/// transfers (`p2p_blocking`) it is held for its sends too. Combined 1F1B's unpaired passes are
/// spread over the micro-batches (unpaired_per_microbatch) and counted as EP communication.
void stage_times(const Stages& st, const PlanCosts& pc, const Plan& p, bool p2p_blocking,
                 bool all_warmup, StageTimes& r) {
  std::vector<double> alone = std::move(r.unpaired);
  std::vector<double> t = std::move(r.t);
  r = StageTimes{};
  r.t = std::move(t);
  r.t.assign(p.pp, 0.0);
  r.unpaired = std::move(alone);
  unpaired_per_microbatch(st, p, all_warmup, r.unpaired);
  r.p2p = p.pp > 1 ? (p2p_blocking ? 4.0 : 2.0) * p.vpp * pc.p2p_s : 0.0;
  // Interleaved with transfers that do not block: a stage runs its other chunks while a transfer
  // is in flight, so a transfer no longer than a chunk's forward is hidden in the steady state and
  // only the fill's and the drain's chain of 2 (pv - 1) hops is exposed, whatever m (the
  // simulator's makespan exactly, for uniform stages: tests/test_simulate.cc). Longer transfers,
  // blocking ones and the other schedules keep each stage's sends and receives per micro-batch.
  const bool hides = p.pp > 1 && p.vpp > 1 && p.schedule == Schedule::interleaved &&
                     !p2p_blocking && !(all_warmup && p.microbatches() == p.pp);
  // Row by row of chunks (the j-th chunk of every stage): each stage adds its chunks in order.
  const int V = static_cast<int>(st.chunks.size());
  double* stage = r.t.data();
  double shortest = V > 0 ? st.chunks.front().fwd_s : 0.0;  // the shortest chunk forward
  for (int row = 0; row < V; row += p.pp) {
    const ChunkCost* chunk = st.chunks.data() + row;
    for (int s = 0, n = std::min(p.pp, V - row); s < n; ++s)
      stage[s] += chunk[s].fwd_s + chunk[s].bwd_s, shortest = std::min(shortest, chunk[s].fwd_s);
  }
  if (hides && pc.p2p_s <= shortest) r.p2p = 0, r.p2p_fill = 2.0 * (p.pp * p.vpp - 1) * pc.p2p_s;
  for (size_t s = 0; s < r.unpaired.size(); ++s) r.t[s] += r.unpaired[s];
  for (double& x : r.t) x += r.p2p, r.sum += x;
  r.critical = int(std::max_element(r.t.begin(), r.t.end()) - r.t.begin());
  r.t_max = r.t[r.critical];
  for (size_t vs = r.critical; vs < st.chunks.size(); vs += p.pp) {
    r.fwd += st.chunks[vs].fwd_s, r.bwd += st.chunks[vs].bwd_s,
        r.weight += st.chunks[vs].bwd_weight_s;
    r.compute += st.chunk_compute_s[vs], r.tp += st.chunk_tp_s[vs], r.cp += st.chunk_cp_s[vs];
    r.ep += st.chunk_ep_s[vs], r.host += st.chunk_host_s[vs];
  }
  if (!r.unpaired.empty()) {  // half of them forwards, half backwards
    const double u = r.unpaired[r.critical];
    r.fwd += u / 2, r.bwd += u / 2, r.ep += u;
  }
}

/// Step 4: memory of the most loaded stage, with the simulated peak of micro-batches in flight
/// when there is one. False (and the estimate rejected) when it does not fit.
/// `bf16_optimizer_grads`: DeepSpeed's BF16_Optimizer holds the bf16 gradients too.
/// `hpz`: ZeRO++'s secondary weight partition (hpz_partition), whose bf16 shard of the stage's
/// weights each rank keeps beside ZeRO-3's own (1: none). `offloaded_act`: the stored activation
/// bytes per micro-batch in flight that activation offload keeps in host memory. `all_warmup`:
/// the stack's interleaved schedule runs every forward first when m = pp (InFlight).
bool fits(const Stages& st, const Plan& p, const SimResult* sim, bool host_gradients,
          bool bf16_optimizer_grads, int hpz, double offloaded_act, bool all_warmup,
          double transit_act, Estimate& e) {
  const InFlight closed_form(p, all_warmup);
  for (int s = 0; s < p.pp; ++s) {
    const double in_flight = sim ? double(sim->peak_in_flight[s]) / p.vpp : closed_form.on(s);
    MemoryBreakdown mem =
        stage_memory(st.load[s], p, in_flight, host_gradients, bf16_optimizer_grads);
    if (hpz > 1) mem.weights += st.load[s].params * weight_bytes_per_param(p.dtype) / hpz;
    mem.activations = std::max(0.0, mem.activations - in_flight * offloaded_act) + transit_act;
    mem.set_reserve();  // the fragmentation allowance on what stays on the GPU
    if (mem.total() > e.memory_bytes) e.memory = mem, e.memory_bytes = mem.total();
  }
  if (e.memory_bytes <= e.memory_limit_bytes) return true;
  e.rejection = Rejection::out_of_memory;
  return false;
}

/// Step 7: where the iteration's time goes. The idle time of the critical stage is split into
/// transfers and bubble: the closed form serialises the transfers (m of them per stage, or under
/// interleaving the fill's and drain's hops, p2p_fill) and charges the rest to fill and drain;
/// the simulator overlaps them with other stages' work and
/// measures how long the stage waited for an input in transfer, the rest being the bubble
/// (interleaved plans keep theirs, about (p - 1) / (v m) of the pipeline).
Breakdown attribute(const StageTimes& tt, int mb, double pipe, const SimResult* sim,
                    const DpCost& dp, double optimizer_s) {
  Breakdown b;
  b.compute_s = mb * tt.compute;
  b.tp_comm_s = mb * tt.tp;
  b.cp_comm_s = mb * tt.cp;
  b.ep_comm_s = mb * tt.ep;
  b.host_s = mb * tt.host;
  const double idle =
      std::max(0.0, pipe - b.compute_s - b.tp_comm_s - b.cp_comm_s - b.ep_comm_s - b.host_s);
  b.pp_comm_s = std::min(idle, sim ? sim->transfer_wait_s[tt.critical] : mb * tt.p2p + tt.p2p_fill);
  b.bubble_s = idle - b.pp_comm_s;
  b.dp_comm_s = dp.exposed;
  b.optimizer_s = optimizer_s;
  return b;
}

/// A number this small a fraction of the iteration time is rounding, not time: the breakdown's
/// bubble and transfer terms are differences of sums over up to limits::kSimulatedTasks (4e6)
/// tasks, whose rounding is at most 4e6 x 2^-53 = 4.4e-10 of the iteration; a real term is
/// larger than this by orders of magnitude, and no output prints 1e-9 of the iteration.
constexpr double kNoiseFraction = 1e-9;

/// Step 8a: rounding noise (a bubble of 1.03e-13 s on one stage) set to 0, once, where every
/// output (text, CSV, JSON, HTML, plots, compare) reads it.
void clear_noise(Estimate& e) {
  const double tol = kNoiseFraction * e.iteration_time_s;
  auto snap = [tol](double& v) {
    if (std::fabs(v) < tol) v = 0;
  };
  Breakdown& b = e.breakdown;
  for (double* v : {&b.compute_s, &b.tp_comm_s, &b.cp_comm_s, &b.ep_comm_s, &b.host_s, &b.pp_comm_s,
                    &b.dp_comm_s, &b.bubble_s, &b.optimizer_s, &b.offload_s, &e.dp_comm_total_s})
    snap(*v);
  for (double& v : e.stage_idle_s) snap(v);
  for (double& v : e.stage_busy_s) snap(v);
}

/// Step 8: the figures a report ranks and prints.
void metrics(const ModelSpec& m, const ClusterProfile& c, const Plan& p, Estimate& e) {
  clear_noise(e);
  const Breakdown& b = e.breakdown;
  const double gpus = p.gpus();
  e.tokens_per_s = double(p.gbs) * m.seq_len / e.iteration_time_s;
  e.tflops_per_gpu = model_flops_per_iteration(m, p.gbs) / e.iteration_time_s / gpus / kTera;
  e.mfu = e.tflops_per_gpu * kTera / c.gpu.peak_flops[static_cast<int>(p.dtype)];
  e.bubble_fraction = b.bubble_s / e.iteration_time_s;
  e.exposed_comm_fraction =
      (b.tp_comm_s + b.cp_comm_s + b.ep_comm_s + b.pp_comm_s + b.dp_comm_s) / e.iteration_time_s;
}

/// One estimate, in steps over explicit values: structure -> stages -> pipeline timing ->
/// memory -> DP cost -> optimizer and offload -> attribution -> metrics. `ws` holds every step's
/// storage.
Estimate evaluate(const ModelSpec& m, const ClusterProfile& c, const Plan& p,
                  const EstimateOptions& o, const EstimateCache* cache, const Partition* part,
                  bool simulated, SimResult* sim_out, bool trace, Workspace& ws) {
  // 1. Structure: the plan's own checks and the framework's.
  Estimate e;
  e.plan = p;
  e.framework = o.framework;
  e.memory_limit_bytes = o.memory_limit_bytes > 0 ? o.memory_limit_bytes : c.gpu.hbm_bytes;
  e.rejection = check_plan(m, c, p, o, o.reasons ? &e.reason : nullptr);
  if (!e.ok()) return e;
  // 2. Stages: every block's cost, cut by the partition.
  BlockLayout own;
  if (!cache) own = block_layout(m);
  const BlockLayout& layout = cache ? cache->layout : own;
  plan_costs(m, c, p, layout, cache ? &cache->cell : nullptr, ws.costs);
  const PlanCosts& pc = ws.costs;
  if (!part) plan_partition(m, layout, p, ws.even);
  const Partition& used = part ? *part : ws.even;
  build_stages(layout, pc, p, used, ws.stages);
  const Stages& st = ws.stages;
  const int mb = p.microbatches();
  // 3. Pipeline timing: the closed form, and the simulator when asked.
  SimResult sim;
  if (simulated) {
    sim = simulate(
        {p.schedule, p.pp, p.vpp, mb, st.chunks, pc.p2p_s, trace, c.software.interleaved_all_warmup,
         c.software.deepspeed_pipeline_engine, p.ep_comm_overlap.value_or(false)},
        &ws.sim);
    if (!sim.ok()) {
      e.rejection = Rejection::schedule_invalid;
      e.reason = sim.error;
      return e;
    }
  }
  const SimResult* simmed = simulated ? &sim : nullptr;
  // 4. Memory.
  const int hpz = p.zeropp && p.zero == 3 ? hpz_partition(c, p) : 1;
  // Activation offload: the offloaded layers' stored activations live on the host but for the
  // layer being reloaded before its backward (Transformer Engine reloads one group ahead).
  const BlockCost& decoder = pc.shape.back();
  const int act_layers = std::min(p.offload_activation_layers, m.layers);
  const double offloaded_act = std::max(0, act_layers - 1) * decoder.act_bytes;
  const bool bf16_optimizer = deepspeed_bf16_optimizer(c, p);
  // Combined 1F1B: a paired forward stores each layer's activations while its partner's
  // backward frees another's, one layer apart: the largest layer's in transit on top.
  double transit_act = 0;
  if (p.ep_comm_overlap.value_or(false))
    for (const BlockCost& b : pc.shape) transit_act = std::max(transit_act, b.act_bytes);
  const bool fit = fits(st, p, simmed, deepspeed_offload(o.framework), bf16_optimizer, hpz,
                        offloaded_act, c.software.interleaved_all_warmup, transit_act, e);
  if (o.detail) e.partition = st.blocks_per_stage, e.chunk_partition = used;
  if (!fit) return e;
  StageTimes& tt = ws.times;
  stage_times(st, pc, p, c.software.deepspeed_pipeline_engine, c.software.interleaved_all_warmup,
              tt);
  e.critical_stage = tt.critical;
  const double weight_fraction = tt.t_max > 0 ? tt.weight / tt.t_max : 0.0;
  const double closed =
      pipeline_time_from(p.schedule, mb, p.vpp, tt.t_max, tt.sum, weight_fraction) + tt.p2p_fill;
  const double pipe = simulated ? sim.makespan_s : closed;
  // 5. DP cost over the dp x cp replicas of the most loaded stage's weights.
  double params_rank = 0, expert_params_rank = 0;
  for (const StageLoad& l : st.load)
    if (l.params > params_rank) params_rank = l.params, expert_params_rank = l.expert_params;
  // The routed experts' weights reduce over their own group (expert_dp_cost, below).
  params_rank -= expert_params_rank;
  e.dp_params_rank = params_rank, e.expert_params_rank = expert_params_rank;
  // A compressed optimizer's warm-up, averaged over the run's steps where they are known.
  const double steps = o.train_tokens / (double(p.gbs) * m.seq_len);
  const double warmup = p.grad_compression != GradCompression::none && steps > 0
                            ? std::min(1.0, double(kCompressionFreezeSteps) / steps)
                            : 0.0;
  DpCost dp = dp_cost(m, c, p, params_rank, tt.fwd, tt.bwd, decoder.compute,
                      st.blocks_per_stage[tt.critical], &ws.zero3, warmup);
  if (expert_params_rank > 0) {
    const DpCost experts = expert_dp_cost(c, p, expert_params_rank, tt.fwd, tt.bwd, dp);
    dp.total += experts.total, dp.exposed += experts.exposed;
  }
  // 6. The optimizer step, on the GPU or (offloaded) on the host, and the host memory it needs.
  const double shard = params_rank / (p.zero >= 1 ? p.weight_replicas() : 1) +
                       expert_params_rank / (p.zero >= 1 ? std::max(1LL, p.expert_replicas()) : 1);
  const OffloadCost off = offload_cost(c, p, o.framework, params_rank + expert_params_rank, shard,
                                       tt.fwd, tt.bwd, optimizer_step_s(c.gpu, shard));
  // Each offloaded layer's activations go down after its forward and up before its backward,
  // beside the next layer's compute: what a layer's transfer takes beyond it is exposed.
  double act_offload_s = 0;
  if (act_layers > 0) {
    const double bytes = act_layers * decoder.act_bytes * InFlight(p).on(0);
    const double per_layer_s = decoder.act_bytes / c.host.achieved_link_Bps();
    act_offload_s =
        mb * act_layers *
        (std::max(0.0, per_layer_s - decoder.fwd_s) + std::max(0.0, per_layer_s - decoder.bwd_s));
    e.offload_d2h_bytes += mb * act_layers * decoder.act_bytes;
    e.offload_h2d_bytes += mb * act_layers * decoder.act_bytes;
    e.host_memory_bytes += bytes * ranks_per_node(c, p);
  }
  if (p.offloads()) {
    e.host_memory_bytes += off.host_bytes * ranks_per_node(c, p);
    e.offload_h2d_bytes += off.h2d_bytes, e.offload_d2h_bytes += off.d2h_bytes;
  }
  if (p.uses_host()) e.host_memory_limit_bytes = c.host.memory_bytes * kHostMemoryUsableFraction;
  if (e.host_memory_bytes > e.host_memory_limit_bytes && e.host_memory_limit_bytes > 0) {
    e.rejection = Rejection::host_out_of_memory;
    return e;
  }
  // 7. Attribution.
  e.breakdown = attribute(tt, mb, pipe, simmed, dp, off.gpu_step_s);
  e.breakdown.offload_s = off.exposed_s() + act_offload_s;
  e.dp_comm_total_s = dp.total;
  if (p.zero == 0 && p.grad_compression == GradCompression::none && p.weight_replicas() > 1 &&
      !deepspeed_pipelined(c, p)) {  // Megatron-LM's DDP buckets, which that engine has not
    e.dp_allreduce = dp_allreduce_algorithm(c, p, params_rank);
    e.dp_bucket_bytes = dp_bucket_bytes(p, params_rank);
  }
  const double after = e.breakdown.dp_comm_s + e.breakdown.optimizer_s + e.breakdown.offload_s;
  e.iteration_time_s = pipe + after;
  e.closed_form_time_s = closed + after;
  if (o.detail && e.dp_bucket_bytes > 0) {  // the 8-bit all-reduce's what-if
    // The dense gradients in 8 bits; the experts' reduction as planned, in what it leaves.
    DpCost q8 = int8_allreduce_cost(m, c, p, params_rank, tt.bwd);
    if (expert_params_rank > 0) {
      const DpCost experts = expert_dp_cost(c, p, expert_params_rank, tt.fwd, tt.bwd, q8);
      q8.total += experts.total, q8.exposed += experts.exposed;
    }
    e.int8_allreduce_iteration_s = e.iteration_time_s - dp.exposed + q8.exposed;
    e.int8_allreduce_total_s = q8.total;
  }
  e.simulated = simulated;
  if (o.detail) e.layer_compute = decoder.compute, e.layer = decoder.times;
  if (simulated) {
    e.stage_busy_s = sim.busy_s, e.stage_idle_s = sim.idle_s, e.peak_in_flight = sim.peak_in_flight;
    if (sim_out) *sim_out = std::move(sim);
  }
  // 8. Metrics.
  metrics(m, c, p, e);
  return e;
}

}  // namespace

Estimate estimate(const ModelSpec& m, const ClusterProfile& c, const Plan& p,
                  const EstimateOptions& o, const EstimateCache* cache, Workspace* ws) {
  if (ws) return evaluate(m, c, p, o, cache, nullptr, false, nullptr, false, *ws);
  Workspace own;
  return evaluate(m, c, p, o, cache, nullptr, false, nullptr, false, own);
}

Estimate simulate_plan(const ModelSpec& m, const ClusterProfile& c, const Plan& p,
                       const EstimateOptions& o, const Partition* part, SimResult* sim,
                       bool trace) {
  Workspace ws;
  return evaluate(m, c, p, o, nullptr, part, true, sim, trace, ws);
}

Estimate refine(const ModelSpec& m, const ClusterProfile& c, const Plan& p,
                const EstimateOptions& o) {
  Estimate even = simulate_plan(m, c, p, o);
  if (even.rejection != Rejection::none && even.rejection != Rejection::out_of_memory) return even;
  // A framework that splits layers evenly runs the even partition, however much a balanced one
  // would gain.
  if (!o.balanced_partitions || (o.framework && !info(*o.framework).uneven_stages)) return even;
  // A block recomputation prices a block by its place in its chunk (build_stages), which the
  // balancer's per-block costs do not know: the plan's split only.
  if (p.recompute_layers > 0) return even;
  const BlockLayout layout = block_layout(m);
  const double limit = o.memory_limit_bytes > 0 ? o.memory_limit_bytes : c.gpu.hbm_bytes;
  const Partition bal = balanced_partition(layout, plan_costs(m, c, p, layout), p, limit);
  Estimate balanced = simulate_plan(m, c, p, o, &bal);
  const bool use_balanced =
      balanced.ok() && (!even.ok() || balanced.iteration_time_s < even.iteration_time_s);
  Estimate best = use_balanced ? balanced : even;
  Partition planned;
  plan_partition(m, layout, p, planned);
  best.balanced = use_balanced && bal != planned;
  if (even.ok() && balanced.ok())
    best.balanced_gain_pct =
        100.0 * (even.iteration_time_s - balanced.iteration_time_s) / even.iteration_time_s;
  if (std::fabs(best.balanced_gain_pct) < 100.0 * kNoiseFraction) best.balanced_gain_pct = 0;
  return best;
}

bool finite_result(const Estimate& e) {
  const Breakdown& b = e.breakdown;
  const MemoryBreakdown& mem = e.memory;
  const LayerTimes& l = e.layer;
  for (double v : {e.iteration_time_s,
                   e.tokens_per_s,
                   e.tflops_per_gpu,
                   e.mfu,
                   e.memory_bytes,
                   e.memory_limit_bytes,
                   mem.weights,
                   mem.grads,
                   mem.optimizer,
                   mem.activations,
                   mem.reserve,
                   b.compute_s,
                   b.tp_comm_s,
                   b.cp_comm_s,
                   b.ep_comm_s,
                   b.pp_comm_s,
                   b.dp_comm_s,
                   b.bubble_s,
                   b.optimizer_s,
                   b.offload_s,
                   l.fwd_compute_s,
                   l.bwd_compute_s,
                   e.host_memory_bytes,
                   l.fwd_comm_s,
                   l.bwd_comm_s,
                   e.bubble_fraction,
                   e.exposed_comm_fraction,
                   e.dp_comm_total_s,
                   e.closed_form_time_s,
                   e.balanced_gain_pct})
    if (!std::isfinite(v)) return false;
  for (double v : {b.host_s, l.fwd_host_s, l.bwd_host_s})  // the host's wait (stages.cc)
    if (!std::isfinite(v)) return false;
  for (const auto* list : {&e.stage_busy_s, &e.stage_idle_s})
    for (double v : *list)
      if (!std::isfinite(v)) return false;
  return e.iteration_time_s > 0;
}

}  // namespace planner
