#include "planner/cost/stages.h"

#include <algorithm>
#include <cassert>
#include <cmath>

#include "planner/cost/communication.h"
#include "planner/format.h"

namespace planner {

BlockLayout block_layout(const ModelSpec& m) {
  BlockLayout b;
  auto add = [&](const LayerShape& s, int n) {
    b.shapes.push_back(s);
    for (int i = 0; i < n; ++i) b.shape_of.push_back(static_cast<int>(b.shapes.size()) - 1);
  };
  for (const Component& c : m.encoders) add(c.shape, c.layers);
  b.first_decoder = b.count();
  if (!m.moe.any()) {
    add(m.decoder_shape(), m.layers);
  } else {  // the dense layers' shape and the MoE layers', in layer order
    const LayerShape dense = m.decoder_shape(), moe = m.moe_shape();
    const int moe_layers = m.moe_layers(), first = static_cast<int>(b.shapes.size());
    if (moe_layers < m.layers) b.shapes.push_back(dense);
    b.shapes.push_back(moe);
    const int moe_index = static_cast<int>(b.shapes.size()) - 1;
    for (int i = 0; i < m.layers; ++i) b.shape_of.push_back(m.is_moe_layer(i) ? moe_index : first);
  }
  b.prefix.assign(b.shapes.size(), std::vector<int>(b.shape_of.size() + 1, 0));
  for (size_t k = 0; k < b.shapes.size(); ++k)
    for (size_t i = 0; i < b.shape_of.size(); ++i)
      b.prefix[k][i + 1] = b.prefix[k][i] + (b.shape_of[i] == int(k) ? 1 : 0);
  return b;
}

DispatchBytes dispatch_bytes(const Plan& p, const BlockModel& bm, const Module& dispatch) {
  const double e = activation_element_bytes(p.dtype);
  const Module* router = bm.linear(kRouter);
  const double tokens = router ? router->tokens : 0.0, experts = router ? router->out : 0.0;
  const double group = double(p.etp) * p.ep;
  DispatchBytes d;
  d.copies = e * dispatch.tokens * dispatch.in;
  d.hidden = group * tokens * dispatch.in * e;
  d.probs = group * tokens * experts * e;
  return d;
}

double paired_ep_exposed_s(const LayerCompute& lc, double a2a, double slow) {
  const LinearTimes* L = lc.linear.data();
  double mf = 0, mb = 0, mw = 0;
  for (const int i : {kExpertFc1, kExpertFc2, kFc1, kFc2})
    mf += L[i].fwd_s, mb += L[i].bwd_data_s, mw += L[i].bwd_weight_s;
  const double attn_fwd = lc.fwd_s() - mf, attn_bwd = lc.bwd_s() - mb - mw;
  const double mlp = mb + mw + mf;
  // The middle step's order: the MLP's forward starts after the dispatch forward, the dispatch
  // backward after the MLP's data gradient.
  const double middle = std::max(std::max(mb + mw, a2a) + mf, std::max(a2a, mb) + a2a) - mlp;
  return exposed_after_overlap(a2a, attn_fwd, 0.0, slow) +
         std::max(middle, exposed_after_overlap(2 * a2a, mlp, 0.0, slow)) +
         exposed_after_overlap(a2a, attn_bwd, 0.0, slow);
}

namespace {

/// One pass of a mixture-of-experts layer's token dispatcher on one rank: the dispatch and the
/// combine all-to-all of its token copies (16-bit: Megatron-Core dispatches in the activations'
/// precision unless FP8 dispatch is asked for) over the ep ranks, and with etp > 1 the
/// all-gather and reduce-scatter of the received tokens over the etp ranks that share experts.
/// Not overlapped with compute (Megatron-Core's --overlap-moe-expert-parallel-comm is off by
/// default). The all-gather dispatcher (MoEAllGatherTokenDispatcher at d98e8a64) instead gathers
/// every rank's tokens and their routing probabilities (in the activations' precision: the
/// router's probs.type_as(logits), no --moe-router-dtype) over the etp x ep group and
/// reduce-scatters the combined outputs back (the backward the same, mirrored); its 1-byte
/// routing map, gathered forward only, is left out.
double expert_dispatch_s(const ClusterProfile& c, const Plan& p, const BlockModel& bm,
                         const Module& dispatch) {
  const DispatchBytes d = dispatch_bytes(p, bm, dispatch);
  if (p.dispatcher == Dispatcher::allgather) {
    const GroupLayout g = tp_ep_group(p, c);
    return collective_time_s(c, Collective::allgather, d.hidden + d.probs, g) +
           collective_time_s(c, Collective::reduce_scatter, d.hidden, g);
  }
  const double bytes = d.copies;
  const GroupLayout g = ep_group(p, c);
  double t = 2.0 * (is_flex(p.dispatcher) ? node_dedup_dispatch_s(c, bytes, g, dispatch.out)
                                          : alltoall_time_s(c, bytes, g));
  if (p.etp > 1 && p.dispatcher == Dispatcher::alltoall) {  // flex dispatches over tp x ep at once
    const GroupLayout e = etp_group(p, c);
    t += collective_time_s(c, Collective::allgather, bytes * p.etp, e) +
         collective_time_s(c, Collective::reduce_scatter, bytes * p.etp, e);
  }
  return t;
}

/// What a block shape's cost shares across the plans of one layer configuration: the block model
/// and its per-rank figures, and the TP and CP collectives' times.
ShapeCell shape_cell(const LayerShape& l, const ClusterProfile& c, const Plan& p,
                     const LayerCompute& lc, AttentionKernel attn) {
  ShapeCell sc;
  sc.compute = lc;
  const GroupLayout tpg = tp_group(p, c);
  sc.tp_in_node = tpg.nodes == 1;
  const int cp = l.causal ? p.cp : 1;
  const BlockModel& bm = sc.model =
      block_model(l, {p.tp, p.cp, p.mbs, p.sp, attn, activation_element_bytes(p.dtype),
                      linear_input_bytes(p.dtype), p.ep, p.etp, p.capacity_factor,
                      p.pad_to_capacity.value_or(false), c.software.transformer_engine});
  const double e = activation_element_bytes(p.dtype);  // fp32 under tf32, else 16-bit
  const double act = e * p.mbs * l.sequences * (double(l.seq) / cp) * l.hidden;
  sc.boundary_bytes = act;
  // One collective per row-parallel linear in each pass (after the projection and fc2 forward,
  // at the QKV and fc1 inputs backward): allreduce, or allgather + reduce-scatter of the same
  // bytes with sequence parallelism (Korthikanti et al. 2022, Figure 5). Under fp8 the
  // all-gathers carry FP8: a column-parallel input and a row-parallel output gradient are cast
  // on this rank's rows and gathered as 1-byte data (tp_gather_bytes); the reduce-scatters stay
  // 16-bit.
  const double ag = p.sp ? collective_time_s(c, Collective::allgather,
                                             tp_gather_bytes(act, p.dtype, c.software), tpg)
                         : 0.0;
  const double rs = p.sp ? collective_time_s(c, Collective::reduce_scatter, act, tpg) : 0.0;
  sc.tp_allgather_s = ag, sc.tp_reduce_scatter_s = rs;
  const double one = p.sp ? ag + rs : collective_time_s(c, Collective::allreduce, act, tpg);
  sc.tp_per_pass_s = bm.tp_collectives() * one;
  if (p.dtype == Dtype::fp8 && fp8_current_scaling(p.fp8_recipe, c.software) && p.sp && p.tp > 1) {
    // Current scaling: a tensor all-gathered over TP after its cast (a column-parallel input
    // forward, a row-parallel output gradient backward) is cast with the TP group's amax, one
    // 4-byte all-reduce before each such cast (Transformer Engine module/linear.py,
    // set_quantizer_amax_reduction_group; quantizer.cpp waits on it before the cast; torchao's
    // amax of a sequence-sharded DTensor is the same all-reduce).
    const double amax = collective_time_s(c, Collective::allreduce, kFp8AmaxAllreduceBytes, tpg);
    for (const Module& m : bm) {
      if (m.sp_gathers_input()) sc.amax_fwd_s += amax;
      if (m.sp_gathers_output_grad()) sc.amax_bwd_s += amax;
    }
  }
  if (cp > 1 && l.attention) {  // ring attention: cp-1 exchanges of the K,V shard, behind attention
    // Latent attention exchanges every head's up-projected key (qk_nope + qk_rope) and value.
    const double kv_width = l.mla.any() ? double(l.heads) * (l.mla.qk_head_dim() + l.mla.v_head_dim)
                                        : 2.0 * l.kv_heads * l.head_dim();
    const double kv = e * p.mbs * (double(l.seq) / cp) * kv_width / p.tp;
    const GroupLayout ring = cp_group(p, c);
    const double step = collective_time_s(c, Collective::sendrecv, kv, ring);
    // Step by step (Transformer Engine's AttnFuncWithCPAndKVP2P): the exchange of the next K,V
    // block runs beside this step's attention, which is 1/cp of the layer's (the load-balanced
    // causal split gives every step the same pairs); the step waits for the slower. The backward
    // (cp steps, each beside 1/cp of the attention's backward) sends the K,V block alone first,
    // then K,V and the gradient gathered so far as one 16-bit tensor, and the gradient alone last.
    const double bwd = lc.bwd_attn_s / cp;
    const double pair = collective_time_s(c, Collective::sendrecv, 2 * kv, ring);
    sc.cp_fwd_s = (cp - 1) * std::max(0.0, step - lc.fwd_attn_s / cp);
    sc.cp_bwd_s = 2 * std::max(0.0, step - bwd) + (cp - 2) * std::max(0.0, pair - bwd);
  }
  for (const Module& m : bm)  // a mixture-of-experts layer's dispatch and combine
    if (m.kind == ModuleKind::dispatch) sc.ep_per_pass_s += expert_dispatch_s(c, p, bm, m);
  sc.params = bm.rank_params(p.tp, p.ep, p.etp);
  sc.expert_params = bm.expert_rank_params(p.ep, p.etp);
  for (Recompute r :
       {Recompute::none, Recompute::selective, Recompute::full, Recompute::selective_moe})
    sc.act_bytes[int(r)] = bm.stored_bytes(r);
  sc.full_act_bytes = sc.act_bytes[int(Recompute::none)];
  for (const Module& m : bm)  // ZeRO-3 gathers one module's weights at a time
    if (m.gathered)
      sc.largest_matrix = std::max(sc.largest_matrix, m.shard == Module::Shard::experts
                                                          ? m.params / (double(p.ep) * p.etp)
                                                          : m.params / p.tp);
  return sc;
}

/// Bytes per parameter of Transformer Engine's quantized weights kept through the step on this
/// stack and plan (0: none).
double weight_cache_per_param(const ClusterProfile& c, const Plan& p) {
  return c.software.fp8_weight_cache && p.zero <= 1
             ? fp8_weight_cache_bytes_per_param(p.dtype, c.gpu.fp8_any_layout())
             : 0.0;
}

/// One block, one micro-batch on one rank: compute, recompute, exposed TP and CP communication.
BlockCost block_cost(const ClusterProfile& c, const Plan& p, const ShapeCell& sc) {
  const LayerCompute& lc = sc.compute;
  const double ag = sc.tp_allgather_s, rs = sc.tp_reduce_scatter_s;
  double fwd_tp = sc.tp_per_pass_s, bwd_tp = sc.tp_per_pass_s;
  if (overlaps_of(p, c).tp_comm && p.sp && p.tp > 1 && sc.tp_in_node) {
    // Transformer Engine's userbuffer overlap (Megatron --tp-comm-overlap, which needs sequence
    // parallelism) splits each collective into tp chunks pipelined with the GEMM it feeds or
    // follows: forward, the allgathers with QKV and fc1 and the reduce-scatters with the
    // projection and fc2; backward, the allgathers with the projection's and fc2's data
    // gradients and the reduce-scatters with QKV's and fc1's weight gradients. The last chunk
    // of each stays exposed, and the GEMM slows beside the rest. Its userbuffers map the peers'
    // memory over NVLink, inside a node: a TP group across nodes stays exposed.
    const double tail = 1.0 / p.tp, slow = c.gpu.overlap_compute_slowdown;
    auto beside = [&](double t, double gemm_s) {
      return exposed_after_overlap(t, gemm_s, tail, slow);
    };
    fwd_tp = bwd_tp = 0;
    for (const Module& m : sc.model) {  // each collective beside the GEMM the model pairs it with
      if (m.kind != ModuleKind::linear) continue;
      const LinearTimes& g = lc.linear[m.linear];
      if (m.column_parallel)
        fwd_tp += beside(ag, g.fwd_s), bwd_tp += beside(rs, g.bwd_weight_s);
      else if (m.tp_collectives > 0)
        fwd_tp += beside(rs, g.fwd_s), bwd_tp += beside(ag, g.bwd_data_s);
    }
  }
  fwd_tp += sc.amax_fwd_s, bwd_tp += sc.amax_bwd_s;
  const double cp_fwd = sc.cp_fwd_s, cp_bwd = sc.cp_bwd_s;
  double fwd_ep = sc.ep_per_pass_s, bwd_ep = sc.ep_per_pass_s;
  double unpaired = 0;
  if (p.ep_comm_overlap.value_or(false)) {
    // Megatron-Core's combined 1F1B: a layer's forward of one micro-batch runs beside the same
    // layer's backward of another; what outlasts the compute beside it is exposed, and the
    // compute slows beside it. The passes with no partner (the warm-up forwards and the
    // cool-down backwards) expose all of theirs: the pipeline simulator adds `unpaired` to them.
    const double ep = sc.ep_per_pass_s;
    const double paired = paired_ep_exposed_s(lc, ep / 2, c.gpu.overlap_compute_slowdown);
    fwd_ep = bwd_ep = paired / 2;
    unpaired = ep - paired / 2;
  }
  double recompute = 0, recompute_comm = 0;
  if (p.recompute == Recompute::full)
    recompute = lc.fwd_s(), recompute_comm = fwd_tp + cp_fwd + fwd_ep;
  // The core attention recomputed runs its ring again (Transformer Engine's attention with CP).
  if (p.recompute == Recompute::selective) recompute = lc.fwd_attn_s, recompute_comm = cp_fwd;
  if (p.recompute == Recompute::selective_moe) recompute = selective_moe_recompute_s(lc);
  BlockCost b;
  b.compute = lc;
  b.times.fwd_compute_s = lc.fwd_s();
  b.times.bwd_compute_s = lc.bwd_s() + recompute;
  b.times.fwd_comm_s = fwd_tp + cp_fwd + fwd_ep;
  b.times.bwd_comm_s = bwd_tp + cp_bwd + bwd_ep + recompute_comm;
  b.fwd_s = b.times.fwd_compute_s + b.times.fwd_comm_s;
  b.bwd_s = b.times.bwd_compute_s + b.times.bwd_comm_s;
  b.bwd_weight_s = lc.bwd_weight_s;
  b.compute_s = b.times.fwd_compute_s + b.times.bwd_compute_s;
  const bool ring_again = p.recompute == Recompute::full || p.recompute == Recompute::selective;
  b.cp_comm_s = cp_fwd + cp_bwd + (ring_again ? cp_fwd : 0.0);
  b.ep_comm_s = fwd_ep + bwd_ep + (p.recompute == Recompute::full ? fwd_ep : 0.0);
  b.unpaired_s = unpaired;
  b.tp_comm_s = b.times.fwd_comm_s + b.times.bwd_comm_s - b.cp_comm_s - b.ep_comm_s;
  // An eager layer with routed experts runs no faster than its host launches it
  // (SoftwareStack::moe_layer_host_s, for one forward and backward; recomputation launches its
  // passes again, so the host's time grows with the GPU's): what the host takes beyond the
  // GPU's work stretches both passes by their shares (the weight gradients, which ZB-H1 defers,
  // by theirs of the backward's). Under combined 1F1B the pair of passes is one host's launches,
  // and a pass without a partner runs its share of the host's time or its GPU work with the
  // collectives it exposes alone, whichever is longer: unpaired_s is what that adds beyond the
  // pass's stretched time. cuda_graphs=1 lifts it.
  const double host = c.software.moe_layer_host_s;
  if (sc.expert_params > 0 && host > 0 && !p.cuda_graphs.value_or(false)) {
    const double gpu = b.fwd_s + b.bwd_s, once = gpu - recompute - recompute_comm;
    const double need = once > 0 ? host * gpu / once : 0.0;
    if (need > gpu) {
      const double wait = need - gpu;
      b.times.fwd_host_s = wait * b.fwd_s / gpu, b.times.bwd_host_s = wait * b.bwd_s / gpu;
      if (b.bwd_s > 0) b.bwd_weight_s += b.times.bwd_host_s * b.bwd_weight_s / b.bwd_s;
      b.fwd_s += b.times.fwd_host_s, b.bwd_s += b.times.bwd_host_s;
      b.host_s = wait;
      b.unpaired_s = std::max(0.0, b.unpaired_s - std::min(b.times.fwd_host_s, b.times.bwd_host_s));
    }
  }
  b.params = sc.params;
  b.expert_params = sc.expert_params;
  b.act_bytes = sc.act_bytes[int(p.recompute)];
  b.full_act_bytes = sc.full_act_bytes;
  b.largest_matrix = sc.largest_matrix;
  // Transformer Engine's quantized weights, kept through the step (the block's norms and router,
  // under 0.1% of its parameters, counted with its linears).
  b.weight_cache = sc.params * weight_cache_per_param(c, p);
  return b;
}

/// Megatron-Core's multi-token-prediction modules (ModelSpec::mtp_layers; multi_token_prediction.py
/// at d98e8a64), all on the last pipeline stage after the decoder: each one transformer layer of
/// the last layer's kind (its BlockCost under this plan: recompute, TP, CP and EP as that layer's)
/// and head.mtp_*. eh_proj's TP collectives are exposed (its own userbuffer is not modelled): with
/// sequence parallelism the all-gather of its 2h-wide input and the gather of its h/tp-wide output
/// to the full hidden size (then scattered back to the sequence shard) forward, the input
/// gradient's reduce-scatter and the scatter's all-gather backward; without it the output's
/// all-gather forward and the input gradient's all-reduce backward. A pipelined model's last stage
/// also holds a copy of the embedding (MTP embeds the next tokens), its gradient all-reduced with
/// the first stage's (ModelSpec::embedding_on_last_stage). Under full recomputation the module's
/// norms and eh_proj are recomputed with its layer (Megatron checkpoints them together) and only
/// its two inputs are kept.
void add_mtp(const ModelSpec& m, const ClusterProfile& c, const Plan& p, const BlockLayout& layout,
             const HeadCompute& head, PlanCosts& pc) {
  const double n = m.mtp_layers;
  const BlockCost& layer = (p.recompute_layers > 0 ? pc.kept : pc.shape)[layout.shape_of.back()];
  const double e = activation_element_bytes(p.dtype);
  const double tokens = p.mbs * (double(m.seq_len) / p.cp), act = e * tokens * m.hidden;
  double fwd_tp = 0, bwd_tp = 0;
  if (p.tp > 1) {
    const GroupLayout g = tp_group(p, c);
    const double gather = collective_time_s(c, Collective::allgather, act, g);
    // eh_proj is a Transformer Engine column-parallel linear in the fp8 context: its 2h-wide
    // input gathers as FP8 (tp_gather_bytes); its output's gather is a 16-bit one.
    fwd_tp = gather + (p.sp ? collective_time_s(c, Collective::allgather,
                                                tp_gather_bytes(2 * act, p.dtype, c.software), g)
                            : 0.0);
    bwd_tp = p.sp ? collective_time_s(c, Collective::reduce_scatter, 2 * act, g) + gather
                  : collective_time_s(c, Collective::allreduce, 2 * act, g);
  }
  // Megatron-LM skips the modules' recomputation under --recompute-method block
  // (multi_token_prediction.py at d98e8a64: "not supported for MTP yet").
  const bool full = p.recompute == Recompute::full && p.recompute_layers == 0;
  const double redo = full ? head.mtp_proj_fwd_s : 0.0, redo_tp = full ? fwd_tp : 0.0;
  pc.logits_fwd_s += n * (layer.fwd_s + head.mtp_fwd_s + fwd_tp);
  pc.logits_bwd_s += n * (layer.bwd_s + head.mtp_bwd_s + bwd_tp + redo + redo_tp);
  pc.logits_bwd_weight_s += n * (layer.bwd_weight_s + head.mtp_bwd_weight_s);
  pc.logits_s += n * (layer.compute_s + head.mtp_fwd_s + head.mtp_bwd_s + redo);
  pc.mtp_tp_s = n * (layer.tp_comm_s + fwd_tp + bwd_tp + redo_tp);
  pc.mtp_cp_s = n * layer.cp_comm_s;
  pc.mtp_ep_s = n * layer.ep_comm_s;
  pc.mtp_host_s = n * layer.host_s;
  pc.mtp_unpaired_s = n * layer.unpaired_s;
  const double norm = (m.arch.norm_bias ? 2.0 : 1.0) * m.hidden;
  pc.output_params += n * (layer.params + 2.0 * m.hidden * double(m.hidden) / p.tp + 3.0 * norm);
  // The embedding the modules read: its own copy on a pipelined model's last stage, beside the
  // output layer's weight (gpt_model.py builds both there; a tied model's output weight is the
  // copy the main model already counts).
  if (p.pp > 1) pc.output_params += double(m.vocab) * m.hidden / p.tp;
  pc.mtp_expert_params = n * layer.expert_params;
  // Transformer Engine's cached FP8 weights: the module's layer and eh_proj (its linear runs in
  // the module's fp8 context), as block_cost's.
  pc.mtp_weight_cache = n * (layer.weight_cache + 2.0 * m.hidden * double(m.hidden) / p.tp *
                                                      weight_cache_per_param(c, p));
  // Kept for the backward beyond the layer's own: eh_proj's input (2h, as the linears keep theirs)
  // and the three norms' inputs, on this rank's sequence shard; and each module's logits while
  // its loss waits for the backward, as the main logits'.
  const double shard = tokens * m.hidden / (p.sp ? p.tp : 1);
  pc.mtp_act_bytes =
      full ? n * 2.0 * e * shard  // the previous hidden state and the embedding
           : n * (layer.act_bytes + (2.0 * linear_input_bytes(p.dtype) + 3.0 * e) * shard);
  pc.logits_bytes *= 1.0 + n;
}

}  // namespace

CellCosts cell_costs(const ModelSpec& m, const ClusterProfile& c, const Plan& p,
                     const BlockLayout& layout) {
  const AttentionKernel attn = p.attention.value_or(c.software.attention);
  const LayerConfig cfg{p.tp,
                        p.cp,
                        p.mbs,
                        p.sp,
                        p.dtype,
                        attn,
                        p.ep,
                        p.etp,
                        p.capacity_factor,
                        p.pad_to_capacity.value_or(false),
                        loss_kernel(c.software.loss, p.loss_fusion),
                        p.fp8_recipe,
                        p.dispatcher};
  CellCosts cell;
  for (const LayerShape& l : layout.shapes)
    cell.shape.push_back(shape_cell(l, c, p, layer_compute(l, c, cfg), attn));
  cell.head = head_compute(m, c, cfg);
  return cell;
}

PlanCosts plan_costs(const ModelSpec& m, const ClusterProfile& c, const Plan& p,
                     const BlockLayout& layout, const CellCosts* cell) {
  PlanCosts pc;
  plan_costs(m, c, p, layout, cell, pc);
  return pc;
}

void plan_costs(const ModelSpec& m, const ClusterProfile& c, const Plan& p,
                const BlockLayout& layout, const CellCosts* cell, PlanCosts& pc) {
  CellCosts own;
  if (!cell) own = cell_costs(m, c, p, layout), cell = &own;
  std::vector<BlockCost> shapes = std::move(pc.shape);  // its storage, for the new figures
  pc = PlanCosts{};
  pc.shape = std::move(shapes);
  pc.shape.clear();
  double widest = 0;  // bytes of the largest activation crossing a stage boundary
  for (const ShapeCell& sc : cell->shape) {
    pc.shape.push_back(block_cost(c, p, sc));
    widest = std::max(widest, sc.boundary_bytes);
  }
  if (p.recompute_layers > 0) {  // the layers Megatron's block method leaves alone
    Plan keeping = p;
    keeping.recompute = Recompute::none;
    for (const ShapeCell& sc : cell->shape) pc.kept.push_back(block_cost(c, keeping, sc));
  }
  const HeadCompute& head = cell->head;
  pc.embed_fwd_s = head.embed_fwd_s, pc.embed_bwd_s = head.embed_bwd_s;
  pc.logits_fwd_s = head.logits_fwd_s, pc.logits_bwd_s = head.logits_bwd_s;
  pc.logits_bwd_weight_s = head.logits_bwd_weight_s;
  pc.embed_s = head.embed_fwd_s + head.embed_bwd_s;
  pc.logits_s = head.logits_fwd_s + head.logits_bwd_s;
  // A learned position embedding is replicated on every TP rank (Megatron-LM's is not sharded).
  pc.embed_params = double(m.vocab) * m.hidden / p.tp + m.position_params();
  // The last stage holds the output layer: its own weights when untied, a copy of the embedding
  // when tied and pipelined (Megatron-LM keeps both copies and all-reduces their gradients).
  pc.output_params = (!m.tied_embeddings || p.pp > 1 ? double(m.vocab) * m.hidden / p.tp : 0.0) +
                     m.final_norm_params();
  const double s = double(m.seq_len) / p.cp, sbh = s * p.mbs * m.hidden;
  pc.embed_act_bytes = sbh / p.tp;  // embedding dropout mask, Korthikanti's (sbh L / t)(p / L)
  pc.logits_bytes = logits_bytes(m, p, c.software.loss);
  if (m.mtp_layers > 0) add_mtp(m, c, p, layout, head, pc);
  // Each TP rank sends its 1/t slice across a stage boundary (Megatron's scatter/gather); without
  // sequence parallelism the receiver then all-gathers the slices over NVLink to rebuild the
  // replicated activation before it computes (Narayanan et al. 2021, s.4.1). With it, the slice is
  // the sequence shard the next layer takes as it is.
  if (p.pp > 1) {
    pc.p2p_s = collective_time_s(c, Collective::sendrecv, widest / p.tp, pp_pair(p, c));
    if (p.tp > 1 && !p.sp)
      pc.p2p_gather_s = collective_time_s(c, Collective::allgather, widest, tp_group(p, c));
  }
}

Partition even_partition(int blocks, int virtual_stages) {
  Partition part;
  even_partition(blocks, virtual_stages, part);
  return part;
}

void even_partition(int blocks, int virtual_stages, Partition& part) {
  assert(virtual_stages >= 1 && blocks >= virtual_stages);
  part.assign(virtual_stages, blocks / virtual_stages);
  for (int i = 0; i < blocks % virtual_stages; ++i) ++part[i];
}

void split_partition(int layers, const Plan& p, Partition& part) {
  assert(split_check(layers, p) == SplitError::none);
  const int pp = p.pp, vpp = p.vpp, chunks = pp * vpp;
  switch (p.split) {
    case PipelineSplit::even:
      part.assign(chunks, layers / chunks);
      return;
    case PipelineSplit::short_ends: {
      const int f = short_end_layers(layers, pp, vpp), m = (layers - 2 * f) / (pp - 2);
      part.assign(chunks, m / vpp);
      for (int k = 0; k < vpp; ++k) part[k * pp] = part[k * pp + pp - 1] = f / vpp;
      return;
    }
    case PipelineSplit::embed_loss:
      part.assign(chunks, (layers + 2) / chunks);
      --part.front(), --part.back();
      return;
    case PipelineSplit::short_last: {
      const int l = short_last_layers(layers, pp, vpp), m = (layers - l) / (pp - 1);
      part.assign(chunks, m / vpp);
      for (int k = 0; k < vpp; ++k) part[k * pp + pp - 1] = l / vpp;
      return;
    }
  }
}

namespace {

/// Greedy fill of contiguous groups no slower than `limit_s` each; with one chunk per stage
/// (vpp = 1) a group also closes before it would overflow its stage's memory. Returns the group
/// sizes, or an empty vector when more than `groups` groups would be needed.
Partition fill(const std::vector<double>& t, const std::vector<StageLoad>& add, int groups,
               double limit_s, const Plan& p, double memory_limit) {
  Partition part;
  double acc = 0;
  StageLoad load;
  int n = 0;
  const InFlight in_flight(p);
  auto fits = [&](const StageLoad& l, int stage) {
    return p.vpp > 1 || stage_memory(l, p, in_flight.on(stage)).total() <= memory_limit;
  };
  for (size_t i = 0; i < t.size(); ++i) {
    StageLoad next = load;
    next.params += add[i].params, next.act_per_mb += add[i].act_per_mb;
    next.weight_cache += add[i].weight_cache;
    next.expert_params += add[i].expert_params;
    next.once_bytes = std::max(next.once_bytes, add[i].once_bytes);
    const int stage = static_cast<int>(part.size()) % p.pp;
    if (n > 0 && (acc + t[i] > limit_s || !fits(next, stage))) {
      part.push_back(n);
      if (static_cast<int>(part.size()) >= groups) return {};
      acc = 0, n = 0, load = StageLoad{};
      next = add[i];
    }
    if (t[i] > limit_s || !fits(next, static_cast<int>(part.size()) % p.pp)) return {};
    acc += t[i], load = next, ++n;
  }
  part.push_back(n);
  while (static_cast<int>(part.size()) < groups) {  // split the largest groups to use every stage
    auto it = std::max_element(part.begin(), part.end());
    if (*it < 2) return {};
    --*it;
    part.insert(it + 1, 1);
  }
  return part;
}

}  // namespace

Partition balanced_partition(const BlockLayout& layout, const PlanCosts& pc, const Plan& p,
                             double memory_limit_bytes) {
  const int n = layout.count(), groups = p.pp * p.vpp;
  std::vector<double> t(n);
  std::vector<StageLoad> add(n);
  for (int i = 0; i < n; ++i) {
    const BlockCost& bc = pc.shape[layout.shape_of[i]];
    t[i] = bc.fwd_s + bc.bwd_s;
    add[i] = {bc.params, bc.expert_params, bc.act_bytes, bc.full_act_bytes, 0, bc.weight_cache};
  }
  t[layout.first_decoder] += pc.embed_s;
  add[layout.first_decoder].params += pc.embed_params;
  add[layout.first_decoder].act_per_mb += pc.embed_act_bytes;
  t[n - 1] += pc.logits_s + pc.mtp_tp_s + pc.mtp_cp_s + pc.mtp_ep_s + pc.mtp_host_s;
  add[n - 1].params += pc.output_params;
  add[n - 1].expert_params += pc.mtp_expert_params;
  add[n - 1].weight_cache += pc.mtp_weight_cache;
  add[n - 1].act_per_mb += pc.mtp_act_bytes;
  add[n - 1].once_bytes += pc.logits_bytes;
  double lo = *std::max_element(t.begin(), t.end()), hi = 0;
  for (double x : t) hi += x;
  Partition best = fill(t, add, groups, hi, p, memory_limit_bytes);
  for (int iter = 0; iter < 40 && hi - lo > 1e-9 * hi; ++iter) {
    const double mid = 0.5 * (lo + hi);
    Partition part = fill(t, add, groups, mid, p, memory_limit_bytes);
    if (part.empty()) {
      lo = mid;
    } else {
      hi = mid;
      best = std::move(part);
    }
  }
  return best.empty() ? even_partition(n, groups) : best;
}

}  // namespace planner
