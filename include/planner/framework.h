#pragma once
/// The training framework a plan is for, as an input of the planner: which plans it can express
/// (why_not) and the execution stack it runs (execution_stack). One definition, read by the
/// search (pruning), estimate, compare, regress, the report and emit.
#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "planner/cluster.h"
#include "planner/model.h"
#include "planner/plan.h"

namespace planner {

/// A framework at one version. Megatron-LM, DeepSpeed and torchtitan (PyTorch-native training)
/// are what the launch files target; the 2021 ones are the stacks the A100 runs of Narayanan et
/// al. 2021 measured (Megatron-LM for PTD-P, DeepSpeed for its ZeRO-3 comparison), kept so those
/// runs are predicted on what they ran; Megatron-LM 2022 is the generation between them and
/// Megatron-Core (sequence parallelism, selective recomputation and the distributed optimizer on
/// the 2021 kernels, before flash attention and any communication overlap).
enum class Framework {
  megatron,
  deepspeed,
  megatron_2021,
  deepspeed_2021,
  torchtitan,
  megatron_2022
};
inline constexpr std::array kFrameworks = {Framework::megatron,       Framework::deepspeed,
                                           Framework::torchtitan,     Framework::megatron_2021,
                                           Framework::deepspeed_2021, Framework::megatron_2022};
/// What `--framework all` ranks and what launch files are written for.
inline constexpr std::array kCurrentFrameworks = {Framework::megatron, Framework::deepspeed,
                                                  Framework::torchtitan};

/// Host time of one Megatron-Core layer with routed experts, forward and backward of one
/// micro-batch, eager: Megatron-Bridge's CUDA-graph card (skills/nemo-mbridge-perf-cuda-graphs/
/// card.yaml at 228e9a3e, `qwen3_moe_h100_fp8_blockwise_te_scoped`, measured): Qwen3-30B-A3B on
/// the 16-H100 recipe layout (gbs 1024, mbs 1: 3,072 layer passes per GPU and step, at pp 1 x
/// ep 16 or pp 2 x ep 8) took about 29.18 s a step eager, "launch-bound", and 20.00 s with
/// Transformer Engine's scoped graphs of attention, the router and the dispatcher's
/// preprocessing; 29.18 s / 3,072 = 9.50 ms, an upper bound (the step's embedding, loss,
/// optimizer and bubble are in it). The dispatcher's token counts reach the host each layer
/// (a device-to-host sync), after which the GPU runs what the host launches: a layer whose GPU
/// work is shorter waits for its host (the card's bf16 all-to-all run, 13.4 ms of GPU work a
/// layer, gained nothing from graphs: 42.00 s against 41.36 s eager).
inline constexpr double kEagerMoeLayerHostS = 29.18 / 3072;
/// Megatron-Core with Transformer Engine as the Megatron-LM README's 2024 H100 table ran it:
/// fused (cuDNN flash) attention, --overlap-grad-reduce, --overlap-param-gather and
/// --tp-comm-overlap ("Fine-grained overlapping with DP ..., TP (--tp-comm-overlap), and PP").
/// Its linears are Transformer Engine's (SoftwareStack::transformer_engine), whose FP8 ones keep
/// their quantized weights between micro-batches (SoftwareStack::fp8_weight_cache).
inline constexpr SoftwareStack kMegatronStack{.attention = AttentionKernel::flash,
                                              .overlap_grad_reduce = true,
                                              .overlap_param_gather = true,
                                              .overlap_tp_comm = true,
                                              .causal_attention_skip = true,
                                              .zero3_collective_nics = 8,
                                              .fp8_weight_cache = true,
                                              .transformer_engine = true,
                                              .moe_layer_host_s = kEagerMoeLayerHostS};
/// DeepSpeed (ZeRO's overlap_comm overlaps the gradient reduction) with Megatron-DeepSpeed's
/// flash attention; no TP-communication overlap, parameters gathered inside the optimizer step.
/// No ZeRO-3 measurement on H100 in the reference: NCCL's hierarchical rate (all NICs) assumed.
/// With pp > 1 its pipeline engine (SoftwareStack::deepspeed_pipeline_engine).
inline constexpr SoftwareStack kDeepSpeedStack{.attention = AttentionKernel::flash,
                                               .overlap_grad_reduce = true,
                                               .overlap_param_gather = false,
                                               .overlap_tp_comm = false,
                                               .causal_attention_skip = true,
                                               .zero3_collective_nics = 8,
                                               .deepspeed_pipeline_engine = true};
/// Megatron-LM and DeepSpeed as Narayanan et al. 2021 (SC21) measured them on Selene: unfused
/// attention with the fused scale-mask-softmax, no overlap of the DP all-reduce with backward.
/// zero3_collective_nics = 1 is fitted in-sample to that paper's Table 2 ZeRO-3 rows: 175B on
/// 768-1536 GPUs and 530B on 1120-2240 GPUs at one micro-batch per GPU move 21-24 GB/s of gather
/// and scatter traffic per GPU, one 200G NIC (24 GB/s), not the node's eight.
inline constexpr SoftwareStack kStack2021{.attention = AttentionKernel::unfused,
                                          .overlap_grad_reduce = false,
                                          .overlap_param_gather = false,
                                          .overlap_tp_comm = false,
                                          .causal_attention_skip = true,
                                          .zero3_collective_nics = 1,
                                          .interleaved_all_warmup = true};

/// Megatron-LM at fc7f4f035a (2022-09-30): sequence parallelism and selective recomputation
/// (merged 2022-05-25, d898a8991d; Korthikanti et al. 2022) and the distributed optimizer (merged
/// 2022-06-08, d07d29df14) on the 2021 kernels: the fused scale-mask-softmax, not flash attention
/// (integrated 2023-01-11, 285068c810); the DP reduction after the backward (overlapped from
/// 2023-08-07, 28766b55fb), the distributed optimizer's parameter all-gather after the step, no
/// Transformer Engine TP-communication overlap (its own async all-reduce of a column-parallel
/// layer's input gradient beside the weight-gradient GEMM, without SP, is not modelled; nor are
/// its blocking stage-to-stage transfers, batch_isend_irecv then a wait, which the simulator
/// takes as overlapped); the interleaved schedule's all-forward warm-up
/// when the micro-batches equal the stages (schedules.py at fc7f4f035a). So the 2021 stack's
/// execution choices; Megatron-LM has no ZeRO-3, so its zero3_collective_nics is unused.
inline constexpr SoftwareStack kStack2022 = kStack2021;

/// torchtitan (pytorch/torchtitan at b5bcd76c) as its recipes run: FSDP2's reduce-scatter beside
/// the backward and its prefetched all-gather beside the forward (fully_shard), DDP's bucketed
/// all-reduce under pure replication; FlexAttention (model_registry's default attn_backend "flex",
/// a fused flash-style kernel); TP collectives exposed unless async TP is chosen
/// (compile.enable_async_tensor_parallel, which needs torch.compile: the tp_comm_overlap knob);
/// the loss on fp32 copies of the logits, a chunk at a time (LossKernel::chunked_fp32).
inline constexpr SoftwareStack kTorchtitanStack{.attention = AttentionKernel::flash,
                                                .overlap_grad_reduce = true,
                                                .overlap_param_gather = true,
                                                .overlap_tp_comm = false,
                                                .causal_attention_skip = true,
                                                .zero3_collective_nics = 8,
                                                .loss = LossKernel::chunked_fp32};

/// What the planner knows of one framework at one version.
struct FrameworkInfo {
  Framework id;
  const char* name;     ///< the option value: "megatron", "deepspeed", "megatron-2021", ...
  const char* title;    ///< "Megatron-LM", "DeepSpeed", "Megatron-LM 2021", ...
  const char* version;  ///< the pinned commit the refusals and flags were read from, or the run
  /// refine() also tries a time- and memory-balanced partition of the blocks (any count per
  /// stage). No version can launch one: false for all. Megatron-LM's own uneven splits (first
  /// and last stage counts, the account-for flags) are the plan's split knob (StageSplit below).
  bool uneven_stages;
  /// Transformer Engine's TP-communication overlap (--tp-comm-overlap) exists.
  bool tp_comm_overlap;
  /// ZeRO-1/2's parameter all-gather can run beside the next forward (--overlap-param-gather);
  /// DeepSpeed gathers inside the optimizer step.
  bool param_gather_overlap;
  /// Launch files are written for it (the pinned versions; not the 2021 stacks).
  bool emits;
  SoftwareStack stack;  ///< its default execution choices
};

inline constexpr std::array<FrameworkInfo, 6> kFrameworkInfo = {{
    {Framework::megatron, "megatron", "Megatron-LM", "d98e8a64", false, true, true, true,
     kMegatronStack},
    {Framework::deepspeed, "deepspeed", "DeepSpeed", "f1feb887", false, false, false, true,
     kDeepSpeedStack},
    {Framework::megatron_2021, "megatron-2021", "Megatron-LM 2021",
     "as Narayanan et al. 2021 ran it", false, false, false, false, kStack2021},
    {Framework::deepspeed_2021, "deepspeed-2021", "DeepSpeed 2021",
     "as Narayanan et al. 2021 ran it", false, false, false, false, kStack2021},
    {Framework::torchtitan, "torchtitan", "torchtitan", "b5bcd76c", false, true, true, true,
     kTorchtitanStack},
    {Framework::megatron_2022, "megatron-2022", "Megatron-LM 2022", "fc7f4f035a", false, false,
     false, false, kStack2022},
}};
constexpr const FrameworkInfo& info(Framework f) { return kFrameworkInfo[static_cast<int>(f)]; }
/// Megatron-LM at any version, DeepSpeed at either: the family decides the refusals' wording.
constexpr bool is_megatron(Framework f) {
  return f == Framework::megatron || f == Framework::megatron_2021 || f == Framework::megatron_2022;
}
/// The stacks of the 2021 runs, which refuse what did not exist yet.
constexpr bool is_2021(Framework f) {
  return f == Framework::megatron_2021 || f == Framework::deepspeed_2021;
}
const char* to_string(Framework f);
/// A framework's option value ("megatron", "deepspeed-2021", ...); std::nullopt for anything else.
std::optional<Framework> framework_named(std::string_view name);
/// "megatron, deepspeed, megatron-2021 or deepspeed-2021" (or, `emitting`, the two with launch
/// files), for messages and help.
std::string framework_names(bool emitting = false);
/// Likewise, throwing InputError naming `option` for anything else; `emitting`: only frameworks
/// with launch files (the 2021 stacks are refused with a reason).
Framework parse_framework(const std::string& text, const std::string& option,
                          bool emitting = false);

/// Why framework `f` cannot run `p` as planned (ZeRO stages, schedules, interleaving, context
/// parallelism, precision, whole nodes, batch arithmetic, layers per stage), or std::nullopt when
/// it can. The message is built only when `reason` is given; the search passes none.
bool refuses(Framework f, const ModelSpec& m, const ClusterProfile& c, const Plan& p,
             std::string* reason);
std::optional<std::string> why_not(Framework f, const ModelSpec& m, const ClusterProfile& c,
                                   const Plan& p);

/// The execution stack `f` runs on this hardware: its own default execution choices, or a legacy
/// profile's software block less what the framework lacks (DeepSpeed: TP-communication overlap
/// and the parameter gather beside the forward). `note`, when given, receives a line saying what
/// changed from the profile's block ("" when nothing did, or there is no block).
SoftwareStack execution_stack(Framework f, const ClusterProfile& c, std::string* note = nullptr);

/// An uneven pipeline split as Megatron-LM at d98e8a64 expresses it (configs/frameworks/
/// megatron-core-args.txt): layers on the first and on the last stage (0: as the even split has
/// it), or the embedding and the loss each counted as one more layer of the split. The default
/// is the even split.
struct StageSplit {
  int first_stage_layers = 0;          ///< --decoder-first-pipeline-num-layers (0: none)
  int last_stage_layers = 0;           ///< --decoder-last-pipeline-num-layers (0: none)
  bool account_for_embedding = false;  ///< --account-for-embedding-in-pipeline-split
  bool account_for_loss = false;       ///< --account-for-loss-in-pipeline-split
  bool even() const {
    return first_stage_layers == 0 && last_stage_layers == 0 && !account_for_embedding &&
           !account_for_loss;
  }
};
/// The plan's split (Plan::split) in Megatron-LM's terms: short_ends as the first and last
/// stage counts, short_last as the last stage's alone, embed_loss as both account-for flags.
StageSplit stage_split(const ModelSpec& m, const Plan& p);
/// Why `f` cannot split `m`'s layers over `p`'s stages as `s` says (std::nullopt when it can):
/// only Megatron-LM (the current version) has uneven splits, with TransformerConfig's rules
/// (counts not combined with the account-for flags; each count and each middle stage's a multiple
/// of vpp; the middle layers a multiple of the middle stages). The even split is never refused
/// here.
std::optional<std::string> why_not_split(Framework f, const ModelSpec& m, const Plan& p,
                                         const StageSplit& s);

}  // namespace planner
