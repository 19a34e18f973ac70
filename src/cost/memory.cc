#include "planner/cost/memory.h"

#include <algorithm>
#include <cassert>

namespace planner {

/// Korthikanti et al. 2022, Table 2, term by term (no parallelism: sbh(34 + 5as/h)):
///   outside the TP region, 10 sbh: two layer-norm inputs (4), two dropout masks (2), the QKV
///   and MLP GEMM inputs (2 + 2); sharded by t only with sequence parallelism;
///   inside the TP region, 24 sbh / t: Q and the projection input (2 + 2 sbh), K and V
///   (2 + 2 s b g d), the activation input (2 s b f_up) and the fc2 input (2 s b f);
///   attention scores, softmax and its dropout, 5 a s^2 b / t: gone with selective recompute or a
///   flash kernel, which keeps only fp32 softmax statistics (4 a s b / t).
/// Full recompute keeps only each layer's input, 2 sbh (sharded with sequence parallelism).
double activation_bytes_per_layer(const LayerShape& l, int mbs, int tp, int cp, bool sp,
                                  Recompute r, AttentionKernel attn) {
  const double s = double(l.seq) / (l.causal ? cp : 1) * l.sequences, b = mbs, h = l.hidden;
  const double t = tp, sbh = s * b * h;
  const double outside_tp = sp ? t : 1.0;
  const double f = l.ffn, f_up = l.swiglu ? 2.0 * f : f;
  if (!l.attention)  // projector MLP: its input, the activation input and the fc2 input
    return r == Recompute::full ? 2.0 * s * b * l.in_features
                                : 2.0 * s * b * l.in_features + s * b * (2.0 * f_up + 2.0 * f) / t;
  if (r == Recompute::full) return 2.0 * sbh / outside_tp;
  const double d = l.head_dim(), g = l.kv_heads, a = l.heads;
  const double non_tp = 10.0 * sbh;
  const double tp_part = s * b * (4.0 * h + 4.0 * g * d + 2.0 * f_up + 2.0 * f);
  double core = 0;
  if (attn == AttentionKernel::flash)
    core = 4.0 * a * s * b;
  else if (r == Recompute::none)
    core = 5.0 * a * s * double(l.seq) * b;
  return non_tp / outside_tp + (tp_part + core) / t;
}

double activation_bytes_per_layer(const ModelSpec& m, int mbs, int tp, int cp, bool sp, Recompute r,
                                  AttentionKernel attn) {
  return activation_bytes_per_layer(m.decoder_shape(), mbs, tp, cp, sp, r, attn);
}

double microbatches_in_flight(const Plan& p) {
  const int m = p.microbatches();
  switch (p.schedule) {
    case Schedule::gpipe:
      return m;
    case Schedule::one_f_one_b:
      return std::min(p.pp, m);
    case Schedule::interleaved:
      return std::min<double>(m, p.pp + double(p.pp - 1) / p.vpp);
    case Schedule::zb_h1:  // activations stay until the deferred weight gradient: p on every stage
      return std::min(p.pp, m);
  }
  return m;
}

double in_flight_on(const Plan& p, int stage) {
  if (p.schedule == Schedule::gpipe || p.schedule == Schedule::zb_h1)
    return microbatches_in_flight(p);
  if (p.schedule == Schedule::one_f_one_b) return std::min(p.pp - stage, p.microbatches());
  return std::max(1.0,
                  microbatches_in_flight(p) - stage);  // interleaved: Korthikanti's first stage
}

double stage_params_per_rank(const ModelSpec& m, const Plan& p, int stage) {
  assert(p.pp >= 1 && m.layers % p.pp == 0);
  double params = double(m.layers / p.pp) * m.layer_params();
  const bool first = stage == 0, last = stage == p.pp - 1;
  if (first) params += m.embedding_params();
  // The last stage holds the output layer: its own weights when untied, a copy of the embedding
  // when tied and pipelined (Megatron-LM keeps both copies and all-reduces their gradients).
  if (last && (!m.tied_embeddings || p.pp > 1)) params += double(m.vocab) * m.hidden;
  if (last) params += m.hidden;  // final norm
  return params / p.tp;
}

MemoryBreakdown stage_memory(const StageLoad& load, const Plan& p, double in_flight) {
  MemoryBreakdown mem;
  mem.weights = load.params * kWeightBytesPerParam / (p.zero >= 3 ? p.weight_replicas() : 1);
  mem.grads = load.params * kGradBytesPerParam / (p.zero >= 2 ? p.weight_replicas() : 1);
  mem.optimizer = load.params * kOptimizerBytesPerParam / (p.zero >= 1 ? p.weight_replicas() : 1);
  if (p.zero >= 3) mem.weights += load.zero3_gather * kWeightBytesPerParam;
  mem.activations = load.act_per_mb * in_flight + load.once_bytes;
  const double used = mem.weights + mem.grads + mem.optimizer + mem.activations;
  mem.reserve = kRuntimeReserveBytes + kFragmentationFraction * used;
  return mem;
}

MemoryBreakdown memory_per_gpu(const ModelSpec& m, const Plan& p, const Gpu& gpu,
                               AttentionKernel attn, int stage) {
  (void)gpu;
  StageLoad load;
  load.params = stage_params_per_rank(m, p, stage);
  // ZeRO-3 gathers per submodule: the current and the prefetched largest matrix.
  load.zero3_gather = 2.0 * double(m.hidden) * m.ffn * (m.swiglu ? 2.0 : 1.0) / p.tp;
  const double layers = double(m.layers) / p.pp;
  load.act_per_mb =
      activation_bytes_per_layer(m, p.mbs, p.tp, p.cp, p.sp, p.recompute, attn) * layers;
  // Backward working set: one layer's full activations at a time, the recomputed layer under full
  // recompute, or the activation gradients of the layer being back-propagated otherwise.
  load.once_bytes = activation_bytes_per_layer(m, p.mbs, p.tp, p.cp, p.sp, Recompute::none, attn);
  const double s = double(m.seq_len) / p.cp, sbh = s * p.mbs * m.hidden;
  if (stage == 0)  // embedding output dropout mask, Korthikanti's (sbh L / t)(p / L) term
    load.act_per_mb += sbh / p.tp;
  // Last stage: Korthikanti's final norm and output-GEMM input with fp32 logits, 4sbh/t (1 + v/h),
  // plus the 16-bit logits the output GEMM writes before the loss casts them (2sbv/t).
  if (stage == p.pp - 1)
    load.once_bytes += 4.0 * sbh / p.tp + (4.0 + 2.0) * s * p.mbs * double(m.vocab) / p.tp;
  return stage_memory(load, p, in_flight_on(p, stage));
}

}  // namespace planner
