#include "planner/cost/compute.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <cstring>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace planner {
namespace {
/// Fused scale-mask-softmax (read 2 B, write 2 B) then dropout (read 2, write 2, 1-byte mask):
/// bytes per attention-score element in the forward pass of unfused attention (Megatron-LM 2021).
constexpr double kSoftmaxDropoutFwdBytes = 9;
/// Backward: dropout (read grad 2, mask 1, write 2) and softmax (read probs 2, grad 2, write 2).
constexpr double kSoftmaxDropoutBwdBytes = 11;
/// Flash attention's backward runs five matmuls to the forward's two (Dao 2023, FlashAttention-2,
/// section 3.1.2), so it does 2.5x the forward FLOPs.
constexpr double kFlashBackwardFlopRatio = 2.5;
/// Per token and element, a norm reads 2 bytes and writes 2 (Megatron's fused kernels, one pass).
constexpr double kNormBytesPerElement = 4;
/// Per token, outside the TP region: bias-dropout-add after the projection (read 2h + 2h residual,
/// write 2h, mask h) and after the MLP (7h): 14 bytes per hidden element. With the two norms'
/// 2 x 4h, a plain layer moves 22 bytes per hidden element outside the GEMMs and attention.
constexpr double kResidualBytesPerHidden = 14;
/// A bias add is one FLOP per element forward and its gradient (the sum over tokens) one per
/// element backward; Megatron-LM fuses it into the GEMM epilogue or the bias-dropout-add and
/// bias-GeLU/SwiGLU kernels, so it moves no bytes of its own: its FLOPs are counted, not its time.
constexpr double kBiasFlopsPerElement = 1;
/// A backward element-wise kernel reads the saved input and the incoming gradient and writes one
/// gradient: about twice the forward's traffic.
constexpr double kBackwardElementwiseFactor = 2;
/// Element-wise kernels launched per layer in the forward besides the norms (2 residual,
/// activation, rotary/bias); each norm is one more, and each pays the launch cost.
constexpr int kElementwiseKernelsBesideNorms = 4;
/// Vocab-parallel cross-entropy on fp32 logits per element (core/tensor_parallel/cross_entropy.py
/// at d98e8a64, eager PyTorch, one kernel a step): forward casts to fp32 (read 2, write 4), max
/// (read 4), subtract in place (read 4, write 4), exp in place (read 4, write 4), sum (read 4),
/// and the normalisation exp_logits.div_ (read 4, write 4): 38 bytes; backward scales the softmax
/// in place (grad_input.mul_, read 4, write 4), then autograd casts the fp32 gradient back to the
/// logits' 16 bits (read 4, write 2): 14 bytes.
constexpr double kCrossEntropyFwdBytes = 38;
constexpr double kCrossEntropyBwdBytes = 14;
/// Megatron-Core's native fused loss (core/fusions/fused_cross_entropy.py at d98e8a64): the cast
/// and max in one pass (read 2, write 4), subtract, exp and sum in one (read 4, write 4), the
/// normalisation in one (read 4, write 4): 22 bytes; its backward in one (calculate_gradients:
/// read the fp32 softmax 4, write the bf16 gradient 2), which also writes the scaled fp32
/// softmax back (grad_input aliases the saved softmax and is scaled with mul_ in place; a
/// compiled function stores a mutated input, 4): 10 bytes.
constexpr double kFusedCrossEntropyFwdBytes = 22;
constexpr double kFusedCrossEntropyBwdBytes = 10;
/// Transformer Engine's Triton loss (pytorch/triton/cross_entropy.py before 01bbe3eea): the
/// online-softmax pass reads the 16-bit logits (2), the loss pass reads them again and writes
/// the gradient over them (2 + 2): 6 bytes; the backward scales it by the per-token loss
/// gradient in place (element_mul_kernel, read 2, write 2): 4 bytes.
constexpr double kTeCrossEntropyFwdBytes = 6;
constexpr double kTeCrossEntropyBwdBytes = 4;
/// Embedding backward: read the gradient (2 B), read-modify-write the fp32 table row (8 B).
constexpr double kEmbeddingBwdBytesPerElement = 10;
/// Mixed-precision Adam per parameter: fp32 master, m and v each read and written (24 B), fp32
/// gradient read (4 B), 16-bit weight written (2 B).
constexpr double kAdamBytesPerParam = 30;

/// One rank's slice of a block for its element-wise kernels: tokens per micro-batch and the
/// TP-sharded MLP widths (the GEMMs' shapes are the block model's).
struct Shard {
  double tokens, h, mlp_up, mlp_down_in;
};

Shard shard_of(const LayerShape& l, const LayerConfig& cfg) {
  const double t = cfg.tp;
  const int cp = l.causal ? cfg.cp : 1;  // context parallelism splits the decoder's sequence
  Shard s;
  s.tokens = double(cfg.mbs) * l.sequences * l.seq / cp;
  s.h = l.hidden;
  s.mlp_up = (l.swiglu ? 2.0 : 1.0) * l.ffn / t;
  s.mlp_down_in = double(l.ffn) / t;
  return s;
}

/// The time of memory-bound element-wise work: `bytes` of HBM traffic at the achieved bandwidth
/// and `kernels` launches.
double memory_bound_s(double bytes, int kernels, const Gpu& gpu) {
  return bytes / gpu.hbm_achieved_Bps() + kernels * gpu.gemm.launch_s;
}

/// A memory-bound element-wise kernel group (memory_bound_s).
Kernel memory_bound(const char* name, Pass pass, double bytes, int kernels, const Gpu& gpu) {
  return {name, KernelClass::elementwise, pass, {}, bytes, 0, memory_bound_s(bytes, kernels, gpu)};
}

/// The block model's linears, each as three GEMMs (forward, backward data, backward weight). A
/// routed experts' grouped linear (its `groups` GEMMs, one an expert on this rank) runs as
/// Transformer Engine runs it: rounds of kTeGroupedGemmStreams concurrent GEMMs, each round a
/// kernel here (a batch of that many, the last one what is left), so validate times and records
/// the rounds the cost model prices.
void add_gemms(const Gpu& gpu, Dtype dt, const BlockModel& bm, bool te, std::vector<Kernel>& out) {
  for (const Module& m : bm) {
    if (m.kind != ModuleKind::linear) continue;
    const LinearShapes l = linear_shapes(m.tokens > 0 ? m.tokens : bm.tokens, m.in, m.out);
    const bool rounds = te && m.shard == Module::Shard::experts;
    const double per_round = rounds ? std::min<double>(m.groups, kTeGroupedGemmStreams) : m.groups;
    for (auto [pass, g] : {std::pair{Pass::forward, l.fwd},
                           {Pass::backward_data, l.bwd_data},
                           {Pass::backward_weight, l.bwd_weight}}) {
      g.batch = per_round;
      const double round_s = gemm_time_s(gpu, dt, g);  // every full round alike
      for (double left = m.groups; left > 0; left -= per_round) {
        g.batch = std::min(left, per_round);
        out.push_back({m.name, KernelClass::gemm, pass, g, 0, g.flops(),
                       g.batch == per_round ? round_s : gemm_time_s(gpu, dt, g)});
      }
    }
  }
}

/// YaRN's unfused rotary embedding on this rank's query and key heads (kUnfusedRope*); latent
/// attention's rotary part (qk_rope_head_dim of each head) is left out.
void add_unfused_rope(const LayerShape& l, const Shard& s, const ClusterProfile& c,
                      const LayerConfig& cfg, std::vector<Kernel>& out) {
  if (!l.attention || l.mla.any() || l.arch.rope_mscale == 1.0) return;
  const double elems = s.tokens * double(l.heads + l.kv_heads) / cfg.tp * l.head_dim();
  out.push_back(memory_bound("rope", Pass::forward, kUnfusedRopeFwdBytes * elems,
                             2 * kUnfusedRopeFwdKernels, c.gpu));
  out.push_back(memory_bound("rope", Pass::backward_data, kUnfusedRopeBwdBytes * elems,
                             2 * kUnfusedRopeBwdKernels, c.gpu));
}

void add_attention(const LayerShape& l, const ClusterProfile& c, const LayerConfig& cfg,
                   std::vector<Kernel>& out) {
  const Gpu& gpu = c.gpu;
  // Latent attention's heads take qk_nope + qk_rope-wide scores and v_head_dim-wide values: the
  // two GEMMs' mean width.
  const double heads = double(l.heads) / cfg.tp,
               d = l.mla.any() ? (l.mla.qk_head_dim() + l.mla.v_head_dim) / 2.0 : l.head_dim();
  const int cp = l.causal ? cfg.cp : 1;
  const double batch = double(cfg.mbs) * l.sequences * heads;
  const double sq = double(l.seq) / cp, sk = l.seq;
  const auto attn = KernelClass::attention;
  const Dtype dtype = attention_dtype(cfg.dtype);
  if (cfg.attention == AttentionKernel::unfused) {
    const double elems = batch * sq * sk, bw = gpu.hbm_achieved_Bps();
    const std::pair<const char*, GemmShape> gemms[] = {
        {"scores", {sq, sk, d, batch}},     {"context", {sq, d, sk, batch}},
        {"scores_dq", {sq, d, sk, batch}},  {"scores_dk", {sk, d, sq, batch}},
        {"context_dp", {sq, sk, d, batch}}, {"context_dv", {sk, d, sq, batch}}};
    for (int i = 0; i < 6; ++i) {
      const GemmShape& g = gemms[i].second;
      out.push_back({gemms[i].first, attn, i < 2 ? Pass::forward : Pass::backward_data, g, 0,
                     g.flops(), gemm_time_s(gpu, dtype, g)});
    }
    out.push_back({"softmax_dropout",
                   attn,
                   Pass::forward,
                   {},
                   elems * kSoftmaxDropoutFwdBytes,
                   0,
                   elems * kSoftmaxDropoutFwdBytes / bw});
    out.push_back({"softmax_dropout",
                   attn,
                   Pass::backward_data,
                   {},
                   elems * kSoftmaxDropoutBwdBytes,
                   0,
                   elems * kSoftmaxDropoutBwdBytes / bw});
    return;
  }
  // A kernel that skips masked tiles computes the causal (or sliding-window) query-key pairs,
  // split evenly over the cp ranks (Megatron's load-balanced context parallelism); one that does
  // not computes every pair.
  const bool skip = l.causal && c.software.causal_attention_skip;
  const double pairs = skip ? causal_attended_pairs(l) / cp : sq * sk;
  const double fwd_flops = 4.0 * batch * pairs * d;
  // Each call runs over this rank's sequence chunk: the whole sequence, or with context
  // parallelism one of ring attention's s / cp blocks.
  const double peak =
      gpu.peak_flops[static_cast<int>(dtype)] * flash_length_factor(double(l.seq) / cp);
  const double rate = peak * c.gpu.flash_efficiency * flash_head_dim_factor(d, kFlashHeadDim64Fwd);
  const double bwd_rate =
      peak * c.gpu.flash_backward_efficiency * flash_head_dim_factor(d, kFlashHeadDim64Bwd);
  const GemmShape shape{sq, sk, d, batch};  // the problem size, for validation
  out.push_back({"flash_attention", attn, Pass::forward, shape, 0, fwd_flops,
                 fwd_flops / rate + gpu.gemm.launch_s});
  out.push_back({"flash_attention", attn, Pass::backward_data, shape, 0,
                 kFlashBackwardFlopRatio * fwd_flops,
                 kFlashBackwardFlopRatio * fwd_flops / bwd_rate + gpu.gemm.launch_s});
}

void add_elementwise(const LayerShape& l, const Shard& s, const BlockModel& bm,
                     const ClusterProfile& c, const LayerConfig& cfg, std::vector<Kernel>& out) {
  const double outside_tp = cfg.sp ? cfg.tp : 1.0, bw = c.gpu.hbm_achieved_Bps();
  const double launch = c.gpu.gemm.launch_s;
  // Norms (each the block model's, at its width on this rank) and the residual/dropout adds.
  double norm = l.attention ? s.tokens * kResidualBytesPerHidden * s.h / outside_tp : 0.0;
  double norm_fp8_saved = 0;  // forward bytes a delayed-scaling FP8 norm does not write
  double bias_flops = 0;
  int norms = 0;
  double moe_bytes = 0;  // the router's softmax and top-k, the permutations, the experts' act
  int moe_kernels = 0;
  // What selective_moe's checkpoints run again: the experts' activation (moe_act) and each norm
  // that is a module of its own (layernorm): Megatron-Core's TransformerLayer recomputes only a
  // norm that is not an IdentityOp, and Transformer Engine's LayerNormLinear makes QKV's (and a
  // dense MLP's) norm part of the linear (gpt_layer_specs.py and transformer_layer.py at
  // core_v0.15.0; latent attention's input norm and a MoE layer's pre-MLP norm stay apart). Only
  // the layer's input and pre-MLP norms: not Qwen3's q/k norms, not sandwich norms.
  double checkpointed_norm = 0, checkpointed_act = 0;
  int checkpointed_norms = 0;
  const bool te = c.software.transformer_engine;
  for (const Module& m : bm) {
    bias_flops += kBiasFlopsPerElement * (m.tokens > 0 ? m.tokens * m.groups : bm.tokens) * m.bias;
    if (m.linear == kRouter) moe_bytes += kRouterBytesPerLogit * m.tokens * m.out, ++moe_kernels;
    // HybridEP permutes inside its dispatch and combine kernels (_HybridEPManager's
    // get_permuted_hidden_states_by_experts returns its input at d98e8a64 and core_v0.16.0):
    // they write each copy in expert order and sum a token's copies back, the same HBM traffic,
    // priced alike.
    if (m.kind == ModuleKind::dispatch)
      moe_bytes += kMoePermuteBytesPerElement * (cfg.dtype == Dtype::tf32 ? 2.0 : 1.0) * m.tokens *
                   m.groups * m.in,
          moe_kernels += 2;                                  // 16-bit rows; fp32 under tf32
    if (m.kind == ModuleKind::activation && m.tokens > 0) {  // the routed experts' activation
      const Module* fc2 = bm.linear(kExpertFc2);
      const double width = fc2 ? fc2->in : 0.0;
      checkpointed_act = m.tokens * 2.0 * ((l.swiglu ? 2.0 : 1.0) * width + width);
      moe_bytes += checkpointed_act, ++moe_kernels;
    }
    if (m.kind != ModuleKind::norm) continue;
    norm += s.tokens * kNormBytesPerElement * m.in;
    if (const Module* after = &m + 1;
        m.layer_norm && !(te && after != bm.end() && after->norm_fused))
      checkpointed_norm += s.tokens * kNormBytesPerElement * m.in, ++checkpointed_norms;
    // Delayed-scaling FP8: a norm fused into the next linear writes FP8, not 16 bits (its
    // backward reads the 16-bit input and gradient as before).
    const Module* next = &m + 1;
    if (cfg.dtype == Dtype::fp8 && !fp8_current_scaling(cfg.fp8_recipe, c.software) &&
        next != bm.end() && next->norm_fused)  // delayed scaling implies TE's linears
      norm_fp8_saved += s.tokens * kFp8NormFusedSavedBytes * m.in;
    ++norms;
  }
  const double act = s.tokens * 2.0 * (s.mlp_up + s.mlp_down_in);  // read input, write output
  const double norm_launch =
      (l.attention ? kElementwiseKernelsBesideNorms - 1 + norms : 0) * launch;
  const auto ew = KernelClass::elementwise;
  const double norm_fwd = norm - norm_fp8_saved;
  out.push_back(
      {"norm_residual", ew, Pass::forward, {}, norm_fwd, bias_flops, norm_fwd / bw + norm_launch});
  // (A model with experts' dense layers too: selective_moe recomputes their norms.)
  out.back().checkpointed_s = memory_bound_s(checkpointed_norm, checkpointed_norms, c.gpu);
  // A mixture-of-experts layer without shared experts has no dense MLP activation.
  const bool dense_mlp = l.ffn > 0;
  if (dense_mlp) out.push_back({"activation", ew, Pass::forward, {}, act, 0, act / bw + launch});
  const double f = kBackwardElementwiseFactor;
  out.push_back({"norm_residual",
                 ew,
                 Pass::backward_data,
                 {},
                 f * norm,
                 bias_flops,
                 f * norm / bw + norm_launch});
  if (dense_mlp)
    out.push_back({"activation", ew, Pass::backward_data, {}, f * act, 0, f * act / bw + launch});
  if (moe_kernels > 0) {
    out.push_back(memory_bound("moe_routing", Pass::forward, moe_bytes, moe_kernels, c.gpu));
    if (checkpointed_act > 0)
      out.back().checkpointed_s = memory_bound_s(checkpointed_act, 1, c.gpu);
    // The router's and the permutations' bytes are per pass (a permutation's gradient is the
    // inverse permutation, the same rows read and written); the experts' activation reads its
    // input and the gradient and writes a gradient, as the dense one.
    const double bwd = moe_bytes + (f - 1) * checkpointed_act;
    out.push_back(memory_bound("moe_routing", Pass::backward_data, bwd, moe_kernels, c.gpu));
  }
  // The all-to-all dispatcher's sort of the received rows by local expert and back
  // (kMoeSort*), the same bytes each pass.
  const Module* dispatch = nullptr;
  for (const Module& m : bm)
    if (m.kind == ModuleKind::dispatch) dispatch = &m;
  // Padded to capacity on one rank the transpose is over a dimension of 1: a view, no copy.
  const bool one_rank_pad = cfg.pad && cfg.ep * cfg.etp == 1;
  if (dispatch && cfg.dispatcher == Dispatcher::alltoall && l.moe.experts > cfg.ep &&
      !one_rank_pad) {
    const double rows = dispatch->tokens * dispatch->groups;  // received: this rank's slots
    const double bytes = rows * (cfg.dtype == Dtype::tf32 ? 2.0 : 1.0) *
                         (kMoeSortBytesPerElement * dispatch->in + kMoeSortProbBytesPerRow);
    out.push_back(memory_bound("moe_sort", Pass::forward, bytes, kMoeSortFwdKernels, c.gpu));
    out.push_back(memory_bound("moe_sort", Pass::backward_data, bytes, kMoeSortBwdKernels, c.gpu));
  }
}

/// gpt-oss's experts as Megatron-Core's TEGroupedMLP runs them: the gated unit's clamp before the
/// activation (kClampedGlu*) and fc2's bias added in a loop over the local experts
/// (kExpertBiasLoop*), each pass one memory-bound kernel group "expert_glu_bias".
void add_expert_extras(const LayerShape& l, const BlockModel& bm, const ClusterProfile& c,
                       std::vector<Kernel>& out) {
  const Module* fc1 = bm.linear(kExpertFc1);
  const Module* fc2 = bm.linear(kExpertFc2);
  if (!fc1 || !fc2 || (l.moe.activation_clamp <= 0 && !l.moe.expert_bias)) return;
  double fwd = 0, bwd = 0, clamp_fwd = 0;
  int fwd_kernels = 0, bwd_kernels = 0;
  if (l.moe.activation_clamp > 0) {
    const double up = fc1->tokens * fc1->groups * fc1->out;  // fc1's output on this rank
    clamp_fwd = kClampedGluFwdBytes * up;
    fwd += clamp_fwd, bwd += kClampedGluBwdBytes * up;
    fwd_kernels += kClampedGluFwdKernels, bwd_kernels += kClampedGluBwdKernels;
  }
  if (l.moe.expert_bias) {
    const double elems = fc2->tokens * fc2->groups * fc2->out;  // fc2's output on this rank
    fwd += kExpertBiasLoopFwdBytes * elems, bwd += kExpertBiasLoopBwdBytes * elems;
    fwd_kernels += kExpertBiasLoopFwdKernels * int(fc2->groups) + 1;
    bwd_kernels += kExpertBiasLoopBwdKernels * int(fc2->groups) + 1;
  }
  out.push_back(memory_bound("expert_glu_bias", Pass::forward, fwd, fwd_kernels, c.gpu));
  // The clamps run inside moe_act's checkpoint (CheckpointWithoutOutput around the clamps and the
  // activation); the bias loop runs after it.
  if (clamp_fwd > 0)
    out.back().checkpointed_s = memory_bound_s(clamp_fwd, kClampedGluFwdKernels, c.gpu);
  out.push_back(memory_bound("expert_glu_bias", Pass::backward_data, bwd, bwd_kernels, c.gpu));
}

/// FP8 linears: each one's input cast (forward) and output-gradient cast (backward). A tensor
/// all-gathered over TP with sequence parallelism (a column-parallel input, a row-parallel output
/// gradient) is cast row-wise only on this rank's rows before the gather, and where GEMMs take
/// only TN its transpose is made from the gathered rows in the backward (Transformer Engine
/// distributed.py _all_gather_fp8: "we cannot directly gather the transposed fp8 tensor";
/// layernorm_linear.py re-gathers the norm output for the weight gradient); any other tensor is
/// cast with its transpose in one kernel. MXFP8 quantizes both scaled copies on this rank's rows
/// and gathers them. Under delayed scaling a norm fused into the linear writes the FP8 input, so
/// only the transpose is left; under current scaling every tensor whose amax no fused norm
/// computed is read once more for it.
void add_fp8_casts(const BlockModel& bm, const ClusterProfile& c, const LayerConfig& cfg,
                   std::vector<Kernel>& out) {
  const bool mx = cfg.dtype == Dtype::mxfp8, any_layout = c.gpu.fp8_any_layout();
  const bool te = c.software.transformer_engine;
  const bool current = !mx && fp8_current_scaling(cfg.fp8_recipe, c.software);
  const bool gathers = cfg.sp && cfg.tp > 1;
  auto add = [&](const char* name, Pass pass, double bytes, int launches) {
    out.push_back(memory_bound(name, pass, bytes, launches, c.gpu));
  };
  struct Tensor {
    Pass pass;
    double width;    // elements per row
    bool gathered;   // all-gathered over TP after its cast
    bool from_norm;  // written by a norm fused into the linear
  };
  for (const Module& m : bm) {
    if (m.kind != ModuleKind::linear) continue;
    // A routed experts' linear casts every token copy it runs (its groups x tokens rows).
    const double rows = m.tokens > 0 ? m.tokens * m.groups : bm.tokens;
    // Transformer Engine quantizes a grouped linear's inputs and output gradients expert by
    // expert (GroupedLinear's split_quantize, csrc/extensions/cast.cpp multi_tensor_quantize_impl
    // at v2.8 and v2.12: one multi-tensor cast-transpose, nvte_multi_cast_transpose, for all
    // experts only when every quantizer is delayed scaling's Float8Quantizer, "Currently only have
    // fused kernel for FP8 delayed scaling"; current scaling's and MXFP8's quantize each expert's
    // rows with their own kernels). They run one after another on one stream: each launch counts,
    // where the rounds' GEMMs launch beside each other on their streams (add_gemms).
    const int per_expert =
        te && m.shard == Module::Shard::experts && (current || mx) ? int(m.groups) : 1;
    for (const Tensor& x :
         {Tensor{Pass::forward, m.in, gathers && m.sp_gathers_input(), te && m.norm_fused},
          Tensor{Pass::backward_data, m.out, gathers && m.sp_gathers_output_grad(), false}}) {
      const double local = (x.gathered ? rows / cfg.tp : rows) * x.width, all = rows * x.width;
      if (mx) {
        add("fp8_cast", x.pass, kMxfp8QuantizeBytes * local, per_expert);
        continue;
      }
      // A delayed-scaling norm wrote the row-wise FP8 copy itself: no cast.
      const bool delayed_norm = x.from_norm && !current;
      if (!delayed_norm) {
        const bool with_transpose = !any_layout && !x.gathered;
        const bool amax_pass = current && !x.from_norm;
        const double cast = with_transpose ? kFp8CastTransposeBytes : kFp8CastRowwiseBytes;
        // Current scaling: the amax (unless the norm's), the scale from it, then the cast.
        const int launches = !current    ? 1
                             : amax_pass ? kFp8CurrentScalingKernels
                                         : kFp8CurrentScalingKernels - 1;
        add("fp8_cast", x.pass, (cast + (amax_pass ? kFp8AmaxBytes : 0.0)) * local,
            launches * per_expert);
      }
      // The transpose made apart where GEMMs take only TN: after the gather (in the backward,
      // where the weight gradient reads it), or after the delayed-scaling norm's write.
      if (!any_layout && (x.gathered || delayed_norm))
        add("fp8_transpose", x.gathered ? Pass::backward_data : x.pass, kFp8TransposeBytes * all,
            1);
    }
  }
}

/// FP8 grouped experts' row padding and unpadding (kFp8PadAlignRows): none where every expert's
/// rows are aligned by construction, or where the dispatcher padded them (HybridEP). Padded to
/// capacity, an expert receives the capacity from each rank of its ep x etp group
/// (token_dispatcher.py at core_v0.15.0: capacity x tp_size x ep_size rows, the capacity
/// get_capacity's ceil(tokens x topk / experts x factor)).
void add_fp8_padding(const BlockModel& bm, const ClusterProfile& c, const LayerConfig& cfg,
                     std::vector<Kernel>& out) {
  const Module* fc1 = bm.linear(kExpertFc1);
  const Module* fc2 = bm.linear(kExpertFc2);
  if (!c.software.transformer_engine || !fc1 || !fc2 || cfg.dispatch_pads()) return;
  const double align = cfg.dtype == Dtype::mxfp8 ? kMxfp8PadAlignRows : kFp8PadAlignRows;
  const double group = double(cfg.ep) * cfg.etp;
  if (cfg.pad && std::fmod(std::ceil(fc1->tokens / group - 1e-9) * group, align) == 0) return;
  const double rows = fc1->tokens * fc1->groups;  // this rank's token copies
  const double bytes =
      rows * (kFp8PaddingBytesPerElement * (fc1->in + fc2->out) + kFp8PaddedProbBytes);
  for (const Pass pass : {Pass::forward, Pass::backward_data})
    out.push_back(memory_bound("fp8_padding", pass, bytes, kFp8PaddingKernelsPerPass, c.gpu));
}

LinearIndex linear_index(const char* name) {
  for (int i = 0; i < kNumLinears; ++i)
    if (std::strcmp(name, kLinearNames[i]) == 0) return static_cast<LinearIndex>(i);
  throw std::logic_error(std::string("layer_compute: GEMM kernel '") + name +
                         "' is none of the block's linear layers");
}

}  // namespace

std::vector<Kernel> layer_kernels(const LayerShape& l, const ClusterProfile& c,
                                  const LayerConfig& cfg) {
  const Shard s = shard_of(l, cfg);
  std::vector<Kernel> k;
  BlockConfig bc{cfg.tp, cfg.cp, cfg.mbs, cfg.sp, cfg.attention};
  bc.ep = cfg.ep, bc.etp = cfg.etp, bc.capacity = cfg.capacity;
  bc.pad = cfg.pad;
  const BlockModel bm = block_model(l, bc);
  add_gemms(c.gpu, cfg.dtype, bm, c.software.transformer_engine, k);
  if (l.attention) add_attention(l, c, cfg, k);
  add_unfused_rope(l, s, c, cfg, k);
  add_elementwise(l, s, bm, c, cfg, k);
  add_expert_extras(l, bm, c, k);
  if (is_fp8(cfg.dtype)) add_fp8_casts(bm, c, cfg, k), add_fp8_padding(bm, c, cfg, k);
  for (Kernel& x : k)
    x.time_s /= c.gpu.sustained_efficiency, x.checkpointed_s /= c.gpu.sustained_efficiency;
  return k;
}

LayerCompute layer_compute(const LayerShape& l, const ClusterProfile& c, const LayerConfig& cfg) {
  LayerCompute out;
  out.min_shard_dim = 1e300;
  for (const Kernel& k : layer_kernels(l, c, cfg)) {
    const bool fwd = k.pass == Pass::forward;
    (fwd ? out.fwd_flops : out.bwd_flops) += k.flops;
    if (fwd) out.fwd_checkpointed_s += k.checkpointed_s;
    switch (k.cls) {
      case KernelClass::gemm: {
        (fwd ? out.fwd_gemm_s : out.bwd_gemm_s) += k.time_s;
        LinearTimes& lt = out.linear[linear_index(k.name)];
        (fwd                             ? lt.fwd_s
         : k.pass == Pass::backward_data ? lt.bwd_data_s
                                         : lt.bwd_weight_s) += k.time_s;
        if (k.pass == Pass::backward_weight) out.bwd_weight_s += k.time_s;
        // The replicated linears (the router, latent attention's down-projections) are no shard.
        const LinearIndex li = linear_index(k.name);
        if (fwd && li != kRouter && li != kQDown && li != kKvDown)
          out.min_shard_dim = std::min({out.min_shard_dim, k.gemm.n, k.gemm.k});
        break;
      }
      case KernelClass::attention:
        (fwd ? out.fwd_attn_s : out.bwd_attn_s) += k.time_s;
        break;
      case KernelClass::elementwise:
        (fwd ? out.fwd_elementwise_s : out.bwd_elementwise_s) += k.time_s;
        break;
    }
  }
  return out;
}

LayerCompute layer_compute(const ModelSpec& m, const ClusterProfile& c, const LayerConfig& cfg) {
  return layer_compute(m.decoder_shape(), c, cfg);
}

HeadCompute head_compute(const ModelSpec& m, const ClusterProfile& c, const LayerConfig& cfg) {
  const Gpu& gpu = c.gpu;
  const double tokens = double(cfg.mbs) * m.seq_len / cfg.cp;
  const double vocab_shard = double(m.vocab) / cfg.tp;
  const LinearShapes logits = linear_shapes(tokens, m.hidden, vocab_shard);
  const double logit_elems = tokens * vocab_shard, bw = gpu.hbm_achieved_Bps();
  // Megatron-Core's output layer is a plain ColumnParallelLinear outside Transformer Engine's FP8
  // (gpt_model.py at d98e8a64; TE's LM head only under MXFP8 with --fp8-output-proj, off by
  // default and not emitted): 16-bit GEMMs under fp8 and mxfp8.
  const Dtype dt = is_fp8(cfg.dtype) ? Dtype::bf16 : cfg.dtype;
  HeadCompute h;
  h.embed_fwd_s = tokens * m.hidden * 4.0 / bw + gpu.gemm.launch_s;
  h.embed_bwd_s = tokens * m.hidden * kEmbeddingBwdBytesPerElement / bw + gpu.gemm.launch_s;
  const bool te = cfg.loss == LossKernel::te_triton;
  const double loss_fwd_bytes = te                                     ? kTeCrossEntropyFwdBytes
                                : cfg.loss == LossKernel::fused_native ? kFusedCrossEntropyFwdBytes
                                                                       : kCrossEntropyFwdBytes;
  const double loss_bwd_bytes = te                                     ? kTeCrossEntropyBwdBytes
                                : cfg.loss == LossKernel::fused_native ? kFusedCrossEntropyBwdBytes
                                                                       : kCrossEntropyBwdBytes;
  h.logits_fwd_s = gemm_time_s(gpu, dt, logits.fwd) + logit_elems * loss_fwd_bytes / bw;
  h.logits_bwd_weight_s = gemm_time_s(gpu, dt, logits.bwd_weight);
  h.logits_bwd_s = gemm_time_s(gpu, dt, logits.bwd_data) + h.logits_bwd_weight_s +
                   logit_elems * loss_bwd_bytes / bw;
  if (m.mtp_layers > 0) {
    // eh_proj in the layers' precision (Transformer Engine's linear inside the MTP module's fp8
    // context), on every token of the sequence after its input all-gather; the norms (enorm,
    // hnorm, final_layernorm) on this rank's sequence shard.
    const LinearShapes proj = linear_shapes(tokens, 2.0 * m.hidden, double(m.hidden) / cfg.tp);
    const double norms = 3.0 * kNormBytesPerElement * tokens * m.hidden / (cfg.sp ? cfg.tp : 1);
    const double proj_weight = gemm_time_s(gpu, cfg.dtype, proj.bwd_weight);
    h.mtp_proj_fwd_s = gemm_time_s(gpu, cfg.dtype, proj.fwd) + norms / bw + 3 * gpu.gemm.launch_s;
    h.mtp_fwd_s = h.mtp_proj_fwd_s + h.embed_fwd_s + h.logits_fwd_s;
    h.mtp_bwd_weight_s = proj_weight + h.logits_bwd_weight_s;
    h.mtp_bwd_s = gemm_time_s(gpu, cfg.dtype, proj.bwd_data) + proj_weight +
                  kBackwardElementwiseFactor * norms / bw + 3 * gpu.gemm.launch_s + h.embed_bwd_s +
                  h.logits_bwd_s;
  }
  const double eta = gpu.sustained_efficiency;
  for (double* t :
       {&h.embed_fwd_s, &h.embed_bwd_s, &h.logits_fwd_s, &h.logits_bwd_s, &h.logits_bwd_weight_s,
        &h.mtp_fwd_s, &h.mtp_bwd_s, &h.mtp_bwd_weight_s, &h.mtp_proj_fwd_s})
    *t /= eta;
  return h;
}

double optimizer_step_s(const Gpu& gpu, double params) {
  return params * kAdamBytesPerParam / gpu.hbm_achieved_Bps() / gpu.sustained_efficiency;
}

}  // namespace planner
