#include "calibrate/validate_workload.h"

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>
#include <set>

#include "calibrate/validate_common.h"
#include "planner/error.h"
#include "planner/format.h"
#include "planner/io/file.h"
#include "planner/io/json.h"

namespace planner::calibrate {
namespace {

using nlohmann::json;

/// The most bytes a workload's kernel or collective may name: 1e15 (0.9 PiB), far past any GPU's
/// memory, and within what the dry run prints as an integer.
constexpr double kMaxBytes = 1e15;

/// Reads one key of a workload object; every problem names the origin and the key path.
class Reader {
 public:
  explicit Reader(std::string origin) : origin_(std::move(origin)) {}
  [[noreturn]] void fail(const std::string& key, const std::string& what) const {
    throw InputError(origin_, 0, key, what);
  }
  const json& at(const json& j, const std::string& key, const std::string& path) const {
    if (!j.is_object() || !j.contains(key)) fail(path + key, "missing");
    return j[key];
  }
  double number(const json& j, const std::string& key, const std::string& path) const {
    const json& v = at(j, key, path);
    if (!v.is_number()) fail(path + key, "expected a number");
    return v.get<double>();
  }
  /// A size of a kernel: a whole number from 0 (unused) to 1e9, as the runner allocates it.
  double extent(const json& j, const std::string& key, const std::string& path) const {
    const double v = number(j, key, path);
    if (!(v >= 0 && v <= 1e9 && v == std::floor(v)))
      fail(path + key, "expected a whole number from 0 to 1e9");
    return v;
  }
  /// Bytes, FLOPs or seconds: finite and not negative.
  double amount(const json& j, const std::string& key, const std::string& path) const {
    const double v = number(j, key, path);
    if (!(v >= 0 && std::isfinite(v))) fail(path + key, "expected a finite number, not negative");
    return v;
  }
  /// A kernel's or a collective's bytes: an amount no GPU's buffers come near past kMaxBytes.
  double bytes(const json& j, const std::string& key, const std::string& path) const {
    const double v = amount(j, key, path);
    if (v > kMaxBytes) fail(path + key, fmt("expected at most {:.0e} bytes", kMaxBytes));
    return v;
  }
  int positive_int(const json& j, const std::string& key, const std::string& path) const {
    const double v = number(j, key, path);
    if (v < 1 || v != std::floor(v) || v > 1e9) fail(path + key, "expected a positive integer");
    return int(v);
  }
  bool boolean(const json& j, const std::string& key, const std::string& path) const {
    const json& v = at(j, key, path);
    if (!v.is_boolean()) fail(path + key, "expected true or false");
    return v.get<bool>();
  }
  std::string text(const json& j, const std::string& key, const std::string& path) const {
    const json& v = at(j, key, path);
    if (!v.is_string()) fail(path + key, "expected a string");
    return v.get<std::string>();
  }
  /// One of `choices` (their index), with the nearest one suggested otherwise.
  int choice(const json& j, const std::string& key, const std::string& path,
             const std::vector<std::string>& choices) const {
    const std::string v = text(j, key, path);
    for (size_t i = 0; i < choices.size(); ++i)
      if (v == choices[i]) return int(i);
    const std::string near = nearest_word(v, choices);
    fail(path + key,
         "unknown value '" + v + "'" + (near.empty() ? "" : ", did you mean '" + near + "'?"));
  }

 private:
  std::string origin_;
};

const std::vector<std::string> kClasses = {"gemm", "attention", "elementwise"};
const std::vector<std::string> kPasses = {"forward", "backward_data", "backward_weight"};
const std::vector<std::string> kCollectives = {"allreduce", "allgather", "reduce_scatter",
                                               "alltoall", "sendrecv"};
// enum Dtype order, less mxfp8 (the last), which validate refuses: the runner has no block-scaled
// GEMM.
const std::vector<std::string> kDtypes = {"fp16", "bf16", "fp8", "tf32"};
static_assert(kNumDtypes == 5 && static_cast<int>(Dtype::mxfp8) == 4,
              "kDtypes follows the enum Dtype order");

WorkLayer parse_layer(const Reader& r, const json& j) {
  WorkLayer l;
  const std::string p = "layer.";
  l.hidden = r.positive_int(j, "hidden", p), l.heads = r.positive_int(j, "heads", p);
  l.kv_heads = r.positive_int(j, "kv_heads", p), l.ffn = int(r.extent(j, "ffn", p));
  l.seq = r.positive_int(j, "seq", p), l.tp = r.positive_int(j, "tp", p);
  l.cp = r.positive_int(j, "cp", p), l.mbs = r.positive_int(j, "mbs", p);
  l.swiglu = r.boolean(j, "swiglu", p), l.sp = r.boolean(j, "sp", p);
  if (j.contains("head_dim")) l.kv_channels = r.positive_int(j, "head_dim", p);
  if (!l.kv_channels && l.hidden % l.heads) r.fail("layer.heads", "does not divide hidden");
  if (l.heads % l.tp || l.kv_heads % l.tp || l.ffn % l.tp)
    r.fail("layer.tp", "does not divide heads, kv_heads and ffn");
  if (l.heads % l.kv_heads) r.fail("layer.kv_heads", "does not divide heads");
  if (l.seq % l.cp) r.fail("layer.cp", "does not divide seq");
  if (l.sp && l.tokens() % l.tp) r.fail("layer.sp", "tp does not divide the tokens");
  if (l.ffn == 0 && !j.contains("moe"))
    r.fail("layer.ffn", "0 without experts (only a mixture-of-experts layer may lack a dense MLP)");
  if (j.contains("moe")) {
    const json& m = j["moe"];
    const std::string q = "layer.moe.";
    l.experts = r.positive_int(m, "experts", q), l.topk = r.positive_int(m, "topk", q);
    l.expert_width = r.positive_int(m, "expert_width", q);
    l.router_tokens = long(r.extent(m, "router_tokens", q));
    l.copies = long(r.extent(m, "copies", q));
    if (l.topk > l.experts) r.fail("layer.moe.topk", "more than the experts");
    if (l.copies < l.topk || l.copies % l.topk)
      r.fail("layer.moe.copies", "expected a positive multiple of topk");
  }
  return l;
}

WorkKernel parse_kernel(const Reader& r, const json& j, const std::string& p) {
  WorkKernel k;
  k.name = r.text(j, "name", p);
  k.cls = KernelClass(r.choice(j, "class", p, kClasses));
  k.pass = Pass(r.choice(j, "pass", p, kPasses));
  k.recompute = r.boolean(j, "recompute", p);
  k.m = r.extent(j, "m", p), k.n = r.extent(j, "n", p), k.k = r.extent(j, "k", p);
  k.batch = r.extent(j, "batch", p), k.bytes = r.bytes(j, "bytes", p);
  k.flops = r.amount(j, "flops", p), k.predicted_s = r.amount(j, "predicted_s", p);
  return k;
}

WorkCollective parse_collective(const Reader& r, const json& j, const std::string& p, bool dp) {
  WorkCollective c;
  c.name = r.text(j, "name", p);
  c.coll = Collective(r.choice(j, "collective", p, kCollectives));
  c.bytes = r.bytes(j, "bytes", p);
  c.ranks = r.positive_int(j, "ranks", p);
  c.pass = Pass(r.choice(j, "pass", p, kPasses));
  c.count = static_cast<int>(r.extent(j, "count", p));
  c.predicted_s = r.amount(j, "predicted_s", p);
  c.overlapped = r.boolean(j, "overlapped", p);
  if (dp) {
    c.per_microbatch = r.choice(j, "per", p, {"iteration", "microbatch"}) == 1;
    c.exposed_s = c.predicted_s;
    return c;
  }
  c.exposed_s = r.amount(j, "exposed_s", p);
  if (!r.at(j, "beside", p).is_null()) c.beside = int(r.extent(j, "beside", p));
  return c;
}

/// A list of collectives under `key`, each parsed as a TP (`dp` false) or DP entry.
std::vector<WorkCollective> parse_collectives(const Reader& r, const json& j, const char* key,
                                              bool dp) {
  const json& list = r.at(j, key, "");
  if (!list.is_array()) r.fail(key, "expected a list");
  std::vector<WorkCollective> out;
  for (size_t i = 0; i < list.size(); ++i)
    out.push_back(
        parse_collective(r, list[i], std::string(key) + "[" + std::to_string(i) + "].", dp));
  return out;
}

}  // namespace

RunnerWorkload parse_runner_workload(const std::string& text, const std::string& origin) {
  const Reader r(origin);
  const json j = io::parse_json(text, origin);
  if (!j.is_object())
    r.fail("", "not a JSON object (is it a workload from planner validate --workload-out?)");
  if (r.text(j, "schema", "") != "planner-validate-workload/3")
    r.fail("schema",
           "expected planner-validate-workload/3, found '" + j["schema"].get<std::string>() + "'");
  RunnerWorkload w;
  w.model = j.contains("model") ? r.text(j, "model", "") : "?";
  w.plan = j.contains("plan") ? r.text(j, "plan", "") : "?";
  w.dtype = Dtype(r.choice(j, "dtype", "", kDtypes));
  w.flash = r.choice(j, "attention", "", {"unfused", "flash"}) == 1;
  w.layer = parse_layer(r, r.at(j, "layer", ""));
  const json& kernels = r.at(j, "kernels", "");
  if (!kernels.is_array() || kernels.empty()) r.fail("kernels", "expected a non-empty list");
  for (size_t i = 0; i < kernels.size(); ++i)
    w.kernels.push_back(parse_kernel(r, kernels[i], "kernels[" + std::to_string(i) + "]."));
  w.collectives = parse_collectives(r, j, "collectives", false);
  w.boundary = parse_collectives(r, j, "boundary", true);
  w.dp = parse_collectives(r, j, "dp", true);
  w.stage = j.contains("stage") ? int(r.extent(j, "stage", "")) : 0;
  w.microbatches = j.contains("microbatches") ? r.positive_int(j, "microbatches", "") : 1;
  for (size_t i = 0; i < w.collectives.size(); ++i) {
    const WorkCollective& c = w.collectives[i];
    const std::string key = "collectives[" + std::to_string(i) + "].beside";
    if (c.beside >= int(w.kernels.size()))
      r.fail(key, "no kernel " + std::to_string(c.beside) + " (the workload has " +
                      std::to_string(w.kernels.size()) + ")");
    if (c.beside >= 0 && w.kernels[size_t(c.beside)].cls != KernelClass::gemm)
      r.fail(key, "names kernel " + std::to_string(c.beside) + ", which is not a GEMM");
  }
  try {
    for (size_t i = 0; i < w.kernels.size(); ++i) kernel_run(w, i);  // every entry can run
  } catch (const InputError& e) {
    throw InputError(origin, 0, "", e.what());
  }
  return w;
}

RunnerWorkload load_runner_workload(const std::string& path) {
  return parse_runner_workload(io::read_file(path), path);
}

Dtype activation_dtype(Dtype workload) {
  return workload == Dtype::fp16 ? Dtype::fp16 : Dtype::bf16;
}

namespace {

/// cuBLAS layouts of the planner's shapes (calibrate/sweeps.cc make_case): forward-like
/// products read a transposed operand (TN, C = out x tokens), data gradients none (NN),
/// weight-like gradients reduce over the tokens (NT, C = m x n). FP8 takes TN only (cuBLASLt).
void gemm_layout(const WorkKernel& k, KernelRun& r) {
  const std::set<std::string> tn = {"scores", "context_dp"}, nt = {"scores_dk", "context_dv"};
  const bool weight = k.pass == Pass::backward_weight || nt.count(k.name);
  const bool forward = k.cls == KernelClass::gemm ? k.pass == Pass::forward : tn.count(k.name) > 0;
  r.kind = RunKind::gemm;
  r.m = long(weight ? k.m : k.n), r.n = long(weight ? k.n : k.m), r.k = long(k.k);
  r.batch = long(k.batch);
  r.transa = forward ? 'T' : 'N';
  r.transb = weight ? 'T' : 'N';
  if (r.dtype == Dtype::fp8) r.transa = 'T', r.transb = 'N';
}

/// Entries whose bytes the runner recomputes: a difference is reported, not fatal.
void compare_bytes(const WorkKernel& k, double expected, KernelRun& r) {
  if (std::fabs(k.bytes - expected) > 1e-6 * expected) {
    r.note = fmt("the workload's bytes {:.0f} differ from the layer's {:.0f}", k.bytes, expected);
  }
}

void attention_run(const RunnerWorkload& w, const WorkKernel& k, KernelRun& r) {
  const WorkLayer& l = w.layer;
  r.dtype = activation_dtype(w.dtype);
  r.kv_group = l.heads / l.kv_heads;
  if (k.name == "flash_attention") {
    r.kind = k.pass == Pass::forward ? RunKind::flash_forward : RunKind::flash_backward;
    r.bh = long(k.batch), r.sq = long(k.m), r.sk = long(k.n), r.d = long(k.k);
    return;
  }
  r.bh = long(l.mbs) * l.heads / l.tp, r.sq = l.seq / l.cp, r.sk = l.seq, r.d = l.head_dim();
  if (k.name == "softmax_dropout") {
    const bool fwd = k.pass == Pass::forward;
    r.kind = fwd ? RunKind::softmax_forward : RunKind::softmax_backward;
    compare_bytes(k, double(r.bh) * r.sq * r.sk * (fwd ? 9 : 11), r);
    return;
  }
  r.dtype = w.dtype == Dtype::fp8 ? Dtype::bf16 : w.dtype;  // TE runs attention BMMs in bf16
  gemm_layout(k, r);
}

}  // namespace

KernelRun kernel_run(const RunnerWorkload& w, size_t index) {
  const WorkKernel& k = w.kernels.at(index);
  const WorkLayer& l = w.layer;
  const std::string where = "kernels[" + std::to_string(index) + "]";
  const auto fail = [&](const std::string& what) { throw InputError("", 0, where, what); };
  KernelRun r;
  r.dtype = w.dtype;
  static const std::set<std::string> attention = {"scores",          "context",        "scores_dq",
                                                  "scores_dk",       "context_dp",     "context_dv",
                                                  "softmax_dropout", "flash_attention"};
  if (k.cls == KernelClass::gemm) {
    if (!(k.m >= 1 && k.n >= 1 && k.k >= 1 && k.batch >= 1))
      fail("a GEMM needs m, n, k, batch >= 1");
    gemm_layout(k, r);
  } else if (k.cls == KernelClass::attention) {
    if (!attention.count(k.name)) fail("unknown attention kernel '" + k.name + "'");
    attention_run(w, k, r);
    if ((r.kind == RunKind::flash_forward || r.kind == RunKind::flash_backward) &&
        !(r.d == 64 || r.d == 80 || r.d == 96 || r.d == 128))
      fail("the flash kernel runs head dimensions 64, 80, 96 and 128, not " + std::to_string(r.d));
    if (r.kind == RunKind::gemm && !(r.m >= 1 && r.n >= 1 && r.k >= 1))
      fail("empty attention GEMM");
  } else if (k.name == "norm_residual") {
    r.dtype = activation_dtype(w.dtype);
    r.kind = k.pass == Pass::forward ? RunKind::norm_forward : RunKind::norm_backward;
    r.rows = l.norm_rows(), r.width = l.hidden, r.rms = l.swiglu;  // Llama-style models: RMSNorm
    compare_bytes(k, 22.0 * r.rows * r.width * (k.pass == Pass::forward ? 1 : 2), r);
  } else if (k.name == "activation") {
    if (l.ffn == 0) fail("an activation kernel in a layer without a dense MLP (layer.ffn 0)");
    r.dtype = activation_dtype(w.dtype);
    r.kind = k.pass == Pass::forward ? RunKind::activation_forward : RunKind::activation_backward;
    r.rows = l.tokens(), r.width = l.ffn / l.tp, r.swiglu = l.swiglu;
    compare_bytes(
        k, 2.0 * r.rows * r.width * (l.swiglu ? 3 : 2) * (k.pass == Pass::forward ? 1 : 2), r);
  } else if (k.name == "moe_routing") {
    if (l.experts < 2) fail("moe_routing needs the layer's experts (layer.moe)");
    if (l.experts > kMaxRouterExperts)
      fail("the router kernel takes at most " + std::to_string(kMaxRouterExperts) + " experts");
    r.dtype = activation_dtype(w.dtype);
    r.kind = k.pass == Pass::forward ? RunKind::moe_forward : RunKind::moe_backward;
    r.rows = l.router_tokens, r.width = l.hidden, r.swiglu = l.swiglu;
    r.experts = l.experts, r.topk = l.topk, r.copies = l.copies, r.expert_width = l.expert_width;
    if (r.expert_width % 8) fail("the experts' activation needs a width of a multiple of 8");
    compare_bytes(k, run_bytes(r), r);
  } else if (k.name == "moe_sort") {
    if (l.experts < 2) fail("moe_sort needs the layer's experts (layer.moe)");
    r.dtype = activation_dtype(w.dtype);
    r.kind = k.pass == Pass::forward ? RunKind::moe_sort_forward : RunKind::moe_sort_backward;
    r.rows = l.copies, r.width = l.hidden;
    compare_bytes(k, run_bytes(r), r);
  } else {
    fail("unknown element-wise kernel '" + k.name + "'");
  }
  if (r.width % 8 ||
      ((r.kind == RunKind::softmax_forward || r.kind == RunKind::softmax_backward) && r.sk % 8))
    fail("the element-wise kernels need rows of a multiple of 8 elements (hidden, ffn / tp, seq)");
  return r;
}

std::string describe(const KernelRun& r) {
  const char* dt = to_string(r.dtype);
  switch (r.kind) {
    case RunKind::gemm:
      return fmt("cuBLASLt {} {}{} {} x {} x {}{}", dt, r.transa, r.transb, r.m, r.n, r.k,
                 r.batch > 1 ? " batch " + std::to_string(r.batch) : "");
    case RunKind::flash_forward:
    case RunKind::flash_backward:
      return fmt("flash attention {} {} bh={} sq={} sk={} d={}{}{}",
                 r.kind == RunKind::flash_forward ? "fwd" : "bwd", dt, r.bh, r.sq, r.sk, r.d,
                 r.causal ? " causal" : "",
                 r.kv_group > 1 ? " kv_group=" + std::to_string(r.kv_group) : "");
    case RunKind::softmax_forward:
    case RunKind::softmax_backward:
      return fmt("softmax+dropout {} {} {} rows x {}{}",
                 r.kind == RunKind::softmax_forward ? "fwd" : "bwd", dt, r.bh * r.sq, r.sk,
                 r.causal ? " causal" : "");
    case RunKind::norm_forward:
    case RunKind::norm_backward:
      return fmt("{}+bias-dropout-add x2 {} {} {} x {}", r.rms ? "rmsnorm" : "layernorm",
                 r.kind == RunKind::norm_forward ? "fwd" : "bwd", dt, r.rows, r.width);
    case RunKind::activation_forward:
    case RunKind::activation_backward:
      return fmt("{} {} {} {} x {}", r.swiglu ? "swiglu" : "bias-gelu",
                 r.kind == RunKind::activation_forward ? "fwd" : "bwd", dt, r.rows, r.width);
    case RunKind::moe_forward:
    case RunKind::moe_backward:
      return fmt("moe routing {} {} router {} x {} top-{}, {} copies x {}, {} {}",
                 r.kind == RunKind::moe_forward ? "fwd" : "bwd", dt, r.rows, r.experts, r.topk,
                 r.copies, r.width, r.swiglu ? "swiglu" : "bias-gelu", r.expert_width);
    case RunKind::moe_sort_forward:
    case RunKind::moe_sort_backward:
      return fmt("moe sort by local expert {} {} {} rows x {}",
                 r.kind == RunKind::moe_sort_forward ? "fwd" : "bwd", dt, r.rows, r.width);
  }
  return "";
}

double run_bytes(const KernelRun& r) {
  const double e = r.dtype == Dtype::fp8 ? 1 : r.dtype == Dtype::tf32 ? 4 : 2;
  const double q = double(r.bh) * r.sq * r.d, kv = double(r.bh / r.kv_group) * r.sk * r.d;
  const double elems = double(r.bh) * r.sq * r.sk, rh = double(r.rows) * r.width;
  switch (r.kind) {
    case RunKind::gemm:
      return double(r.batch) * (e * (r.m * double(r.k) + r.k * double(r.n)) +
                                (r.dtype == Dtype::fp8 ? 2 : e) * r.m * double(r.n));
    case RunKind::flash_forward:
      return 2 * (2 * q + 2 * kv) + 4.0 * r.bh * r.sq;
    // Q, O, dO read, dQ written (2 B), the fp32 dQ accumulator zeroed, added to and read,
    // K, V read, dK, dV written; dK, dV expanded per query head and summed when grouped.
    case RunKind::flash_backward:
      return 2 * (4 * q + 2 * kv) + 12 * q + 4 * (r.kv_group > 1 ? 3 * q + kv : kv) +
             12.0 * r.bh * r.sq;
    case RunKind::softmax_forward:
      return 9 * elems;
    case RunKind::softmax_backward:
      return 11 * elems;
    case RunKind::norm_forward:
      return 22 * rh;
    case RunKind::norm_backward:
      return 34 * rh;  // per half: dropout 5h, norm 8h, gamma 4h
    case RunKind::activation_forward:
      return (r.swiglu ? 6 : 4) * rh;
    case RunKind::activation_backward:
      return (r.swiglu ? 10 : 6) * rh;
    // Router: fp32 logits read, probabilities written (backward: probabilities read, the
    // logits' gradient written). Permutation: each copy's row read and written (backward: read,
    // summed into its token's row). Combine: each copy's row and fp32 weight read, each token's
    // row written (backward: the token's gradient read per copy, the copy's row read and its
    // gradient written, the weights read and their gradients written). The experts' activation
    // as the dense one's.
    case RunKind::moe_forward:
    case RunKind::moe_backward: {
      const bool fwd = r.kind == RunKind::moe_forward;
      const double logits = double(r.rows) * r.experts, copy_rows = double(r.copies) * r.width;
      const double units = double(r.copies / std::max(1L, r.topk)) * r.width;
      const double act = double(r.copies) * r.expert_width;
      const double router = 8 * logits;
      const double permute = fwd ? 4 * copy_rows : 2 * copy_rows + 2 * units;
      const double combine =
          fwd ? 2 * copy_rows + 4.0 * r.copies + 2 * units : 6 * copy_rows + 8.0 * r.copies;
      const double activation = (fwd ? (r.swiglu ? 6 : 4) : (r.swiglu ? 10 : 6)) * act;
      return router + permute + combine + activation;
    }
    // Each pass: two permutations of the rows (each row read and written) and one of their
    // 16-bit probabilities (Megatron-Core's sort after the dispatch and unsort before the
    // combine; backward the gradients the other way).
    case RunKind::moe_sort_forward:
    case RunKind::moe_sort_backward:
      return double(r.rows) * (8.0 * r.width + 4);
  }
  return 0;
}

}  // namespace planner::calibrate
