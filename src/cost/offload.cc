#include "planner/cost/offload.h"

#include <algorithm>

#include "planner/cost/memory.h"

namespace planner {

OffloadCost offload_cost(const ClusterProfile& c, const Plan& p, std::optional<Framework> f,
                         double params_rank, double shard, double fwd_s, double bwd_s,
                         double gpu_step_s) {
  OffloadCost o;
  const double frac = p.offloaded_fraction();
  o.gpu_step_s = gpu_step_s * (1.0 - frac);
  if (!p.offloads()) return o;
  const Host& h = c.host;
  const int ranks = ranks_per_node(c, p);
  const double link = h.achieved_link_Bps();
  const double nvme = h.nvme_Bps / ranks;  // the node's drives, shared by its ranks
  const int mb = p.microbatches();
  const bool ds = deepspeed_offload(f);
  const double moved = frac * shard;  // parameters whose step runs on the host
  const bool opt_nvme = p.offload_optimizer == OffloadDevice::nvme;

  if (moved > 0) {
    // The step: DRAM-bound, the node's bandwidth shared by its ranks; under NVMe the states
    // stream in and out beside it (DeepSpeed's pipeline_read/pipeline_write).
    o.cpu_step_s =
        moved * kCpuAdamBytesPerParam / (h.memory_Bps * kCpuAdamBandwidthEfficiency / ranks);
    if (opt_nvme) {
      o.nvme_bytes = moved * kNvmeOptimizerBytesPerParam;
      o.cpu_step_s = std::max(o.cpu_step_s, o.nvme_bytes / nvme);
    }
    o.host_bytes += moved * (opt_nvme ? 4.0 : kHostOptimizerBytesPerParam);  // NVMe: the grads
  }
  const double w16 = weight_bytes_per_param(p.dtype);  // DeepSpeed's model weights and gradients
  if (ds) {
    // Gradients to the host beside the backward: every micro-batch under ZeRO-2/3 (reduced and
    // accumulated on the host), once at the accumulation boundary under ZeRO-1 (reduced only
    // then, behind the last backward); parameters back after the step (none when ZeRO-3
    // parameters live on the host: the step updates them in place).
    const double d2h_copy = moved * w16;
    const int copies = p.zero >= 2 ? mb : 1;
    o.d2h_bytes = copies * d2h_copy;
    o.transfer_s += copies * std::max(0.0, d2h_copy / link - bwd_s);
    if (p.offload_params == OffloadDevice::none) {
      o.h2d_bytes = moved * w16;
      o.transfer_s += o.h2d_bytes / link;
    }
  } else if (moved > 0) {
    // Megatron-LM: fp32 main gradients down (HybridDeviceOptimizer's host buffers are fp32
    // whatever the GPU's gradient dtype, param_update_in_fp32; bf16 ones are cast on the GPU) and
    // fp32 parameters up once a step, pipelined with the CPU step over the parameter groups
    // (--overlap-cpu-optimizer-d2h-h2d): the slowest of the three paces the step.
    o.d2h_bytes = moved * kGradBytesPerParam;
    o.h2d_bytes = moved * 4.0;
    const double pipelined = std::max({o.d2h_bytes / link, o.cpu_step_s, o.h2d_bytes / link});
    o.transfer_s += pipelined - o.cpu_step_s;
  }
  if (p.offload_params != OffloadDevice::none) {
    // ZeRO-3 partitions on the host: fetched for the forward, the backward and a full
    // recomputation of every micro-batch, prefetched beside that micro-batch's compute.
    const double partition = params_rank / p.weight_replicas();
    const double fetches = p.recompute == Recompute::full ? 3.0 : 2.0;
    const double h2d_mb = fetches * partition * w16;
    double fetch_s = h2d_mb / link;
    if (p.offload_params == OffloadDevice::nvme) {
      fetch_s = std::max(fetch_s, h2d_mb / nvme);
      o.nvme_bytes += mb * h2d_mb;
    } else {
      o.host_bytes += partition * w16;
    }
    o.h2d_bytes += mb * h2d_mb;
    o.transfer_s += mb * std::max(0.0, fetch_s - (fwd_s + bwd_s));
  }
  return o;
}

}  // namespace planner
