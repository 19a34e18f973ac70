#include <ostream>

#include "planner/cost/communication.h"
#include "planner/format.h"
#include "planner/report/report.h"
#include "planner/units.h"

namespace planner {

namespace {

void share(std::ostream& out, const char* name, double s, double total) {
  line(out, "  {:<22} {:>10.4f} s  {:>5.1f}%\n", name, s, total > 0 ? 100 * s / total : 0.0);
}

/// The pipeline stages' partition, the simulator against the closed form, peak in flight.
void print_pipeline(std::ostream& out, const Estimate& e) {
  if (e.partition.empty()) return;
  line(out, "pipeline stages         {} layers{}\n", compact_list(e.partition),
       e.balanced ? " (balanced partition)" : " (the plan's split)");
  const bool even_only = e.framework && !info(*e.framework).uneven_stages;
  if (e.simulated && even_only)
    line(out, "                        simulated {:.4f} s, closed form {:.4f} s\n",
         e.iteration_time_s, e.closed_form_time_s);
  else if (e.simulated)
    line(out,
         "                        simulated {:.4f} s, closed form {:.4f} s; "
         "balanced partition gains {:.1f}% over the plan's split\n",
         e.iteration_time_s, e.closed_form_time_s, e.balanced_gain_pct);
  if (!e.peak_in_flight.empty())
    line(out, "                        peak micro-batches in flight per stage: {}\n",
         compact_list(e.peak_in_flight));
}

/// One layer's forward and backward for one micro-batch on one rank.
void print_layer(std::ostream& out, const Estimate& e) {
  out << "\none layer, one micro-batch, one rank\n";
  line(out, "  forward  compute {:>9.3f} ms  comm {:>8.3f} ms\n", e.layer.fwd_compute_s / kMs,
       e.layer.fwd_comm_s / kMs);
  line(out, "  backward compute {:>9.3f} ms  comm {:>8.3f} ms  (recompute included{})\n",
       e.layer.bwd_compute_s / kMs, e.layer.bwd_comm_s / kMs,
       e.plan.recompute_layers > 0
           ? fmt("; a recomputed layer, the first {} of each chunk", e.plan.recompute_layers)
           : "");
  if (e.layer.fwd_host_s + e.layer.bwd_host_s > 0)
    line(out,
         "  waiting for the host: forward {:.3f} ms, backward {:.3f} ms (eager, the layer runs "
         "at its host's pace: {:.3f} ms a micro-batch)\n",
         e.layer.fwd_host_s / kMs, e.layer.bwd_host_s / kMs,
         (e.layer.fwd_compute_s + e.layer.fwd_comm_s + e.layer.fwd_host_s + e.layer.bwd_compute_s +
          e.layer.bwd_comm_s + e.layer.bwd_host_s) /
             kMs);
  const LayerCompute& lc = e.layer_compute;
  line(out, "  forward  = GEMMs {:.3f} + attention {:.3f} + element-wise {:.3f} ms\n",
       lc.fwd_gemm_s / kMs, lc.fwd_attn_s / kMs, lc.fwd_elementwise_s / kMs);
  line(out,
       "  backward = GEMMs {:.3f} + attention {:.3f} + element-wise {:.3f} ms "
       "(before recompute)\n",
       lc.bwd_gemm_s / kMs, lc.bwd_attn_s / kMs, lc.bwd_elementwise_s / kMs);
}

}  // namespace

void print_estimate_text(std::ostream& out, const RunContext& ctx, const Estimate& e) {
  const ModelSpec& m = *ctx.model;
  const Breakdown& b = e.breakdown;
  const double t = e.iteration_time_s;
  line(out,
       "# planner {} estimate\n# model   {} ({}): {:.3f}B parameters{}\n# cluster {} ({}), "
       "attention {}\n",
       PLANNER_VERSION, m.name, ctx.model_file, m.total_params() / 1e9, mtp_text(m),
       ctx.cluster->name, ctx.cluster_file, attention_note(e.plan, *ctx.cluster));
  if (e.framework) out << frameworks_line({*e.framework}, false);
  out << "# plan    --plan \"" << to_plan_string(e.plan) << "\"\n";
  if (e.memory_bytes > e.memory_limit_bytes)
    line(out,
         "# DOES NOT FIT: needs {:.1f} GiB per GPU of {:.1f} GiB; below, the plan as it would run "
         "with enough memory\n",
         e.memory_bytes / kGiB, e.memory_limit_bytes / kGiB);
  out << "\n";
  line(out, "iteration time          {:>10.4f} s   ({} micro-batches of {})\n", t,
       e.plan.microbatches(), e.plan.mbs);
  if (const AccuracyBand* band = ctx.band(e.plan)) {
    const auto [lo, hi] = band_times(t, *band);
    line(out,
         "                        {:.4g}-{:.4g} s ({}: where {:.0f}% of {} comparable published "
         "runs from {} sources fell, {}; {} {})\n",
         lo, hi, band_text(*band), 100 * (kBandHighQuantile - kBandLowQuantile), band->rows,
         band->sources, m.moe.any() ? "runs with experts, never fitted to" : "cross-validated",
         band->gpu == "*" ? "any GPU" : band->gpu,
         band->precision == "*" ? "any precision" : band->precision);
  }
  line(out, "throughput              {:>10.0f} tokens/s\n", e.tokens_per_s);
  line(out, "model TFLOP/s per GPU   {:>10.1f}     (MFU {:.1f}%)\n", e.tflops_per_gpu, 100 * e.mfu);
  if (ctx.train_tokens > 0) {
    const double seconds = ctx.train_tokens / e.tokens_per_s;
    line(out, "training {:.3g} tokens    {:>10.1f} days, {:.4g} GPU-hours\n", ctx.train_tokens,
         seconds / kSecondsPerDay, seconds * e.plan.gpus() / kSecondsPerHour);
  }
  print_pipeline(out, e);
  out << "\ntime breakdown (critical path)\n";
  share(out, "compute", b.compute_s, t);
  share(out, "TP communication", b.tp_comm_s, t);
  if (e.plan.cp > 1) share(out, "CP communication", b.cp_comm_s, t);
  if (e.plan.ep > 1 || e.plan.etp > 1) share(out, "EP communication", b.ep_comm_s, t);
  if (b.host_s > 0) share(out, "host launches (eager)", b.host_s, t);
  share(out, "PP communication", b.pp_comm_s, t);
  share(out, "DP communication", b.dp_comm_s, t);
  if (e.dp_bucket_bytes > 0 && dp_group(e.plan, *ctx.cluster).nodes > 1)
    line(out, "    all-reduce per {:.0f} MB gradient bucket: NCCL {} across {} nodes\n",
         e.dp_bucket_bytes / 1e6, to_string(e.dp_allreduce), dp_group(e.plan, *ctx.cluster).nodes);
  share(out, "pipeline bubble", b.bubble_s, t);
  share(out, "optimizer step", b.optimizer_s, t);
  if (e.plan.uses_host()) share(out, "offload (host)", b.offload_s, t);
  print_layer(out, e);
  const MemoryBreakdown& mem = e.memory;
  out << "\nmemory per GPU (most loaded stage)\n";
  line(out,
       "  weights {:.2f}, gradients {:.2f}, optimizer {:.2f}, activations {:.2f}, "
       "reserve {:.2f} GiB\n",
       mem.weights / kGiB, mem.grads / kGiB, mem.optimizer / kGiB, mem.activations / kGiB,
       mem.reserve / kGiB);
  if (mem.weight_cache > 0)
    line(out,
         "  of the weights, {:.2f} GiB are Transformer Engine's {} copies kept between "
         "micro-batches\n",
         mem.weight_cache / kGiB, to_string(e.plan.dtype));
  if (mem.step_grads > 0)
    line(out, "  {} {:.2f} GiB ({})\n",
         e.plan.grad_reduce_bf16 ? "optimizer step's fp32 copy of the bf16 gradients"
                                 : "DeepSpeed's gradient reduction bucket (fp32 and its bf16 cast)",
         mem.step_grads / kGiB,
         mem.step_grads > mem.activations ? "more than the activations: the peak is at the step"
                                          : "after the activations are freed");
  line(out, "  total {:.2f} GiB of {:.2f} GiB{}\n", e.memory_bytes / kGiB,
       e.memory_limit_bytes / kGiB, e.memory_bytes > e.memory_limit_bytes ? ": does not fit" : "");
  if (e.plan.uses_host())
    line(out,
         "  host memory per node {:.1f} GiB of {:.0f} GiB usable; per GPU and iteration {:.2f} GB "
         "to the host, {:.2f} GB back\n",
         e.host_memory_bytes / kGiB, e.host_memory_limit_bytes / kGiB, e.offload_d2h_bytes / kGB,
         e.offload_h2d_bytes / kGB);
  out << "\ndiagnostics\n";
  for (const Diagnostic& d : ctx.diagnostics(e))
    out << "  [" << d.severity << "] " << d.message << "\n      -> " << d.remedy << "\n";
}

}  // namespace planner
