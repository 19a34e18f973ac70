// torchtitan (pytorch/torchtitan at b5bcd76c): a recipe module whose function returns the plan's
// Trainer.Config, derived from torchtitan's own Llama 3 recipe of the model's flavour, and a
// torchrun launcher. At that commit a run is configured by such a function (torchtitan/config/
// README.md: the TOML job files are gone and the --section.option flags are frozen). Every name
// the recipe sets is in configs/frameworks/torchtitan-config-fields.txt, read from the source.
#include "common.h"

namespace planner::emit {
namespace {

using detail::env_block;
using detail::header;
using detail::nccl_env;
using detail::torchrun_world;

constexpr const char* kCommit = info(Framework::torchtitan).version;

/// The recipe's module and function: MODULE and CONFIG of torchtitan's run_train.sh.
constexpr const char* kModule = "planner_recipe";
constexpr const char* kFunction = "planner_plan";

/// torchtitan's Llama 3 flavours (torchtitan/models/llama3/__init__.py at b5bcd76c: _8b, _70b,
/// _405b; ffn = compute_ffn_hidden_dim(dim, multiple_of, ffn_dim_multiplier): 14336, 28672,
/// 53248), untied embeddings, and the recipe of each (models/llama3/config_registry.py).
struct Flavour {
  const char* name;
  int layers, hidden, heads, kv_heads, ffn, vocab;
  const char* recipe;
};
constexpr Flavour kFlavours[] = {{"8B", 32, 4096, 32, 8, 14336, 128256, "llama3_8b"},
                                 {"70B", 80, 8192, 64, 8, 28672, 128256, "llama3_70b"},
                                 {"405B", 126, 16384, 128, 8, 53248, 128256, "llama3_405b"}};

/// The flavour whose shape `m` has, or nullptr.
const Flavour* flavour_of(const ModelSpec& m) {
  if (!m.swiglu || m.tied_embeddings || !m.encoders.empty()) return nullptr;
  for (const Flavour& f : kFlavours)
    if (m.layers == f.layers && m.hidden == f.hidden && m.heads == f.heads &&
        m.kv_heads == f.kv_heads && m.ffn == f.ffn && m.vocab == f.vocab)
      return &f;
  return nullptr;
}

std::string py_bool(bool b) { return b ? "True" : "False"; }

/// One assignment line with its comment.
std::string set(const std::string& path, const std::string& value, const std::string& why = "") {
  std::string line = "    config." + path + " = " + value;
  if (!why.empty()) {
    line.resize(std::max<size_t>(line.size() + 2, 72), ' ');
    line += "# " + why;
  }
  return line + "\n";
}

std::string pipeline_schedule(const Plan& p) {
  if (p.vpp > 1) return "Interleaved1F1B";
  return p.schedule == Schedule::gpipe ? "GPipe" : "1F1B";
}

std::string recipe(const EmitRequest& r, const Flavour& f) {
  const Plan& p = r.plan;
  const ModelSpec& m = r.model;
  const bool fp8 = is_fp8(p.dtype), mx = p.dtype == Dtype::mxfp8;
  const bool async_tp = overlaps_of(p, r.cluster).tp_comm && p.tp > 1;
  std::string s = header(r, "torchtitan");
  s += fmt(
      "#\n# torchtitan recipe: the plan as a Trainer.Config, derived from torchtitan's own {}\n"
      "# (torchtitan/models/llama3/config_registry.py at commit {}). Run it with\n"
      "# torchtitan_launch.sh ({}.{}); names: configs/frameworks/torchtitan-config-fields.txt.\n",
      f.recipe, kCommit, kModule, kFunction);
  s += "\n";
  if (fp8)
    s += fmt("from torchtitan.components.quantization import {}\n",
             mx ? "MXFP8LinearConverter" : "Float8LinearConverter");
  if (p.recompute == Recompute::full)
    s += "from torchtitan.distributed.activation_checkpoint import FullAC\n";
  s += "from torchtitan.models.llama3 import model_registry\n";
  s += fmt("from torchtitan.models.llama3.config_registry import {}\n", f.recipe);
  s += "from torchtitan.trainer import Trainer\n\n\n";
  s += fmt("def {}() -> Trainer.Config:\n    config = {}()\n", kFunction, f.recipe);
  s += fmt("    # Parallelism: {} GPUs = dp {} x tp {} x pp {} x cp {}\n", int(p.gpus()), p.dp,
           p.tp, p.pp, p.cp);
  const bool shard = p.zero == 3;
  s += set("parallelism.data_parallel_replicate_degree", std::to_string(shard ? 1 : p.dp),
           shard ? "" : "zero=0: DDP, the gradients all-reduced");
  s += set("parallelism.data_parallel_shard_degree", std::to_string(shard ? p.dp : 1),
           shard ? "zero=3: FSDP2 shards parameters, gradients, optimizer" : "");
  // ZeRO-3 as priced: without a pipeline the parameters gathered again for every micro-batch's
  // backward (torchtitan's "default" keeps the norm and output gathered too, distributed/fsdp.py);
  // under one they stay gathered through the step, its default there (cost/memory.h
  // zero3_pipelined).
  if (shard)
    s += set("parallelism.fsdp_reshard_after_forward", p.pp > 1 ? "\"never\"" : "\"always\"",
             p.pp > 1 ? "zero=3 under PP: the stage's weights gathered once a step"
                      : "zero=3: resharded after each forward");
  s += set("parallelism.tensor_parallel_degree", std::to_string(p.tp));
  if (p.tp > 1)
    s += set("parallelism.enable_sequence_parallel", py_bool(p.sp), fmt("sp={}", int(p.sp)));
  s += set("parallelism.context_parallel_degree", std::to_string(p.cp));
  if (p.cp > 1)
    s += set("parallelism.context_parallel_load_balancer", "\"ptrr\"",
             "FlexAttention's balancer (headtail is SDPA's)");
  s += set("parallelism.pipeline_parallel_degree", std::to_string(p.pp));
  if (p.pp > 1) {
    // The embedding and the output weigh one layer each under split=embed_loss, none otherwise;
    // layers_per_stage makes the stages pp x vpp (distributed/pipeline_parallel.py).
    const int weight = p.split == PipelineSplit::embed_loss ? 1 : 0;
    const int stages = p.pp * std::max(1, p.vpp);
    s += set("parallelism.pipeline_parallel_schedule", fmt("\"{}\"", pipeline_schedule(p)),
             p.vpp > 1 ? fmt("vpp={}", p.vpp) : "");
    s += set("parallelism.pipeline_parallel_first_stage_less_layers", std::to_string(weight),
             weight ? "split=embed_loss" : "split=even");
    s += set("parallelism.pipeline_parallel_last_stage_less_layers", std::to_string(weight));
    s += set("parallelism.pipeline_parallel_layers_per_stage",
             std::to_string((m.layers + 2 * weight) / stages), fmt("{} stages", stages));
    s += set("parallelism.num_pp_microbatches", std::to_string(p.microbatches()),
             "the whole local batch in one accumulation step");
    // Trainer.Config._validate_cuda_graphs refuses pipeline parallelism with CUDA graphs on.
    s += set("training.disable_cuda_graphs", "True", "CUDA graphs do not run with PP");
  }
  s += fmt("    # Batch: {} sequences of {} tokens = mbs {} x dp {} x {} micro-batches\n", p.gbs,
           m.seq_len, p.mbs, p.dp, p.microbatches());
  s += set("training.max_context_length", std::to_string(m.seq_len));
  s += set("training.num_tokens_per_microbatch_per_dp_rank",
           std::to_string(1LL * p.mbs * m.seq_len), fmt("mbs={}", p.mbs));
  s += set("training.num_tokens_per_train_step", std::to_string(1LL * p.gbs * m.seq_len),
           fmt("gbs={}", p.gbs));
  s += set("training.mixed_precision_param", "\"bfloat16\"");
  s += set("activation_checkpoint",
           p.recompute == Recompute::full ? std::string("FullAC.Config()") : "None",
           p.recompute == Recompute::full ? "recompute=full" : "recompute=none");
  // Float8 linears want the model compiled (the 405B recipe's own choice); async TP needs it.
  const bool compiled = fp8 || async_tp;
  s += set("compile.enable", py_bool(compiled),
           compiled ? (fp8 ? (mx ? "MXFP8 linears run compiled" : "float8 linears run compiled")
                           : "async TP runs compiled")
                    : "");
  s += set("compile.enable_async_tensor_parallel", py_bool(async_tp),
           async_tp ? "tp_comm_overlap: TP collectives pipelined with their matmuls" : "");
  // MXFP8LinearConverter converts the Linear configs whose name contains one of `fqns`
  // (components/quantization/mx.py); "layers" is every decoder linear, as the recipes' own use.
  if (fp8)
    s +=
        fmt("    config.model_spec = model_registry(\n        \"{}\",\n        converters=[\n"
            "            {}.Config(\n"
            "                {},  # the output layer stays bf16, as predicted\n"
            "                model_compile_enabled=True,\n            ),\n        ],\n    )\n",
            f.name, mx ? "MXFP8LinearConverter" : "Float8LinearConverter",
            mx ? "fqns=[\"layers\"]" : "filter_fqns=[\"lm_head\"]");
  else
    s += set("model_spec", fmt("model_registry(\"{}\")", f.name), "bf16 linears");
  s += "    return config\n";
  return s;
}

/// torchrun's default rendezvous port, as torchtitan's scripts leave it.
constexpr int kTorchtitanMasterPort = 29500;

std::string launcher(const EmitRequest& r) {
  const Plan& p = r.plan;
  std::string s = "#!/usr/bin/env bash\n" + header(r, "torchtitan");
  s += fmt(
      "#\n# torchtitan's trainer under torchrun, one torchrun per node, with the recipe beside\n"
      "# this script ({}.py). One node: TORCHTITAN_DIR=/path/to/torchtitan bash "
      "torchtitan_launch.sh\n"
      "# Several: run it on every node with NNODES, NODE_RANK (0..NNODES-1), MASTER_ADDR (node\n"
      "# 0's address) and MASTER_PORT in the environment. TORCHTITAN_DIR: a checkout at commit {}\n"
      "# with the tokenizer of the recipe's hf_assets_path downloaded (its scripts/"
      "download_hf_assets.py).\n"
      "# torchrun's flags: configs/frameworks/torchrun-args.txt.\n",
      kModule, kCommit);
  s += fmt(
      "set -euo pipefail\n: \"${{TORCHTITAN_DIR:?set TORCHTITAN_DIR to a torchtitan checkout at "
      "commit {}}}\"\nHERE=\"$(cd \"$(dirname \"${{BASH_SOURCE[0]}}\")\" && pwd)\"\n\n",
      kCommit);
  s += env_block(r.cluster, nccl_env(r.cluster, r.estimate)) + "\n";
  s += torchrun_world(p, r.cluster, kTorchtitanMasterPort,
                      {{"-m", "", "the script below is a module"}});
  // torchtitan.train's own options (config/manager.py): the recipe's module and function.
  s += detail::shell_array(
      "TORCHTITAN_ARGS",
      {{"The plan: the recipe beside this script",
        {{"--module", kModule, "on PYTHONPATH below"}, {"--config", kFunction, ""}},
        {}}});
  s += "\ncd \"$TORCHTITAN_DIR\"\n"
       "export PYTHONPATH=\"$HERE${PYTHONPATH:+:$PYTHONPATH}\"\n"
       "export PYTORCH_ALLOC_CONF=\"${PYTORCH_ALLOC_CONF:-expandable_segments:True}\"\n"
       "exec torchrun \"${TORCHRUN_ARGS[@]}\" torchtitan.train \"${TORCHTITAN_ARGS[@]}\"\n";
  return s;
}

}  // namespace

const char* torchtitan_flavour(const ModelSpec& m) {
  const Flavour* f = flavour_of(m);
  return f ? f->name : nullptr;
}

std::vector<EmittedFile> emit_torchtitan(const EmitRequest& r) {
  check_expressible(Framework::torchtitan, r.model, r.cluster, r.plan);  // refuses other shapes
  if (const auto why = why_not_split(Framework::torchtitan, r.model, r.plan, r.split))
    detail::refuse(*why);
  const Flavour* f = flavour_of(r.model);
  if (!f) detail::refuse("no torchtitan Llama 3 flavour has this model's shape");
  return {{std::string(kModule) + ".py", recipe(r, *f), false},
          {"torchtitan_launch.sh", launcher(r), true}};
}

}  // namespace planner::emit
