#pragma once
/// Launch configurations for one plan: what a user runs to train with it (Megatron-LM, DeepSpeed).
/// The emitters are pure: they build every file in memory and refuse, with an InputError, a plan
/// the framework cannot express. Reading the inputs and writing files is in write.cc.
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "planner/cluster.h"
#include "planner/estimate.h"
#include "planner/framework.h"
#include "planner/io/output.h"
#include "planner/model.h"
#include "planner/plan.h"

namespace planner::emit {

using planner::Framework;  // framework.h: what each framework can run, and its stack
using planner::to_string;

/// One launch file: its name inside the output folder, its bytes, whether it is a script.
using EmittedFile = io::NamedContent;

/// Everything the emitters read. `estimate` is planner::estimate() of (model, cluster, plan).
struct EmitRequest {
  ModelSpec model;
  ClusterProfile cluster;
  Plan plan;
  Estimate estimate;
  std::string stack_note;  ///< how a legacy profile block was adapted
  /// How the layers are split over the pipeline stages: the plan's split (stage_split);
  /// Megatron-LM writes it with megatron_split_args, DeepSpeed refuses any but the even one.
  StageSplit split;
  std::string model_file, cluster_file;      ///< as the user named them
  std::string model_sha256, cluster_sha256;  ///< of the files' bytes, lower-case hex
};

/// Throws InputError (option --plan) when the framework cannot run `p` as planned (why_not in
/// framework.h, the function the search prunes with) or the launch files cannot express it (a
/// model with encoders: pretrain_gpt.py trains a decoder; for torchtitan, a model none of its
/// Llama 3 flavours has the shape of). Pure; call it before estimating.
void check_expressible(Framework f, const ModelSpec& m, const ClusterProfile& c, const Plan& p);

/// The files to write, in a fixed order. Checks check_expressible() first.
std::vector<EmittedFile> emit_files(Framework f, const EmitRequest& r);
/// Megatron-LM: a torchrun launcher (single or multi node) and a Slurm sbatch script.
std::vector<EmittedFile> emit_megatron(const EmitRequest& r);
/// DeepSpeed: ds_config.json, a launcher script (Megatron-DeepSpeed when tp > 1 or pp > 1),
/// a hostfile template and the .deepspeed_env the multi-node runner forwards.
std::vector<EmittedFile> emit_deepspeed(const EmitRequest& r);

/// torchtitan: a recipe module (planner_recipe.py, a function returning the plan's Trainer.Config
/// derived from torchtitan's Llama 3 recipe of the model's flavour) and a torchrun launcher.
std::vector<EmittedFile> emit_torchtitan(const EmitRequest& r);
/// The torchtitan Llama 3 flavour ("8B", "70B", "405B") whose shape `m` has, or nullptr: its
/// recipes build their models from torchtitan's own registry.
const char* torchtitan_flavour(const ModelSpec& m);

/// One command-line flag and its value ("" for a store_true flag).
using FlagValue = std::pair<std::string, std::string>;
/// Megatron-LM's flags for the stage split `s` of `m`'s layers over `p`'s pipeline stages, in this
/// order: --decoder-first-pipeline-num-layers N, --decoder-last-pipeline-num-layers N,
/// --account-for-embedding-in-pipeline-split, --account-for-loss-in-pipeline-split, each only when
/// set (none for the even split). Throws InputError (option --plan) with why_not_split's reason
/// for a split Megatron-LM refuses. Pure.
std::vector<FlagValue> megatron_split_args(const ModelSpec& m, const Plan& p, const StageSplit& s);

/// SHA-256 (FIPS 180-4) of `bytes`, lower-case hex.
std::string sha256_hex(std::string_view bytes);

// ---- I/O (write.cc) ----------------------------------------------------------------------------

/// Hashes the two input files' bytes (as read once, and loaded as `model` and `cluster`) and
/// returns the request for `plan` on the stack `f` runs (execution_stack). The prediction is
/// `estimated` when given (the search's own, for `suggest --emit`: the header says what the table
/// said), else one simulation of the plan on the even split (`planner emit`). Throws InputError
/// when the plan is structurally invalid or does not fit in memory.
EmitRequest prepare(Framework f, const std::string& model_file, const std::string& model_bytes,
                    const ModelSpec& model, const std::string& cluster_file,
                    const std::string& cluster_bytes, const ClusterProfile& cluster,
                    const Plan& plan, const EstimateOptions& o,
                    const Estimate* estimated = nullptr);

}  // namespace planner::emit
