#include <doctest/doctest.h>

#include "planner/cost/communication.h"
#include "planner/units.h"

using namespace planner;

namespace {
// Two plain tiers without curves: NVLink 200 GB/s busbw, 10 us; NIC 25 GB/s, 20 us, 5 us a hop.
ClusterProfile toy() {
  ClusterProfile c;
  c.gpus_per_node = 8, c.nodes = 4;
  for (auto& x : c.intra.cost) x = {200e9, 10e-6, {}};
  for (auto& x : c.inter.cost) x = {25e9, 20e-6, {}};
  c.inter.hop_latency_s = 5e-6;
  return c;
}
}  // namespace

TEST_CASE("nccl-tests bus factors") {
  CHECK(bus_factor(Collective::allreduce, 8) == doctest::Approx(1.75));
  CHECK(bus_factor(Collective::allgather, 8) == doctest::Approx(0.875));
  CHECK(bus_factor(Collective::reduce_scatter, 4) == doctest::Approx(0.75));
  CHECK(bus_factor(Collective::sendrecv, 2) == 1.0);
}

TEST_CASE("rank layout: TP innermost, then CP, DP, PP") {
  Plan p;
  p.tp = 8, p.pp = 4, p.dp = 16;
  const GroupLayout tp = tp_group(p, toy()), dp = dp_group(p, toy()), pp = pp_pair(p, toy());
  CHECK((tp.ranks == 8 && tp.ranks_per_node == 8 && tp.nodes == 1));
  CHECK((dp.ranks == 16 && dp.ranks_per_node == 1 && dp.nodes == 16));  // stride 8: a node each
  CHECK((pp.ranks == 2 && pp.nodes == 2));
  p.tp = 2, p.dp = 64;
  const GroupLayout dp2 = dp_group(p, toy());  // stride 2: 4 DP ranks per node, 16 nodes
  CHECK((dp2.ranks_per_node == 4 && dp2.nodes == 16));
  // Context-parallel ranks hold the same weights: the gradient and ZeRO group is dp x cp.
  p.tp = 2, p.cp = 2, p.dp = 4;
  const GroupLayout dp3 = dp_group(p, toy());
  CHECK((dp3.ranks == 8 && dp3.ranks_per_node == 4 && dp3.nodes == 2));
  p.dp = 1;
  CHECK(dp_group(p, toy()).ranks == 2);
}

TEST_CASE("inside a node: alpha + S f / busbw") {
  const ClusterProfile c = toy();
  // 1 GB allreduce on 8 GPUs: 10 us + 1e9 x 1.75 / 200e9 = 8.76 ms.
  CHECK(collective_time_s(c, Collective::allreduce, 1e9, {8, 8, 1}) ==
        doctest::Approx(10e-6 + 8.75e-3));
  CHECK(collective_time_s(c, Collective::allreduce, 1e9, {1, 1, 1}) == 0.0);
}

TEST_CASE("across nodes: the slower of NVLink and the group's NICs sets the pace") {
  const ClusterProfile c = toy();
  // 8 ranks per node on 4 nodes: NICs give 8 x 25 = 200 = NVLink. allreduce over 32 ranks:
  // 20 us + 2 log2(4) x 5 us hops + 1e9 x 2 x 31/32 / 200e9.
  CHECK(collective_time_s(c, Collective::allreduce, 1e9, {32, 8, 4}) ==
        doctest::Approx(20e-6 + 4 * 5e-6 + 1e9 * 2 * 31 / 32 / 200e9));
  // One rank per node: a single NIC, 25 GB/s; allgather ring has nodes-1 = 3 hops.
  CHECK(collective_time_s(c, Collective::allgather, 1e9, {4, 1, 4}) ==
        doctest::Approx(20e-6 + 3 * 5e-6 + 1e9 * 0.75 / 25e9));
}

TEST_CASE("measured busbw curves are interpolated in log size") {
  CollectiveCost cc{230e9, 40e-6, {{1 << 20, 20e9}, {1 << 24, 100e9}}};
  CHECK(tier_busbw_Bps(cc, 1 << 22) == doctest::Approx(60e9));  // halfway in log2: 20 -> 22 -> 24
  CHECK(tier_busbw_Bps(cc, 1 << 10) == doctest::Approx(20e9));
  CHECK(tier_busbw_Bps(cc, 1e12) == doctest::Approx(100e9));
}

TEST_CASE(
    "a collective beside compute: the tail is exposed, the rest slows the compute or spills") {
  // 10 ms collective, last tenth unhidable, beside 20 ms of compute, no slowdown: only the tail.
  CHECK(exposed_after_overlap(10e-3, 20e-3, 0.1, 0.0) == doctest::Approx(1e-3));
  // With slowdown s the 9 ms beside the compute cost it 9 s / (1 + s) ms of progress.
  CHECK(exposed_after_overlap(10e-3, 20e-3, 0.1, 0.2) == doctest::Approx(1e-3 + 9e-3 * 0.2 / 1.2));
  // Longer than the slowed compute: everything beyond the window is exposed.
  CHECK(exposed_after_overlap(10e-3, 4e-3, 0.1, 0.2) == doctest::Approx(10e-3 - 4e-3));
  // No compute to hide behind: all of it.
  CHECK(exposed_after_overlap(10e-3, 0.0, 0.0, 0.189) == doctest::Approx(10e-3));
}

TEST_CASE("a collective's latency part: the tier's latency plus a hop per node step") {
  const ClusterProfile c = toy();
  const GroupLayout ring = group_layout(32, 1, 8);  // 4 nodes of 8
  CHECK(collective_latency_s(c, Collective::allgather, ring) == doctest::Approx(20e-6 + 3 * 5e-6));
  CHECK(collective_latency_s(c, Collective::allreduce, ring) == doctest::Approx(20e-6 + 4 * 5e-6));
  CHECK(collective_latency_s(c, Collective::allgather, group_layout(8, 1, 8)) ==
        doctest::Approx(10e-6));
  CHECK(collective_latency_s(c, Collective::allgather, group_layout(1, 1, 8)) == 0);
  // collective_time_s = latency + bytes x bus factor / bottleneck bandwidth.
  const double bytes = 1e9;
  CHECK(collective_time_s(c, Collective::allgather, bytes, ring) -
            collective_latency_s(c, Collective::allgather, ring) ==
        doctest::Approx(bytes * 31.0 / 32 / (8 * 25e9)));
}
