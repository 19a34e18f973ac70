#include "planner/report/html.h"

#include <cstdio>

#include "planner/format.h"
#include "planner/report/svg.h"
#include "planner/units.h"

namespace planner {
namespace {

const char* kStyle = R"(
body { font-family: "DejaVu Sans", Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 1200px;
       color: #222; padding: 0 1em; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; border-bottom: 1px solid #ccc; padding-bottom: .2em; }
table { border-collapse: collapse; margin: .5em 0 1em; font-size: .9em; }
th, td { padding: .25em .6em; border-bottom: 1px solid #e5e5e5; text-align: right; }
th { background: #f4f4f4; } td.l, th.l { text-align: left; }
table.kv td { text-align: left; } .scroll { overflow-x: auto; }
td.plan { text-align: left; font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: .8em;
          white-space: nowrap; }
tr.top td { background: #fff4e5; font-weight: bold; }
code, pre { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: .85em; }
pre { background: #f6f8fa; padding: .7em; overflow-x: auto; white-space: pre-wrap; word-break: break-all; }
li.warning { color: #a04000; } li.info { color: #333; } .remedy { color: #555; }
figure { margin: 1em 0; } footer { color: #777; font-size: .8em; margin-top: 3em; }
)";

std::string head(const std::string& title) {
  return "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>" +
         html_escape(title) + "</title>\n<style>" + kStyle + "</style>\n</head>\n<body>\n<h1>" +
         html_escape(title) + "</h1>\n";
}

std::string foot() {
  return std::string("<footer>written by planner ") + PLANNER_VERSION +
         "; predictions of an analytic cost model and a pipeline simulator, not measurements"
         "</footer>\n</body>\n</html>\n";
}

std::string row(const std::vector<std::string>& cells, bool header = false,
                const std::string& cls = "") {
  std::string out = cls.empty() ? "<tr>" : "<tr class=\"" + cls + "\">";
  for (size_t i = 0; i < cells.size(); ++i) {
    const char* tag = header ? "th" : "td";
    const char* cls = i == 0                             ? " class=\"l\""
                      : cells[i].rfind("--plan", 0) == 0 ? " class=\"plan\""
                                                         : "";
    out += std::string("<") + tag + cls + ">" + html_escape(cells[i]) + "</" + tag + ">";
  }
  return out + "</tr>\n";
}

}  // namespace

std::string html_table(const std::vector<std::vector<std::string>>& rows, int highlight) {
  std::string out = "<div class=\"scroll\"><table>\n";
  for (size_t i = 0; i < rows.size(); ++i)
    out += row(rows[i], i == 0, int(i) - 1 == highlight && i > 0 ? "top" : "");
  return out + "</table></div>\n";
}

std::string html_page(const std::string& title, const std::string& body) {
  return head(title) + body + foot();
}

namespace {

std::string inputs_section(const RunContext& ctx, const std::string& extra_row) {
  const ModelSpec& m = *ctx.model;
  const ClusterProfile& c = *ctx.cluster;
  std::string out = "<section id=\"inputs\">\n<h2>Inputs</h2>\n<table class=\"kv\">\n";
  out += row({"model", fmt("{} ({}): {:.2f}B parameters, {} layers, hidden {}, {} heads{} ({} kv), "
                           "ffn {}{}, vocab {}, seq {}{}",
                           m.name, ctx.model_file, m.total_params() / 1e9, m.layers, m.hidden,
                           m.heads, head_width_text(m), m.kv_heads, m.ffn, m.swiglu ? " gated" : "",
                           m.vocab, m.seq_len, layer_extras_text(m))});
  for (const Component& comp : m.encoders)
    out += row({"  encoder", fmt("{} {}: {} layer(s), hidden {}", to_string(comp.type), comp.name,
                                 comp.layers, comp.shape.hidden)});
  out += row(
      {"cluster", fmt("{} ({}): {}, {} GPUs per node{}, {:.0f} GiB HBM, {:.0f} dense bf16 TFLOP/s",
                      c.name, ctx.cluster_file, c.gpu.name, c.gpus_per_node, topology_note(c),
                      c.gpu.hbm_bytes / kGiB, c.gpu.peak_flops[int(Dtype::bf16)] / kTera)});
  out += row(
      {"job", fmt("{}, global batch {} sequences ({} tokens)", ctx.gpus_text(), ctx.global_batch,
                  with_commas(static_cast<long long>(ctx.global_batch) * m.seq_len).c_str())});
  if (ctx.train_tokens > 0)
    out += row({"training", with_commas(static_cast<long long>(ctx.train_tokens)) + " tokens"});
  if (!extra_row.empty()) out += row({"search", extra_row});
  return out + "</table>\n</section>\n";
}

std::string plans_table(const std::vector<Estimate>& plans, double train_tokens) {
  std::string out = "<div class=\"scroll\">\n<table id=\"plans\">\n";
  const std::vector<const KnobDef*> columns = plan_columns(plans);
  std::vector<std::string> header = {"rank"};
  for (const KnobDef* k : columns) header.push_back(k->column);
  header.insert(header.end(), {"iter s", "TFLOP/s/GPU", "MFU %", "mem GiB", "bubble %", "comm %",
                               "layers/stage"});
  if (train_tokens > 0) header.insert(header.end(), {"days", "GPU-hours"});
  header.insert(header.end(), {"framework", "plan"});
  out += row(header, true);
  int rank = 0;
  for (const Estimate& e : plans) {
    const Plan& p = e.plan;
    std::vector<std::string> cells = {std::to_string(++rank)};
    for (const KnobDef* k : columns) cells.push_back(k->text(k->get(p)));
    cells.insert(cells.end(),
                 {fmt("{:.3f}", e.iteration_time_s), fmt("{:.1f}", e.tflops_per_gpu),
                  fmt("{:.1f}", 100 * e.mfu), fmt("{:.1f}", e.memory_bytes / kGiB),
                  fmt("{:.1f}", 100 * e.bubble_fraction),
                  fmt("{:.1f}", 100 * e.exposed_comm_fraction), compact_list(e.partition)});
    if (train_tokens > 0) {
      const double seconds = train_tokens / e.tokens_per_s;
      cells.insert(cells.end(), {fmt("{:.1f}", seconds / kSecondsPerDay),
                                 fmt("{:.3g}", seconds * p.gpus() / kSecondsPerHour)});
    }
    cells.push_back(e.framework ? to_string(*e.framework) : "");
    cells.push_back("--plan \"" + to_plan_string(p) + "\"");
    out += row(cells, false, rank == 1 ? "top" : "");
  }
  return out + "</table>\n</div>\n";
}

std::string breakdown_table(const std::vector<Estimate>& plans) {
  std::string out = "<div class=\"scroll\">\n<table id=\"breakdown\">\n";
  out += row({"rank", "iter s", "compute", "TP comm", "CP comm", "EP comm", "host launch",
              "PP comm", "DP comm", "bubble", "optimizer", "offload", "weights GiB", "grads GiB",
              "optimizer GiB", "activations GiB", "reserve GiB"},
             true);
  int rank = 0;
  for (const Estimate& e : plans) {
    const Breakdown& b = e.breakdown;
    const double t = e.iteration_time_s;
    auto share = [&](double s) { return fmt("{:.3f} s ({:.1f}%)", s, t > 0 ? 100 * s / t : 0.0); };
    const MemoryBreakdown& m = e.memory;
    ++rank;
    out += row({std::to_string(rank), fmt("{:.3f}", t), share(b.compute_s), share(b.tp_comm_s),
                share(b.cp_comm_s), share(b.ep_comm_s), share(b.host_s), share(b.pp_comm_s),
                share(b.dp_comm_s), share(b.bubble_s), share(b.optimizer_s), share(b.offload_s),
                fmt("{:.2f}", m.weights / kGiB), fmt("{:.2f}", m.grads / kGiB),
                fmt("{:.2f}", m.optimizer / kGiB), fmt("{:.2f}", m.activations / kGiB),
                fmt("{:.2f}", m.reserve / kGiB)},
               false, rank == 1 ? "top" : "");
  }
  return out + "</table>\n</div>\n";
}

std::string diagnostics_section(const RunContext& ctx, const Estimate& e) {
  std::string out = "<section id=\"diagnostics\">\n<h2>Diagnostics</h2>\n<p>of <code>--plan \"" +
                    html_escape(to_plan_string(e.plan)) + "\"</code></p>\n<ul>\n";
  for (const Diagnostic& d : ctx.diagnostics(e))
    out += "<li class=\"" + html_escape(d.severity) + "\"><b>[" + html_escape(d.severity) + "] " +
           html_escape(d.id) + "</b>: " + html_escape(d.message) +
           "<br><span class=\"remedy\">&rarr; " + html_escape(d.remedy) + "</span></li>\n";
  return out + "</ul>\n</section>\n";
}

std::string launch_section(const std::vector<LaunchCommand>& launch) {
  std::string out = "<section id=\"launch\">\n<h2>Launch commands</h2>\n";
  for (const LaunchCommand& l : launch) {
    out += "<h3>" + html_escape(l.framework) + "</h3>\n";
    if (l.rank == 0) {
      out += "<p>" + html_escape(l.framework) +
             " can run none of the listed plans; the first: " + html_escape(l.refusal) +
             ". <code>planner suggest ... --framework " + html_escape(l.framework) +
             "</code> ranks only the plans it can run.</p>\n";
      continue;
    }
    if (l.rank > 1)
      out += "<p>plan 1 is not expressible (" + html_escape(l.refusal) + "); plan " +
             std::to_string(l.rank) + " is:</p>\n";
    out += "<pre><code>" + html_escape(l.command) + "</code></pre>\n";
  }
  return out + "</section>\n";
}

std::string figure(const std::string& id, const std::string& svg, const std::string& caption) {
  return "<figure id=\"" + id + "\">\n" + svg + "<figcaption>" + html_escape(caption) +
         "</figcaption>\n</figure>\n";
}

}  // namespace

std::string html_escape(const std::string& text) { return svg::escape(text); }

std::string suggest_html(const RunContext& ctx, const SearchResult& r,
                         const std::vector<LaunchCommand>& launch) {
  std::string out = head("planner suggest: " + ctx.model->name + " on " + std::to_string(ctx.gpus) +
                         " x " + ctx.cluster->gpu.name);
  out += inputs_section(ctx, counts_line(r) + fmt(" in {:.3f} s", r.search_time_s));
  out += "<section id=\"top-plans\">\n<h2>Top plans</h2>\n" + plans_table(r.top, ctx.train_tokens);
  out +=
      figure("plot-search", suggest_plot_svg(ctx, r),
             "Model TFLOP/s per GPU against memory per GPU for every feasible plan (closed form), "
             "the Pareto front and the listed plans (simulated).");
  out += "</section>\n<section id=\"breakdowns\">\n<h2>Breakdowns</h2>\n" + breakdown_table(r.top);
  if (!r.top.empty())
    out += figure("plot-top", estimate_plot_svg(ctx, r.top.front()),
                  "The top plan: time on the critical path and memory per GPU against capacity.");
  out += "</section>\n";
  if (!r.top.empty()) out += diagnostics_section(ctx, r.top.front());
  return out + launch_section(launch) + foot();
}

std::string estimate_html(const RunContext& ctx, const Estimate& e,
                          const std::vector<LaunchCommand>& launch) {
  std::string out = head("planner estimate: " + ctx.model->name + " on " +
                         std::to_string(e.plan.gpus()) + " x " + ctx.cluster->gpu.name);
  out += inputs_section(ctx, "");
  out += "<section id=\"top-plans\">\n<h2>Plan</h2>\n" + plans_table({e}, ctx.train_tokens);
  out += "</section>\n<section id=\"breakdowns\">\n<h2>Breakdown</h2>\n" + breakdown_table({e});
  const LayerCompute& lc = e.layer_compute;
  out += "<table id=\"layer\">\n" +
         row({"one layer, one micro-batch, one rank", "compute ms", "comm ms", "host wait ms",
              "GEMMs ms", "attention ms", "element-wise ms"},
             true);
  out += row({"forward", fmt("{:.3f}", e.layer.fwd_compute_s / kMs),
              fmt("{:.3f}", e.layer.fwd_comm_s / kMs), fmt("{:.3f}", e.layer.fwd_host_s / kMs),
              fmt("{:.3f}", lc.fwd_gemm_s / kMs), fmt("{:.3f}", lc.fwd_attn_s / kMs),
              fmt("{:.3f}", lc.fwd_elementwise_s / kMs)});
  out += row({"backward", fmt("{:.3f}", e.layer.bwd_compute_s / kMs),
              fmt("{:.3f}", e.layer.bwd_comm_s / kMs), fmt("{:.3f}", e.layer.bwd_host_s / kMs),
              fmt("{:.3f}", lc.bwd_gemm_s / kMs), fmt("{:.3f}", lc.bwd_attn_s / kMs),
              fmt("{:.3f}", lc.bwd_elementwise_s / kMs)});
  out += "</table>\n";
  out += figure("plot-estimate", estimate_plot_svg(ctx, e),
                "Time on the critical path and memory per GPU against capacity.");
  out += "</section>\n" + diagnostics_section(ctx, e);
  return out + launch_section(launch) + foot();
}

}  // namespace planner
