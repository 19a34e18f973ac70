#pragma once
#include <algorithm>

#include "planner/cluster.h"
#include "planner/model.h"
#include "planner/plan.h"

namespace planner {

/// Bytes per parameter of mixed-precision Adam as Megatron-LM stores it
/// (megatron/training/theoretical_memory_usage.py: 18 bytes without the distributed optimizer,
/// 6 + 12/dp with it): 16-bit weights, fp32 main gradients, fp32 master weights + two moments.
inline constexpr double kWeightBytesPerParam = 2;
inline constexpr double kGradBytesPerParam = 4;
inline constexpr double kOptimizerBytesPerParam = 12;

/// tf32 training keeps fp32 tensors: the weights are 4-byte fp32 and are themselves the master
/// copy, so the optimizer holds only Adam's two fp32 moments (PyTorch's fp32 Adam: param, grad,
/// exp_avg, exp_avg_sq, 16 bytes a parameter in all); activations are fp32 too (TF32 is a tensor
/// core mode on fp32 operands, not a storage format).
inline constexpr double kFp32WeightBytesPerParam = 4;
inline constexpr double kFp32OptimizerBytesPerParam = 8;
inline double weight_bytes_per_param(Dtype d) {
  return d == Dtype::tf32 ? kFp32WeightBytesPerParam : kWeightBytesPerParam;
}
inline double optimizer_bytes_per_param(Dtype d) {
  return d == Dtype::tf32 ? kFp32OptimizerBytesPerParam : kOptimizerBytesPerParam;
}
/// Bytes of one stored activation element: 16-bit under bf16, fp16 and fp8 (Korthikanti's 2-byte
/// count), 4 under tf32.
inline double activation_element_bytes(Dtype d) { return d == Dtype::tf32 ? 4.0 : 2.0; }
/// Bytes of a linear layer's stored input: under fp8 Transformer Engine saves the FP8 copy its
/// GEMMs read (te.Linear / LayerNormLinear save the quantized input for the weight gradient, not
/// the 16-bit one; TE 2.x keeps only its column-wise usage for the backward), 1 byte an element;
/// under MXFP8 the column-wise copy keeps its E8M0 block scales beside it.
inline double linear_input_bytes(Dtype d) {
  if (d == Dtype::fp8) return 1.0;
  if (d == Dtype::mxfp8) return 1.0 + kMxfp8ScaleBytesPerElement;
  return activation_element_bytes(d);
}

/// Transformer Engine's cached FP8 weight per parameter of a linear layer: with
/// is_first_microbatch given (Megatron-Core's TE wrappers pass it unless
/// disable_parameter_transpose_cache, False at d98e8a64), te.Linear quantizes its weight on a
/// step's first micro-batch into a workspace it keeps (module/linear.py at d0067d0d:
/// cache_name "weight", self._fp8_workspaces), with the row-wise usage and, when gradients are
/// needed, the column-wise one: an FP8 copy and its transpose under per-tensor scaling (1 + 1
/// bytes; Hopper's FP8 GEMMs take only the TN layout; one copy where they take any,
/// Gpu::fp8_any_layout), both scaled MXFP8 copies with their E8M0 scales under mxfp8. Not under
/// Megatron FSDP (zero >= 2), whose default drops the transpose cache (arguments.py:
/// --keep-fp8-transpose-cache keeps it).
inline double fp8_weight_cache_bytes_per_param(Dtype d, bool any_layout) {
  if (d == Dtype::fp8) return any_layout ? 1.0 : 2.0;
  if (d == Dtype::mxfp8) return 2.0 * (1.0 + kMxfp8ScaleBytesPerElement);
  return 0.0;
}

/// Bytes per gradient element on the wire: Megatron-LM reduces in fp32 under bf16
/// (arguments.py: "bf16 requires gradient accumulation and all-reduce in fp32"), and so under fp8,
/// which is bf16 training with FP8 linear layers (Megatron-Bridge's bf16_with_fp8_* recipes keep
/// grad_reduce_in_fp32=True); tf32 gradients are fp32 anyway; fp16 reduces in 16 bits.
/// With grad_reduce_bf16 the buffers and the reduction are bf16 (Plan::grad_reduce_bf16).
inline double grad_wire_bytes(const Plan& p) {
  return p.dtype == Dtype::fp16 || p.grad_reduce_bf16 ? 2.0 : 4.0;
}
/// Bytes per parameter of the gradient buffers Megatron-Core's DDP keeps: fp32 main gradients
/// (kGradBytesPerParam), or the parameters' bf16 under grad_reduce_bf16.
inline double grad_bytes_per_param(const Plan& p) {
  return p.grad_reduce_bf16 ? 2.0 : kGradBytesPerParam;
}

/// CUDA context, NCCL buffers and cuBLAS workspaces, and the caching allocator's fragmentation:
/// an allowance, not a measurement (PyTorch reports ~0.5-1 GiB of context per process; NCCL
/// buffers default to 4 MiB per channel and peer). Named so that a user can see and change it.
inline constexpr double kRuntimeReserveBytes = 2.0 * 1024 * 1024 * 1024;
inline constexpr double kFragmentationFraction = 0.05;

/// Activation bytes of one transformer layer for one micro-batch on one rank, 16-bit activations
/// (fp32 under tf32) and 1-byte dropout masks (Korthikanti et al. 2022, Table 2, generalised to
/// GQA and SwiGLU).
double activation_bytes_per_layer(const LayerShape& l, int mbs, int tp, int cp, bool sp,
                                  Recompute r, AttentionKernel attn, Dtype dtype = Dtype::bf16);
/// The decoder's layer.
double activation_bytes_per_layer(const ModelSpec& m, int mbs, int tp, int cp, bool sp, Recompute r,
                                  AttentionKernel attn, Dtype dtype = Dtype::bf16);

/// The last stage's logits, one micro-batch on one rank: Korthikanti's final norm and output-GEMM
/// inputs (2 activations of sbh/t) and what the loss holds at its peak. Megatron's
/// (vocab_parallel_in_place): the fp32 logits it works on (4sbv/t), plus the 16-bit logits the
/// output GEMM writes before the loss casts them (2sbv/t; under tf32 the GEMM writes fp32 and the
/// cast is a no-op). torchtitan's 2024 one (pytorch_fp32), in its backward: kLossFp32CopiesTorch
/// fp32 tensors of the logits' size, kLossFp32CopiesTorchTp with TP; its chunked one
/// (chunked_fp32): those and the chunk's 16-bit logits for one of kLossChunks chunks, plus the
/// fp32 gradient accumulator of the hidden states and their 16-bit chunk copies (TP-replicated:
/// 4sbh + 2sbh).
/// Fused kernels (the plan's loss_fusion): fused_native holds what vocab_parallel_in_place holds;
/// te_triton only the 16-bit logits, which its gradient overwrites.
double logits_bytes(const ModelSpec& m, const Plan& p,
                    LossKernel loss = LossKernel::vocab_parallel_in_place);

/// The loss kernel a plan runs: its loss_fusion's, else the stack's own.
inline LossKernel loss_kernel(LossKernel stack, LossFusion f) {
  return f == LossFusion::native ? LossKernel::fused_native
         : f == LossFusion::te   ? LossKernel::te_triton
                                 : stack;
}
/// torchtitan's loss backward at its peak, in fp32 logit-sized tensors (train.py at 9dec370,
/// components/loss.py at b5bcd76c): without TP PyTorch's cross entropy holds the saved
/// log-probabilities, the NLL's gradient and log_softmax's input gradient (3); with TP the
/// vocab-parallel loss holds the saved log-probabilities, the zeros gradient, exp(log_probs) and
/// their sum (4). Its forward holds fewer (the bf16 logits, their fp32 copy and the
/// log-probabilities; with TP the shifted logits too).
inline constexpr double kLossFp32CopiesTorch = 3, kLossFp32CopiesTorchTp = 4;
/// ChunkedLossWrapper.Config.num_chunks at b5bcd76c: torchtitan's Llama 3 recipes' loss.
inline constexpr double kLossChunks = 8;

/// Micro-batches whose activations the first stage holds at peak (1F1B: min(pp, m);
/// interleaved: times 1 + (p-1)/(p v); GPipe: all m).
double microbatches_in_flight(const Plan& p);

/// What one pipeline stage holds on one rank, before ZeRO sharding.
struct StageLoad {
  double params = 0;  ///< weights on this rank
  /// The routed experts' part of params: their gradients and optimizer states shard over the
  /// expert-data-parallel ranks (Plan::expert_replicas), not dp x cp.
  double expert_params = 0;
  double act_per_mb = 0;    ///< activations stored per micro-batch in flight (all chunks)
  double once_bytes = 0;    ///< held for one micro-batch at a time: backward working set, logits
  double zero3_gather = 0;  ///< parameters gathered at once under ZeRO-3 (current + prefetch)
  double weight_cache = 0;  ///< bytes of quantized weights kept between micro-batches (FP8)
};

struct MemoryBreakdown {
  double weights = 0, grads = 0, optimizer = 0, activations = 0, reserve = 0;
  /// The optimizer step's fp32 copy of bf16 gradients (grad_reduce_bf16; Megatron-LM's
  /// optimizer.py main_param.grad = main_grad.float(), distrib_optimizer.py for its shard),
  /// alive from the step to the next zero_grad, when the activations are freed: the peak holds
  /// the larger of the two. Under DeepSpeed's BF16_Optimizer, its reduction bucket instead.
  double step_grads = 0;
  /// The part of `weights` that is Transformer Engine's FP8 copies (StageLoad::weight_cache).
  double weight_cache = 0;
  double transient() const { return activations > step_grads ? activations : step_grads; }
  double total() const { return weights + grads + optimizer + transient() + reserve; }
  /// The allowance on what the GPU holds: set again after anything above changes.
  void set_reserve() {
    reserve =
        kRuntimeReserveBytes + kFragmentationFraction * (weights + grads + optimizer + transient());
  }
};

/// Parameters held by one rank of the first (stage = 0) or last (stage = pp-1) stage, before ZeRO.
double stage_params_per_rank(const ModelSpec& m, const Plan& p, int stage);

/// DeepSpeed's reduce_bucket_size default (zero/config.py), 5e8 elements: ZeRO-2/3 reduce
/// gradients in buckets of it, and with the optimizer offloaded copy each bucket to the host.
inline constexpr double kDeepSpeedReduceBucketParams = 5e8;

/// Gradient bytes on the GPU when DeepSpeed offloads the optimizer (ZeRO-Offload, Ren et al. 2021
/// s.4): the offloaded part's fp32 gradients live on the host; the GPU keeps 16-bit gradients,
/// all of them until the step under ZeRO-1, one reduce bucket at a time under ZeRO-2/3 (each is
/// copied out once reduced; 4-byte under tf32); the part the GPU still steps keeps its fp32
/// gradients.
inline double deepspeed_offload_grad_bytes(double params, const Plan& p) {
  const double f = p.offloaded_fraction();
  const double kept =
      (1.0 - f) * params * kGradBytesPerParam / (p.zero >= 2 ? p.weight_replicas() : 1);
  const double sixteen = p.zero >= 2 ? std::min(kDeepSpeedReduceBucketParams, params) : f * params;
  return kept + weight_bytes_per_param(p.dtype) * sixteen;
}

/// ZeRO-3 under a pipeline, which only torchtitan runs (Megatron-LM and DeepSpeed refuse it:
/// framework.cc): its FSDP2 does not reshard a pipelined stage after the forward
/// (torchtitan/distributed/fsdp.py get_fsdp_reshard_after_forward_policy at b5bcd76c: "For PP,
/// by default do not reshard after forward to avoid per-microbatch all-gathers"), and PyTorch's
/// pipeline schedules run every backward but the last without gradient sync, FSDP2 accumulating
/// the unsharded gradients in the fp32 reduce dtype (FSDPParam.to_accumulated_grad_if_needed).
/// So the stage's weights are gathered once a step and its whole gradients held until the last
/// micro-batch's reduce-scatter.
inline bool zero3_pipelined(const Plan& p) { return p.zero >= 3 && p.pp > 1; }

/// DeepSpeed's BF16_Optimizer, which its pipeline engine trains bf16 with (data_types.
/// grad_accum_dtype fp32, as the launch files set it): its fp32 gradient buffer covers every
/// parameter of the rank (bf16_optimizer.py fp32_groups_gradients_flat), and the bf16 gradients
/// autograd writes stay allocated beside it (clear_lp_grads zeroes them, set_to_none=False).
/// After the backward, ReduceGrads all-reduces a bucket of at most kDeepSpeedReduceBucketParams
/// at a time through a flat fp32 copy and its bf16 cast (engine.py allreduce_bucket), held as
/// MemoryBreakdown::step_grads.
inline constexpr double kBf16OptimizerLpGradBytesPerParam = 2;

/// Memory of one GPU holding `load` with `in_flight` micro-batches of activations; with
/// `host_gradients`, DeepSpeed's offload keeps the offloaded gradients on the host; with
/// `bf16_optimizer_grads`, DeepSpeed's BF16_Optimizer keeps the bf16 gradients beside the fp32
/// ones. Inline: the memory check of every estimate calls it once per stage.
inline MemoryBreakdown stage_memory(const StageLoad& load, const Plan& p, double in_flight,
                                    bool host_gradients = false,
                                    bool bf16_optimizer_grads = false) {
  MemoryBreakdown mem;
  const double weight_bytes = weight_bytes_per_param(p.dtype);
  // Offloaded ZeRO-3 partitions live on the host: only the gathered working set stays.
  mem.weights = p.offload_params != OffloadDevice::none
                    ? 0.0
                    : load.params * weight_bytes / (p.zero >= 3 ? p.weight_replicas() : 1);
  mem.grads = host_gradients && p.offload_optimizer != OffloadDevice::none
                  ? deepspeed_offload_grad_bytes(load.params, p)
              : zero3_pipelined(p)
                  ? load.params * kGradBytesPerParam  // unsharded, fp32, until the last backward
                  : load.params * grad_bytes_per_param(p) / (p.zero >= 2 ? p.weight_replicas() : 1);
  if (bf16_optimizer_grads) mem.grads += load.params * kBf16OptimizerLpGradBytesPerParam;
  // The parameters this rank's optimizer steps: all of them, or under the distributed optimizer
  // its shard of the dense ones (over dp x cp) and of the experts (over the expert-data ranks).
  const double dense = load.params - load.expert_params;
  const double stepped = p.zero >= 1 ? dense / p.weight_replicas() +
                                           load.expert_params / std::max(1LL, p.expert_replicas())
                                     : load.params;
  mem.optimizer = stepped * optimizer_bytes_per_param(p.dtype) * (1.0 - p.offloaded_fraction());
  mem.weight_cache = load.weight_cache;
  mem.weights += load.weight_cache;
  if (p.zero >= 3)  // the gathered working set, or under a pipeline the whole stage
    mem.weights += (zero3_pipelined(p) ? load.params : load.zero3_gather) * weight_bytes;
  mem.activations = load.act_per_mb * in_flight + load.once_bytes;
  if (p.grad_reduce_bf16)  // the step's fp32 copy of the gradients this rank steps
    mem.step_grads = stepped * kGradBytesPerParam * (1.0 - p.offloaded_fraction());
  if (bf16_optimizer_grads)  // ReduceGrads' bucket: its flat fp32 copy and the bf16 cast
    mem.step_grads = std::min(load.params, kDeepSpeedReduceBucketParams) *
                     (kGradBytesPerParam + kBf16OptimizerLpGradBytesPerParam);
  mem.set_reserve();
  return mem;
}

/// In flight on `stage` under the closed form: the first stage holds the most, stage i of 1F1B
/// holds pp - i; GPipe holds every micro-batch, ZB-H1 pp on every stage.
double in_flight_on(const Plan& p, int stage);

/// in_flight_on for every stage of one plan, its micro-batch count (a 64-bit division) and first
/// stage's figure worked out once: the memory check asks for each stage of every plan.
class InFlight {
 public:
  /// `all_warmup`: the stack's interleaved schedule runs every forward first when the
  /// micro-batches equal the stages (SoftwareStack::interleaved_all_warmup, the 2021 code).
  explicit InFlight(const Plan& p, bool all_warmup = false)
      : schedule_(p.schedule),
        pp_(p.pp),
        vpp_(p.vpp),
        m_(p.microbatches()),
        first_(microbatches_in_flight(p)),
        all_(all_warmup && p.schedule == Schedule::interleaved && m_ == p.pp) {}
  double on(int stage) const {
    if (all_) return m_;
    if (schedule_ == Schedule::gpipe || schedule_ == Schedule::zb_h1) return first_;
    if (schedule_ == Schedule::one_f_one_b) return std::min(pp_ - stage, m_);
    // Interleaved: Megatron-LM's warm-up runs 2 (pp - stage - 1) + (vpp - 1) pp chunk forwards,
    // then one more before the first backward (schedules.py get_pp_rank_microbatches at
    // d98e8a64), each chunk 1/vpp of the stage's layers: Korthikanti's pp + (pp - 1)/vpp on the
    // first stage, 2/vpp of a micro-batch fewer on each later one.
    const double chunks = 2.0 * (pp_ - stage - 1) + double(vpp_ - 1) * pp_ + 1;
    return std::min(double(m_), chunks / vpp_);
  }

 private:
  Schedule schedule_;
  int pp_, vpp_, m_;
  double first_;
  bool all_;
};

/// Memory of one GPU of `stage` of a plain decoder split evenly; the planner checks both the
/// first and the last stage.
MemoryBreakdown memory_per_gpu(const ModelSpec& m, const Plan& p, const Gpu& gpu,
                               AttentionKernel attn, int stage);

}  // namespace planner
