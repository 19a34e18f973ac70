#include "planner/report/diagnostics.h"

#include <cstdio>

#include "planner/format.h"
#include "planner/units.h"

namespace planner {
std::vector<Diagnostic> diagnose(const ModelSpec& m, const ClusterProfile& c, const Estimate& e) {
  std::vector<Diagnostic> d;
  const Plan& p = e.plan;
  const Breakdown& b = e.breakdown;
  const double comm = b.tp_comm_s + b.cp_comm_s + b.ep_comm_s + b.pp_comm_s + b.dp_comm_s;
  const double ratio = comm > 0 ? b.compute_s / (2 * comm) : 1e9;
  const std::string cp_part = (p.cp > 1 ? fmt("CP {:.3f}, ", b.cp_comm_s) : "") +
                              (p.ep > 1 || p.etp > 1 ? fmt("EP {:.3f}, ", b.ep_comm_s) : "");
  d.push_back(
      {"compute_vs_comm", ratio < 1 ? "warning" : "info",
       fmt("T_comp = {:.3f} s against 2 x T_comm = {:.3f} s (exposed TP {:.3f}, {}PP {:.3f}, DP "
           "{:.3f} s; ratio {:.2f})",
           b.compute_s, 2 * comm, b.tp_comm_s, cp_part, b.pp_comm_s, b.dp_comm_s, ratio),
       ratio < 1      ? "communication-bound: lower tp, raise mbs, or keep TP inside NVLink"
       : b.host_s > 0 ? "compute dominates the communication (the host's wait: below)"
                      : "compute dominates; no change needed"});
  if (p.microbatches() < p.pp)
    d.push_back({"microbatches_below_stages", "warning",
                 fmt("{} micro-batches for {} pipeline stages: stages idle and schedules that "
                     "expect at least pp in flight can hang",
                     p.microbatches(), p.pp),
                 "raise the global batch or lower mbs or pp so that microbatches >= pp"});
  d.push_back({"bubble_share", e.bubble_fraction > kBubbleWarnFraction ? "warning" : "info",
               fmt("pipeline bubble is {:.1f}% of the iteration", 100 * e.bubble_fraction),
               e.bubble_fraction > kBubbleWarnFraction
                   ? "more micro-batches per pipeline (smaller mbs or dp), interleaving (vpp > 1), "
                     "or fewer stages"
                   : "none"});
  if (e.layer_compute.min_shard_dim < kTensorCoreMinShard)
    d.push_back({"small_tensor_shards", "warning",
                 fmt("the smallest GEMM shard dimension is {:.0f} (< {:.0f}): tensor cores are "
                     "under-used",
                     e.layer_compute.min_shard_dim, kTensorCoreMinShard),
                 "lower tp so that hidden/tp and ffn/tp stay at least 256"});
  const double headroom = e.memory_limit_bytes - e.memory_bytes;
  const bool tight = headroom < kMemoryHeadroomWarnFraction * e.memory_limit_bytes;
  const bool over = headroom < 0;  // estimate prints an infeasible plan's breakdown too
  d.push_back({"memory_headroom",
               over    ? "error"
               : tight ? "warning"
                       : "info",
               over ? fmt("does not fit: needs {:.1f} GiB per GPU of {:.1f} GiB ({:.1f} GiB over)",
                          e.memory_bytes / kGiB, e.memory_limit_bytes / kGiB, -headroom / kGiB)
                    : fmt("{:.1f} GiB used of {:.1f} GiB ({:.1f} GiB headroom)",
                          e.memory_bytes / kGiB, e.memory_limit_bytes / kGiB, headroom / kGiB),
               tight ? "selective recompute, a higher ZeRO stage, sp=1 or a smaller mbs" : "none"});
  // Megatron-Core puts the MTP modules on the last stage (without a custom layout): where that
  // stage is the slowest, a last stage of fewer decoder layers gives them room.
  if (m.mtp_layers > 0 && p.pp > 1 && e.critical_stage == p.pp - 1 && m.encoders.empty()) {
    Plan shorter = p;
    shorter.split = PipelineSplit::short_last;
    const bool can =
        p.split != PipelineSplit::short_last && split_check(m.layers, shorter) == SplitError::none;
    d.push_back(
        {"mtp_last_stage", "info",
         fmt("the {} multi-token-prediction {} on the last pipeline stage, the slowest",
             m.mtp_layers, m.mtp_layers > 1 ? "modules run" : "module runs"),
         can ? fmt("split=short_last: {} decoder layers on the last stage, {} on the others",
                   split_stage_layers(m.layers, shorter, p.pp - 1),
                   split_stage_layers(m.layers, shorter, 0))
             : "a custom --pipeline-model-parallel-layout (not planned here), or "
               "--mtp-layers 0"});
  }
  // The host floor of eager layers with experts (SoftwareStack::moe_layer_host_s).
  if (b.host_s > 0)
    d.push_back(
        {"host_bound_layers", "warning",
         fmt("layers with experts wait {:.3f} s ({:.1f}%) for their host to launch them: "
             "eager, such a layer takes at least {:.2f} ms a micro-batch on this stack",
             b.host_s, 100 * b.host_s / e.iteration_time_s, c.software.moe_layer_host_s / kMs),
         "cuda_graphs=1 (Transformer Engine's scoped graphs; leave memory headroom for "
         "their buffers), or more work per layer and launch: a larger mbs, fewer GPUs"});
  if (m.moe.any())
    d.push_back({"experts_accuracy", "warning",
                 "a model with experts: five of the seven public MoE runs took longer than "
                 "predicted, two less (README, Measured accuracy, has each run's error); a "
                 "band printed beside the time is the MoE runs' (configs/accuracy/moe-bands.csv), "
                 "not the dense runs'",
                 "read the time as likely optimistic; compare plans of the same model by it"});
  return d;
}

}  // namespace planner
