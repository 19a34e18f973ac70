#include "cli/no_fit.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "planner/error.h"
#include "planner/format.h"
#include "planner/names.h"
#include "planner/report/report.h"
#include "planner/units.h"

namespace planner::cli {
namespace {

/// The memory on the most loaded stage that `estimate --plan` prints for `p`
/// (estimate_as_reported), for the framework `f`; 0 when `f` cannot run the plan.
double peak_memory(const Inputs& in, const Plan& p, std::optional<Framework> f) {
  EstimateOptions o;
  o.reasons = false;
  o.framework = f;
  const Estimate e = estimate_as_reported(in.model, cluster_for(in.cluster, f, false), p, o);
  return e.ok() || e.rejection == Rejection::out_of_memory ? e.memory_bytes : 0;
}

}  // namespace

std::string memory_remedies(const Inputs& in, const Plan& base,
                            std::optional<Framework> framework) {
  struct Variant {
    std::string what;
    Plan plan;
  };
  std::vector<Variant> v;
  Plan p = base;
  if (base.weight_replicas() > 1 && base.zero < (base.pp > 1 ? 1 : 3))
    p.zero = base.pp > 1 ? 1 : 3, v.push_back({"zero=" + std::to_string(p.zero), p});
  p = base;
  if (base.recompute != Recompute::full || base.recompute_layers > 0)
    p.recompute = Recompute::full, p.recompute_layers = 0,
    v.push_back({base.recompute == Recompute::full ? "recompute_layers=0" : "recompute=full", p});
  p = base;
  if (base.tp > 1 && !base.sp) p.sp = true, v.push_back({"sp=1", p});
  p = base;
  if (base.mbs > 1) p.mbs = base.mbs / 2, v.push_back({"mbs=" + std::to_string(p.mbs), p});
  p = base;
  if (!base.grad_reduce_bf16 && bf16_gradients_possible(base.dtype))
    p.grad_reduce_bf16 = true, v.push_back({"grad_reduce_bf16=1", p});
  p = base;
  if (base.offload_optimizer == OffloadDevice::none) {  // ZeRO's optimizer is what offloads
    p.offload_optimizer = OffloadDevice::cpu, p.offload_pct = 100, p.zero = std::max(p.zero, 1);
    v.push_back({"offload_optimizer=cpu" + std::string(base.zero == 0 ? ",zero=1" : ""), p});
  }
  size_t width = 16;
  for (const Variant& x : v) width = std::max(width, x.what.size());
  // Only the changes that lower it (bf16 gradients can raise it: the step's fp32 copy).
  const double now = peak_memory(in, base, framework);
  std::string out;
  for (const Variant& x : v) {
    // A change the plan's framework cannot run is offered with one that can, or not at all.
    std::optional<Framework> f = framework;
    double bytes = peak_memory(in, x.plan, f);
    for (size_t i = 0; bytes <= 0 && framework && i < kCurrentFrameworks.size(); ++i)
      if (kCurrentFrameworks[i] != *framework)
        f = kCurrentFrameworks[i], bytes = peak_memory(in, x.plan, f);
    if (bytes <= 0 || (now > 0 && bytes >= now)) continue;
    out += fmt("\n  {:<{}} -> {:.1f} GiB", x.what, width, bytes / kGiB);
    if (f != framework) out += std::string(" (with --framework ") + to_string(*f) + ")";
  }
  return out;
}

void throw_no_fit(const Inputs& in, const SearchResult& r) {
  std::string msg = "no plan fits: " + counts_line(r);
  if (r.rejections[static_cast<int>(Rejection::dtype_unsupported)] > 0) {
    std::string have;
    for (const auto& n : kDtypeNames)
      if (in.cluster.gpu.peak_flops[static_cast<int>(n.value)] > 0)
        have += std::string(have.empty() ? "" : ", ") + n.name;
    msg +=
        "\n" + in.cluster.gpu.name + " has tensor-core peaks for " + have +
        " only (the profile's gpu.peak_tflops): fp8 runs on Hopper and later, block-scaled mxfp8 "
        "on Blackwell";
  }
  // Expert knobs asked of a dense model refuse every plan with one reason: say it.
  if (r.rejections[static_cast<int>(Rejection::experts_invalid)] > 0 && !in.model.moe.any())
    msg += fmt("\nthe expert knobs ({}) need a model with experts; {} has none", kExpertKnobs,
               in.model.name);
  // Where no plan got as far as its memory, the frameworks' refusals are likely why: the reasons
  // each gives for its sampled refused plans, the most frequent first (at most three). Its
  // refusals read the cluster's hardware only, the same under every framework's stack.
  if (!r.any_memory_rejection && r.rejections[static_cast<int>(Rejection::framework_refuses)] > 0) {
    struct Reason {
      Framework framework;
      std::string why;
      const Plan* plan;
      int hits;
    };
    std::vector<Reason> reasons;
    for (const SearchResult::Refused& x : r.framework_refused) {
      std::string why;
      if (!refuses(x.framework, in.model, in.cluster, x.plan, &why)) continue;
      auto it = std::find_if(reasons.begin(), reasons.end(), [&](const Reason& y) {
        return y.framework == x.framework && y.why == why;
      });
      if (it == reasons.end())
        reasons.push_back({x.framework, why, &x.plan, 1});
      else
        ++it->hits;
    }
    std::stable_sort(reasons.begin(), reasons.end(),
                     [](const Reason& a, const Reason& b) { return a.hits > b.hits; });
    const bool several = r.frameworks.size() > 1;
    for (size_t i = 0; i < std::min<size_t>(reasons.size(), several ? 5 : 3); ++i)
      msg += fmt("\n{} cannot run plans such as --plan \"{}\": {}",
                 several ? std::string("--framework ") + to_string(reasons[i].framework)
                         : std::string("the framework"),
                 to_plan_string(*reasons[i].plan), reasons[i].why);
  }
  if (r.any_memory_rejection) {
    const Estimate& e = r.closest_infeasible;
    msg +=
        fmt("\nthe closest plan needs {:.1f} GiB per GPU of {:.1f} GiB ({:.1f} GiB over):\n  "
            "--plan \"{}\"",
            e.memory_bytes / kGiB, e.memory_limit_bytes / kGiB,
            (e.memory_bytes - e.memory_limit_bytes) / kGiB, to_plan_string(e.plan));
    const std::string fixes = memory_remedies(in, e.plan, e.framework);
    if (!fixes.empty()) msg += "\none change at a time from there:" + fixes;
    // Weights, gradients and Adam states alone, spread perfectly over every GPU.
    const Dtype d = e.plan.dtype;
    const double states =
        (in.model.total_params() + in.model.mtp_params()) *
        (weight_bytes_per_param(d) + grad_bytes_per_param(e.plan) + optimizer_bytes_per_param(d));
    msg +=
        fmt("\nweights, gradients and optimizer states alone take {:.0f} GiB: at least {:.0f} GPUs "
            "of {:.0f} GiB before activations",
            states / kGiB, std::ceil(states / e.memory_limit_bytes), e.memory_limit_bytes / kGiB);
    msg +=
        "\nor more GPUs (--gpus), GPUs with more memory, or wider knob ranges (--pp, --tp, --zero)";
    if (!in.cluster.host.present())
      msg += "; offload needs a host: block in the cluster profile, which " + in.cluster.name +
             " lacks";
  }
  throw InputError("", 0, "", msg);
}

}  // namespace planner::cli
