#include "planner/report/report.h"
#include "planner/units.h"

namespace planner {

using nlohmann::json;

namespace {

json context_json(const RunContext& ctx) {
  const ModelSpec& m = *ctx.model;
  const ClusterProfile& c = *ctx.cluster;
  json j = {{"planner_version", PLANNER_VERSION},
            {"model",
             {{"file", ctx.model_file},
              {"name", m.name},
              {"params", m.total_params()},
              {"mtp_layers", m.mtp_layers},
              {"mtp_params", m.mtp_params()}}},
            {"cluster",
             {{"file", ctx.cluster_file},
              {"name", c.name},
              {"gpu", c.gpu.name},
              {"gpus_per_node", c.gpus_per_node},
              {"nvlink_domain", c.nvlink_domain},
              {"nics_per_node", c.nics_per_node},
              {"hbm_bytes", c.gpu.hbm_bytes}}},
            {"gpus", ctx.gpus},
            {"gpus_min", ctx.gpus_min > 0 ? ctx.gpus_min : ctx.gpus},
            {"global_batch", ctx.global_batch},
            {"seq_len", m.seq_len}};
  if (ctx.train_tokens > 0) j["train_tokens"] = ctx.train_tokens;
  if (ctx.distinct_left_out >= 0) j["distinct_left_out"] = ctx.distinct_left_out;
  return j;
}

json memory_json(const MemoryBreakdown& mem) {
  return {{"weights_bytes", mem.weights},          {"grads_bytes", mem.grads},
          {"optimizer_bytes", mem.optimizer},      {"activations_bytes", mem.activations},
          {"step_grads_bytes", mem.step_grads},    {"reserve_bytes", mem.reserve},
          {"weight_cache_bytes", mem.weight_cache}};  // within weights_bytes
}

}  // namespace

json plan_json(const ModelSpec& m, const Estimate& e, double train_tokens,
               const AccuracyBand* band) {
  const Plan& p = e.plan;
  const Breakdown& b = e.breakdown;
  json j = {{"plan", knobs_json(p)},
            {"plan_string", to_plan_string(p)},
            {"framework", e.framework ? json(to_string(*e.framework)) : json(nullptr)},
            {"iteration_time_s", e.iteration_time_s},
            {"tokens_per_s", e.tokens_per_s},
            {"tflops_per_gpu", e.tflops_per_gpu},
            {"mfu", e.mfu},
            {"memory_bytes_per_gpu", e.memory_bytes},
            {"memory", memory_json(e.memory)},
            {"bubble_fraction", e.bubble_fraction},
            {"exposed_comm_fraction", e.exposed_comm_fraction},
            {"breakdown",
             {{"compute_s", b.compute_s},
              {"tp_comm_s", b.tp_comm_s},
              {"cp_comm_s", b.cp_comm_s},
              {"ep_comm_s", b.ep_comm_s},
              {"host_s", b.host_s},
              {"pp_comm_s", b.pp_comm_s},
              {"dp_comm_s", b.dp_comm_s},
              {"bubble_s", b.bubble_s},
              {"optimizer_s", b.optimizer_s},
              {"offload_s", b.offload_s}}}};
  if (p.uses_host())
    j["offload"] = {{"host_memory_bytes_per_node", e.host_memory_bytes},
                    {"host_memory_limit_bytes_per_node", e.host_memory_limit_bytes},
                    {"h2d_bytes_per_gpu", e.offload_h2d_bytes},
                    {"d2h_bytes_per_gpu", e.offload_d2h_bytes}};
  if (!e.partition.empty())
    j["partition"] = {{"stages", e.partition},
                      {"balanced", e.balanced},
                      {"balanced_gain_pct", e.balanced_gain_pct}};
  if (e.simulated) {
    j["pipeline"] = {{"simulated", true},
                     {"closed_form_iteration_time_s", e.closed_form_time_s},
                     {"stage_busy_s", e.stage_busy_s},
                     {"stage_idle_s", e.stage_idle_s},
                     {"peak_microbatches_in_flight", e.peak_in_flight}};
  }
  if (train_tokens > 0) {
    const double seconds = train_tokens / e.tokens_per_s;
    j["train_days"] = seconds / kSecondsPerDay;
    j["train_gpu_hours"] = seconds * p.gpus() / kSecondsPerHour;
  }
  (void)m;
  if (band) {
    const auto [lo, hi] = band_times(e.iteration_time_s, *band);
    j["iteration_time_s_low"] = lo;
    j["iteration_time_s_high"] = hi;
    j["accuracy_band"] = {{"gpu", band->gpu},
                          {"precision", band->precision},
                          {"rows", band->rows},
                          {"sources", band->sources},
                          {"err_lo_pct", band->err_lo_pct},
                          {"err_hi_pct", band->err_hi_pct}};
  }
  return j;
}

json knobs_json(const Plan& p) {
  json out = json::object();
  for (const KnobDef& k : knob_table()) {
    const int v = k.get(p);
    if (v == kUnset)
      out[k.name] = nullptr;
    else if (k.is_integer() || k.words.front() == "0")  // numbers, and 0/1 switches
      out[k.name] = v;
    else
      out[k.name] = k.text(v);
  }
  return out;
}

json suggest_json(const RunContext& ctx, const SearchResult& r) {
  json rejections = json::object();
  for (int i = 1; i < kNumRejections; ++i)
    if (r.rejections[i] > 0) rejections[to_string(static_cast<Rejection>(i))] = r.rejections[i];
  json plans = json::array();
  for (const Estimate& e : r.top)
    plans.push_back(plan_json(*ctx.model, e, ctx.train_tokens, ctx.band(e.plan)));
  json frameworks = json::array();
  for (Framework f : r.frameworks) frameworks.push_back(to_string(f));
  return {{"schema_version", kJsonSchemaVersion},
          {"context", context_json(ctx)},
          {"plans_evaluated", r.evaluated},
          {"plans_ranked", r.rejections[int(Rejection::none)]},
          {"plans_offload_skipped", r.offload_dominated},
          {"tp_across_nodes_searched", r.tp_across_nodes_after > 0},
          {"search_time_s", r.search_time_s},
          {"simulated_candidates", r.simulated},
          {"closed_form_only_candidates", r.closed_form_only},
          {"frameworks", frameworks},
          {"rejections", rejections},
          {"plans", plans}};
}

json estimate_json(const RunContext& ctx, const Estimate& e) {
  json j = plan_json(*ctx.model, e, ctx.train_tokens, ctx.band(e.plan));
  j["schema_version"] = kJsonSchemaVersion;
  j["context"] = context_json(ctx);
  j["model_params"] = ctx.model->total_params();
  j["fits"] = e.memory_bytes <= e.memory_limit_bytes;  // false: estimate's over-memory breakdown
  j["layer"] = {{"fwd_compute_s", e.layer.fwd_compute_s}, {"bwd_compute_s", e.layer.bwd_compute_s},
                {"fwd_comm_s", e.layer.fwd_comm_s},       {"bwd_comm_s", e.layer.bwd_comm_s},
                {"fwd_host_s", e.layer.fwd_host_s},       {"bwd_host_s", e.layer.bwd_host_s}};
  json diags = json::array();
  for (const Diagnostic& d : ctx.diagnostics(e))
    diags.push_back(
        {{"id", d.id}, {"severity", d.severity}, {"message", d.message}, {"remedy", d.remedy}});
  j["diagnostics"] = diags;
  return j;
}

}  // namespace planner
