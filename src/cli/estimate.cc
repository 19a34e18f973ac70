#include <iostream>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/no_fit.h"
#include "cli/outputs.h"
#include "planner/error.h"
#include "planner/format.h"
#include "planner/io/json.h"
#include "planner/io/knobs.h"
#include "planner/report/report.h"
#include "planner/units.h"

namespace planner::cli {
namespace {

struct EstimateArgs : PlanArgs, LimitArgs {
  std::string format = "text", train_tokens, trace, attention;
  OutputArgs extra;  ///< --seq-len, --plot, --report
};

/// Exposed DP communication above this share of the iteration makes estimate ask whether
/// DeepSpeed's 1-bit Adam would pay; it is named when it would save at least kCompressionGain.
constexpr double kCompressionAskShare = 0.10, kCompressionGain = 0.05;

/// Plan `q` estimated on DeepSpeed's stack (`hardware`: the profile before any framework's stack),
/// as the savers only DeepSpeed runs are priced.
Estimate on_deepspeed(const ModelSpec& m, const ClusterProfile& hardware, const Plan& q,
                      const EstimateOptions& o) {
  EstimateOptions qo = o;
  qo.framework = Framework::deepspeed;
  return estimate(m, cluster_for(hardware, Framework::deepspeed, false), q, qo);
}

/// "1-bit Adam would take X s": for a pure data-parallel plan whose DP communication is exposed,
/// the same plan under DeepSpeed with zero=0 and grad_compression=onebit_adam, when it is at
/// least kCompressionGain faster. `hardware` is the profile before any framework's stack.
std::vector<Diagnostic> compression_advice(const ModelSpec& m, const ClusterProfile& hardware,
                                           const Estimate& e, const EstimateOptions& o) {
  const Plan& p = e.plan;
  if (p.grad_compression != GradCompression::none || p.tp > 1 || p.pp > 1 || p.cp > 1 ||
      p.weight_replicas() < 2 || e.breakdown.dp_comm_s < kCompressionAskShare * e.iteration_time_s)
    return {};
  Plan q = p;
  q.zero = 0, q.offload_optimizer = q.offload_params = OffloadDevice::none, q.offload_pct = 100;
  q.grad_compression = GradCompression::onebit_adam;
  q.overlap_param_gather.reset();
  const Estimate c = on_deepspeed(m, hardware, q, o);
  if (!c.ok() || !finite_result(c) ||
      c.iteration_time_s > (1 - kCompressionGain) * e.iteration_time_s)
    return {};
  return {
      {"gradient_compression", "info",
       fmt("DP communication is {:.0f}% of the iteration: DeepSpeed's 1-bit Adam (zero=0) would "
           "take {:.3f} s ({:.0f}% less), its all-reduce 1 bit an element after an "
           "uncompressed warm-up of 100,000 steps (freeze_step)",
           100 * e.breakdown.dp_comm_s / e.iteration_time_s, c.iteration_time_s,
           100 * (1 - c.iteration_time_s / e.iteration_time_s)),
       "--framework deepspeed --plan \"" + to_plan_string(q) +
           "\"; its effect on convergence is not modelled (DeepSpeed verified it under fp16 "
           "only)"}};
}

/// "ZeRO++ would take X s": for a ZeRO-3 plan whose DP communication is exposed, the same plan on
/// DeepSpeed's stack with and without zeropp=1, named when ZeRO++ is at least kCompressionGain
/// faster there and fits.
std::vector<Diagnostic> zeropp_advice(const ModelSpec& m, const ClusterProfile& hardware,
                                      const Estimate& e, const EstimateOptions& o) {
  const Plan& p = e.plan;
  if (p.zero != 3 || p.zeropp || e.breakdown.dp_comm_s < kCompressionAskShare * e.iteration_time_s)
    return {};
  Plan q = p;
  const Estimate without = on_deepspeed(m, hardware, q, o);
  q.zeropp = true;
  const Estimate with = on_deepspeed(m, hardware, q, o);
  if (!without.ok() || !with.ok() || !finite_result(with) ||
      with.iteration_time_s > (1 - kCompressionGain) * without.iteration_time_s)
    return {};
  return {
      {"zeropp", "info",
       fmt("DP communication is {:.0f}% of the iteration: on DeepSpeed's stack ZeRO++ would "
           "take {:.3f} s against {:.3f} s without it ({:.0f}% less), its weights gathered in "
           "int8 and its gradients reduce-scattered in int4, {:.1f} GiB per GPU with its "
           "secondary weight partition",
           100 * e.breakdown.dp_comm_s / e.iteration_time_s, with.iteration_time_s,
           without.iteration_time_s, 100 * (1 - with.iteration_time_s / without.iteration_time_s),
           with.memory_bytes / kGiB),
       "--framework deepspeed --plan \"" + to_plan_string(q) +
           "\"; the quantization's effect on convergence is not modelled"}};
}

/// "the source's 8-bit all-reduce would take X s": for a zero=0 plan whose DP communication is
/// exposed, the what-if the estimate priced (Estimate::int8_allreduce_iteration_s), named when it
/// is at least kCompressionGain faster.
std::vector<Diagnostic> int8_allreduce_advice(const Estimate& e) {
  if (e.int8_allreduce_iteration_s <= 0 ||
      e.breakdown.dp_comm_s < kCompressionAskShare * e.iteration_time_s ||
      e.int8_allreduce_iteration_s > (1 - kCompressionGain) * e.iteration_time_s)
    return {};
  return {{"int8_allreduce", "info",
           fmt("DP communication is {:.0f}% of the iteration: the design source's 8-bit "
               "gradient all-reduce with bucketed scales would take {:.3f} s ({:.0f}% less), "
               "its traffic {:.3f} s against {:.3f} s, its quantize and dequantize kernels "
               "included",
               100 * e.breakdown.dp_comm_s / e.iteration_time_s, e.int8_allreduce_iteration_s,
               100 * (1 - e.int8_allreduce_iteration_s / e.iteration_time_s),
               e.int8_allreduce_total_s, e.dp_comm_total_s),
           "none of the frameworks planner writes launch files for runs it (PyTorch DDP's "
           "quantization communication hooks are the nearest); its effect on convergence is not "
           "modelled"}};
}

int run_estimate(const EstimateArgs& a) {
  Inputs in = load_inputs(a.model, a.cluster);
  apply_seq_len(in, a.extra);
  Plan p =
      complete_plan(a.plan, gpus_option(a.gpus, a.nodes, in.cluster), a.dtype, a.global_batch, in);
  if (!a.attention.empty()) p.attention = parse_attention(a.attention);
  if (!a.trace.empty()) check_trace_size(p);  // before any work
  EstimateOptions o = estimate_options(a);
  if (!a.train_tokens.empty()) o.train_tokens = io::parse_count(a.train_tokens, "--train-tokens");
  const ClusterProfile hardware = in.cluster;
  in.cluster = cluster_for(in.cluster, o.framework);
  // A plan over the memory limit is reported in full, as it would run with enough memory, and
  // marked as not fitting.
  const Estimate e = estimate_as_reported(in.model, in.cluster, p, o);
  if (e.rejection == Rejection::out_of_memory)
    throw InputError("", 0, "--plan", rejection_message(e));
  const bool over = e.ok() && e.memory_bytes > e.memory_limit_bytes;
  if (!e.ok())
    throw InputError("", 0, "--plan",
                     e.reason + " (model " + in.model_file + ", cluster " + in.cluster_file + ")");
  require_finite(e);
  if (!a.trace.empty() && !over) write_trace(in, e, o, a.trace);
  RunContext ctx{.model_file = in.model_file,
                 .cluster_file = in.cluster_file,
                 .model = &in.model,
                 .cluster = &in.cluster,
                 .gpus = static_cast<int>(p.gpus()),
                 .global_batch = p.gbs,
                 .train_tokens = a.train_tokens.empty()
                                     ? 0
                                     : io::parse_count(a.train_tokens, "--train-tokens")};
  ctx.bands = shipped_bands();
  ctx.moe_bands = shipped_moe_bands();
  if (!over) {
    ctx.extra = compression_advice(in.model, hardware, e, o);
    for (Diagnostic& d : zeropp_advice(in.model, hardware, e, o)) ctx.extra.push_back(d);
    for (Diagnostic& d : int8_allreduce_advice(e)) ctx.extra.push_back(d);
  }
  if (a.format == "json")
    std::cout << io::dump_json(estimate_json(ctx, e), 2) << "\n";
  else
    print_estimate_text(std::cout, ctx, e);
  if (over) {  // the breakdown is printed; the plan still cannot run: exit 2, with what helps
    std::cout.flush();
    const std::string fixes = memory_remedies(in, e.plan, e.framework);
    throw InputError("", 0, "--plan",
                     fmt("does not fit: needs {:.1f} GiB per GPU of {:.1f} GiB (the breakdown "
                         "above is the plan with enough memory){}",
                         e.memory_bytes / kGiB, e.memory_limit_bytes / kGiB,
                         fixes.empty() ? "" : "\none change at a time:" + fixes));
  }
  write_estimate_outputs(in, ctx, e, a.extra, o);
  return 0;
}

}  // namespace

void add_estimate(CLI::App& app, int* rc) {
  auto a = std::make_shared<EstimateArgs>();
  CLI::App* s = app.add_subcommand("estimate", "one plan's full breakdown and diagnostics");
  add_plan_options(s, *a, "tp=8,pp=8,mbs=1,gbs=1536,vpp=3,zero=1,recompute=selective,sp=1");
  add_limit_options(s, *a);
  add_framework_option(s, a->framework, false);
  s->add_option("--train-tokens", a->train_tokens,
                "report days and GPU-hours for this many tokens");
  s->add_option("--format", a->format, "text or json")->check(CLI::IsMember({"text", "json"}));
  s->add_option("--trace", a->trace, "write the simulated iteration as a Chrome trace (Perfetto)");
  s->add_option("--attention", a->attention, "flash or unfused (default: the framework's stack)");
  add_output_options(s, a->extra, "the time breakdown and memory per GPU against capacity");
  s->callback([a, rc] { *rc = run_estimate(*a); });
}

}  // namespace planner::cli
