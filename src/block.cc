#include "planner/block.h"

#include <initializer_list>

namespace planner {

namespace {

/// A mixture-of-experts layer's router, dispatcher and routed experts (Megatron-Core's MoELayer
/// with the all-to-all dispatcher and grouped GEMMs). This rank's tokens (its sequence-parallel
/// share) go through the replicated router; each is sent to topk experts over the ep ranks and
/// gathered over the etp ranks that share them, so a rank's E / ep experts see T topk etp token
/// copies, T topk etp ep / E each under the force-balanced routing the published benchmarks run.
void add_experts(const LayerShape& l, const BlockConfig& cfg, BlockModel& bm) {
  using K = ModuleKind;
  const MoeSpec& x = l.moe;
  const int cp = l.causal ? cfg.cp : 1;
  const double o = cfg.sp ? cfg.tp : 1.0, e = cfg.element_bytes, li = cfg.linear_input_bytes;
  const double h = l.hidden, E = x.experts, fe = x.expert_ffn, up = (l.swiglu ? 2.0 : 1.0) * fe;
  const double tokens = double(l.seq) / cp * l.sequences * cfg.mbs / o;
  // The busiest rank (routing imbalance) receives `imbalance` times the mean token copies, at
  // most the capacity factor's times: the router drops the rest before the dispatch (Megatron-Core
  // moe_utils apply_router_token_dropping, policy "probs"). The imbalance is the busiest expert
  // rank's; the capacity is per expert, taken as the same ratio.
  // Padded to capacity, every expert runs exactly the capacity's multiple.
  const double load = cfg.capacity <= 0 ? x.imbalance
                      : cfg.pad         ? cfg.capacity
                                        : std::min(x.imbalance, cfg.capacity);
  const double copies = tokens * x.topk * load, slots = copies * cfg.etp;
  const double local = E / cfg.ep, per_expert = slots / local, et = cfg.etp;
  auto same = [](double bytes) { return std::array<double, 4>{bytes, bytes, 0.0, bytes}; };
  Module router{"router",
                K::linear,
                kRouter,
                h,
                E,
                h * E + (x.router_bias ? E : 0.0),
                same(4.0 * tokens * E),  // the fp32 routing probabilities for the backward
                false,
                0,
                true,
                x.router_bias ? E : 0.0};
  router.shard = Module::Shard::replicated, router.tokens = tokens;
  bm.add(router);
  // The dispatcher keeps no activations: Megatron-Core weighs the experts' outputs by their
  // routing probabilities inside the experts (TEGroupedMLP's weighted activation, whose input the
  // activation module keeps), not in the combine (moe_utils unpermute is called without probs
  // from core_r0.12.0 on, d98e8a64 included); permute and unpermute keep only their indices.
  Module dispatch{"dispatch", K::dispatch, -1, h, 0, 0, {}, false, 0, false, 0};
  dispatch.tokens = copies, dispatch.groups = cfg.etp, dispatch.out = x.topk;
  bm.add(dispatch);
  Module fc1{"expert_fc1",
             K::linear,
             kExpertFc1,
             h,
             up / et,
             E * (h * up + (x.expert_bias ? up : 0.0)),
             same(li * slots * h),
             false,
             0,
             true,
             x.expert_bias ? up / et : 0.0};
  fc1.shard = Module::Shard::experts, fc1.groups = local, fc1.tokens = per_expert;
  bm.add(fc1);
  Module act{"expert_activation",       K::activation, -1, 0,     0, 0,
             same(e * slots * up / et), false,         0,  false, 0};
  // A clamped gated unit (gpt-oss: Megatron-Core weighted_bias_quick_geglu_impl clamps the two
  // halves and concatenates them before the fused activation) keeps the clamps' input beside the
  // clamped copy the activation keeps; under selective_moe the activation's checkpoint
  // (CheckpointWithoutOutput around the clamps and the activation) keeps only its input.
  if (x.activation_clamp > 0)
    for (const Recompute r : {Recompute::none, Recompute::selective})
      act.stored[static_cast<size_t>(r)] *= 2;
  act.tokens = slots;
  bm.add(act);
  Module fc2{"expert_fc2",
             K::linear,
             kExpertFc2,
             fe / et,
             h,
             E * (fe * h + (x.expert_bias ? h : 0.0)),
             same(li * slots * fe / et),
             false,
             0,
             true,
             x.expert_bias ? h : 0.0};
  fc2.shard = Module::Shard::experts, fc2.groups = local, fc2.tokens = per_expert;
  bm.add(fc2);
}

/// Multi-head latent attention as Megatron-Core's MLASelfAttention builds it (DeepSeek-V2,
/// Liu et al. 2024, s.2.1): the query and the key-value down-projections (replicated on every TP
/// rank, run on the layer's gathered input), their RMSNorms, the column-parallel up-projections
/// to every head's query (qk_nope + qk_rope wide) and key and value, the attention core over those
/// heads, and the row-parallel output projection from the values (v_head_dim each). The shared
/// RoPE key comes out of the key-value down-projection.
void add_latent_attention(const LayerShape& l, const BlockConfig& cfg, BlockModel& bm) {
  using K = ModuleKind;
  const MlaSpec& a = l.mla;
  const int cp = l.causal ? cfg.cp : 1;
  const double t = cfg.tp, o = cfg.sp ? t : 1.0, e = cfg.element_bytes, li = cfg.linear_input_bytes;
  const double s = double(l.seq) / cp * l.sequences, sb = s * cfg.mbs, h = l.hidden;
  const double H = l.heads, dqk = a.qk_head_dim(), dv = a.v_head_dim;
  const double ql = a.q_lora_rank, kvl = a.kv_lora_rank, rope = a.qk_rope_head_dim;
  auto same = [](double bytes) { return std::array<double, 4>{bytes, bytes, 0.0, bytes}; };
  auto replicated = [](Module m) {
    m.shard = Module::Shard::replicated;
    return m;
  };
  // The down-projections are duplicated on every TP rank and run on its sequence-parallel share of
  // the tokens; their RMSNorms too. The up-projections are column-parallel (LayerNormLinear with
  // --qk-layernorm: the norm, then the gather of the compressed tensors, then the GEMM).
  auto local = [&](Module m) {
    m.shard = Module::Shard::replicated;
    m.tokens = sb / o;
    return m;
  };
  if (ql > 0) {
    bm.add(local(
        {"q_down", K::linear, kQDown, h, ql, h * ql, same(li * sb * h / o), false, 0, true, 0.0}));
    bm.add(replicated(
        {"q_norm", K::norm, -1, ql / o, 0, ql, same(e * sb * ql / o), false, 0, false, 0.0}));
    Module q_up{"q_up", K::linear, kQUp, ql, H * dqk / t, ql * H * dqk, same(li * sb * ql / o),
                true,   0,         true};
    q_up.norm_fused = true;  // q_norm inside it
    bm.add(q_up);
  } else {
    bm.add({"q_up", K::linear, kQUp, h, H * dqk / t, h * H * dqk, same(li * sb * h / o), true, 0,
            true, 0.0});
  }
  // It reads the same layer input as the query's projection, which keeps it.
  bm.add(local({"kv_down", K::linear, kKvDown, h, kvl + rope, h * (kvl + rope), same(0.0), false, 0,
                true, 0.0}));
  bm.add(replicated(
      {"kv_norm", K::norm, -1, kvl / o, 0, kvl, same(e * sb * kvl / o), false, 0, false, 0.0}));
  Module kv_up{"kv_up",
               K::linear,
               kKvUp,
               kvl,
               H * (a.qk_nope_head_dim + dv) / t,
               kvl * H * (a.qk_nope_head_dim + dv),
               same(li * sb * kvl / o),
               true,
               0,
               true};
  kv_up.norm_fused = true;  // kv_norm inside it
  bm.add(kv_up);
  // The core keeps each head's query, key (with the RoPE part) and value, and the softmax
  // statistics (flash) or the scores, softmax and dropout mask.
  const double kept = e * sb * H * (2.0 * dqk + dv) / t;
  const double scores = (2.0 * e + 1.0) * H * s * double(l.seq) * cfg.mbs / t,
               stats = 4.0 * H * sb / t;
  const bool flash = cfg.attention == AttentionKernel::flash;
  bm.add(
      {"attention",
       K::attention_core,
       -1,
       0,
       0,
       0,
       // selective_moe (mla_up_proj) recomputes the up-projected Q, K and V, not the core
       // attention: the statistics (or the scores)
       {kept + (flash ? stats : scores), kept + (flash ? stats : 0.0), 0.0, flash ? stats : scores},
       false,
       0,
       false,
       0.0});
  bm.add({"proj", K::linear, kProj, H * dv / t, h, H * dv * h,
          same(li * sb * H * dv / t + sb * h / o), false, 1, true, 0.0});
}

}  // namespace

BlockModel block_model(const LayerShape& l, const BlockConfig& cfg) {
  const double t = cfg.tp, o = cfg.sp ? t : 1.0;  // o: how the outside-TP part is sharded
  const double e = cfg.element_bytes;             // a stored activation element; masks 1 byte
  const double li = cfg.linear_input_bytes;       // a linear's saved input (1 byte under fp8)
  const int cp = l.causal ? cfg.cp : 1;
  const double s = double(l.seq) / cp * l.sequences, b = cfg.mbs, sb = s * b;
  const double h = l.hidden, f = l.ffn, up = (l.swiglu ? 2.0 : 1.0) * f;
  BlockModel bm;
  bm.tokens = sb;
  using K = ModuleKind;
  auto same = [](double bytes) { return std::array<double, 4>{bytes, bytes, 0.0, bytes}; };
  if (!l.attention) {  // a projector MLP: in -> ffn -> hidden, keeping its input
    // Full recompute keeps the block's input (16-bit); otherwise fc1 keeps its (maybe FP8) copy.
    const double in = l.in_features, x = li * sb * in, block_input = e * sb * in;
    for (const Module& m : std::initializer_list<Module>{
             {"fc1",
              K::linear,
              kFc1,
              in,
              up / t,
              in * up,
              {x, x, block_input, x},
              true,
              0,
              true,
              0},
             {"activation", K::activation, -1, 0, 0, 0, same(e * sb * up / t), false, 0, false, 0},
             {"fc2", K::linear, kFc2, f / t, h, f * h, same(li * sb * f / t), false, 1, true, 0}})
      bm.add(m);
    return bm;
  }
  const LayerArch& x = l.arch;
  const double d = l.head_dim(), a = l.heads, g = l.kv_heads, sbh = sb * h, qw = a * d;
  const double qkv_out = (a + 2.0 * g) * d, norm_params = (x.norm_bias ? 2.0 : 1.0) * h;
  // The attention core keeps Q, K and V, and the scores, softmax and dropout (5 a s^2 b) unless
  // selective recompute drops them; a flash kernel keeps only fp32 softmax statistics (4 a s b).
  // The 5 of 5 a s^2 b is the scores and the softmax (2 bytes each) and the 1-byte dropout mask.
  const double qkv_kept = e * sb * qw / t + 2.0 * e * sb * g * d / t;
  const double scores = (2.0 * e + 1.0) * a * s * double(l.seq) * b / t, stats = 4.0 * a * sb / t;
  const bool flash = cfg.attention == AttentionKernel::flash;
  // selective_moe leaves the core attention alone (its modules are layernorm and moe_act).
  const std::array<double, 4> core = {qkv_kept + (flash ? stats : scores),
                                      qkv_kept + (flash ? stats : 0.0), 0.0,
                                      qkv_kept + (flash ? stats : scores)};
  // A norm outside the TP region keeps its input (e bytes per element) for its backward.
  const Module outside_norm{"norm", K::norm, -1,    h / o, 0, norm_params, same(e * sbh / o),
                            false,  0,       false, 0};
  auto norm = [&](const char* name, bool layer_norm = false) {
    Module m = outside_norm;
    m.name = name;
    m.layer_norm = layer_norm;
    return m;
  };
  // A column-parallel linear over the normed layer input (QKV, fc1), `out` wide before TP, its
  // input kept for the backward; `fused`: its norm runs inside it (Module::norm_fused).
  auto reads_layer_input = [&](const char* name, int index, double out, bool bias, bool fused) {
    Module m{name,
             K::linear,
             index,
             h,
             out / t,
             h * out + (bias ? out : 0.0),
             same(li * sbh / o),
             true,
             0,
             true,
             bias ? out / t : 0.0};
    m.norm_fused = fused;
    return m;
  };
  // Full recompute keeps only the block's input, the first norm's.
  Module norm1 = norm("norm1", true);
  norm1.stored[static_cast<int>(Recompute::full)] = e * sbh / o;
  bm.add(norm1);
  if (l.mla.any()) {
    add_latent_attention(l, cfg, bm);
  } else {
    bm.add(reads_layer_input("qkv", kQkv, qkv_out, x.qkv_bias, true));  // norm1 inside it
    if (x.qk_norm)  // Qwen3: one head_dim-wide RMSNorm over every query head, one over every key
      bm.add({"qk_norm", K::norm, -1, (a + g) * d / t, 0, 2.0 * d, same(e * sb * (a + g) * d / t),
              false, 0, false, 0});
    bm.add({"attention", K::attention_core, -1, 0, 0, 0, core, false, 0, false, 0});
    // Its input inside the TP region, and the dropout mask after it outside.
    bm.add({"proj", K::linear, kProj, qw / t, h, qw * h + (x.proj_bias ? h : 0.0),
            same(li * sb * qw / t + sbh / o), false, 1, true, x.proj_bias ? h / o : 0.0});
  }
  if (x.sandwich_norms) bm.add(norm("post_attention_norm"));
  bm.add(norm("norm2", true));
  if (l.moe.any()) add_experts(l, cfg, bm);
  if (f > 0) {  // the dense MLP, or a mixture-of-experts layer's shared experts
    // A dense MLP's norm2 is inside its fc1; a MoE layer keeps its pre-MLP norm apart.
    bm.add(reads_layer_input("fc1", kFc1, up, x.mlp_bias, !l.moe.any()));
    bm.add({"activation", K::activation, -1, 0, 0, 0, same(e * sb * up / t), false, 0, false, 0});
    bm.add({"fc2", K::linear, kFc2, f / t, h, f * h + (x.mlp_bias ? h : 0.0),
            same(li * sb * f / t + sbh / o), false, 1, true, x.mlp_bias ? h / o : 0.0});
  }
  if (x.sandwich_norms) bm.add(norm("post_mlp_norm"));
  // selective_moe drops what its output-discarding checkpoints recompute: the experts'
  // activation output (fc2's input, moe_act) and the layer norms' outputs (the next linear's
  // input, layernorm; under FP8 Megatron-Core makes that linear save the 16-bit input, which the
  // checkpoint frees, in place of its FP8 copy: set_for_recompute_input_layernorm and
  // set_save_original_input at core_v0.15.0). A norm inside Transformer Engine's LayerNormLinear
  // is no module of its own: Megatron-Core does not recompute it (transformer_layer.py: an
  // IdentityOp input_layernorm), and the linear keeps its output.
  for (int i = 0; i < bm.count; ++i) {
    Module& m = bm.storage[static_cast<size_t>(i)];
    const int r = static_cast<int>(Recompute::selective_moe);
    if (m.linear == kExpertFc2) m.stored[r] = 0;
    // The linears that read a layer norm's output: QKV (or latent attention's first projection)
    // and the dense or shared MLP's fc1.
    const bool reads_norm = m.linear == kQkv || m.linear == kQDown || m.linear == kFc1 ||
                            (m.linear == kQUp && m.in == h);
    if (reads_norm && !(cfg.norm_in_linear && m.norm_fused)) m.stored[r] = 0;
  }
  return bm;
}

double BlockModel::params() const {
  double p = 0;
  for (const Module& m : *this) p += m.params;
  return p;
}

double BlockModel::rank_params(int tp, int ep, int etp) const {
  double p = 0;
  for (const Module& m : *this)
    p += m.params / (m.shard == Module::Shard::tp        ? double(tp)
                     : m.shard == Module::Shard::experts ? double(ep) * etp
                                                         : 1.0);
  return p;
}

double BlockModel::expert_rank_params(int ep, int etp) const {
  double p = 0;
  for (const Module& m : *this)
    if (m.shard == Module::Shard::experts) p += m.params / (double(ep) * etp);
  return p;
}

double BlockModel::stored_bytes(Recompute r) const {
  double bytes = 0;
  for (const Module& m : *this) bytes += m.stored[static_cast<int>(r)];
  return bytes;
}

int BlockModel::tp_collectives() const {
  int n = 0;
  for (const Module& m : *this) n += m.tp_collectives;
  return n;
}

double causal_window_pairs(double s, double w) {
  if (w >= s) return s * (s + 1.0) / 2.0;
  return w * s - w * (w - 1.0) / 2.0;
}

double causal_attended_pairs(const LayerShape& l) {
  const double s = l.seq, global = causal_window_pairs(s, s);
  const LayerArch& x = l.arch;
  if (x.sliding_window <= 0) return global;
  const double local = causal_window_pairs(s, x.sliding_window);
  return x.local_layers * local + (1.0 - x.local_layers) * global;
}

const Module* BlockModel::linear(int index) const {
  for (const Module& m : *this)
    if (m.kind == ModuleKind::linear && m.linear == index) return &m;
  return nullptr;
}

}  // namespace planner
