#include "planner/cost/memory.h"

#include <algorithm>
#include <cassert>

#include "planner/block.h"
#include "planner/cost/stages.h"

namespace planner {

/// The block model's stored bytes (block.h), which follow Korthikanti et al. 2022, Table 2, term
/// by term (no parallelism: sbh(34 + 5as/h)).
double activation_bytes_per_layer(const LayerShape& l, int mbs, int tp, int cp, bool sp,
                                  Recompute r, AttentionKernel attn, Dtype dtype) {
  return block_model(
             l, {tp, cp, mbs, sp, attn, activation_element_bytes(dtype), linear_input_bytes(dtype)})
      .stored_bytes(r);
}

double activation_bytes_per_layer(const ModelSpec& m, int mbs, int tp, int cp, bool sp, Recompute r,
                                  AttentionKernel attn, Dtype dtype) {
  return activation_bytes_per_layer(m.decoder_shape(), mbs, tp, cp, sp, r, attn, dtype);
}

double logits_bytes(const ModelSpec& m, const Plan& p, LossKernel stack_loss) {
  const LossKernel loss = loss_kernel(stack_loss, p.loss_fusion);
  const double e = activation_element_bytes(p.dtype);
  const double s = double(m.seq_len) / p.cp, sbh = s * p.mbs * m.hidden;
  const double sbv = s * p.mbs * double(m.vocab) / p.tp;
  const double copies = p.tp > 1 ? kLossFp32CopiesTorchTp : kLossFp32CopiesTorch;
  if (loss == LossKernel::pytorch_fp32) return 2.0 * e * sbh / p.tp + 4.0 * copies * sbv;
  if (loss == LossKernel::chunked_fp32)
    return 2.0 * e * sbh / p.tp + (4.0 * copies + e) * sbv / kLossChunks + (4.0 + e) * sbh;
  if (loss == LossKernel::te_triton) return 2.0 * e * sbh / p.tp + e * sbv;
  const double cast = e < 4.0 ? e : 0.0;  // the GEMM's own output, when it is not fp32 already
  return 2.0 * e * sbh / p.tp + (4.0 + cast) * sbv;
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

double in_flight_on(const Plan& p, int stage) { return InFlight(p).on(stage); }

double stage_params_per_rank(const ModelSpec& m, const Plan& p, int stage) {
  assert(p.pp >= 1 && split_check(m.layers, p) == SplitError::none);
  double params = double(split_stage_layers(m.layers, p, stage)) * m.layer_params();
  const bool first = stage == 0, last = stage == p.pp - 1;
  if (first) params += m.embedding_params();
  // The last stage holds the output layer: its own weights when untied, a copy of the embedding
  // when tied and pipelined (Megatron-LM keeps both copies and all-reduces their gradients).
  if (last && (!m.tied_embeddings || p.pp > 1)) params += double(m.vocab) * m.hidden;
  if (last) params += m.final_norm_params();
  // A learned position embedding is replicated on every TP rank (Megatron-LM's is not sharded).
  return params / p.tp + (first ? m.position_params() : 0.0);
}

MemoryBreakdown memory_per_gpu(const ModelSpec& m, const Plan& p, const Gpu& gpu,
                               AttentionKernel attn, int stage) {
  (void)gpu;
  StageLoad load;
  load.params = stage_params_per_rank(m, p, stage);
  // ZeRO-3 gathers per submodule: the current and the prefetched largest matrix.
  load.zero3_gather = 2.0 * double(m.hidden) * m.ffn * (m.swiglu ? 2.0 : 1.0) / p.tp;
  const double layers = double(m.layers) / p.pp;
  // A block recomputation (recompute_layers) keeps only the inputs of the first layers of each of
  // the stage's vpp chunks; the others keep everything.
  const double redo = p.recomputed_share(layers) * layers;
  load.act_per_mb =
      activation_bytes_per_layer(m, p.mbs, p.tp, p.cp, p.sp, p.recompute, attn, p.dtype) * redo +
      activation_bytes_per_layer(m, p.mbs, p.tp, p.cp, p.sp, Recompute::none, attn, p.dtype) *
          (layers - redo);
  // Backward working set: one layer's full activations at a time, the recomputed layer under full
  // recompute, or the activation gradients of the layer being back-propagated otherwise.
  load.once_bytes =
      activation_bytes_per_layer(m, p.mbs, p.tp, p.cp, p.sp, Recompute::none, attn, p.dtype);
  const double s = double(m.seq_len) / p.cp, sbh = s * p.mbs * m.hidden;
  if (stage == 0)  // embedding output dropout mask, Korthikanti's (sbh L / t)(p / L) term
    load.act_per_mb += sbh / p.tp;
  if (stage == p.pp - 1) load.once_bytes += logits_bytes(m, p);
  return stage_memory(load, p, in_flight_on(p, stage));
}

}  // namespace planner
