#pragma once
/// planner-validate's view of the work: the workload JSON that `planner validate` writes
/// (schema planner-validate-workload/3, src/validate.cc workload_json), what the runner executes
/// for each of its kernels, and the results JSON it writes back. Plain C++ (no CUDA): parsed,
/// described (--dry-run) and tested on the CPU.
#include <string>
#include <vector>

#include "planner/cluster.h"
#include "planner/cost/compute.h"

namespace planner::calibrate {

/// The decoder layer the kernels come from ("layer" in the workload).
struct WorkLayer {
  int hidden = 0, heads = 0, kv_heads = 0, ffn = 0, seq = 0, tp = 1, cp = 1, mbs = 1;
  bool swiglu = false, sp = false;
  int kv_channels = 0;  ///< "head_dim" (absent in older workloads: hidden / heads)
  int head_dim() const { return kv_channels > 0 ? kv_channels : hidden / heads; }
  long tokens() const { return long(mbs) * seq / cp; }  ///< per micro-batch on this rank
  /// Rows of the norms and residual adds: outside the TP region, split by tp only with sp.
  long norm_rows() const { return sp ? tokens() / tp : tokens(); }
  /// A mixture-of-experts layer's routing ("layer.moe"; experts 0 for a dense layer): the router
  /// runs on `router_tokens` rows of `experts` logits and picks `topk`; the dispatch permutes
  /// `copies` token copies (a multiple of topk: the experts' rows on this rank, routing imbalance
  /// and the etp gather included), whose activation is `expert_width` wide (one etp shard).
  int experts = 0, topk = 0, expert_width = 0;
  long router_tokens = 0, copies = 0;
};

struct WorkKernel {
  std::string name;  ///< qkv, proj, fc1, fc2, scores, ..., flash_attention, norm_residual, ...
  KernelClass cls = KernelClass::gemm;
  Pass pass = Pass::forward;
  bool recompute = false;
  double m = 0, n = 0, k = 0, batch = 1;  ///< the planner's GemmShape (row-major C = A B)
  double bytes = 0, flops = 0, predicted_s = 0;
};

struct WorkCollective {
  std::string name;
  Collective coll = Collective::allreduce;
  double bytes = 0;  ///< nccl-tests size S
  int ranks = 1;
  Pass pass = Pass::forward;
  int count =
      1;  ///< TP: per layer; DP: per iteration, or per micro-batch; boundary: per micro-batch
  bool per_microbatch = false;  ///< DP (ZeRO-3) and stage boundary: count is per micro-batch
  bool overlapped = false;      ///< the estimate hides it, in part, behind compute
  int beside = -1;              ///< TP overlap: the workload kernel (a GEMM) it runs beside
  double predicted_s = 0;       ///< each, alone
  double exposed_s = 0;         ///< TP: each, what the estimate charges after the overlap
};

struct RunnerWorkload {
  std::string model, plan;
  Dtype dtype = Dtype::bf16;
  bool flash = true;
  WorkLayer layer;
  int microbatches = 1;
  int stage = 0;  ///< the pipeline stage the workload stands for
  std::vector<WorkKernel> kernels;
  std::vector<WorkCollective> collectives;  ///< TP, per layer
  std::vector<WorkCollective> boundary;     ///< at the stage's chunk boundaries, per micro-batch
  std::vector<WorkCollective> dp;           ///< DP collectives of an iteration
};

/// Throws InputError naming `origin` and the key ("kernels[3].pass") for anything malformed.
RunnerWorkload parse_runner_workload(const std::string& json_text, const std::string& origin);
RunnerWorkload load_runner_workload(const std::string& path);

enum class RunKind {
  gemm,                ///< cuBLASLt, plain or strided-batched
  flash_forward,       ///< the fused attention kernel
  flash_backward,      ///< its backward (preprocess, fused kernel, dQ conversion)
  softmax_forward,     ///< scale-mask-softmax, then dropout (two kernels)
  softmax_backward,    ///< dropout backward, then softmax backward
  norm_forward,        ///< norm, bias-dropout-add, norm, bias-dropout-add
  norm_backward,       ///< the same backwards, with the norms' parameter gradients
  activation_forward,  ///< bias-GeLU or SwiGLU
  activation_backward,
  moe_forward,   ///< router softmax and top-k, permutation, experts' activation, weighted combine
  moe_backward,  ///< the same backwards
  /// the all-to-all dispatcher's sort of the received rows by local expert, with their 16-bit
  /// routing probabilities, and the unsort before the combine: two row permutations and one of
  /// the probabilities
  moe_sort_forward,
  moe_sort_backward,  ///< their gradients: the same rows and probabilities moved
};

/// What the runner executes for one workload kernel. Sizes in elements.
struct KernelRun {
  RunKind kind = RunKind::gemm;
  /// gemm: the cuBLASLt precision; otherwise the 16-bit activation type (bf16, or fp16 for fp16).
  Dtype dtype = Dtype::bf16;
  char transa = 'T', transb = 'N';  ///< gemm: cuBLAS op(A), op(B), column-major
  long m = 0, n = 0, k = 0, batch = 1;
  long bh = 0, sq = 0, sk = 0, d = 0, kv_group = 1;  ///< attention: heads x micro-batch, ...
  bool causal = true;
  long rows = 0, width = 0;  ///< norms: tokens x hidden; activation: tokens x ffn shard
  bool rms = false, swiglu = false;
  /// moe: rows = the router's tokens, width = hidden; `copies` token copies of `topk` per row,
  /// their activation `expert_width` wide. moe_sort: rows = the received copies, width = hidden.
  long experts = 0, topk = 0, copies = 0, expert_width = 0;
  std::string note;  ///< a mismatch worth reporting (the entry's bytes against this run's)
};

/// Throws InputError for an entry it does not know how to run.
KernelRun kernel_run(const RunnerWorkload& w, size_t index);
/// "cuBLASLt bf16 TN 2304 x 32768 x 6144" or "flash attention forward bf16 bh=96 ..."; equal
/// descriptions are the same work (the runner times each once).
std::string describe(const KernelRun& r);
/// HBM bytes the runner's kernels move (GEMMs: operands read once, result written).
double run_bytes(const KernelRun& r);
/// The dtype the hand-written kernels use for a workload dtype: fp16 for fp16, else bf16
/// (Transformer Engine keeps attention and element-wise work in bf16 under fp8; the cost
/// model's element-wise bytes assume 2-byte activations, also under tf32).
Dtype activation_dtype(Dtype workload);

/// The whole output of --dry-run: the workload, one line per kernel, the collectives (whether
/// `local_gpus` suffice for them; < 0: not known).
std::vector<std::string> dry_run_lines(const RunnerWorkload& w, int local_gpus);

struct RunnerResults {
  std::string device;
  std::vector<double> kernels_s;
  std::vector<double> collectives_s;  ///< each alone; empty: not measured (null)
  /// Each beside its GEMM when overlapped (what it added to the GEMM), else as collectives_s;
  /// empty: not measured (absent).
  std::vector<double> collectives_exposed_s;
  std::vector<double> boundary_s;                      ///< one per boundary collective; empty: null
  std::vector<double> dp_s;                            ///< one per DP collective; empty: null
  std::vector<std::pair<std::string, double>> checks;  ///< kernel, relative error
};
/// {"device", "kernels_s", "collectives_s" (or null), "collectives_exposed_s" (when measured),
/// "boundary_s" (or null), "dp_s" (or null), "checks"}: what planner::parse_measured reads.
std::string results_json(const RunnerResults& r);

}  // namespace planner::calibrate
