#include "planner/cost/data_parallel.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "planner/cost/communication.h"
#include "planner/cost/memory.h"
#include "planner/cost/zero3.h"

namespace planner {
namespace {

double ddp_bucket_params(long long replicas) { return std::max(40e6, 1e6 * double(replicas)); }

/// Overlapped (`overlap`) or fully exposed collective of `t` seconds beside `window` of compute.
double exposed_part(double t, double window, double tail_fraction, bool overlap, double slowdown) {
  return overlap ? exposed_after_overlap(t, window, tail_fraction, slowdown) : t;
}

/// The first and last stage's all-reduce of the shared embedding's gradient (pipelined, tied or
/// with MTP modules).
double tied_embedding_s(const ModelSpec& m, const ClusterProfile& c, const Plan& p) {
  if (!m.embedding_on_last_stage(p.pp)) return 0.0;
  const double emb = double(m.vocab) * m.hidden / p.tp * grad_wire_bytes(p);
  return collective_time_s(c, Collective::allreduce, emb, pp_pair(p, c));
}

struct Zero3Cost {
  double exposed = 0, total = 0;  ///< per micro-batch
};

/// ZeRO-3 module by module (zero3_pass) for one micro-batch on the critical stage: the
/// decoder block's modules, scaled so that the stage's `blocks` blocks carry its forward and
/// backward time and its parameters (embedding and logits spread over them). Each module's gather
/// and each bucket's reduce-scatter is a collective of its own: its share by parameters of the
/// wire time of one whole-stage gather (`gather_wire_s`) or reduce-scatter, plus a latency.
/// The wire time and latency of one whole-stage parameter gather (ZeRO-3 gathers it module by
/// module, each module its share).
struct Gather {
  double wire_s = 0, latency_s = 0;
};

Zero3Cost zero3_cost(const ModelSpec& m, const ClusterProfile& c, const Plan& p, Recompute r,
                     const LayerCompute& lc, int blocks, double fwd_window, double bwd_window,
                     const Gather gathers[2], double scatter_wire_s, double scatter_latency_s,
                     std::vector<double>* scratch) {
  Zero3Cost z;
  blocks = std::max(1, blocks);
  const LayerShape shape = m.decoder_shape();
  std::vector<Zero3Step> passes[2] = {zero3_block_steps(shape, lc, p.tp, r, false),
                                      zero3_block_steps(shape, lc, p.tp, r, true)};
  double block_params = 0;
  for (const Zero3Step& s : passes[0]) block_params += s.params;
  if (block_params <= 0) return z;
  const double per_param_rs = scatter_wire_s / blocks / block_params;
  double t = 0;
  const double windows[2] = {fwd_window, bwd_window};
  for (int i = 0; i < 2; ++i) {
    std::vector<Zero3Step>& steps = passes[i];
    const double window = windows[i];
    double compute = 0;
    for (const Zero3Step& s : steps) compute += s.compute_s;
    const double scale = compute > 0 ? window / blocks / compute : 0.0;
    const double per_param_ag = gathers[i].wire_s / blocks / block_params;
    for (Zero3Step& s : steps) {
      s.compute_s *= scale;
      if (s.params > 0) s.gather_s = s.params * per_param_ag + gathers[i].latency_s;
      s.scatter_s = s.grad_params * per_param_rs;
      z.total += blocks * (s.gather_s + s.scatter_s);
    }
    Zero3Buckets b;
    b.scatter_latency_s = scatter_latency_s;
    const Zero3Pass pass = zero3_pass(steps, blocks, b, c.gpu.overlap_compute_slowdown, scratch);
    t += pass.time_s;
    z.total += pass.scatters * scatter_latency_s;
  }
  z.exposed = std::max(0.0, t - fwd_window - bwd_window);
  return z;
}

}  // namespace

DpCost dp_cost(const ModelSpec& m, const ClusterProfile& c, const Plan& p, double params_rank,
               double fwd_window, double bwd_window, const LayerCompute& lc, int stage_blocks,
               std::vector<double>* scratch, double warmup_fraction) {
  DpCost d;
  const GroupLayout dpg = dp_group(p, c);
  const int buckets = dp_buckets(p, params_rank);
  const double bucket = 1.0 / buckets;  // the last bucket's share, exposed after the backward
  const double grad_bytes = params_rank * grad_wire_bytes(p);
  const double param_bytes = params_rank * weight_bytes_per_param(p.dtype);
  const SoftwareStack& sw = c.software;
  const Overlaps ov = overlaps_of(p, c);
  const double slow = c.gpu.overlap_compute_slowdown;
  if (p.zero == 0 && p.grad_compression != GradCompression::none) {
    // After the warm-up, the optimizer step's compressed all-reduce of the momentum (NCCL
    // backend, deepspeed/runtime/comm/nccl.py compressed_allreduce): 1-bit signs all-to-all to
    // the chunk owners, then the owners' recompressed chunks all-gathered; not overlapped with
    // the backward (it runs in the step), plus the compression kernels.
    const double bits = params_rank * kCompressedBitsPerParam / 8.0;
    const double t = collective_time_s(c, Collective::alltoall, bits, dpg) +
                     collective_time_s(c, Collective::allgather, bits, dpg);
    d.total = t;
    d.exposed = t + params_rank * kCompressionKernelBytesPerParam / c.gpu.hbm_achieved_Bps() /
                        c.gpu.sustained_efficiency;
    if (warmup_fraction > 0) {  // the warm-up's steps reduce uncompressed, as zero=0 does
      Plan plain = p;
      plain.grad_compression = GradCompression::none;
      const DpCost w =
          dp_cost(m, c, plain, params_rank, fwd_window, bwd_window, lc, stage_blocks, scratch);
      const double emb = tied_embedding_s(m, c, p);  // added once, below
      d.total = warmup_fraction * (w.total - emb) + (1 - warmup_fraction) * d.total;
      d.exposed = warmup_fraction * (w.exposed - emb) + (1 - warmup_fraction) * d.exposed;
      d.reduce_s = warmup_fraction * w.reduce_s;  // beside the backward in the warm-up only
    }
  } else if (deepspeed_pipelined(c, p) && p.zero <= 1) {
    // DeepSpeed's pipeline engine (SoftwareStack::deepspeed_pipeline_engine): ReduceGrads after
    // the last backward, nothing beside it. FP16_Optimizer (zero=0) and BF16_Optimizer all-reduce
    // the whole gradient in MEMORY_OPT_ALLREDUCE_SIZE buckets (buffered_allreduce_fallback);
    // ZeRO-1's DeepSpeedZeroOptimizer (fp16, or an offloaded optimizer) reduces each rank's
    // partition (stage_1_and_2.py reduce_gradients). On the wire the communication dtype, the
    // model's own (engine.py communication_data_type: 16 bits under fp16 and bf16,
    // BF16_Optimizer's fp32 gradients cast down). ZeRO-1 then all-gathers the stepped
    // parameters (BF16_Optimizer's all_gather_dp_groups), after the step.
    const double wire = params_rank * deepspeed_wire_bytes_per_param(p);
    double reduce = 0;
    if (deepspeed_allreduces(c, p)) {
      const int n = deepspeed_reduce_buckets(params_rank);
      reduce = n * collective_time_s(c, Collective::allreduce, wire / n, dpg);
    } else {
      reduce = collective_time_s(c, Collective::reduce_scatter, wire, dpg);
    }
    const double ag =
        p.zero == 1 ? collective_time_s(c, Collective::allgather, param_bytes, dpg) : 0;
    d.total = d.exposed = reduce + ag;  // beside no window: reduce_s and gather_s stay 0
  } else if (p.zero == 0) {
    // One all-reduce per gradient bucket, each on the faster of NCCL's ring and tree at that size.
    const double ar =
        buckets * collective_time_s(c, Collective::allreduce, grad_bytes / buckets, dpg);
    d.total = d.reduce_s = ar;
    d.exposed = exposed_part(ar, bwd_window, bucket, ov.grad_reduce, slow);
  } else if (p.zero <= 2) {
    const double rs = collective_time_s(c, Collective::reduce_scatter, grad_bytes, dpg);
    const double ag = collective_time_s(c, Collective::allgather, param_bytes, dpg);
    d.total = rs + ag;
    d.reduce_s = rs, d.gather_s = ag;
    d.exposed = exposed_part(rs, bwd_window, bucket, ov.grad_reduce, slow) +
                exposed_part(ag, fwd_window, bucket, ov.param_gather, slow);
  } else {  // ZeRO-3: gather parameters for forward, (recompute,) backward; reduce-scatter grads
    GroupLayout z3 = dpg;  // the stack may reach fewer NICs than NCCL's hierarchical rings
    z3.ranks_per_node = std::min(z3.ranks_per_node, sw.zero3_collective_nics);
    const double ag_latency = collective_latency_s(c, Collective::allgather, z3);
    const double rs_latency = collective_latency_s(c, Collective::reduce_scatter, z3);
    // ZeRO++: int8 forward gathers (qwZ), int4 gradient reduce-scatters (qgZ), and the backward's
    // gathers from the secondary partition inside the node (hpZ), at bf16.
    const double fwd_bytes = p.zeropp ? params_rank * kZeroppWeightBytesPerParam : param_bytes;
    const double rs_bytes = p.zeropp ? params_rank * kZeroppGradBytesPerParam : grad_bytes;
    const double ag_wire = collective_time_s(c, Collective::allgather, fwd_bytes, z3) - ag_latency;
    const double rs_wire =
        collective_time_s(c, Collective::reduce_scatter, rs_bytes, z3) - rs_latency;
    Gather gathers[2] = {{ag_wire, ag_latency}, {ag_wire, ag_latency}};
    // Under a pipeline the stage's weights stay gathered from the first micro-batch's forward
    // to the last's backward (zero3_pipelined): the first forward's gathers, no backward ones,
    // and after the last backward one reduce-scatter per block with nothing left to hide it.
    const bool once = zero3_pipelined(p);
    if (once) gathers[1] = {0.0, 0.0};
    // hpZ: the recompute's and backward's gathers among the node's ranks (where the group leaves
    // the node; inside it they are the forward's).
    if (const int hpz = p.zeropp ? hpz_partition(c, p) : 1; hpz > 1) {
      const GroupLayout node{hpz, hpz, 1};
      const double lat = collective_latency_s(c, Collective::allgather, node);
      gathers[1] = {collective_time_s(c, Collective::allgather, param_bytes, node) - lat, lat};
    }
    // Gathered module by module, prefetched a bucket ahead (DeepSpeed's
    // stage3_prefetch_bucket_size), one collective per module: modules whose compute is shorter
    // than the next one's gather (the attention core, the projection) leave the compute waiting.
    auto cost = [&](Recompute r) {
      return zero3_cost(m, c, p, r, lc, stage_blocks, fwd_window, bwd_window, gathers,
                        once ? 0.0 : rs_wire, once ? 0.0 : rs_latency, scratch);
    };
    Zero3Cost z = cost(p.recompute);
    if (p.recompute_layers > 0) {
      // A block recomputation gathers again only for its recomputed layers, the first
      // recompute_layers of each of the stage's vpp chunks: the stage's passes weighted by their
      // share of its blocks (an approximation: the layers' order within the pass is not kept).
      const double share = p.recomputed_share(std::max(1, stage_blocks));
      const Zero3Cost kept = cost(Recompute::none);
      z.total = share * z.total + (1 - share) * kept.total;
      z.exposed = share * z.exposed + (1 - share) * kept.exposed;
    }
    const double final_scatter = once ? rs_wire + std::max(1, stage_blocks) * rs_latency : 0.0;
    const int passes = once ? 1 : p.microbatches();
    d.total = z.total * passes + final_scatter;
    d.exposed = z.exposed * passes + final_scatter;
    if (p.zeropp)  // the quantization kernels, on the critical path beside the compute
      d.exposed += p.microbatches() * params_rank * kZeroppKernelBytesPerParam /
                   c.gpu.hbm_achieved_Bps() / c.gpu.sustained_efficiency;
  }
  const double t = tied_embedding_s(m, c, p);
  d.total += t;
  d.exposed += t;
  return d;
}

int deepspeed_reduce_buckets(double params_rank) {
  return std::max(1, static_cast<int>(std::ceil(params_rank / kDeepSpeedReduceBucketParams)));
}

int expert_dp_buckets(const Plan& p, double expert_params_rank) {
  return std::max(
      1, static_cast<int>(std::ceil(expert_params_rank / ddp_bucket_params(p.expert_replicas()))));
}

DpCost expert_dp_cost(const ClusterProfile& c, const Plan& p, double expert_params_rank,
                      double fwd_window, double bwd_window, const DpCost& dense) {
  DpCost d;
  if (p.expert_replicas() <= 1 || expert_params_rank <= 0) return d;
  const GroupLayout g = expert_dp_group(p, c);
  const Overlaps ov = overlaps_of(p, c);
  const double slow = c.gpu.overlap_compute_slowdown;
  const double grad_bytes = expert_params_rank * grad_wire_bytes(p);
  const int buckets = expert_dp_buckets(p, expert_params_rank);
  const double bucket = 1.0 / buckets;
  // What the dense collectives leave of each window: its reduction of the backward's, its gather
  // of the forward's (one window shared on the same stream; the tied embedding's all-reduce and a
  // compressed step's collectives run after the backward, in neither).
  const double bwd = std::max(0.0, bwd_window - dense.reduce_s),
               fwd = std::max(0.0, fwd_window - dense.gather_s);
  if (p.zero == 0) {
    const double ar =
        buckets * collective_time_s(c, Collective::allreduce, grad_bytes / buckets, g);
    d.total = ar;
    d.exposed = exposed_part(ar, bwd, bucket, ov.grad_reduce, slow);
  } else {
    const double rs = collective_time_s(c, Collective::reduce_scatter, grad_bytes, g);
    const double ag = collective_time_s(c, Collective::allgather,
                                        expert_params_rank * weight_bytes_per_param(p.dtype), g);
    d.total = rs + ag;
    d.exposed = exposed_part(rs, bwd, bucket, ov.grad_reduce, slow) +
                exposed_part(ag, fwd, bucket, ov.param_gather, slow);
  }
  return d;
}

DpCost int8_allreduce_cost(const ModelSpec& m, const ClusterProfile& c, const Plan& p,
                           double params_rank, double bwd_window) {
  const int buckets = dp_buckets(p, params_rank);
  const double bytes = params_rank * kInt8GradBytesPerParam / buckets;
  DpCost d;
  d.total = d.reduce_s =
      buckets * collective_time_s(c, Collective::allreduce, bytes, dp_group(p, c));
  d.exposed = exposed_part(d.total, bwd_window, 1.0 / buckets, overlaps_of(p, c).grad_reduce,
                           c.gpu.overlap_compute_slowdown) +
              params_rank * kInt8KernelBytesPerParam / c.gpu.hbm_achieved_Bps() /
                  c.gpu.sustained_efficiency;
  const double t = tied_embedding_s(m, c, p);
  d.total += t;
  d.exposed += t;
  return d;
}

int hpz_partition(const ClusterProfile& c, const Plan& p) {
  const GroupLayout g = dp_group(p, c);
  return g.nodes > 1 ? g.ranks_per_node : 1;
}

int dp_buckets(const Plan& p, double params_rank) {
  return std::max(
      1, static_cast<int>(std::ceil(params_rank / ddp_bucket_params(p.weight_replicas()))));
}

double dp_bucket_bytes(const Plan& p, double params_rank) {
  return params_rank * grad_wire_bytes(p) / dp_buckets(p, params_rank);
}

AllreduceAlgorithm dp_allreduce_algorithm(const ClusterProfile& c, const Plan& p,
                                          double params_rank) {
  return allreduce_algorithm(c, dp_bucket_bytes(p, params_rank), dp_group(p, c));
}

}  // namespace planner
