// The two plots: suggest's throughput against memory, estimate's time and memory bars.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "planner/format.h"
#include "planner/report/svg.h"
#include "planner/units.h"

namespace planner {
namespace {

using svg::Canvas;

const char* kPointColour = "#7f9fbf";
const char* kFrontColour = "#E69F00";
const char* kTopColour = "#D55E00";

struct LegendItem {
  std::string label;
  std::string swatch;  ///< markup drawn at the item's origin, via a translate group
};

void legend(Canvas& c, double x, double y, const std::vector<LegendItem>& items) {
  for (const LegendItem& it : items) {
    c.raw("<g transform=\"translate(" + fmt("{:.1f},{:.1f}", x, y) + ")\">" + it.swatch + "</g>\n");
    c.text(x + 22, y + 4, it.label, 11);
    y += 20;
  }
}

double memory_limit_bytes(const RunContext& ctx, const SearchResult& r) {
  if (!r.top.empty() && r.top.front().memory_limit_bytes > 0)
    return r.top.front().memory_limit_bytes;
  return ctx.cluster->gpu.hbm_bytes;
}

/// Sampled feasible points, one per pixel (thousands of plans share a few hundred pixels).
void draw_points(Canvas& c, const svg::Axes& a, const SearchResult& r) {
  std::set<std::pair<int, int>> drawn;
  for (const PlotPoint& p : r.feasible.points()) {
    const double x = a.px(p[0] / kGiB), y = a.py(p[1]);
    if (!drawn.insert({int(std::lround(x)), int(std::lround(y))}).second) continue;
    c.circle(x, y, 2.5, kPointColour, "fill-opacity=\"0.55\"");
  }
}

/// The front as a staircase: within a memory budget the best throughput is the last step below.
void draw_front(Canvas& c, const svg::Axes& a, const std::vector<PlotPoint>& front,
                double limit_GiB) {
  if (front.empty()) return;
  std::vector<std::pair<double, double>> steps;
  for (size_t i = 0; i < front.size(); ++i) {
    const double x = a.px(front[i][0] / kGiB), y = a.py(front[i][1]);
    if (i > 0) steps.push_back({x, steps.back().second});
    steps.push_back({x, y});
  }
  steps.push_back(
      {std::max(steps.back().first, a.px(std::min(limit_GiB, a.x_max))), steps.back().second});
  c.polyline(steps, kFrontColour, 2);
  for (const PlotPoint& p : front) c.circle(a.px(p[0] / kGiB), a.py(p[1]), 3.5, kFrontColour);
}

void draw_listed(Canvas& c, const svg::Axes& a, const SearchResult& r) {
  for (size_t i = r.top.size(); i-- > 0;) {  // the top plan last, on top
    const Estimate& e = r.top[i];
    const double x = a.px(e.memory_bytes / kGiB), y = a.py(e.tflops_per_gpu);
    if (i == 0) {
      c.circle(x, y, 7, kTopColour, "stroke=\"#ffffff\" stroke-width=\"1.5\"");
      c.text(x + 10, y - 8, "1", 12, "start",
             "font-weight=\"bold\" fill=\"" + std::string(kTopColour) + "\"");
    } else {
      c.circle(x, y, 5, "none", "stroke=\"#222222\" stroke-width=\"1.2\"");
    }
  }
}

svg::Axes suggest_axes(const SearchResult& r, double limit_GiB, double width, double height) {
  double x_max = limit_GiB, y_max = 1;
  for (const PlotPoint& p : r.feasible.points())
    x_max = std::max(x_max, p[0] / kGiB), y_max = std::max(y_max, p[1]);
  for (const PlotPoint& p : r.feasible.front())
    x_max = std::max(x_max, p[0] / kGiB), y_max = std::max(y_max, p[1]);
  for (const Estimate& e : r.top)
    x_max = std::max(x_max, e.memory_bytes / kGiB), y_max = std::max(y_max, e.tflops_per_gpu);
  return {75, 62, width - 215, height - 96, 0, x_max * 1.05, 0, y_max * 1.1};
}

}  // namespace

std::string suggest_plot_svg(const RunContext& ctx, const SearchResult& r) {
  const double width = 820, height = 540;
  Canvas c(width, height);
  const double limit_GiB = memory_limit_bytes(ctx, r) / kGiB;
  const svg::Axes a = suggest_axes(r, limit_GiB, width, height);
  c.text(20, 24,
         fmt("{} on {} x {}, global batch {}", ctx.model->name, ctx.gpus, ctx.cluster->gpu.name,
             ctx.global_batch),
         15, "start", "font-weight=\"bold\"");
  c.text(20, 44,
         with_commas(r.rejections[int(Rejection::none)]) + " feasible plans (" +
             with_commas(static_cast<long long>(r.feasible.points().size())) +
             " sampled), throughput against memory per GPU",
         12);
  a.draw(c, "memory per GPU (GiB)", "model TFLOP/s per GPU");
  draw_points(c, a, r);
  draw_front(c, a, r.feasible.front(), limit_GiB);
  c.line(a.px(limit_GiB), a.top, a.px(limit_GiB), a.bottom, kTopColour, 1.5,
         "stroke-dasharray=\"6,4\"");
  c.text(a.px(limit_GiB) - 4, a.top + 14, fmt("limit {:.0f} GiB", limit_GiB), 11, "end",
         "fill=\"" + std::string(kTopColour) + "\"");
  draw_listed(c, a, r);
  const std::string top = std::string(kTopColour);
  legend(
      c, a.right + 20, a.top + 10,
      {{"feasible plan (closed form)",
        "<circle r=\"3\" cx=\"8\" fill=\"" + std::string(kPointColour) + "\"/>"},
       {"Pareto front", "<line x1=\"0\" x2=\"16\" stroke=\"" + std::string(kFrontColour) +
                            "\" stroke-width=\"2\"/>"},
       {"listed plan (simulated)", "<circle r=\"5\" cx=\"8\" fill=\"none\" stroke=\"#222222\"/>"},
       {"top plan (rank 1)", "<circle r=\"6\" cx=\"8\" fill=\"" + top + "\"/>"},
       {"memory limit",
        "<line x1=\"0\" x2=\"16\" stroke=\"" + top + "\" stroke-dasharray=\"4,3\"/>"}});
  if (!r.top.empty()) {
    const Estimate& e = r.top.front();
    c.text(20, height - 30,
           fmt("rank 1: {:.1f} TFLOP/s per GPU, {:.1f} GiB per GPU (simulated)", e.tflops_per_gpu,
               e.memory_bytes / kGiB),
           11, "start", "font-weight=\"bold\"");
    c.text(20, height - 13, "--plan \"" + to_plan_string(e.plan) + "\"", 11);
  }
  return c.str();
}

namespace {

struct Segment {
  std::string label;
  double value;
};

/// One horizontal stacked bar on [0, x_max] with its tick axis, its legend and a marker line.
void stacked_bar(Canvas& c, double y, const std::string& title, const std::vector<Segment>& parts,
                 double x_max, const std::string& unit, double unit_scale) {
  const double left = 150, right = 790, bar_h = 34;
  auto px = [&](double v) { return left + v / x_max * (right - left); };
  c.text(left - 10, y + bar_h / 2 + 5, title, 13, "end", "font-weight=\"bold\"");
  double at = 0, total = 0;
  for (const Segment& s : parts) total += s.value;
  const size_t columns = parts.size() > 9 ? 4 : 3;  // the legend in at most three rows
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string colour = svg::palette()[i % svg::palette().size()];
    c.rect(px(at), y, px(at + parts[i].value) - px(at), bar_h, colour,
           "stroke=\"#ffffff\" stroke-width=\"0.5\"");
    at += parts[i].value;
    const double lx = 20 + double(i % columns) * (780.0 / columns),
                 ly = y + bar_h + 42 + double(i / columns) * 18;
    c.rect(lx, ly - 10, 12, 12, colour);
    c.text(lx + 18, ly,
           fmt("{} {:.3g} {} ({:.1f}%)", parts[i].label, parts[i].value / unit_scale, unit,
               total > 0 ? 100 * parts[i].value / total : 0.0),
           11);
  }
  for (double t : svg::nice_ticks(0, x_max / unit_scale)) {
    if (t * unit_scale > x_max) continue;
    c.line(px(t * unit_scale), y + bar_h, px(t * unit_scale), y + bar_h + 5, "#333333");
    c.text(px(t * unit_scale), y + bar_h + 17, svg::tick_label(t), 10, "middle");
  }
  c.line(left, y + bar_h, right, y + bar_h, "#333333");
}

}  // namespace

std::string estimate_plot_svg(const RunContext& ctx, const Estimate& e) {
  Canvas c(820, 345);
  c.text(20, 24,
         fmt("{} on {} x {}: {:.3f} s per iteration, {:.1f} TFLOP/s per GPU (MFU {:.1f}%)",
             ctx.model->name, e.plan.gpus(), ctx.cluster->gpu.name, e.iteration_time_s,
             e.tflops_per_gpu, 100 * e.mfu),
         14, "start", "font-weight=\"bold\"");
  c.text(20, 43, "--plan \"" + to_plan_string(e.plan) + "\"", 11);
  const Breakdown& b = e.breakdown;
  // In the breakdown's order; the terms a plan cannot have left out.
  std::vector<Segment> time = {{"compute", b.compute_s}, {"TP comm", b.tp_comm_s}};
  if (e.plan.ep > 1 || e.plan.etp > 1) time.push_back({"EP comm", b.ep_comm_s});
  if (e.plan.cp > 1) time.push_back({"CP comm", b.cp_comm_s});
  if (b.host_s > 0) time.push_back({"host launch", b.host_s});
  time.insert(time.end(), {{"PP comm", b.pp_comm_s},
                           {"DP comm", b.dp_comm_s},
                           {"bubble", b.bubble_s},
                           {"optimizer", b.optimizer_s}});
  if (e.plan.uses_host()) time.push_back({"offload", b.offload_s});
  double time_total = 0;
  for (const Segment& s : time) time_total += s.value;
  stacked_bar(c, 70, "time (s)", time, std::max(time_total, e.iteration_time_s) * 1.02, "s", 1.0);
  const MemoryBreakdown& m = e.memory;
  const std::vector<Segment> memory = {{"weights", m.weights},
                                       {"gradients", m.grads},
                                       {"optimizer", m.optimizer},
                                       {"activations", m.activations},
                                       {"reserve", m.reserve}};
  const double limit = e.memory_limit_bytes > 0 ? e.memory_limit_bytes : ctx.cluster->gpu.hbm_bytes;
  const double x_max = std::max(limit, m.total()) * 1.05;
  const double y = 220;
  stacked_bar(c, y, "memory (GiB)", memory, x_max, "GiB", kGiB);
  const double x = 150 + limit / x_max * (790 - 150);
  c.line(x, y - 10, x, y + 44, kTopColour, 2, "stroke-dasharray=\"5,3\"");
  c.text(x - 4, y - 14,
         fmt("capacity {:.1f} GiB ({:.1f} GiB used)", limit / kGiB, m.total() / kGiB), 11, "end",
         "fill=\"" + std::string(kTopColour) + "\"");
  return c.str();
}

}  // namespace planner
