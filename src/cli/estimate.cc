#include <iostream>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/outputs.h"
#include "planner/error.h"
#include "planner/io/knobs.h"
#include "planner/report/report.h"
#include "planner/report/trace.h"
#include "planner/units.h"

namespace planner::cli {
namespace {

struct EstimateArgs {
  std::string model, cluster, gpus, plan, format = "text", dtype, train_tokens, trace, attention;
  int global_batch = 0;
  bool tp_across_nodes = false;
  double memory_limit_GiB = 0;
  OutputArgs extra;  ///< --seq-len, --plot, --report
};

int run_estimate(const EstimateArgs& a) {
  Inputs in = load_inputs(a.model, a.cluster);
  apply_seq_len(in, a.extra);
  Plan p = complete_plan(a.plan, a.gpus, a.dtype, a.global_batch, in);
  if (!a.attention.empty()) p.attention = parse_attention(a.attention);
  EstimateOptions o;
  o.tp_across_nodes = a.tp_across_nodes;
  o.memory_limit_bytes = a.memory_limit_GiB * kGiB;
  const Estimate e = refine(in.model, in.cluster, p, o);
  if (e.rejection == Rejection::out_of_memory) throw InputError("", 0, "--plan", rejection_message(e));
  if (!e.ok())
    throw InputError("", 0, "--plan", e.reason + " (model " + in.model_file + ", cluster " + in.cluster_file + ")");
  if (!a.trace.empty()) write_trace(in, e, o, a.trace);
  RunContext ctx{in.model_file, in.cluster_file, &in.model, &in.cluster, static_cast<int>(p.gpus()), p.gbs,
                 a.train_tokens.empty() ? 0 : io::parse_count(a.train_tokens, "--train-tokens")};
  if (a.format == "json")
    std::cout << estimate_json(ctx, e).dump(2) << "\n";
  else
    print_estimate_text(std::cout, ctx, e);
  write_estimate_outputs(in, ctx, e, a.extra, o);
  return 0;
}

}  // namespace

void add_estimate(CLI::App& app, int* rc) {
  auto a = std::make_shared<EstimateArgs>();
  CLI::App* s = app.add_subcommand("estimate", "one plan's full breakdown and diagnostics");
  s->add_option("--model", a->model, "model YAML (configs/models/) or Hugging Face config.json")->required();
  s->add_option("--cluster", a->cluster, "cluster profile YAML (hw_profiles/)")->required();
  s->add_option("--gpus", a->gpus, "GPUs (default: dp*tp*pp*cp of the plan, else all)");
  s->add_option("--plan", a->plan, "e.g. \"tp=8,pp=8,mbs=1,gbs=1536,vpp=3,zero=1,recompute=selective,sp=1\"")
      ->required();
  s->add_option("--global-batch", a->global_batch, "global batch in sequences, if not in --plan")->check(CLI::Range(1, 1 << 28));
  s->add_option("--dtype", a->dtype, "bf16 (default), fp16, fp8, tf32");
  s->add_option("--train-tokens", a->train_tokens, "report days and GPU-hours for this many tokens");
  s->add_flag("--tp-across-nodes", a->tp_across_nodes, "allow TP groups larger than a node");
  s->add_option("--memory-limit-GiB", a->memory_limit_GiB, "memory cap per GPU (default: HBM)")
      ->check(CLI::Range(0.0, 1e6));
  s->add_option("--format", a->format, "text or json")->check(CLI::IsMember({"text", "json"}));
  s->add_option("--trace", a->trace, "write the simulated iteration as a Chrome trace (Perfetto)");
  s->add_option("--attention", a->attention, "flash or unfused (default: the profile's software.attention)");
  add_output_options(s, a->extra, "the time breakdown and memory per GPU against capacity");
  s->callback([a, rc] { *rc = run_estimate(*a); });
}

}  // namespace planner::cli
