#pragma once
/// Launch configurations for one plan: what a user runs to train with it (Megatron-LM, DeepSpeed).
/// The emitters are pure: they build every file in memory and refuse, with an InputError, a plan
/// the framework cannot express. Reading the inputs and writing files is in write.cc.
#include <string>
#include <string_view>
#include <vector>

#include "planner/cluster.h"
#include "planner/estimate.h"
#include "planner/io/output.h"
#include "planner/model.h"
#include "planner/plan.h"

namespace planner::emit {

enum class Framework { megatron, deepspeed };
const char* to_string(Framework f);
/// "megatron" or "deepspeed"; anything else throws InputError naming `option`.
Framework parse_framework(const std::string& text, const std::string& option);

/// One launch file: its name inside the output folder, its bytes, whether it is a script.
using EmittedFile = io::NamedContent;

/// Everything the emitters read. `estimate` is planner::estimate() of (model, cluster, plan).
struct EmitRequest {
  ModelSpec model;
  ClusterProfile cluster;
  Plan plan;
  Estimate estimate;
  std::string stack_note;                    ///< how the profile's software stack was adapted
  std::string model_file, cluster_file;      ///< as the user named them
  std::string model_sha256, cluster_sha256;  ///< of the files' bytes, lower-case hex
};

/// Throws InputError (option --plan) when the framework cannot run `p` as planned: world size not
/// tp*pp*dp*cp whole nodes, gbs not mbs*dp*accumulation, layers not splitting as the framework
/// needs, or a feature it lacks (Megatron-LM ZeRO >= 2; DeepSpeed pipeline with ZeRO >= 2,
/// interleaving, context parallelism, fp8). Pure; call it before estimating.
void check_expressible(Framework f, const ModelSpec& m, const ClusterProfile& c, const Plan& p);

/// The files to write, in a fixed order. Checks check_expressible() first.
std::vector<EmittedFile> emit_files(Framework f, const EmitRequest& r);
/// Megatron-LM: a torchrun launcher (single or multi node) and a Slurm sbatch script.
std::vector<EmittedFile> emit_megatron(const EmitRequest& r);
/// DeepSpeed: ds_config.json, a launcher script (Megatron-DeepSpeed when tp > 1 or pp > 1),
/// a hostfile template and the .deepspeed_env the multi-node runner forwards.
std::vector<EmittedFile> emit_deepspeed(const EmitRequest& r);

/// SHA-256 (FIPS 180-4) of `bytes`, lower-case hex.
std::string sha256_hex(std::string_view bytes);

// ---- I/O (write.cc) ----------------------------------------------------------------------------

/// Turns off what the profile's software stack does but framework `f` cannot (DeepSpeed: TP
/// communication overlap, which Megatron-DeepSpeed lacks, and the ZeRO-1/2 parameter gather beside
/// the next forward), so that predictions match the run. Returns a note saying what changed, or ""
/// when nothing did.
std::string adapt_stack(Framework f, SoftwareStack& s);

/// Hashes the two input files' bytes (as read once, and loaded as `model` and `cluster`),
/// estimates `plan` on the stack `f` runs (adapt_stack) and returns the request. Throws
/// InputError when the plan is structurally invalid or does not fit in memory.
EmitRequest prepare(Framework f, const std::string& model_file, const std::string& model_bytes,
                    const ModelSpec& model, const std::string& cluster_file,
                    const std::string& cluster_bytes, const ClusterProfile& cluster,
                    const Plan& plan, const EstimateOptions& o);

}  // namespace planner::emit
