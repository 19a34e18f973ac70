#include "planner/cost/communication.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace planner {

double bus_factor(Collective c, int n) {
  assert(n >= 1);
  switch (c) {
    case Collective::allreduce:
      return 2.0 * (n - 1) / n;
    case Collective::allgather:
    case Collective::reduce_scatter:
    case Collective::alltoall:
      return double(n - 1) / n;
    case Collective::sendrecv:
      return 1.0;
  }
  return 1.0;
}

GroupLayout group_layout(int size, int stride, int domain_gpus) {
  assert(size >= 1 && stride >= 1 && domain_gpus >= 1);
  GroupLayout g;
  g.ranks = size;
  g.ranks_per_node = stride >= domain_gpus ? 1 : std::min(size, std::max(1, domain_gpus / stride));
  g.nodes = (size + g.ranks_per_node - 1) / g.ranks_per_node;
  return g;
}

GroupLayout nested_group_layout(int inner, int inner_stride, int outer, int outer_stride,
                                int domain_gpus) {
  assert(inner >= 1 && outer >= 1 && inner_stride >= 1 && domain_gpus >= 1);
  assert(outer == 1 || double(outer_stride) >= double(inner) * inner_stride);
  if (outer == 1) return group_layout(inner, inner_stride, domain_gpus);
  const int per_block = group_layout(inner, inner_stride, domain_gpus).ranks_per_node;
  // Blocks of the inner group that start inside the first domain (all of their members there
  // when the block fits, as with power-of-two sizes).
  const long long blocks =
      outer_stride >= domain_gpus ? 1 : std::min<long long>(outer, domain_gpus / outer_stride);
  GroupLayout g;
  g.ranks = inner * outer;
  g.ranks_per_node = static_cast<int>(std::min<long long>(g.ranks, blocks * per_block));
  g.nodes = (g.ranks + g.ranks_per_node - 1) / g.ranks_per_node;
  return g;
}

GroupLayout tp_group(const Plan& p, const ClusterProfile& c) {
  return group_layout(p.tp, 1, c.nvlink_domain);
}
GroupLayout cp_group(const Plan& p, const ClusterProfile& c) {
  return group_layout(p.cp, p.tp, c.nvlink_domain);
}
GroupLayout dp_group(const Plan& p, const ClusterProfile& c) {
  if (p.order == RankOrder::tp_pp_dp)  // the cp ranks beside TP, the dp ranks past the stages
    return nested_group_layout(p.cp, p.tp, p.dp, p.tp * p.cp * p.pp, c.nvlink_domain);
  return group_layout(p.dp * p.cp, p.tp, c.nvlink_domain);
}
GroupLayout ep_group(const Plan& p, const ClusterProfile& c) {
  return group_layout(p.ep, p.etp, c.nvlink_domain);
}
GroupLayout tp_ep_group(const Plan& p, const ClusterProfile& c) {
  // Knob values are bounded (kMaxKnob), their product is not.
  return group_layout(static_cast<int>(std::min<long long>(1LL * p.etp * p.ep, kMaxKnob)), 1,
                      c.nvlink_domain);
}
GroupLayout etp_group(const Plan& p, const ClusterProfile& c) {
  return group_layout(p.etp, 1, c.nvlink_domain);
}
GroupLayout expert_dp_group(const Plan& p, const ClusterProfile& c) {
  // Knob values are bounded (kMaxKnob), their product is not: the stride in 64 bits, capped.
  const long long replicas = std::max(1LL, p.expert_replicas());
  const long long stride = std::min<long long>(1LL * p.ep * p.etp, kMaxKnob);
  return group_layout(static_cast<int>(std::min<long long>(replicas, kMaxKnob)),
                      static_cast<int>(stride), c.nvlink_domain);
}
GroupLayout pp_pair(const Plan& p, const ClusterProfile& c) {
  if (p.pp <= 1) return GroupLayout{};
  return group_layout(2, p.order == RankOrder::tp_pp_dp ? p.tp * p.cp : p.tp * p.cp * p.dp,
                      c.nvlink_domain);
}

bool rank_order_matters(const Plan& p, const ClusterProfile& c) {
  if (p.pp <= 1 || p.weight_replicas() <= 1) return false;
  Plan q = p;
  q.order = p.order == RankOrder::tp_pp_dp ? RankOrder::tp_cp_dp_pp : RankOrder::tp_pp_dp;
  auto same = [](const GroupLayout& a, const GroupLayout& b) {
    return a.ranks == b.ranks && a.ranks_per_node == b.ranks_per_node && a.nodes == b.nodes;
  };
  return !same(dp_group(p, c), dp_group(q, c)) || !same(pp_pair(p, c), pp_pair(q, c));
}

double tier_busbw_Bps(const CollectiveCost& cost, double bytes) {
  const auto& c = cost.curve;
  if (c.empty()) return cost.busbw_Bps;
  if (bytes <= c.front().first) return c.front().second;
  if (bytes >= c.back().first) return c.back().second;
  auto hi =
      std::upper_bound(c.begin(), c.end(), bytes,
                       [](double b, const std::pair<double, double>& p) { return b < p.first; });
  auto lo = hi - 1;
  const double x = std::log(bytes / lo->first) / std::log(hi->first / lo->first);
  return lo->second + x * (hi->second - lo->second);
}

namespace {

/// Latency of a tier measured on its reference group, plus a hop per extra step of the ring
/// (allgather, reduce-scatter, all-to-all) or of the tree (allreduce, log2 of the nodes).
double latency_s(const NetworkTier& tier, Collective c, int steps) {
  return tier.cost[static_cast<int>(c)].latency_s + std::max(0, steps) * tier.hop_latency_s;
}

}  // namespace

const char* to_string(AllreduceAlgorithm a) {
  return a == AllreduceAlgorithm::tree ? "tree" : "ring";
}

double collective_latency_s(const ClusterProfile& cl, Collective coll, const GroupLayout& g,
                            AllreduceAlgorithm a) {
  if (g.ranks <= 1) return 0.0;
  if (g.nodes <= 1) return latency_s(cl.intra, coll, 0);
  int steps = 0;
  if (coll == Collective::allreduce)
    steps = a == AllreduceAlgorithm::tree
                ? 2 * static_cast<int>(std::ceil(std::log2(double(g.nodes))))
                : 2 * (g.nodes - 1);
  else if (coll != Collective::sendrecv)
    steps = g.nodes - 1;
  return latency_s(cl.inter, coll, steps);
}

namespace {

/// The bandwidth part of one collective across domains: the ring's slowest link sets the pace,
/// NVLink inside the domain or the NIC bandwidth of the group's ranks in one domain (each GPU's
/// share of its host's NICs), whichever is slower. A send and receive (a pipeline boundary, a
/// step of context parallelism's ring) is one rank's message to one peer: the hop that leaves the
/// domain runs on the sender's own NIC share, however many of the group's ranks the domain holds
/// (NCCL's collectives spread a domain's traffic over its ranks' NICs; a point-to-point message
/// cannot).
double across_domains_bandwidth_s(const ClusterProfile& cl, Collective coll, double bytes,
                                  const GroupLayout& g) {
  const int ci = static_cast<int>(coll);
  const double nics = coll == Collective::sendrecv ? 1.0 : g.ranks_per_node;
  const double bw =
      std::min(tier_busbw_Bps(cl.intra.cost[ci], bytes),
               nics * cl.inter_share() * tier_busbw_Bps(cl.inter.cost[ci], bytes / nics));
  return bytes * bus_factor(coll, g.ranks) / bw;
}

}  // namespace

namespace {

/// Both algorithms' times for one all-reduce across domains (g.nodes > 1), the wire time computed
/// once: the tree moves 2 S per rank at 0.92 of the bus bandwidth, the ring 2 S (n - 1) / n at all
/// of it.
struct AllreduceTimes {
  double ring = 0, tree = 0;
};
AllreduceTimes across_domains_allreduce(const ClusterProfile& cl, double bytes,
                                        const GroupLayout& g) {
  const double ring_bw_s = across_domains_bandwidth_s(cl, Collective::allreduce, bytes, g);
  return {collective_latency_s(cl, Collective::allreduce, g, AllreduceAlgorithm::ring) + ring_bw_s,
          collective_latency_s(cl, Collective::allreduce, g, AllreduceAlgorithm::tree) +
              ring_bw_s * g.ranks / double(g.ranks - 1) / kNcclTreeBandwidthFactor};
}

}  // namespace

double allreduce_time_s(const ClusterProfile& cl, double bytes, const GroupLayout& g,
                        AllreduceAlgorithm a) {
  if (g.ranks <= 1 || bytes <= 0) return 0.0;
  if (g.nodes <= 1) return collective_time_s(cl, Collective::allreduce, bytes, g);
  const AllreduceTimes t = across_domains_allreduce(cl, bytes, g);
  return a == AllreduceAlgorithm::ring ? t.ring : t.tree;
}

AllreduceAlgorithm allreduce_algorithm(const ClusterProfile& cl, double bytes,
                                       const GroupLayout& g) {
  if (g.nodes <= 1 || g.ranks <= 1 || bytes <= 0) return AllreduceAlgorithm::ring;
  const AllreduceTimes t = across_domains_allreduce(cl, bytes, g);
  return t.tree < t.ring ? AllreduceAlgorithm::tree : AllreduceAlgorithm::ring;
}

double collective_time_s(const ClusterProfile& cl, Collective coll, double bytes,
                         const GroupLayout& g) {
  if (g.ranks <= 1 || bytes <= 0) return 0.0;
  const int ci = static_cast<int>(coll);
  if (g.nodes <= 1) {
    const CollectiveCost& intra = cl.intra.cost[ci];
    const double traffic = bytes * bus_factor(coll, g.ranks);
    const double lat = collective_latency_s(cl, coll, g);
    const double bw = tier_busbw_Bps(intra, bytes);
    return intra.curve.empty() ? lat + traffic / bw : std::max(lat, traffic / bw);
  }
  if (coll == Collective::allreduce) {
    const AllreduceTimes t = across_domains_allreduce(cl, bytes, g);
    return std::min(t.ring, t.tree);
  }
  return collective_latency_s(cl, coll, g) + across_domains_bandwidth_s(cl, coll, bytes, g);
}

double alltoall_time_s(const ClusterProfile& cl, double bytes, const GroupLayout& g) {
  if (g.ranks <= 1 || bytes <= 0) return 0.0;
  if (g.nodes <= 1) return collective_time_s(cl, Collective::alltoall, bytes, g);
  const int ci = static_cast<int>(Collective::alltoall);
  const double n = g.ranks, local = g.ranks_per_node;
  const double off_node = bytes * (n - local) / n, on_node = bytes * (local - 1) / n;
  const double nic_s = off_node / (cl.inter_share() * tier_busbw_Bps(cl.inter.cost[ci], bytes));
  const double nvlink_s = on_node / tier_busbw_Bps(cl.intra.cost[ci], bytes);
  return collective_latency_s(cl, Collective::alltoall, g) + std::max(nic_s, nvlink_s);
}

double node_dedup_dispatch_s(const ClusterProfile& cl, double bytes, const GroupLayout& g,
                             double topk) {
  if (g.nodes <= 1 || topk <= 0) return alltoall_time_s(cl, bytes, g);
  const int ci = static_cast<int>(Collective::alltoall);
  const double nodes = g.nodes, per_token = bytes / topk;
  const double remote_nodes = (nodes - 1) * (1 - std::pow(1 - 1 / nodes, topk));
  const double nic_s =
      per_token * remote_nodes / (cl.inter_share() * tier_busbw_Bps(cl.inter.cost[ci], bytes));
  const double nvlink_s =
      bytes * (g.ranks - 1.0) / g.ranks / tier_busbw_Bps(cl.intra.cost[ci], bytes);
  return collective_latency_s(cl, Collective::alltoall, g) + std::max(nic_s, nvlink_s);
}

double exposed_after_overlap(double t, double window, double tail_fraction, double slowdown) {
  const double tail = t * tail_fraction, beside = t - tail;
  if (beside >= window * (1 + slowdown)) return tail + beside - window;
  return tail + beside * slowdown / (1 + slowdown);
}

}  // namespace planner
