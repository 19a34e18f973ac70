#pragma once
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "planner/cost/communication.h"
#include "planner/cost/compute.h"
#include "planner/estimate.h"

namespace planner {

/// A collective one layer issues, with its real message size.
struct WorkCollective {
  std::string name;  ///< tp_allreduce, tp_allgather, tp_reduce_scatter
  Collective coll = Collective::allreduce;
  double bytes = 0;  ///< nccl-tests size S
  int ranks = 1;
  Pass pass = Pass::forward;
  int count = 0;           ///< per layer in this pass (recompute included)
  double predicted_s = 0;  ///< each
};

/// The work of one pipeline stage of a plan as one of its ranks runs it: one decoder layer's
/// kernels (forward, then backward with the plan's recomputation), its TP collectives, the DP
/// gradient reduction, and how many layers and micro-batches that stands for.
struct Workload {
  Plan plan;
  std::string model;
  LayerShape shape;
  LayerConfig config;
  int layers = 1;                  ///< layers to run (--layers; default the stage's)
  int stage_layers = 1;            ///< layers of the plan's most loaded stage
  std::vector<Kernel> kernels;     ///< execution order; recompute re-runs included
  std::vector<bool> is_recompute;  ///< per kernel: a forward re-run during backward
  std::vector<WorkCollective> collectives;
  WorkCollective dp;  ///< once per iteration (bytes 0 when dp = 1)
};

/// Throws InputError for a plan the cost model rejects (with the reason).
Workload build_workload(const ModelSpec& m, const ClusterProfile& c, const Plan& p, int layers = 0);

/// What the GPU runner reads (schema planner-validate-workload/1) and what it writes back:
/// {"device": ..., "kernels_s": [one per workload kernel], "collectives_s": [one per collective,
/// each a single call] or null when they were not run, "dp_s": number or null}.
nlohmann::json workload_json(const Workload& w);

struct Measured {
  std::string device;
  std::vector<double> kernel_s;
  std::vector<double> collective_s;  ///< empty: not measured, the profile's times stand in
  double dp_s = -1;                  ///< < 0: not measured
  /// Optional "attention_reference": the workload's attention kernels timed with a production
  /// fused kernel (calibrate/sdpa_reference.py: PyTorch SDPA); NaN for the other kernels, empty
  /// when absent. When present it stands for attention in the measured totals.
  std::vector<double> attention_reference_s;
  std::string attention_reference_source;
};
/// Checks the runner's output against the workload; throws InputError naming `origin`.
Measured parse_measured(const nlohmann::json& j, const Workload& w, const std::string& origin);

struct ComponentTimes {
  double fwd_s = 0, bwd_s = 0;
  double total() const { return fwd_s + bwd_s; }
};

/// Predicted against measured, per component and in total, for one layer and one micro-batch.
struct ValidationReport {
  std::string device;
  bool communication_measured = false;
  std::vector<std::string> components;  ///< gemm, attention, elementwise, communication
  std::vector<ComponentTimes> predicted, measured;
  ComponentTimes predicted_layer, measured_layer;
  /// With an attention reference: its source, and planner-validate's own attention kernels
  /// (then not in the totals).
  std::string attention_source;
  ComponentTimes own_attention;
  /// The DP gradient reduction, once per iteration (not in the layer): predicted, and measured
  /// (< 0 when the runner could not, e.g. fewer local GPUs than dp).
  double dp_predicted_s = 0, dp_measured_s = -1;
  int layers = 1, stage_layers = 1, microbatches = 1;
  /// The layer without communication (GEMMs, attention, element-wise): what the GPU ran.
  ComponentTimes predicted_compute() const { return sum_compute(predicted); }
  ComponentTimes measured_compute() const { return sum_compute(measured); }
  /// Sums every component but the last, which is communication (kComponents' order).
  static ComponentTimes sum_compute(const std::vector<ComponentTimes>& c) {
    ComponentTimes t;
    for (size_t i = 0; i + 1 < c.size(); ++i) t.fwd_s += c[i].fwd_s, t.bwd_s += c[i].bwd_s;
    return t;
  }
  double diff_pct(double predicted_s, double measured_s) const;
};
ValidationReport compare(const Workload& w, const Measured& m);

void print_validation(std::ostream& out, const Workload& w, const ValidationReport& r);
nlohmann::json validation_json(const Workload& w, const ValidationReport& r);

/// The profile text with gpu.gemm.measured set to the measured efficiency (FLOP/s over the dense
/// peak, before sustained_efficiency) of every GEMM the workload ran and, when `m` has an
/// attention reference, gpu.flash_efficiency and flash_backward_efficiency set to its
/// forward and backward rates; other lines untouched.
std::string update_profile_text(const std::string& profile_text, const Workload& w,
                                const Measured& m, const ClusterProfile& c);

}  // namespace planner
