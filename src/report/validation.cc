#include <fmt/chrono.h>

#include <algorithm>
#include <ctime>
#include <ostream>
#include <set>
#include <sstream>
#include <tuple>

#include "planner/error.h"
#include "planner/format.h"
#include "planner/units.h"
#include "planner/validate.h"

namespace planner {
namespace {

void row(std::ostream& out, const ValidationReport& r, const char* name, const ComponentTimes& p,
         const ComponentTimes& m) {
  line(out,
       "  {:<14} {:>9.3f} {:>9.3f} {:>+7.1f}   "
       "{:>9.3f} {:>9.3f} {:>+7.1f}   {:>9.3f} {:>9.3f} {:>+7.1f}\n",
       name, p.fwd_s / kMs, m.fwd_s / kMs, r.diff_pct(p.fwd_s, m.fwd_s), p.bwd_s / kMs,
       m.bwd_s / kMs, r.diff_pct(p.bwd_s, m.bwd_s), p.total() / kMs, m.total() / kMs,
       r.diff_pct(p.total(), m.total()));
}

/// One line of YAML comment from whatever the runner reported: control characters become spaces.
std::string comment_text(std::string text) {
  for (char& ch : text)
    if (static_cast<unsigned char>(ch) < 0x20) ch = ' ';
  return text;
}

const char* communication_source(const Workload& w, const ValidationReport& r) {
  const bool overlap = std::any_of(w.collectives.begin(), w.collectives.end(),
                                   [](const WorkCollective& c) { return c.overlapped; });
  if (!r.communication_measured) return "from the profile (fewer local GPUs than tp)";
  if (!overlap) return "measured with NCCL";
  return r.communication_basis == "wire" ? "measured with NCCL alone, so on the wire on both sides "
                                           "(the TP overlap not measured)"
                                         : "measured with NCCL, each overlapped collective beside "
                                           "its GEMM (what it adds to it)";
}

const char* window_of(const WorkCollective& c) {
  if (!c.overlapped) return "";
  return c.pass == Pass::forward ? ", overlapped with forward" : ", overlapped with backward";
}

/// The DP collectives, each per iteration on the wire, and what the estimate charges of them.
void print_dp(std::ostream& out, const Workload& w, const ValidationReport& r) {
  if (w.dp.empty()) return;
  out << "# DP collectives per iteration, each run alone (on the wire):\n";
  for (size_t i = 0; i < w.dp.size(); ++i) {
    const WorkCollective& c = w.dp[i];
    const std::string calls =
        fmt("{:.0f}{}", w.dp_calls(i),
            c.per_microbatch ? fmt(" ({} per micro-batch)", c.count) : std::string());
    const std::string measured =
        r.dp_measured_s[i] >= 0 ? fmt("measured {:.3f} s ({:+.1f}%)", r.dp_measured_s[i],
                                      r.diff_pct(r.dp_predicted_s[i], r.dp_measured_s[i]))
                                : std::string("not measured (fewer local GPUs than its ranks)");
    line(out, "#   {:<26} {:<14} {:>10.1f} MB over {} ranks x {}{}: predicted {:.3f} s, {}\n",
         c.name, to_string(c.coll), c.bytes / 1e6, c.ranks, calls, window_of(c),
         r.dp_predicted_s[i], measured);
  }
  const std::string measured = r.dp_measured_total_s >= 0
                                   ? fmt("measured {:.3f} s ({:+.1f}%)", r.dp_measured_total_s,
                                         r.diff_pct(r.dp_predicted_total_s, r.dp_measured_total_s))
                                   : std::string("not measured");
  line(out,
       "# DP on the wire: predicted {:.3f} s, {}; the estimate charges {:.3f} s of it after "
       "overlap (not run beside compute here)\n",
       r.dp_predicted_total_s, measured, r.dp_exposed_s);
}

/// The stage-boundary collectives of one micro-batch, each on the wire.
void print_boundary(std::ostream& out, const Workload& w, const ValidationReport& r) {
  if (w.boundary.empty()) return;
  line(out,
       "# stage {}'s boundaries per micro-batch, each run alone (on the wire; TP communication "
       "in the estimate):\n",
       w.stage);
  for (size_t i = 0; i < w.boundary.size(); ++i) {
    const WorkCollective& c = w.boundary[i];
    const std::string measured =
        r.boundary_run ? fmt("measured {:.3f} ms ({:+.1f}%)", r.boundary_measured_s[i] / kMs,
                             r.diff_pct(r.boundary_predicted_s[i], r.boundary_measured_s[i]))
                       : std::string("not measured (fewer local GPUs than tp: the profile's time)");
    line(out, "#   {:<26} {:<14} {:>10.1f} MB over {} ranks x {} {}: predicted {:.3f} ms, {}\n",
         c.name, to_string(c.coll), c.bytes / 1e6, c.ranks, c.count,
         c.pass == Pass::forward ? "forward" : "backward", r.boundary_predicted_s[i] / kMs,
         measured);
  }
}

}  // namespace

void print_validation(std::ostream& out, const Workload& w, const ValidationReport& r) {
  line(out, "# planner validate: {} on {}\n", w.model, r.device);
  out << "# plan    --plan \"" << to_plan_string(w.plan) << "\"\n";
  line(out, "# one rank's stage: {} layers (ran {}), {} micro-batches; communication {}\n#\n",
       r.stage_layers, r.layers, r.microbatches, communication_source(w, r));
  out << "# one layer, one micro-batch (ms), kernels timed in isolation against the kernel-level\n"
         "# prediction (the profile's sustained_efficiency applies to whole iterations, not "
         "here)\n";
  out << "# component        fwd_pred  fwd_meas   diff%    bwd_pred  bwd_meas   diff%    tot_pred  "
         "tot_meas   diff%\n";
  for (size_t c = 0; c < r.components.size(); ++c)
    row(out, r, r.components[c].c_str(), r.predicted[c], r.measured[c]);
  row(out, r, "compute", r.predicted_compute(), r.measured_compute());
  row(out, r, "layer", r.predicted_layer, r.measured_layer);
  if (!r.attention_source.empty()) {
    line(out, "# attention measured with {};\n", r.attention_source);
    line(out,
         "# planner-validate's own (untuned, correctness-checked) flash kernels took {:.3f} ms "
         "forward, "
         "{:.3f} ms backward (not in the totals)\n",
         r.own_attention.fwd_s / kMs, r.own_attention.bwd_s / kMs);
  }
  print_boundary(out, w, r);
  const double predicted = r.predicted_microbatch_s(), measured = r.measured_microbatch_s();
  line(out,
       "# per micro-batch (x {} layers{}): predicted {:.2f} ms, measured {:.2f} ms ({:+.1f}%)\n",
       r.stage_layers, w.boundary.empty() ? "" : ", with the stage boundaries", predicted / kMs,
       measured / kMs, r.diff_pct(predicted, measured));
  line(out,
       "# per iteration of compute and TP communication (x {} micro-batches): predicted {:.3f} s, "
       "measured {:.3f} s\n",
       r.microbatches, predicted * r.microbatches, measured * r.microbatches);
  print_dp(out, w, r);
}

namespace {

nlohmann::json dp_json(const Workload& w, const ValidationReport& r) {
  using nlohmann::json;
  auto seconds = [](double t) { return t >= 0 ? json(t) : json(nullptr); };
  json list = json::array();
  for (size_t i = 0; i < w.dp.size(); ++i) {
    const WorkCollective& c = w.dp[i];
    list.push_back({{"name", c.name},
                    {"collective", to_string(c.coll)},
                    {"bytes", c.bytes},
                    {"ranks", c.ranks},
                    {"calls", w.dp_calls(i)},
                    {"overlapped", c.overlapped},
                    {"predicted_s", r.dp_predicted_s[i]},
                    {"measured_s", seconds(r.dp_measured_s[i])}});
  }
  return {{"predicted_s", r.dp_predicted_total_s},
          {"measured_s", seconds(r.dp_measured_total_s)},
          {"exposed_predicted_s", r.dp_exposed_s},
          {"collectives", list}};
}

nlohmann::json boundary_json(const Workload& w, const ValidationReport& r) {
  using nlohmann::json;
  json list = json::array();
  for (size_t i = 0; i < w.boundary.size(); ++i) {
    const WorkCollective& c = w.boundary[i];
    list.push_back(
        {{"name", c.name},
         {"collective", to_string(c.coll)},
         {"bytes", c.bytes},
         {"ranks", c.ranks},
         {"pass", c.pass == Pass::forward ? "forward" : "backward"},
         {"calls", c.count},
         {"predicted_s", r.boundary_predicted_s[i]},
         {"measured_s", r.boundary_run ? json(r.boundary_measured_s[i]) : json(nullptr)}});
  }
  return {{"stage", w.stage},
          {"predicted_s", r.boundary_predicted.total()},
          {"measured_s", r.boundary_run ? json(r.boundary_measured.total()) : json(nullptr)},
          {"collectives", list}};
}

}  // namespace

nlohmann::json validation_json(const Workload& w, const ValidationReport& r) {
  using nlohmann::json;
  auto times = [&](const ComponentTimes& p, const ComponentTimes& m) {
    return json{{"fwd_predicted_s", p.fwd_s},
                {"fwd_measured_s", m.fwd_s},
                {"bwd_predicted_s", p.bwd_s},
                {"bwd_measured_s", m.bwd_s},
                {"total_predicted_s", p.total()},
                {"total_measured_s", m.total()},
                {"total_diff_pct", r.diff_pct(p.total(), m.total())}};
  };
  json comps = json::object();
  for (size_t c = 0; c < r.components.size(); ++c)
    comps[r.components[c]] = times(r.predicted[c], r.measured[c]);
  return {{"schema_version", 2},
          {"plan", to_plan_string(w.plan)},
          {"model", w.model},
          {"device", r.device},
          {"communication_measured", r.communication_measured},
          {"stage_layers", r.stage_layers},
          {"microbatches", r.microbatches},
          {"layer", times(r.predicted_layer, r.measured_layer)},
          {"microbatch",
           {{"predicted_s", r.predicted_microbatch_s()},
            {"measured_s", r.measured_microbatch_s()},
            {"diff_pct", r.diff_pct(r.predicted_microbatch_s(), r.measured_microbatch_s())}}},
          {"boundary", boundary_json(w, r)},
          {"compute", times(r.predicted_compute(), r.measured_compute())},
          {"communication_basis", r.communication_basis},
          {"dp", dp_json(w, r)},
          {"components", comps},
          {"attention_reference", r.attention_source.empty()
                                      ? json(nullptr)
                                      : json{{"source", r.attention_source},
                                             {"own_kernel_fwd_s", r.own_attention.fwd_s},
                                             {"own_kernel_bwd_s", r.own_attention.bwd_s}}}};
}

namespace {

/// Today (UTC), the date planner validate's comments carry.
std::string utc_date() { return fmt::format("{:%Y-%m-%d}", fmt::gmtime(std::time(nullptr))); }

/// Unique GEMM shapes with their measured efficiency over the dense peak: kernels timed in
/// isolation, the same level as the GEMM model (sustained_efficiency applies on top of both).
std::string measured_block(const Workload& w, const Measured& m, double peak,
                           const std::string& date) {
  std::set<std::tuple<double, double, double, double>> seen;
  std::string block = "    measured:  # planner validate on " + comment_text(m.device) + ", " +
                      date + ": [m, n, k, batch, dtype, efficiency]\n";
  for (size_t i = 0; i < w.kernels.size(); ++i) {
    const Kernel& k = w.kernels[i];
    if (k.cls != KernelClass::gemm ||
        !seen.insert({k.gemm.m, k.gemm.n, k.gemm.k, k.gemm.batch}).second)
      continue;
    const double eff = k.flops / (m.kernel_s[i] * peak);
    block += fmt("      - [{:.0f}, {:.0f}, {:.0f}, {:.0f}, {}, {:.4f}]\n", k.gemm.m, k.gemm.n,
                 k.gemm.k, k.gemm.batch, to_string(w.plan.dtype), std::clamp(eff, 1e-4, 1.0));
  }
  return block;
}

}  // namespace

std::string update_profile_text(const std::string& text, const Workload& w, const Measured& m,
                                const ClusterProfile& c) {
  const double peak = c.gpu.peak_flops[static_cast<int>(w.plan.dtype)];
  const std::string date = utc_date();
  const std::string block = measured_block(w, m, peak, date);
  // With an attention reference (a production fused kernel timed at the workload's shapes), its
  // forward and backward FLOP rates over the peak become gpu.flash_efficiency and
  // gpu.flash_backward_efficiency (the lines are rewritten where they stand, legacy block too).
  double flops[2] = {0, 0}, seconds[2] = {0, 0};
  for (size_t i = 0; i < w.kernels.size() && !m.attention_reference_s.empty(); ++i) {
    const Kernel& k = w.kernels[i];
    if (k.cls != KernelClass::attention || k.flops <= 0) continue;
    const int bwd = k.pass == Pass::forward ? 0 : 1;
    const double t = m.attention_reference_s[i];  // the model adds the launch to FLOPs / rate
    flops[bwd] += k.flops, seconds[bwd] += std::max(t - c.gpu.gemm.launch_s, 0.5 * t);
  }
  // Only a fused kernel's rate is a flash efficiency (unfused attention is GEMMs and softmax).
  const bool attention =
      w.config.attention == AttentionKernel::flash && seconds[0] > 0 && seconds[1] > 0;
  const std::string source = comment_text(m.attention_reference_source);
  auto efficiency_line = [&](const char* key, int bwd) {
    return fmt("  {}: {:.4f}  # planner validate: {}, {}\n", key,
               std::clamp(flops[bwd] / seconds[bwd] / peak, 1e-4, 1.0), source, date);
  };
  // Drop an earlier measured block, then insert the new one right after "  gemm:".
  std::istringstream in(text);
  std::string out, l;
  bool skipping = false, inserted = false;
  while (std::getline(in, l)) {
    if (skipping && l.rfind("      ", 0) == 0) continue;
    skipping = false;
    if (l.rfind("    measured:", 0) == 0) {
      skipping = true;
      continue;
    }
    if (attention && l.rfind("  flash_backward_efficiency:", 0) == 0) continue;
    if (attention && l.rfind("  flash_efficiency:", 0) == 0) {
      out +=
          efficiency_line("flash_efficiency", 0) + efficiency_line("flash_backward_efficiency", 1);
      continue;
    }
    out += l + "\n";
    if (!inserted && l.rfind("  gemm:", 0) == 0) out += block, inserted = true;
  }
  if (!inserted)
    throw InputError("", 0, "--update-profile", "the profile has no gpu.gemm section to update");
  return out;
}

}  // namespace planner
