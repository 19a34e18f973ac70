#pragma once
#include "planner/cluster.h"
#include "planner/plan.h"

namespace planner {

/// nccl-tests bus-bandwidth factor (doc/PERFORMANCE.md): allreduce 2(n-1)/n, allgather,
/// reduce-scatter and all-to-all (n-1)/n, send/recv 1.
double bus_factor(Collective c, int ranks);

/// Where the ranks of one communicator sit: `ranks` in total, `ranks_per_node` of them in each
/// of `nodes` NVLink domains (a DGX host, or an NVL72 rack of 18 hosts).
struct GroupLayout {
  int ranks = 1;
  int ranks_per_node = 1;
  int nodes = 1;
};

/// A group of `size` ranks whose consecutive members are `stride` global ranks apart, on NVLink
/// domains of `domain_gpus` GPUs.
GroupLayout group_layout(int size, int stride, int domain_gpus);

/// Rank order TP innermost, then CP, then DP, then PP (Megatron-LM's default), on the cluster's
/// NVLink domains.
GroupLayout tp_group(const Plan& p, const ClusterProfile& c);
GroupLayout cp_group(const Plan& p, const ClusterProfile& c);
/// The gradient-reduction and ZeRO group: the dp x cp ranks that hold the same weights.
GroupLayout dp_group(const Plan& p, const ClusterProfile& c);
/// Two neighbouring pipeline stages (a send/recv pair).
GroupLayout pp_pair(const Plan& p, const ClusterProfile& c);

/// Achieved bus bandwidth of a tier for a collective at a message size (log-linear
/// interpolation of the measured curve; the asymptote outside it).
double tier_busbw_Bps(const CollectiveCost& cost, double bytes);

/// Time of one collective over `bytes` (the nccl-tests size S: the full buffer for allreduce,
/// the gathered output for allgather, the input for reduce-scatter). Inside a node: alpha + S
/// f(n) / busbw. Across domains: a ring whose bottleneck is min(NVLink busbw, ranks_per_node x
/// each GPU's share of the NIC busbw (ClusterProfile::inter_share)), i.e. the hierarchical
/// reading of nccl-tests numbers.
double collective_time_s(const ClusterProfile& c, Collective coll, double bytes,
                         const GroupLayout& g);

/// The latency (alpha) part of collective_time_s: the tier's measured latency, plus a hop per
/// extra node step of a ring (allgather, reduce-scatter, all-to-all) or tree (allreduce) across
/// nodes.
double collective_latency_s(const ClusterProfile& c, Collective coll, const GroupLayout& g);

/// Exposed part of a collective of `t` seconds that overlaps `window` seconds of compute, chunk
/// by chunk: the last chunk (`tail_fraction` of t) cannot overlap. While the rest runs beside the
/// compute, the compute slows by the factor (1 + slowdown) (the collective's kernels take SMs and
/// HBM bandwidth): if the collective outlasts the slowed compute, the excess is exposed; if not,
/// the compute loses t_overlap x slowdown / (1 + slowdown) of progress.
double exposed_after_overlap(double t, double window, double tail_fraction, double slowdown);

}  // namespace planner
