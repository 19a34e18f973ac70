// Whole-layer check of the GEMM fit: the sum of a GPT layer's twelve measured GEMMs next to the
// sum the fitted model predicts (what `planner estimate` reports as a layer's GEMM time, before
// its division by sustained_efficiency).
#include <set>
#include <tuple>

#include "calibrate/fit.h"
#include "calibrate/sweeps.h"
#include "planner/cost/compute.h"

namespace planner::calibrate {
namespace {

const GemmSample* find(const std::vector<GemmSample>& samples, Dtype dt, const GemmShape& g,
                       const std::string& orientation) {
  for (const GemmSample& s : samples)
    if (s.dtype == dt && s.m == g.m && s.n == g.n && s.k == g.k && s.orientation == orientation)
      return &s;
  return nullptr;
}

}  // namespace

std::vector<LayerCheck> layer_check(const std::vector<GemmSample>& samples, const Gpu& gpu,
                                    Dtype dtype) {
  std::set<std::tuple<int, int, int>> layers;
  for (const GemmSample& s : samples)
    if (s.dtype == dtype && s.hidden > 0 && s.tp > 0 && s.tokens > 0)
      layers.insert({s.hidden, s.tp, s.tokens});
  std::vector<LayerCheck> out;
  for (const auto& [h, tp, tokens] : layers) {
    LayerCheck c{h, tp, tokens, 0, 0};
    bool complete = true;
    for (const NamedLinear& l : layer_linears(h, tp, tokens))
      for (const auto& [orientation, g] :
           {std::pair{"fwd", l.shapes.fwd}, std::pair{"bwd_data", l.shapes.bwd_data},
            std::pair{"bwd_weight", l.shapes.bwd_weight}}) {
        const GemmSample* s = find(samples, dtype, g, orientation);
        complete = complete && s;
        if (!s) continue;
        c.measured_s += s->time_s;
        c.model_s += gemm_time_s(gpu, dtype, g);
      }
    if (complete) out.push_back(c);
  }
  return out;
}

}  // namespace planner::calibrate
