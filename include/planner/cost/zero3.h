#pragma once
#include <vector>

#include "planner/cost/compute.h"
#include "planner/cost/memory.h"
#include "planner/plan.h"

namespace planner {

/// DeepSpeed's stage3_prefetch_bucket_size default: "maximum number of parameter elements to
/// fetch ahead of use" (DeepSpeedZeroConfig.prefetch_bucket_size = 5e7). A gather still covers at
/// least the next module, so for large layers the prefetch is one module deep.
inline constexpr double kZero3PrefetchParams = 5e7;
/// DeepSpeed's reduce_bucket_size default (5e8 elements): gradients are reduce-scattered a bucket
/// at a time, the bucket flushed when the next gradient would overflow it.
inline constexpr double kZero3ReduceBucketParams = kDeepSpeedReduceBucketParams;

/// One module of a ZeRO-3 pass: its compute, and the parameters it gathers before it runs and
/// whose gradients it reduce-scatters after (backward only).
struct Zero3Step {
  double compute_s = 0;
  double params = 0;       ///< elements gathered before the step (0: a module without weights)
  double gather_s = 0;     ///< time of that gather on the wire
  double grad_params = 0;  ///< elements whose gradient it hands to the reduce bucket when it ends
  double scatter_s = 0;    ///< their reduce-scatter's time on the wire (no latency)
};

/// The modules of one block as ZeRO-3 runs them, in order: forward QKV, attention core (with the
/// element-wise work), projection, fc1, fc2 (an MLP-only block: fc1, fc2); backward the reverse,
/// each linear reduce-scattering its gradient, after the recomputed forward under full recompute
/// (gathering again). Elements per linear on one TP rank; gather_s and scatter_s are the caller's.
std::vector<Zero3Step> zero3_block_steps(const LayerShape& l, const LayerCompute& lc, int tp,
                                         Recompute r, bool backward);

/// DeepSpeed's stage-3 buckets as a pass uses them.
struct Zero3Buckets {
  double prefetch_params = kZero3PrefetchParams;
  double reduce_params = kZero3ReduceBucketParams;
  double scatter_latency_s = 0;  ///< per reduce-scatter, on top of its gradients' scatter_s
};

/// Seconds for `blocks` repetitions of `block` on one compute stream and one communication stream,
/// every step simulated: a step starts when the step before it has finished and its parameters
/// have arrived; when it starts, the gathers of the following steps are issued while fewer than
/// `prefetch_params` elements are gathered or in flight ahead of it (so at least the next module
/// with weights); when it ends, its gradient joins the reduce bucket, which is reduce-scattered
/// first if the gradient would overflow it (and once more at the end of the pass). Compute that
/// runs beside communication slows by the factor (1 + slowdown) for the overlapped part, as in
/// exposed_after_overlap. Gathers and reduce-scatters share the one stream (DeepSpeed runs them
/// on two, sharing the same link).
struct Zero3Pass {
  double time_s = 0;
  int scatters = 0;  ///< reduce-scatters issued (buckets flushed)
};
/// `scratch`, when given, is storage reused from call to call.
Zero3Pass zero3_pass(const std::vector<Zero3Step>& block, int blocks, const Zero3Buckets& b,
                     double slowdown, std::vector<double>* scratch = nullptr);

}  // namespace planner
