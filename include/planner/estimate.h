#pragma once
#include <optional>
#include <string>

#include "planner/cluster.h"
#include "planner/cost/communication.h"
#include "planner/cost/compute.h"
#include "planner/cost/memory.h"
#include "planner/cost/simulate.h"
#include "planner/cost/stages.h"
#include "planner/framework.h"
#include "planner/model.h"
#include "planner/plan.h"

namespace planner {

/// Why a plan is not ranked. Infeasible plans are an expected outcome, not an error.
enum class Rejection {
  none,
  gpus_mismatch,          ///< dp*tp*pp*cp differs from the GPU count
  tp_not_dividing_heads,  ///< tp must divide heads and kv_heads
  tp_across_nodes,        ///< tp larger than (or not dividing) a node without --tp-across-nodes
  pp_not_dividing_layers,
  cp_not_dividing_seq,
  batch_not_divisible,      ///< gbs not a multiple of mbs*dp
  vpp_invalid,              ///< vpp needs pp > 1 and (layers/pp) % vpp == 0
  interleave_microbatches,  ///< interleaved 1F1B needs microbatches % pp == 0
  sp_without_tp,
  zero_invalid,
  framework_refuses,  ///< the framework cannot run the plan as planned (framework.h)
  dtype_unsupported,  ///< the GPU has no tensor-core peak for this precision
  schedule_invalid,   ///< the simulator found the schedule cannot run or complete
  out_of_memory,
  offload_invalid,     ///< the offload asked for needs what the plan or the profile lacks
  host_out_of_memory,  ///< the offloaded state does not fit in the node's host memory
  experts_invalid,     ///< ep / etp do not fit the model's experts or the stage's ranks
  recompute_invalid,   ///< recompute_layers without recompute=full, or beyond the model's layers
  count_
};
inline constexpr int kNumRejections = static_cast<int>(Rejection::count_);
const char* to_string(Rejection r);

/// Where one iteration's time goes, seconds on the critical path.
struct Breakdown {
  double compute_s = 0;    ///< forward, backward and recompute work of the critical stage
  double tp_comm_s = 0;    ///< exposed TP collectives
  double cp_comm_s = 0;    ///< exposed CP exchange (ring attention's K,V send/receive)
  double ep_comm_s = 0;    ///< exposed expert dispatch and combine (all-to-all, etp gathers)
  double host_s = 0;       ///< the GPU waiting for the host to launch eager layers with experts
  double pp_comm_s = 0;    ///< exposed stage-to-stage transfers
  double dp_comm_s = 0;    ///< exposed DP reduction and ZeRO gathers
  double bubble_s = 0;     ///< pipeline fill and drain
  double optimizer_s = 0;  ///< optimizer step on the GPU
  double offload_s = 0;    ///< exposed host-link and NVMe transfers and the CPU optimizer step
};

struct Estimate {
  Plan plan;
  Rejection rejection = Rejection::none;
  std::string reason;  ///< detail of a structural rejection (memory: see memory_bytes)
  double iteration_time_s = 0;
  double tokens_per_s = 0;
  double tflops_per_gpu = 0;  ///< model FLOPs (megatron-mfu formula) / time / GPUs
  double mfu = 0;
  double memory_bytes = 0;  ///< most loaded stage
  double memory_limit_bytes = 0;
  MemoryBreakdown memory;
  double host_memory_bytes = 0;  ///< offloaded state in one node's host memory (all its ranks)
  double host_memory_limit_bytes = 0;  ///< what the job may fill (kHostMemoryUsableFraction)
  double offload_h2d_bytes = 0, offload_d2h_bytes = 0;  ///< per rank and iteration
  Breakdown breakdown;
  LayerTimes layer;
  LayerCompute layer_compute;
  double bubble_fraction = 0;  ///< bubble / iteration
  double exposed_comm_fraction = 0;
  double dp_comm_total_s = 0;  ///< DP traffic before overlap (for diagnostics)
  /// The most loaded stage's weights on one rank that dp_cost reduces over dp x cp, and its
  /// routed experts' that expert_dp_cost reduces over the expert-data-parallel group.
  double dp_params_rank = 0, expert_params_rank = 0;
  /// zero=0 with dp x cp > 1: NCCL's algorithm for one gradient bucket's all-reduce, and the
  /// bucket's bytes (dp_allreduce_algorithm); ring and 0 otherwise.
  AllreduceAlgorithm dp_allreduce = AllreduceAlgorithm::ring;
  double dp_bucket_bytes = 0;
  /// zero=0 with dp x cp > 1, uncompressed: the iteration time with the source's 8-bit gradient
  /// all-reduce in place of the plan's (int8_allreduce_cost; a what-if), and its DP traffic
  /// time; 0 otherwise.
  double int8_allreduce_iteration_s = 0, int8_allreduce_total_s = 0;
  bool simulated = false;         ///< timed by the event-driven simulator, not the closed form
  double closed_form_time_s = 0;  ///< the closed form's iteration time (even partition)
  std::vector<int> partition;     ///< blocks (layers) per pipeline stage
  Partition chunk_partition;      ///< blocks per virtual stage (model chunk), as simulated
  int critical_stage = 0;         ///< the slowest stage per micro-batch, whose parts it charges
  bool balanced = false;          ///< the balanced partition beat the even split
  double balanced_gain_pct = 0;   ///< iteration-time gain of the balanced over the even split
  std::vector<double> stage_busy_s, stage_idle_s;  ///< per stage, simulated
  std::vector<int> peak_in_flight;                 ///< per stage, simulated
  std::optional<Framework> framework;              ///< the framework it was estimated for
  bool ok() const { return rejection == Rejection::none; }
};

struct EstimateOptions {
  bool tp_across_nodes = false;
  double memory_limit_bytes = 0;  ///< 0: the GPU's HBM
  bool reasons = true;            ///< build rejection messages (the search turns this off)
  /// Fill the per-stage detail (partitions, the decoder layer's split). The search ranks without
  /// it and computes it only for the plans it keeps.
  bool detail = true;
  /// The framework the plan is for: its refusals are checked and `balanced` partitions are tried
  /// only where it splits layers unevenly. None (the library's default; the commands default to
  /// megatron): the cost model alone, with the one limit both frameworks share (no ZeRO-2/3 with
  /// pp > 1); regress uses it, its rows each having run on their own stack.
  std::optional<Framework> framework;
  /// Try a time- and memory-balanced partition beside the plan's split where the framework
  /// allows one (refine). Off in regress: each row ran on a framework, and none launches one
  /// (FrameworkInfo::uneven_stages), so the row is priced on the split it ran.
  bool balanced_partitions = true;
  /// Tokens the run trains on (--train-tokens; 0: not given). A compressed optimizer's
  /// uncompressed warm-up (kCompressionFreezeSteps) is then averaged over the run's steps;
  /// without it the step is priced after the warm-up.
  double train_tokens = 0;
};

/// check_plan's expert checks alone (ep and etp against the experts and a stage's ranks, the
/// dispatcher, the overlap): the search applies them before it prices a combination of the
/// expert knobs.
Rejection check_expert_layout(const ModelSpec& m, const Plan& p);

/// The structural checks that do not depend on vpp, the schedule, ZeRO, recomputation or sp
/// (precision, GPU count, tp against heads and the node, pp against the layers, cp against the
/// sequence, the batch against mbs x dp; for a multimodal model only the first four): the search
/// applies them once for all plans that differ only in those knobs. Their order is check_plan's.
Rejection check_layout(const ModelSpec& m, const ClusterProfile& c, const Plan& p,
                       const EstimateOptions& o, std::string* reason);

/// "H100-SXM5-80GB has no mxfp8 tensor-core peak (...)": why `gpu` cannot run `dtype`
/// (check_layout's reason, and advise's row for such a GPU).
std::string dtype_unsupported_message(const Gpu& gpu, Dtype dtype);

/// "tp=16 does not divide kv_heads=8": the head count tp fails, named (check_layout's reason, and
/// suggest's for a --tp value no plan can use).
std::string tp_heads_message(int tp, int heads, int kv_heads);

/// The plan knobs only a model with experts takes: check_plan refuses them on a dense one
/// (Rejection::experts_invalid), and suggest's error names them when that refused every plan.
inline constexpr const char* kExpertKnobs =
    "ep, etp, ep_comm_overlap, dispatcher, capacity_factor, pad_to_capacity, cuda_graphs and "
    "recompute=selective_moe";

/// Structural checks only (divisibility, layout, dtype); Rejection::none when the plan is valid.
Rejection check_plan(const ModelSpec& m, const ClusterProfile& c, const Plan& p,
                     const EstimateOptions& o, std::string* reason);

/// Work the search shares across plans: the model's blocks, and the costs of each block shape and
/// of the head for the plans' (tp, cp, mbs, sp, dtype, attention) (cell_costs).
struct EstimateCache {
  BlockLayout layout;
  CellCosts cell;
};

/// Per physical stage: one micro-batch's forward and backward over its chunks with the
/// stage-to-stage transfers the closed form serialises with them; the critical (slowest) stage's
/// parts.
struct StageTimes {
  std::vector<double> t;
  int critical = 0;
  double t_max = 0, sum = 0, fwd = 0, bwd = 0, weight = 0, compute = 0, tp = 0, cp = 0, ep = 0,
         p2p = 0;       ///< a stage's transfers per micro-batch (0 under p2p_fill)
  double p2p_fill = 0;  ///< transfers exposed once an iteration (the fill and drain)
  double host = 0;      ///< the critical stage's host wait per micro-batch (BlockCost::host_s)
  std::vector<double> unpaired;  ///< per stage: combined 1F1B's unpaired passes per micro-batch
};

/// Storage an estimate reuses: the caller that estimates many plans (the search) owns one, so
/// that no plan allocates. Estimates made without one use their own.
struct Workspace {
  PlanCosts costs;
  Partition even;
  Stages stages;
  StageTimes times;
  SimScratch sim;
  std::vector<double> zero3;
};

/// The closed-form estimate of one plan on the even partition: pipeline time (m-1) t_max + sum,
/// or its interleaved and ZB-H1 forms. The fast pre-filter of the search.
Estimate estimate(const ModelSpec& m, const ClusterProfile& c, const Plan& p,
                  const EstimateOptions& o = {}, const EstimateCache* cache = nullptr,
                  Workspace* ws = nullptr);

/// The plan run through the event-driven simulator on `part` (blocks per virtual stage; the even
/// partition when null), with memory from the simulated peak of micro-batches in flight. `sim`,
/// when given, receives the raw simulation, with every task recorded when `trace` is set.
Estimate simulate_plan(const ModelSpec& m, const ClusterProfile& c, const Plan& p,
                       const EstimateOptions& o = {}, const Partition* part = nullptr,
                       SimResult* sim = nullptr, bool trace = false);

/// The even and the balanced partition through the simulator: the faster feasible one, with
/// balanced_gain_pct and closed_form_time_s filled in.
Estimate refine(const ModelSpec& m, const ClusterProfile& c, const Plan& p,
                const EstimateOptions& o = {});

/// One line for a rejected estimate: the structural reason, or "out of memory: the plan needs X
/// GiB per GPU of Y GiB".
std::string rejection_message(const Estimate& e);

/// True when every number of `e` a report prints is finite (and the time positive). Profile and
/// model bounds (limits.h) keep it so; the commands check it before printing, the fuzzers assert
/// it.
bool finite_result(const Estimate& e);

/// The blocks of each virtual stage as the plan cuts them: its split of the decoder layers
/// (split_partition), or, with encoders, as even as the blocks allow.
void plan_partition(const ModelSpec& m, const BlockLayout& layout, const Plan& p, Partition& part);

/// The attention kernel a plan runs: its own override, else the execution stack's.
AttentionKernel attention_of(const Plan& p, const ClusterProfile& c);

}  // namespace planner
