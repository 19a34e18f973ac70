#include "planner/validate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <set>
#include <sstream>
#include <string_view>

#include "planner/block.h"
#include "planner/cost/memory.h"
#include "planner/error.h"
#include "planner/format.h"
#include "planner/names.h"
#include "planner/units.h"

namespace planner {
namespace {

const char* kComponents[] = {"gemm", "attention", "elementwise", "communication"};

int component_of(const Kernel& k) { return static_cast<int>(k.cls); }

const char* pass_name(Pass p) {
  return p == Pass::forward         ? "forward"
         : p == Pass::backward_data ? "backward_data"
                                    : "backward_weight";
}

/// The list of `n` times >= 0 under `key`; empty when absent or null.
std::vector<double> optional_times(const nlohmann::json& j, const char* key, size_t n,
                                   const std::string& origin) {
  std::vector<double> out;
  if (!j.contains(key) || j[key].is_null()) return out;
  if (!j[key].is_array() || j[key].size() != n)
    throw InputError(origin, 0, key, "expected " + std::to_string(n) + " times");
  for (const auto& t : j[key]) {
    if (!t.is_number() || !(t.get<double>() >= 0) || !std::isfinite(t.get<double>()))
      throw InputError(origin, 0, key, "times must be numbers >= 0");
    out.push_back(t.get<double>());
  }
  return out;
}

nlohmann::json collective_json(const WorkCollective& c) {
  return {{"name", c.name},
          {"collective", to_string(c.coll)},
          {"bytes", c.bytes},
          {"ranks", c.ranks},
          {"pass", pass_name(c.pass)},
          {"count", c.count},
          {"predicted_s", c.predicted_s},
          {"overlapped", c.overlapped}};
}

}  // namespace

Workload build_workload(const ModelSpec& m, const ClusterProfile& c, const Plan& p, int layers) {
  if (m.mla.any())
    throw InputError("", 0, "--model",
                     "validate's workload has no latent-attention kernels (MLA's down- and "
                     "up-projections, attention at head widths of " +
                         std::to_string(m.mla.qk_head_dim()) + " and " +
                         std::to_string(m.mla.v_head_dim) +
                         ") yet; it would time an attention that is not this model's");
  if (p.recompute_layers > 0)
    throw InputError("", 0, "--plan",
                     "validate times one layer for every layer of the stage; recompute_layers=" +
                         std::to_string(p.recompute_layers) +
                         " recomputes only some of them: validate the plan with recompute=full "
                         "(every layer) or none");
  if (p.dtype == Dtype::mxfp8)
    throw InputError("", 0, "--plan",
                     "validate's runner has no MXFP8 GEMM (cuBLASLt's block-scaled FP8 with E8M0 "
                     "scales, Blackwell only); validate the plan with dtype=fp8 or bf16");
  if (m.moe.any() && is_flex(p.dispatcher))
    throw InputError("", 0, "--plan",
                     fmt("validate dispatches tokens with NCCL's all-to-all; {}'s "
                         "node-deduplicated dispatch (dispatcher={}) is not in its runner: "
                         "validate the plan with dispatcher=alltoall",
                         flex_backend_name(p.dispatcher), name_of(p.dispatcher)));
  if (m.moe.any() && p.ep_comm_overlap.value_or(false))
    throw InputError("", 0, "--plan",
                     "validate times the expert dispatcher's collectives alone; the overlap of "
                     "the combined 1F1B schedule (ep_comm_overlap=1) is not in its runner: "
                     "validate the plan with ep_comm_overlap=0");
  const Estimate e = estimate(m, c, p);
  if (!e.ok()) throw InputError("", 0, "--plan", rejection_message(e));
  if (!m.encoders.empty())
    throw InputError("", 0, "--model", "validate runs decoder layers; this model has encoders");
  Workload w;
  w.plan = p;
  w.model = m.name;
  // A model with experts: its mixture-of-experts layer (a model that also has dense layers,
  // DeepSeek-V3's first three or Llama 4 Maverick's every other, is timed as if all were MoE).
  w.shape = m.moe.any() ? m.moe_shape() : m.decoder_shape();
  w.config = {p.tp, p.cp, p.mbs, p.sp, p.dtype, attention_of(p, c)};
  w.config.ep = p.ep, w.config.etp = p.etp, w.config.capacity = p.capacity_factor;
  w.config.pad = p.pad_to_capacity.value_or(false);
  w.config.fp8_recipe = p.fp8_recipe;
  w.config.dispatcher = p.dispatcher;
  w.stage = e.critical_stage;
  w.stage_layers = e.partition[size_t(w.stage)];
  w.layers = layers > 0 ? layers : w.stage_layers;
  // Kernels run one by one in isolation: compare them with the microbenchmark-level prediction,
  // without the training-sustained factor that whole iterations carry.
  std::vector<Kernel> all = layer_kernels(w.shape, c, w.config);
  // The runner has no FP8 cast-transpose or row-padding kernel and no unfused RoPE: a workload
  // leaves them out (README).
  std::erase_if(all, [](const Kernel& k) {
    return std::string_view(k.name) == "fp8_cast" || std::string_view(k.name) == "fp8_transpose" ||
           std::string_view(k.name) == "fp8_padding" || std::string_view(k.name) == "rope";
  });
  for (Kernel& k : all) k.time_s *= c.gpu.sustained_efficiency;
  for (const Kernel& k : all)
    if (k.pass == Pass::forward) w.kernels.push_back(k), w.is_recompute.push_back(false);
  for (const Kernel& k : all) {  // recomputation re-runs forward work at the start of backward
    // selective_moe re-runs the kernel groups its checkpoints are part of (the runner times the
    // whole group: the norms with the residual adds, the experts' activation with the routing)
    // and latent attention's up-projections (block_cost prices the checkpointed share alone).
    const bool up_proj =
        k.cls == KernelClass::gemm && (std::string_view(k.name) == kLinearNames[kQUp] ||
                                       std::string_view(k.name) == kLinearNames[kKvUp]);
    const bool again =
        k.pass == Pass::forward &&
        (p.recompute == Recompute::full ||
         (p.recompute == Recompute::selective && k.cls == KernelClass::attention) ||
         (p.recompute == Recompute::selective_moe && (k.checkpointed_s > 0 || up_proj)));
    if (again) w.kernels.push_back(k), w.is_recompute.push_back(true);
  }
  for (const Kernel& k : all)
    if (k.pass != Pass::forward) w.kernels.push_back(k), w.is_recompute.push_back(false);
  const LayerCompute lc = layer_compute(w.shape, c, w.config);
  w.collectives = tp_collectives(m, c, p, w.kernels, w.is_recompute, lc);
  for (const WorkCollective& x : ep_collectives(w.shape, c, p)) w.collectives.push_back(x);
  w.boundary = boundary_collectives(m, c, p, e.chunk_partition, w.stage);
  w.dp = dp_collectives(m, c, p, e.dp_params_rank, lc, w.stage_layers);
  for (const WorkCollective& x : expert_dp_collectives(c, p, e.expert_params_rank))
    w.dp.push_back(x);
  w.dp_total_s = e.dp_comm_total_s, w.dp_exposed_s = e.breakdown.dp_comm_s;
  return w;
}

nlohmann::json workload_json(const Workload& w) {
  using nlohmann::json;
  json kernels = json::array();
  for (size_t i = 0; i < w.kernels.size(); ++i) {
    const Kernel& k = w.kernels[i];
    kernels.push_back({{"name", k.name},
                       {"class", kComponents[component_of(k)]},
                       {"pass", pass_name(k.pass)},
                       {"recompute", bool(w.is_recompute[i])},
                       {"m", k.gemm.m},
                       {"n", k.gemm.n},
                       {"k", k.gemm.k},
                       {"batch", k.gemm.batch},
                       {"bytes", k.bytes},
                       {"flops", k.flops},
                       {"predicted_s", k.time_s}});
  }
  json colls = json::array();
  for (const WorkCollective& c : w.collectives) {
    json j = collective_json(c);
    j["beside"] = c.beside >= 0 ? json(c.beside) : json(nullptr);
    j["exposed_s"] = c.exposed_s;
    colls.push_back(j);
  }
  auto per_list = [](const std::vector<WorkCollective>& list) {
    json out = json::array();
    for (const WorkCollective& c : list) {
      json j = collective_json(c);
      j["per"] = c.per_microbatch ? "microbatch" : "iteration";
      out.push_back(j);
    }
    return out;
  };
  const LayerShape& s = w.shape;
  json out = {{"schema", "planner-validate-workload/3"},
              {"plan", to_plan_string(w.plan)},
              {"model", w.model},
              {"dtype", to_string(w.plan.dtype)},
              {"attention", w.config.attention == AttentionKernel::flash ? "flash" : "unfused"},
              {"layer",
               {{"hidden", s.hidden},
                {"heads", s.heads},
                {"kv_heads", s.kv_heads},
                {"head_dim", s.head_dim()},
                {"ffn", s.ffn},
                {"swiglu", s.swiglu},
                {"seq", s.seq},
                {"tp", w.config.tp},
                {"cp", w.config.cp},
                {"mbs", w.config.mbs},
                {"sp", w.config.sp}}},
              {"layers", w.layers},
              {"stage", w.stage},
              {"stage_layers", w.stage_layers},
              {"kernels", kernels},
              {"collectives", colls},
              {"microbatches", w.plan.microbatches()},
              {"boundary", per_list(w.boundary)},
              {"dp", per_list(w.dp)}};
  if (s.moe.any()) {  // the routing's sizes, from the block model the kernels came from
    BlockConfig bc{w.config.tp, w.config.cp, w.config.mbs, w.config.sp, w.config.attention};
    bc.ep = w.config.ep, bc.etp = w.config.etp, bc.capacity = w.config.capacity;
    bc.pad = w.config.pad;
    const BlockModel bm = block_model(s, bc);
    const Module *router = bm.linear(kRouter), *fc2 = bm.linear(kExpertFc2);
    double copies = 0;
    for (const Module& m : bm)
      if (m.kind == ModuleKind::dispatch) copies = m.tokens * m.groups;
    const double k = s.moe.topk;
    out["layer"]["moe"] = {{"experts", s.moe.experts},
                           {"topk", s.moe.topk},
                           {"router_tokens", std::llround(router ? router->tokens : 0.0)},
                           {"copies", std::llround(std::max(1.0, std::round(copies / k)) * k)},
                           {"expert_width", std::llround(fc2 ? fc2->in : 0.0)}};
  }
  return out;
}

Measured parse_measured(const nlohmann::json& j, const Workload& w, const std::string& origin) {
  Measured m;
  auto fail = [&](const std::string& key, const std::string& what) {
    throw InputError(origin, 0, key, what);
  };
  if (!j.is_object()) fail("", "expected a JSON object from the GPU runner");
  m.device = j.contains("device") && j["device"].is_string() ? j["device"].get<std::string>()
                                                             : std::string("unknown device");
  if (!j.contains("kernels_s") || !j["kernels_s"].is_array())
    fail("kernels_s", "missing or not a list");
  if (j["kernels_s"].size() != w.kernels.size())
    fail("kernels_s", "expected " + std::to_string(w.kernels.size()) + " times, found " +
                          std::to_string(j["kernels_s"].size()));
  // A kernel of one layer runs for microseconds to seconds; an hour is a broken measurement.
  const auto time_ok = [](const nlohmann::json& t) {
    return t.is_number() && t.get<double>() > 0 && t.get<double>() <= 3600;
  };
  for (const auto& t : j["kernels_s"]) {
    if (!time_ok(t)) fail("kernels_s", "times must be positive numbers of seconds, at most 3600");
    m.kernel_s.push_back(t.get<double>());
  }
  m.collective_s = optional_times(j, "collectives_s", w.collectives.size(), origin);
  m.collective_exposed_s = optional_times(j, "collectives_exposed_s", w.collectives.size(), origin);
  if (!m.collective_exposed_s.empty() && m.collective_s.empty())
    fail("collectives_exposed_s", "given without collectives_s");
  m.boundary_s = optional_times(j, "boundary_s", w.boundary.size(), origin);
  if (j.contains("dp_s") && j["dp_s"].is_number() && w.dp.size() == 1)  // an older runner's
    m.dp_s = {j["dp_s"].get<double>()};
  else
    m.dp_s = optional_times(j, "dp_s", w.dp.size(), origin);
  if (j.contains("attention_reference")) {
    const auto& ref = j["attention_reference"];
    if (!ref.is_object() || !ref.contains("kernels_s") || !ref["kernels_s"].is_array() ||
        !ref.contains("source") || !ref["source"].is_string() ||
        ref["source"].get<std::string>().empty())
      fail("attention_reference", "expected {\"source\": non-empty text, \"kernels_s\": [...]}");
    if (ref["kernels_s"].size() != w.kernels.size())
      fail("attention_reference.kernels_s",
           "expected " + std::to_string(w.kernels.size()) + " entries");
    m.attention_reference_source = ref["source"].get<std::string>();
    for (size_t i = 0; i < w.kernels.size(); ++i) {
      const auto& t = ref["kernels_s"][i];
      const bool attention = w.kernels[i].cls == KernelClass::attention;
      if (attention && !time_ok(t))
        fail("attention_reference.kernels_s",
             "entry " + std::to_string(i) +
                 " (attention) must be a positive number of seconds, at most 3600");
      m.attention_reference_s.push_back(attention ? t.get<double>() : std::nan(""));
    }
  }
  return m;
}

namespace {

/// The communication component, the stage-boundary and the DP collectives of the report. TP:
/// what the estimate charges after overlap against what the collectives added beside their GEMMs,
/// or, when the runner ran them only alone, both on the wire; the profile's times when not
/// measured. Stage boundary: per micro-batch on the wire (the profile's when not measured). DP:
/// each collective per iteration on the wire (the runner runs them alone).
void add_communication(const Workload& w, const Measured& m, ValidationReport& r) {
  const bool exposed = !m.collective_exposed_s.empty();
  r.communication_basis = r.communication_measured && !exposed ? "wire" : "exposed";
  for (size_t i = 0; i < w.collectives.size(); ++i) {
    const WorkCollective& c = w.collectives[i];
    const bool fwd = c.pass == Pass::forward;
    const double predicted = r.communication_basis == "wire" ? c.predicted_s : c.exposed_s;
    const double measured = exposed                    ? m.collective_exposed_s[i]
                            : r.communication_measured ? m.collective_s[i]
                                                       : predicted;
    (fwd ? r.predicted[3].fwd_s : r.predicted[3].bwd_s) += c.count * predicted;
    (fwd ? r.measured[3].fwd_s : r.measured[3].bwd_s) += c.count * measured;
  }
  r.boundary_run = !m.boundary_s.empty();
  for (size_t i = 0; i < w.boundary.size(); ++i) {
    const WorkCollective& c = w.boundary[i];
    const bool fwd = c.pass == Pass::forward;
    r.boundary_predicted_s.push_back(c.count * c.predicted_s);
    r.boundary_measured_s.push_back(c.count * (r.boundary_run ? m.boundary_s[i] : c.predicted_s));
    (fwd ? r.boundary_predicted.fwd_s : r.boundary_predicted.bwd_s) += r.boundary_predicted_s[i];
    (fwd ? r.boundary_measured.fwd_s : r.boundary_measured.bwd_s) += r.boundary_measured_s[i];
  }
  r.dp_exposed_s = w.dp_exposed_s;
  r.dp_measured_total_s = m.dp_s.empty() ? -1 : 0;
  for (size_t i = 0; i < w.dp.size(); ++i) {
    r.dp_predicted_s.push_back(w.dp_calls(i) * w.dp[i].predicted_s);
    r.dp_measured_s.push_back(m.dp_s.empty() ? -1 : w.dp_calls(i) * m.dp_s[i]);
    r.dp_predicted_total_s += r.dp_predicted_s.back();
    if (!m.dp_s.empty()) r.dp_measured_total_s += r.dp_measured_s.back();
  }
}

}  // namespace

double ValidationReport::diff_pct(double predicted_s, double measured_s) const {
  return measured_s > 0 ? 100.0 * (predicted_s - measured_s) / measured_s : 0.0;
}

ValidationReport compare(const Workload& w, const Measured& m) {
  ValidationReport r;
  r.device = m.device;
  r.communication_measured = !m.collective_s.empty();
  r.components.assign(std::begin(kComponents), std::end(kComponents));
  r.predicted.assign(4, {}), r.measured.assign(4, {});
  for (size_t i = 0; i < w.kernels.size(); ++i) {
    const Kernel& k = w.kernels[i];
    const bool fwd = k.pass == Pass::forward && !w.is_recompute[i];
    const int c = component_of(k);
    (fwd ? r.predicted[c].fwd_s : r.predicted[c].bwd_s) += k.time_s;
    const bool referenced = !m.attention_reference_s.empty() && k.cls == KernelClass::attention;
    (fwd ? r.measured[c].fwd_s : r.measured[c].bwd_s) +=
        referenced ? m.attention_reference_s[i] : m.kernel_s[i];
    if (referenced) (fwd ? r.own_attention.fwd_s : r.own_attention.bwd_s) += m.kernel_s[i];
  }
  r.attention_source = m.attention_reference_source;
  add_communication(w, m, r);
  for (int c = 0; c < 4; ++c) {
    r.predicted_layer.fwd_s += r.predicted[c].fwd_s,
        r.predicted_layer.bwd_s += r.predicted[c].bwd_s;
    r.measured_layer.fwd_s += r.measured[c].fwd_s, r.measured_layer.bwd_s += r.measured[c].bwd_s;
  }
  r.layers = w.layers, r.stage_layers = w.stage_layers, r.microbatches = w.plan.microbatches();
  return r;
}

}  // namespace planner
