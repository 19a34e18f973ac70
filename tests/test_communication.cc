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
  // 8 ranks per node on 4 nodes: NICs give 8 x 25 = 200 = NVLink. allreduce over 32 ranks, a
  // ring: 20 us + 2 (4 - 1) x 5 us hops + 1e9 x 2 x 31/32 / 200e9.
  CHECK(collective_time_s(c, Collective::allreduce, 1e9, {32, 8, 4}) ==
        doctest::Approx(20e-6 + 6 * 5e-6 + 1e9 * 2 * 31 / 32 / 200e9));
  // One rank per node: a single NIC, 25 GB/s; allgather ring has nodes-1 = 3 hops.
  CHECK(collective_time_s(c, Collective::allgather, 1e9, {4, 1, 4}) ==
        doctest::Approx(20e-6 + 3 * 5e-6 + 1e9 * 0.75 / 25e9));
  // A send and receive is one rank's message: the hop out of the node runs on the sender's NIC
  // alone, 25 GB/s, however many of the ring's ranks share its node (a context-parallel ring of
  // 8 ranks, 4 a node); an all-gather of the same group spreads over the 4 NICs.
  const double one_nic = 20e-6 + 1e9 / 25e9;
  CHECK(collective_time_s(c, Collective::sendrecv, 1e9, {8, 4, 2}) == doctest::Approx(one_nic));
  CHECK(collective_time_s(c, Collective::sendrecv, 1e9, {2, 1, 2}) == doctest::Approx(one_nic));
  CHECK(collective_time_s(c, Collective::allgather, 1e9, {8, 4, 2}) ==
        doctest::Approx(20e-6 + 5e-6 + 1e9 * 7 / 8 / 100e9));
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
  CHECK(collective_latency_s(c, Collective::allreduce, ring) == doctest::Approx(20e-6 + 6 * 5e-6));
  CHECK(collective_latency_s(c, Collective::allreduce, ring, AllreduceAlgorithm::tree) ==
        doctest::Approx(20e-6 + 4 * 5e-6));
  CHECK(collective_latency_s(c, Collective::allgather, group_layout(8, 1, 8)) ==
        doctest::Approx(10e-6));
  CHECK(collective_latency_s(c, Collective::allgather, group_layout(1, 1, 8)) == 0);
  // collective_time_s = latency + bytes x bus factor / bottleneck bandwidth.
  const double bytes = 1e9;
  CHECK(collective_time_s(c, Collective::allgather, bytes, ring) -
            collective_latency_s(c, Collective::allgather, ring) ==
        doctest::Approx(bytes * 31.0 / 32 / (8 * 25e9)));
}

TEST_CASE("all-reduce across nodes: NCCL's ring or tree, whichever is faster") {
  const ClusterProfile c = toy();
  // One rank per node on 64 nodes (25 GB/s each). Ring: 20 us + 2 x 63 hops x 5 us = 650 us of
  // latency; tree: 20 us + 2 log2(64) x 5 us = 80 us, its bandwidth term 64/63/0.92 of the ring's.
  const GroupLayout g = group_layout(64, 8, 8);
  REQUIRE(g.nodes == 64);
  const double ring_bw = 1e6 * 2 * 63 / 64 / 25e9;  // 1 MB: 78.75 us on the wire
  const double ring = allreduce_time_s(c, 1e6, g, AllreduceAlgorithm::ring);
  const double tree = allreduce_time_s(c, 1e6, g, AllreduceAlgorithm::tree);
  CHECK(ring == doctest::Approx(650e-6 + ring_bw));
  CHECK(tree == doctest::Approx(80e-6 + ring_bw * 64 / 63 / kNcclTreeBandwidthFactor));
  CHECK(allreduce_algorithm(c, 1e6, g) == AllreduceAlgorithm::tree);
  CHECK(collective_time_s(c, Collective::allreduce, 1e6, g) == doctest::Approx(tree));
  // 4 GB: the wire dominates and the ring's full bandwidth wins.
  CHECK(allreduce_algorithm(c, 4e9, g) == AllreduceAlgorithm::ring);
  CHECK(collective_time_s(c, Collective::allreduce, 4e9, g) ==
        doctest::Approx(allreduce_time_s(c, 4e9, g, AllreduceAlgorithm::ring)));
  // The crossover: latency saved (570 us) = tree's extra wire time, S x 2 x 63/64 / 25e9 x
  // (64 / (63 x 0.92) - 1).
  const double extra_per_byte = 2.0 * 63 / 64 / 25e9 * (64.0 / (63 * kNcclTreeBandwidthFactor) - 1);
  const double crossover = 570e-6 / extra_per_byte;
  CHECK(allreduce_algorithm(c, 0.99 * crossover, g) == AllreduceAlgorithm::tree);
  CHECK(allreduce_algorithm(c, 1.01 * crossover, g) == AllreduceAlgorithm::ring);
  // Inside one node there is one measured figure: ring.
  CHECK(allreduce_algorithm(c, 1e3, group_layout(8, 1, 8)) == AllreduceAlgorithm::ring);
}

TEST_CASE("rank order tp-pp-dp: the stages inside a node, the DP group across nodes") {
  // tp=1, pp=4, dp=16 on 8-GPU nodes (64 GPUs). Megatron's default tp-cp-dp-pp puts the 16 DP
  // ranks 2 nodes wide and every stage pair 16 ranks apart, across nodes; tp-pp-dp puts each
  // pipeline inside a node (stride 1) and the DP ranks 4 apart, 2 to a node over 8 nodes.
  Plan p;
  p.tp = 1, p.pp = 4, p.dp = 16;
  const ClusterProfile c = toy();
  const GroupLayout dp = dp_group(p, c), pp = pp_pair(p, c);
  CHECK((dp.ranks == 16 && dp.ranks_per_node == 8 && dp.nodes == 2));
  CHECK((pp.ranks == 2 && pp.nodes == 2));
  CHECK(rank_order_matters(p, c));
  p.order = RankOrder::tp_pp_dp;
  const GroupLayout dp2 = dp_group(p, c), pp2 = pp_pair(p, c);
  CHECK((dp2.ranks == 16 && dp2.ranks_per_node == 2 && dp2.nodes == 8));
  CHECK((pp2.ranks == 2 && pp2.ranks_per_node == 2 && pp2.nodes == 1));
  CHECK(rank_order_matters(p, c));
  // With tp=8 a stage fills a node either way: the order changes nothing.
  p.tp = 8, p.dp = 2;
  CHECK(!rank_order_matters(p, c));
  // Nor without a pipeline or without data parallelism.
  p.tp = 1, p.pp = 1, p.dp = 64;
  CHECK(!rank_order_matters(p, c));
  p.pp = 8, p.dp = 1;
  CHECK(!rank_order_matters(p, c));
  // The nested layout: cp=2 beside tp=2, dp=4 past pp=2 (stride 8): 2 per node on 4 nodes.
  const GroupLayout n = nested_group_layout(2, 2, 4, 8, 8);
  CHECK((n.ranks == 8 && n.ranks_per_node == 2 && n.nodes == 4));
  CHECK(nested_group_layout(2, 1, 4, 2, 8).ranks_per_node == 8);  // blocks of 2, 4 to a node
}
