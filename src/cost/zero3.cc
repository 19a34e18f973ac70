#include "planner/cost/zero3.h"

#include <algorithm>
#include <array>

#include "planner/block.h"

namespace planner {

std::vector<Zero3Step> zero3_block_steps(const LayerShape& l, const LayerCompute& lc, int tp,
                                         Recompute r, bool backward) {
  // The block model's modules in order: each linear gathers its weights before it runs; the
  // attention core (with the block's element-wise work, or, in an MLP-only block, the first
  // linear) computes on what it has.
  const BlockModel bm = block_model(l, {tp, 1, 1, false, AttentionKernel::flash});
  const auto& g = lc.linear;
  const bool has_core = l.attention;
  std::vector<Zero3Step> fwd;
  std::vector<int> linear_of;  // per forward step: its LinearIndex, or -1 for the core
  for (const Module& m : bm) {
    if (m.kind == ModuleKind::attention_core) {
      fwd.push_back({lc.fwd_attn_s + lc.fwd_elementwise_s, 0});
      linear_of.push_back(-1);
    } else if (m.kind == ModuleKind::linear) {
      const bool first = fwd.empty() && !has_core;
      fwd.push_back({g[m.linear].fwd_s + (first ? lc.fwd_elementwise_s : 0.0), m.params / tp});
      linear_of.push_back(m.linear);
    }
  }
  if (!backward) return fwd;
  std::vector<Zero3Step> out;
  if (r == Recompute::full) out = fwd;  // the recomputed forward gathers its parameters again
  const double core = lc.bwd_attn_s + lc.bwd_elementwise_s +
                      (r == Recompute::selective       ? lc.fwd_attn_s
                       : r == Recompute::selective_moe ? selective_moe_recompute_s(lc)
                                                       : 0.0);
  for (size_t i = fwd.size(); i-- > 0;) {  // backward: the reverse order
    if (linear_of[i] < 0) {
      out.push_back({core, 0});
      continue;
    }
    const LinearTimes& t = g[linear_of[i]];
    const bool last = i == 0 && !has_core;  // an MLP-only block's fc1 also runs the core's work
    Zero3Step s{t.bwd_data_s + t.bwd_weight_s + (last ? core : 0.0), fwd[i].params};
    s.grad_params = fwd[i].params;
    out.push_back(s);
  }
  return out;
}

namespace {

/// The communication stream: collectives run one after another in issue order. Remembers when
/// it was busy, to find how much of a compute window it overlapped.
class CommStream {
 public:
  double issue(double ready, double duration) {
    const double start = std::max(ready, free_);
    free_ = start + duration;
    if (duration > 0) busy_.push_back({start, free_});
    return free_;
  }
  double free_at() const { return free_; }
  /// Busy time inside [from, to]; intervals that ended before `from` are dropped (windows only
  /// move forward).
  double busy_within(double from, double to) {
    while (first_ < busy_.size() && busy_[first_][1] <= from) ++first_;
    double b = 0;
    for (size_t i = first_; i < busy_.size() && busy_[i][0] < to; ++i)
      b += std::max(0.0, std::min(to, busy_[i][1]) - std::max(from, busy_[i][0]));
    return b;
  }

 private:
  double free_ = 0;
  std::vector<std::array<double, 2>> busy_;
  size_t first_ = 0;
};

}  // namespace

Zero3Pass zero3_pass(const std::vector<Zero3Step>& block, int blocks, const Zero3Buckets& b,
                     double slowdown, std::vector<double>* scratch) {
  Zero3Pass pass;
  if (blocks <= 0 || block.empty()) return pass;
  // Every step is simulated: a pass that is only slightly communication-bound builds its backlog
  // over many blocks, so no early block's increment stands for the rest.
  const size_t per = block.size(), n = per * size_t(blocks);
  auto step = [&](size_t i) -> const Zero3Step& { return block[i % per]; };
  std::vector<double> own;
  std::vector<double>& arrived = scratch ? *scratch : own;  // when each step's gather lands
  arrived.assign(n, 0.0);
  CommStream comm;
  double t = 0;
  size_t next = 0;   // the first step whose gather has not been issued
  double ahead = 0;  // elements gathered or in flight for steps after the running one
  double bucket_params = 0, bucket_s = 0;  // gradients waiting for their reduce-scatter
  auto gather = [&](size_t j, double when) {
    arrived[j] = step(j).params > 0 ? comm.issue(when, step(j).gather_s) : when;
  };
  auto flush = [&] {
    if (bucket_params > 0) comm.issue(t, bucket_s + b.scatter_latency_s), ++pass.scatters;
    bucket_params = bucket_s = 0;
  };
  for (size_t i = 0; i < n; ++i) {
    if (next <= i)
      gather(i, t), next = i + 1;  // not prefetched: fetched on demand
    else
      ahead -= step(i).params;
    const double start = std::max(t, arrived[i]);
    // Prefetch: gather the following modules while fewer than `prefetch_params` elements are
    // ahead of use (a module without weights adds none, so the next one with weights follows).
    for (; next < n && ahead < b.prefetch_params; ++next) {
      gather(next, start);
      ahead += step(next).params;
    }
    const double c = step(i).compute_s;
    const double beside =
        std::min(comm.busy_within(start, start + c * (1 + slowdown)), c * (1 + slowdown));
    t = start + c + beside * slowdown / (1 + slowdown);
    if (const double g = step(i).grad_params; g > 0) {
      // DeepSpeed reduces the bucket when the next gradient would overflow it.
      if (bucket_params + g > b.reduce_params) flush();
      bucket_params += g, bucket_s += step(i).scatter_s;
    }
  }
  flush();                                              // the epilogue reduces what is left
  pass.time_s = t + std::max(0.0, comm.free_at() - t);  // and the last scatters drain
  return pass;
}

}  // namespace planner
