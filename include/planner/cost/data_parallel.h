#pragma once
/// Data-parallel communication of one iteration: the gradient reduction (allreduce, or
/// reduce-scatter and parameter all-gather under ZeRO-1/2) over the dp x cp ranks that hold the
/// same weights, overlapped with backward and forward where the stack overlaps them; ZeRO-3's
/// module-by-module gathers and reduce-scatters (zero3.h); the tied embedding's all-reduce between
/// the first and the last pipeline stage.
#include "planner/cluster.h"
#include "planner/cost/communication.h"
#include "planner/cost/compute.h"
#include "planner/model.h"
#include "planner/plan.h"

namespace planner {

/// DeepSpeed's compressed optimizers after their warm-up: each element sent as one sign bit, a
/// scale per chunk aside (Tang et al. 2021, s.4; deepspeed/runtime/comm/nccl.py).
inline constexpr double kCompressedBitsPerParam = 1;
/// The compression kernels' HBM traffic per element: the fp32 momentum and the worker's fp32
/// error-feedback buffer read and written (16 B) [D: the update rule], the server side's on a
/// 1/dp chunk neglected.
inline constexpr double kCompressionKernelBytesPerParam = 16;
/// freeze_step (1-bit Adam, 1-bit LAMB) and var_freeze_step (0/1 Adam): DeepSpeed's default
/// uncompressed warm-up, in steps (deepspeed/runtime/fp16/onebit/), which the emitters write.
inline constexpr long long kCompressionFreezeSteps = 100000;

/// The gradient buckets of one iteration: ceil(params / bucket) of equal size, a bucket being
/// Megatron-LM's DistributedDataParallelConfig.bucket_size, max(40M, 1M x dp) parameters (dp: the
/// replicas, dp x cp). Under zero=0 one all-reduce each; the last one's reduction cannot hide
/// behind backward work.
int dp_buckets(const Plan& p, double params_rank);
/// One bucket's bytes on the wire (the gradient's wire precision).
double dp_bucket_bytes(const Plan& p, double params_rank);
/// Gradient buckets of the routed experts' all-reduce (expert_dp_cost, zero = 0) for
/// `expert_params_rank` weights on one rank, over the expert-data-parallel ranks.
int expert_dp_buckets(const Plan& p, double expert_params_rank);
/// The algorithm of the plan's gradient all-reduce (zero=0) per bucket: NCCL's ring or tree,
/// whichever the model finds faster at the bucket's size over the dp x cp group.
AllreduceAlgorithm dp_allreduce_algorithm(const ClusterProfile& c, const Plan& p,
                                          double params_rank);

/// ZeRO++ (Wang et al. 2023, arXiv 2306.10209, s.3 and Table 1: 3M of ZeRO-3 traffic cut to
/// 0.75M): qwZ gathers the forward's weights as int8, 1 byte an element (the per-block scales
/// neglected); qgZ reduce-scatters the gradients as int4, 0.5 bytes an element.
inline constexpr double kZeroppWeightBytesPerParam = 1;
inline constexpr double kZeroppGradBytesPerParam = 0.5;
/// Its quantization kernels' HBM traffic per parameter and micro-batch [D: reads and writes]:
/// dequantizing every gathered int8 weight to bf16 (read 1, write 2) and quantizing the bf16
/// gradient to int4 and back after the all-to-all (read 2, write 0.5; read 0.5, write 2): 8 bytes.
inline constexpr double kZeroppKernelBytesPerParam = 8;

/// DeepSpeed's pipeline engine runs this plan (SoftwareStack::deepspeed_pipeline_engine, pp > 1).
inline bool deepspeed_pipelined(const ClusterProfile& c, const Plan& p) {
  return c.software.deepspeed_pipeline_engine && p.pp > 1;
}

/// Of those, the ones DeepSpeed runs with its BF16_Optimizer (engine.py
/// _do_optimizer_sanity_check: bf16, fp32 gradient accumulation, ZeRO-1, no offload; the launch
/// files set data_types.grad_accum_dtype to fp32 for it). bf16 without ZeRO on one DP rank runs
/// it too, accumulating in bf16 (no key: fp32 accumulation would be refused without ZeRO), its
/// 2 + 2 bytes of gradients what the model's 4 already price; over several ranks it is refused.
inline bool deepspeed_bf16_optimizer(const ClusterProfile& c, const Plan& p) {
  return deepspeed_pipelined(c, p) && p.dtype == Dtype::bf16 && p.zero == 1 &&
         p.offload_optimizer == OffloadDevice::none;
}

/// DeepSpeed's pipeline engine's gradient reduction (dp_cost): its buckets of
/// MEMORY_OPT_ALLREDUCE_SIZE elements, the wire bytes per parameter (the communication dtype, the
/// model's own: 16 bits but under tf32), and whether it all-reduces the whole gradient (FP16_ and
/// BF16_Optimizer) rather than reducing partitions (DeepSpeedZeroOptimizer's ZeRO-1).
int deepspeed_reduce_buckets(double params_rank);
inline double deepspeed_wire_bytes_per_param(const Plan& p) {
  return p.dtype == Dtype::tf32 ? 4.0 : 2.0;
}
inline bool deepspeed_allreduces(const ClusterProfile& c, const Plan& p) {
  return p.zero == 0 || deepspeed_bf16_optimizer(c, p);
}

struct DpCost {
  double exposed = 0;  ///< seconds on the critical path, after overlap
  double total = 0;    ///< seconds on the wire
  /// Of `total`, the gradient reduction beside the backward and the parameter gather beside the
  /// forward (ZeRO-0 to 2, uncompressed), the windows the expert-data-parallel reduction shares.
  double reduce_s = 0, gather_s = 0;
};

/// The design source's 8-bit gradient all-reduce with bucketed scales (s.3.3,
/// `GradientQuantizer(bits=8, bucket_size=4MB)` before the step): each gradient element crosses
/// the wire as one byte, a scale per 4 MB bucket aside (neglected), as a reduce-scatter whose
/// shards are dequantized, summed and requantized, then an all-gather.
inline constexpr double kInt8GradBytesPerParam = 1;
/// Its kernels' HBM traffic per element [D: reads and writes]: quantizing the fp32 gradient
/// before the reduce-scatter (read 4, write 1) and dequantizing the gathered result (read 1,
/// write 4); the reduced shard's own dequantize and requantize, 1/dp of the elements, neglected.
inline constexpr double kInt8KernelBytesPerParam = 10;

/// What a zero=0 plan's gradient all-reduce would cost as the source's 8-bit one: the same
/// buckets at kInt8GradBytesPerParam, overlapped with the backward as the plan's, plus the
/// kernels on the critical path and the tied embedding's all-reduce as before. No emitted
/// framework runs it (PyTorch DDP's quantization communication hooks are the nearest), so it is
/// priced as a what-if (`estimate`'s advice), never searched.
DpCost int8_allreduce_cost(const ModelSpec& m, const ClusterProfile& c, const Plan& p,
                           double params_rank, double bwd_window);

/// hpZ's partition: the dp x cp group's ranks inside one NVLink domain, where ZeRO++ keeps a
/// secondary bf16 copy of the weights sharded over them; 1 where the group does not leave the
/// domain (nothing to keep local).
int hpz_partition(const ClusterProfile& c, const Plan& p);

/// `params_rank`: the most loaded stage's parameters on one rank, before ZeRO; `fwd_window` and
/// `bwd_window`: one micro-batch's forward and backward on the critical stage (what the last
/// micro-batch's reduction and the next forward's gathers can hide behind); `lc` and
/// `stage_blocks`: the decoder block's compute and the critical stage's blocks, for ZeRO-3;
/// `scratch`, when given, storage the ZeRO-3 pass reuses; `warmup_fraction`, the share of the
/// run's steps a compressed optimizer spends in its uncompressed warm-up (0: after it).
DpCost dp_cost(const ModelSpec& m, const ClusterProfile& c, const Plan& p, double params_rank,
               double fwd_window, double bwd_window, const LayerCompute& lc, int stage_blocks,
               std::vector<double>* scratch = nullptr, double warmup_fraction = 0);

/// The routed experts' gradient reduction over the expert-data-parallel ranks (Megatron-Core
/// reduces expert and dense gradients in separate buffers, each over its own group): an
/// all-reduce per bucket (zero=0), or a reduce-scatter and the next forward's parameter
/// all-gather (the distributed optimizer, zero=1), beside what is left of the backward and
/// forward windows after the dense reduction (`dense`). `expert_params_rank`: the most loaded
/// stage's expert parameters on one rank. Zero when no rank shares its experts.
DpCost expert_dp_cost(const ClusterProfile& c, const Plan& p, double expert_params_rank,
                      double fwd_window, double bwd_window, const DpCost& dense);

}  // namespace planner
