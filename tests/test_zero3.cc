#include <doctest/doctest.h>

#include "planner/cost/zero3.h"
#include "planner/io/cluster_io.h"

using namespace planner;

namespace {
Zero3Step step(double compute, double params, double gather, double grad_params = 0,
               double scatter = 0) {
  Zero3Step s{compute, params, gather};
  s.grad_params = grad_params, s.scatter_s = scatter;
  return s;
}
/// A pass with `prefetch` elements of prefetch and a one-element reduce bucket (each gradient is
/// reduce-scattered when the next one arrives, the last at the end), no scatter latency.
double zero3_pass_s(const std::vector<Zero3Step>& block, int blocks, double prefetch,
                    double slowdown) {
  Zero3Buckets b;
  b.prefetch_params = prefetch, b.reduce_params = 1, b.scatter_latency_s = 0;
  return zero3_pass(block, blocks, b, slowdown).time_s;
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
  CHECK(zero3_pass_s(block, 96, 1, 0) ==
        doctest::Approx(6 + 95 * 4));  // beyond the simulated blocks
  // A long module between two short ones with long gathers: one module of prefetch leaves the
  // link idle during the long compute and the compute waiting after it; a deeper bucket hides it.
  const std::vector<Zero3Step> lopsided = {step(0.2, 10, 2), step(4, 10, 0.2), step(0.2, 10, 2)};
  const double shallow = zero3_pass_s(lopsided, 96, 1, 0),
               deep = zero3_pass_s(lopsided, 96, 1e9, 0);
  CHECK(shallow == doctest::Approx(96 * 6.2).epsilon(0.01));  // C's wait: 2 - 0.2 after each block
  CHECK(deep == doctest::Approx(96 * 4.4).epsilon(0.01));     // compute-bound: 4.4 s a block
}

TEST_CASE("ZeRO-3 module pipeline: a slightly communication-bound pass is paced by its link") {
  // 1 s of compute against 0.5 s of gather and 0.6 s of scatter a block: the backlog grows by
  // 0.1 s a block for the whole pass (an early block's increment would say 1 s).
  CHECK(zero3_pass_s({step(1, 1, 0.5, 1, 0.6)}, 100, 3, 0) ==
        doctest::Approx(100 * 1.1).epsilon(0.01));
}

TEST_CASE("ZeRO-3 reduce buckets: flushed when the next gradient would overflow, a latency each") {
  // Ten 1-element gradients, a 5-element bucket: two reduce-scatters of 5 x 0.1 s plus 1 s latency,
  // the first hidden behind the compute, the second after the pass.
  Zero3Buckets b;
  b.prefetch_params = 100, b.reduce_params = 5, b.scatter_latency_s = 1;  // all gathers up front
  const Zero3Pass p = zero3_pass({step(1, 1, 0, 1, 0.1)}, 10, b, 0);
  CHECK(p.scatters == 2);
  CHECK(p.time_s == doctest::Approx(10 + 5 * 0.1 + 1));
  // Gradients larger than the bucket: one reduce-scatter each, a gradient behind.
  b.reduce_params = 0.5;
  CHECK(zero3_pass({step(1, 1, 0, 1, 0.1)}, 10, b, 0).scatters == 10);
}

TEST_CASE("ZeRO-3 module pipeline: compute-bound and communication-bound limits") {
  // Tiny gathers: the first gather, then the compute, then the last gradient's reduce-scatter
  // (the bucket is flushed when the pass ends).
  const std::vector<Zero3Step> light = {step(1, 1, 1e-3, 1, 1e-3), step(0.5, 0, 0)};
  CHECK(zero3_pass_s(light, 50, 1, 0) == doctest::Approx(1e-3 + 50 * 1.5 + 1e-3));
  // The last step's own gradient and the one before it both drain after the pass.
  const std::vector<Zero3Step> tail = {step(0.5, 0, 0), step(1, 1, 1e-3, 1, 0.25)};
  CHECK(zero3_pass_s(tail, 50, 1, 0) == doctest::Approx(50 * 1.5 + 2 * 0.25));
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

TEST_CASE(
    "ZeRO-3 steps: the block's modules, recompute gathering again, gradients scattered once") {
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
