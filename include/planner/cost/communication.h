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

/// A group of `inner` ranks `inner_stride` apart, repeated `outer` times `outer_stride` apart
/// (outer_stride >= inner x inner_stride): its members in the first NVLink domain set
/// ranks_per_node.
GroupLayout nested_group_layout(int inner, int inner_stride, int outer, int outer_stride,
                                int domain_gpus);

/// The plan's rank order (Plan::order): TP innermost, then CP, then DP, then PP (Megatron-LM's
/// default), or TP, CP, PP, DP (--use-tp-pp-dp-mapping), on the cluster's NVLink domains.
GroupLayout tp_group(const Plan& p, const ClusterProfile& c);
GroupLayout cp_group(const Plan& p, const ClusterProfile& c);
/// The gradient-reduction and ZeRO group: the dp x cp ranks that hold the same weights.
GroupLayout dp_group(const Plan& p, const ClusterProfile& c);
/// Megatron-Core's expert groups under parallel folding: a stage's tp x cp x dp ranks as etp x
/// ep x expert-dp, etp innermost (its "tp-ep-dp-pp" expert order).
GroupLayout ep_group(const Plan& p, const ClusterProfile& c);
GroupLayout etp_group(const Plan& p, const ClusterProfile& c);
/// The all-gather dispatcher's group: the etp x ep ranks of an expert group, consecutive.
GroupLayout tp_ep_group(const Plan& p, const ClusterProfile& c);
/// The expert-data-parallel group: the ranks holding the same experts, ep x etp apart.
GroupLayout expert_dp_group(const Plan& p, const ClusterProfile& c);
/// Two neighbouring pipeline stages (a send/recv pair).
GroupLayout pp_pair(const Plan& p, const ClusterProfile& c);
/// Whether the plan's groups sit differently under the other rank order (false: both orders
/// are the same plan, e.g. pp = 1, dp x cp = 1, or tp x cp filling the NVLink domain).
bool rank_order_matters(const Plan& p, const ClusterProfile& c);

/// Achieved bus bandwidth of a tier for a collective at a message size (log-linear
/// interpolation of the measured curve; the asymptote outside it).
double tier_busbw_Bps(const CollectiveCost& cost, double bytes);

/// NCCL's all-reduce algorithms (NVIDIA/nccl src/graph/tuning.cc, shared/data/hardware-reference.md
/// s.5). Across NVLink domains a ring takes 2(nodes - 1) network steps, each paying the inter-node
/// hop latency, at the ring's bus bandwidth; the double binary tree takes 2 log2(nodes) steps, at
/// half the bus bandwidth as algorithm bandwidth (algbw = 0.5 busBw against the ring's
/// n / (2(n - 1)) busBw) capped at kNcclTreeBandwidthFactor of it. Tree wins at small messages on
/// many nodes, the ring at large ones. Inside one domain both are the tier's measured figure.
enum class AllreduceAlgorithm { ring, tree };
const char* to_string(AllreduceAlgorithm a);
/// NCCL tuning.cc, Tree all-reduce: busBw = min(0.92 x busBw, per-channel caps); the per-channel
/// caps are not modelled (no channel counts in the profiles).
inline constexpr double kNcclTreeBandwidthFactor = 0.92;

/// The faster all-reduce algorithm for `bytes` over `g` under this model (NCCL's own tuner
/// compares the same two; ring inside one domain, where the model has one measured figure).
AllreduceAlgorithm allreduce_algorithm(const ClusterProfile& c, double bytes, const GroupLayout& g);
/// One all-reduce of `bytes` over `g` with algorithm `a`.
double allreduce_time_s(const ClusterProfile& c, double bytes, const GroupLayout& g,
                        AllreduceAlgorithm a);

/// Time of one collective over `bytes` (the nccl-tests size S: the full buffer for allreduce,
/// the gathered output for allgather, the input for reduce-scatter). Inside a node: alpha + S
/// f(n) / busbw. Across domains: a ring whose bottleneck is min(NVLink busbw, ranks_per_node x
/// each GPU's share of the NIC busbw (ClusterProfile::inter_share)), i.e. the hierarchical
/// reading of nccl-tests numbers. An all-reduce across domains takes the faster of NCCL's ring and
/// tree (allreduce_algorithm).
double collective_time_s(const ClusterProfile& c, Collective coll, double bytes,
                         const GroupLayout& g);

/// One all-to-all in which each rank sends `bytes` (the nccl-tests size), 1 / ranks of it to each
/// member. Inside one NVLink domain: collective_time_s. Across domains every rank's share for the
/// other domains, (ranks - ranks_per_node) / ranks of it, leaves through the rank's own share of
/// its host's NICs (no ring aggregates it: each pair exchanges directly), the rest over NVLink;
/// the slower of the two sets the time.
double alltoall_time_s(const ClusterProfile& c, double bytes, const GroupLayout& g);

/// DeepEP's dispatch (or combine) of one rank's `bytes` of token copies, `topk` copies a token,
/// over `g`: each token crosses the network once to every other node that holds one of its
/// experts (uniform routing: (nodes - 1)(1 - (1 - 1/nodes)^topk) nodes on average) at the rank's
/// NIC share, and every copy moves over NVLink inside the destination node, whichever is slower.
/// Inside one NVLink domain it is the all-to-all.
double node_dedup_dispatch_s(const ClusterProfile& c, double bytes, const GroupLayout& g,
                             double topk);

/// The latency (alpha) part of collective_time_s: the tier's measured latency, plus a hop per
/// extra node step of a ring (allgather, reduce-scatter, all-to-all: nodes - 1; all-reduce:
/// 2(nodes - 1)) or of the all-reduce's tree (2 log2(nodes)) across nodes.
double collective_latency_s(const ClusterProfile& c, Collective coll, const GroupLayout& g,
                            AllreduceAlgorithm a = AllreduceAlgorithm::ring);

/// Exposed part of a collective of `t` seconds that overlaps `window` seconds of compute, chunk
/// by chunk: the last chunk (`tail_fraction` of t) cannot overlap. While the rest runs beside the
/// compute, the compute slows by the factor (1 + slowdown) (the collective's kernels take SMs and
/// HBM bandwidth): if the collective outlasts the slowed compute, the excess is exposed; if not,
/// the compute loses t_overlap x slowdown / (1 + slowdown) of progress.
double exposed_after_overlap(double t, double window, double tail_fraction, double slowdown);

}  // namespace planner
