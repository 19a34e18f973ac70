#include "planner/knob_table.h"

#include <charconv>
#include <iterator>

#include "planner/error.h"
#include "planner/names.h"

namespace planner {
namespace {

template <typename E>
std::vector<std::string> words_of() {
  std::vector<std::string> out;
  for (const EnumName<E>& n : names_of(E{})) out.push_back(n.name);
  return out;
}

/// An optional bool as a knob value: kUnset, 0 or 1.
int tri(const std::optional<bool>& b) { return b ? int(*b) : kUnset; }
std::optional<bool> untri(int v) {
  return v == kUnset ? std::nullopt : std::optional<bool>(v != 0);
}

/// An offload device as a knob value: kUnset for none (so that plans without offload read as
/// before), else its index.
int device_knob(OffloadDevice d) { return d == OffloadDevice::none ? kUnset : int(d); }
OffloadDevice knob_device(int v) { return v == kUnset ? OffloadDevice::none : OffloadDevice(v); }

std::array<KnobDef, kNumKnobs> make_table() {
  using K = KnobId;
  const std::vector<std::string> bits = {"0", "1"};
  std::array<KnobDef, kNumKnobs> t = {{
      {K::tp,
       "tp",
       "tensor-parallel sizes, e.g. 8 or 1-8",
       {},
       1,
       kMaxKnob,
       false,
       true,
       "tp",
       3,
       [](const Plan& p) { return p.tp; },
       [](Plan& p, int v) { p.tp = v; }},
      {K::pp,
       "pp",
       "pipeline-parallel sizes, e.g. 1-64",
       {},
       1,
       kMaxKnob,
       false,
       true,
       "pp",
       3,
       [](const Plan& p) { return p.pp; },
       [](Plan& p, int v) { p.pp = v; }},
      {K::dp,
       "dp",
       "data-parallel size (0: what the GPU count leaves)",
       {},
       0,
       kMaxKnob,
       false,
       false,
       "dp",
       5,
       [](const Plan& p) { return p.dp; },
       [](Plan& p, int v) { p.dp = v; }},
      {K::cp,
       "cp",
       "context-parallel sizes (default 1)",
       {},
       1,
       kMaxKnob,
       false,
       true,
       "cp",
       3,
       [](const Plan& p) { return p.cp; },
       [](Plan& p, int v) { p.cp = v; }},
      {K::ep,
       "ep",
       "expert-parallel sizes, a model with experts only, e.g. 1-64 (default: the powers of two "
       "dividing the experts)",
       {},
       1,
       kMaxKnob,
       true,
       true,
       "ep",
       3,
       [](const Plan& p) { return p.ep == 1 ? kUnset : p.ep; },
       [](Plan& p, int v) { p.ep = v == kUnset ? 1 : v; }},
      {K::etp,
       "etp",
       "expert-tensor-parallel sizes, a model with experts only (default 1: Megatron-Bridge's "
       "MoE recipes)",
       {},
       1,
       kMaxKnob,
       true,
       true,
       "etp",
       3,
       [](const Plan& p) { return p.etp == 1 ? kUnset : p.etp; },
       [](Plan& p, int v) { p.etp = v == kUnset ? 1 : v; }},
      {K::vpp,
       "vpp",
       "virtual pipeline chunks per rank, e.g. 1-4",
       {},
       1,
       kMaxKnob,
       false,
       true,
       "vpp",
       3,
       [](const Plan& p) { return p.vpp; },
       [](Plan& p, int v) { p.vpp = v; }},
      {K::mbs,
       "mbs",
       "micro-batch sizes, e.g. 1,2,4",
       {},
       1,
       kMaxKnob,
       false,
       true,
       "mbs",
       3,
       [](const Plan& p) { return p.mbs; },
       [](Plan& p, int v) { p.mbs = v; }},
      {K::gbs,
       "gbs",
       "global batch in sequences (0: --global-batch)",
       {},
       0,
       kMaxGlobalBatch,
       false,
       false,
       "",
       0,
       [](const Plan& p) { return p.gbs; },
       [](Plan& p, int v) { p.gbs = v; }},
      {K::zero,
       "zero",
       "ZeRO stages, e.g. 0,1",
       {},
       0,
       3,
       false,
       true,
       "zero",
       4,
       [](const Plan& p) { return p.zero; },
       [](Plan& p, int v) { p.zero = v; }},
      {K::recompute, "recompute", "none,selective,full,selective_moe (experts only)",
       words_of<Recompute>(), 0, 0, false, true, "recompute", -9,
       [](const Plan& p) { return int(p.recompute); },
       [](Plan& p, int v) { p.recompute = Recompute(v); }},
      {K::recompute_layers,
       "recompute_layers",
       "with recompute=full, recompute only the first N layers of each model chunk (Megatron-LM's "
       "--recompute-method block --recompute-num-layers N), e.g. 0,4,8 (default 0: every layer)",
       {},
       0,
       kMaxKnob,
       true,
       true,
       "rcl",
       4,
       [](const Plan& p) { return p.recompute_layers == 0 ? kUnset : p.recompute_layers; },
       [](Plan& p, int v) { p.recompute_layers = v == kUnset ? 0 : v; }},
      {K::sp, "sp", "sequence parallelism 0,1", bits, 0, 0, false, true, "sp", 2,
       [](const Plan& p) { return int(p.sp); }, [](Plan& p, int v) { p.sp = v != 0; }},
      {K::schedule, "schedule", "1f1b,gpipe,interleaved,zb-h1 (default 1f1b and interleaved)",
       words_of<Schedule>(), 0, 0, false, true, "schedule", -11,
       [](const Plan& p) { return int(p.schedule); },
       [](Plan& p, int v) { p.schedule = Schedule(v); }},
      {K::split, "split",
       "pipeline split even,short_ends,embed_loss,short_last (default even; the search tries all "
       "four)",
       words_of<PipelineSplit>(), 0, 0, true, true, "split", -10,
       [](const Plan& p) { return p.split == PipelineSplit::even ? kUnset : int(p.split); },
       [](Plan& p, int v) { p.split = v == kUnset ? PipelineSplit::even : PipelineSplit(v); }},
      {K::order, "order",
       "rank order, innermost first: tp-cp-dp-pp (default) or tp-pp-dp (Megatron-LM's "
       "--use-tp-pp-dp-mapping: the pipeline inside a node; the search tries both)",
       words_of<RankOrder>(), 0, 0, true, true, "order", -11,
       [](const Plan& p) { return p.order == RankOrder::tp_cp_dp_pp ? kUnset : int(p.order); },
       [](Plan& p, int v) { p.order = v == kUnset ? RankOrder::tp_cp_dp_pp : RankOrder(v); }},
      {K::dtype, "dtype", "bf16 (default), fp16, fp8, tf32, mxfp8", words_of<Dtype>(), 0, 0, false,
       false, "", 0, [](const Plan& p) { return int(p.dtype); },
       [](Plan& p, int v) { p.dtype = Dtype(v); }},
      {K::attn, "attn", "flash or unfused (default: the framework's stack)",
       words_of<AttentionKernel>(), 0, 0, true, false, "", 0,
       [](const Plan& p) { return p.attention ? int(*p.attention) : kUnset; },
       [](Plan& p, int v) {
         p.attention = v == kUnset ? std::nullopt : std::optional(AttentionKernel(v));
       }},
      {K::overlap_grad_reduce, "overlap_grad_reduce",
       "DP gradient reduction beside the backward, 0,1 (default: the framework's stack)", bits, 0,
       0, true, true, "ogr", 3, [](const Plan& p) { return tri(p.overlap_grad_reduce); },
       [](Plan& p, int v) { p.overlap_grad_reduce = untri(v); }},
      {K::overlap_param_gather, "overlap_param_gather",
       "ZeRO-1/2 parameter gather beside the next forward, 0,1 (default: the framework's stack)",
       bits, 0, 0, true, true, "opg", 3, [](const Plan& p) { return tri(p.overlap_param_gather); },
       [](Plan& p, int v) { p.overlap_param_gather = untri(v); }},
      {K::tp_comm_overlap, "tp_comm_overlap",
       "TP collectives pipelined with their GEMMs (needs sp), 0,1 (default: the framework's stack)",
       bits, 0, 0, true, true, "tpo", 3, [](const Plan& p) { return tri(p.tp_comm_overlap); },
       [](Plan& p, int v) { p.tp_comm_overlap = untri(v); }},
      {K::ep_comm_overlap, "ep_comm_overlap",
       "the expert all-to-all beside another micro-batch's compute (Megatron-LM's "
       "--overlap-moe-expert-parallel-comm), 0,1 (default 0; ep > 1)",
       bits, 0, 0, true, true, "epo", 3, [](const Plan& p) { return tri(p.ep_comm_overlap); },
       [](Plan& p, int v) { p.ep_comm_overlap = untri(v); }},
      {K::dispatcher, "dispatcher",
       "the experts' token dispatcher alltoall, flex (DeepEP: once per node over the network), "
       "hybridep (the flex dispatcher's HybridEP backend: the same, padding FP8 rows as it "
       "dispatches) or allgather (every token over the etp x ep group), default alltoall; the "
       "search tries flex where the ep group spans nodes, allgather where the etp x ep group is "
       "inside one, hybridep only when asked",
       words_of<Dispatcher>(), 0, 0, true, true, "disp", -9,
       [](const Plan& p) {
         return p.dispatcher == Dispatcher::alltoall ? kUnset : int(p.dispatcher);
       },
       [](Plan& p, int v) { p.dispatcher = v == kUnset ? Dispatcher::alltoall : Dispatcher(v); }},
      {K::capacity_factor,
       "capacity_factor",
       "the experts' capacity factor 1.0, 1.25, 1.5, 2.0 or 4.0: tokens past it dropped "
       "(default dropless; the search tries only the values given: it changes what is trained)",
       {"1.0", "1.25", "1.5", "2.0", "4.0"},
       0,
       0,
       true,
       true,
       "cap",
       4,
       [](const Plan& p) {
         for (int i = 0; i < int(std::size(kCapacityFactors)); ++i)
           if (p.capacity_factor == kCapacityFactors[i]) return i;
         return kUnset;
       },
       [](Plan& p, int v) { p.capacity_factor = v == kUnset ? 0.0 : kCapacityFactors[v]; }},
      {K::pad_to_capacity, "pad_to_capacity",
       "each expert's input padded to its capacity (--moe-pad-expert-input-to-capacity), 0,1 "
       "(default 0; needs capacity_factor and the alltoall dispatcher)",
       bits, 0, 0, true, true, "pad", 3, [](const Plan& p) { return tri(p.pad_to_capacity); },
       [](Plan& p, int v) { p.pad_to_capacity = untri(v); }},
      {K::cuda_graphs, "cuda_graphs",
       "Transformer Engine's scoped CUDA graphs of attention, the router and the dispatcher's "
       "preprocessing (--cuda-graph-impl transformer_engine), so that a layer with experts does "
       "not wait for its host, 0,1 (default 0: eager; a model with experts; graph memory not "
       "priced)",
       bits, 0, 0, true, true, "cg", 2, [](const Plan& p) { return tri(p.cuda_graphs); },
       [](Plan& p, int v) { p.cuda_graphs = untri(v); }},
      {K::grad_compression, "grad_compression",
       "DeepSpeed's compressed optimizers none, onebit_adam, zero_one_adam, onebit_lamb (default "
       "none; zero=0, tp=pp=1)",
       words_of<GradCompression>(), 0, 0, true, true, "compress", -13,
       [](const Plan& p) {
         return p.grad_compression == GradCompression::none ? kUnset : int(p.grad_compression);
       },
       [](Plan& p, int v) {
         p.grad_compression = v == kUnset ? GradCompression::none : GradCompression(v);
       }},
      {K::zeropp, "zeropp",
       "DeepSpeed's ZeRO++ at zero=3 (int8 weight gathers, a secondary weight partition per node, "
       "int4 gradient reduce-scatters), 0,1 (default 0)",
       bits, 0, 0, true, true, "zpp", 3, [](const Plan& p) { return p.zeropp ? 1 : kUnset; },
       [](Plan& p, int v) { p.zeropp = v == 1; }},
      {K::grad_reduce_bf16, "grad_reduce_bf16",
       "gradients kept and reduced in bf16 (Megatron-LM's --grad-reduce-in-bf16, as "
       "Megatron-Bridge's performance recipes run), 0,1 (default 0: fp32; bf16, fp8 and mxfp8 "
       "plans)",
       bits, 0, 0, true, true, "g16", 3,
       [](const Plan& p) { return p.grad_reduce_bf16 ? 1 : kUnset; },
       [](Plan& p, int v) { p.grad_reduce_bf16 = v == 1; }},
      {K::loss_fusion, "loss_fusion",
       "the loss kernel none, native (Megatron-LM's --cross-entropy-loss-fusion) or te "
       "(Transformer Engine's Triton kernel, as Megatron-Bridge's recipes run; Megatron-LM at the "
       "pinned version refuses it), default none",
       words_of<LossFusion>(), 0, 0, true, true, "loss", -6,
       [](const Plan& p) {
         return p.loss_fusion == LossFusion::none ? kUnset : int(p.loss_fusion);
       },
       [](Plan& p, int v) { p.loss_fusion = v == kUnset ? LossFusion::none : LossFusion(v); }},
      {K::fp8_recipe, "fp8_recipe",
       "the FP8 scaling of a dtype=fp8 plan: delayed (Megatron-LM's default) or tensorwise "
       "(per-tensor current scaling, --fp8-recipe tensorwise, as Megatron-Bridge's H100 FP8 "
       "recipes run), default delayed",
       words_of<Fp8Recipe>(), 0, 0, true, true, "fp8r", -10,
       [](const Plan& p) {
         return p.fp8_recipe == Fp8Recipe::delayed ? kUnset : int(p.fp8_recipe);
       },
       [](Plan& p, int v) { p.fp8_recipe = v == kUnset ? Fp8Recipe::delayed : Fp8Recipe(v); }},
      {K::offload_activations,
       "offload_activations",
       "decoder layers whose activations go to host memory (Megatron-LM's "
       "--cpu-offloading-num-layers; pp=1, no recomputation), e.g. 0,8,16 (default 0)",
       {},
       0,
       kMaxKnob,
       true,
       true,
       "offa",
       4,
       [](const Plan& p) {
         return p.offload_activation_layers == 0 ? kUnset : p.offload_activation_layers;
       },
       [](Plan& p, int v) { p.offload_activation_layers = v == kUnset ? 0 : v; }},
      {K::offload_optimizer, "offload_optimizer",
       "optimizer states and step to none, cpu or nvme (default: none and cpu where a plan does "
       "not fit without)",
       words_of<OffloadDevice>(), 0, 0, true, true, "offl", -5,
       [](const Plan& p) { return device_knob(p.offload_optimizer); },
       [](Plan& p, int v) { p.offload_optimizer = knob_device(v); }},
      {K::offload_params, "offload_params",
       "ZeRO-3 parameters to none, cpu or nvme (default: none and cpu where a plan does not fit "
       "without)",
       words_of<OffloadDevice>(), 0, 0, true, true, "offp", -5,
       [](const Plan& p) { return device_knob(p.offload_params); },
       [](Plan& p, int v) { p.offload_params = knob_device(v); }},
      {K::offload_pct,
       "offload_pct",
       "percent of the optimizer states offloaded, 1-100 (default 100)",
       {},
       1,
       100,
       true,
       true,
       "off%",
       4,
       [](const Plan& p) {
         return p.offload_optimizer == OffloadDevice::none || p.offload_pct == 100 ? kUnset
                                                                                   : p.offload_pct;
       },
       [](Plan& p, int v) { p.offload_pct = v == kUnset ? 100 : v; }},
  }};
  return t;
}

}  // namespace

std::string KnobDef::text(int value) const {
  if (value == kUnset) return "";
  if (is_integer()) return std::to_string(value);
  return value >= 0 && value < int(words.size()) ? words[value] : "?";
}

std::string KnobDef::option() const {
  std::string o = std::string("--") + name;
  for (char& ch : o)
    if (ch == '_') ch = '-';
  return o;
}

const std::array<KnobDef, kNumKnobs>& knob_table() {
  static const std::array<KnobDef, kNumKnobs> table = make_table();
  return table;
}

const KnobDef* find_knob(std::string_view name) {
  for (const KnobDef& k : knob_table())
    if (name == k.name) return &k;
  return nullptr;
}

std::vector<std::string> knob_names() {
  std::vector<std::string> out;
  for (const KnobDef& k : knob_table()) out.push_back(k.name);
  return out;
}

int parse_knob_value(const KnobDef& k, const std::string& text, const std::string& origin) {
  if (!k.is_integer()) {
    std::string list;
    for (size_t i = 0; i < k.words.size(); ++i) {
      if (k.words[i] == text) return int(i);
      list += (i ? ", " : "") + k.words[i];
    }
    throw InputError(origin, 0, k.name,
                     "unknown value '" + text + "' (expected one of " + list + ")");
  }
  long long v = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size() || text.empty())
    throw InputError(origin, 0, k.name, "expected an integer, got '" + text + "'");
  if (k.hi - k.lo <= 3 && (v < k.lo || v > k.hi)) {  // a short list: name it
    std::string list;
    for (int x = k.lo; x <= k.hi; ++x)
      list += (x == k.lo ? "" : x == k.hi ? " or " : ", ") + std::to_string(x);
    throw InputError(origin, 0, k.name, "must be " + list + ", got " + std::to_string(v));
  }
  if (v < k.lo)
    throw InputError(origin, 0, k.name,
                     std::string(k.lo > 0 ? "must be a positive integer" : "must not be negative") +
                         ", got " + std::to_string(v));
  if (v > k.hi) throw InputError(origin, 0, k.name, "must be at most " + std::to_string(k.hi));
  return static_cast<int>(v);
}

}  // namespace planner
