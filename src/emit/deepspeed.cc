// DeepSpeed launch files. ds_config.json keys: microsoft/DeepSpeed's documented configuration
// (configs/frameworks/deepspeed-config-keys.txt); launcher flags and hostfile format:
// deepspeed/launcher/runner.py (configs/frameworks/deepspeed-launcher.txt); with tp > 1 or pp > 1
// the model runs in Megatron-DeepSpeed, whose flags are megatron/arguments.py of
// deepspeedai/Megatron-DeepSpeed at f1feb887 (configs/frameworks/megatron-deepspeed-args.txt).
#include <nlohmann/json.hpp>

#include "common.h"
#include "planner/cost/data_parallel.h"
#include "planner/cost/zero3.h"
#include "planner/io/json.h"
#include "planner/names.h"

namespace planner::emit {
namespace detail {
namespace {

constexpr const char* kMdsCommit =
    info(Framework::deepspeed).version;  // configs/frameworks/megatron-deepspeed-args.txt
/// DeepSpeed's defaults for the communication buckets (zero/config.py; docs agree): 5e8 elements,
/// the reduce bucket the ZeRO-3 model uses.
constexpr auto kBucketElements = static_cast<long long>(kZero3ReduceBucketParams);
/// ZeRO-3 defaults in deepspeed/runtime/zero/config.py (the docs table differs; the source wins);
/// the prefetch is the ZeRO-3 model's.
constexpr auto kStage3PrefetchBucket = static_cast<long long>(kZero3PrefetchParams);
constexpr long long kStage3PersistenceThreshold = 100000;
constexpr long long kStage3MaxLive = 1000000000;
/// Where NVMe offload swaps: a placeholder for the node's local NVMe mount (the README says to
/// set it; DeepSpeed's own examples use /local_nvme).
constexpr const char* kNvmePath = "/local_nvme";

bool uses_megatron(const Plan& p) { return p.tp > 1 || p.pp > 1; }

nlohmann::ordered_json zero_config(const ClusterProfile& c, const Plan& p) {
  nlohmann::ordered_json z;
  z["stage"] = p.zero;
  if (p.zero == 0) return z;
  // overlap_comm overlaps the gradient reduction (and, at stage 3, the parameter prefetch) with
  // the backward pass. Stages 1-2: on exactly when the execution stack, which the
  // prediction assumed, overlaps them, and never under the pipeline engine, which reduces after
  // the last backward (its ZeRO-1 reduce_gradients runs its own reduction only without
  // overlap_comm: stage_1_and_2.py at edaa72212). Stage 3: always, as the prediction
  // (src/cost/zero3.cc) and DeepSpeed's own stage-3 default
  // (ZERO3_OPTIMIZATION_OVERLAP_COMM_DEFAULT) have it.
  const bool overlap = p.zero == 3 || (overlaps_of(p, c).grad_reduce && !deepspeed_pipelined(c, p));
  z["overlap_comm"] = overlap;
  z["contiguous_gradients"] = true;
  z["reduce_scatter"] = true;
  z["reduce_bucket_size"] = kBucketElements;
  if (p.zero <= 2) z["allgather_bucket_size"] = kBucketElements;
  if (p.zero == 3) {
    z["stage3_prefetch_bucket_size"] = kStage3PrefetchBucket;
    z["stage3_param_persistence_threshold"] = kStage3PersistenceThreshold;
    z["stage3_max_live_parameters"] = kStage3MaxLive;
    z["stage3_max_reuse_distance"] = kStage3MaxLive;
    z["stage3_gather_16bit_weights_on_model_save"] = false;
    // ZeRO++ as its tutorial sets it and the prediction priced it: int8 weight gathers, the
    // secondary partition over the node's ranks of the group, int4 gradient reduce-scatters.
    if (p.zeropp) {
      z["zero_quantized_weights"] = true;
      z["zero_hpz_partition_size"] = hpz_partition(c, p);
      z["zero_quantized_gradients"] = true;
    }
  }
  // Offload (zero/offload_config.py): pinned host buffers, as the cost model's link rate
  // assumes; NVMe swaps pipelined with the CPU step (pipeline_read/write), as it assumes too.
  auto offload = [&](OffloadDevice d) {
    nlohmann::ordered_json o;
    o["device"] = name_of(d);
    o["pin_memory"] = true;
    if (d == OffloadDevice::nvme) o["nvme_path"] = kNvmePath;
    return o;
  };
  if (p.offload_optimizer != OffloadDevice::none) {
    auto o = offload(p.offload_optimizer);
    if (p.offload_optimizer == OffloadDevice::nvme) o["pipeline_read"] = o["pipeline_write"] = true;
    if (p.offload_pct < 100) o["ratio"] = p.offload_pct / 100.0;
    z["offload_optimizer"] = o;
  }
  if (p.offload_params != OffloadDevice::none) z["offload_param"] = offload(p.offload_params);
  return z;
}

/// The optimizer and schedule DeepSpeed builds from the config (the emitters' shared placeholders,
/// common.h): AdamW, and WarmupDecayLR, a linear warm-up from 0 to the peak rate, then a linear
/// decay to 0 at the last iteration (deepspeed/runtime/lr_schedules.py at 38327e07, WarmupDecayLR
/// and WarmupLR; the config keys are in configs/frameworks/deepspeed-config-keys.txt). Where the
/// config builds them: Megatron-DeepSpeed hands deepspeed.initialize its own optimizer and
/// scheduler (megatron/training.py, setup_model_and_optimizer), and DeepSpeed then uses those and
/// ignores these sections (runtime/engine.py, _configure_optimizer and _configure_lr_scheduler).
void optimizer_config(nlohmann::ordered_json& j, const Plan& p) {
  auto& o = j["optimizer"];
  o["type"] = "AdamW";
  // The compressed optimizers (deepspeed/runtime/fp16/onebit/{adam,zoadam,lamb}.py): the warm-up
  // at DeepSpeed's default length, NCCL's backend, which needs no CUDA-aware MPI.
  if (p.grad_compression != GradCompression::none) {
    const bool zo = p.grad_compression == GradCompression::zero_one_adam;
    o["type"] = zo                                                   ? "ZeroOneAdam"
                : p.grad_compression == GradCompression::onebit_lamb ? "OneBitLamb"
                                                                     : "OneBitAdam";
    o["params"][zo ? "var_freeze_step" : "freeze_step"] = kCompressionFreezeSteps;
    o["params"]["cuda_aware"] = false;
    o["params"]["comm_backend_name"] = "nccl";
  }
  o["params"]["lr"] = kLearningRate;
  o["params"]["betas"] = {kAdamBeta1, kAdamBeta2};
  o["params"]["eps"] = kAdamEps;
  o["params"]["weight_decay"] = kWeightDecay;
  auto& s = j["scheduler"];
  s["type"] = "WarmupDecayLR";
  s["params"]["warmup_min_lr"] = 0;
  s["params"]["warmup_max_lr"] = kLearningRate;
  s["params"]["warmup_num_steps"] = kWarmupIters;
  s["params"]["total_num_steps"] = kTrainIters;
  s["params"]["warmup_type"] = "linear";  // lr_schedules.py's default is "log"
}

/// train_batch_size = train_micro_batch_size_per_gpu x gradient_accumulation_steps x dp, where dp
/// is the data-parallel size of Megatron-DeepSpeed's mpu (runtime/config.py).
std::string ds_config(const ClusterProfile& c, const Plan& p) {
  nlohmann::ordered_json j;
  j["train_batch_size"] = p.gbs;
  j["train_micro_batch_size_per_gpu"] = p.mbs;
  j["gradient_accumulation_steps"] = p.microbatches();
  j["gradient_clipping"] = kGradClip;
  j["steps_per_print"] = 1;
  j["wall_clock_breakdown"] = false;
  if (p.dtype == Dtype::bf16) j["bf16"]["enabled"] = true;
  if (p.dtype == Dtype::fp16) {
    j["fp16"]["enabled"] = true;
    j["fp16"]["loss_scale"] = 0;  // 0: dynamic loss scaling from 2^initial_scale_power
    j["fp16"]["initial_scale_power"] = 16;
    j["fp16"]["loss_scale_window"] = 1000;
    j["fp16"]["hysteresis"] = 2;
    j["fp16"]["min_loss_scale"] = 1;
  }
  // The pipeline engine's bf16 optimizer as the prediction prices it (BF16_Optimizer: fp32
  // gradient accumulation; without the key DeepSpeed runs ZeRO-1's DeepSpeedZeroOptimizer with
  // bf16 gradients instead; engine.py _do_optimizer_sanity_check).
  if (deepspeed_bf16_optimizer(c, p)) j["data_types"]["grad_accum_dtype"] = "fp32";
  if (!uses_megatron(p)) optimizer_config(j, p);
  j["zero_optimization"] = zero_config(c, p);
  if (p.recompute != Recompute::none) {
    // Checkpoints stay whole on every TP rank, as the memory model assumes (sequence
    // parallelism, not partition_activations, shards them).
    auto& a = j["activation_checkpointing"];
    a["partition_activations"] = false;
    a["contiguous_memory_optimization"] = false;
    a["cpu_checkpointing"] = false;
    a["synchronize_checkpoint_boundary"] = false;
    a["profile"] = false;
  }
  return io::dump_json(j, 2) + "\n";
}

std::vector<EnvVar> deepspeed_env(const EmitRequest& r) {
  const Plan& p = r.plan;
  std::vector<EnvVar> v = nccl_env(r.cluster, r.estimate);
  if (p.sp)
    v.push_back(
        {"CUDA_DEVICE_MAX_CONNECTIONS",
         "1",
         {fmt("Megatron-DeepSpeed (validate_args at {}) refuses sequence parallelism", kMdsCommit),
          "without it: one CUDA work queue keeps TP communication in launch order."},
         false});
  if (p.dtype == Dtype::tf32)
    v.push_back({"TORCH_ALLOW_TF32_CUBLAS_OVERRIDE",
                 "1",
                 {"dtype=tf32: fp32 GEMMs on TF32 tensor cores (PyTorch's default is off)."},
                 false});
  return v;
}

/// DeepSpeed's multi-node runner forwards only NCCL*, PYTHON*, MV2*, UCX* (and MLFLOW*) variables
/// to the other nodes, plus the VAR=VAL lines of ./.deepspeed_env (runner.py).
bool forwarded_by_runner(const std::string& name) {
  for (const char* prefix : {"NCCL", "PYTHON", "MV2", "UCX", "MLFLOW"})
    if (name.rfind(prefix, 0) == 0) return true;
  return false;
}

std::string deepspeed_env_file(const EmitRequest& r) {
  std::string out;
  for (const EnvVar& v : deepspeed_env(r))
    if (!forwarded_by_runner(v.name)) out += v.name + "=" + v.value + "\n";
  return out;
}

ArgGroup mds_parallel_group(const Plan& p) {
  ArgGroup g{fmt("Parallelism: {} GPUs = tp {} x pp {} x dp {} (dp follows from the world size)",
                 int(p.gpus()), p.tp, p.pp, p.dp),
             {{"--tensor-model-parallel-size", std::to_string(p.tp), ""}},
             {}};
  if (p.pp > 1)
    g.args.push_back(
        {"--pipeline-model-parallel-size", std::to_string(p.pp), "DeepSpeed's pipeline engine"});
  else
    g.args.push_back({"--no-pipeline-parallel", "", "pp=1: DeepSpeed's plain engine"});
  if (p.sp) g.args.push_back({"--sequence-parallel", "", "needs CUDA_DEVICE_MAX_CONNECTIONS=1"});
  return g;
}

ArgGroup mds_memory_group(const Plan& p) {
  ArgGroup g{
      "Memory: recomputation (DeepSpeed's checkpointing, set up by ds_config.json), ZeRO", {}, {}};
  if (p.recompute == Recompute::selective)
    g.args.push_back({"--recompute-granularity", "selective", "core attention recomputed"});
  if (p.recompute == Recompute::full) {
    // GPTModelPipe checkpoints every checkpoint-num-layers layers with --checkpoint-activations.
    g.args.push_back({"--checkpoint-activations", "", "every layer recomputed ..."});
    g.args.push_back({"--checkpoint-num-layers", "1", "... from its own input"});
  }
  if (p.recompute != Recompute::none)
    g.args.push_back({"--deepspeed-activation-checkpointing", "", ""});
  g.args.push_back({"--zero-stage", std::to_string(p.zero), "= zero_optimization.stage"});
  // Megatron-DeepSpeed hands DeepSpeed its own optimizer, which ZeRO-Offload refuses unless it
  // is DeepSpeedCPUAdam (zero_force_ds_cpu_optimizer): --cpu-optimizer builds that one.
  if (p.offload_optimizer != OffloadDevice::none)
    g.args.push_back({"--cpu-optimizer", "", "DeepSpeedCPUAdam, as the offload requires"});
  return g;
}

ArgGroup mds_precision_group(const Plan& p, AttentionKernel attn) {
  ArgGroup g{fmt("Precision and attention: dtype={}, attention {}", to_string(p.dtype),
                 attn == AttentionKernel::flash ? "flash" : "unfused (Megatron's own kernels)"),
             {},
             {}};
  if (p.dtype == Dtype::bf16) g.args.push_back({"--bf16", "", "= bf16.enabled"});
  if (p.dtype == Dtype::fp16) g.args.push_back({"--fp16", "", "= fp16.enabled"});
  if (attn == AttentionKernel::flash) g.args.push_back({"--use-flash-attn-v2", "", ""});
  if (g.args.empty()) g.notes.push_back("tf32: fp32 training, TF32 GEMMs");
  return g;
}

ArgGroup mds_model_group(const EmitRequest& r) {
  const ModelSpec& m = r.model;
  ArgGroup g{fmt("Model: {} ({})", m.name, r.model_file),
             {{"--num-layers", std::to_string(m.layers), ""},
              {"--hidden-size", std::to_string(m.hidden), ""},
              {"--num-attention-heads", std::to_string(m.heads), ""}},
             {}};
  if (m.kv_heads < m.heads)
    g.args.push_back({"--num-key-value-heads", std::to_string(m.kv_heads), "GQA"});
  g.args.push_back({"--ffn-hidden-size", std::to_string(m.ffn), ""});
  if (m.swiglu) g.args.push_back({"--swiglu", "", ""});
  g.args.push_back({"--seq-length", std::to_string(m.seq_len), ""});
  g.args.push_back({"--max-position-embeddings", std::to_string(m.seq_len), ""});
  if (llama_style(m)) {
    g.args.push_back({"--use-rotary-position-embeddings", "", "Llama-style (SwiGLU/GQA)"});
    g.args.push_back(
        {"--rotary-position-embeddings-theta",
         integer_rope_theta(
             m, fmt("Megatron-DeepSpeed's --rotary-position-embeddings-theta at {}", kMdsCommit)),
         "the model's rope_theta"});
    g.args.push_back({"--normalization", "rmsnorm", ""});
    g.args.push_back({"--disable-bias-linear", "", ""});
    // Megatron-DeepSpeed's defaults are 0.1; Llama models train without dropout.
    g.args.push_back({"--attention-dropout", "0", "no dropout, as Llama-style models train"});
    g.args.push_back({"--hidden-dropout", "0", ""});
  }
  add_layer_arch(
      g, m, llama_style(m),
      {fmt("Megatron-DeepSpeed at {:.8}", kMdsCommit), "--kv-channels", nullptr, nullptr});
  if (!m.tied_embeddings) g.args.push_back({"--untie-embeddings-and-output-weights", "", ""});
  g.args.push_back({"--make-vocab-size-divisible-by", std::to_string(kVocabDivisibleBy),
                    fmt("vocab {} padded to {} (x tp {})", m.vocab,
                        padded_vocab(m.vocab, r.plan.tp), r.plan.tp)});
  return g;
}

std::vector<ArgGroup> megatron_ds_groups(const EmitRequest& r, AttentionKernel attn) {
  const Plan& p = r.plan;
  ArgGroup batch{"Batch (ds_config.json holds the same numbers)",
                 {{"--micro-batch-size", std::to_string(p.mbs), ""},
                  {"--global-batch-size", std::to_string(p.gbs),
                   fmt("= mbs {} x dp {} x {} accumulation steps", p.mbs, p.dp, p.microbatches())}},
                 {}};
  ArgGroup ds{
      "DeepSpeed",
      {{"--deepspeed", "", ""}, {"--deepspeed_config", "\"$SCRIPT_DIR/ds_config.json\"", ""}},
      {}};
  return {mds_parallel_group(p), batch, mds_memory_group(p), mds_precision_group(p, attn),
          mds_model_group(r),    ds};
}

std::string mds_data_lines(const ModelSpec& m) {
  std::string out =
      "# Data and tokenizer: not part of the plan. Megatron-DeepSpeed has no mock data: DATA_PATH\n"
      "# is a Megatron .bin/.idx prefix (absolute: the ranks start in this directory).\n"
      ": \"${DATA_PATH:?set DATA_PATH to a Megatron dataset prefix}\"\n";
  if (m.vocab == 50257)
    return out +
           "DATA_ARGS=(--data-path \"$DATA_PATH\" --split 949,50,1 "
           "--tokenizer-type GPT2BPETokenizer\n"
           "           --vocab-file \"${VOCAB_FILE:?set VOCAB_FILE to gpt2-vocab.json}\"\n"
           "           --merge-file \"${MERGE_FILE:?set MERGE_FILE to gpt2-merges.txt}\")\n";
  return out +
         fmt("# Vocabulary {}: a Hugging Face tokenizer (name or path) of that size.\n", m.vocab) +
         "DATA_ARGS=(--data-path \"$DATA_PATH\" --split 949,50,1 --tokenizer-type HFTokenizer\n"
         "           --tokenizer-model \"${TOKENIZER_MODEL:?set TOKENIZER_MODEL}\")\n";
}

std::string launcher_lines(const ClusterProfile& c, const Plan& p) {
  const int nodes = nodes_of(p, c);
  std::string out =
      fmt("# ---- Launcher: {} nodes x {} GPUs ------------------------------------------------\n",
          nodes, gpus_per_node_of(p, c));
  std::vector<Arg> args;
  if (nodes > 1) {
    out +=
        "# Run it on the first host of the hostfile; the runner reaches the others by ssh (pdsh)\n"
        "# and starts every rank in this directory, where it also reads .deepspeed_env.\n";
    args.push_back({"--hostfile", "\"${HOSTFILE:-$SCRIPT_DIR/hostfile}\"", ""});
  } else {
    out += "# One node: no hostfile, the runner uses this machine's GPUs.\n";
  }
  args.push_back({"--num_nodes", std::to_string(nodes), ""});
  args.push_back({"--num_gpus", std::to_string(gpus_per_node_of(p, c)), "GPUs per node"});
  args.push_back({"--master_port", "\"${MASTER_PORT:-29500}\"", ""});
  out += shell_array("LAUNCHER_ARGS", {{"", args, {}}});
  if (nodes > 1)
    out +=
        "if [[ -n \"${MASTER_ADDR:-}\" ]]; then LAUNCHER_ARGS+=(--master_addr \"$MASTER_ADDR\"); "
        "fi\n";
  return out;
}

std::string launch_script(const EmitRequest& r, const std::string& config_sha) {
  const Plan& p = r.plan;
  const AttentionKernel attn = attention_of(p, r.cluster);
  std::string s = "#!/usr/bin/env bash\n" + header(r, "DeepSpeed") + "#\n";
  s += uses_megatron(p)
           ? fmt("# DeepSpeed launcher running Megatron-DeepSpeed's pretrain_gpt.py (tp > 1 or pp "
                 "> 1)\n"
                 "# Flags: deepspeedai/Megatron-DeepSpeed megatron/arguments.py at {}\n"
                 "# (configs/frameworks/megatron-deepspeed-args.txt).\n",
                 kMdsCommit)
           : std::string(
                 "# DeepSpeed launcher running your training script (tp = pp = 1: ZeRO data\n"
                 "# parallelism only); the plan is all in ds_config.json.\n");
  s += "# ds_config.json (JSON has no comments; this header covers it) sha256:" + config_sha + "\n";
  if (uses_megatron(p))
    s +=
        "# It has no optimizer or scheduler: Megatron-DeepSpeed passes its own (TRAINING_ARGS) to\n"
        "# deepspeed.initialize, which then ignores the config's.\n";
  s += "set -euo pipefail\nSCRIPT_DIR=$(cd \"$(dirname \"${BASH_SOURCE[0]}\")\" && pwd)\n";
  if (uses_megatron(p))
    s += fmt(
        ": \"${{MEGATRON_DEEPSPEED_DIR:?set MEGATRON_DEEPSPEED_DIR to a Megatron-DeepSpeed "
        "checkout at {}}}\"\nMEGATRON_DEEPSPEED_DIR=$(cd \"$MEGATRON_DEEPSPEED_DIR\" && pwd)\n\n",
        kMdsCommit);
  else
    s += ": \"${TRAIN_SCRIPT:?set TRAIN_SCRIPT to a script that calls deepspeed.initialize with "
         "its parsed arguments}\"\n\n";
  s += env_block(r.cluster, deepspeed_env(r)) + "\n" + launcher_lines(r.cluster, p) + "\n";
  if (!uses_megatron(p)) {
    s += fmt(
        "# ds_config.json's optimizer (AdamW, lr {:g}) and scheduler (WarmupDecayLR: {} warm-up\n"
        "# steps, {} in all) are placeholders: set them for your run. They apply when your script\n"
        "# passes deepspeed.initialize no optimizer or lr_scheduler of its own.\n",
        kLearningRate, kWarmupIters, kTrainIters);
    if (p.recompute != Recompute::none)
      s += "# recompute: your model must checkpoint its layers with deepspeed.checkpointing.\n";
    s += shell_array(
        "DEEPSPEED_ARGS",
        {{"DeepSpeed's own arguments",
          {{"--deepspeed", "", ""}, {"--deepspeed_config", "\"$SCRIPT_DIR/ds_config.json\"", ""}},
          {}}});
    return s +
           "\ncd \"$SCRIPT_DIR\"\nexec deepspeed \"${LAUNCHER_ARGS[@]}\" \"$TRAIN_SCRIPT\" "
           "\"${DEEPSPEED_ARGS[@]}\"\n";
  }
  s +=
      "# ---- The plan and the model -----------------------------------------------------------\n";
  s += shell_array("MEGATRON_DS_ARGS", megatron_ds_groups(r, attn)) + "\n";
  s += mds_data_lines(r.model) + "\n" + shell_array("TRAINING_ARGS", {schedule_args()}) +
       checkpoint_lines();
  return s +
         "\ncd \"$SCRIPT_DIR\"\n"
         "exec deepspeed \"${LAUNCHER_ARGS[@]}\" \"$MEGATRON_DEEPSPEED_DIR/pretrain_gpt.py\" \\\n"
         "  \"${MEGATRON_DS_ARGS[@]}\" \"${DATA_ARGS[@]}\" \"${TRAINING_ARGS[@]}\"\n";
}

std::string hostfile(const EmitRequest& r) {
  const int nodes = nodes_of(r.plan, r.cluster);
  std::string s =
      header(r, "DeepSpeed") +
      fmt("#\n# DeepSpeed hostfile template: one \"<host> slots=<GPUs>\" line per node, "
          "{} nodes;\n# replace the names with hosts the first one reaches by "
          "passwordless ssh. Line order\n# is rank order. DeepSpeed's runner skips "
          "'#' lines (runner.py _parse_hostfile);\n# delete them for a release "
          "that does not.\n",
          nodes);
  for (int n = 0; n < nodes; ++n)
    s += fmt("worker-{} slots={}\n", n, gpus_per_node_of(r.plan, r.cluster));
  return s;
}

}  // namespace

}  // namespace detail

std::vector<EmittedFile> emit_deepspeed(const EmitRequest& r) {
  check_expressible(Framework::deepspeed, r.model, r.cluster, r.plan);
  if (const auto why = why_not_split(Framework::deepspeed, r.model, r.plan, r.split))
    detail::refuse(*why);
  const std::string config = detail::ds_config(r.cluster, r.plan);
  std::vector<EmittedFile> files = {
      {"ds_config.json", config, false},
      {"deepspeed_launch.sh", detail::launch_script(r, sha256_hex(config)), true}};
  if (detail::nodes_of(r.plan, r.cluster) > 1) {
    files.push_back({"hostfile", detail::hostfile(r), false});
    files.push_back({".deepspeed_env", detail::deepspeed_env_file(r), false});
  }
  return files;
}

}  // namespace planner::emit
