#include <doctest/doctest.h>

#include "planner/cost/zero3.h"
#include "planner/io/cluster_io.h"

using namespace planner;

namespace {
Zero3Step step(double compute, double params, double gather, double grad_params = 0, double scatter = 0) {
  Zero3Step s{compute, params, gather};
  s.grad_params = grad_params, s.scatter_s = scatter;
  return s;
}
}  // namespace

TEST_CASE("ZeRO-3 module pipeline, one module of prefetch: worked by hand") {
  // A (1 s compute, 2 s gather), B (3 s, 1 s), one element of prefetch (the next module only).
  const std::vector<Zero3Step> block = {step(1, 10, 2), step(3, 10, 1)};
  // A1 gathered on demand 0-2, runs 2-3 while B1 arrives at 3; B1 3-6 while A2 arrives at 5;
  // A2 6-7 (B2 arrives at 7); B2 7-10: blocks end at 6, 10, 14, ... (4 s a block after the first).
  CHECK(zero3_pass_s(block, 1, 1, 0) == doctest::Approx(6));
  CHECK(zero3_pass_s(block, 2, 1, 0) == doctest::Approx(10));
  CHECK(zero3_pass_s(block, 4, 1, 0) == doctest::Approx(18));
  CHECK(zero3_pass_s(block, 96, 1, 0) == doctest::Approx(6 + 95 * 4));  // beyond the simulated blocks
  // A long module between two short ones with long gathers: one module of prefetch leaves the
  // link idle during the long compute and the compute waiting after it; a deeper bucket hides it.
  const std::vector<Zero3Step> lopsided = {step(0.2, 10, 2), step(4, 10, 0.2), step(0.2, 10, 2)};
  const double shallow = zero3_pass_s(lopsided, 96, 1, 0), deep = zero3_pass_s(lopsided, 96, 1e9, 0);
  CHECK(shallow == doctest::Approx(96 * 6.2).epsilon(0.01));  // C's wait: 2 - 0.2 after each block
  CHECK(deep == doctest::Approx(96 * 4.4).epsilon(0.01));     // compute-bound: 4.4 s a block
}

TEST_CASE("ZeRO-3 module pipeline: the blocks beyond the simulated ones add what simulating them would") {
  // The same pass written as 200 blocks (a few simulated, the rest extrapolated) and as 4 blocks of
  // 50 (all simulated, step by step): equal, with a prefetch that reaches several blocks ahead and
  // gathers that queue ahead of the scatters.
  const std::vector<std::vector<Zero3Step>> blocks = {
      {step(0.1, 1, 1, 1, 1)},
      {step(0.3, 3, 0.4, 3, 0.4), step(0.2, 0, 0), step(0.1, 1, 0.15, 1, 0.15), step(0.4, 4, 0.5, 4, 0.5)}};
  for (const auto& b : blocks)
    for (double prefetch : {0.0, 1.0, 3.0, 12.0}) {
      std::vector<Zero3Step> fifty;
      for (int k = 0; k < 50; ++k) fifty.insert(fifty.end(), b.begin(), b.end());
      CAPTURE(prefetch);
      CHECK(zero3_pass_s(b, 200, prefetch, 0.189) == doctest::Approx(zero3_pass_s(fifty, 4, prefetch, 0.189)));
    }
}

TEST_CASE("ZeRO-3 module pipeline: compute-bound and communication-bound limits") {
  // Tiny gathers: the first gather, then the compute (the last scatter drains beside the last
  // step); a scatter after the last step drains after it.
  const std::vector<Zero3Step> light = {step(1, 1, 1e-3, 1, 1e-3), step(0.5, 0, 0)};
  CHECK(zero3_pass_s(light, 50, 1, 0) == doctest::Approx(1e-3 + 50 * 1.5));
  const std::vector<Zero3Step> tail = {step(0.5, 0, 0), step(1, 1, 1e-3, 1, 0.25)};
  CHECK(zero3_pass_s(tail, 50, 1, 0) == doctest::Approx(50 * 1.5 + 0.25));
  // Gathers and scatters far longer than the compute: the link is busy throughout.
  const std::vector<Zero3Step> heavy = {step(0.1, 1, 2, 1, 3)};
  CHECK(zero3_pass_s(heavy, 50, 1, 0) == doctest::Approx(50 * 5 + 0.1).epsilon(0.01));
  // Slowdown: compute beside communication loses overlap x s / (1 + s).
  const std::vector<Zero3Step> even = {step(2, 1, 2)};
  const double s = 0.2;
  // Each 2 s compute but the last overlaps the next 2 s gather throughout: 2 + 2 s / (1 + s).
  const double per = 2 + 2 * s / (1 + s);
  CHECK(zero3_pass_s(even, 5, 1, s) == doctest::Approx(2 + 4 * per + 2));
  CHECK(zero3_pass_s(even, 10, 1, s) == doctest::Approx(2 + 9 * per + 2));
}

TEST_CASE("ZeRO-3 steps: the block's modules, recompute gathering again, gradients scattered once") {
  LayerShape l;
  l.hidden = 4096, l.heads = 32, l.kv_heads = 8, l.ffn = 14336, l.swiglu = true, l.seq = 4096;
  LayerCompute lc;
  for (auto& g : lc.linear) g = {1e-3, 1e-3, 1e-3};
  lc.fwd_attn_s = 2e-3, lc.bwd_attn_s = 5e-3;
  const auto fwd = zero3_block_steps(l, lc, 2, Recompute::full, false);
  REQUIRE(fwd.size() == 5);
  double params = 0;
  for (const auto& s : fwd) params += s.params;
  CHECK(params == doctest::Approx(l.params() / 2).epsilon(1e-3));  // norms are not gathered
  const auto bwd = zero3_block_steps(l, lc, 2, Recompute::full, true);
  REQUIRE(bwd.size() == 10);
  double gathered = 0, scattered = 0;
  for (const auto& s : bwd) gathered += s.params, scattered += s.grad_params;
  CHECK(gathered == doctest::Approx(2 * params));
  CHECK(scattered == doctest::Approx(params));
  CHECK(zero3_block_steps(l, lc, 2, Recompute::selective, true).size() == 5);
}
