#include "common.h"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>

#include "planner/cost/communication.h"
#include "planner/error.h"
#include "planner/units.h"

namespace planner::emit {

void check_expressible(Framework f, const ModelSpec& m, const ClusterProfile& c, const Plan& p) {
  if (!m.encoders.empty())
    detail::refuse(
        fmt("{}'s launch files train a decoder-only language model; this model has "
            "encoder components",
            info(f).title));
  if (const auto why = why_not(f, m, c, p)) detail::refuse(*why);
  if (f == Framework::torchtitan && !torchtitan_flavour(m))
    detail::refuse(
        fmt("torchtitan's recipes build their models from its own registry, whose Llama 3 flavours "
            "at {} are 8B, 70B and 405B; {} ({} layers, hidden {}, {} heads, {} kv heads, ffn {}, "
            "vocab {}{}) is none of them: plan it with --framework megatron or deepspeed",
            info(f).version, m.name, m.layers, m.hidden, m.heads, m.kv_heads, m.ffn, m.vocab,
            m.tied_embeddings ? ", tied embeddings" : ""));
}

std::vector<EmittedFile> emit_files(Framework f, const EmitRequest& r) {
  if (f == Framework::torchtitan) return emit_torchtitan(r);
  return f == Framework::megatron ? emit_megatron(r) : emit_deepspeed(r);
}

namespace detail {

void refuse(const std::string& why) { throw InputError("", 0, "--plan", why); }

std::string torchrun_world(const Plan& p, const ClusterProfile& c, int default_port,
                           const std::vector<Arg>& extra) {
  const int per_node = gpus_per_node_of(p, c), nodes = nodes_of(p, c), gpus = int(p.gpus());
  std::string s = fmt(
      "# ---- World: tp*pp*dp*cp = {} GPUs ------------------------------------------------------\n"
      "GPUS_PER_NODE={}\nNNODES=${{NNODES:-{}}}\nNODE_RANK=${{NODE_RANK:-0}}\n"
      "MASTER_ADDR=${{MASTER_ADDR:-localhost}}\nMASTER_PORT=${{MASTER_PORT:-{}}}\n"
      "if (( GPUS_PER_NODE * NNODES != {} )); then\n"
      "  echo \"the plan needs tp*pp*dp*cp = {} GPUs; NNODES=$NNODES gives "
      "$((GPUS_PER_NODE * NNODES))\" >&2\n  exit 1\nfi\n",
      gpus, per_node, nodes, default_port, gpus, gpus);
  ArgGroup g{"",
             {{"--nproc_per_node", "\"$GPUS_PER_NODE\"", ""},
              {"--nnodes", "\"$NNODES\"", ""},
              {"--node_rank", "\"$NODE_RANK\"", ""},
              {"--master_addr", "\"$MASTER_ADDR\"", ""},
              {"--master_port", "\"$MASTER_PORT\"", ""}},
             {}};
  g.args.insert(g.args.end(), extra.begin(), extra.end());
  return s + shell_array("TORCHRUN_ARGS", {g});
}

std::string shell_array(const std::string& name, const std::vector<ArgGroup>& groups) {
  std::string out = name + "=(\n";
  for (const ArgGroup& g : groups) {
    if (!g.title.empty()) out += "  # " + g.title + "\n";
    for (const std::string& n : g.notes) out += "  # " + n + "\n";
    for (const Arg& a : g.args) {
      std::string line = "  " + a.flag + (a.value.empty() ? "" : " " + a.value);
      if (!a.comment.empty()) {
        line.resize(std::max<size_t>(line.size() + 2, 48), ' ');
        line += "# " + a.comment;
      }
      out += line + "\n";
    }
  }
  return out + ")\n";
}

std::vector<EnvVar> nccl_env(const ClusterProfile& c, const Estimate& e) {
  std::vector<EnvVar> v = {
      {"NCCL_DEBUG",
       "WARN",
       {"NCCL_DEBUG=WARN reports only problems. Set INFO to debug a hang or a slow collective: it",
        "prints the topology NCCL detected, its rings and trees, and the transport of every peer."},
       true},
      {"TORCH_NCCL_ASYNC_ERROR_HANDLING",
       "1",
       {"PyTorch's NCCL async error handling: a failed or timed-out collective aborts the process",
        "(and so the job) instead of hanging it. Named NCCL_ASYNC_ERROR_HANDLING before PyTorch "
        "2.2."},
       false},
  };
  // Only where the plan's other all-reduces would not lose by it: TP all-reduces (tp > 1 without
  // sequence parallelism) run inside the node, where NCCL's NVLS or ring is the measured figure.
  if (e.dp_allreduce == AllreduceAlgorithm::tree && (e.plan.tp == 1 || e.plan.sp))
    v.push_back(
        {"NCCL_ALGO",
         "allreduce:tree",
         {fmt("The gradient all-reduce ({:.0f} MB buckets over {} nodes) was predicted on NCCL's "
              "double",
              e.dp_bucket_bytes / 1e6, dp_group(e.plan, c).nodes),
          "binary tree: at this size and node count its 2 log2(nodes) network steps beat the "
          "ring's",
          "2 (nodes - 1). NCCL's tuner often picks the tree itself; this pins all-reduces to it "
          "(the",
          "per-collective syntax needs NCCL 2.24 or later; all-gathers and reduce-scatters "
          "keep theirs)."},
         true});
  return v;
}

std::string env_block(const ClusterProfile& c, const std::vector<EnvVar>& vars) {
  std::string out =
      "# ---- NCCL and system environment -------------------------------------------------------\n"
      "# Interface and HCAs: placeholders, left unset so that NCCL detects them. Set them to pin "
      "NCCL\n";
  out += fmt("# to the compute fabric of {} ({}; {} GPUs per node):\n", c.name, c.inter.name,
             c.gpus_per_node);
  out +=
      "#   NCCL_SOCKET_IFNAME  interface for bootstrap and socket traffic, e.g. eth0 or "
      "^lo,docker0\n"
      "#   NCCL_IB_HCA         InfiniBand HCAs of the compute fabric, not storage, e.g. "
      "mlx5_0,mlx5_1\n"
      "#export NCCL_SOCKET_IFNAME=<interface>\n"
      "#export NCCL_IB_HCA=<hca,hca,...>\n"
      "# GPU/NIC affinity: each GPU should send through the NIC on its own PCIe switch, and its "
      "rank's\n"
      "# CPU threads should run on that GPU's NUMA node (see nvidia-smi topo -m). NCCL picks the\n"
      "# nearest NIC from the PCI topology when every NIC is visible to every rank; keep the GPUs "
      "in\n"
      "# PCI order and bind each rank's CPU threads to its NUMA node (numactl, or the launcher's "
      "core\n"
      "# binding).\n";
  for (const EnvVar& v : vars) {
    for (const std::string& line : v.comment) out += "# " + line + "\n";
    out += "export " + v.name + "=" +
           (v.user_may_override ? "${" + v.name + ":-" + v.value + "}" : v.value) + "\n";
  }
  return out;
}

int nodes_of(const Plan& p, const ClusterProfile& c) {
  return int(p.gpus()) <= c.gpus_per_node ? 1 : int(p.gpus()) / c.gpus_per_node;
}

int gpus_per_node_of(const Plan& p, const ClusterProfile& c) {
  return int(p.gpus()) < c.gpus_per_node ? int(p.gpus()) : c.gpus_per_node;
}

int padded_vocab(int vocab, int tp) {
  const int multiple = kVocabDivisibleBy * tp;
  return (vocab + multiple - 1) / multiple * multiple;
}

void add_layer_arch(ArgGroup& g, const ModelSpec& m, bool biases_disabled,
                    const LayerArchFlags& f) {
  const LayerArch& x = m.arch;
  auto lacks = [&](const std::string& what, const std::string& effect) {
    g.notes.push_back(fmt("{}: {} has no flag for this; {}", what, f.framework, effect));
  };
  if (double(m.heads) * m.head_dim() != m.hidden) {
    const std::string why =
        fmt("head_dim: {} heads x {} != hidden {}", m.heads, m.head_dim(), m.hidden);
    if (f.kv_channels)
      g.args.push_back({f.kv_channels, std::to_string(m.head_dim()), why});
    else
      lacks(why, "it would train heads of hidden / heads");
  }
  if (biases_disabled && x.qkv_bias) {
    if (f.qkv_bias)
      g.args.push_back({f.qkv_bias, "", "the model's Q, K and V biases"});
    else
      lacks("the model's Q, K and V biases", "it trains without them (the prediction has them)");
  }
  if (biases_disabled && (x.proj_bias || x.mlp_bias))
    lacks("biases on the output projection or the MLP alone",
          "--disable-bias-linear drops them (the prediction has them)");
  if (x.qk_norm) {
    if (f.qk_norm)
      g.args.push_back({f.qk_norm, "", "per-head query and key norms"});
    else
      lacks("per-head query and key norms", "it trains without them (the prediction has them)");
  }
  if (x.gelu_gate && m.swiglu)
    lacks("a GELU-gated MLP (GeGLU)",
          "--swiglu trains a SiLU gate instead, at the same cost as the prediction's");
  if (x.sandwich_norms)
    lacks("norms after attention and after the MLP (Gemma 2)",
          "it trains without them (the prediction has them)");
  if (x.sliding_window > 0 && x.local_layers > 0 && x.sliding_window < m.seq_len) {
    const std::string what = fmt("a sliding window of {} keys on {:.0f}% of the layers",
                                 x.sliding_window, 100 * x.local_layers);
    const char* effect =
        "it trains full causal attention there, slower than the prediction, which has the window";
    const bool every_layer = x.local_layers == 1;
    if (f.window && (every_layer || (x.global_every > 1 && f.window_skip))) {
      // A window of W keys is (left, right) = (W - 1, 0): the query and the W - 1 keys before it
      // (Megatron-LM's gpt-oss example: --window-size 127,0 for sliding_window 128).
      g.args.push_back({f.window, fmt("{},0", x.sliding_window - 1), what});
      if (!every_layer)
        g.args.push_back({f.window_skip, std::to_string(x.global_every),
                          fmt("one layer in {} global (layer_number % {} == 0), the others local",
                              x.global_every, x.global_every)});
    } else if (f.window) {
      g.notes.push_back(
          fmt("{}: {}'s {} is not written here (the model's local layers do not "
              "repeat every N layers); {}",
              what, f.framework, f.window, effect));
    } else {
      lacks(what, effect);
    }
  }
}

std::string integer_rope_theta(const ModelSpec& m, const std::string& flag) {
  if (m.rope_theta != std::floor(m.rope_theta))
    refuse(
        fmt("{} is an integer (type=int); the model's rope_theta {:g} is not", flag, m.rope_theta));
  return fmt("{:.0f}", m.rope_theta);
}

std::string header(const EmitRequest& r, const std::string& framework_name) {
  const Plan& p = r.plan;
  const Estimate& e = r.estimate;
  std::string h =
      fmt("# Generated by planner {} for {}. Regenerate it (planner emit) rather than "
          "edit it.\n",
          PLANNER_VERSION, framework_name);
  h += "# plan       --plan \"" + to_plan_string(p) + "\"\n";
  h += "# model      " + r.model.name + "  " + r.model_file + "  sha256:" + r.model_sha256 + "\n";
  h += "# cluster    " + r.cluster.name + "  " + r.cluster_file + "  sha256:" + r.cluster_sha256 +
       "\n";
  h +=
      fmt("# world      {} GPUs = {} nodes x {}; tp {} x pp {} x dp {} x cp {}; {} micro-batches "
          "of {} per iteration\n",
          int(p.gpus()), nodes_of(p, r.cluster), gpus_per_node_of(p, r.cluster), p.tp, p.pp, p.dp,
          p.cp, p.microbatches(), p.mbs);
  h +=
      fmt("# predicted  iteration {:.4f} s, {:.0f} tokens/s, {:.1f} model TFLOP/s per GPU (MFU "
          "{:.1f}%)\n",
          e.iteration_time_s, e.tokens_per_s, e.tflops_per_gpu, 100 * e.mfu);
  h += fmt("# predicted  memory {:.2f} GiB per GPU of {:.2f} GiB (most loaded pipeline stage)\n",
           e.memory_bytes / kGiB, e.memory_limit_bytes / kGiB);
  if (!r.stack_note.empty()) h += "# stack      " + r.stack_note + "\n";
  return h;
}

ArgGroup schedule_args() {
  return {"Training schedule, logging, evaluation: not part of the plan; set them for your run.",
          {{"--train-iters", fmt("\"${{TRAIN_ITERS:-{}}}\"", kTrainIters), ""},
           {"--lr", fmt("\"${{LR:-{:.1e}}}\"", kLearningRate), ""},
           {"--min-lr", fmt("\"${{MIN_LR:-{:.1e}}}\"", kMinLearningRate), ""},
           {"--lr-decay-style", "cosine", ""},
           {"--lr-warmup-iters", fmt("\"${{WARMUP_ITERS:-{}}}\"", kWarmupIters), ""},
           {"--weight-decay", fmt("{}", kWeightDecay), ""},
           {"--adam-beta1", fmt("{}", kAdamBeta1), ""},
           {"--adam-beta2", fmt("{}", kAdamBeta2), ""},
           {"--clip-grad", fmt("{:.1f}", kGradClip), ""},
           {"--log-interval", "1", "compare its iteration time with the prediction"},
           {"--eval-interval", "\"${EVAL_INTERVAL:-1000}\"", ""},
           {"--eval-iters", "\"${EVAL_ITERS:-10}\"", ""}},
          {}};
}

std::string checkpoint_lines() {
  return "if [[ -n \"${CHECKPOINT_DIR:-}\" ]]; then\n"
         "  TRAINING_ARGS+=(--save \"$CHECKPOINT_DIR\" --load \"$CHECKPOINT_DIR\" "
         "--save-interval \"${SAVE_INTERVAL:-1000}\")\n"
         "fi\n";
}

/// The site's settings (time, partition, account) as placeholders: a #SBATCH line cannot read a
/// variable, but sbatch reads its input environment variables over the script's lines.
std::string site_lines() {
  return "# Site settings, yours to give: sbatch reads SBATCH_TIMELIMIT (--time), "
         "SBATCH_PARTITION\n"
         "# (--partition) and SBATCH_ACCOUNT (--account) from its environment, e.g.\n"
         "#   SBATCH_TIMELIMIT=04:00:00 SBATCH_PARTITION=gpu SBATCH_ACCOUNT=myproject sbatch ...\n"
         "# or fill in these lines and remove one '#' from each:\n"
         "##SBATCH --time=<HH:MM:SS>\n##SBATCH --partition=<partition>\n"
         "##SBATCH --account=<account>\n";
}

/// SRUN_ARGS: pyxis/enroot's container flags when CONTAINER_IMAGE is set
/// (configs/frameworks/pyxis-srun-args.txt).
std::string container_lines() {
  return std::string("# ---- Container (pyxis/enroot) ") + std::string(60, '-') +
         "\n"
         "# CONTAINER_IMAGE: an enroot URI (nvcr.io#nvidia/pytorch:<tag>) or a .sqsh file\n"
         "# with Megatron-LM's dependencies. Each node's torchrun runs in it, with\n"
         "# MEGATRON_LM_DIR (absolute) mounted at its own path and CONTAINER_MOUNTS\n"
         "# (SRC[:DST],...) for data and checkpoints. Unset: the nodes' own Python.\n"
         "SRUN_ARGS=()\n"
         "if [[ -n \"${CONTAINER_IMAGE:-}\" ]]; then\n"
         "  SRUN_ARGS+=(--container-image \"$CONTAINER_IMAGE\"\n"
         "             --container-mounts "
         "\"$MEGATRON_LM_DIR${CONTAINER_MOUNTS:+,$CONTAINER_MOUNTS}\")\n"
         "fi\n";
}

}  // namespace detail
}  // namespace planner::emit
