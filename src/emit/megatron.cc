// Megatron-LM launch scripts: torchrun (one or many nodes) and Slurm. Every flag is an option
// string of NVIDIA/Megatron-LM's parser at commit d98e8a64 (megatron/training/arguments.py and the
// dataclasses it turns into flags), listed in configs/frameworks/megatron-core-args.txt with the
// facts quoted below; torchrun's flags are in configs/frameworks/torchrun-args.txt (pytorch
// torch/distributed/run.py).
#include <cctype>

#include "common.h"
#include "planner/cost/communication.h"

namespace planner::emit {
namespace detail {
namespace {

constexpr const char* kCommit =
    info(Framework::megatron).version;  // configs/frameworks/megatron-core-args.txt

ArgGroup parallel_group(const ModelSpec& m, const Plan& p, const StageSplit& split) {
  ArgGroup g{fmt("Parallelism: {} GPUs = tp {} x pp {} x cp {} x dp {} (dp follows from the "
                 "world size)",
                 int(p.gpus()), p.tp, p.pp, p.cp, p.dp),
             {{"--tensor-model-parallel-size", std::to_string(p.tp), ""},
              {"--pipeline-model-parallel-size", std::to_string(p.pp), ""},
              {"--context-parallel-size", std::to_string(p.cp), ""}},
             {}};
  // Chunks per rank, not --num-layers-per-virtual-pipeline-stage: validate_args refuses that one
  // beside the first/last stage counts of an uneven split.
  if (p.vpp > 1)
    g.args.push_back({"--num-virtual-stages-per-pipeline-rank", std::to_string(p.vpp),
                      split.even() ? fmt("vpp={}: {} layers per stage in {} chunks", p.vpp,
                                         m.layers / p.pp, p.vpp)
                                   : fmt("vpp={} chunks per stage", p.vpp)});
  for (const auto& [flag, value] : megatron_split_args(m, p, split))
    g.args.push_back({flag, value, "uneven stages"});
  // P2P overlap has no flag to set: on by default, and switched off without interleaving.
  if (p.pp > 1)
    g.notes.push_back(
        p.vpp > 1 ? "P2P sends and receives overlap the chunks' compute (overlap_p2p_comm, the "
                    "default with interleaving; --no-overlap-p2p-communication turns it off)"
                  : "1F1B without interleaving: P2P not overlapped (validate_args turns "
                    "overlap_p2p_comm off)");
  if (p.sp) g.args.push_back({"--sequence-parallel", "", "needs CUDA_DEVICE_MAX_CONNECTIONS=1"});
  if (m.moe.any()) {  // parallel folding: the expert groups inside a stage's tp x cp x dp ranks
    g.args.push_back({"--expert-model-parallel-size", std::to_string(p.ep),
                      fmt("{} experts per rank", m.moe.experts / p.ep)});
    // Megatron-LM's default is tp's (validate_args); the plan's is written out.
    g.args.push_back({"--expert-tensor-parallel-size", std::to_string(p.etp),
                      fmt("{} expert-data-parallel replicas", p.expert_replicas())});
  }
  if (p.order == RankOrder::tp_pp_dp)
    g.args.push_back({"--use-tp-pp-dp-mapping", "",
                      "order=tp-pp-dp: the pipeline stages beside TP inside a node, data "
                      "parallelism across nodes"});
  return g;
}

ArgGroup batch_group(const Plan& p) {
  return {"Batch",
          {{"--micro-batch-size", std::to_string(p.mbs), ""},
           {"--global-batch-size", std::to_string(p.gbs),
            fmt("= mbs {} x dp {} x {} accumulation steps", p.mbs, p.dp, p.microbatches())}},
          {}};
}

ArgGroup memory_group(const Plan& p, bool mla) {
  ArgGroup g{"Memory: activation recomputation and ZeRO", {}, {}};
  // --recompute-method is rejected with granularity 'selective' (validate_args).
  if (p.recompute == Recompute::selective)
    g.args.push_back({"--recompute-granularity", "selective", "core attention recomputed"});
  if (p.recompute == Recompute::full && p.recompute_layers > 0) {
    // core/recompute.py: the first N layers of each chunk (TransformerBlock) checkpointed.
    g.args.push_back({"--recompute-granularity", "full", ""});
    g.args.push_back({"--recompute-method", "block", ""});
    g.args.push_back({"--recompute-num-layers", std::to_string(p.recompute_layers),
                      "the first layers of each model chunk recomputed"});
  } else if (p.recompute == Recompute::full) {
    g.args.push_back({"--recompute-granularity", "full", "every layer recomputed ..."});
    g.args.push_back({"--recompute-method", "uniform", ""});
    g.args.push_back({"--recompute-num-layers", "1", "... from its own input"});
  }
  if (p.recompute == Recompute::selective_moe) {
    g.args.push_back({"--recompute-granularity", "selective", ""});
    g.args.push_back({"--recompute-modules",
                      mla ? "moe_act layernorm mla_up_proj" : "moe_act layernorm",
                      "recompute=selective_moe"});
  }
  if (p.recompute == Recompute::none) g.notes.push_back("recompute=none: no recomputation flags");
  // Layer-level activation offload (Transformer Engine); arguments.py turns cpu_offloading on.
  if (p.offload_activation_layers > 0)
    g.args.push_back({"--cpu-offloading-num-layers", std::to_string(p.offload_activation_layers),
                      "these layers' activations in host memory between forward and backward"});
  const char* over = p.cp > 1 ? "dp x cp" : "dp";
  if (p.zero == 1) {
    g.args.push_back(
        {"--use-distributed-optimizer", "", fmt("zero=1: optimizer states over {}", over)});
    if (p.offload_optimizer == OffloadDevice::cpu) {  // the HybridDeviceOptimizer's flags
      g.args.push_back(
          {"--optimizer-cpu-offload", "",
           fmt("{}% of this rank's optimizer states and step on the host", p.offload_pct)});
      g.args.push_back({"--optimizer-offload-fraction", fmt("{:g}", p.offload_pct / 100.0), ""});
      g.args.push_back({"--use-precision-aware-optimizer", "", "required by the offload"});
      g.args.push_back({"--overlap-cpu-optimizer-d2h-h2d", "",
                        "copies pipelined with the CPU step, as predicted"});
    }
  } else if (p.zero >= 2) {  // Megatron FSDP v1 runs on the distributed optimizer (arguments.py)
    g.args.push_back({"--use-megatron-fsdp", "",
                      fmt("zero={}: Megatron FSDP shards {} over {}", p.zero,
                          p.zero == 3 ? "parameters, gradients and optimizer states"
                                      : "gradients and optimizer states",
                          over)});
    g.args.push_back({"--data-parallel-sharding-strategy",
                      p.zero == 3 ? "optim_grads_params" : "optim_grads", ""});
    g.args.push_back({"--use-distributed-optimizer", "", "Megatron FSDP v1 requires it"});
    // Megatron FSDP reads its own gradient dtype (mcore_fsdp_adapter.py), not
    // --grad-reduce-in-bf16; its default, auto, is the bf16 parameters' dtype.
    g.args.push_back({"--megatron-fsdp-main-grads-dtype", p.grad_reduce_bf16 ? "bf16" : "fp32",
                      p.grad_reduce_bf16 ? "the plan's grad_reduce_bf16=1"
                                         : "fp32 gradients, as planned (its default is the "
                                           "parameters' bf16: grad_reduce_bf16=1)"});
  } else {
    g.notes.push_back("zero=0: no distributed optimizer");
  }
  return g;
}

/// Overlap flags follow the execution stack (the framework's, or a legacy profile block's) and the
/// plan's execution knobs, as the prediction assumed.
ArgGroup overlap_group(const ClusterProfile& c, const Plan& p) {
  const Overlaps s = overlaps_of(p, c);
  // Each flag's comment names where the choice came from: the plan's knob, else the stack.
  auto from = [](const std::optional<bool>& knob, const char* plan_key, const char* profile_key,
                 bool on) {
    return knob ? fmt("the plan's {}={}", plan_key, on ? 1 : 0)
                : fmt("the stack's {}: {}", profile_key, on ? "true" : "false");
  };
  ArgGroup g{
      "Communication overlap, as the prediction assumed (the stack, or the plan's knobs)", {}, {}};
  // --tp-comm-overlap requires --sequence-parallel (validate_args) and Transformer Engine, whose
  // userbuffers work inside a node; the prediction charges TP communication the same way.
  const bool tp_in_node = tp_group(p, c).nodes == 1;
  if (s.tp_comm && p.sp && p.tp > 1 && tp_in_node)
    g.args.push_back({"--tp-comm-overlap", "",
                      from(p.tp_comm_overlap, "tp_comm_overlap", "overlap_tp_comm", true) +
                          "; Transformer Engine userbuffers (before TE 1.9 bootstrapped through "
                          "an MPI process group)"});
  else if (s.tp_comm && p.tp > 1)
    g.notes.push_back(
        p.sp ? "TP group spans nodes: no --tp-comm-overlap (its userbuffers work inside a node)"
             : "sp=0: no --tp-comm-overlap (it needs sequence parallelism)");
  if (p.ep_comm_overlap.value_or(false)) {
    g.args.push_back({"--overlap-moe-expert-parallel-comm", "",
                      "the plan's ep_comm_overlap=1: the all-to-all beside another "
                      "micro-batch's compute"});
    g.args.push_back({"--delay-wgrad-compute", "", "its weight gradients deferred to fill it"});
  }
  if (p.weight_replicas() == 1) {
    g.notes.push_back("dp x cp = 1: no gradient reduction to overlap");
    return g;
  }
  const std::string grad =
      from(p.overlap_grad_reduce, "overlap_grad_reduce", "overlap_grad_reduce", s.grad_reduce);
  if (s.grad_reduce)
    g.args.push_back({"--overlap-grad-reduce", "", grad});
  else
    g.notes.push_back(grad + ", so no --overlap-grad-reduce");
  // --overlap-param-gather requires --use-distributed-optimizer and --overlap-grad-reduce
  // (validate_args).
  if (p.zero == 1 && s.param_gather && s.grad_reduce)
    g.args.push_back(
        {"--overlap-param-gather", "",
         from(p.overlap_param_gather, "overlap_param_gather", "overlap_param_gather", true)});
  else if (p.zero == 1)
    g.notes.push_back(
        "no --overlap-param-gather: it needs the stack's overlap_param_gather and "
        "overlap_grad_reduce");
  return g;
}

ArgGroup precision_group(const ClusterProfile& c, const Plan& p) {
  const bool unfused = attention_of(p, c) == AttentionKernel::unfused;
  ArgGroup g{fmt("Precision and attention: dtype={}, attention {}", to_string(p.dtype),
                 unfused ? "unfused" : "flash"),
             {},
             {}};
  // The model sets Transformer Engine's NVTE_*_ATTN variables from this flag and refuses other
  // values of them in the environment (language_module.py at this commit).
  if (unfused)
    g.args.push_back({"--attention-backend", "unfused",
                      "as planned (the stack's attention or the plan's attn): batched GEMMs and "
                      "softmax"});
  else
    g.notes.push_back(
        "attention: Transformer Engine's fused kernels (--attention-backend auto, the default)");
  switch (p.dtype) {
    case Dtype::bf16:
      g.args.push_back({"--bf16", "", ""});
      break;
    case Dtype::fp16:
      g.args.push_back({"--fp16", "", "dynamic loss scaling"});
      break;
    case Dtype::fp8:
      g.args.push_back({"--bf16", "", "bf16 weights and non-GEMM math"});
      g.args.push_back({"--fp8-format", "hybrid", "Transformer Engine FP8 GEMMs"});
      if (p.fp8_recipe == Fp8Recipe::tensorwise)  // delayed is Megatron-LM's default
        g.args.push_back({"--fp8-recipe", "tensorwise", "per-tensor current scaling"});
      break;
    case Dtype::mxfp8:
      g.args.push_back({"--bf16", "", "bf16 weights and non-GEMM math"});
      // Transformer Engine's MXFP8BlockScaling runs E4M3 in both passes (its docs); Megatron-Core
      // requires a format with any recipe (fp8_utils.get_fp8_recipe).
      g.args.push_back({"--fp8-format", "e4m3", "Transformer Engine block-scaled FP8 GEMMs"});
      g.args.push_back({"--fp8-recipe", "mxfp8", "E8M0 scales per 32 elements (Blackwell)"});
      break;
    case Dtype::tf32:
      g.notes.push_back("tf32: fp32 training with TF32 GEMMs (TORCH_ALLOW_TF32_CUBLAS_OVERRIDE)");
      break;
  }
  if (p.loss_fusion == LossFusion::native) {  // te: refused at the pinned version (framework.cc)
    g.args.push_back({"--cross-entropy-loss-fusion", "", "the plan's loss_fusion=native"});
    g.args.push_back({"--cross-entropy-fusion-impl", "native", ""});
  }
  if (p.grad_reduce_bf16 && p.zero <= 1)  // Megatron FSDP: --megatron-fsdp-main-grads-dtype
    g.args.push_back({"--grad-reduce-in-bf16", "",
                      "the plan's grad_reduce_bf16=1: bf16 gradient buffers and reduction"});
  return g;
}

/// --moe-layer-freq: 1 when every layer has experts, else the pattern as a Python list expression
/// that Megatron-LM's parser evaluates (moe_freq_type; 1 an MoE layer, 0 a dense one): runs,
/// "([0]*3+[1]*58)", or a repeated block, "([0,1]*24)". Not its integer form: an integer N makes
/// layers 0, N, 2N ... MoE (gpt_layer_specs.py: i % N == 0), where the Hugging Face configs make
/// every Nth layer counting from 1 MoE (Llama 4's interleave_moe_layer_step).
std::string moe_layer_freq(const ModelSpec& m) {
  if (m.moe_layers() == m.layers) return "1";
  std::vector<int> is(m.layers);
  for (int i = 0; i < m.layers; ++i) is[i] = m.is_moe_layer(i) ? 1 : 0;
  std::vector<std::pair<int, int>> runs;  // value, length
  for (int v : is)
    if (!runs.empty() && runs.back().first == v)
      ++runs.back().second;
    else
      runs.push_back({v, 1});
  std::string out;
  if (runs.size() <= 4) {
    for (const auto& [v, n] : runs) out += fmt("{}[{}]*{}", out.empty() ? "" : "+", v, n);
    return "\"(" + out + ")\"";
  }
  for (int period = 2; period <= m.layers / 2; ++period) {
    if (m.layers % period != 0) continue;
    bool repeats = true;
    for (int i = period; i < m.layers && repeats; ++i) repeats = is[i] == is[i - period];
    if (!repeats) continue;
    for (int i = 0; i < period; ++i) out += fmt("{}{}", i ? "," : "", is[i]);
    return fmt("\"([{}]*{})\"", out, m.layers / period);
  }
  for (int v : is) out += fmt("{}{}", out.empty() ? "" : ",", v);
  return "\"[" + out + "]\"";
}

/// A mixture-of-experts model's flags (Megatron-LM's MoE arguments at the recorded commit).
void add_experts(ArgGroup& g, const ModelSpec& m, const Plan& p) {
  const MoeSpec& x = m.moe;
  g.args.push_back({"--num-experts", std::to_string(x.experts), "routed experts"});
  g.args.push_back({"--moe-router-topk", std::to_string(x.topk), "experts per token"});
  g.args.push_back({"--moe-ffn-hidden-size", std::to_string(x.expert_ffn), "one expert's MLP"});
  if (x.shared_ffn > 0)
    g.args.push_back({"--moe-shared-expert-intermediate-size", std::to_string(x.shared_ffn),
                      "the shared experts together"});
  if (m.moe_layers() != m.layers)
    g.args.push_back({"--moe-layer-freq", moe_layer_freq(m),
                      fmt("{} of {} layers have experts", m.moe_layers(), m.layers)});
  g.args.push_back({"--moe-grouped-gemm", "", "the experts on a rank as one grouped GEMM"});
  // Megatron-LM leaves both off by default; the cost model prices the fused kernels, as
  // Megatron-Bridge's recipes run them (an unfused router is several kernels, an unfused sort of
  // the all-to-all's rows a split and a cat after one more host sync).
  g.args.push_back({"--moe-router-fusion", "", "the router's top-k and aux loss as fused kernels"});
  // HybridEP's dispatch returns its rows permuted (hybrid_ep_dispatch's own permute kernels, or
  // fused into the dispatch under --moe-permute-fusion-into-hybridep, not written).
  if (p.dispatcher != Dispatcher::hybridep)
    g.args.push_back({"--moe-permute-fusion", "",
                      "the token permutations as Transformer Engine's fused kernels"});
  if (p.dispatcher == Dispatcher::flex) {
    g.args.push_back({"--moe-token-dispatcher-type", "flex", "the plan's dispatcher=flex"});
    g.args.push_back(
        {"--moe-flex-dispatcher-backend", "deepep",
         "DeepEP: a token crosses the network once per node (needs DeepEP installed)"});
  } else if (p.dispatcher == Dispatcher::hybridep) {
    g.args.push_back({"--moe-token-dispatcher-type", "flex", "the plan's dispatcher=hybridep"});
    g.args.push_back({"--moe-flex-dispatcher-backend", "hybridep",
                      "HybridEP: a token crosses the network once per node (needs DeepEP's "
                      "hybrid-ep branch installed)"});
  } else if (p.dispatcher == Dispatcher::allgather) {
    g.args.push_back({"--moe-token-dispatcher-type", "allgather",
                      "every token all-gathered over the etp x ep group"});
  } else {
    g.args.push_back({"--moe-token-dispatcher-type", "alltoall", "NCCL all-to-all"});
  }
  if (p.cuda_graphs.value_or(false)) {
    g.args.push_back({"--cuda-graph-impl", "transformer_engine",
                      "the plan's cuda_graphs=1: Transformer Engine's scoped CUDA graphs, so that "
                      "the layers with experts do not wait for their host"});
    g.args.push_back({"--cuda-graph-modules", "attn moe_router moe_preprocess",
                      "attention, the router and the dispatcher's preprocessing (Megatron-Bridge's "
                      "MoE recipes' scope); the graphs' buffers need memory headroom"});
    g.args.push_back({"--te-rng-tracker", "", "CUDA graphs need Transformer Engine's RNG tracker"});
    if (p.ep_comm_overlap.value_or(false))  // TransformerConfig.__post_init__ at d98e8a64
      g.notes.push_back(
          "--delay-wgrad-compute with Transformer Engine's scoped graphs needs Transformer Engine "
          "2.10 or later");
  }
  if (p.capacity_factor > 0) {
    g.args.push_back({"--moe-expert-capacity-factor", fmt("{}", p.capacity_factor),
                      "tokens past the capacity dropped"});
    g.args.push_back({"--moe-token-drop-policy", "probs", "the lowest-probability ones"});
    if (p.pad_to_capacity.value_or(false))
      g.args.push_back(
          {"--moe-pad-expert-input-to-capacity", "", "every expert padded to its capacity"});
  }
  if (x.sigmoid_router) {  // DeepSeek-V3's router: sigmoid scores, a bias that balances the load
    g.args.push_back({"--moe-router-score-function", "sigmoid", "scoring_func"});
    if (x.router_bias)
      g.args.push_back({"--moe-router-enable-expert-bias", "", "topk_method noaux_tc"});
  }
  if (x.router_groups > 1 && x.group_topk > 0) {
    g.args.push_back({"--moe-router-num-groups", std::to_string(x.router_groups), "n_group"});
    g.args.push_back({"--moe-router-group-topk", std::to_string(x.group_topk), "topk_group"});
  }
  if (x.topk_scale != 1)
    g.args.push_back(
        {"--moe-router-topk-scaling-factor", fmt("{:g}", x.topk_scale), "routed_scaling_factor"});
  g.args.push_back({"--moe-router-load-balancing-type", "aux_loss", ""});
  g.args.push_back({"--moe-aux-loss-coeff", "1e-2", "the parser help's recommended start"});
  g.notes.push_back(
      "the prediction assumes balanced routing (as NVIDIA's published MoE benchmarks force with "
      "--moe-router-force-load-balancing, for benchmarking only): a real router's imbalance "
      "makes the busiest expert rank slower");
  if (x.expert_bias || (x.router_bias && !x.sigmoid_router))
    g.notes.push_back(
        "the experts' and router's biases are costed but have no flag here: check "
        "the model's own Megatron-Bridge provider");
}

ArgGroup model_group(const EmitRequest& r) {
  const ModelSpec& m = r.model;
  const bool llama = llama_style(m);
  ArgGroup g{fmt("Model: {} ({})", m.name, r.model_file),
             {{"--num-layers", std::to_string(m.layers), ""},
              {"--hidden-size", std::to_string(m.hidden), ""},
              {"--num-attention-heads", std::to_string(m.heads), ""}},
             {}};
  // --num-query-groups only takes effect with --group-query-attention.
  if (m.kv_heads < m.heads) {
    g.args.push_back({"--group-query-attention", "", ""});
    g.args.push_back({"--num-query-groups", std::to_string(m.kv_heads), "kv_heads"});
  }
  g.args.push_back({"--ffn-hidden-size", std::to_string(m.ffn), ""});
  if (m.swiglu) g.args.push_back({"--swiglu", "", ""});
  g.args.push_back({"--seq-length", std::to_string(m.seq_len), ""});
  g.args.push_back({"--max-position-embeddings", std::to_string(m.seq_len), ""});
  // YaRN on a model without latent attention (Megatron-LM's _apply_yarn_config_from_args at
  // d98e8a64 maps these flags onto the config's yarn_* fields; latent attention takes its own).
  const bool yarn = llama && m.yarn.any() && !m.mla.any();
  g.args.push_back({"--position-embedding-type",
                    yarn    ? "yarn"
                    : llama ? "rope"
                            : "learned_absolute",
                    yarn                                   ? "the config's rope_scaling (YaRN)"
                    : llama && m.mla.any() && m.yarn.any() ? "latent attention's YaRN: below"
                    : llama                                ? "Llama-style (SwiGLU/GQA) model"
                                                           : ""});
  if (yarn) {
    const YarnSpec& y = m.yarn;
    g.args.push_back({"--rotary-scaling-factor", fmt("{:g}", y.factor), "rope_scaling.factor"});
    if (y.original_positions > 0)
      g.args.push_back(
          {"--yarn-original-max-position-embeddings", std::to_string(y.original_positions), ""});
    g.args.push_back({"--yarn-beta-fast", fmt("{:g}", y.beta_fast), ""});
    g.args.push_back({"--yarn-beta-slow", fmt("{:g}", y.beta_slow), ""});
    if (y.mscale && y.mscale_all_dim) {  // else Megatron's 1 and 0: mscale(factor) alone
      g.args.push_back({"--mscale", fmt("{:g}", *y.mscale), ""});
      g.args.push_back({"--mscale-all-dim", fmt("{:g}", *y.mscale_all_dim), ""});
    }
    if (!y.round_to_int)
      g.args.push_back(
          {"--no-yarn-correction-range-round-to-int", "", "rope_scaling.truncate false"});
  }
  if (llama) {
    g.args.push_back(
        {"--rotary-base",
         integer_rope_theta(m, fmt("Megatron-LM's --rotary-base at commit {}", kCommit)),
         "the model's rope_theta"});
    g.args.push_back({"--normalization", "RMSNorm", ""});
    g.args.push_back({"--disable-bias-linear", "", ""});
    // Megatron-LM's defaults are 0.1 (TransformerConfig); Llama models train without dropout.
    g.args.push_back({"--attention-dropout", "0", "no dropout, as Llama-style models train"});
    g.args.push_back({"--hidden-dropout", "0", ""});
  }
  add_layer_arch(g, m, llama,
                 {fmt("Megatron-LM at {:.8}", kCommit), "--kv-channels", "--add-qkv-bias",
                  "--qk-layernorm", "--window-size", "--window-attn-skip-freq"});
  if (m.mla.any()) {  // MLASelfAttention; Megatron-LM's qk-head-dim is the part without RoPE
    const MlaSpec& a = m.mla;
    g.args.push_back({"--multi-latent-attention", "", "latent attention in place of Q, K, V"});
    if (a.q_lora_rank > 0) g.args.push_back({"--q-lora-rank", std::to_string(a.q_lora_rank), ""});
    g.args.push_back({"--kv-lora-rank", std::to_string(a.kv_lora_rank), ""});
    g.args.push_back({"--qk-head-dim", std::to_string(a.qk_nope_head_dim), "qk_nope_head_dim"});
    g.args.push_back(
        {"--qk-pos-emb-head-dim", std::to_string(a.qk_rope_head_dim), "qk_rope_head_dim"});
    g.args.push_back({"--v-head-dim", std::to_string(a.v_head_dim), ""});
    // Without it Megatron-Core's MLA spec makes the q and kv norms identities (gpt_layer_specs.py
    // at d98e8a64: the up-projections become column_parallel_layer_norm_linear with it).
    if (!m.arch.qk_norm)
      g.args.push_back(
          {"--qk-layernorm", "", "MLA's q_a and kv_a RMSNorms, fused into its up-projections"});
    // Latent attention takes YaRN from MLATransformerConfig (rope_type "yarn" by default, at
    // d98e8a64): its factor and mscales from these flags, whose defaults (1, 1, 0) replace the
    // config's, as Megatron-LM's DeepSeek-V3 and Kimi-K2 examples set them
    // (examples/megatron_fsdp/sbatch_mfsdp_deepseek_v3.sh); its original positions and betas
    // have no flag and stay the config class's 4096, 32 and 1.
    if (m.yarn.any()) {
      const YarnSpec& y = m.yarn;
      g.args.push_back(
          {"--rotary-scaling-factor", fmt("{:g}", y.factor), "rope_scaling.factor (YaRN)"});
      if (y.mscale) g.args.push_back({"--mscale", fmt("{:g}", *y.mscale), ""});
      if (y.mscale_all_dim)
        g.args.push_back({"--mscale-all-dim", fmt("{:g}", *y.mscale_all_dim), ""});
      constexpr int kMlaYarnPositions = 4096;
      constexpr double kMlaYarnBetaFast = 32, kMlaYarnBetaSlow = 1;
      if ((y.original_positions > 0 && y.original_positions != kMlaYarnPositions) ||
          y.beta_fast != kMlaYarnBetaFast || y.beta_slow != kMlaYarnBetaSlow)
        g.notes.push_back(fmt(
            "YaRN's original positions {}, beta_fast {:g} and beta_slow {:g}: Megatron-LM at {:.8} "
            "has no flag for latent attention's, which trains with 4096, 32 and 1 (no cost "
            "term reads them)",
            y.original_positions, y.beta_fast, y.beta_slow, kCommit));
    }
  }
  if (m.moe.any()) add_experts(g, m, r.plan);
  if (m.mtp_layers > 0)  // on the last pipeline stage (no custom --pipeline-model-parallel-layout)
    g.args.push_back({"--mtp-num-layers", std::to_string(m.mtp_layers),
                      "multi-token-prediction modules (num_nextn_predict_layers)"});
  if (!m.tied_embeddings) g.args.push_back({"--untie-embeddings-and-output-weights", "", ""});
  g.args.push_back({"--make-vocab-size-divisible-by", std::to_string(kVocabDivisibleBy),
                    fmt("vocab {} padded to {} (x tp {})", m.vocab,
                        padded_vocab(m.vocab, r.plan.tp), r.plan.tp)});
  return g;
}

std::vector<EnvVar> megatron_env(const EmitRequest& r) {
  std::vector<EnvVar> v = nccl_env(r.cluster, r.estimate);
  if (r.plan.tp > 1 || r.plan.cp > 1)
    v.push_back(
        {"CUDA_DEVICE_MAX_CONNECTIONS",
         "1",
         {"One CUDA work queue, so that TP communication and GEMMs overlap in launch order.",
          fmt("Megatron-LM (validate_args at {}) refuses to start without it with tp > 1 or",
              kCommit),
          "cp > 1 on GPUs before Blackwell (compute capability < 10)."},
         false});
  if (r.plan.dtype == Dtype::tf32)
    v.push_back({"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
                 "1",
                 {"dtype=tf32: fp32 GEMMs on TF32 tensor cores (PyTorch's default is off)."},
                 false});
  return v;
}

/// DATA_ARGS: mock data unless DATA_PATH is set; the tokenizer matches the model's vocabulary.
std::string data_lines(const ModelSpec& m) {
  std::string out =
      "# Data and tokenizer: not part of the plan. With DATA_PATH unset, mock data and a\n"
      "# NullTokenizer of the model's vocabulary (its last id is EOD) measure the iteration\n"
      "# time; set DATA_PATH to a Megatron .bin/.idx prefix to train on real data.\n";
  std::string tokenizer;
  if (m.vocab == 50257) {
    tokenizer =
        "--tokenizer-type GPT2BPETokenizer\n"
        "             --vocab-file \"${VOCAB_FILE:?set VOCAB_FILE to gpt2-vocab.json}\"\n"
        "             --merge-file \"${MERGE_FILE:?set MERGE_FILE to gpt2-merges.txt}\"";
  } else {
    out +=
        fmt("# Vocabulary {}: the model's own Hugging Face tokenizer (Llama, Qwen, Mistral ...), a "
            "hub\n"
            "# name or a local folder, e.g. TOKENIZER_MODEL=meta-llama/Meta-Llama-3-70B.\n",
            m.vocab);
    tokenizer =
        "--tokenizer-type HuggingFaceTokenizer\n"
        "             --tokenizer-model \"${TOKENIZER_MODEL:?set TOKENIZER_MODEL to the "
        "Hugging Face tokenizer of the model, a hub name or a folder}\"";
  }
  out +=
      "if [[ -n \"${DATA_PATH:-}\" ]]; then\n"
      "  DATA_ARGS=(--data-path \"$DATA_PATH\" --split 949,50,1\n             " +
      tokenizer + ")\nelse\n";
  out += fmt("  DATA_ARGS=(--mock-data --tokenizer-type NullTokenizer --vocab-size {})\nfi\n",
             m.vocab);
  return out;
}

/// Environment, MEGATRON_ARGS, DATA_ARGS and TRAINING_ARGS: the part both scripts share.
std::string shared_body(const EmitRequest& r) {
  const Plan& p = r.plan;
  std::string out = env_block(r.cluster, megatron_env(r)) + "\n";
  out +=
      "# ---- The plan and the model -----------------------------------------------------------\n";
  out +=
      shell_array("MEGATRON_ARGS", {parallel_group(r.model, p, r.split), batch_group(p),
                                    memory_group(p, r.model.mla.any()), overlap_group(r.cluster, p),
                                    precision_group(r.cluster, p), model_group(r)});
  out += "\n" + data_lines(r.model) + "\n";
  ArgGroup schedule = schedule_args();
  schedule.args.push_back({"--log-throughput", "", "TFLOP/s per GPU, to compare too"});
  out += shell_array("TRAINING_ARGS", {schedule}) + checkpoint_lines();
  return out;
}

std::string usage_lines(const char* what) {
  return fmt(
      "#\n# {}\n"
      "# Flags: NVIDIA/Megatron-LM's parser (megatron/training/arguments.py) at commit {}\n"
      "# (configs/frameworks/megatron-core-args.txt); torchrun's: configs/frameworks/"
      "torchrun-args.txt.\n",
      what, kCommit);
}

/// Both scripts stop on the first error and need a Megatron-LM checkout at the recorded commit.
std::string strict_mode_and_checkout() {
  return fmt(
      "set -euo pipefail\n: \"${{MEGATRON_LM_DIR:?set MEGATRON_LM_DIR to a Megatron-LM "
      "checkout at commit {}}}\"\n\n",
      kCommit);
}

/// torchrun on pretrain_gpt.py with the script's argument arrays; `runner` is "exec" or
/// "srun \"${SRUN_ARGS[@]}\"".
std::string launch_line(const char* runner) {
  return std::string("\n") + runner +
         " torchrun \"${TORCHRUN_ARGS[@]}\" \"$MEGATRON_LM_DIR/pretrain_gpt.py\" \\\n"
         "  \"${MEGATRON_ARGS[@]}\" \"${DATA_ARGS[@]}\" \"${TRAINING_ARGS[@]}\"\n";
}

/// The launcher's default rendezvous port (Megatron-LM's examples use 6000).
constexpr int kMegatronMasterPort = 6000;

std::string torchrun_script(const EmitRequest& r, const std::string& head,
                            const std::string& body) {
  const Plan& p = r.plan;
  std::string s = "#!/usr/bin/env bash\n" + head +
                  usage_lines(
                      "Megatron-LM's pretrain_gpt.py under torchrun, one torchrun per node.\n"
                      "# One node: MEGATRON_LM_DIR=/path/to/Megatron-LM bash "
                      "megatron_torchrun.sh\n"
                      "# Several: run it on every node with NNODES, NODE_RANK (0..NNODES-1),\n"
                      "# MASTER_ADDR (node 0's address) and MASTER_PORT in the environment.");
  s += strict_mode_and_checkout();
  s += body + "\n";
  s += torchrun_world(p, r.cluster, kMegatronMasterPort);
  s += launch_line("exec");
  return s;
}

/// Slurm job names: letters, digits, '.', '_' and '-' only.
std::string slurm_job_name(std::string name) {
  for (char& ch : name)
    if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '.' && ch != '_' && ch != '-')
      ch = '_';
  return name.empty() ? std::string("planner") : name;
}

std::string sbatch_script(const EmitRequest& r, const std::string& head, const std::string& body) {
  const Plan& p = r.plan;
  const int per_node = gpus_per_node_of(p, r.cluster), nodes = nodes_of(p, r.cluster);
  std::string s = "#!/usr/bin/env bash\n" + head +
                  usage_lines(
                      "Slurm batch job: one task per node runs torchrun, which starts one\n"
                      "# rank per GPU; the ranks meet at the first node (c10d rendezvous).\n"
                      "# Submit with: MEGATRON_LM_DIR=/path/to/Megatron-LM sbatch "
                      "megatron_sbatch.sh");
  s +=
      fmt("#SBATCH --job-name={}\n#SBATCH --nodes={}\n#SBATCH --ntasks-per-node=1\n"
          "#SBATCH --gpus-per-node={}\n#SBATCH --exclusive\n",
          slurm_job_name(r.model.name), nodes, per_node);
  s += site_lines() + "\n";
  s += strict_mode_and_checkout();
  s += body + "\n";
  s += fmt(
      "# ---- World: tp*pp*dp*cp = {} GPUs = {} nodes x {} --------------------------------------\n"
      "GPUS_PER_NODE={}\n"
      "MASTER_ADDR=$(scontrol show hostnames \"$SLURM_JOB_NODELIST\" | head -n 1)\n"
      "MASTER_PORT=${{MASTER_PORT:-6000}}\n",
      int(p.gpus()), nodes, per_node, per_node);
  s += shell_array("TORCHRUN_ARGS", {{"",
                                      {{"--nproc_per_node", "\"$GPUS_PER_NODE\"", ""},
                                       {"--nnodes", "\"$SLURM_NNODES\"", ""},
                                       {"--rdzv_id", "\"$SLURM_JOB_ID\"", ""},
                                       {"--rdzv_backend", "c10d", ""},
                                       {"--rdzv_endpoint", "\"$MASTER_ADDR:$MASTER_PORT\"", ""}},
                                      {}}});
  s += "\n" + container_lines();
  s += launch_line("srun \"${SRUN_ARGS[@]}\"");
  return s;
}

}  // namespace

}  // namespace detail

std::vector<FlagValue> megatron_split_args(const ModelSpec& m, const Plan& p, const StageSplit& s) {
  if (const auto why = why_not_split(Framework::megatron, m, p, s)) detail::refuse(*why);
  std::vector<FlagValue> out;
  if (s.first_stage_layers > 0)
    out.push_back({"--decoder-first-pipeline-num-layers", std::to_string(s.first_stage_layers)});
  if (s.last_stage_layers > 0)
    out.push_back({"--decoder-last-pipeline-num-layers", std::to_string(s.last_stage_layers)});
  if (s.account_for_embedding) out.push_back({"--account-for-embedding-in-pipeline-split", ""});
  if (s.account_for_loss) out.push_back({"--account-for-loss-in-pipeline-split", ""});
  return out;
}

std::vector<EmittedFile> emit_megatron(const EmitRequest& r) {
  check_expressible(Framework::megatron, r.model, r.cluster, r.plan);
  const std::string head = detail::header(r, "Megatron-LM");
  const std::string body = detail::shared_body(r);
  return {{"megatron_torchrun.sh", detail::torchrun_script(r, head, body), true},
          {"megatron_sbatch.sh", detail::sbatch_script(r, head, body), true}};
}

}  // namespace planner::emit
