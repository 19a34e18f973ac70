#include <doctest/doctest.h>

#include <algorithm>

#include "planner/cost/pipeline.h"
#include "planner/cost/simulate.h"

using namespace planner;

namespace {
SimInput uniform(Schedule s, int p, int v, int m, double f, double b, double w = 0) {
  SimInput in;
  in.schedule = s, in.pp = p, in.vpp = v, in.microbatches = m;
  in.chunks.assign(size_t(p) * v, ChunkCost{f / v, b / v, w / v});
  return in;
}
}  // namespace

TEST_CASE("identical stages: GPipe and 1F1B take (m + p - 1)(t_f + t_b)") {
  for (int p : {1, 2, 4, 8})
    for (int m : {1, 3, 8, 32}) {
      CAPTURE(p);
      CAPTURE(m);
      const double f = 1.0, b = 2.0;
      const double expect = (m + p - 1) * (f + b);
      CHECK(simulate(uniform(Schedule::gpipe, p, 1, m, f, b)).makespan_s ==
            doctest::Approx(expect));
      CHECK(simulate(uniform(Schedule::one_f_one_b, p, 1, m, f, b)).makespan_s ==
            doctest::Approx(expect));
    }
}

TEST_CASE("interleaved: m (t_f + t_b) + (p - 1)(t_f + t_b) / v") {
  for (int p : {2, 4, 8})
    for (int v : {2, 3, 4})
      for (int m : {p, 2 * p, 8 * p}) {
        CAPTURE(p);
        CAPTURE(v);
        CAPTURE(m);
        const double f = 1.0, b = 2.0;
        const SimResult r = simulate(uniform(Schedule::interleaved, p, v, m, f, b));
        REQUIRE(r.ok());
        CHECK(r.makespan_s == doctest::Approx(m * (f + b) + (p - 1) * (f + b) / v));
      }
}

TEST_CASE("ZB-H1: m (t_f + t_b + t_w) + (p - 1)(t_f + t_b - t_w)") {
  for (int p : {2, 4, 8})
    for (int m : {p, 2 * p, 6 * p}) {
      CAPTURE(p);
      CAPTURE(m);
      const double f = 1.0, bi = 1.0, w = 1.0;  // the paper's T_F = T_B = T_W
      const SimResult r = simulate(uniform(Schedule::zb_h1, p, 1, m, f, bi + w, w));
      REQUIRE(r.ok());
      CHECK(r.makespan_s == doctest::Approx(m * (f + bi + w) + (p - 1) * (f + bi - w)));
    }
}

TEST_CASE("the simulator agrees with the closed form on uniform stages, and reports idle time") {
  const SimResult r = simulate(uniform(Schedule::one_f_one_b, 4, 1, 8, 1, 2));
  CHECK(r.makespan_s ==
        doctest::Approx(pipeline_time_s(Schedule::one_f_one_b, 8, 1, {3, 3, 3, 3})));
  for (int s = 0; s < 4; ++s) {
    CHECK(r.busy_s[s] == doctest::Approx(24));
    CHECK(r.idle_s[s] == doctest::Approx(9));  // (p-1)(t_f+t_b) of bubble on every stage
  }
}

TEST_CASE("peak micro-batches in flight: p - s under 1F1B, all m under GPipe") {
  const SimResult r = simulate(uniform(Schedule::one_f_one_b, 4, 1, 8, 1, 2));
  CHECK(r.peak_in_flight == std::vector<int>{4, 3, 2, 1});
  const SimResult g = simulate(uniform(Schedule::gpipe, 4, 1, 8, 1, 2));
  CHECK(g.peak_in_flight == std::vector<int>{8, 8, 8, 8});
  const SimResult few = simulate(uniform(Schedule::one_f_one_b, 4, 1, 2, 1, 2));  // m < p
  CHECK(few.peak_in_flight == std::vector<int>{2, 2, 2, 1});
}

TEST_CASE("uneven stages and transfers") {
  SimInput in = uniform(Schedule::one_f_one_b, 4, 1, 8, 1, 2);
  in.chunks[3] = {2, 4, 0};  // a slow last stage (logits): 6 per micro-batch
  // (m-1) t_max + sum = 7 x 6 + (3 + 3 + 3 + 6) = 57
  CHECK(simulate(in).makespan_s == doctest::Approx(57));
  in.chunks[3] = {1, 2, 0};
  // With transfers of c = 0.5 s, every steady-state micro-batch of the first stage waits for one
  // transfer each way: m (t_f + t_b + 2c) + (p - 1)(t_f + t_b) = 8 x 4 + 3 x 3 = 41 s.
  in.p2p_s = 0.5;
  CHECK(simulate(in).makespan_s == doctest::Approx(41));
  in.p2p_s = 1.0;  // 8 x 5 + 9
  CHECK(simulate(in).makespan_s == doctest::Approx(49));
}

TEST_CASE("blocking transfers (DeepSpeed's pipeline engine) hold the sender and the receiver") {
  // p = 2, m = 2, t_f = 1, t_b = 2, c = 0.5. Overlapped: stage 1 runs F0 [1.5, 2.5], B0 [2.5,
  // 4.5], F1 [4.5, 5.5] (its input arrived at 2.5), B1 [5.5, 7.5]; stage 0 B1 at 8: 10 s.
  SimInput in = uniform(Schedule::one_f_one_b, 2, 1, 2, 1, 2);
  in.p2p_s = 0.5;
  CHECK(simulate(in).makespan_s == doctest::Approx(10));
  // Blocking: stage 0 is held after each forward (F1 [1.5, 2.5]); stage 1 after B0 until 5,
  // then receives F1 over [5, 5.5] (it was busy when F1 ended), F1 [5.5, 6.5], B1 [6.5, 8.5],
  // held to 9; stage 0 receives over [8.5, 9] and runs B1 [9, 11].
  in.p2p_blocking = true;
  const SimResult r = simulate(in);
  CHECK(r.makespan_s == doctest::Approx(11));
  // Stage 1 waits out two receives and two sends; stage 0 two sends and two receives.
  CHECK(r.transfer_wait_s[1] == doctest::Approx(2.0));
  CHECK(r.transfer_wait_s[0] == doctest::Approx(2.0));
  // Without transfers nothing changes.
  in.p2p_s = 0;
  CHECK(simulate(in).makespan_s ==
        doctest::Approx(simulate(uniform(Schedule::one_f_one_b, 2, 1, 2, 1, 2)).makespan_s));
}

TEST_CASE("schedules that cannot run are refused, never hang") {
  const SimResult r = simulate(uniform(Schedule::interleaved, 4, 2, 6, 1, 2));
  CHECK(!r.ok());
  CHECK(r.error.find("multiple of pp micro-batches (6 for pp=4)") != std::string::npos);
  SimInput bad = uniform(Schedule::one_f_one_b, 2, 1, 2, 1, 2);
  bad.vpp = 2;
  CHECK(!simulate(bad).ok());
}

TEST_CASE("the trace lists every task once") {
  SimInput in = uniform(Schedule::interleaved, 2, 2, 4, 1, 2);
  in.record_trace = true;
  const SimResult r = simulate(in);
  CHECK(r.trace.size() ==
        2u * 2 * 4 * 2);  // stages x chunks x micro-batches x (F, B); no transfers
  for (const SimTask& t : r.trace) CHECK(t.end_s > t.start_s);
}

TEST_CASE("ZB-H1 holds p micro-batches on every stage until their weight gradients") {
  const SimResult r = simulate(uniform(Schedule::zb_h1, 4, 1, 8, 1, 2, 1));
  CHECK(r.peak_in_flight == std::vector<int>{4, 4, 4, 4});
}

TEST_CASE("idle time split into waiting for a transfer and waiting for work") {
  // p = 2, one micro-batch, t_f = 1, t_b = 2, transfers of 0.5 s. Stage 1 idles 1.5 s before its
  // forward (0.5 s of it the activation in flight) and 2.5 s after its backward; stage 0 idles
  // 4 s between its forward and its backward, 0.5 s of it the gradient in flight.
  SimInput in = uniform(Schedule::one_f_one_b, 2, 1, 1, 1, 2);
  in.p2p_s = 0.5;
  const SimResult r = simulate(in);
  REQUIRE(r.ok());
  CHECK(r.makespan_s == doctest::Approx(7));
  for (int s = 0; s < 2; ++s) {
    CHECK(r.idle_s[s] == doctest::Approx(4));
    CHECK(r.transfer_wait_s[s] == doctest::Approx(0.5));
  }
}

TEST_CASE("interleaved stages keep their bubble when transfers are free or cheap") {
  for (int p : {2, 4, 8})
    for (int v : {2, 4, 12})
      for (int m : {p, 6 * p}) {
        CAPTURE(p);
        CAPTURE(v);
        CAPTURE(m);
        SimInput in = uniform(Schedule::interleaved, p, v, m, 1.0, 2.0);
        const SimResult r = simulate(in);
        REQUIRE(r.ok());
        for (int s = 0; s < p; ++s) {
          CHECK(r.transfer_wait_s[s] == 0);
          CHECK(r.idle_s[s] == doctest::Approx((p - 1) * 3.0 / v));  // (p - 1)(t_f + t_b) / v
        }
        in.p2p_s = 0.01;  // transfers waited for never take more than their own time
        const SimResult t = simulate(in);
        REQUIRE(t.ok());
        for (int s = 0; s < p; ++s) {
          CHECK(t.transfer_wait_s[s] >= 0);
          CHECK(t.transfer_wait_s[s] <= t.idle_s[s] + 1e-12);
          CHECK(t.transfer_wait_s[s] <= 2.0 * v * m * in.p2p_s + 1e-12);
          CHECK(t.idle_s[s] - t.transfer_wait_s[s] >= (p - 1) * 3.0 / v - 1e-9);
        }
      }
}

TEST_CASE("interleaved with as many micro-batches as stages: the warm-up of each version") {
  // Megatron-LM through 307dcf37 ran every forward first when m == p; at d98e8a64 (and in
  // PyTorch's Interleaved1F1B) stage s warms up with (p-s-1)*2 + (v-1)*p forwards, so the last
  // stage holds (v-1)*p + 1 chunks' activations, not all p*v.
  const int p = 4, v = 2, m = 4;
  SimInput in = uniform(Schedule::interleaved, p, v, m, 1.0, 2.0);
  const SimResult now = simulate(in);
  in.all_warmup_when_m_is_p = true;
  const SimResult old = simulate(in);
  REQUIRE(now.ok());
  REQUIRE(old.ok());
  for (int s = 0; s < p; ++s) {
    CAPTURE(s);
    CHECK(old.peak_in_flight[s] == p * v);
    CHECK(now.peak_in_flight[s] == std::min(p * v, (p - s - 1) * 2 + (v - 1) * p + 1));
  }
}

TEST_CASE("interleaved: a transfer no longer than a chunk's forward costs only the fill's hops") {
  // Each stage runs its other chunks while a transfer is in flight: m (t_f + t_b) + (p - 1)(t_f +
  // t_b) / v + 2 (pv - 1) d, whatever m (the closed form's p2p_fill, estimate.cc).
  const double f = 1.0, b = 2.0;
  for (int p : {2, 4, 8})
    for (int v : {2, 4, 12})
      for (int m : {p, 8 * p, 32 * p})
        for (double d : {0.01, f / v / 2, f / v}) {
          CAPTURE(p);
          CAPTURE(v);
          CAPTURE(m);
          CAPTURE(d);
          SimInput in = uniform(Schedule::interleaved, p, v, m, f, b);
          in.p2p_s = d;
          const SimResult r = simulate(in);
          REQUIRE(r.ok());
          CHECK(r.makespan_s ==
                doctest::Approx(m * (f + b) + (p - 1) * (f + b) / v + 2 * (p * v - 1) * d));
        }
  // Longer than a chunk's forward, transfers show in the steady state too.
  SimInput in = uniform(Schedule::interleaved, 2, 12, 16, f, b);
  in.p2p_s = 0.2;
  CHECK(simulate(in).makespan_s > 16 * (f + b) + (f + b) / 12 + 2 * 23 * 0.2 + 1.0);
}

TEST_CASE("combined 1F1B: the warm-up forwards and the cool-down backwards run alone") {
  // Without a pipeline the first forward and the last backward have no partner.
  const double f = 1.0, b = 2.0, u = 0.25;
  for (int m : {1, 2, 8}) {
    SimInput in = uniform(Schedule::one_f_one_b, 1, 1, m, f, b);
    in.combined_1f1b = true;
    for (ChunkCost& c : in.chunks) c.unpaired_s = u;
    const SimResult r = simulate(in);
    REQUIRE(r.ok());
    CHECK(r.makespan_s == doctest::Approx(m * (f + b) + 2 * u));
    // The forward beside the previous micro-batch's backward frees as it stores: one in flight.
    CHECK(r.peak_in_flight[0] == 1);
  }
  // Interleaved: one more warm-up forward than the plain schedule, each stage's warm-up forwards
  // and as many backwards alone, and the same peak in flight as the plain schedule.
  for (int p : {2, 4})
    for (int v : {2, 3})
      for (int m : {p, 4 * p}) {
        CAPTURE(p);
        CAPTURE(v);
        CAPTURE(m);
        SimInput plain = uniform(Schedule::interleaved, p, v, m, f, b), in = plain;
        in.combined_1f1b = true;
        const SimResult paired = simulate(in);
        for (ChunkCost& c : in.chunks) c.unpaired_s = u;
        const SimResult r = simulate(in), r0 = simulate(plain);
        REQUIRE(r.ok());
        REQUIRE(paired.ok());
        for (int s = 0; s < p; ++s) {
          CAPTURE(s);
          const int warm = std::min((p - s - 1) * 2 + (v - 1) * p + 1, m * v);
          CHECK(warmup_forwards(in, s) == warm);
          CHECK(warmup_forwards(plain, s) == std::min((p - s - 1) * 2 + (v - 1) * p, m * v));
          CHECK(r.busy_s[s] == doctest::Approx(paired.busy_s[s] + 2 * warm * u));
          CHECK(r.peak_in_flight[s] == r0.peak_in_flight[s]);
        }
        CHECK(r.makespan_s > paired.makespan_s);
      }
}
