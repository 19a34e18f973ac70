#include "planner/cost/zero3.h"

#include <algorithm>
#include <array>

namespace planner {

std::vector<Zero3Step> zero3_block_steps(const LayerShape& l, const LayerCompute& lc, int tp,
                                         Recompute r, bool backward) {
  const double t = tp, h = l.hidden, f = l.ffn, up = f * (l.swiglu ? 2.0 : 1.0);
  const auto& g = lc.linear;
  std::vector<Zero3Step> fwd;
  if (l.attention) {
    const double d = l.head_dim();
    fwd = {{g[kQkv].fwd_s, h * (l.heads + 2.0 * l.kv_heads) * d / t},
           {lc.fwd_attn_s + lc.fwd_elementwise_s, 0},
           {g[kProj].fwd_s, l.heads * d * h / t},
           {g[kFc1].fwd_s, h * up / t},
           {g[kFc2].fwd_s, f * h / t}};
  } else {
    fwd = {{g[kFc1].fwd_s + lc.fwd_elementwise_s, l.in_features * up / t},
           {g[kFc2].fwd_s, f * h / t}};
  }
  if (!backward) return fwd;
  std::vector<Zero3Step> out;
  if (r == Recompute::full) out = fwd;  // the recomputed forward gathers its parameters again
  auto linear = [&](LinearIndex i, double params, double extra) {
    Zero3Step s{g[i].bwd_data_s + g[i].bwd_weight_s + extra, params};
    s.grad_params = params;
    out.push_back(s);
  };
  const double core =
      lc.bwd_attn_s + lc.bwd_elementwise_s + (r == Recompute::selective ? lc.fwd_attn_s : 0.0);
  if (l.attention) {
    linear(kFc2, fwd[4].params, 0);
    linear(kFc1, fwd[3].params, 0);
    linear(kProj, fwd[2].params, 0);
    out.push_back({core, 0});
    linear(kQkv, fwd[0].params, 0);
  } else {
    linear(kFc2, fwd[1].params, 0);
    linear(kFc1, fwd[0].params, core);
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
