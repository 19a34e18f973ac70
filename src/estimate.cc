#include "planner/estimate.h"

#include <algorithm>
#include <cmath>

#include "planner/cost/communication.h"
#include "planner/cost/pipeline.h"
#include "planner/units.h"

namespace planner {
namespace {

/// Megatron-LM DistributedDataParallelConfig.bucket_size: max(40M, 1M x dp) parameters per
/// gradient bucket; the last bucket's reduction cannot hide behind backward work.
double ddp_bucket_params(int dp) { return std::max(40e6, 1e6 * dp); }

/// Bytes per gradient element on the wire: Megatron-LM reduces in fp32 under bf16
/// (arguments.py: "bf16 requires gradient accumulation and all-reduce in fp32"), in the
/// parameter precision otherwise.
double grad_wire_bytes(Dtype d) { return d == Dtype::bf16 ? 4.0 : 2.0; }

/// Bytes of one 16-bit activation tensor [mbs x seq/cp x hidden].
double activation_tensor_bytes(const ModelSpec& m, const Plan& p) {
  return 2.0 * p.mbs * (double(m.seq_len) / p.cp) * m.hidden;
}

struct LayerStep {
  double fwd = 0, bwd = 0;            ///< per layer and micro-batch, comm included
  double compute = 0, tp_comm = 0;    ///< fwd + bwd split
};

/// One layer, one micro-batch on one rank: compute, recompute, exposed TP and CP communication.
LayerStep layer_step(const ModelSpec& m, const ClusterProfile& c, const Plan& p,
                     const LayerCompute& lc, LayerTimes& times) {
  const GroupLayout tpg = tp_group(p, c.gpus_per_node);
  const double act = activation_tensor_bytes(m, p);
  // Two collectives forward (after the projection and fc2), two backward (at the QKV and fc1
  // inputs): allreduce, or allgather + reduce-scatter of the same bytes with sequence parallelism.
  const double one = p.sp ? collective_time_s(c, Collective::allgather, act, tpg) +
                                collective_time_s(c, Collective::reduce_scatter, act, tpg)
                          : collective_time_s(c, Collective::allreduce, act, tpg);
  double cp_fwd = 0;
  if (p.cp > 1) {  // ring attention: cp-1 exchanges of the K,V shard, hidden behind attention
    const double kv = 2.0 * 2.0 * p.mbs * (double(m.seq_len) / p.cp) * m.kv_heads * m.head_dim() / p.tp;
    const double ring = (p.cp - 1) * collective_time_s(c, Collective::sendrecv, kv, cp_group(p, c.gpus_per_node));
    cp_fwd = std::max(0.0, ring - lc.fwd_attn_s);
  }
  double recompute = 0, recompute_comm = 0;
  if (p.recompute == Recompute::full) recompute = lc.fwd_s(), recompute_comm = 2 * one + cp_fwd;
  if (p.recompute == Recompute::selective) recompute = lc.fwd_attn_s;
  times.fwd_compute_s = lc.fwd_s();
  times.bwd_compute_s = lc.bwd_s() + recompute;
  times.fwd_comm_s = 2 * one + cp_fwd;
  times.bwd_comm_s = 2 * one + 2 * cp_fwd + recompute_comm;
  LayerStep s;
  s.fwd = times.fwd_compute_s + times.fwd_comm_s;
  s.bwd = times.bwd_compute_s + times.bwd_comm_s;
  s.compute = times.fwd_compute_s + times.bwd_compute_s;
  s.tp_comm = times.fwd_comm_s + times.bwd_comm_s;
  return s;
}

struct DpCost {
  double exposed = 0, total = 0;
};

/// Exposed part of a reduction that overlaps `window` seconds of work, bucket by bucket: at
/// least the last bucket stays exposed.
double exposed_after_overlap(double t, double window, double bucket_fraction, bool overlap) {
  if (!overlap) return t;
  return std::max(t - window, t * bucket_fraction);
}

DpCost dp_cost(const ModelSpec& m, const ClusterProfile& c, const Plan& p, double params_rank,
               double fwd_window, double bwd_window, double mb_compute) {
  DpCost d;
  const GroupLayout dpg = dp_group(p, c.gpus_per_node);
  const double bucket = std::min(1.0, ddp_bucket_params(p.dp) / params_rank);
  const double grad_bytes = params_rank * grad_wire_bytes(p.dtype);
  const double param_bytes = params_rank * kWeightBytesPerParam;
  const SoftwareStack& sw = c.software;
  if (p.zero == 0) {
    const double ar = collective_time_s(c, Collective::allreduce, grad_bytes, dpg);
    d.total = ar;
    d.exposed = exposed_after_overlap(ar, bwd_window, bucket, sw.overlap_grad_reduce);
  } else if (p.zero <= 2) {
    const double rs = collective_time_s(c, Collective::reduce_scatter, grad_bytes, dpg);
    const double ag = collective_time_s(c, Collective::allgather, param_bytes, dpg);
    d.total = rs + ag;
    d.exposed = exposed_after_overlap(rs, bwd_window, bucket, sw.overlap_grad_reduce) +
                exposed_after_overlap(ag, fwd_window, bucket, sw.overlap_param_gather);
  } else {  // ZeRO-3: gather parameters for forward, (recompute,) backward; reduce-scatter grads
    const int gathers = p.recompute == Recompute::full ? 3 : 2;
    GroupLayout z3 = dpg;  // the stack may reach fewer NICs than NCCL's hierarchical rings
    z3.ranks_per_node = std::min(z3.ranks_per_node, sw.zero3_collective_nics);
    const double ag = collective_time_s(c, Collective::allgather, param_bytes, z3);
    const double rs = collective_time_s(c, Collective::reduce_scatter, grad_bytes, z3);
    const double per_mb = gathers * ag + rs;
    // ZeRO-3 implementations prefetch the next layer's parameters while computing (DeepSpeed's
    // stage3_prefetch_bucket_size, FSDP's forward/backward prefetch): only the first layer's
    // gather, or the traffic beyond the compute, stays exposed.
    const double layer_fraction = 1.0 / std::max(1, m.layers / p.pp);
    const double exposed_mb = std::max(per_mb - mb_compute, per_mb * layer_fraction);
    d.total = per_mb * p.microbatches();
    d.exposed = exposed_mb * p.microbatches();
  }
  if (p.pp > 1 && m.tied_embeddings) {  // first and last stage all-reduce the shared embedding
    const double emb = double(m.vocab) * m.hidden / p.tp * grad_wire_bytes(p.dtype);
    const double t = collective_time_s(c, Collective::allreduce, emb, pp_pair(p, c.gpus_per_node));
    d.total += t;
    d.exposed += t;
  }
  return d;
}

}  // namespace

AttentionKernel attention_of(const Plan& p, const ClusterProfile& c) {
  return p.attention.value_or(c.software.attention);
}

Estimate estimate(const ModelSpec& m, const ClusterProfile& c, const Plan& p,
                  const EstimateOptions& o, const LayerCompute* cached) {
  Estimate e;
  e.plan = p;
  e.memory_limit_bytes = o.memory_limit_bytes > 0 ? o.memory_limit_bytes : c.gpu.hbm_bytes;
  e.rejection = check_plan(m, c, p, o, o.reasons ? &e.reason : nullptr);
  if (!e.ok()) return e;
  const AttentionKernel attn = attention_of(p, c);

  // Memory first: it is cheap, and most rejected plans fail here.
  const MemoryBreakdown first = memory_per_gpu(m, p, c.gpu, attn, 0);
  const MemoryBreakdown last = p.pp > 1 ? memory_per_gpu(m, p, c.gpu, attn, p.pp - 1) : first;
  e.memory = first.total() >= last.total() ? first : last;
  e.memory_bytes = e.memory.total();
  if (e.memory_bytes > e.memory_limit_bytes) {
    e.rejection = Rejection::out_of_memory;
    return e;
  }

  const LayerConfig cfg{p.tp, p.cp, p.mbs, p.sp, p.dtype, attn};
  e.layer_compute = cached ? *cached : layer_compute(m, c, cfg);
  const LayerStep step = layer_step(m, c, p, e.layer_compute, e.layer);
  const HeadCompute head = head_compute(m, c, cfg);
  const double layers = double(m.layers) / p.pp;
  const double body = layers * (step.fwd + step.bwd);
  const double embed = head.embed_fwd_s + head.embed_bwd_s;
  const double logits = head.logits_fwd_s + head.logits_bwd_s;

  // Stage-to-stage: each TP rank sends its 1/t slice (Megatron's scatter/gather), forward and
  // backward, once per model chunk.
  double p2p = 0;
  if (p.pp > 1) {
    const double bytes = activation_tensor_bytes(m, p) / p.tp;
    p2p = 2.0 * p.vpp * collective_time_s(c, Collective::sendrecv, bytes, pp_pair(p, c.gpus_per_node));
  }
  const double t_first = body + embed + (p.pp == 1 ? logits : 0) + p2p;
  const double t_last = p.pp == 1 ? t_first : body + logits + p2p;
  const double t_mid = body + p2p;
  const double t_max = std::max({t_first, t_last, t_mid});
  const double sum = p.pp == 1 ? t_first : t_first + t_last + (p.pp - 2) * t_mid;
  const int mb = p.microbatches();
  const double pipe = pipeline_time_from(p.schedule, mb, p.vpp, t_max, sum);

  const double params_rank = std::max(stage_params_per_rank(m, p, 0), stage_params_per_rank(m, p, p.pp - 1));
  const DpCost dp = dp_cost(m, c, p, params_rank, layers * step.fwd, layers * step.bwd, t_max);
  const double opt_params = params_rank / (p.zero >= 1 ? p.dp : 1);

  Breakdown& b = e.breakdown;
  const double scale = mb * (t_max > 0 ? 1.0 : 0.0);
  const double crit_extra = t_max - body - p2p;  // embedding/logits work on the critical stage
  b.compute_s = scale * (layers * step.compute + crit_extra);
  b.tp_comm_s = scale * layers * step.tp_comm;
  b.pp_comm_s = scale * p2p;
  b.bubble_s = pipe - mb * t_max;
  b.dp_comm_s = dp.exposed;
  b.optimizer_s = optimizer_step_s(c.gpu, opt_params);
  e.dp_comm_total_s = dp.total;

  e.iteration_time_s = pipe + b.dp_comm_s + b.optimizer_s;
  const double gpus = p.gpus();
  e.tokens_per_s = double(p.gbs) * m.seq_len / e.iteration_time_s;
  const double flops = model_flops_per_iteration(m, p.gbs);
  e.tflops_per_gpu = flops / e.iteration_time_s / gpus / kTera;
  e.mfu = e.tflops_per_gpu * kTera / c.gpu.peak_flops[static_cast<int>(p.dtype)];
  e.bubble_fraction = b.bubble_s / e.iteration_time_s;
  e.exposed_comm_fraction = (b.tp_comm_s + b.pp_comm_s + b.dp_comm_s) / e.iteration_time_s;
  return e;
}

}  // namespace planner
