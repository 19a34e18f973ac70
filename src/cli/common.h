#pragma once
#include <optional>
#include <string>
#include <vector>

#include "planner/accuracy.h"
#include "planner/cluster.h"
#include "planner/estimate.h"
#include "planner/model.h"
#include "planner/plan.h"

namespace planner::cli {

/// The model and cluster files, each read once (so a FIFO or a pipe works, and emit hashes the
/// bytes that were parsed).
struct Inputs {
  std::string model_file, cluster_file;
  std::string model_bytes, cluster_bytes;
  ModelSpec model;
  ClusterProfile cluster;
};

/// `model_file` and `cluster_file` may be shipped names (resolve_input).
Inputs load_inputs(const std::string& model_file, const std::string& cluster_file);

/// --model llama3-8b, --cluster dgx-h100-80gb: a word with no '/' that is not a file names
/// `folder`/NAME.yaml, else `folder`/NAME.json (the shipped Hugging Face configs of the models with
/// experts: --model qwen3-30b-a3b) ("configs/models", "hw_profiles"), looked up under the working
/// directory, then under the source tree the planner was built from (PLANNER_SOURCE_DIR). Anything
/// else is returned as given. A name found in neither throws InputError for `option` listing the
/// nearest shipped names.
std::string resolve_input(const std::string& text, const std::string& folder,
                          const std::string& option);

/// The accuracy bands suggest and estimate print (configs/accuracy/bands.csv under the working
/// directory, else the source tree); nullptr when there is none. Read once.
const AccuracyBands* shipped_bands();
/// The same for models with experts (configs/accuracy/moe-bands.csv: the MoE runs' errors).
const AccuracyBands* shipped_moe_bands();

/// The stems of the shipped .yaml and .json files in `folder` (configs/models, hw_profiles), under
/// the working directory and the source tree: "llama3-8b", "qwen3-30b-a3b", "dgx-h100-80gb".
std::vector<std::string> shipped_names(const std::string& folder);

/// The options that name one plan on one model and cluster (estimate, emit, validate); see
/// add_plan_options in commands.h.
struct PlanArgs {
  std::string model, cluster, gpus, nodes, plan, dtype;
  int global_batch = 0;
};
/// --tp-across-nodes and --memory-limit-GiB (suggest, estimate, emit, compare); see
/// add_limit_options in commands.h.
struct LimitArgs {
  bool tp_across_nodes = false;
  double memory_limit_GiB = 0;
  /// --framework: megatron (the default when empty), deepspeed, or (suggest) all.
  std::string framework;
};
/// The options of `a`, for the framework `a.framework` names (megatron when empty; "all", when
/// allowed, gives the first: the caller sets one framework per search).
EstimateOptions estimate_options(const LimitArgs& a, bool all_allowed = false);

/// The frameworks --framework names: one, or with `all_allowed` every one for "all".
std::vector<Framework> frameworks_of(const std::string& text, bool all_allowed);

/// The cluster as framework `f` runs on it: the profile's hardware with the execution stack of
/// `f` (framework.h). With `announce`, the change, if any, is said on stderr.
ClusterProfile cluster_for(const ClusterProfile& c, std::optional<Framework> f,
                           bool announce = true);

/// --gpus: one count or a set ("512,1024"; a range "4-1024" keeps the counts that can be placed);
/// default the profile's (ClusterProfile::default_gpus). Each must be placeable
/// (ClusterProfile::job_size_ok): any count inside one NVLink domain, whole hosts beyond.
std::vector<int> parse_gpus(const std::string& text, const ClusterProfile& c);

/// The --gpus text, or --nodes (a count or set of hosts) as GPUs when given.
std::string gpus_option(const std::string& gpus, const std::string& nodes, const ClusterProfile& c);

Dtype parse_dtype(const std::string& text);

/// --attention: "" (the profile's stack), "flash" or "unfused".
std::optional<AttentionKernel> parse_attention(const std::string& text);

/// Simulates `e`'s plan (on the stack of its framework) on its partition again with a trace and
/// streams it to `path` atomically. Throws InputError before any work when the trace would exceed
/// limits::kTraceEvents (see check_trace_size).
void write_trace(const Inputs& in, const Estimate& e, const EstimateOptions& o,
                 const std::string& path);

/// `p` as `estimate --plan` reports it: refined (the simulated schedule), and when over the
/// memory limit estimated as if it had the memory (its full breakdown, with the limit it exceeds
/// kept); the out-of-memory rejection itself where that fails too.
Estimate estimate_as_reported(const ModelSpec& m, const ClusterProfile& c, const Plan& p,
                              const EstimateOptions& o);

/// Throws InputError when `e` has a number that is not finite (see finite_result): no report
/// ever prints inf or nan.
void require_finite(const Estimate& e);

/// Refuses, before the search or the estimate starts, a --trace of `p` larger than the limit.
void check_trace_size(const Plan& p);

/// A parsed --plan completed for `estimate` and `emit`: dp from --gpus (else the plan's own
/// dp*tp*pp*cp, else every GPU of the cluster), gbs from --global-batch, dtype from --dtype.
Plan complete_plan(const std::string& plan, const std::string& gpus, const std::string& dtype,
                   int global_batch, const Inputs& in);

}  // namespace planner::cli
