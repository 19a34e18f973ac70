#pragma once
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "planner/cost/communication.h"
#include "planner/cost/compute.h"
#include "planner/estimate.h"

namespace planner {

/// A collective of the plan with its real message size, as the estimate charges it.
struct WorkCollective {
  /// TP (per layer): tp_allreduce, tp_allgather, tp_reduce_scatter, tp_fp8_amax_allreduce (current-
  /// scaling FP8 with SP). DP (Workload::dp):
  /// dp_grad_allreduce (ZeRO-0), dp_grad_reduce_scatter and dp_param_allgather (ZeRO-1/2),
  /// zero3_allgather_<linear> and zero3_grad_reduce_scatter (ZeRO-3), tied_embedding_allreduce.
  std::string name;
  Collective coll = Collective::allreduce;
  double bytes = 0;  ///< nccl-tests size S
  int ranks = 1;
  Pass pass = Pass::forward;
  /// TP: per layer in this pass (recompute included). DP: per iteration, or per micro-batch
  /// when `per_microbatch` (ZeRO-3's gathers and reduce-scatters, over the stage's layers).
  /// Stage boundary: per micro-batch, over the stage's chunks.
  int count = 0;
  bool per_microbatch = false;
  double predicted_s = 0;  ///< each, on the wire
  /// The estimate hides it, in part, behind compute: a TP collective beside the GEMM `beside`
  /// (TP-communication overlap), the gradient reduction beside the backward, ZeRO-1/2's
  /// parameter gather beside the next forward, ZeRO-3's prefetched gathers and bucketed
  /// reduce-scatters.
  bool overlapped = false;
  int beside = -1;  ///< TP overlap: index in Workload::kernels of its GEMM; -1 none
  /// TP: each, what the estimate charges after the overlap (predicted_s when not overlapped).
  /// DP: predicted_s (the estimate charges DP's exposure as a whole: Workload::dp_exposed_s).
  /// Stage boundary: predicted_s (charged whole, as TP communication).
  double exposed_s = 0;
};

/// The work of one pipeline stage of a plan as one of its ranks runs it: one decoder layer's
/// kernels (forward, then backward with the plan's recomputation), its TP collectives, the
/// collectives at the stage's chunk boundaries and the DP collectives of an iteration, and how
/// many layers and micro-batches that stands for.
struct Workload {
  Plan plan;
  std::string model;
  LayerShape shape;
  LayerConfig config;
  int layers = 1;                  ///< layers to run (--layers; default the stage's)
  int stage = 0;                   ///< the pipeline stage: the estimate's critical one
  int stage_layers = 1;            ///< its layers
  std::vector<Kernel> kernels;     ///< execution order; recompute re-runs included
  std::vector<bool> is_recompute;  ///< per kernel: a forward re-run during backward
  std::vector<WorkCollective> collectives;
  /// Per micro-batch at the stage's chunk boundaries, as cost/stages.cc charges them: without
  /// sequence parallelism the receiver's TP all-gather of the activation that arrived as 1/tp
  /// slices (forward into every chunk but the model's first, backward into every chunk but its
  /// last). Empty with pp = 1, tp = 1 or sp.
  std::vector<WorkCollective> boundary;
  std::vector<WorkCollective> dp;  ///< empty when nothing is reduced (dp x cp = 1, no tied copy)
  double dp_total_s = 0;           ///< the estimate's DP communication on the wire, per iteration
  double dp_exposed_s = 0;         ///< what it charges of that after overlap
  /// Calls of DP collective `i` per iteration: its count, times the micro-batches when per
  /// micro-batch.
  double dp_calls(size_t i) const {
    return double(dp[i].count) * (dp[i].per_microbatch ? plan.microbatches() : 1);
  }
};

/// The TP collectives of one layer (collectives.cc): per pass one per row-parallel linear of
/// the block model, all-reduce or all-gather + reduce-scatter with SP, the recomputed forward's
/// again in backward; under the estimate's TP overlap each beside the GEMM it pairs with.
/// `kernels` and `is_recompute` are the workload's (for the pairing); `lc` the estimate's layer.
std::vector<WorkCollective> tp_collectives(const ModelSpec& m, const ClusterProfile& c,
                                           const Plan& p, const std::vector<Kernel>& kernels,
                                           const std::vector<bool>& is_recompute,
                                           const LayerCompute& lc);
/// A mixture-of-experts layer's dispatcher collectives per layer, as cost/stages.cc charges them:
/// each pass's dispatch and combine all-to-all over the ep ranks, with etp > 1 the all-gather and
/// reduce-scatter of the received tokens over the etp ranks (the allgather dispatcher: its
/// all-gather and reduce-scatter over the etp x ep ranks instead), the
/// recomputed forward's again in backward; none overlapped (build_workload refuses
/// ep_comm_overlap). Empty for a dense layer or ep x etp = 1.
std::vector<WorkCollective> ep_collectives(const LayerShape& l, const ClusterProfile& c,
                                           const Plan& p);
/// The routed experts' DP collectives of one iteration (data_parallel.cc expert_dp_cost) over
/// the expert-data-parallel group for `expert_params_rank` weights on one rank.
std::vector<WorkCollective> expert_dp_collectives(const ClusterProfile& c, const Plan& p,
                                                  double expert_params_rank);
/// The DP collectives of one iteration as cost/data_parallel.cc charges them, over the dp x cp
/// group, for the most loaded stage's `params_rank` parameters on one rank (`stage_blocks`
/// blocks, `lc` the estimate's layer: ZeRO-3's module-by-module steps).
std::vector<WorkCollective> dp_collectives(const ModelSpec& m, const ClusterProfile& c,
                                           const Plan& p, double params_rank,
                                           const LayerCompute& lc, int stage_blocks);

/// The stage-boundary collectives of pipeline stage `stage` per micro-batch (Workload::boundary)
/// for the estimate's chunk partition `chunks` (blocks per virtual stage).
std::vector<WorkCollective> boundary_collectives(const ModelSpec& m, const ClusterProfile& c,
                                                 const Plan& p, const Partition& chunks, int stage);

/// Throws InputError for a plan the cost model rejects (with the reason).
Workload build_workload(const ModelSpec& m, const ClusterProfile& c, const Plan& p, int layers = 0);

/// What the GPU runner reads (schema planner-validate-workload/3) and what it writes back:
/// {"device": ..., "kernels_s": [one per workload kernel], "collectives_s": [one per collective,
/// each a single call, alone] or null when they were not run, "collectives_exposed_s": [one per
/// collective: what it added to its GEMM when run beside it; the time alone when not
/// overlapped] or absent, "boundary_s": [one per stage-boundary collective, a single call] or
/// null (absent from an older runner: not measured), "dp_s": [one per DP collective, each a
/// single call] or null}.
nlohmann::json workload_json(const Workload& w);

struct Measured {
  std::string device;
  std::vector<double> kernel_s;
  std::vector<double> collective_s;  ///< empty: not measured, the profile's times stand in
  /// Beside their GEMMs (as collective_s for those not overlapped); empty: not measured so.
  std::vector<double> collective_exposed_s;
  std::vector<double> boundary_s;  ///< one per stage-boundary collective; empty: not measured
  std::vector<double> dp_s;        ///< one per DP collective; empty: not measured
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
  /// The communication component: "exposed" (what the estimate charges after TP overlap,
  /// measured beside the GEMMs, or the profile's when not measured) or "wire" (the runner ran
  /// the collectives alone, so the prediction is their time alone too).
  std::string communication_basis = "exposed";
  std::vector<std::string> components;  ///< gemm, attention, elementwise, communication
  std::vector<ComponentTimes> predicted, measured;
  ComponentTimes predicted_layer, measured_layer;
  /// With an attention reference: its source, and planner-validate's own attention kernels
  /// (then not in the totals).
  std::string attention_source;
  ComponentTimes own_attention;
  /// The DP collectives of an iteration (not in the layer), each run alone: predicted and
  /// measured on the wire per iteration (measured < 0 when the runner could not, e.g. fewer
  /// local GPUs than dp x cp), and what the estimate charges after overlap.
  std::vector<double> dp_predicted_s, dp_measured_s;
  /// The stage-boundary collectives of one micro-batch on the wire (Workload::boundary): each
  /// entry's calls, predicted and measured (the profile's time when not measured), and their
  /// sums, which the per-micro-batch and per-iteration totals include.
  bool boundary_run = false;
  std::vector<double> boundary_predicted_s, boundary_measured_s;
  ComponentTimes boundary_predicted, boundary_measured;
  double dp_predicted_total_s = 0, dp_measured_total_s = -1, dp_exposed_s = 0;
  int layers = 1, stage_layers = 1, microbatches = 1;
  /// One micro-batch on the stage: its layers and the stage-boundary collectives.
  double predicted_microbatch_s() const {
    return predicted_layer.total() * stage_layers + boundary_predicted.total();
  }
  double measured_microbatch_s() const {
    return measured_layer.total() * stage_layers + boundary_measured.total();
  }
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
