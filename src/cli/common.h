#pragma once
#include <optional>
#include <string>
#include <vector>

#include "planner/cluster.h"
#include "planner/model.h"
#include "planner/estimate.h"
#include "planner/plan.h"

namespace planner::cli {

struct Inputs {
  std::string model_file, cluster_file;
  ModelSpec model;
  ClusterProfile cluster;
};

Inputs load_inputs(const std::string& model_file, const std::string& cluster_file);

/// The options that name one plan on one model and cluster (estimate, emit, validate); see
/// add_plan_options in commands.h.
struct PlanArgs {
  std::string model, cluster, gpus, plan, dtype;
  int global_batch = 0;
};
/// --tp-across-nodes and --memory-limit-GiB (suggest, estimate, emit, compare); see
/// add_limit_options in commands.h.
struct LimitArgs {
  bool tp_across_nodes = false;
  double memory_limit_GiB = 0;
};
EstimateOptions estimate_options(const LimitArgs& a);

/// --gpus: one count or a set ("512,1024", "256-1024" keeps node multiples); default all GPUs.
/// Each must be a positive multiple of gpus_per_node and at most the cluster's GPUs.
std::vector<int> parse_gpus(const std::string& text, const ClusterProfile& c);

Dtype parse_dtype(const std::string& text);

/// --attention: "" (the profile's stack), "flash" or "unfused".
std::optional<AttentionKernel> parse_attention(const std::string& text);

/// Simulates `e`'s plan on its partition again with a trace and writes it to `path` atomically.
void write_trace(const Inputs& in, const Estimate& e, const EstimateOptions& o, const std::string& path);

/// A parsed --plan completed for `estimate` and `emit`: dp from --gpus (else the plan's own
/// dp*tp*pp*cp, else every GPU of the cluster), gbs from --global-batch, dtype from --dtype.
Plan complete_plan(const std::string& plan, const std::string& gpus, const std::string& dtype,
                   int global_batch, const Inputs& in);

}  // namespace planner::cli
