#include "cli/emit.h"

#include <algorithm>
#include <iostream>

#include "cli/commands.h"
#include "cli/outputs.h"
#include "planner/emit.h"
#include "planner/error.h"
#include "planner/limits.h"

namespace planner::cli {
namespace {

struct EmitArgs : PlanArgs, LimitArgs {
  std::string out;
  OutputArgs extra;  ///< --seq-len and --mtp-layers (the launch files' model)
};

int run_emit(const EmitArgs& a) {
  const Framework f = parse_framework(a.framework, "--framework", true);
  Inputs in = load_inputs(a.model, a.cluster);
  apply_seq_len(in, a.extra);
  const Plan p =
      complete_plan(a.plan, gpus_option(a.gpus, a.nodes, in.cluster), a.dtype, a.global_batch, in);
  emit::check_expressible(f, in.model, in.cluster, p);  // the framework's refusals come first
  const EstimateOptions o = estimate_options(a);
  const emit::EmitRequest r = emit::prepare(f, in.model_file, in.model_bytes, in.model,
                                            in.cluster_file, in.cluster_bytes, in.cluster, p, o);
  for (const std::string& path : io::write_file_set(a.out, emit::emit_files(f, r)))
    std::cout << path << "\n";
  return 0;
}

}  // namespace

void emit_top_plan(const Inputs& in, const SearchResult& r, const std::string& framework,
                   const std::string& out) {
  const Framework f = parse_framework(framework, "--emit", true);
  // The search ranked only plans the framework runs; with --framework all, the best of f's. The
  // emitter's own refusals (a model with encoders) remain.
  for (size_t rank = 0; rank < r.top.size(); ++rank) {
    const Estimate& e = r.top[rank];
    if (e.framework != f) continue;
    emit::check_expressible(f, in.model, in.cluster, e.plan);
    const emit::EmitRequest req =
        emit::prepare(f, in.model_file, in.model_bytes, in.model, in.cluster_file, in.cluster_bytes,
                      in.cluster, e.plan, EstimateOptions{}, &e);
    io::write_file_set(out, emit::emit_files(f, req));
    std::cerr << "planner: wrote " << to_string(f) << " launch files for plan " << rank + 1
              << " to " << out << "\n";
    return;
  }
  throw InputError("", 0, "--emit",
                   "none of the " + std::to_string(r.top.size()) + " listed plans is for " +
                       framework + "; list more with --top");
}

void add_emit(CLI::App& app, int* rc) {
  auto a = std::make_shared<EmitArgs>();
  CLI::App* s = app.add_subcommand(
      "emit", "write one plan's launch files (Megatron-LM, DeepSpeed, torchtitan)");
  add_plan_options(s, *a, "tp=8,pp=8,dp=16,mbs=1,gbs=1536,zero=1,recompute=selective,sp=1");
  add_limit_options(s, *a);
  s->add_option("--framework", a->framework, "megatron, deepspeed or torchtitan")->required();
  s->add_option("--out", a->out, "directory for the files (created if needed)")->required();
  s->add_option("--seq-len", a->extra.seq_len, "sequence length in tokens (default: the model's)")
      ->check(integer_in(1, limits::kSeqLen));
  add_mtp_option(s, a->extra.mtp_layers);
  s->callback([a, rc] { *rc = run_emit(*a); });
}

}  // namespace planner::cli
