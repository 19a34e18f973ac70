#pragma once
/// Offload: optimizer states (and their step) and ZeRO-3 parameters moved off the GPU, to host
/// memory over the host link or to NVMe through host memory. What it costs each rank per
/// iteration and what it needs on the host. The rules follow the two implementations:
///   Megatron-Core's HybridDeviceOptimizer (megatron/core/optimizer/cpu_offloading/
///   hybrid_optimizer.py at d98e8a64): the distributed optimizer's shard, fp32 main gradients
///   copied to pinned host memory once per step, torch's fused AdamW on the CPU, the fp32
///   parameters copied back; with --overlap-cpu-optimizer-d2h-h2d the three run pipelined over
///   the parameter groups, so the slowest paces them.
///   DeepSpeed ZeRO-Offload and ZeRO-Infinity (Ren et al. 2021, arXiv 2101.06840, s.4; Rajbhandari
///   et al. 2021, arXiv 2104.07857): the model's gradients (16-bit; 4-byte under tf32) copied to
///   the host beside the backward, every micro-batch under ZeRO-2/3 (accumulation runs on the
///   CPU), once at the accumulation boundary under ZeRO-1, DeepSpeedCPUAdam on the host, the
///   parameters copied back; offloaded ZeRO-3 parameters fetched over the link for each
///   forward, backward and recomputation, prefetched beside the compute.
#include <algorithm>
#include <optional>

#include "planner/cluster.h"
#include "planner/framework.h"
#include "planner/plan.h"

namespace planner {

/// Bytes the CPU optimizer step streams through host DRAM per parameter: AdamW reads the fp32
/// parameter, gradient and two moments (16 B) and writes the parameter and the moments (12 B)
/// [D: the update rule; DeepSpeed csrc/adam/cpu_adam_impl.cpp, torch's fused CPU AdamW].
inline constexpr double kCpuAdamBytesPerParam = 28;
/// Fraction of the node's peak DRAM bandwidth a multithreaded CPU Adam sustains. [U] an
/// assumption, not a measurement: ZeRO-Offload reports CPU-Adam about 0.2 s per billion
/// parameters on a DGX-2 host (2 x Xeon Platinum 8168, 256 GB/s peak), which is 28 B x 1e9 /
/// 0.22 s = 127 GB/s, about half the peak (Ren et al. 2021, Table 3, as recalled, not re-read
/// here). calibrate/ does not yet measure it.
inline constexpr double kCpuAdamBandwidthEfficiency = 0.5;
/// Host memory a job may fill with offloaded state: the rest is the OS, the page cache and the
/// data loaders' workers. An allowance, not a measurement (as the GPU's 2 GiB reserve).
inline constexpr double kHostMemoryUsableFraction = 0.75;
/// Host bytes per offloaded parameter: fp32 master weight, two fp32 moments and the fp32
/// gradient the CPU step reads (both implementations keep all four on the host).
inline constexpr double kHostOptimizerBytesPerParam = 16;
/// Bytes the optimizer states move to and from NVMe per parameter and step under ZeRO-Infinity's
/// optimizer swap: the fp32 master weight and moments read in and written back (2 x 12).
inline constexpr double kNvmeOptimizerBytesPerParam = 24;

/// Whether DeepSpeed's offload rules apply (its gradients leave the GPU; ZeRO-Offload's copies):
/// DeepSpeed at either version. Megatron-LM's, and the library's without a framework, otherwise.
inline bool deepspeed_offload(std::optional<Framework> f) {
  return f == Framework::deepspeed || f == Framework::deepspeed_2021;
}

/// What offload costs one rank per iteration.
struct OffloadCost {
  double transfer_s = 0;  ///< exposed host-link and NVMe time
  double cpu_step_s = 0;  ///< the CPU optimizer step on the critical path
  double gpu_step_s = 0;  ///< the GPU's optimizer step over the states it keeps
  double host_bytes = 0;  ///< host memory this rank needs
  double d2h_bytes = 0, h2d_bytes = 0, nvme_bytes = 0;  ///< moved per iteration
  double exposed_s() const { return transfer_s + cpu_step_s; }
};

/// The inputs: the rank's parameters before ZeRO (`params_rank`), its optimizer shard
/// (`shard`), the critical stage's forward and backward time per micro-batch, and the GPU's
/// step over the whole shard (`gpu_step_s`, optimizer_step_s). Without offload only gpu_step_s.
OffloadCost offload_cost(const ClusterProfile& c, const Plan& p, std::optional<Framework> f,
                         double params_rank, double shard, double fwd_s, double bwd_s,
                         double gpu_step_s);

/// GPUs of one node the job occupies (they share its DRAM, its NVMe and its host memory).
inline int ranks_per_node(const ClusterProfile& c, const Plan& p) {
  return static_cast<int>(std::min<long long>(c.gpus_per_node, p.gpus()));
}

}  // namespace planner
