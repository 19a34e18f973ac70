// build_stages: the blocks' costs cut into chunks (virtual stages) and summed per physical stage.
// Half of an estimate's time is here (bench/RESULTS.md), so the common case, a model of one block
// shape, runs in separate tight passes.
#include <algorithm>

#include "planner/cost/stages.h"

namespace planner {

Stages build_stages(const BlockLayout& layout, const PlanCosts& pc, const Plan& p,
                    const Partition& part) {
  Stages st;
  build_stages(layout, pc, p, part, st);
  return st;
}

namespace {

/// The virtual stages holding the first decoder block (with the embedding) and the last block
/// (with the logits); -1 where none does.
struct EndChunks {
  int embed = -1, logits = -1;
};

EndChunks end_chunks(const BlockLayout& layout, const Partition& part) {
  EndChunks e;
  const int last = layout.count() - 1, V = static_cast<int>(part.size());
  // Chunks hold disjoint ranges of blocks in order: each scan stops at the chunk it finds, the
  // second from the end.
  for (int vs = 0, b0 = 0; vs < V && e.embed < 0; b0 += part[vs], ++vs)
    if (b0 <= layout.first_decoder && layout.first_decoder < b0 + part[vs]) e.embed = vs;
  int b1 = 0;
  for (int n : part) b1 += n;
  for (int vs = V - 1; vs >= 0 && e.logits < 0 && b1 > last; b1 -= part[vs], --vs)
    if (b1 - part[vs] <= last) e.logits = vs;
  return e;
}

/// Chunk costs of a model of one block shape: n blocks and the boundary all-gathers. The block's
/// figures are copied into locals: read through the reference, every store would make the
/// compiler load them again.
void uniform_chunks(const BlockCost& one, double gather, const Partition& part, Stages& st) {
  const int V = static_cast<int>(part.size());
  const double fwd = one.fwd_s, bwd = one.bwd_s, weight = one.bwd_weight_s;
  const double comp = one.compute_s, tpc = one.tp_comm_s, cpc = one.cp_comm_s, epc = one.ep_comm_s,
               alone = one.unpaired_s, hostc = one.host_s;
  ChunkCost* chunks = st.chunks.data();
  double *compute = st.chunk_compute_s.data(), *tp = st.chunk_tp_s.data(),
         *cp = st.chunk_cp_s.data(), *ep = st.chunk_ep_s.data(), *host = st.chunk_host_s.data();
  const int* sizes = part.data();
  auto set = [&](int vs, double fwd_gather, double bwd_gather) {
    const double n = sizes[vs];
    chunks[vs] = {n * fwd + fwd_gather, n * bwd + bwd_gather, n * weight, n * alone};
    compute[vs] = n * comp;
    tp[vs] = n * tpc + (fwd_gather + bwd_gather);
    cp[vs] = n * cpc;
    ep[vs] = n * epc;
    host[vs] = n * hostc;
  };
  // The receiver's all-gather of what crossed a boundary: the input (forward) of every chunk but
  // the first, the output gradient (backward) of every chunk but the last.
  for (int vs = 1; vs < V - 1; ++vs) set(vs, gather, gather);
  set(0, 0.0, V > 1 ? gather : 0.0);
  if (V > 1) set(V - 1, gather, 0.0);
}

/// Stage loads of a model of one block shape. Row j holds the j-th chunk of every stage, so each
/// stage adds its chunks in order, the embedding and the logits just after their own chunk.
void uniform_loads(const BlockCost& one, const PlanCosts& pc, const Partition& part, int pp,
                   EndChunks ends, Stages& st) {
  const int V = static_cast<int>(part.size());
  const double params = one.params, experts = one.expert_params, act = one.act_bytes,
               full = one.full_act_bytes, gathered = 2.0 * one.largest_matrix,
               cache = one.weight_cache;
  const int* sizes = part.data();
  StageLoad* load = st.load.data();
  int* blocks = st.blocks_per_stage.data();
  for (int row = 0; row < V; row += pp) {
    const int end = std::min(V, row + pp);
    for (int vs = row; vs < end; ++vs) {
      StageLoad& ld = load[vs - row];
      const double n = sizes[vs];
      ld.params += n * params;
      ld.expert_params += n * experts;
      ld.weight_cache += n * cache;
      ld.act_per_mb += n * act;
      if (n > 0) {
        ld.once_bytes = std::max(ld.once_bytes, full);
        ld.zero3_gather = std::max(ld.zero3_gather, gathered);
      }
      blocks[vs - row] += sizes[vs];
    }
    if (row <= ends.embed && ends.embed < end) {
      StageLoad& ld = load[ends.embed - row];
      ld.params += pc.embed_params, ld.act_per_mb += pc.embed_act_bytes;
    }
    if (row <= ends.logits && ends.logits < end) {
      StageLoad& ld = load[ends.logits - row];
      ld.params += pc.output_params, ld.once_bytes += pc.logits_bytes;
      ld.expert_params += pc.mtp_expert_params, ld.act_per_mb += pc.mtp_act_bytes;
      ld.weight_cache += pc.mtp_weight_cache;
    }
  }
}

/// A model of one block shape (a decoder-only model, the common case) in separate tight passes:
/// the chunk costs, the embedding's and the logits' on their chunks, the stage loads. The same
/// sums in the same order as mixed_stages, so the same figures to the bit.
void uniform_stages(const BlockLayout& layout, const PlanCosts& pc, const Partition& part, int pp,
                    Stages& st) {
  if (part.empty()) return;
  const EndChunks ends = end_chunks(layout, part);
  uniform_chunks(pc.shape.front(), pc.p2p_gather_s, part, st);
  if (ends.embed >= 0) {
    ChunkCost& cc = st.chunks[ends.embed];
    cc.fwd_s += pc.embed_fwd_s, cc.bwd_s += pc.embed_bwd_s;
    st.chunk_compute_s[ends.embed] += pc.embed_s;
  }
  if (ends.logits >= 0) {
    ChunkCost& cc = st.chunks[ends.logits];
    cc.fwd_s += pc.logits_fwd_s, cc.bwd_s += pc.logits_bwd_s;
    cc.bwd_weight_s += pc.logits_bwd_weight_s;
    st.chunk_compute_s[ends.logits] += pc.logits_s;
    st.chunk_tp_s[ends.logits] += pc.mtp_tp_s;
    st.chunk_cp_s[ends.logits] += pc.mtp_cp_s;
    st.chunk_ep_s[ends.logits] += pc.mtp_ep_s;
    st.chunk_host_s[ends.logits] += pc.mtp_host_s;
    cc.unpaired_s += pc.mtp_unpaired_s;
  }
  uniform_loads(pc.shape.front(), pc, part, pp, ends, st);
}

/// Blocks of several shapes (an encoder before the decoder), or a block recomputation
/// (recompute_layers): chunk by chunk, each shape's count from the layout's prefix sums; the
/// first recompute_layers blocks of a chunk at the plan's (recomputed) cost, the rest at
/// PlanCosts::kept.
void mixed_stages(const BlockLayout& layout, const PlanCosts& pc, const Partition& part, int pp,
                  int recompute_layers, Stages& st) {
  const int V = static_cast<int>(part.size()), last = layout.count() - 1;
  int b0 = 0;
  for (int vs = 0, s = 0; vs < V; ++vs, s = s + 1 == pp ? 0 : s + 1) {  // s = vs % pp
    const int b1 = b0 + part[vs];
    const int split = recompute_layers > 0 ? std::min(b1, b0 + recompute_layers) : b1;
    ChunkCost cc;
    double compute = 0, tp = 0, cp = 0, ep = 0, host = 0;
    StageLoad& ld = st.load[s];
    auto add = [&](const BlockCost& bc, int n) {
      if (n == 0) return;
      cc.fwd_s += n * bc.fwd_s, cc.bwd_s += n * bc.bwd_s, cc.bwd_weight_s += n * bc.bwd_weight_s;
      cc.unpaired_s += n * bc.unpaired_s;
      compute += n * bc.compute_s, tp += n * bc.tp_comm_s, cp += n * bc.cp_comm_s;
      ep += n * bc.ep_comm_s, host += n * bc.host_s;
      ld.params += n * bc.params;
      ld.expert_params += n * bc.expert_params;
      ld.weight_cache += n * bc.weight_cache;
      ld.act_per_mb += n * bc.act_bytes;
      ld.once_bytes = std::max(ld.once_bytes, bc.full_act_bytes);
      ld.zero3_gather = std::max(ld.zero3_gather, 2.0 * bc.largest_matrix);
    };
    for (size_t k = 0; k < pc.shape.size(); ++k) {
      add(pc.shape[k], layout.prefix[k][split] - layout.prefix[k][b0]);
      if (split < b1) add(pc.kept[k], layout.prefix[k][b1] - layout.prefix[k][split]);
    }
    // The receiver's all-gather, as in uniform_chunks.
    const double fwd_gather = vs > 0 ? pc.p2p_gather_s : 0.0,
                 bwd_gather = vs < V - 1 ? pc.p2p_gather_s : 0.0;
    cc.fwd_s += fwd_gather, cc.bwd_s += bwd_gather;
    tp += fwd_gather + bwd_gather;
    if (b0 <= layout.first_decoder && layout.first_decoder < b1) {
      cc.fwd_s += pc.embed_fwd_s, cc.bwd_s += pc.embed_bwd_s;
      compute += pc.embed_s;
      ld.params += pc.embed_params;
      ld.act_per_mb += pc.embed_act_bytes;
    }
    if (b0 <= last && last < b1) {
      cc.fwd_s += pc.logits_fwd_s, cc.bwd_s += pc.logits_bwd_s;
      cc.bwd_weight_s += pc.logits_bwd_weight_s;
      compute += pc.logits_s;
      tp += pc.mtp_tp_s, cp += pc.mtp_cp_s, ep += pc.mtp_ep_s, host += pc.mtp_host_s;
      cc.unpaired_s += pc.mtp_unpaired_s;
      ld.params += pc.output_params;
      ld.expert_params += pc.mtp_expert_params, ld.act_per_mb += pc.mtp_act_bytes;
      ld.weight_cache += pc.mtp_weight_cache;
      ld.once_bytes += pc.logits_bytes;
    }
    st.chunks[vs] = cc;
    st.chunk_compute_s[vs] = compute, st.chunk_tp_s[vs] = tp, st.chunk_cp_s[vs] = cp;
    st.chunk_ep_s[vs] = ep, st.chunk_host_s[vs] = host;
    st.blocks_per_stage[s] += part[vs];
    b0 = b1;
  }
}

}  // namespace

void build_stages(const BlockLayout& layout, const PlanCosts& pc, const Plan& p,
                  const Partition& part, Stages& st) {
  const int V = static_cast<int>(part.size());
  st.chunks.resize(V);
  st.chunk_compute_s.resize(V);
  st.chunk_tp_s.resize(V);
  st.chunk_cp_s.resize(V);
  st.chunk_ep_s.resize(V);
  st.chunk_host_s.resize(V);
  st.load.assign(p.pp, StageLoad{});
  st.blocks_per_stage.assign(p.pp, 0);
  if (pc.shape.size() == 1 && p.recompute_layers == 0)
    uniform_stages(layout, pc, part, p.pp, st);
  else
    mixed_stages(layout, pc, part, p.pp, p.recompute_layers, st);
}

}  // namespace planner
