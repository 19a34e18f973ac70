// Megatron-LM launch scripts: torchrun (one or many nodes) and Slurm. Every flag is an option
// string of NVIDIA/Megatron-LM megatron/training/arguments.py at commit 307dcf37, listed in
// configs/frameworks/megatron-args.txt with the facts quoted below; torchrun's flags are in
// configs/frameworks/torchrun-args.txt (pytorch torch/distributed/run.py).
#include <cctype>

#include "common.h"
#include "planner/cost/communication.h"

namespace planner::emit {
namespace detail {
namespace {

constexpr const char* kCommit =
    info(Framework::megatron).version;  // configs/frameworks/megatron-args.txt

ArgGroup parallel_group(const ModelSpec& m, const Plan& p) {
  ArgGroup g{fmt("Parallelism: {} GPUs = tp {} x pp {} x cp {} x dp {} (dp follows from the "
                 "world size)",
                 int(p.gpus()), p.tp, p.pp, p.cp, p.dp),
             {{"--tensor-model-parallel-size", std::to_string(p.tp), ""},
              {"--pipeline-model-parallel-size", std::to_string(p.pp), ""},
              {"--context-parallel-size", std::to_string(p.cp), ""}},
             {}};
  // The only virtual-pipeline flag at this commit: layers per chunk, i.e. layers / pp / vpp.
  if (p.vpp > 1)
    g.args.push_back(
        {"--num-layers-per-virtual-pipeline-stage", std::to_string(m.layers / p.pp / p.vpp),
         fmt("vpp={}: {} layers per stage in {} chunks", p.vpp, m.layers / p.pp, p.vpp)});
  if (p.sp) g.args.push_back({"--sequence-parallel", "", "needs CUDA_DEVICE_MAX_CONNECTIONS=1"});
  // Megatron Core's GPT (Transformer Engine layers); --overlap-param-gather requires it.
  g.args.push_back({"--use-mcore-models", "", "Megatron Core GPT, Transformer Engine layers"});
  return g;
}

ArgGroup batch_group(const Plan& p) {
  return {"Batch",
          {{"--micro-batch-size", std::to_string(p.mbs), ""},
           {"--global-batch-size", std::to_string(p.gbs),
            fmt("= mbs {} x dp {} x {} accumulation steps", p.mbs, p.dp, p.microbatches())}},
          {}};
}

ArgGroup memory_group(const Plan& p) {
  ArgGroup g{"Memory: activation recomputation and ZeRO", {}, {}};
  // --recompute-method is rejected with granularity 'selective' (validate_args).
  if (p.recompute == Recompute::selective)
    g.args.push_back({"--recompute-granularity", "selective", "core attention recomputed"});
  if (p.recompute == Recompute::full) {
    g.args.push_back({"--recompute-granularity", "full", "every layer recomputed ..."});
    g.args.push_back({"--recompute-method", "uniform", ""});
    g.args.push_back({"--recompute-num-layers", "1", "... from its own input"});
  }
  if (p.recompute == Recompute::none) g.notes.push_back("recompute=none: no recomputation flags");
  if (p.zero == 1)
    g.args.push_back(
        {"--use-distributed-optimizer", "",
         p.cp > 1 ? "zero=1: optimizer states over dp x cp" : "zero=1: optimizer states over dp"});
  else
    g.notes.push_back("zero=0: no distributed optimizer");
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
  // --overlap-param-gather requires --use-distributed-optimizer, --overlap-grad-reduce and
  // --use-mcore-models (validate_args).
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

ArgGroup precision_group(const Plan& p) {
  ArgGroup g{fmt("Precision: dtype={}", to_string(p.dtype)), {}, {}};
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
      break;
    case Dtype::tf32:
      g.notes.push_back("tf32: fp32 training with TF32 GEMMs (TORCH_ALLOW_TF32_CUBLAS_OVERRIDE)");
      break;
  }
  return g;
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
  g.args.push_back({"--position-embedding-type", llama ? "rope" : "learned_absolute",
                    llama ? "Llama-style (SwiGLU/GQA) model" : ""});
  if (llama) {
    g.args.push_back({"--normalization", "RMSNorm", ""});
    g.args.push_back({"--disable-bias-linear", "", ""});
    g.notes.push_back(
        "The RoPE base is not a flag at this commit (10000); it does not change speed.");
  }
  add_layer_arch(
      g, m, llama,
      {fmt("Megatron-LM at {:.8}", kCommit), "--kv-channels", "--add-qkv-bias", "--qk-layernorm"});
  if (!m.tied_embeddings) g.args.push_back({"--untie-embeddings-and-output-weights", "", ""});
  g.args.push_back({"--make-vocab-size-divisible-by", std::to_string(kVocabDivisibleBy),
                    fmt("vocab {} padded to {} (x tp {})", m.vocab,
                        padded_vocab(m.vocab, r.plan.tp), r.plan.tp)});
  return g;
}

std::vector<EnvVar> megatron_env(const EmitRequest& r) {
  std::vector<EnvVar> v = nccl_env();
  v.push_back({"CUDA_DEVICE_MAX_CONNECTIONS",
               "1",
               {"One CUDA work queue, so that TP communication and GEMMs overlap in launch order.",
                fmt("Megatron-LM (validate_args at {}) refuses to start without it, with sequence",
                    kCommit),
                "parallelism or the asynchronous TP all-reduce (on by default)."},
               false});
  if (attention_of(r.plan, r.cluster) == AttentionKernel::unfused) {
    v.push_back({"NVTE_FLASH_ATTN",
                 "0",
                 {"Attention as planned: unfused (batched GEMMs, fused softmax), from the stack's",
                  "attention or the plan's attn. Transformer Engine's flash and cuDNN",
                  "fused attention backends off:"},
                 false});
    v.push_back({"NVTE_FUSED_ATTN", "0", {}, false});
  }
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
      "# NullTokenizer of the model's vocabulary (it adds one token, EOD) measure the iteration\n"
      "# time; set DATA_PATH to a Megatron .bin/.idx prefix to train on real data.\n";
  std::string tokenizer;
  if (m.vocab == 50257) {
    tokenizer =
        "--tokenizer-type GPT2BPETokenizer\n"
        "             --vocab-file \"${VOCAB_FILE:?set VOCAB_FILE to gpt2-vocab.json}\"\n"
        "             --merge-file \"${MERGE_FILE:?set MERGE_FILE to gpt2-merges.txt}\"";
  } else {
    out +=
        fmt("# Vocabulary {}: set TOKENIZER_MODEL to a SentencePiece model of that size, or\n"
            "# TOKENIZER_TYPE to another tokenizer type (Megatron-LM at {} has no tiktoken one,\n"
            "# which Llama 3 uses).\n",
            m.vocab, kCommit);
    tokenizer =
        fmt("--tokenizer-type \"${{TOKENIZER_TYPE:-{}}}\"\n"
            "             --tokenizer-model \"${{TOKENIZER_MODEL:?set TOKENIZER_MODEL}}\"",
            m.vocab == 32000 ? "Llama2Tokenizer" : "GPTSentencePieceTokenizer");
  }
  out +=
      "if [[ -n \"${DATA_PATH:-}\" ]]; then\n"
      "  DATA_ARGS=(--data-path \"$DATA_PATH\" --split 949,50,1\n             " +
      tokenizer + ")\nelse\n";
  out += fmt("  DATA_ARGS=(--mock-data --tokenizer-type NullTokenizer --vocab-size {})\nfi\n",
             m.vocab - 1);
  return out;
}

/// Environment, MEGATRON_ARGS, DATA_ARGS and TRAINING_ARGS: the part both scripts share.
std::string shared_body(const EmitRequest& r) {
  const Plan& p = r.plan;
  std::string out = env_block(r.cluster, megatron_env(r)) + "\n";
  out +=
      "# ---- The plan and the model -----------------------------------------------------------\n";
  out += shell_array("MEGATRON_ARGS",
                     {parallel_group(r.model, p), batch_group(p), memory_group(p),
                      overlap_group(r.cluster, p), precision_group(p), model_group(r)});
  out += "\n" + data_lines(r.model) + "\n";
  ArgGroup schedule = schedule_args();
  schedule.args.push_back({"--log-throughput", "", "TFLOP/s per GPU, to compare too"});
  out += shell_array("TRAINING_ARGS", {schedule}) + checkpoint_lines();
  return out;
}

std::string usage_lines(const char* what) {
  return fmt(
      "#\n# {}\n"
      "# Flags: NVIDIA/Megatron-LM megatron/training/arguments.py at commit {}\n"
      "# (configs/frameworks/megatron-args.txt); torchrun's: configs/frameworks/"
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

/// torchrun on pretrain_gpt.py with the script's argument arrays; `runner` is exec or srun.
std::string launch_line(const char* runner) {
  return std::string("\n") + runner +
         " torchrun \"${TORCHRUN_ARGS[@]}\" \"$MEGATRON_LM_DIR/pretrain_gpt.py\" \\\n"
         "  \"${MEGATRON_ARGS[@]}\" \"${DATA_ARGS[@]}\" \"${TRAINING_ARGS[@]}\"\n";
}

std::string torchrun_script(const EmitRequest& r, const std::string& head,
                            const std::string& body) {
  const Plan& p = r.plan;
  const int per_node = gpus_per_node_of(p, r.cluster), nodes = nodes_of(p, r.cluster);
  std::string s = "#!/usr/bin/env bash\n" + head +
                  usage_lines(
                      "Megatron-LM's pretrain_gpt.py under torchrun, one torchrun per node.\n"
                      "# One node: MEGATRON_LM_DIR=/path/to/Megatron-LM bash "
                      "megatron_torchrun.sh\n"
                      "# Several: run it on every node with NNODES, NODE_RANK (0..NNODES-1),\n"
                      "# MASTER_ADDR (node 0's address) and MASTER_PORT in the environment.");
  s += strict_mode_and_checkout();
  s += body + "\n";
  s += fmt(
      "# ---- World: tp*pp*dp*cp = {} GPUs ------------------------------------------------------\n"
      "GPUS_PER_NODE={}\nNNODES=${{NNODES:-{}}}\nNODE_RANK=${{NODE_RANK:-0}}\n"
      "MASTER_ADDR=${{MASTER_ADDR:-localhost}}\nMASTER_PORT=${{MASTER_PORT:-6000}}\n"
      "if (( GPUS_PER_NODE * NNODES != {} )); then\n"
      "  echo \"the plan needs tp*pp*dp*cp = {} GPUs; NNODES=$NNODES gives "
      "$((GPUS_PER_NODE * NNODES))\" >&2\n  exit 1\nfi\n",
      int(p.gpus()), per_node, nodes, int(p.gpus()), int(p.gpus()));
  s += shell_array("TORCHRUN_ARGS", {{"",
                                      {{"--nproc_per_node", "\"$GPUS_PER_NODE\"", ""},
                                       {"--nnodes", "\"$NNODES\"", ""},
                                       {"--node_rank", "\"$NODE_RANK\"", ""},
                                       {"--master_addr", "\"$MASTER_ADDR\"", ""},
                                       {"--master_port", "\"$MASTER_PORT\"", ""}},
                                      {}}});
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
          "#SBATCH --gpus-per-node={}\n#SBATCH --exclusive\n\n",
          slurm_job_name(r.model.name), nodes, per_node);
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
  s += launch_line("srun");
  return s;
}

}  // namespace

}  // namespace detail

std::vector<EmittedFile> emit_megatron(const EmitRequest& r) {
  check_expressible(Framework::megatron, r.model, r.cluster, r.plan);
  const std::string head = detail::header(r, "Megatron-LM");
  const std::string body = detail::shared_body(r);
  return {{"megatron_torchrun.sh", detail::torchrun_script(r, head, body), true},
          {"megatron_sbatch.sh", detail::sbatch_script(r, head, body), true}};
}

}  // namespace planner::emit
