#include <cstdio>
#include <string>

#include "planner/estimate.h"
#include "planner/format.h"
#include "planner/names.h"

namespace planner {

const char* to_string(Rejection r) {
  switch (r) {
    case Rejection::none:
      return "ranked";
    case Rejection::gpus_mismatch:
      return "GPU count mismatch";
    case Rejection::tp_not_dividing_heads:
      return "tp not dividing heads";
    case Rejection::tp_across_nodes:
      return "tp across nodes";
    case Rejection::pp_not_dividing_layers:
      return "pp not dividing layers";
    case Rejection::cp_not_dividing_seq:
      return "cp not dividing seq";
    case Rejection::batch_not_divisible:
      return "batch not divisible";
    case Rejection::vpp_invalid:
      return "vpp not dividing stage layers";
    case Rejection::interleave_microbatches:
      return "microbatches not multiple of pp";
    case Rejection::sp_without_tp:
      return "sp without tp";
    case Rejection::zero_invalid:
      return "zero stage not applicable";
    case Rejection::framework_refuses:
      return "framework cannot run";
    case Rejection::dtype_unsupported:
      return "precision unsupported";
    case Rejection::schedule_invalid:
      return "schedule cannot complete";
    case Rejection::out_of_memory:
      return "out of memory";
    case Rejection::offload_invalid:
      return "offload not applicable";
    case Rejection::host_out_of_memory:
      return "out of host memory";
    case Rejection::experts_invalid:
      return "ep/etp not fitting";
    case Rejection::recompute_invalid:
      return "recompute_layers not applicable";
    case Rejection::count_:
      break;
  }
  return "?";
}

namespace {

/// The message is built only when the caller asks for it: the search checks millions of plans.
template <typename Message>
Rejection fail(Rejection r, std::string* reason, Message&& why) {
  if (reason) *reason = why();
  return r;
}

std::string str(int v) { return std::to_string(v); }

}  // namespace

std::string tp_heads_message(int tp, int heads, int kv_heads) {
  // heads is a multiple of kv_heads (the model check), so a tp that fails heads fails kv_heads.
  if (heads % tp != 0 && heads != kv_heads)
    return "tp=" + str(tp) + " does not divide heads=" + str(heads) +
           " or kv_heads=" + str(kv_heads);
  return "tp=" + str(tp) + " does not divide " + (heads % tp != 0 ? "heads=" : "kv_heads=") +
         str(heads % tp != 0 ? heads : kv_heads);
}

namespace {

/// cp must divide the sequence in 2 x cp chunks; gbs must be whole micro-batches per DP rank.
Rejection check_cp_batch(const ModelSpec& m, const Plan& p, std::string* reason) {
  if (p.cp > 1 && m.seq_len % (2 * p.cp) != 0)
    return fail(Rejection::cp_not_dividing_seq, reason, [&] {
      return std::string("seq_len=" + str(m.seq_len) +
                         " is not divisible by 2*cp=" + str(2 * p.cp));
    });
  if (p.gbs <= 0 || p.gbs % (1LL * p.mbs * p.dp) != 0)
    return fail(Rejection::batch_not_divisible, reason, [&] {
      return std::string("gbs=" + str(p.gbs) +
                         " is not a multiple of mbs*dp=" + std::to_string(1LL * p.mbs * p.dp));
    });
  return Rejection::none;
}

/// The framework's own refusals (framework.h). With none named (the cost model alone), only the
/// limit both frameworks share: ZeRO-2/3 shard gradients across the micro-batches of a pipeline,
/// which neither Megatron-LM nor DeepSpeed's pipeline engine does.
Rejection check_framework(const ModelSpec& m, const ClusterProfile& c, const Plan& p,
                          const EstimateOptions& o, std::string* reason) {
  if (o.framework)
    return refuses(*o.framework, m, c, p, reason) ? Rejection::framework_refuses : Rejection::none;
  if (p.zero >= 2 && p.pp > 1)
    return fail(Rejection::zero_invalid, reason, [&] {
      return std::string("ZeRO-" + str(p.zero) +
                         " with pipeline parallelism is not supported by "
                         "Megatron-LM or DeepSpeed (use zero<=1 with pp>1)");
    });
  return Rejection::none;
}

/// What offload needs of the plan and the profile, whatever the framework: ZeRO's optimizer
/// (the offloaded one is ZeRO's or Megatron's distributed optimizer), ZeRO-3 for parameters, a
/// host block, and a stated NVMe bandwidth for NVMe.
Rejection check_offload(const ClusterProfile& c, const Plan& p, std::string* reason) {
  auto no = [&](auto&& why) { return fail(Rejection::offload_invalid, reason, why); };
  if (p.offload_activation_layers > 0 && !c.host.present())
    return no([&] {
      return std::string("the profile ") + c.name +
             " has no host block (host.memory_GiB, memory_bandwidth_GBps, link_GBps): activation "
             "offload is not planned on it";
    });
  if (!p.offloads()) return Rejection::none;
  if (!c.host.present())
    return no([&] {
      return std::string("the profile ") + c.name +
             " has no host block (host.memory_GiB, memory_bandwidth_GBps, link_GBps): offload is "
             "not planned on it";
    });
  if ((p.offload_optimizer == OffloadDevice::nvme || p.offload_params == OffloadDevice::nvme) &&
      c.host.nvme_Bps <= 0)
    return no([&] {
      return std::string("the profile ") + c.name +
             " states no NVMe bandwidth (host.nvme_GBps): NVMe offload is not planned on it";
    });
  if (p.offload_optimizer != OffloadDevice::none && p.zero == 0)
    return no([] {
      return std::string(
          "offload_optimizer needs zero>=1: the offloaded optimizer is ZeRO's (DeepSpeed) or the "
          "distributed optimizer (Megatron-LM)");
    });
  if (p.offload_params != OffloadDevice::none && p.zero != 3)
    return no([] {
      return std::string("offload_params needs zero=3: only partitioned parameters are offloaded");
    });
  return Rejection::none;
}

/// Expert parallelism: a model with experts, ep dividing them, etp their MLP width, and the
/// expert groups folding into a stage's ranks (Megatron-Core parallel_state: tp x cp x dp must be
/// a multiple of etp x ep); MoE with TP needs sequence parallelism (MoELayer.forward raises
/// without it at d98e8a64).
Rejection check_experts(const ModelSpec& m, const Plan& p, std::string* reason) {
  auto no = [&](auto&& why) { return fail(Rejection::experts_invalid, reason, why); };
  const bool overlap = p.ep_comm_overlap.value_or(false);
  if (!m.moe.any()) {
    if (p.ep > 1 || p.etp > 1)
      return no([&] { return fmt("ep={} etp={} need a model with experts", p.ep, p.etp); });
    if (overlap || p.dispatcher != Dispatcher::alltoall ||
        p.recompute == Recompute::selective_moe || p.capacity_factor > 0 ||
        p.pad_to_capacity.value_or(false) || p.cuda_graphs.value_or(false))
      return no(
          [] { return fmt("the expert knobs ({}) need a model with experts", kExpertKnobs); });
    return Rejection::none;
  }
  // TransformerConfig.__post_init__ at d98e8a64: the overlap needs expert parallelism, vpp with
  // pp > 1, and no full recomputation.
  if (overlap && (p.ep == 1 || (p.pp > 1 && p.vpp == 1) || p.recompute == Recompute::full ||
                  p.dtype == Dtype::tf32))
    return no([] {
      return std::string(
          "ep_comm_overlap=1 needs ep > 1, vpp > 1 when pp > 1, no full recomputation and bf16, "
          "fp16, fp8 or mxfp8 (Megatron-Core's TransformerConfig checks)");
    });
  // Combined 1F1B replaces the 1F1B schedules (schedules.py at core_v0.15.0: the no-pipelining
  // and interleaved paths call combined_1f1b); GPipe and ZB-H1 have no forward to pair.
  if (overlap && p.schedule != Schedule::one_f_one_b && p.schedule != Schedule::interleaved)
    return no([&] {
      return fmt(
          "ep_comm_overlap=1 runs Megatron-Core's combined 1F1B: schedule=1f1b or "
          "interleaved, not {}",
          name_of(p.schedule));
    });
  // TransformerConfig.__post_init__ at d98e8a64: "MTP supports at most one layer when enabling
  // overlap_moe_expert_parallel_comm".
  if (overlap && m.mtp_layers > 1)
    return no([&] {
      return fmt("ep_comm_overlap=1 allows at most one MTP module, the model has {}", m.mtp_layers);
    });
  // token_dispatcher.py at d98e8a64: "DeepEP dispatcher requires TPxEP > 1"; the all-gather
  // dispatcher without an etp x ep group moves nothing (it is the all-to-all's plan).
  if (p.dispatcher != Dispatcher::alltoall && 1LL * p.ep * p.etp == 1)
    return no([&] {
      return is_flex(p.dispatcher) ? fmt("dispatcher={} ({}) needs ep x etp > 1",
                                         name_of(p.dispatcher), flex_backend_name(p.dispatcher))
                                   : fmt("dispatcher={} needs ep x etp > 1", name_of(p.dispatcher));
    });
  // TransformerConfig.__post_init__ at d98e8a64: "moe_expert_capacity_factor must be set to use
  // moe_pad_expert_input_to_capacity"; the padding is modelled for the all-to-all dispatcher's
  // drop_and_pad only.
  if (p.pad_to_capacity.value_or(false) &&
      (p.capacity_factor <= 0 || p.dispatcher != Dispatcher::alltoall))
    return no([] {
      return std::string("pad_to_capacity=1 needs a capacity_factor and dispatcher=alltoall");
    });
  // TransformerConfig.__post_init__ at d98e8a64, with cuda_graph_impl transformer_engine and the
  // modules attn, moe_router and moe_preprocess: "full recompute is only supported with full
  // iteration CUDA graph"; "CUDA graphs not supported with CPU offloading"; the all-to-all
  // dispatcher with a capacity factor but no padding to it keeps a device-to-host copy in its
  // preprocessing ("moe_preprocess cuda graph is not supported when there are DtoH copies").
  if (p.cuda_graphs.value_or(false)) {
    if (p.recompute == Recompute::full)
      return no([] {
        return std::string(
            "cuda_graphs=1 (Transformer Engine's scoped graphs) takes no full recomputation "
            "(Megatron-Core: \"full recompute is only supported with full iteration CUDA "
            "graph\")");
      });
    // "attention dropout is not supported with graphed attention recomputation": the launch
    // files keep Megatron-LM's 0.1 attention dropout for a model that is not Llama-style, and
    // recompute=selective recomputes the core attention.
    if (p.recompute == Recompute::selective && !llama_style(m))
      return no([] {
        return std::string(
            "cuda_graphs=1 with recompute=selective needs a model trained without attention "
            "dropout (Megatron-Core: \"attention dropout is not supported with graphed attention "
            "recomputation\"; a model that is not Llama-style keeps Megatron-LM's 0.1)");
      });
    if (p.offload_activation_layers > 0)
      return no([] {
        return std::string(
            "cuda_graphs=1 takes no activation offload (Megatron-Core: \"CUDA "
            "graphs not supported with CPU offloading\")");
      });
    if (p.dispatcher == Dispatcher::alltoall && p.capacity_factor > 0 &&
        !p.pad_to_capacity.value_or(false))
      return no([] {
        return std::string(
            "cuda_graphs=1 with dispatcher=alltoall takes no capacity_factor without "
            "pad_to_capacity=1 (Megatron-Core: the preprocessing's device-to-host copy cannot be "
            "graphed)");
      });
  }
  // TransformerConfig.__post_init__ at d98e8a64: "overlap_moe_expert_parallel_comm is supported
  // with alltoall/flex token dispatcher".
  if (overlap && p.dispatcher == Dispatcher::allgather)
    return no([] {
      return std::string("ep_comm_overlap=1 needs dispatcher alltoall or flex, not allgather");
    });
  if (p.zero >= 2)
    return no([&] {
      return fmt(
          "zero={} with experts is not modelled: Megatron-Core shards the experts' optimizer "
          "states over their expert-data-parallel ranks with its distributed optimizer (zero=1)",
          p.zero);
    });
  if (m.moe.experts % p.ep != 0)
    return no([&] { return fmt("ep={} does not divide the {} experts", p.ep, m.moe.experts); });
  if (m.moe.expert_ffn % p.etp != 0)
    return no([&] {
      return fmt("etp={} does not divide the experts' width {}", p.etp, m.moe.expert_ffn);
    });
  const long long stage = 1LL * p.tp * p.cp * p.dp, group = 1LL * p.ep * p.etp;
  if (stage % group != 0)
    return no([&] {
      return fmt(
          "ep x etp = {} must divide tp x cp x dp = {}: the expert groups fold into the ranks of "
          "a pipeline stage",
          group, stage);
    });
  if (p.ep > 1 && p.order == RankOrder::tp_pp_dp)
    return no([&] {
      return std::string(
          "order=tp-pp-dp does not take expert parallelism (Megatron-Core's "
          "ModelParallelConfig: \"Make sure EP and CP aren't used\" with it)");
    });
  if (p.tp > 1 && !p.sp)
    return no([&] {
      return std::string(
          "a model with experts at tp > 1 needs sp=1 (Megatron-Core's MoE layer "
          "refuses tensor parallelism without sequence parallelism)");
    });
  return Rejection::none;
}

/// Every TP group inside one NVLink domain: the job inside one domain, or groups that tile it.
bool tp_in_domain(const ClusterProfile& c, const Plan& p) {
  return p.tp <= c.nvlink_domain && (p.gpus() <= c.nvlink_domain || c.nvlink_domain % p.tp == 0);
}

}  // namespace

Rejection check_expert_layout(const ModelSpec& m, const Plan& p) {
  return check_experts(m, p, nullptr);
}

std::string dtype_unsupported_message(const Gpu& gpu, Dtype dtype) {
  return gpu.name + " has no " + to_string(dtype) + " tensor-core peak" +
         (dtype != Dtype::mxfp8 ? ""
          : gpu.peak_flops[static_cast<int>(Dtype::fp8)] > 0
              ? " (block-scaled MXFP8 runs on Blackwell; use dtype=fp8)"
              : " (block-scaled MXFP8 runs on Blackwell)");
}

Rejection check_layout(const ModelSpec& m, const ClusterProfile& c, const Plan& p,
                       const EstimateOptions& o, std::string* reason) {
  if (c.gpu.peak_flops[static_cast<int>(p.dtype)] <= 0)
    return fail(Rejection::dtype_unsupported, reason,
                [&] { return dtype_unsupported_message(c.gpu, p.dtype); });
  if (!c.job_size_ok(p.gpus()))
    return fail(Rejection::gpus_mismatch, reason, [&] {
      return "dp*tp*pp*cp = " + std::to_string(p.gpus()) + " GPUs: beyond an NVLink domain of " +
             str(c.nvlink_domain) + " a job takes whole hosts of " + str(c.gpus_per_node);
    });
  if (m.heads % p.tp != 0 || m.kv_heads % p.tp != 0)
    return fail(Rejection::tp_not_dividing_heads, reason,
                [&] { return tp_heads_message(p.tp, m.heads, m.kv_heads); });
  if (!o.tp_across_nodes && !tp_in_domain(c, p))
    return fail(Rejection::tp_across_nodes, reason, [&] {
      return std::string("tp=" + str(p.tp) + " does not fit in an NVLink domain of " +
                         str(c.nvlink_domain) + " GPUs (allow with --tp-across-nodes)");
    });
  for (const Component& comp : m.encoders)
    if (comp.shape.attention && (comp.shape.heads % p.tp != 0 || comp.shape.kv_heads % p.tp != 0))
      return fail(Rejection::tp_not_dividing_heads, reason, [&] {
        return "tp=" + str(p.tp) + " does not divide the " + str(comp.shape.heads) + " heads of " +
               comp.name;
      });
  if (!m.encoders.empty()) return Rejection::none;  // multimodal: the split depends on vpp
  if (p.pp > m.layers)  // how the layers are cut depends on the split and vpp (check_plan)
    return fail(Rejection::pp_not_dividing_layers, reason, [&] {
      return std::string("pp=" + str(p.pp) + " exceeds layers=" + str(m.layers));
    });
  return check_cp_batch(m, p, reason);
}

Rejection check_plan(const ModelSpec& m, const ClusterProfile& c, const Plan& p,
                     const EstimateOptions& o, std::string* reason) {
  if (const Rejection r = check_layout(m, c, p, o, reason); r != Rejection::none) return r;
  if (!m.encoders.empty()) {  // multimodal: any contiguous split of the blocks
    const int virtual_stages = p.pp * p.vpp;
    if (virtual_stages > m.blocks())
      return fail(Rejection::pp_not_dividing_layers, reason, [&] {
        return "pp*vpp=" + str(virtual_stages) + " exceeds the " + str(m.blocks()) + " layers";
      });
    if (const Rejection r = check_cp_batch(m, p, reason); r != Rejection::none) return r;
  }
  if (p.vpp > 1 && p.pp == 1)
    return fail(Rejection::vpp_invalid, reason,
                [&] { return std::string("vpp=" + str(p.vpp) + " needs pp>1"); });
  if (!m.encoders.empty() && p.split != PipelineSplit::even)
    return fail(Rejection::pp_not_dividing_layers, reason, [&] {
      return std::string("split=") + name_of(p.split) +
             " is for decoder-only models; this one's encoders are split with the decoder";
    });
  if (m.encoders.empty()) switch (split_check(m.layers, p, reason)) {
      case SplitError::none:
        break;
      case SplitError::layers:
        return Rejection::pp_not_dividing_layers;
      case SplitError::vpp:
        return Rejection::vpp_invalid;
    }
  if (p.schedule == Schedule::interleaved && p.vpp == 1)
    return fail(Rejection::vpp_invalid, reason,
                [&] { return std::string("schedule=interleaved needs vpp > 1"); });
  if (p.schedule == Schedule::interleaved && p.microbatches() % p.pp != 0)
    return fail(Rejection::interleave_microbatches, reason, [&] {
      return std::string("the interleaved schedule needs microbatches (" + str(p.microbatches()) +
                         ") to be a multiple of pp=" + str(p.pp));
    });
  if (p.sp && p.tp == 1)
    return fail(Rejection::sp_without_tp, reason,
                [&] { return std::string("sequence parallelism needs tp > 1"); });
  if (const Rejection r = check_experts(m, p, reason); r != Rejection::none) return r;
  // One replica shards nothing, but ZeRO's optimizer is what offloads: allowed with offload.
  if (p.zero > 0 && p.weight_replicas() == 1 && !p.offloads())
    return fail(Rejection::zero_invalid, reason, [&] {
      return std::string("ZeRO shards over the data- and context-parallel ranks; dp x cp = 1");
    });
  if (const Rejection r = check_offload(c, p, reason); r != Rejection::none) return r;
  // deepspeed/runtime/engine.py (_configure_basic_optimizer): "1bit-Adam is not compatible with
  // ZeRO", likewise 0/1 Adam and 1-bit LAMB.
  if (p.grad_compression != GradCompression::none && (p.zero != 0 || p.offloads()))
    return fail(Rejection::zero_invalid, reason, [&] {
      return std::string("grad_compression=") + name_of(p.grad_compression) +
             " is not compatible with ZeRO or offload (DeepSpeed's engine refuses it); use zero=0";
    });
  // ZeRO++ partitions, quantizes and gathers ZeRO-3's parameters (zero/config.py: its options sit
  // in zero_optimization, read by stage 3's partitioned parameters).
  if (p.zeropp && p.zero != 3)
    return fail(Rejection::zero_invalid, reason, [&] {
      return fmt(
          "zeropp=1 (ZeRO++) quantizes and partitions ZeRO-3's parameters; needs zero=3, "
          "got zero={}",
          p.zero);
    });
  // bf16 gradients instead of fp32 ones: fp16 plans reduce in 16 bits already, tf32 ones keep
  // fp32 tensors throughout.
  if (p.grad_reduce_bf16 && !bf16_gradients_possible(p.dtype))
    return fail(Rejection::dtype_unsupported, reason, [&] {
      return fmt(
          "grad_reduce_bf16=1 keeps bf16 gradients in place of fp32 ones, for dtype=bf16, fp8 or "
          "mxfp8; dtype={} {}",
          to_string(p.dtype),
          p.dtype == Dtype::fp16 ? "reduces fp16 gradients already" : "keeps fp32 tensors");
    });
  // Megatron-Core's native fused loss casts the logits' gradient to bf16 (calculate_gradients in
  // core/fusions/fused_cross_entropy.py at d98e8a64); both fused kernels are modelled on 16-bit
  // bf16 logits.
  if (p.loss_fusion != LossFusion::none && !bf16_gradients_possible(p.dtype))
    return fail(Rejection::dtype_unsupported, reason, [&] {
      return fmt("loss_fusion={} {}, for dtype=bf16, fp8 or mxfp8; dtype={} takes loss_fusion=none",
                 name_of(p.loss_fusion),
                 p.loss_fusion == LossFusion::native ? "casts the logits' gradient to bf16"
                                                     : "is modelled on 16-bit bf16 logits",
                 to_string(p.dtype));
    });
  // --fp8-recipe picks the scaling of Transformer Engine's per-tensor FP8; mxfp8 is a recipe of
  // its own (mxfp8), and 16-bit or tf32 plans run no FP8.
  if (p.fp8_recipe != Fp8Recipe::delayed && p.dtype != Dtype::fp8)
    return fail(Rejection::dtype_unsupported, reason, [&] {
      return fmt("fp8_recipe={} scales dtype=fp8's tensors; dtype={} takes no fp8_recipe",
                 name_of(p.fp8_recipe), to_string(p.dtype));
    });
  // --recompute-method block takes --recompute-granularity full (TransformerConfig.__post_init__
  // at d98e8a64) and recomputes up to every layer of a chunk.
  if (p.recompute_layers > 0 && p.recompute != Recompute::full)
    return fail(Rejection::recompute_invalid, reason, [&] {
      return fmt(
          "recompute_layers={} recomputes the first layers of each model chunk in full; it needs "
          "recompute=full, got recompute={}",
          p.recompute_layers, to_string(p.recompute));
    });
  // Megatron-LM counts the first layers of each decoder chunk; a vision encoder's blocks (their
  // own TransformerBlock, or none for the projector) are not priced that way here.
  if (p.recompute_layers > 0 && !m.encoders.empty())
    return fail(Rejection::recompute_invalid, reason, [&] {
      return fmt(
          "recompute_layers is priced for decoder-only models; this one has {} encoder "
          "component(s): use recompute=full with recompute_layers=0, or none",
          m.encoders.size());
    });
  if (p.recompute_layers > m.layers)
    return fail(Rejection::recompute_invalid, reason, [&] {
      return fmt("recompute_layers={} is more than the model's {} layers", p.recompute_layers,
                 m.layers);
    });
  // TransformerConfig.__post_init__ at d98e8a64: "CPU offloading can be done only for layers less
  // than num_layers".
  if (p.offload_activation_layers >= m.layers && p.offload_activation_layers > 0)
    return fail(Rejection::offload_invalid, reason, [&] {
      return fmt("offload_activations={} must be fewer than the model's {} layers",
                 p.offload_activation_layers, m.layers);
    });
  // hpZ's secondary groups are consecutive global ranks (the node's), which holds for pure data
  // (and context) parallelism only; with TP they would group a layer's shards together.
  if (p.zeropp && (p.tp > 1 || p.pp > 1))
    return fail(Rejection::zero_invalid, reason, [&] {
      return fmt(
          "zeropp=1 (ZeRO++) is planned for pure data parallelism (its hpZ groups are a "
          "node's consecutive ranks); got tp={}, pp={}",
          p.tp, p.pp);
    });
  return check_framework(m, c, p, o, reason);
}

std::string rejection_message(const Estimate& e) {
  if (e.rejection == Rejection::host_out_of_memory)
    return fmt(
        "out of host memory: the offloaded state needs {:.0f} GiB per node of the {:.0f} GiB "
        "a job may fill",
        e.host_memory_bytes / (1024.0 * 1024 * 1024),
        e.host_memory_limit_bytes / (1024.0 * 1024 * 1024));
  if (e.rejection != Rejection::out_of_memory) return e.reason;
  return fmt("out of memory: the plan needs {:.1f} GiB per GPU of {:.1f} GiB",
             e.memory_bytes / (1024.0 * 1024 * 1024),
             e.memory_limit_bytes / (1024.0 * 1024 * 1024));
}

}  // namespace planner
