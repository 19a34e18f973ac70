#pragma once
#include "planner/cluster.h"
#include "planner/model.h"
#include "planner/plan.h"

namespace planner {

/// Bytes per parameter of mixed-precision Adam as Megatron-LM stores it
/// (megatron/training/theoretical_memory_usage.py: 18 bytes without the distributed optimizer,
/// 6 + 12/dp with it): 16-bit weights, fp32 main gradients, fp32 master weights + two moments.
inline constexpr double kWeightBytesPerParam = 2;
inline constexpr double kGradBytesPerParam = 4;
inline constexpr double kOptimizerBytesPerParam = 12;

/// CUDA context, NCCL buffers and cuBLAS workspaces, and the caching allocator's fragmentation:
/// an allowance, not a measurement (PyTorch reports ~0.5-1 GiB of context per process; NCCL
/// buffers default to 4 MiB per channel and peer). Named so that a user can see and change it.
inline constexpr double kRuntimeReserveBytes = 2.0 * 1024 * 1024 * 1024;
inline constexpr double kFragmentationFraction = 0.05;

/// Activation bytes of one transformer layer for one micro-batch on one rank, 16-bit activations
/// and 1-byte dropout masks (Korthikanti et al. 2022, Table 2, generalised to GQA and SwiGLU).
double activation_bytes_per_layer(const ModelSpec& m, int mbs, int tp, int cp, bool sp,
                                  Recompute r, AttentionKernel attn);

/// Micro-batches whose activations the first stage holds at peak (1F1B: min(pp, m);
/// interleaved: times 1 + (p-1)/(p v); GPipe: all m).
double microbatches_in_flight(const Plan& p);

struct MemoryBreakdown {
  double weights = 0, grads = 0, optimizer = 0, activations = 0, reserve = 0;
  double total() const { return weights + grads + optimizer + activations + reserve; }
};

/// Parameters held by one rank of the first (stage = 0) or last (stage = pp-1) stage, before ZeRO.
double stage_params_per_rank(const ModelSpec& m, const Plan& p, int stage);

/// Memory of one GPU of `stage`; the planner checks both the first and the last stage.
MemoryBreakdown memory_per_gpu(const ModelSpec& m, const Plan& p, const Gpu& gpu,
                               AttentionKernel attn, int stage);

}  // namespace planner
