#pragma once
/// One block (a transformer layer, a ViT layer, a projector MLP) as an ordered list of modules:
/// what each multiplies, holds and keeps for the backward. The parameter count, the GEMMs of the
/// compute model (and so the validate workload), the activation memory under each recompute
/// mode, the TP collectives per pass and ZeRO-3's module-by-module gathers all read it.
///
/// The next blocks are new module kinds, not new code paths: a mixture-of-experts layer adds a
/// router (a linear), routed experts (a linear with `experts` > 1 run as a grouped GEMM at the
/// per-expert token count) and the dispatch and combine all-to-all (a collective kind); multi-head
/// latent attention replaces qkv by down- and up-projections (linears) with the compressed KV as
/// the attention core's stored bytes. Sliding-window attention is the attention core's
/// `attended_pairs` (below); biases are each linear's `bias`; extra norms (Gemma 2's sandwich
/// norms, Qwen3's per-head query and key norms) are norm modules.
#include <array>
#include <vector>

#include "planner/cluster.h"
#include "planner/model.h"
#include "planner/plan.h"

namespace planner {

/// The linear layers of a block (an MLP-only block has fc1 and fc2).
/// A mixture-of-experts block's MLP adds the router and the routed experts' two grouped GEMMs;
/// its shared experts are its fc1 and fc2.
/// Latent attention replaces qkv by the query and key-value down- and up-projections.
enum LinearIndex {
  kQkv,
  kProj,
  kFc1,
  kFc2,
  kRouter,
  kExpertFc1,
  kExpertFc2,
  kQDown,
  kQUp,
  kKvDown,
  kKvUp,
  kNumLinears
};
/// The kernel names of the linears, by LinearIndex.
inline constexpr const char* kLinearNames[kNumLinears] = {
    "qkv",        "proj",   "fc1",  "fc2",     "router", "expert_fc1",
    "expert_fc2", "q_down", "q_up", "kv_down", "kv_up"};

/// `dispatch`: a mixture-of-experts block's token dispatcher (the permutation and all-to-all that
/// send each token to its experts' ranks, and the combine that brings them back).
enum class ModuleKind { norm, linear, attention_core, activation, dispatch };

struct Module {
  const char* name = "";
  ModuleKind kind = ModuleKind::norm;
  int linear = -1;         ///< LinearIndex of a linear module
  double in = 0, out = 0;  ///< a linear's weight, in x out, on one TP rank; a norm's elements
                           ///< per token on one rank (in); a dispatcher's hidden width (in) and
                           ///< copies per token (out, the router's topk)
  double params = 0;       ///< weights and biases before TP sharding (norms: scale and bias)
  /// Activation bytes it keeps for the backward, per micro-batch on one rank, indexed by Recompute
  /// (Korthikanti et al. 2022, Table 2, term by term).
  std::array<double, 4> stored{};
  /// Megatron's TP split: a column-parallel linear (its output sharded: qkv, fc1) takes the
  /// all-gather of its input with sequence parallelism, and its input gradient's reduce-scatter
  /// overlaps its weight gradient; a row-parallel one (proj, fc2) is followed by one TP
  /// collective per pass (the all-reduce, or the reduce-scatter whose backward all-gather
  /// overlaps its data gradient). TP-communication overlap pipelines each with that GEMM.
  bool column_parallel = false;
  int tp_collectives = 0;  ///< TP collectives after it in each pass (the row-parallel linears)
  bool gathered = false;   ///< its weights are gathered before it runs under ZeRO-3
  /// A linear's bias elements added per token on one rank (within `params` before sharding): a
  /// column-parallel bias is sharded with the output, a row-parallel one is added after the TP
  /// collective, on the tokens outside the TP region.
  double bias = 0;
  /// Where its weights live: sharded over TP (the default), replicated on every TP rank (the
  /// router), or a routed expert's, sharded over ep x etp instead.
  enum class Shard { tp, replicated, experts } shard = Shard::tp;
  /// A routed experts' linear runs as a grouped GEMM: `groups` GEMMs (the experts on this rank)
  /// of `tokens` rows each (the tokens routed to one expert). 0 tokens: the block's.
  double groups = 1, tokens = 0;
  /// Its norm runs inside it: Transformer Engine's LayerNormLinear in Megatron-Core's TE layer
  /// spec (gpt_layer_specs.py at d98e8a64): QKV, a dense MLP's fc1, and latent attention's
  /// up-projections after their own norms (LayerNormLinear under --qk-layernorm, which the
  /// latent-attention models here train with: the block model always has q_norm and kv_norm). Not a
  /// shared expert's fc1 (the MoE layer keeps its pre-MLP norm apart) nor latent attention's query
  /// projection without q_lora_rank (linear_q_proj is a plain column-parallel linear after a
  /// separate input norm).
  bool norm_fused = false;
  /// One of the layer's own norms (its input and pre-MLP norm), which Megatron-Core's layernorm
  /// recompute reaches when not held by the next linear; not q/k norms, not sandwich norms.
  bool layer_norm = false;

  /// With sequence parallelism, a TP-sharded linear all-gathers its input over TP in the forward
  /// (a column-parallel one) and its output gradient in the backward (a row-parallel one); a
  /// replicated or expert linear gathers neither.
  bool sp_gathers_input() const {
    return kind == ModuleKind::linear && shard == Shard::tp && column_parallel;
  }
  bool sp_gathers_output_grad() const {
    return kind == ModuleKind::linear && shard == Shard::tp && tp_collectives > 0;
  }
};

/// The layer configuration the modules depend on.
struct BlockConfig {
  int tp = 1, cp = 1, mbs = 1;
  bool sp = false;
  AttentionKernel attention = AttentionKernel::flash;
  /// Bytes of a stored activation element (activation_element_bytes: 2, or 4 under tf32); the
  /// 1-byte dropout masks and the fp32 softmax statistics keep their size.
  double element_bytes = 2;
  /// Bytes of a linear layer's stored input element (linear_input_bytes: 1 under fp8).
  double linear_input_bytes = 2;
  int ep = 1, etp = 1;  ///< expert parallelism (a block with experts)
  double capacity = 0;  ///< the experts' capacity factor (Plan::capacity_factor; 0: dropless)
  bool pad = false;     ///< every expert padded to its capacity (Plan::pad_to_capacity)
  /// The linears are Transformer Engine's: a norm_fused linear's LayerNormLinear holds its norm
  /// and keeps the norm's output, which selective_moe's layernorm checkpoint does not reach.
  bool norm_in_linear = false;
};

/// Modules a block may have (fixed storage: the search builds a block model per plan).
inline constexpr int kMaxModules = 20;

struct BlockModel {
  std::array<Module, kMaxModules> storage{};
  int count = 0;
  double tokens = 0;                                      ///< tokens per micro-batch on one rank
  const Module* begin() const { return storage.data(); }  ///< the modules, forward order
  const Module* end() const { return storage.data() + count; }
  void add(const Module& m) { storage.at(count++) = m; }
  double params() const;  ///< before TP sharding
  /// Weights on one rank: the TP-sharded ones over tp, the routed experts' over ep x etp.
  double rank_params(int tp, int ep, int etp) const;
  double expert_rank_params(int ep, int etp) const;  ///< the routed experts' part of it
  double stored_bytes(Recompute r) const;
  int tp_collectives() const;
  const Module* linear(int index) const;  ///< nullptr when the block has none such
};

BlockModel block_model(const LayerShape& l, const BlockConfig& cfg = {});

/// Query-key pairs of one causal attention head over `s` tokens when query i (counting from 0)
/// attends to min(i + 1, w) keys, a sliding window of w (Mistral 7B, Jiang et al. 2023, section
/// 2): sum over i of min(i + 1, w) = w s - w (w - 1) / 2 for w <= s; w >= s is plain causal
/// attention, s (s + 1) / 2.
double causal_window_pairs(double s, double w);

/// The attention core's query-key pairs per head for one sequence of `l`, averaged over its local
/// and global layers (LayerArch::local_layers of them see `sliding_window` keys): a causal kernel
/// that skips masked tiles computes these; one that does not computes seq^2.
double causal_attended_pairs(const LayerShape& l);

}  // namespace planner
