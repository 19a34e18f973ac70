// What planner-validate prints and writes besides its timings: the --dry-run listing of a
// workload (its kernels as the runner will run them, its collectives) and the results JSON.
#include <nlohmann/json.hpp>
#include <set>

#include "calibrate/validate_workload.h"
#include "planner/format.h"
#include "planner/io/json.h"

namespace planner::calibrate {

using nlohmann::json;

namespace {

const char* kPasses[] = {"forward", "backward_data", "backward_weight"};

}  // namespace

namespace {

/// "# tp_allgather: NCCL allgather of S bytes over 8 GPUs, x 1 per layer, beside kernel 0
/// (qkv forward; the estimate charges 3.1 of 40.2 us): measured on the local GPUs".
std::string collective_line(const RunnerWorkload& w, const WorkCollective& c, bool per_layer,
                            int local_gpus) {
  std::string times = "x " + std::to_string(c.count) +
                      (per_layer          ? " per layer"
                       : c.per_microbatch ? " per micro-batch (" + std::to_string(w.microbatches) +
                                                " micro-batches)"
                                          : " per iteration");
  if (c.beside >= 0) {
    const WorkKernel& k = w.kernels[size_t(c.beside)];
    times += fmt(", beside kernel {} ({} {}{}; the estimate charges {:.1f} of {:.1f} us)", c.beside,
                 k.name, kPasses[int(k.pass)], k.recompute ? ", recomputed" : "", c.exposed_s * 1e6,
                 c.predicted_s * 1e6);
  } else if (c.overlapped) {
    times += c.pass == Pass::forward ? ", overlapped with forward" : ", overlapped with backward";
  }
  return "# " + c.name + ": NCCL " + to_string(c.coll) + " of " +
         std::to_string(static_cast<long long>(c.bytes)) + " bytes over " +
         std::to_string(c.ranks) + " GPUs, " + times + ": " +
         (local_gpus < 0          ? "measured where the machine has that many GPUs"
          : local_gpus >= c.ranks ? "measured on the local GPUs"
                                  : "needs more local GPUs: null (the profile's time stands)");
}

}  // namespace

std::vector<std::string> dry_run_lines(const RunnerWorkload& w, int local_gpus) {
  std::vector<std::string> out;
  const WorkLayer& l = w.layer;
  out.push_back("# workload: " + w.model + " --plan \"" + w.plan + "\"");
  out.push_back(
      fmt("# layer: hidden {}, heads {} (kv {}), ffn {}{}, seq {}; tp {}, cp {}, mbs {}, sp {}; "
          "{}, {} attention, {}",
          l.hidden, l.heads, l.kv_heads, l.ffn, l.swiglu ? " swiglu" : "", l.seq, l.tp, l.cp, l.mbs,
          int(l.sp), to_string(w.dtype), w.flash ? "flash" : "unfused",
          l.swiglu ? "RMSNorm" : "layer norm"));
  if (l.experts > 0)
    out.push_back(
        fmt("# experts: {} top-{}; the router on {} tokens, {} token copies, the "
            "experts' activation {} wide",
            l.experts, l.topk, l.router_tokens, l.copies, l.expert_width));
  out.push_back(
      "#   i  kernel            pass             rec  pred_us   model_MB  kernel_MB  runs");
  std::set<std::string> distinct;
  for (size_t i = 0; i < w.kernels.size(); ++i) {
    const WorkKernel& k = w.kernels[i];
    const KernelRun r = kernel_run(w, i);
    distinct.insert(describe(r));
    out.push_back(fmt("{:5}  {:<16}  {:<15}  {:<3} {:>8.1f} {:>10.1f} {:>10.1f}  {}{}{}", i, k.name,
                      kPasses[int(k.pass)], k.recompute ? "yes" : "", k.predicted_s * 1e6,
                      k.bytes / 1e6, run_bytes(r) / 1e6, describe(r), r.note.empty() ? "" : "  # ",
                      r.note));
  }
  out.push_back(
      fmt("# {} kernels, {} distinct runs (each timed once)", w.kernels.size(), distinct.size()));
  for (const WorkCollective& c : w.collectives)
    out.push_back(collective_line(w, c, true, local_gpus));
  if (!w.boundary.empty())
    out.push_back(fmt("# stage {}'s boundaries (the receiver's all-gather without sp):", w.stage));
  for (const WorkCollective& c : w.boundary)
    out.push_back(collective_line(w, c, false, local_gpus));
  for (const WorkCollective& c : w.dp) out.push_back(collective_line(w, c, false, local_gpus));
  if (w.collectives.empty() && w.boundary.empty() && w.dp.empty())
    out.push_back("# no collectives (tp = 1 and dp x cp = 1)");
  return out;
}

std::string results_json(const RunnerResults& r) {
  json j = {
      {"schema", "planner-validate-results/3"}, {"device", r.device}, {"kernels_s", r.kernels_s}};
  j["collectives_s"] = r.collectives_s.empty() ? json(nullptr) : json(r.collectives_s);
  if (!r.collectives_exposed_s.empty()) j["collectives_exposed_s"] = r.collectives_exposed_s;
  j["boundary_s"] = r.boundary_s.empty() ? json(nullptr) : json(r.boundary_s);
  j["dp_s"] = r.dp_s.empty() ? json(nullptr) : json(r.dp_s);
  json checks = json::array();
  for (const auto& [name, err] : r.checks)
    checks.push_back({{"kernel", name}, {"relative_error", err}});
  j["checks"] = checks;
  return io::dump_json(j, 2) + "\n";
}

}  // namespace planner::calibrate
