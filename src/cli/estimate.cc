#include <iostream>

#include "cli/commands.h"
#include "cli/common.h"
#include "planner/error.h"
#include "planner/io/knobs.h"
#include "planner/report/report.h"
#include "planner/units.h"

namespace planner::cli {
namespace {

struct EstimateArgs {
  std::string model, cluster, gpus, plan, format = "text", dtype, train_tokens;
  int global_batch = 0;
  bool tp_across_nodes = false;
  double memory_limit_GiB = 0;
};

/// Completes a parsed --plan: dp from the GPU count, gbs from --global-batch.
Plan complete_plan(const EstimateArgs& a, const Inputs& in) {
  Plan p = parse_plan(a.plan, "--plan");
  // --gpus, else the plan's own dp*tp*pp*cp, else every GPU of the cluster.
  const int gpus = !a.gpus.empty() ? parse_gpus(a.gpus, in.cluster).back()
                   : p.dp > 0     ? p.gpus()
                                  : in.cluster.total_gpus();
  if (!a.dtype.empty()) p.dtype = parse_dtype(a.dtype);
  const int model_parallel = p.tp * p.pp * p.cp;
  if (p.dp == 0) {
    if (gpus % model_parallel != 0)
      throw InputError("", 0, "--plan",
                       "tp*pp*cp = " + std::to_string(model_parallel) + " does not divide " +
                           std::to_string(gpus) + " GPUs");
    p.dp = gpus / model_parallel;
  } else if (p.gpus() != gpus) {
    throw InputError("", 0, "--plan",
                     "dp*tp*pp*cp = " + std::to_string(p.gpus()) + " but --gpus is " + std::to_string(gpus));
  }
  if (p.gbs == 0) p.gbs = a.global_batch;
  if (p.gbs <= 0)
    throw InputError("", 0, "--plan", "no global batch: give gbs=... in --plan or --global-batch");
  return p;
}

int run_estimate(const EstimateArgs& a) {
  const Inputs in = load_inputs(a.model, a.cluster);
  const Plan p = complete_plan(a, in);
  EstimateOptions o;
  o.tp_across_nodes = a.tp_across_nodes;
  o.memory_limit_bytes = a.memory_limit_GiB * kGiB;
  const Estimate e = estimate(in.model, in.cluster, p, o);
  if (e.rejection != Rejection::none && e.rejection != Rejection::out_of_memory)
    throw InputError("", 0, "--plan", e.reason + " (model " + in.model_file + ", cluster " + in.cluster_file + ")");
  if (e.rejection == Rejection::out_of_memory) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "out of memory: the plan needs %.1f GiB per GPU of %.1f GiB",
                  e.memory_bytes / kGiB, e.memory_limit_bytes / kGiB);
    throw InputError("", 0, "--plan", buf);
  }
  RunContext ctx{in.model_file, in.cluster_file, &in.model, &in.cluster, p.gpus(), p.gbs,
                 a.train_tokens.empty() ? 0 : io::parse_count(a.train_tokens, "--train-tokens")};
  if (a.format == "json")
    std::cout << estimate_json(ctx, e).dump(2) << "\n";
  else
    print_estimate_text(std::cout, ctx, e);
  return 0;
}

}  // namespace

void add_estimate(CLI::App& app, int* rc) {
  auto a = std::make_shared<EstimateArgs>();
  CLI::App* s = app.add_subcommand("estimate", "one plan's full breakdown and diagnostics");
  s->add_option("--model", a->model, "model YAML (configs/models/)")->required();
  s->add_option("--cluster", a->cluster, "cluster profile YAML (hw_profiles/)")->required();
  s->add_option("--gpus", a->gpus, "GPUs (default: dp*tp*pp*cp of the plan, else all)");
  s->add_option("--plan", a->plan, "e.g. \"tp=8,pp=8,mbs=1,gbs=1536,vpp=3,zero=1,recompute=selective,sp=1\"")
      ->required();
  s->add_option("--global-batch", a->global_batch, "global batch in sequences, if not in --plan");
  s->add_option("--dtype", a->dtype, "bf16 (default), fp16, fp8, tf32");
  s->add_option("--train-tokens", a->train_tokens, "report days and GPU-hours for this many tokens");
  s->add_flag("--tp-across-nodes", a->tp_across_nodes, "allow TP groups larger than a node");
  s->add_option("--memory-limit-GiB", a->memory_limit_GiB, "memory cap per GPU (default: HBM)");
  s->add_option("--format", a->format, "text or json")->check(CLI::IsMember({"text", "json"}));
  s->callback([a, rc] { *rc = run_estimate(*a); });
}

}  // namespace planner::cli
