#include <cstdio>
#include <ostream>

#include "planner/format.h"
#include "planner/limits.h"
#include "planner/names.h"
#include "planner/report/report.h"
#include "planner/units.h"

namespace planner {

std::string with_commas(long long v) {
  const std::string digits = std::to_string(v < 0 ? -v : v);
  std::string out = v < 0 ? "-" : "";
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out.push_back(',');
    out.push_back(digits[i]);
  }
  return out;
}

std::string compact_list(const std::vector<int>& v) {
  std::string out;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j < v.size() && v[j] == v[i]) ++j;
    if (!out.empty()) out += ",";
    out += std::to_string(v[i]);
    if (j - i > 1) out.append(1, 'x').append(std::to_string(j - i));
    i = j;
  }
  return out;
}

std::string frameworks_line(const std::vector<Framework>& frameworks, bool ranked) {
  std::string names;
  for (Framework f : frameworks)
    names += std::string(names.empty() ? "" : " and ") + info(f).title + " " + info(f).version;
  if (frameworks.size() == 1)
    return "# for     " + names + " (--framework " + to_string(frameworks.front()) + "): " +
           (ranked ? "only plans it runs are ranked, on its execution stack"
                   : "on its execution stack") +
           "\n";
  return "# for     " + names +
         " (--framework all): each plan on its framework's stack, the best of all ranked "
         "together\n";
}

std::vector<const KnobDef*> plan_columns(const std::vector<Estimate>& plans) {
  std::vector<const KnobDef*> out;
  for (const KnobDef& k : knob_table()) {
    if (!*k.column) continue;
    bool shown = !k.optional;
    for (const Estimate& e : plans) shown = shown || k.get(e.plan) != kUnset;
    if (shown) out.push_back(&k);
  }
  return out;
}

namespace {
/// A knob column's cell: right-aligned to its width, left-aligned when the width is negative
/// (what printf's %*s did with the table's widths).
std::string knob_cell(const KnobDef& k, const std::string& text) {
  return k.width < 0 ? fmt(" {:<{}}", text, -k.width) : fmt(" {:>{}}", text, k.width);
}

/// The partitions the simulator tried for the frameworks searched.
std::string split_of(const std::vector<Framework>& frameworks) {
  bool uneven = frameworks.empty();
  for (Framework f : frameworks) uneven = uneven || info(f).uneven_stages;
  return uneven ? "even and balanced partitions" : "each plan's own layer split";
}
}  // namespace

std::string counts_line(const SearchResult& r) {
  std::string line = with_commas(r.evaluated) +
                     " plans: " + with_commas(r.rejections[int(Rejection::none)]) + " ranked";
  for (int i = 1; i < kNumRejections; ++i)
    if (r.rejections[i] > 0)
      line += ", " + with_commas(r.rejections[i]) + " " + to_string(static_cast<Rejection>(i));
  if (r.offload_dominated > 0)
    line += ", " + with_commas(r.offload_dominated) + " offload skipped (fits without)";
  return line;
}

std::string head_width_text(const ModelSpec& m) {
  return double(m.heads) * m.head_dim() != m.hidden ? fmt(" of {}", m.head_dim()) : std::string();
}

std::string mtp_text(const ModelSpec& m) {
  if (m.mtp_layers == 0) return "";
  return fmt("; {} multi-token-prediction module{} ({:.2f}B parameters more, last stage)",
             m.mtp_layers, m.mtp_layers > 1 ? "s" : "", m.mtp_params() / 1e9);
}

std::string layer_extras_text(const ModelSpec& m) {
  const LayerArch& x = m.arch;
  std::string out;
  if (x.qkv_bias) out += "; QKV bias";
  if (x.proj_bias || x.mlp_bias) out += "; linear biases";
  if (x.sandwich_norms) out += "; post-norms";
  if (x.qk_norm) out += "; query/key norms";
  if (x.sliding_window > 0)
    out += fmt("; window {} on {:.0f}% of the layers", x.sliding_window, 100 * x.local_layers);
  out += mtp_text(m);
  return out;
}

std::string attention_note(const Plan& p, const ClusterProfile& c) {
  const AttentionKernel used = attention_of(p, c);
  if (!p.attention || used == c.software.attention) return name_of(used);
  return fmt("{} (the plan's attn={}; the stack's is {})", name_of(used), name_of(used),
             name_of(c.software.attention));
}

namespace {

/// The header's inputs; `plan` (the first listed) names the attention kernel the plans run.
void print_context(std::ostream& out, const RunContext& ctx, const Plan& plan) {
  const ModelSpec& m = *ctx.model;
  const ClusterProfile& c = *ctx.cluster;
  out << fmt(
      "# planner {}\n# model   {} ({}): {:.2f}B parameters, {} layers, hidden {}, {} heads{} "
      "({} kv), ffn {}{}, vocab {}, seq {}{}\n",
      PLANNER_VERSION, m.name, ctx.model_file, m.total_params() / 1e9, m.layers, m.hidden, m.heads,
      head_width_text(m), m.kv_heads, m.ffn, m.swiglu ? " swiglu" : "", m.vocab, m.seq_len,
      layer_extras_text(m));
  for (const Component& comp : m.encoders)
    out << fmt("#         + {} {}: {} layer(s), hidden {}, {} tokens x {} per sample\n",
               to_string(comp.type), comp.name, comp.layers, comp.shape.hidden, comp.shape.seq,
               comp.shape.sequences);
  out << fmt(
      "# cluster {} ({}): {}, {} GPUs/node{}, {:.0f} GiB HBM, {:.0f} dense bf16 TFLOP/s, "
      "attention {}\n",
      c.name, ctx.cluster_file, c.gpu.name, c.gpus_per_node, topology_note(c),
      c.gpu.hbm_bytes / kGiB, c.gpu.peak_flops[int(Dtype::bf16)] / kTera, attention_note(plan, c));
  out << fmt("# job     {}, global batch {} sequences ({} tokens)\n", ctx.gpus_text(),
             ctx.global_batch,
             with_commas(static_cast<long long>(ctx.global_batch) * m.seq_len).c_str());
}

}  // namespace

void print_suggest_table(std::ostream& out, const RunContext& ctx, const SearchResult& r) {
  print_context(out, ctx, r.top.empty() ? Plan{} : r.top.front().plan);
  if (!r.frameworks.empty()) out << frameworks_line(r.frameworks, true);
  out << fmt("# {} in {:.3f} s\n", counts_line(r), r.search_time_s);
  if (r.tp_across_nodes_after > 0)
    out << fmt(
        "# TP across nodes searched too: no plan ran with TP inside one NVLink domain of {} "
        "GPUs\n",
        r.tp_across_nodes_after);
  if (r.simulated > 0)
    out << fmt(
        "# best {} re-ranked by the pipeline simulator ({}); closed form within {:.1f}% "
        "of it\n",
        r.simulated, split_of(r.frameworks), r.max_closed_form_gap_pct);
  if (r.closed_form_only > 0)
    out << fmt(
        "# {} more by the closed form alone: the search's simulation budget ({:.0e} tasks) "
        "was spent\n",
        r.closed_form_only, limits::kSearchSimulatedTasks);
  if (ctx.distinct_left_out >= 0)
    out << fmt(
        "# --distinct: {} plans left out, each within {:g}% of a better-ranked one that differs "
        "only in vpp\n",
        ctx.distinct_left_out, 100 * kDistinctTolerance);
  out << "#\n";
  const std::vector<const KnobDef*> columns = plan_columns(r.top);
  out << "# rank";
  const bool gpus_column = ctx.gpus_min > 0 && ctx.gpus_min != ctx.gpus;
  if (gpus_column) out << "   gpus";
  for (const KnobDef* k : columns) out << knob_cell(*k, k->column);
  out << "   iter_s";
  const bool bands = ctx.model_bands() != nullptr;
  if (bands) out << "    band%";
  out << " TFLOP/s   MFU%   mem_GiB bubble% comm% layers/stage";
  if (ctx.train_tokens > 0) out << "    days GPU-hours";
  const bool several = r.frameworks.size() > 1;
  if (several) out << "  framework";
  out << "  plan\n";
  int rank = 0;
  for (const Estimate& e : r.top) {
    const Plan& p = e.plan;
    out << fmt("  {:4}", ++rank);
    if (gpus_column) out << fmt(" {:>6}", p.gpus());
    for (const KnobDef* k : columns) out << knob_cell(*k, k->text(k->get(p)));
    out << fmt(" {:>8.3f}", e.iteration_time_s);
    if (bands) {
      const AccuracyBand* b = ctx.band(p);
      std::string cell = b ? band_text(*b) : "-";
      std::erase(cell, '%');  // "-7/+5": the header says percent
      out << fmt(" {:>8}", cell);
    }
    out << fmt(" {:>7.1f} {:>6.1f} {:>9.1f} {:>7.1f} {:>5.1f}", e.tflops_per_gpu, 100 * e.mfu,
               e.memory_bytes / kGiB, 100 * e.bubble_fraction, 100 * e.exposed_comm_fraction);
    out << fmt(" {:<12}", compact_list(e.partition));
    if (ctx.train_tokens > 0) {
      const double seconds = ctx.train_tokens / e.tokens_per_s;
      out << fmt(" {:>7.1f} {:>9.3g}", seconds / kSecondsPerDay,
                 seconds * p.gpus() / kSecondsPerHour);
    }
    if (several) out << fmt("  {:<9}", e.framework ? to_string(*e.framework) : "");
    out << "  --plan \"" << to_plan_string(p) << "\"";
    // The search ran with TP across nodes allowed: estimate, emit and compare need the flag for
    // a plan whose TP group leaves the NVLink domain or does not divide it (check_plan's
    // tp_in_domain); every line carries it, so each runs as copied (as the emit line does).
    if (r.tp_across_nodes_after > 0) out << " --tp-across-nodes";
    out << "\n";
  }
}

void print_suggest_csv(std::ostream& out, const SearchResult& r) {
  out << "rank";
  for (const KnobDef& k : knob_table()) out << "," << k.name;
  out << ",iteration_time_s,tokens_per_s,tflops_per_gpu,mfu,memory_bytes_per_gpu,compute_s,"
         "tp_comm_s,cp_comm_s,ep_comm_s,host_s,pp_comm_s,dp_comm_s,bubble_s,optimizer_s,"
         "offload_s,framework,plan\n";
  int rank = 0;
  for (const Estimate& e : r.top) {
    const Plan& p = e.plan;
    const Breakdown& b = e.breakdown;
    out << ++rank;
    for (const KnobDef& k : knob_table()) out << "," << k.text(k.get(p));
    out << fmt(",{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},"
               "{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},{:.6g},",
               e.iteration_time_s, e.tokens_per_s, e.tflops_per_gpu, e.mfu, e.memory_bytes,
               b.compute_s, b.tp_comm_s, b.cp_comm_s, b.ep_comm_s, b.host_s, b.pp_comm_s,
               b.dp_comm_s, b.bubble_s, b.optimizer_s, b.offload_s)
        << (e.framework ? to_string(*e.framework) : "") << ",\"" << to_plan_string(p) << "\"\n";
  }
}

}  // namespace planner
