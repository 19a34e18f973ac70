#pragma once
#include <array>
#include <string>
#include <vector>

#include "planner/block.h"
#include "planner/cluster.h"
#include "planner/cost/compute.h"
#include "planner/cost/memory.h"
#include "planner/cost/simulate.h"
#include "planner/model.h"
#include "planner/plan.h"

namespace planner {

/// The model cut into pipeline-partitionable blocks (every encoder layer, then every decoder
/// layer). Built once per model.
struct BlockLayout {
  std::vector<LayerShape> shapes;        ///< distinct block shapes
  std::vector<int> shape_of;             ///< per block
  std::vector<std::vector<int>> prefix;  ///< per shape: how many of the first i blocks have it
  int first_decoder = 0;                 ///< block holding the token embedding
  int count() const { return static_cast<int>(shape_of.size()); }
};
BlockLayout block_layout(const ModelSpec& m);

/// What one block of a shape costs one rank for one micro-batch under a plan.
struct BlockCost {
  double fwd_s = 0, bwd_s = 0;  ///< compute plus exposed TP/CP communication; bwd has recompute
  double bwd_weight_s = 0;      ///< weight-gradient GEMMs (what ZB-H1 defers)
  double compute_s = 0, tp_comm_s = 0, cp_comm_s = 0;  ///< the last two exposed
  double ep_comm_s = 0;  ///< the expert dispatcher's collectives, exposed
  double host_s = 0;     ///< waiting for the host to launch an eager layer with experts
  /// Combined 1F1B (ep_comm_overlap): fwd_s, bwd_s and ep_comm_s are a pass's beside its partner;
  /// a pass without one exposes this much more of the dispatcher's collectives (ChunkCost's).
  double unpaired_s = 0;
  double params = 0;          ///< per rank, before ZeRO
  double expert_params = 0;   ///< the routed experts' part of params (expert-data-parallel)
  double act_bytes = 0;       ///< stored per micro-batch
  double full_act_bytes = 0;  ///< without recompute: the backward working set
  double largest_matrix = 0;  ///< parameters, gathered at once under ZeRO-3
  double weight_cache = 0;    ///< bytes of FP8 weights kept between micro-batches, per rank
  LayerCompute compute;
  LayerTimes times;
};

/// Bytes of one sequence-parallel TP all-gather of an activation of `act` bytes (16-bit or fp32
/// elements): under fp8 Transformer Engine gathers the tensor as FP8, 1 byte an element
/// (distributed.py _all_gather_fp8: the row-wise copy cast before the gather). torchao's float8
/// under torchtitan communicates in high precision (torchtitan's float8.md at b5bcd76c: "all
/// distributed communication is done in high precision"), as does every stack at 16 bits. MXFP8
/// gathers its scaled copies with their scales (one or both usages, by module): priced at the
/// activation's own bytes, not modelled further.
inline double tp_gather_bytes(double act, Dtype d, const SoftwareStack& s) {
  return d == Dtype::fp8 && s.transformer_engine
             ? act / activation_element_bytes(d) * kFp8GatheredBytes
             : act;
}

/// Every shape's cost plus the embedding (with the first decoder block) and the logits and loss
/// (with the last block).
struct PlanCosts {
  std::vector<BlockCost> shape;
  /// With recompute=full and recompute_layers = N: each shape's cost when it keeps its
  /// activations (recompute none), for the layers after the first N of a chunk (build_stages);
  /// empty otherwise.
  std::vector<BlockCost> kept;
  double embed_s = 0, logits_s = 0;  ///< forward + backward per micro-batch
  /// The same per pass: the embedding's forward and backward, the logits' forward, backward
  /// (data and weight together) and its weight gradient alone (which ZB-H1 defers).
  double embed_fwd_s = 0, embed_bwd_s = 0, logits_fwd_s = 0, logits_bwd_s = 0,
         logits_bwd_weight_s = 0;
  double embed_params = 0, output_params = 0;
  double embed_act_bytes = 0;  ///< per micro-batch on the first decoder stage
  double logits_bytes = 0;     ///< one micro-batch at a time on the last stage
  double p2p_s = 0;            ///< one activation transfer between stages
  double p2p_gather_s = 0;     ///< the receiver's TP all-gather of it (no SP)
  /// The multi-token-prediction modules (ModelSpec::mtp_layers), on the last stage after the
  /// logits: their compute is in the logits' figures above (logits_s, the passes, the weight
  /// gradient), their params in output_params; here what they add beside: their exposed TP (with
  /// eh_proj's collectives), CP and EP communication per micro-batch, their routed experts'
  /// parameters and their stored activations per micro-batch.
  double mtp_tp_s = 0, mtp_cp_s = 0, mtp_ep_s = 0, mtp_host_s = 0;
  double mtp_unpaired_s = 0;  ///< the modules' BlockCost::unpaired_s, per pass
  double mtp_expert_params = 0, mtp_act_bytes = 0;
  double mtp_weight_cache = 0;  ///< the modules' FP8 weights kept between micro-batches
};

/// A block shape under one layer configuration (tp, cp, mbs, sp, dtype, attention): what its cost
/// shares across every plan of that configuration, which the search computes once per
/// (tp, cp, mbs, sp) cell. The rest of BlockCost depends on the plan's recompute and TP overlap.
struct ShapeCell {
  LayerCompute compute;
  BlockModel model;
  bool tp_in_node = true;  ///< the TP group inside one node (TP overlap needs NVLink)
  /// One TP collective's all-gather and reduce-scatter with sequence parallelism (0 without), and
  /// the TP collectives of one pass, none overlapped.
  double tp_allgather_s = 0, tp_reduce_scatter_s = 0, tp_per_pass_s = 0;
  double cp_fwd_s = 0;       ///< the ring attention exchange's exposed part, per forward
  double cp_bwd_s = 0;       ///< the same per backward (the K,V block and its gradient)
  double ep_per_pass_s = 0;  ///< the expert dispatcher's collectives per pass (exposed)
  /// Current-scaling FP8's amax all-reduces over TP in each pass (exposed: each precedes a cast).
  double amax_fwd_s = 0, amax_bwd_s = 0;
  double expert_params = 0;   ///< as in BlockCost
  double boundary_bytes = 0;  ///< the activation a stage boundary carries
  double params = 0, full_act_bytes = 0, largest_matrix = 0;  ///< as in BlockCost
  std::array<double, 4> act_bytes{};                          ///< stored, by Recompute
};

/// The messages of a mixture-of-experts layer's dispatcher in one pass on one rank (expert_
/// dispatch_s's, and validate's): `copies`, the all-to-all's token copies (x etp for etp's
/// all-gather and reduce-scatter); with the all-gather dispatcher `hidden`, every etp x ep
/// rank's tokens, and `probs`, their routing probabilities, both in the activations' precision.
struct DispatchBytes {
  double copies = 0, hidden = 0, probs = 0;
};
DispatchBytes dispatch_bytes(const Plan& p, const BlockModel& bm, const Module& dispatch);

/// The EP communication a forward and a backward of one layer leave exposed when Megatron-Core's
/// combined 1F1B runs them together (overlap_moe_expert_parallel_comm; TransformerLayerSchedulePlan
/// .run at core_v0.15.0, models/common/model_chunk_schedule_plan.py): three steps, the
/// communication stream beside the compute stream,
///   combine backward             | the forward's attention, norm and router
///   dispatch forward, backward   | the MLP's backward (data, then weights), the MLP's forward
///   combine forward              | the backward's norm, router and attention
/// where the MLP's forward waits for the forward's dispatch and the backward's dispatch for the
/// MLP's data gradient. `a2a` is one dispatch or combine (each moves the same bytes); the MLP is
/// the experts' and shared experts' GEMMs.
double paired_ep_exposed_s(const LayerCompute& lc, double a2a, double slow);

/// Every shape's ShapeCell and the embedding's and logits' compute of one layer configuration.
struct CellCosts {
  std::vector<ShapeCell> shape;
  HeadCompute head;
};
/// For the layer configuration of `p` (its tp, cp, mbs, sp, dtype and attention).
CellCosts cell_costs(const ModelSpec& m, const ClusterProfile& c, const Plan& p,
                     const BlockLayout& layout);

/// `cell` may carry cell_costs() for the plan's layer configuration (the search memoises it per
/// (tp, cp, mbs, sp)); without it they are computed.
PlanCosts plan_costs(const ModelSpec& m, const ClusterProfile& c, const Plan& p,
                     const BlockLayout& layout, const CellCosts* cell = nullptr);
/// The same into `pc`, reusing its storage (the search's workspace).
void plan_costs(const ModelSpec& m, const ClusterProfile& c, const Plan& p,
                const BlockLayout& layout, const CellCosts* cell, PlanCosts& pc);

/// Blocks per virtual stage (pp x vpp entries, contiguous, in order).
using Partition = std::vector<int>;
/// As even as possible; the earlier virtual stages take the remainder.
Partition even_partition(int blocks, int virtual_stages);
/// The same into `part`, reusing its storage.
void even_partition(int blocks, int virtual_stages, Partition& part);

/// The decoder layers of each virtual stage under a split that split_check (plan.h) accepts:
/// chunk k of stage s is virtual stage k x pp + s, a stage's layers shared evenly by its vpp
/// chunks.
void split_partition(int layers, const Plan& p, Partition& part);

/// Per-virtual-stage costs and per-physical-stage loads of a partition.
struct Stages {
  std::vector<ChunkCost> chunks;  ///< per virtual stage, one micro-batch
  std::vector<double> chunk_compute_s, chunk_tp_s, chunk_cp_s, chunk_ep_s, chunk_host_s;
  std::vector<StageLoad> load;        ///< per physical stage
  std::vector<int> blocks_per_stage;  ///< per physical stage (sum of its chunks)
};
Stages build_stages(const BlockLayout& layout, const PlanCosts& pc, const Plan& p,
                    const Partition& part);
/// The same into `st`, reusing its storage (the search calls this millions of times).
void build_stages(const BlockLayout& layout, const PlanCosts& pc, const Plan& p,
                  const Partition& part, Stages& st);

/// The contiguous partition minimising the slowest virtual stage (parametric search over the
/// bottleneck time with a greedy fill), subject to each physical stage's memory under the
/// closed-form in-flight count. Falls back to the even partition when nothing better fits.
Partition balanced_partition(const BlockLayout& layout, const PlanCosts& pc, const Plan& p,
                             double memory_limit_bytes);

}  // namespace planner
