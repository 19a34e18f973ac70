#pragma once
#include <algorithm>
#include <array>
#include <vector>

#include "planner/block.h"
#include "planner/cluster.h"
#include "planner/model.h"

namespace planner {

/// C[m x n] = A[m x k] B[k x n], `batch` independent copies.
struct GemmShape {
  double m = 0;
  double n = 0;
  double k = 0;
  double batch = 1;
  double flops() const { return 2.0 * m * n * k * batch; }
};

/// Fraction of the dense peak this GEMM reaches: the large-shape ceiling times tile and wave
/// quantization (the best tile of the profile's candidates), a short-K main-loop penalty and an
/// alignment penalty (NVIDIA Matrix Multiplication Background guide, sections 2.2, 3.1, 3.2).
double gemm_efficiency(const Gpu& gpu, const GemmShape& g);

/// max(compute time, HBM time for A, B and C) plus the launch cost, in seconds.
double gemm_time_s(const Gpu& gpu, Dtype dtype, const GemmShape& g);

/// Forward, backward-data and backward-weights shapes of a linear layer y = x W
/// with x [tokens x in], W [in x out].
struct LinearShapes {
  GemmShape fwd, bwd_data, bwd_weight;
};
LinearShapes linear_shapes(double tokens, double in, double out);

/// One linear layer's GEMM times on one rank: forward, backward data, backward weight.
struct LinearTimes {
  double fwd_s = 0, bwd_data_s = 0, bwd_weight_s = 0;
};
// The linear layers of a block (LinearIndex, in LayerCompute::linear) are the block model's.

/// What one transformer layer costs one rank for one micro-batch (seconds and FLOPs).
struct LayerCompute {
  std::array<LinearTimes, kNumLinears> linear{};  ///< per linear layer, within the GEMM sums
  double fwd_gemm_s = 0, bwd_gemm_s = 0;          ///< QKV, projection, MLP
  double bwd_weight_s = 0;                        ///< the weight-gradient GEMMs within bwd_gemm_s
  double fwd_attn_s = 0, bwd_attn_s = 0;          ///< attention core: flash, or GEMMs + softmax
  double fwd_elementwise_s = 0, bwd_elementwise_s = 0;  ///< norms, activation, dropout, residual
  double fwd_checkpointed_s = 0;        ///< the forward kernels' checkpointed_s (selective_moe)
  double fwd_flops = 0, bwd_flops = 0;  ///< executed FLOPs on this rank
  double min_shard_dim = 0;             ///< smallest m/n/k among the sharded GEMMs
  double fwd_s() const { return fwd_gemm_s + fwd_attn_s + fwd_elementwise_s; }
  double bwd_s() const { return bwd_gemm_s + bwd_attn_s + bwd_elementwise_s; }
};

/// The forward work recompute=selective_moe runs again in the backward: its checkpoints (the
/// separate norms, the experts' activation) and latent attention's up-projections.
inline double selective_moe_recompute_s(const LayerCompute& lc) {
  return lc.fwd_checkpointed_s + lc.linear[kQUp].fwd_s + lc.linear[kKvUp].fwd_s;
}

/// One block, one micro-batch, one rank, with recompute and exposed TP communication.
struct LayerTimes {
  double fwd_compute_s = 0, bwd_compute_s = 0, fwd_comm_s = 0, bwd_comm_s = 0;
  /// The GPU waiting for its host to launch an eager layer with experts (moe_layer_host_s).
  double fwd_host_s = 0, bwd_host_s = 0;
};

/// FP8 GEMM efficiency over bf16's at the same shape (against each precision's own peak): the
/// median over the 38 shapes the H200 calibration timed in both (bench/calibration-h200/
/// h200-calibrated.samples.json: FP8 reaches 1.78x bf16's FLOP/s where the peaks are 2x; 0.80 on
/// its 10 shapes under 1e11 FLOPs, 0.91 above). Measured on Hopper; Blackwell carries it, and so
/// does MXFP8 against its own peak (no Blackwell calibration here).
inline constexpr double kFp8GemmRelativeEfficiency = 0.89;
/// Transformer Engine's FP8 cast-transpose per element of a linear layer's input (forward) and of
/// its output gradient (backward): read 16 bits, write the FP8 row-wise copy and its FP8
/// transpose (the weight gradient's operand on Hopper), 1 + 1 bytes; delayed scaling's amax is
/// fused into it (TE cast_transpose). Current scaling's is not (kFp8AmaxBytes).
inline constexpr double kFp8CastTransposeBytes = 4;
/// Per-tensor current scaling (Fp8Recipe::tensorwise) reads the 16-bit tensor once for its amax
/// before the cast (Float8CurrentScalingQuantizer::quantize_impl, csrc/quantizer.cpp:
/// nvte_compute_amax_with_config, then the cast), unless the norm that wrote it computed the amax
/// on the way (normalization.cpp FUSED_NORM_AMAX_FP8): 2 bytes an element more.
inline constexpr double kFp8AmaxBytes = 2;
/// Under delayed scaling a norm feeding a linear (Transformer Engine's LayerNormLinear: QKV and a
/// dense fc1 in Megatron-Core's TE layer spec) writes its output as FP8 (normalization.cpp
/// FULLY_FUSED: 1 byte an element instead of the 16-bit output and its cast), then transposes it
/// where GEMMs take only TN (rmsnorm_api.cpp, "Compute FP8 transpose if required"): read 1, write
/// 1.
inline constexpr double kFp8NormFusedSavedBytes = 1;
inline constexpr double kFp8TransposeBytes = 2;
/// An FP8 element (E4M3 forward, E5M2 gradients under the hybrid format) as a sequence-parallel
/// all-gather carries it (tp_gather_bytes).
inline constexpr double kFp8GatheredBytes = 1;
/// The amax a current-scaling cast all-reduces over the TP group: one fp32.
inline constexpr double kFp8AmaxAllreduceBytes = 4;
/// A row-wise-only FP8 cast, read 2, write 1: where FP8 GEMMs take any layout
/// (Gpu::fp8_any_layout; TE's Float8Quantizer makes no transpose there, csrc/quantizer.cpp:
/// with_transpose = columnwise && !non_tn), and before a sequence-parallel all-gather, which
/// carries only the row-wise copy (distributed.py _all_gather_fp8 drops the column-wise usage for
/// the cast and transposes the gathered rows after, kFp8TransposeBytes each).
inline constexpr double kFp8CastRowwiseBytes = 3;
/// Kernels of one current-scaling cast (Float8CurrentScalingQuantizer::quantize_impl): the amax,
/// the scale from it (nvte_compute_scale_from_amax), the cast; one fewer where a norm computed
/// the amax.
inline constexpr int kFp8CurrentScalingKernels = 3;
/// Transformer Engine runs a grouped linear's per-expert GEMMs on Hopper as separate cuBLAS GEMMs
/// spread over this many CUDA streams (nvte_multi_stream_cublas_gemm's compute streams; its
/// CUTLASS grouped kernel needs NVTE_USE_CUTLASS_GROUPED_GEMM=1, which Megatron-Bridge's recipes
/// do not set): the experts' GEMMs run this many at a time, each round's tiles sharing the SMs.
/// Checked against TE's own H100 bf16 benchmark of the multi-stream path (TransformerEngine PR
/// #2045, TE 2.7, CUDA 12.9): 16 experts of 2048 x 768 x 2048 at 553.9 TFLOP/s and 8 of 4096 x
/// 768 x 2048 at 627.9, where the GEMM model gives 580.5 and 657.4 run 4 at a time (+4.8%,
/// +4.7%) and 674.6 for both as one batched kernel (+21.8%, +7.4%).
inline constexpr int kTeGroupedGemmStreams = 4;
/// Transformer Engine's MXFP8 quantization per element of a linear layer's input (forward) and
/// of its output gradient (backward): one kernel reads 16 bits and writes the row-wise and the
/// column-wise scaled copies with their scales (common/util/cast_kernels.cuh,
/// cast_mxfp8_2D_kernel with ROWWISE_SCALING and COLWISE_SCALING), the amax per block fused in.
inline constexpr double kMxfp8QuantizeBytes = 2 + 2 * (1 + kMxfp8ScaleBytesPerElement);
/// Measured GEMM shapes within this factor of an asked shape in each of m, n and k correct the
/// parametric model there (gemm_time_s); the model keeps kMeasuredPriorWeight beside their
/// weights (each 1 at distance 0, 0 at the factor), so a lone far neighbour moves it little.
/// Compared among (2, 0.05), (2, 0.25), (4, 0.05), (4, 0.25), (8, 0.1) on the H200 calibration's
/// held-out half, the model fitted and the table built on the other half (tests/
/// test_calibrate_fit.cc): bf16 rms 8.43% -> 7.52, 7.52, 6.94, 6.95, 7.23%.
inline constexpr double kMeasuredNearFactor = 4;
inline constexpr double kMeasuredPriorWeight = 0.25;

/// A fused attention kernel's rate against the keys each call runs over, s / (s + this): its
/// per-tile prologue, epilogue and causal diagonal weigh less as s grows. Fitted on cuDNN's
/// causal forward, head dim 128, H100 SXM5 (Shah et al. 2024, FlashAttention-3, arXiv
/// 2407.08608, the causal head-dim-128 forward chart: 410, 484, 518, 529, 539 TFLOP/s at 1k, 2k,
/// 4k, 8k, 16k), within 4% there (+9% at 512). The profiles' flash efficiencies are read at
/// kFlashReferenceSeq, where the factor is 1; the backward is taken to scale alike.
inline constexpr double kFlashSeqHalf = 320;
/// The sequence the profiles' flash_efficiency figures stand for: the H200 measurement's 2048
/// (bench/validation-h200.md), FlashAttention-2's A100 range (Dao 2023) taken as the same.
inline constexpr double kFlashReferenceSeq = 2048;
/// A fused attention kernel's rate at `keys` keys per call relative to its rate at
/// kFlashReferenceSeq (1 there).
inline double flash_length_factor(double keys) {
  return (keys / (keys + kFlashSeqHalf)) /
         (kFlashReferenceSeq / (kFlashReferenceSeq + kFlashSeqHalf));
}

/// A fused attention kernel's rate at head dim 64 relative to head dim 128, forward and backward:
/// cuDNN on H100 SXM5 in the FlashAttention-3 paper's charts (Shah et al. 2024, repository image
/// assets/flash3_fp16_fwd.png): causal forward 225, 288, 334, 363, 379, 388 TFLOP/s at head dim
/// 64 against 315, 410, 484, 518, 529, 539 at 128 (512 to 16k tokens), 0.69-0.72; the backward
/// charts (non-causal; read from the paper's images by a transcription, not checked) 266-433
/// against 305-516, 0.83-0.87. The profiles' flash efficiencies stand for head dim 128 (the H200's
/// were measured at 128 and at 96, bench/validation-h200/*.sdpa.log).
inline constexpr double kFlashHeadDim64Fwd = 0.71, kFlashHeadDim64Bwd = 0.85;
/// A fused attention kernel's rate at head dim `d` relative to head dim 128, `at64` at 64: linear
/// between 64 and 128, held below 64 and above 128 (head dim 256's causal forward is within 5% of
/// 128's in the same chart).
inline double flash_head_dim_factor(double d, double at64) {
  const double x = (std::clamp(d, 64.0, 128.0) - 64.0) / 64.0;
  return at64 + (1.0 - at64) * x;
}

/// The precision attention runs in: Transformer Engine keeps DotProductAttention in bf16 under
/// FP8 unless FP8 attention is asked for (Megatron-Core's --fp8-dot-product-attention, off by
/// default), so an fp8 plan's attention is bf16's.
inline Dtype attention_dtype(Dtype d) { return is_fp8(d) ? Dtype::bf16 : d; }

struct LayerConfig {
  int tp = 1;
  int cp = 1;
  int mbs = 1;
  bool sp = false;
  Dtype dtype = Dtype::bf16;
  AttentionKernel attention = AttentionKernel::flash;
  int ep = 1, etp = 1;  ///< expert parallelism (a block with experts)
  double capacity = 0;  ///< the experts' capacity factor (0: dropless)
  bool pad = false;     ///< padded to capacity
  LossKernel loss = LossKernel::vocab_parallel_in_place;  ///< the output layer's loss
  Fp8Recipe fp8_recipe = Fp8Recipe::delayed;              ///< a dtype=fp8 layer's scaling
  /// The token dispatcher of a layer with experts (the plan's).
  Dispatcher dispatcher = Dispatcher::alltoall;
  /// The dispatcher pads each expert's rows to the FP8 alignment as it dispatches
  /// (Dispatcher::hybridep): no padding copies in the experts.
  bool dispatch_pads() const { return dispatcher == Dispatcher::hybridep; }
};

/// Whether an FP8 layer's casts scale each tensor by its own amax just before the cast: Transformer
/// Engine under fp8_recipe=tensorwise, and torchao's float8 linears (SoftwareStack::
/// transformer_engine false: torchtitan), whose default recipe is dynamic per-tensor scaling.
inline bool fp8_current_scaling(Fp8Recipe r, const SoftwareStack& s) {
  return r == Fp8Recipe::tensorwise || !s.transformer_engine;
}

/// Megatron-Core's grouped experts under FP8 pad each local expert's rows to a multiple of
/// kFp8PadAlignRows (kMxfp8PadAlignRows under MXFP8) for the FP8 grouped GEMM and unpad the
/// output after (TEGroupedMLP, experts.py at core_v0.15.0: Fp8Padding / Fp8Unpadding whenever
/// config.fp8, unless --moe-router-padding-for-fp8, which Megatron-Bridge's MoE recipes set off).
/// Transformer Engine copies every row then (fp8_padding.py and fp8_unpadding.py at v2.9:
/// fused_multi_row_padding / _unpadding, skipped only where every split is already aligned),
/// which Megatron's routing leaves to chance: forced balancing draws random logits (router.py
/// apply_random_logits), so an expert's count is a multiple of 16 one time in 16. Forward: the
/// permuted tokens padded (16-bit, read and written: kFp8PaddingBytesPerElement), their routing
/// probabilities padded (kFp8PaddedProbBytes a row: a 4-byte probability read and written), the
/// fc2 output unpadded; backward: each one's gradient the other way. A kernel each.
inline constexpr int kFp8PadAlignRows = 16, kMxfp8PadAlignRows = 32;
inline constexpr double kFp8PaddingBytesPerElement = 4;
inline constexpr double kFp8PaddedProbBytes = 8;
inline constexpr int kFp8PaddingKernelsPerPass = 3;

/// Rotary embedding with YaRN's attention factor (LayerArch::rope_mscale other than 1) as
/// Megatron-Core runs it: Transformer Engine's fused RoPE takes no such factor, so
/// apply_rotary_pos_emb falls back to _apply_rotary_pos_emb_bshd (rope_utils.py at d98e8a64:
/// "mscale ... is not supported by TE's fused RoPE"; Megatron-Bridge also turns the fusion off
/// for any position embedding but plain RoPE, fusions.py validate_rope_fusion_compatibility),
/// once on the queries and once on the keys. Per 16-bit element of them, forward: t x cos (read
/// 2, write 2), the rotated half's negation (1 + 1) and concatenation (2 + 2), x sin (2 + 2),
/// the sum (4 + 2), the concatenation with the empty pass-through part (2 + 2): 24 bytes in 6
/// kernels, and 6 more on the frequencies (cos and sin, each scaled and cast). Backward
/// (autograd of the same): the gradient x sin (2 + 2), its half negated (1 + 1), the halves
/// joined (2 + 2), x cos (2 + 2), the empty pass-through slice's gradient a full-size zero
/// tensor (slice_backward, 2; the full-width slice records none), and the three contributions
/// to t's gradient accumulated in two sums (4 + 2 each): 28 bytes in 7 kernels. Plain RoPE is
/// Transformer Engine's fused kernel (read and write once each pass), not priced (well under 1%
/// of a layer).
inline constexpr double kUnfusedRopeFwdBytes = 24, kUnfusedRopeBwdBytes = 28;
inline constexpr int kUnfusedRopeFwdKernels = 12, kUnfusedRopeBwdKernels = 7;

/// A mixture-of-experts layer's token permutation before the dispatch all-to-all and its inverse
/// after the combine (Megatron-Core moe_utils permute / unpermute: a gather and a weighted
/// scatter-add of 16-bit token rows), read and written once each per token copy and hidden
/// element, in each pass: 2 x (2 + 2) bytes.
inline constexpr double kMoePermuteBytesPerElement = 8;
/// The all-to-all dispatcher's second permutation, where a rank holds more than one expert
/// (token_dispatcher.py MoEAlltoAllTokenDispatcher at core_v0.15.0 and d98e8a64: "Permutation 2:
/// Sort tokens by local expert" in dispatch_postprocess, "Unpermutation 2" in combine_preprocess,
/// whenever num_local_experts > 1, whatever ep): the received rows, in source-rank order, are
/// copied into local-expert order after the dispatch and back before the combine (TE's
/// fused_sort_chunks_by_index with moe_permute_fusion, torch.split and torch.cat without, a
/// transpose's contiguous copy when padded to capacity, none where that transpose is over one
/// rank). Per received row and hidden element: forward the sort and the unsort, each 16 bits read
/// and written, 2 x (2 + 2) bytes (the routing probabilities, in the logits' 16-bit type without
/// --moe-router-dtype, read and written in the sort: 4 bytes a row), each sort a map kernel and a
/// copy kernel (TE make_chunk_sort_map, sort_chunks_by_map); backward the gradients the other way,
/// the same bytes, the saved maps reused: a kernel each (a permutation's gradient is its
/// inverse). The DeepEP and HybridEP dispatchers hand each expert its rows in order (one
/// permutation, priced above).
inline constexpr double kMoeSortBytesPerElement = 8, kMoeSortProbBytesPerRow = 4;
inline constexpr int kMoeSortFwdKernels = 4, kMoeSortBwdKernels = 2;
/// gpt-oss's clamped gated unit as Megatron-Core runs it ahead of its fused activation
/// (fused_bias_geglu.py weighted_bias_quick_geglu_impl at core_v0.15.0 and core_v0.17.0: chunk,
/// clamp each half, concatenate), per 16-bit element of the experts' fc1 output. Forward: each
/// element read and written by its clamp and again by the concatenation, 4 + 4 bytes in 3
/// kernels. Backward (PyTorch's clamp_backward): the upper-clamped half where(x <= max, g, 0), a
/// 1-byte mask then the select, 2 + 1 + 1 + 2 + 2 = 8 bytes in 2 kernels; the both-sided half
/// where((x >= min).logical_and_(x <= max), g, 0), two masks, their and, the select, 3 + 3 + 3 +
/// 5 = 14 bytes in 4 kernels; the halves' gradients copied back together, 4 bytes in 1 kernel:
/// (8 + 14) / 2 + 4 = 15 bytes an element in 7 kernels.
inline constexpr double kClampedGluFwdBytes = 8, kClampedGluBwdBytes = 15;
inline constexpr int kClampedGluFwdKernels = 3, kClampedGluBwdKernels = 7;
/// Biased experts' fc2 bias as Megatron-Core's TEGroupedMLP adds it (experts.py _apply_bias at
/// core_v0.15.0 and core_v0.17.0): a Python loop over the local experts computing t + b * p on
/// each expert's rows (b * p written, then read with t and the sum written) and a concatenation
/// (read, write), per 16-bit element of the fc2 output: 2 + 6 + 4 = 12 bytes forward, 2 kernels
/// an expert and 1; backward, the bias's and the probability's gradients each as a product
/// written and reduced (2 x 6 bytes) and the split's gradients concatenated (4): 16 bytes, 4
/// kernels an expert and 1. The probabilities are taken as 16-bit, the router's dtype by default.
inline constexpr double kExpertBiasLoopFwdBytes = 12, kExpertBiasLoopBwdBytes = 16;
inline constexpr int kExpertBiasLoopFwdKernels = 2, kExpertBiasLoopBwdKernels = 4;
/// The router's softmax (or sigmoid) and top-k over fp32 logits per token and expert: the GEMM's
/// output read and the probabilities written, 4 + 4 bytes; as much again backward.
inline constexpr double kRouterBytesPerLogit = 8;

enum class KernelClass { gemm, attention, elementwise };
enum class Pass { forward, backward_data, backward_weight };

/// One kernel of a layer as the cost model times it (and as `planner validate` runs it).
struct Kernel {
  const char*
      name;  ///< qkv, proj, fc1, fc2, scores, context, softmax_dropout, flash_attention, ...
  KernelClass cls;
  Pass pass;
  GemmShape gemm;    ///< GEMMs and attention: the (batched) problem shape
  double bytes = 0;  ///< element-wise: HBM traffic
  double flops = 0;
  double time_s = 0;  ///< predicted, sustained efficiency included
  /// Of a forward kernel's time_s, the work recompute=selective_moe's checkpoints run again in
  /// the backward (the separate norms and the experts' activation, Megatron-Core's
  /// --recompute-modules layernorm moe_act).
  double checkpointed_s = 0;
};

/// Every kernel of one block for one micro-batch on one rank, forward and backward (no
/// recompute, no communication). layer_compute() is their sum.
std::vector<Kernel> layer_kernels(const LayerShape& l, const ClusterProfile& c,
                                  const LayerConfig& cfg);

/// One block of any shape (decoder layer, ViT layer, projector MLP).
LayerCompute layer_compute(const LayerShape& l, const ClusterProfile& c, const LayerConfig& cfg);
/// The decoder's layer.
LayerCompute layer_compute(const ModelSpec& m, const ClusterProfile& c, const LayerConfig& cfg);

/// Embedding lookup (first stage) and logits + cross-entropy (last stage) for one micro-batch.
struct HeadCompute {
  double embed_fwd_s = 0, embed_bwd_s = 0;
  double logits_fwd_s = 0, logits_bwd_s = 0;  ///< the backward with its weight gradient
  double logits_bwd_weight_s = 0;             ///< the output GEMM's weight gradient alone
  /// One multi-token-prediction module beside its transformer layer (ModelSpec::mtp_layers): the
  /// next tokens' embedding, its three norms, eh_proj's GEMMs (2h -> h, column-parallel) and one
  /// more logits and loss; the backward with its weight gradients, which alone are mtp_bwd_weight.
  double mtp_fwd_s = 0, mtp_bwd_s = 0, mtp_bwd_weight_s = 0;
  double mtp_proj_fwd_s = 0;  ///< its norms' and eh_proj's forward (what full recompute redoes)
};
HeadCompute head_compute(const ModelSpec& m, const ClusterProfile& c, const LayerConfig& cfg);

/// Mixed-precision Adam step over `params` parameters held by this rank, HBM-bound.
double optimizer_step_s(const Gpu& gpu, double params);

}  // namespace planner
