// The collectives of validate's workload, as the estimate charges them: the TP collectives of a
// layer with their pairing under TP-communication overlap (cost/stages.cc block_cost), the
// receiver's all-gather at a stage boundary (cost/stages.cc plan_costs, cost/build_stages.cc),
// and the DP collectives of an iteration (cost/data_parallel.cc dp_cost, cost/zero3.cc).
#include <algorithm>
#include <cstring>
#include <string>
#include <utility>

#include "planner/block.h"
#include "planner/cost/communication.h"
#include "planner/cost/data_parallel.h"
#include "planner/cost/memory.h"
#include "planner/cost/stages.h"
#include "planner/cost/zero3.h"
#include "planner/validate.h"

namespace planner {
namespace {

const char* linear_name(int index) { return kLinearNames[index]; }

/// The workload kernel of linear `index` in `pass` (a recomputed forward when `recompute`).
int kernel_index(const std::vector<Kernel>& kernels, const std::vector<bool>& is_recompute,
                 int index, Pass pass, bool recompute) {
  for (size_t i = 0; i < kernels.size(); ++i)
    if (kernels[i].cls == KernelClass::gemm && kernels[i].pass == pass &&
        is_recompute[i] == recompute && std::strcmp(kernels[i].name, linear_name(index)) == 0)
      return int(i);
  return -1;
}

/// Builds a layer's TP collectives, each of the activation's size over the TP group.
struct TpCollectives {
  const ClusterProfile& c;
  const Plan& p;
  const std::vector<Kernel>& kernels;
  const std::vector<bool>& is_recompute;
  const LayerCompute& lc;
  GroupLayout g;
  double act;
  std::vector<WorkCollective> out;

  /// `beside` >= 0: chunked beside that GEMM of `window_s`, the last of tp chunks exposed.
  void add(const char* name, Collective coll, Pass pass, int count, int beside = -1,
           double window_s = 0) {
    // The all-gathers of sequence parallelism carry FP8 under fp8 (shape_cell's).
    const double bytes =
        coll == Collective::allgather ? tp_gather_bytes(act, p.dtype, c.software) : act;
    WorkCollective w{name, coll, bytes, p.tp, pass, count};
    w.predicted_s = w.exposed_s = collective_time_s(c, coll, bytes, g);
    if (beside >= 0) {
      w.overlapped = true, w.beside = beside;
      w.exposed_s = exposed_after_overlap(w.predicted_s, window_s, 1.0 / p.tp,
                                          c.gpu.overlap_compute_slowdown);
    }
    out.push_back(w);
  }

  /// Without overlap: `n` per pass (one per row-parallel linear, Korthikanti et al. 2022,
  /// Fig. 5), all-reduce or all-gather + reduce-scatter with SP; `again` more in backward for
  /// the recomputed forward.
  void unpaired(int n, int again) {
    if (p.sp) {
      add("tp_allgather", Collective::allgather, Pass::forward, n);
      add("tp_reduce_scatter", Collective::reduce_scatter, Pass::forward, n);
      add("tp_allgather", Collective::allgather, Pass::backward_data, n + again);
      add("tp_reduce_scatter", Collective::reduce_scatter, Pass::backward_data, n + again);
    } else {
      add("tp_allreduce", Collective::allreduce, Pass::forward, n);
      add("tp_allreduce", Collective::allreduce, Pass::backward_data, n + again);
    }
  }

  /// Transformer Engine's overlap, paired as the estimate pairs it (stages.cc): a
  /// column-parallel linear's input all-gather beside its forward GEMM and its input gradient's
  /// reduce-scatter beside its weight gradient; a row-parallel one's reduce-scatter beside its
  /// forward GEMM and the backward all-gather beside its data gradient. A recomputed forward's
  /// beside the recomputed GEMM, counted in backward as the estimate counts it.
  void paired(const Module& mod, Pass pass, bool recompute) {
    const LinearTimes& t = lc.linear[mod.linear];
    const bool gather = (pass == Pass::forward) == mod.column_parallel;
    const Pass gemm = pass == Pass::forward ? Pass::forward
                      : mod.column_parallel ? Pass::backward_weight
                                            : Pass::backward_data;
    const double window = gemm == Pass::forward         ? t.fwd_s
                          : gemm == Pass::backward_data ? t.bwd_data_s
                                                        : t.bwd_weight_s;
    add(gather ? "tp_allgather" : "tp_reduce_scatter",
        gather ? Collective::allgather : Collective::reduce_scatter,
        recompute ? Pass::backward_data : pass, 1,
        kernel_index(kernels, is_recompute, mod.linear, gemm, recompute), window);
  }
};

}  // namespace

std::vector<WorkCollective> tp_collectives(const ModelSpec& m, const ClusterProfile& c,
                                           const Plan& p, const std::vector<Kernel>& kernels,
                                           const std::vector<bool>& is_recompute,
                                           const LayerCompute& lc) {
  if (p.tp == 1) return {};
  TpCollectives tp{
      c,
      p,
      kernels,
      is_recompute,
      lc,
      tp_group(p, c),
      activation_element_bytes(p.dtype) * p.mbs * (double(m.seq_len) / p.cp) * m.hidden,
      {}};
  BlockConfig bc{p.tp, p.cp, p.mbs, p.sp, attention_of(p, c)};
  bc.ep = p.ep, bc.etp = p.etp, bc.capacity = p.capacity_factor;
  bc.pad = p.pad_to_capacity.value_or(false);
  const BlockModel bm = block_model(m.moe.any() ? m.moe_shape() : m.decoder_shape(), bc);
  const bool full = p.recompute == Recompute::full;
  if (!(overlaps_of(p, c).tp_comm && p.sp && tp.g.nodes == 1)) {  // as block_cost's condition
    tp.unpaired(bm.tp_collectives(), full ? bm.tp_collectives() : 0);
  } else {
    for (int step = 0; step < (full ? 3 : 2); ++step)  // forward, backward, recomputed forward
      for (const Module& mod : bm)
        if (mod.kind == ModuleKind::linear && (mod.column_parallel || mod.tp_collectives > 0))
          tp.paired(mod, step == 1 ? Pass::backward_data : Pass::forward, step == 2);
  }
  // Current-scaling FP8 with SP: each tensor all-gathered after its cast waits on a 4-byte
  // all-reduce of its amax (shape_cell's amax_fwd_s and amax_bwd_s), exposed; a recomputed
  // forward's again in the backward.
  if (p.dtype == Dtype::fp8 && fp8_current_scaling(p.fp8_recipe, c.software) && p.sp) {
    int column = 0, row = 0;
    for (const Module& mod : bm)
      column += mod.sp_gathers_input(), row += mod.sp_gathers_output_grad();
    const double each = collective_time_s(c, Collective::allreduce, kFp8AmaxAllreduceBytes, tp.g);
    for (auto [pass, count] :
         {std::pair{Pass::forward, column}, {Pass::backward_data, row + (full ? column : 0)}}) {
      if (count == 0) continue;
      WorkCollective w{"tp_fp8_amax_allreduce",
                       Collective::allreduce,
                       kFp8AmaxAllreduceBytes,
                       p.tp,
                       pass,
                       count};
      w.predicted_s = w.exposed_s = each;
      tp.out.push_back(w);
    }
  }
  return tp.out;
}

std::vector<WorkCollective> ep_collectives(const LayerShape& l, const ClusterProfile& c,
                                           const Plan& p) {
  std::vector<WorkCollective> out;
  if (!l.moe.any() || 1LL * p.ep * p.etp == 1) return out;
  const BlockModel bm =
      block_model(l, {p.tp, p.cp, p.mbs, p.sp, attention_of(p, c),
                      activation_element_bytes(p.dtype), linear_input_bytes(p.dtype), p.ep, p.etp,
                      p.capacity_factor, p.pad_to_capacity.value_or(false)});
  const Module* dispatch = nullptr;
  for (const Module& mod : bm)
    if (mod.kind == ModuleKind::dispatch) dispatch = &mod;
  if (!dispatch) return out;
  const DispatchBytes d = dispatch_bytes(p, bm, *dispatch);
  const double bytes = d.copies;
  const bool full = p.recompute == Recompute::full;
  auto add = [&](const char* name, Collective coll, double size, int ranks, const GroupLayout& g,
                 int per_pass) {
    for (Pass pass : {Pass::forward, Pass::backward_data}) {
      WorkCollective w{name,  coll, size,
                       ranks, pass, per_pass * (pass == Pass::forward || !full ? 1 : 2)};
      w.predicted_s = w.exposed_s = coll == Collective::alltoall
                                        ? alltoall_time_s(c, size, g)
                                        : collective_time_s(c, coll, size, g);
      out.push_back(w);
    }
  };
  if (p.dispatcher == Dispatcher::allgather) {  // every token over etp x ep (stages.cc)
    const int group = static_cast<int>(std::min<long long>(1LL * p.etp * p.ep, kMaxKnob));
    const GroupLayout g = tp_ep_group(p, c);
    add("ep_allgather", Collective::allgather, d.hidden + d.probs, group, g, 1);
    add("ep_reduce_scatter", Collective::reduce_scatter, d.hidden, group, g, 1);
  } else if (p.ep > 1) {
    add("ep_alltoall", Collective::alltoall, bytes, p.ep, ep_group(p, c), 2);
  }
  if (p.etp > 1 && p.dispatcher == Dispatcher::alltoall) {
    const GroupLayout e = etp_group(p, c);
    add("etp_allgather", Collective::allgather, bytes * p.etp, p.etp, e, 1);
    add("etp_reduce_scatter", Collective::reduce_scatter, bytes * p.etp, p.etp, e, 1);
  }
  return out;
}

std::vector<WorkCollective> expert_dp_collectives(const ClusterProfile& c, const Plan& p,
                                                  double expert_params_rank) {
  std::vector<WorkCollective> out;
  if (p.expert_replicas() <= 1 || expert_params_rank <= 0) return out;
  const GroupLayout g = expert_dp_group(p, c);
  const Overlaps ov = overlaps_of(p, c);
  const int ranks = int(p.expert_replicas());
  const double grad_bytes = expert_params_rank * grad_wire_bytes(p);
  auto add = [&](const char* name, Collective coll, double bytes, Pass pass, bool overlapped,
                 int count) {
    WorkCollective w{name, coll, bytes, ranks, pass, count};
    w.predicted_s = w.exposed_s = collective_time_s(c, coll, bytes, g);
    w.overlapped = overlapped;
    out.push_back(w);
  };
  if (p.zero == 0) {
    const int buckets = expert_dp_buckets(p, expert_params_rank);
    add("expert_dp_grad_allreduce", Collective::allreduce, grad_bytes / buckets,
        Pass::backward_weight, ov.grad_reduce, buckets);
  } else {
    add("expert_dp_grad_reduce_scatter", Collective::reduce_scatter, grad_bytes,
        Pass::backward_weight, ov.grad_reduce, 1);
    add("expert_dp_param_allgather", Collective::allgather,
        expert_params_rank * weight_bytes_per_param(p.dtype), Pass::forward, ov.param_gather, 1);
  }
  return out;
}

std::vector<WorkCollective> boundary_collectives(const ModelSpec& m, const ClusterProfile& c,
                                                 const Plan& p, const Partition& chunks,
                                                 int stage) {
  if (p.pp == 1 || p.tp == 1 || p.sp) return {};
  // The widest activation crossing a boundary, from the block shapes' cells as plan_costs takes it.
  const CellCosts cell = cell_costs(m, c, p, block_layout(m));
  double widest = 0;
  for (const ShapeCell& sc : cell.shape) widest = std::max(widest, sc.boundary_bytes);
  const double each = collective_time_s(c, Collective::allgather, widest, tp_group(p, c));
  // The stage's chunks are virtual stages stage, stage + pp, ...: forward receives into every one
  // but the model's first, backward into every one but its last (build_stages' chunk costs).
  const int last = int(chunks.size()) - 1;
  int fwd = 0, bwd = 0;
  for (int vs = stage; vs <= last; vs += p.pp) fwd += vs > 0, bwd += vs < last;
  std::vector<WorkCollective> out;
  for (const auto& [pass, count] :
       {std::pair{Pass::forward, fwd}, std::pair{Pass::backward_data, bwd}}) {
    if (count == 0) continue;
    WorkCollective w{
        "pp_boundary_allgather", Collective::allgather, widest, p.tp, pass, count, true, each};
    w.exposed_s = each;
    out.push_back(w);
  }
  return out;
}

namespace {

/// ZeRO-3 (data_parallel.cc zero3_cost): per micro-batch, every linear's weights gathered before
/// it runs, forward and backward (again for the recomputed forward), each its share by
/// parameters of one whole-stage gather's wire time plus a latency; the gradients reduce-scattered
/// a bucket at a time (zero3_pass's flushes), each bucket its share plus a latency.
void add_zero3(const ModelSpec& m, const ClusterProfile& c, const Plan& p, double params_rank,
               const LayerCompute& lc, int blocks, std::vector<WorkCollective>& out) {
  GroupLayout z3 = dp_group(p, c);
  z3.ranks_per_node = std::min(z3.ranks_per_node, c.software.zero3_collective_nics);
  const double param_bytes = params_rank * weight_bytes_per_param(p.dtype);
  const double grad_bytes = params_rank * grad_wire_bytes(p);
  const double ag_latency = collective_latency_s(c, Collective::allgather, z3);
  const double rs_latency = collective_latency_s(c, Collective::reduce_scatter, z3);
  const double ag_wire = collective_time_s(c, Collective::allgather, param_bytes, z3) - ag_latency;
  const double rs_wire =
      collective_time_s(c, Collective::reduce_scatter, grad_bytes, z3) - rs_latency;
  blocks = std::max(1, blocks);
  const BlockModel bm = block_model(m.decoder_shape(), {p.tp, 1, 1, false});
  double block_params = 0;  // on one TP rank
  for (const Module& mod : bm)
    if (mod.kind == ModuleKind::linear) block_params += mod.params / p.tp;
  if (block_params <= 0) return;
  const int ranks = int(p.weight_replicas());
  // Under a pipeline (torchtitan's FSDP2, zero3_pipelined) the stage's weights are gathered once,
  // in the first micro-batch's forward, and its gradients reduce-scattered once, in the last's.
  const bool once = zero3_pipelined(p);
  const int passes = once ? 1 : p.recompute == Recompute::full ? 3 : 2;  // fwd, bwd, recomputed
  for (int pass = 0; pass < passes; ++pass)
    for (const Module& mod : bm) {
      if (mod.kind != ModuleKind::linear) continue;
      const double share = mod.params / p.tp / (blocks * block_params);
      WorkCollective w{std::string("zero3_allgather_") + linear_name(mod.linear),
                       Collective::allgather,
                       share * param_bytes,
                       ranks,
                       pass == 0 ? Pass::forward : Pass::backward_data,
                       blocks,
                       !once,
                       share * ag_wire + ag_latency};
      w.overlapped = true, w.exposed_s = w.predicted_s;
      out.push_back(w);
    }
  const std::vector<Zero3Step> bwd =
      zero3_block_steps(m.decoder_shape(), lc, p.tp, p.recompute, true);
  // Under a pipeline one reduce-scatter per block after the last backward (data_parallel.cc).
  const int scatters = once ? blocks : zero3_pass(bwd, blocks, Zero3Buckets{}, 0.0).scatters;
  if (scatters <= 0) return;
  WorkCollective rs{"zero3_grad_reduce_scatter",
                    Collective::reduce_scatter,
                    grad_bytes / scatters,
                    ranks,
                    Pass::backward_weight,
                    scatters,
                    !once,
                    rs_wire / scatters + rs_latency};
  rs.overlapped = !once, rs.exposed_s = rs.predicted_s;  // after the last backward: exposed
  out.push_back(rs);
}

}  // namespace

std::vector<WorkCollective> dp_collectives(const ModelSpec& m, const ClusterProfile& c,
                                           const Plan& p, double params_rank,
                                           const LayerCompute& lc, int stage_blocks) {
  std::vector<WorkCollective> out;
  const GroupLayout dpg = dp_group(p, c);
  const int ranks = int(p.weight_replicas());
  const Overlaps ov = overlaps_of(p, c);
  auto add = [&](const char* name, Collective coll, double bytes, int group_ranks,
                 const GroupLayout& g, Pass pass, bool overlapped) {
    WorkCollective w{name, coll, bytes, group_ranks, pass, 1};
    w.predicted_s = w.exposed_s = collective_time_s(c, coll, bytes, g);
    w.overlapped = overlapped;
    out.push_back(w);
  };
  const double grad_bytes = params_rank * grad_wire_bytes(p);
  if (ranks > 1 && deepspeed_pipelined(c, p) && p.zero <= 1) {  // after the pipeline (dp_cost)
    const double wire = params_rank * deepspeed_wire_bytes_per_param(p);
    const int n = deepspeed_reduce_buckets(params_rank);
    if (deepspeed_allreduces(c, p)) {
      add("dp_grad_allreduce", Collective::allreduce, wire / n, ranks, dpg, Pass::backward_weight,
          false);
      out.back().count = n;
    } else {
      add("dp_grad_reduce_scatter", Collective::reduce_scatter, wire, ranks, dpg,
          Pass::backward_weight, false);
    }
    if (p.zero == 1)
      add("dp_param_allgather", Collective::allgather,
          params_rank * weight_bytes_per_param(p.dtype), ranks, dpg, Pass::forward, false);
  } else if (ranks > 1 && p.zero == 0) {  // one all-reduce per gradient bucket (dp_buckets)
    add("dp_grad_allreduce", Collective::allreduce, dp_bucket_bytes(p, params_rank), ranks, dpg,
        Pass::backward_weight, ov.grad_reduce);
    out.back().count = dp_buckets(p, params_rank);
  } else if (ranks > 1 && p.zero <= 2) {  // and after the optimizer step, the updated weights
    add("dp_grad_reduce_scatter", Collective::reduce_scatter, grad_bytes, ranks, dpg,
        Pass::backward_weight, ov.grad_reduce);
    add("dp_param_allgather", Collective::allgather, params_rank * weight_bytes_per_param(p.dtype),
        ranks, dpg, Pass::forward, ov.param_gather);
  } else if (ranks > 1) {
    add_zero3(m, c, p, params_rank, lc, stage_blocks, out);
  }
  if (m.embedding_on_last_stage(p.pp))  // first and last stage all-reduce the shared embedding
    add("tied_embedding_allreduce", Collective::allreduce,
        double(m.vocab) * m.hidden / p.tp * grad_wire_bytes(p), 2, pp_pair(p, c),
        Pass::backward_weight, false);
  return out;
}

}  // namespace planner
