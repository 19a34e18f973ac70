#pragma once
#include <algorithm>
#include <optional>
#include <string>

#include "planner/cluster.h"

namespace planner {

/// Largest value any parallelism or batch knob may take (inputs beyond it are refused, so that
/// no product of knobs can overflow or allocate without bound).
inline constexpr int kMaxKnob = 1 << 20;
inline constexpr int kMaxGlobalBatch = 1 << 28;

/// `selective_moe`, for a model with experts: the experts' activation and the layer norms that
/// are modules of their own, and latent attention's up-projections (Megatron-LM
/// --recompute-modules moe_act layernorm [mla_up_proj]: the modules Megatron-Bridge's Qwen3,
/// gpt-oss and DeepSeek performance recipes at v0.2.1-v0.4.0 recompute, e.g. gpt-oss-120b's
/// layernorm and moe_act; the core attention, whose fused kernel keeps little, is not among
/// them). Megatron-LM refuses it under delayed-scaling FP8.
enum class Recompute { none, selective, full, selective_moe };
enum class Schedule { gpipe, one_f_one_b, interleaved, zb_h1 };
/// How the decoder layers are cut into pipeline stages (cost/stages.h split_partition):
/// `even`, layers / pp each; `short_ends`, the first and last stage the same number of layers
/// fewer than the others, the fewest fewer that splits the rest evenly (Llama 3 405B: 126 layers
/// on 16 stages as 7, 14 x 8, 7; Megatron-Core --decoder-first/last-pipeline-num-layers);
/// `embed_loss`, the embedding and the loss each counted as one layer, so the first and last
/// model chunk hold one decoder layer fewer (Megatron-Core --account-for-embedding/loss-in-
/// pipeline-split; DeepSpeed partition_method type:transformer|embedding); `short_last`, the last
/// stage alone fewer layers, the fewest fewer that splits the rest evenly over the other stages,
/// room for the logits and the MTP modules (DeepSeek-V3: 61 layers on 8 stages as 7 x 8, 5;
/// Megatron-Core --decoder-last-pipeline-num-layers).
enum class PipelineSplit { even, short_ends, embed_loss, short_last };
/// How the global ranks are laid out, innermost first (Megatron-Core's parallel_state order):
/// `tp_cp_dp_pp`, Megatron's default (pipeline stages outermost, so a stage pair crosses nodes
/// whenever tp x cp x dp fills one); `tp_pp_dp`, --use-tp-pp-dp-mapping (its order string at
/// d98e8a64: "tp-pp-dp"; ModelParallelConfig: "Make sure EP and CP aren't used"), which puts the
/// pipeline inside the node and data parallelism across nodes, for models too small for TP.
enum class RankOrder { tp_cp_dp_pp, tp_pp_dp };
/// Where offloaded state lives (cost/offload.h): on the GPU (none), in host memory over the host
/// link (cpu), or on the node's NVMe drives through host memory (nvme; DeepSpeed ZeRO-Infinity).
enum class OffloadDevice { none, cpu, nvme };
/// Compressed data-parallel communication (cost/data_parallel.cc): DeepSpeed's 1-bit Adam,
/// 0/1 Adam and 1-bit LAMB, which after an uncompressed warm-up of freeze_step steps all-reduce
/// the momentum as 1-bit signs with error feedback (Tang et al. 2021, arXiv 2102.02888).
enum class GradCompression { none, onebit_adam, zero_one_adam, onebit_lamb };
/// The language-model loss kernel Megatron-Core runs (--cross-entropy-loss-fusion with
/// --cross-entropy-fusion-impl): `none`, the unfused vocab-parallel cross entropy; `native`, the
/// same steps in TorchScript/nvFuser-fused functions (core/fusions/fused_cross_entropy.py at
/// d98e8a64); `te`, Transformer Engine's Triton kernels (pytorch/triton/cross_entropy.py), which
/// Megatron-Bridge's performance recipes run (cross_entropy_fusion_impl = "te") and Megatron-LM
/// at d98e8a64 refuses ("disabled due to stability issues", arguments.py).
enum class LossFusion { none, native, te };
/// How Transformer Engine scales an fp8 plan's tensors (Megatron-LM's --fp8-recipe, default
/// delayed at d98e8a64, transformer_config.py): `delayed`, each tensor's scale from the amax
/// history of earlier steps (TE's Float8Quantizer: the amax is recorded by the cast itself, and a
/// norm feeding a linear writes its FP8 output directly, csrc/extensions/normalization.cpp
/// FULLY_FUSED); `tensorwise`, per-tensor current scaling (Float8CurrentScalingQuantizer,
/// csrc/quantizer.cpp): the amax of the tensor being cast, read in a pass of its own before the
/// cast unless the kernel that produced it computed it (a norm's FUSED_NORM_AMAX_FP8), all-reduced
/// over the TP group where the tensor is then all-gathered (module/linear.py), as
/// Megatron-Bridge's H100 FP8 recipes run it (compute_dtype fp8_cs). mxfp8 has its own recipe.
enum class Fp8Recipe { delayed, tensorwise };

/// A mixture-of-experts layer's token dispatcher (Megatron-Core --moe-token-dispatcher-type):
/// `alltoall`, NCCL's all-to-all of every token copy; `flex` with DeepEP's kernels, which send a
/// token once to each node that holds any of its experts and forward it there over NVLink
/// (DeepEP README: "forwarding data from NVLink domain to RDMA domain"); `allgather`,
/// Megatron-Core's MoEAllGatherTokenDispatcher: every rank's tokens (not copies) and their
/// routing probabilities all-gathered
/// over the etp x ep group, each rank keeping those routed to its experts, and the combine a
/// reduce-scatter back.
/// The flex dispatcher's two backends: DeepEP (`flex`) and HybridEP (`hybridep`), priced alike
/// (a token over the network once per node) but that HybridEP writes the tokens in expert order
/// as it dispatches, each expert's rows padded to the FP8 alignment under FP8 (token_dispatcher.py
/// _HybridEPManager at d98e8a64 and core_v0.16-0.18: pad_multiple, and its permutation steps
/// returning their input): the experts' padding copies nothing, and the permutation's traffic
/// (each copy written in expert order, a token's copies summed back) moves into its kernels,
/// priced as Megatron's permutation's.
enum class Dispatcher { alltoall, flex, allgather, hybridep };
inline bool is_flex(Dispatcher d) { return d == Dispatcher::flex || d == Dispatcher::hybridep; }
/// The flex dispatcher's backend as its authors name it ("DeepEP", "HybridEP"); "" for the others.
inline const char* flex_backend_name(Dispatcher d) {
  return d == Dispatcher::flex ? "DeepEP" : d == Dispatcher::hybridep ? "HybridEP" : "";
}
/// The capacity factors a plan may name (the knob's words): Switch Transformer's 1.0, 1.25, 1.5,
/// 2.0 (Fedus et al. 2022, section 2.2 and Table 1) and 4.0.
inline constexpr double kCapacityFactors[] = {1.0, 1.25, 1.5, 2.0, 4.0};
/// The precisions whose gradients default to fp32 and may be kept in bf16 instead
/// (Plan::grad_reduce_bf16): bf16, and fp8 or mxfp8 (bf16 training with FP8 linears).
inline bool bf16_gradients_possible(Dtype d) { return d == Dtype::bf16 || is_fp8(d); }
const char* to_string(Recompute r);
const char* to_string(Schedule s);

/// One way to split training over the GPUs. dp*tp*pp*cp = GPUs; gbs = mbs * dp * microbatches.
struct Plan {
  int dp = 1;
  int tp = 1;
  int pp = 1;
  int cp = 1;
  int vpp = 1;  ///< model chunks per pipeline rank (interleaved schedule)
  int mbs = 1;
  int gbs = 1;
  int zero = 0;  ///< 0 none, 1 optimizer states, 2 + gradients, 3 + parameters
  Recompute recompute = Recompute::none;
  /// With recompute=full, only the first this many decoder layers of each model chunk (a
  /// pipeline stage, or each of its vpp chunks) are recomputed and the others keep their
  /// activations (Megatron-LM's --recompute-method block --recompute-num-layers N;
  /// core/recompute.py at d98e8a64). 0: every layer (--recompute-method uniform).
  int recompute_layers = 0;
  bool sp = false;
  Schedule schedule = Schedule::one_f_one_b;
  PipelineSplit split = PipelineSplit::even;
  RankOrder order = RankOrder::tp_cp_dp_pp;
  Dtype dtype = Dtype::bf16;
  std::optional<AttentionKernel> attention;  ///< overrides the stack's when set
  /// Execution choices that override the profile's defaults when set (the framework decides
  /// whether it offers them: framework.h). DP gradient reduction beside the backward, ZeRO-1/2's
  /// parameter gather beside the next forward, TP collectives pipelined with their GEMMs.
  std::optional<bool> overlap_grad_reduce, overlap_param_gather, tp_comm_overlap;
  /// The expert dispatcher's all-to-all beside another micro-batch's compute (Megatron-Core's
  /// --overlap-moe-expert-parallel-comm with --delay-wgrad-compute: the forward of one
  /// micro-batch and the backward of another interleaved layer by layer). Off by default.
  std::optional<bool> ep_comm_overlap;
  Dispatcher dispatcher = Dispatcher::alltoall;
  /// The experts' capacity factor (Megatron-Core --moe-expert-capacity-factor, token drop policy
  /// "probs", no padding): an expert keeps at most this many times its mean token count and the
  /// router drops the rest before the dispatch. 0: dropless (the default). One of
  /// kCapacityFactors.
  double capacity_factor = 0;
  /// Each expert's input padded to its capacity (--moe-pad-expert-input-to-capacity; the
  /// all-to-all dispatcher's drop_and_pad): every expert runs exactly capacity_factor times its
  /// mean tokens, whatever the routing. Unset: off.
  std::optional<bool> pad_to_capacity;
  /// Transformer Engine's scoped CUDA graphs of attention, the router and the dispatcher's
  /// preprocessing (Megatron-LM's --cuda-graph-impl transformer_engine --cuda-graph-modules attn
  /// moe_router moe_preprocess): a layer with experts no longer waits for its host
  /// (SoftwareStack::moe_layer_host_s). Unset: eager, Megatron-LM's default.
  std::optional<bool> cuda_graphs;
  /// Offload: the optimizer's states and step (DeepSpeed offload_optimizer, Megatron-Core
  /// --optimizer-cpu-offload), the parameters under ZeRO-3 (DeepSpeed offload_param), and the
  /// percentage of this rank's optimizer states moved (Megatron --optimizer-offload-fraction,
  /// DeepSpeed offload_optimizer.ratio).
  OffloadDevice offload_optimizer = OffloadDevice::none;
  OffloadDevice offload_params = OffloadDevice::none;
  int offload_pct = 100;
  GradCompression grad_compression = GradCompression::none;
  /// DeepSpeed's ZeRO++ under ZeRO-3 (Wang et al. 2023, arXiv 2306.10209), its three parts as its
  /// tutorial sets them together: qwZ (the forward's weight all-gather in int8), hpZ (a secondary
  /// bf16 weight partition inside each node, so the backward's gathers stay on NVLink) and qgZ
  /// (the gradient reduce-scatter in int4 through a hierarchical all-to-all).
  bool zeropp = false;
  /// Gradients kept and data-parallel reduced in bf16 rather than fp32 (Megatron-LM's
  /// --grad-reduce-in-bf16: Megatron-Core's DDP buffers then take the parameters' dtype,
  /// distributed_data_parallel_config.py grad_reduce_in_fp32=False; under Megatron FSDP
  /// --megatron-fsdp-main-grads-dtype bf16), as Megatron-Bridge's performance recipes train
  /// (their set_*_common_configs set ddp.grad_reduce_in_fp32 = False). Gradients take 2 bytes a
  /// parameter in memory and on the DP wire; the optimizer step then makes an fp32 copy of this
  /// rank's gradients (all of them at zero=0, its shard otherwise: MemoryBreakdown::step_grads).
  /// bf16 and fp8 plans only.
  bool grad_reduce_bf16 = false;
  /// The loss kernel (LossFusion); none: the framework's own loss.
  LossFusion loss_fusion = LossFusion::none;
  /// The FP8 scaling recipe of a dtype=fp8 plan (Fp8Recipe).
  Fp8Recipe fp8_recipe = Fp8Recipe::delayed;
  /// Decoder layers whose stored activations go to host memory after their forward and come back
  /// before their backward (Megatron-Core's layer-level CPU offloading through Transformer
  /// Engine, --cpu-offloading-num-layers; activations only, its weights default off).
  int offload_activation_layers = 0;
  /// Expert parallelism (a model with experts; Megatron-Core's "parallel folding", Liu et al.
  /// 2025, arXiv 2504.14960): the routed experts are split over ep ranks and each expert's MLP
  /// over etp, the tp x cp x dp ranks of a stage regrouped as etp x ep x expert-dp (etp
  /// innermost); attention keeps tp x cp x dp. 1 and 1 for a dense model.
  int ep = 1;
  int etp = 1;
  bool offloads() const {
    return offload_optimizer != OffloadDevice::none || offload_params != OffloadDevice::none;
  }
  /// Anything on the host: the optimizer, ZeRO-3 parameters or a layer's activations (reports).
  bool uses_host() const { return offloads() || offload_activation_layers > 0; }
  /// The fraction of this rank's optimizer states (and their step) on the host.
  double offloaded_fraction() const {
    return offload_optimizer == OffloadDevice::none ? 0.0 : offload_pct / 100.0;
  }

  /// Products in 64 bits: knob values are bounded (kMaxKnob) but their product is not.
  long long gpus() const { return 1LL * dp * tp * pp * cp; }
  /// The ranks that hold the same weights: data and context parallel together. Gradients are
  /// reduced and ZeRO shards over them, as Megatron-LM's data-parallel group with context
  /// parallelism does.
  long long weight_replicas() const { return 1LL * dp * cp; }
  /// The ranks that hold the same experts (expert data parallel): a stage's tp x cp x dp ranks
  /// over ep x etp. Expert gradients are reduced and their optimizer states shard over them.
  long long expert_replicas() const {
    const long long group = 1LL * ep * etp;
    return group > 0 ? 1LL * tp * cp * dp / group : 0;
  }
  int microbatches() const {
    const long long d = 1LL * mbs * dp;
    return d > 0 ? static_cast<int>(gbs / d) : 0;
  }
  /// The share of a stage's `stage_layers` decoder layers that run the plan's recomputation:
  /// all of them, or under recompute_layers the first that many of each of its vpp chunks.
  double recomputed_share(double stage_layers) const {
    if (recompute_layers <= 0 || !(stage_layers > 0)) return 1.0;
    return std::min(1.0, double(recompute_layers) * std::max(1, vpp) / stage_layers);
  }
};

/// The overlaps a plan runs: its own execution knobs where set, else the execution stack's (the
/// framework's, from execution_stack in framework.h).
struct Overlaps {
  bool grad_reduce, param_gather, tp_comm;
};
inline Overlaps overlaps_of(const Plan& p, const ClusterProfile& c) {
  const SoftwareStack& s = c.software;
  return {p.overlap_grad_reduce.value_or(s.overlap_grad_reduce),
          p.overlap_param_gather.value_or(s.overlap_param_gather),
          p.tp_comm_overlap.value_or(s.overlap_tp_comm)};
}

/// Why a plan's split (Plan::split) cannot cut `layers` decoder layers: it does not divide them
/// (`layers`), or not into whole chunks of vpp (`vpp`).
enum class SplitError { none, layers, vpp };
/// Checks the split of a model of `layers` decoder layers and no encoders; `why`, when given,
/// receives the reason.
SplitError split_check(int layers, const Plan& p, std::string* why = nullptr);
/// Decoder layers of pipeline stage `stage` under the plan's split (split_check must accept it).
int split_stage_layers(int layers, const Plan& p, int stage);
/// The first and last stage's layers under short_ends (0 when there is none): the largest f
/// below the other stages' m = (layers - 2f) / (pp - 2), pp >= 3, f and m multiples of vpp.
int short_end_layers(int layers, int pp, int vpp);
/// The last stage's layers under short_last (0 when there is none): the largest l below the other
/// stages' m = (layers - l) / (pp - 1), pp >= 2, l and m multiples of vpp.
int short_last_layers(int layers, int pp, int vpp);

/// The reproducible argument string: "tp=8,pp=8,dp=16,cp=1,vpp=3,mbs=1,gbs=1536,zero=1,...".
std::string to_plan_string(const Plan& p);

/// Parses a --plan string. Unknown keys and bad values throw InputError naming `origin`
/// (e.g. "--plan") and the key, with the nearest valid key suggested.
Plan parse_plan(const std::string& text, const std::string& origin);

}  // namespace planner
