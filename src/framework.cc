// The frameworks' refusals and execution stacks. Megatron-LM: NVIDIA/Megatron-LM at d98e8a64
// (configs/frameworks/megatron-core-args.txt, with the validate_args facts quoted there; line
// numbers below are megatron/training/arguments.py's at that commit); DeepSpeed:
// microsoft/DeepSpeed's pipeline engine and deepspeedai/Megatron-DeepSpeed at f1feb887
// (configs/frameworks/megatron-deepspeed-args.txt); the 2021 stacks: what Narayanan et al. 2021
// (SC21) describe running, before sequence parallelism and selective recomputation (Korthikanti et
// al. 2022), the distributed optimizer, context parallelism, FP8 (Transformer Engine) and fused
// flash attention existed.
#include "planner/framework.h"

#include <algorithm>

#include "planner/error.h"
#include "planner/format.h"

namespace planner {
namespace {

/// Sets the reason, when asked for, and says "refused".
template <typename Message>
bool no(std::string* reason, Message&& why) {
  if (reason) *reason = why();
  return true;
}

/// What every launcher needs: whole hosts beyond an NVLink domain, whole micro-batches per DP rank,
/// whole layers per stage.
bool refuses_common(const ModelSpec& m, const ClusterProfile& c, const Plan& p,
                    std::string* reason) {
  if (p.dp <= 0 || p.gbs <= 0)
    return no(reason,
              [] { return std::string("the plan needs dp and gbs (give --gpus and gbs=...)"); });
  const long long world = p.gpus();
  if (!c.job_size_ok(world))
    return no(reason, [&] {
      return fmt("tp*pp*dp*cp = {} GPUs is not a whole number of {}-GPU hosts", world,
                 c.gpus_per_node);
    });
  if (p.gbs % (1LL * p.mbs * p.dp) != 0)
    return no(reason, [&] {
      return fmt(
          "gbs={} is not mbs x dp x gradient-accumulation steps: mbs*dp = {} does not "
          "divide it",
          p.gbs, p.mbs * p.dp);
    });
  if (m.encoders.empty() && split_check(m.layers, p) != SplitError::none)
    return no(reason, [&] {
      std::string why;
      split_check(m.layers, p, &why);
      return why;
    });
  return false;
}

/// What the stacks before Megatron-Core had not (each feature's introduction is in the header
/// comment above and at kStack2022): the 2021 ones none of it, Megatron-LM 2022 sequence
/// parallelism, selective recomputation and the distributed optimizer.
bool refuses_legacy(Framework f, const Plan& p, std::string* reason) {
  const char* t = info(f).title;
  const bool y2022 = f == Framework::megatron_2022;
  if (p.sp && !y2022)
    return no(reason, [&] { return fmt("{} has no sequence parallelism; use sp=0", t); });
  if (p.recompute == Recompute::selective && !y2022)
    return no(reason, [&] {
      return fmt(
          "{} recomputes whole layers only (no selective recomputation); use "
          "recompute=full or none",
          t);
    });
  if (p.cp > 1)
    return no(reason, [&] { return fmt("{} has no context parallelism; use cp=1", t); });
  if (is_fp8(p.dtype))
    return no(reason, [&] {
      return fmt("{} has no {} training; use dtype=fp16 or bf16", t, to_string(p.dtype));
    });
  if (p.attention == AttentionKernel::flash)
    return no(reason, [&] { return fmt("{} has no fused flash attention; use attn=unfused", t); });
  if (p.tp_comm_overlap.value_or(false) || p.overlap_param_gather.value_or(false))
    return no(reason, [&] {
      return fmt(
          "{} has neither Transformer Engine's TP-communication overlap nor the parameter "
          "gather's; use tp_comm_overlap=0 and overlap_param_gather=0",
          t);
    });
  if (p.offloads() || p.grad_compression != GradCompression::none || p.zeropp ||
      p.offload_activation_layers > 0 || p.grad_reduce_bf16 || p.loss_fusion != LossFusion::none ||
      p.recompute_layers > 0)
    return no(reason, [&] {
      return fmt(
          "{} is kept to predict the published runs of its time, which offloaded and compressed "
          "nothing, reduced fp32 gradients under bf16, ran the unfused loss and recomputed every "
          "layer or none; plan these with --framework megatron or deepspeed",
          t);
    });
  if (p.order != RankOrder::tp_cp_dp_pp)
    return no(reason,
              [&] { return fmt("{} lays ranks out TP, DP, PP only; use order=tp-cp-dp-pp", t); });
  if (f == Framework::deepspeed_2021) return false;
  if (p.overlap_grad_reduce.value_or(false))  // --overlap-grad-reduce came in 2023 (28766b55fb)
    return no(reason, [&] {
      return fmt("{} reduces the gradients after the backward; use overlap_grad_reduce=0", t);
    });
  if (p.split != PipelineSplit::even)
    return no(reason, [&] {
      return fmt("{} splits the layers evenly over the stages; use split=even", t);
    });
  if (p.zero >= (y2022 ? 2 : 1))
    return no(reason, [&] {
      return y2022 ? fmt("{} shards the optimizer states only (the distributed optimizer, "
                         "zero=1); use zero<=1",
                         t)
                   : fmt("{} has no distributed optimizer (ZeRO-1); use zero=0 or --framework "
                         "deepspeed-2021",
                         t);
    });
  // arguments.py at 5ac5571ba0 (2021) and fc7f4f035a: "pipeline-model-parallel size should be
  // greater than 2 with interleaved schedule".
  if (p.vpp > 1 && p.pp <= 2)
    return no(reason, [&] {
      return fmt("{} runs the interleaved schedule (vpp={}) only with pp > 2, got pp={}", t, p.vpp,
                 p.pp);
    });
  return false;
}

bool refuses_megatron(Framework f, const ClusterProfile& c, const Plan& p, std::string* reason) {
  const char* commit = info(f).version;
  // validate_args at d98e8a64 (arguments.py): "Transformer Engine cross entropy loss fusion is
  // disabled due to stability issues".
  if (p.loss_fusion == LossFusion::te)
    return no(reason, [&] {
      return fmt(
          "Megatron-LM at {} refuses Transformer Engine's fused cross entropy "
          "(--cross-entropy-fusion-impl te: \"disabled due to stability issues\"); use "
          "loss_fusion=native or none",
          commit);
    });
  // validate_args: the overlaps' prerequisites (tp-comm-overlap 1441-1442, overlap-param-gather
  // 1024-1029).
  if (p.tp_comm_overlap.value_or(false) && !(p.sp && p.tp > 1))
    return no(reason, [] {
      return std::string(
          "Megatron-LM's --tp-comm-overlap requires --sequence-parallel (sp=1, tp > 1); use "
          "tp_comm_overlap=0");
    });
  if (p.overlap_param_gather.value_or(false) && (p.zero != 1 || !overlaps_of(p, c).grad_reduce))
    return no(reason, [] {
      return std::string(
          "Megatron-LM's --overlap-param-gather requires --use-distributed-optimizer (zero=1) and "
          "--overlap-grad-reduce; use overlap_param_gather=0");
    });
  // zero=2 and 3 are Megatron FSDP (--use-megatron-fsdp with --data-parallel-sharding-strategy
  // optim_grads or optim_grads_params, arguments.py at d98e8a64). Its documentation
  // (docs/user-guide/features/megatron_fsdp.md) names no pipeline support and the published
  // FSDP recipes run pp=1, so a pipelined FSDP plan is not offered.
  if (p.zero >= 2 && p.pp > 1)
    return no(reason, [&] {
      return fmt(
          "Megatron-LM runs zero={} as Megatron FSDP, planned here only without pipeline "
          "parallelism (its documentation at {:.8} names no pipeline support); use zero<=1 or "
          "pp=1",
          p.zero, commit);
    });
  // --use-tp-pp-dp-mapping: ModelParallelConfig.use_tp_pp_dp_mapping at d98e8a64 ("Make sure EP
  // and CP aren't used with this option enabled"; initialize_model_parallel's order 'tp-pp-dp'),
  // and Megatron-Bridge's Megatron FSDP guide: not supported with Megatron FSDP.
  if (p.order == RankOrder::tp_pp_dp && p.cp > 1)
    return no(reason, [&] {
      return fmt(
          "Megatron-LM's --use-tp-pp-dp-mapping (order=tp-pp-dp) runs without context "
          "parallelism (its order has no cp), got cp={}; use cp=1 or order=tp-cp-dp-pp",
          p.cp);
    });
  if (p.order == RankOrder::tp_pp_dp && p.zero >= 2)
    return no(reason, [&] {
      return fmt(
          "Megatron-LM's --use-tp-pp-dp-mapping (order=tp-pp-dp) is not supported with Megatron "
          "FSDP (zero={}); use zero<=1 or order=tp-cp-dp-pp",
          p.zero);
    });
  // Offload: the optimizer only, to host memory (--optimizer-cpu-offload), which
  // validate_args (1883-1892) runs only with --use-precision-aware-optimizer, itself only with
  // the distributed optimizer (megatron/core/optimizer/__init__.py 1057-1060).
  if (p.grad_compression != GradCompression::none)
    return no(reason, [] {
      return std::string(
          "Megatron-LM has no compressed optimizer (1-bit Adam, 0/1 Adam and 1-bit LAMB are "
          "DeepSpeed's); use grad_compression=none or --framework deepspeed");
    });
  if (p.zeropp)
    return no(reason, [] {
      return std::string(
          "ZeRO++ (zeropp=1) is DeepSpeed's ZeRO-3; Megatron FSDP has no quantized gathers; use "
          "zeropp=0 or --framework deepspeed");
    });
  // TransformerConfig.__post_init__ at d98e8a64: "Delayed scaling does not support moe_act and
  // layernorm recompute for fp8".
  if (p.recompute == Recompute::selective_moe && p.dtype == Dtype::fp8 &&
      p.fp8_recipe == Fp8Recipe::delayed)
    return no(reason, [&] {
      return fmt(
          "Megatron-LM at {} refuses recompute=selective_moe (--recompute-modules moe_act "
          "layernorm) under delayed-scaling FP8; use fp8_recipe=tensorwise or another recompute",
          commit);
    });
  // TransformerConfig.__post_init__ at d98e8a64: "Currently there is no support for Pipeline
  // parallelism with CPU offloading"; "CPU offloading does not work when activation
  // recomputation is enabled".
  if (p.offload_activation_layers > 0 && (p.pp > 1 || p.recompute != Recompute::none))
    return no(reason, [&] {
      return fmt(
          "Megatron-LM's --cpu-offloading-num-layers runs without pipeline parallelism and "
          "without recomputation, got pp={} and recompute={}",
          p.pp, to_string(p.recompute));
    });
  if (p.offload_params != OffloadDevice::none)
    return no(reason, [] {
      return std::string(
          "Megatron-LM offloads the optimizer, not the parameters (--optimizer-cpu-offload); use "
          "offload_params=none or --framework deepspeed");
    });
  if (p.offload_optimizer == OffloadDevice::nvme)
    return no(reason, [] {
      return std::string(
          "Megatron-LM offloads the optimizer to host memory only; use offload_optimizer=cpu or "
          "--framework deepspeed for NVMe");
    });
  if (p.offload_optimizer != OffloadDevice::none && p.zero != 1)
    return no(reason, [&] {
      return fmt(
          "Megatron-LM's --optimizer-cpu-offload needs --use-precision-aware-optimizer, which "
          "needs the distributed optimizer (zero=1), got zero={}",
          p.zero);
    });
  if (p.schedule == Schedule::gpipe && p.pp > 1)
    return no(reason, [] {
      return std::string(
          "Megatron-LM has no GPipe schedule (its pipelines run 1F1B); use schedule=1f1b");
    });
  if (p.schedule != Schedule::gpipe && p.schedule != Schedule::one_f_one_b &&
      p.schedule != Schedule::interleaved)
    return no(reason, [&] {
      return fmt("{} has no '{}' schedule",
                 f == Framework::megatron ? fmt("Megatron-LM at commit {}", commit)
                                          : std::string(info(f).title),
                 to_string(p.schedule));
    });
  if (p.vpp <= 1) return false;
  // validate_args 1000-1010: with a virtual pipeline, pp > 1 while P2P communication overlaps
  // compute (overlap_p2p_comm, the default; the launch files keep it), pp > 2 only without it.
  // So pp = 2 interleaves (at 307dcf37, mid-2024, it needed pp > 2).
  if (f == Framework::megatron && p.pp < 2)
    return no(reason, [&] {
      return fmt("Megatron-LM runs the interleaved schedule (vpp={}) only with pp > 1, got pp={}",
                 p.vpp, p.pp);
    });
  // megatron/core/pipeline_parallel/schedules.py 1160-1179: micro-batches in groups of
  // microbatch_group_size_per_vp_stage (default pp), at least one group, the last one whole or at
  // least pp; with the default, a multiple of pp.
  if (p.microbatches() % p.pp != 0)
    return no(reason, [&] {
      return fmt(
          "Megatron-LM's interleaved schedule needs the micro-batches ({}) to be a "
          "multiple of pp={}",
          p.microbatches(), p.pp);
    });
  return false;
}

bool refuses_deepspeed(const Plan& p, std::string* reason) {
  // GPTModelPipe checkpoints every --checkpoint-num-layers layers with --checkpoint-activations
  // (configs/frameworks/megatron-deepspeed-args.txt), the way mds_memory_group emits it.
  if (p.recompute_layers > 0)
    return no(reason, [] {
      return std::string(
          "recompute_layers is Megatron-LM's --recompute-method block; Megatron-DeepSpeed's "
          "pipeline model checkpoints every layer with --checkpoint-activations; use "
          "recompute_layers=0 or --framework megatron");
    });
  // Megatron-DeepSpeed's loss is Megatron's 2021 vocab-parallel cross entropy, without a fused
  // variant (no --cross-entropy-loss-fusion in configs/frameworks/megatron-deepspeed-args.txt).
  if (p.loss_fusion != LossFusion::none)
    return no(reason, [] {
      return std::string(
          "loss_fusion is Megatron-LM's --cross-entropy-loss-fusion; Megatron-DeepSpeed has no "
          "fused loss; use loss_fusion=none or --framework megatron");
    });
  // Its bf16 optimizer accumulates fp32 gradients per partition whatever the wire type
  // (communication_data_type), which grad_reduce_bf16's memory would not describe.
  if (p.grad_reduce_bf16)
    return no(reason, [] {
      return std::string(
          "grad_reduce_bf16=1 is Megatron-LM's --grad-reduce-in-bf16 (bf16 gradient buffers); "
          "DeepSpeed's bf16 optimizer keeps fp32 gradient partitions; use grad_reduce_bf16=0 or "
          "--framework megatron");
    });
  // deepspeed/runtime/pipe/engine.py: "ZeRO-2 and ZeRO-3 are incompatible with pipeline
  // parallelism".
  if (p.zero >= 2 && p.pp > 1)
    return no(reason, [&] {
      return fmt(
          "DeepSpeed's pipeline engine refuses zero={} with pp={} (ZeRO-2 and ZeRO-3 are "
          "incompatible with pipeline parallelism); use zero<=1 or pp=1",
          p.zero, p.pp);
    });
  // engine.py _do_optimizer_sanity_check at edaa72212: bf16 without ZeRO in the pipeline engine
  // is BF16_Optimizer, which shards the fp32 master weights and Adam states over the DP ranks
  // whatever the stage says, as zero=1 prices them (one DP rank: nothing to shard).
  if (p.zero == 0 && p.pp > 1 && p.dtype == Dtype::bf16 && p.weight_replicas() > 1)
    return no(reason, [] {
      return std::string(
          "DeepSpeed's pipeline engine trains bf16 with its BF16_Optimizer, which shards the "
          "optimizer states over the DP ranks as ZeRO-1 does whatever zero_optimization.stage "
          "says; use zero=1");
    });
  // deepspeed/runtime/zero/offload_config.py (configs/frameworks/deepspeed-config-keys.txt):
  // NVMe offload of the optimizer only with ZeRO-3, and a partial ratio only with ZeRO-3.
  if (p.offload_optimizer == OffloadDevice::nvme && p.zero != 3)
    return no(reason, [&] {
      return fmt("DeepSpeed offloads the optimizer to NVMe only with ZeRO-3, got zero={}", p.zero);
    });
  if (p.offload_optimizer != OffloadDevice::none && p.offload_pct < 100 && p.zero != 3)
    return no(reason, [&] {
      return fmt(
          "DeepSpeed's offload_optimizer.ratio (offload_pct={}) applies to ZeRO-3 only, got "
          "zero={}; use offload_pct=100",
          p.offload_pct, p.zero);
    });
  // The compressed optimizers are built from ds_config's optimizer section, which DeepSpeed
  // ignores when Megatron-DeepSpeed (tp > 1 or pp > 1) passes its own optimizer (engine.py,
  // _configure_optimizer).
  if (p.grad_compression != GradCompression::none && (p.tp > 1 || p.pp > 1))
    return no(reason, [] {
      return std::string(
          "DeepSpeed builds its compressed optimizers from ds_config only without "
          "Megatron-DeepSpeed, which passes its own optimizer; use tp=1 and pp=1 or "
          "grad_compression=none");
    });
  if (p.vpp > 1 || p.schedule == Schedule::interleaved)
    return no(reason, [] {
      return std::string(
          "DeepSpeed's pipeline engine has no interleaved schedule; use vpp=1 (schedule=1f1b)");
    });
  // Megatron-DeepSpeed has no flag for the pipeline's partition method
  // (configs/frameworks/megatron-deepspeed-args.txt): the pinned version splits the transformer
  // layers evenly (BLOOM's type:transformer|embedding came from its own fork).
  if (p.split != PipelineSplit::even)
    return no(reason, [] {
      return std::string(
          "Megatron-DeepSpeed has no flag for an uneven pipeline split (its partition_method); "
          "use split=even");
    });
  if (p.schedule != Schedule::one_f_one_b && !(p.schedule == Schedule::gpipe && p.pp == 1))
    return no(reason, [&] {
      return fmt(
          "DeepSpeed's pipeline engine runs its own 1F1B schedule, not '{}'; use "
          "schedule=1f1b",
          to_string(p.schedule));
    });
  if (p.offload_activation_layers > 0)
    return no(reason, [] {
      return std::string(
          "DeepSpeed offloads activation checkpoints (cpu_checkpointing), not a layer's stored "
          "activations; use offload_activations=0 or --framework megatron");
    });
  // Megatron-DeepSpeed builds DeepSpeed's PipeModelDataParallelTopology (runtime/pipe/
  // topology.py: axes pipe, data, model, the last innermost): TP, then DP, then the stages.
  if (p.order != RankOrder::tp_cp_dp_pp)
    return no(reason, [] {
      return std::string(
          "Megatron-DeepSpeed's PipeModelDataParallelTopology lays ranks out TP, DP, PP (the "
          "pipeline outermost); use order=tp-cp-dp-pp");
    });
  if (p.cp > 1)
    return no(reason, [] {
      return std::string(
          "Megatron-DeepSpeed has no context parallelism (cp > 1); its "
          "--ds-sequence-parallel-size is DeepSpeed-Ulysses, another scheme");
    });
  if (is_fp8(p.dtype))
    return no(reason, [&] {
      return fmt("the DeepSpeed config has no {} mode; use dtype=bf16", to_string(p.dtype));
    });
  if (p.tp_comm_overlap.value_or(false))
    return no(reason, [] {
      return std::string(
          "Megatron-DeepSpeed has no --tp-comm-overlap; use tp_comm_overlap=0 or --framework "
          "megatron");
    });
  if (p.overlap_param_gather.value_or(false))
    return no(reason, [] {
      return std::string(
          "DeepSpeed's ZeRO-1/2 gather the parameters inside the optimizer step, not beside the "
          "next forward; use overlap_param_gather=0 or --framework megatron");
    });
  return false;
}

/// torchtitan at b5bcd76c (configs/frameworks/torchtitan-config-fields.txt; the files named are
/// under torchtitan/ at that commit).
bool refuses_torchtitan(const Plan& p, std::string* reason) {
  // Its FullAC wraps every layer (torchtitan/distributed/activation_checkpoint.py).
  if (p.recompute_layers > 0)
    return no(reason, [] {
      return std::string(
          "recompute_layers is Megatron-LM's --recompute-method block; torchtitan's full "
          "activation checkpointing wraps every layer; use recompute_layers=0 or --framework "
          "megatron");
    });
  // Its float8 linears are torchao's under torch.compile (Float8LinearConverter), not Transformer
  // Engine's recipes.
  if (p.fp8_recipe != Fp8Recipe::delayed)
    return no(reason, [] {
      return std::string(
          "fp8_recipe is Megatron-LM's --fp8-recipe (Transformer Engine's scaling); torchtitan's "
          "float8 linears are torchao's; use --framework megatron");
    });
  // Its loss is its own (SoftwareStack::loss, chunked_fp32), chosen by its recipes, not a flag.
  if (p.loss_fusion != LossFusion::none)
    return no(reason, [] {
      return std::string(
          "loss_fusion is Megatron-LM's --cross-entropy-loss-fusion; torchtitan runs its own "
          "chunked loss; use loss_fusion=none or --framework megatron");
    });
  // FSDP2's MixedPrecisionPolicy(reduce_dtype) sets the wire type only: the sharded gradients
  // keep the fp32 parameters' dtype.
  if (p.grad_reduce_bf16)
    return no(reason, [] {
      return std::string(
          "grad_reduce_bf16=1 is Megatron-LM's --grad-reduce-in-bf16 (bf16 gradient buffers); "
          "torchtitan's training.mixed_precision_reduce changes only FSDP2's wire type; use "
          "grad_reduce_bf16=0 or --framework megatron");
    });
  // ParallelismConfig: data_parallel_replicate_degree (DDP) and data_parallel_shard_degree
  // (FSDP2's fully_shard: parameters, gradients and optimizer states sharded together).
  if (p.zero == 1 || p.zero == 2)
    return no(reason, [&] {
      return fmt(
          "torchtitan replicates (DDP, zero=0) or fully shards parameters, gradients and "
          "optimizer states together (FSDP2, zero=3); it has no zero={}",
          p.zero);
    });
  // ParallelDims folds cp into the FSDP mesh ("when cp is used, FSDP is also applied"): the
  // parameters are sharded over the context-parallel ranks, which zero=0 does not price.
  if (p.zero == 0 && p.cp > 1)
    return no(reason, [] {
      return std::string(
          "torchtitan shards the parameters over the context-parallel ranks (FSDP2 over dp x cp); "
          "use zero=3 with cp > 1");
    });
  if (p.dtype == Dtype::fp16 || p.dtype == Dtype::tf32)
    return no(reason, [&] {
      return fmt(
          "torchtitan trains in bf16 mixed precision (training.mixed_precision_param), float8 "
          "linears (Float8LinearConverter) or MXFP8 linears (MXFP8LinearConverter), not {}; use "
          "dtype=bf16, fp8 or mxfp8",
          to_string(p.dtype));
    });
  // activation_checkpoint.py: SelectiveAC saves the outputs of compute and communication ops
  // and recomputes every second matmul, not the attention core that recompute=selective prices.
  if (p.recompute == Recompute::selective)
    return no(reason, [] {
      return std::string(
          "torchtitan's SelectiveAC recomputes every second matmul and keeps the attention "
          "outputs, not the attention core that recompute=selective prices; use recompute=none "
          "or full (FullAC)");
    });
  if (p.attention == AttentionKernel::unfused)
    return no(reason, [] {
      return std::string(
          "torchtitan's language models run FlexAttention or varlen attention "
          "(models/common/config_utils.py); use attn=flash");
    });
  if (p.schedule == Schedule::zb_h1 && p.pp > 1)
    return no(reason, [] {
      return std::string(
          "torchtitan's zero-bubble schedules are PyTorch's looped InterleavedZeroBubble and "
          "ZBVZeroBubble, not ZB-H1; use schedule=1f1b, gpipe or interleaved");
    });
  if (p.order != RankOrder::tp_cp_dp_pp)
    return no(reason, [] {
      return std::string(
          "torchtitan's device mesh puts pp outermost, then dp, cp and tp (ParallelDims); use "
          "order=tp-cp-dp-pp");
    });
  if (p.offloads() || p.offload_activation_layers > 0)
    return no(reason, [] {
      return std::string(
          "torchtitan's training.enable_cpu_offload moves FSDP2's parameters, gradients and "
          "optimizer states together, which the planner does not price; use offload_optimizer="
          "none and offload_params=none");
    });
  if (p.grad_compression != GradCompression::none || p.zeropp)
    return no(reason, [] {
      return std::string(
          "torchtitan has no compressed optimizer or quantized FSDP gathers (1-bit Adam and "
          "ZeRO++ are DeepSpeed's); use grad_compression=none and zeropp=0");
    });
  if (p.tp_comm_overlap.value_or(false) && p.tp < 2)
    return no(reason, [] { return std::string("async TP (tp_comm_overlap=1) needs tp > 1"); });
  if (p.overlap_param_gather.value_or(false) && p.zero != 3)
    return no(reason, [] {
      return std::string(
          "torchtitan prefetches parameter gathers under FSDP2 only (zero=3); use "
          "overlap_param_gather=0");
    });
  return false;
}

}  // namespace

const char* to_string(Framework f) { return info(f).name; }

std::optional<Framework> framework_named(std::string_view name) {
  for (const FrameworkInfo& i : kFrameworkInfo)
    if (name == i.name) return i.id;
  return std::nullopt;
}

std::string framework_names(bool emitting) {
  std::string out;
  auto list = [&](const auto& frameworks) {
    for (size_t i = 0; i < frameworks.size(); ++i)
      out += std::string(i == 0                       ? ""
                         : i + 1 == frameworks.size() ? " or "
                                                      : ", ") +
             to_string(frameworks[i]);
  };
  emitting ? list(kCurrentFrameworks) : list(kFrameworks);
  return out;
}

Framework parse_framework(const std::string& text, const std::string& option, bool emitting) {
  const std::optional<Framework> f = framework_named(text);
  if (!f)
    throw InputError(
        "", 0, option,
        "unknown framework '" + text + "' (expected " + framework_names(emitting) + ")");
  if (emitting && !info(*f).emits)
    throw InputError("", 0, option,
                     std::string("no launch files for ") + info(*f).title +
                         ": they are written for " + framework_names(true));
  return *f;
}

bool refuses(Framework f, const ModelSpec& m, const ClusterProfile& c, const Plan& p,
             std::string* reason) {
  if (refuses_common(m, c, p, reason)) return true;
  // DeepSpeed's MoE layer (ep_size) and torchtitan's expert parallelism exist, but their launch
  // files are not written for it here: the experts are planned on Megatron-Core's stack.
  if (m.moe.any() && f != Framework::megatron)
    return no(reason, [&] {
      return fmt(
          "{} is not planned for a model with experts here: expert parallelism is "
          "planned and emitted for Megatron-LM (--framework megatron)",
          info(f).title);
    });
  if (m.mtp_layers > 0 && f != Framework::megatron)
    return no(reason, [&] {
      return fmt(
          "{} has no multi-token-prediction modules here: they are planned and emitted for "
          "Megatron-LM (--framework megatron, --mtp-num-layers); --mtp-layers 0 plans without "
          "them",
          info(f).title);
    });
  if (is_2021(f) || f == Framework::megatron_2022) {
    if (refuses_legacy(f, p, reason)) return true;
    // The model code of those stacks: multi-head attention and a GeLU MLP only. Megatron-LM added
    // grouped-query attention on 2023-06-05 (6902465a83, --group-query-attention) and SwiGLU on
    // 2023-04-01 (2cc3dac719, --swiglu), after both (2021-03 and 2022-09).
    if (m.kv_heads != m.heads)
      return no(reason, [&] {
        return fmt(
            "{} has no grouped-query attention ({} query groups for {} heads; Megatron-LM added "
            "it in 2023): plan the model with --framework megatron",
            info(f).title, m.kv_heads, m.heads);
      });
    if (m.swiglu)
      return no(reason, [&] {
        return fmt(
            "{} has no SwiGLU MLP (Megatron-LM added --swiglu in 2023): plan the model with "
            "--framework megatron",
            info(f).title);
      });
  }
  if (f == Framework::torchtitan ? refuses_torchtitan(p, reason)
      : is_megatron(f)           ? refuses_megatron(f, c, p, reason)
                                 : refuses_deepspeed(p, reason))
    return true;
  if (p.split == PipelineSplit::even || !m.encoders.empty()) return false;
  const std::optional<std::string> why = why_not_split(f, m, p, stage_split(m, p));
  if (why && reason) *reason = *why;
  return why.has_value();
}

std::optional<std::string> why_not(Framework f, const ModelSpec& m, const ClusterProfile& c,
                                   const Plan& p) {
  std::string reason;
  if (refuses(f, m, c, p, &reason)) return reason;
  return std::nullopt;
}

StageSplit stage_split(const ModelSpec& m, const Plan& p) {
  StageSplit s;
  if (p.split == PipelineSplit::short_ends)
    s.first_stage_layers = s.last_stage_layers = short_end_layers(m.layers, p.pp, p.vpp);
  if (p.split == PipelineSplit::embed_loss) s.account_for_embedding = s.account_for_loss = true;
  if (p.split == PipelineSplit::short_last)
    s.last_stage_layers = short_last_layers(m.layers, p.pp, p.vpp);
  return s;
}

std::optional<std::string> why_not_split(Framework f, const ModelSpec& m, const Plan& p,
                                         const StageSplit& s) {
  if (s.even()) return std::nullopt;
  // torchtitan weighs the embedding and the output as layers of their own
  // (parallelism.pipeline_parallel_first/last_stage_less_layers, distributed/pipeline_parallel.py
  // generate_llm_fqn_per_model_part): the plan's embed_loss split when the layers they make
  // divide into whole stages; not first and last stage counts.
  if (f == Framework::torchtitan) {
    if (s.first_stage_layers > 0 || s.last_stage_layers > 0)
      return std::string(
          "torchtitan weighs the embedding and the output as one layer each (split=embed_loss), "
          "it takes no first and last stage layer counts");
    const int counted = m.layers + int(s.account_for_embedding) + int(s.account_for_loss);
    if (counted % (p.pp * std::max(p.vpp, 1)) != 0)
      return fmt(
          "torchtitan's split counts {} layers (the embedding and the output as one each), which "
          "do not divide into pp x vpp = {} equal stages",
          counted, p.pp * std::max(p.vpp, 1));
    return std::nullopt;
  }
  if (f != Framework::megatron)
    return fmt("{} splits the layers evenly over the pipeline stages only", info(f).title);
  if (s.first_stage_layers < 0 || s.last_stage_layers < 0)
    return fmt("a stage's layer count must not be negative, got first {} and last {}",
               s.first_stage_layers, s.last_stage_layers);
  if (p.pp < 2) return fmt("pp={}: one pipeline stage, nothing to split unevenly", p.pp);
  const int vpp = std::max(p.vpp, 1);
  // megatron/core/transformer/transformer_config.py (__post_init__) at d98e8a64, 2229-2239.
  if ((s.first_stage_layers > 0 || s.last_stage_layers > 0) &&
      (s.account_for_embedding || s.account_for_loss))
    return std::string(
        "Megatron-LM takes the first and last stages' layer counts or the account-for-embedding/"
        "loss split, not both");
  if (s.first_stage_layers == 0 && s.last_stage_layers == 0) {  // 2368-2415
    const int counted = m.layers + int(s.account_for_embedding) + int(s.account_for_loss);
    if (counted % p.pp != 0 || (counted / p.pp) % vpp != 0)
      return fmt(
          "Megatron-LM's account-for-embedding/loss split needs the {} layers it counts to "
          "divide into pp={} stages of a multiple of vpp={}",
          counted, p.pp, vpp);
    return std::nullopt;
  }
  int middle_layers = m.layers, middle_stages = p.pp;  // 2295-2366
  for (const int n : {s.first_stage_layers, s.last_stage_layers}) {
    if (n == 0) continue;
    if (n % vpp != 0)
      return fmt("Megatron-LM needs an edge stage's {} layers to be a multiple of vpp={}", n, vpp);
    middle_layers -= n;
    --middle_stages;
  }
  if (middle_layers < 0 || (middle_layers > 0) != (middle_stages > 0))
    return fmt("{} middle layers remain for {} middle stages (first {}, last {}, {} layers)",
               middle_layers, middle_stages, s.first_stage_layers, s.last_stage_layers, m.layers);
  if (middle_stages > 0 &&
      (middle_layers % middle_stages != 0 || (middle_layers / middle_stages) % vpp != 0))
    return fmt(
        "Megatron-LM needs the {} middle layers to divide into {} stages of a multiple of vpp={}",
        middle_layers, middle_stages, vpp);
  return std::nullopt;
}

SoftwareStack execution_stack(Framework f, const ClusterProfile& c, std::string* note) {
  const FrameworkInfo& fw = info(f);
  if (note) note->clear();
  if (!c.legacy_software) return fw.stack;
  SoftwareStack s = *c.legacy_software;
  s.loss = fw.stack.loss;  // the framework's code, not the hardware's
  s.interleaved_all_warmup = fw.stack.interleaved_all_warmup;
  s.deepspeed_pipeline_engine = fw.stack.deepspeed_pipeline_engine;
  s.fp8_weight_cache = fw.stack.fp8_weight_cache;
  s.transformer_engine = fw.stack.transformer_engine;
  s.moe_layer_host_s = fw.stack.moe_layer_host_s;
  std::string off;
  if (!fw.tp_comm_overlap && s.overlap_tp_comm) s.overlap_tp_comm = false, off = "overlap_tp_comm";
  if (!fw.param_gather_overlap && s.overlap_param_gather)
    s.overlap_param_gather = false,
    off += std::string(off.empty() ? "" : " and ") + "overlap_param_gather";
  if (note && !off.empty())
    *note = std::string(fw.title) + " runs without the profile's software." + off +
            ": predicted without " + (off.find(" and ") == std::string::npos ? "it" : "them");
  return s;
}

}  // namespace planner
