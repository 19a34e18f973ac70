// `planner compare`: one model and plan across clusters, or one cluster under changed knobs.
#include <algorithm>
#include <cstdio>
#include <iostream>
#include <limits>

#include "cli/commands.h"
#include "cli/outputs.h"
#include "cli/vary.h"
#include "planner/error.h"
#include "planner/format.h"
#include "planner/io/cluster_io.h"
#include "planner/io/json.h"
#include "planner/limits.h"
#include "planner/report/report.h"
#include "planner/units.h"

namespace planner::cli {
namespace {

struct CompareArgs : LimitArgs {
  std::string model, gpus, nodes, plan, dtype, format = "table";
  std::vector<std::string> clusters, vary;
  int global_batch = 0;
  int seq_len = 0;
  int mtp_layers = -1;  ///< --mtp-layers (-1: the model file's)
};

struct Column {
  Variant v;
  Estimate e;
};

/// A row of the table and a key of the JSON: value of an estimate in display units.
struct Metric {
  const char* label;
  const char* key;
  double (*get)(const Estimate&);
  fmt::format_string<double> format;  ///< checked at compile time, like every format
};

const Metric kMetrics[] = {
    {"iteration time s", "iteration_time_s", [](const Estimate& e) { return e.iteration_time_s; },
     "{:.4f}"},
    {"tokens/s", "tokens_per_s", [](const Estimate& e) { return e.tokens_per_s; }, "{:.0f}"},
    {"TFLOP/s per GPU", "tflops_per_gpu", [](const Estimate& e) { return e.tflops_per_gpu; },
     "{:.1f}"},
    {"MFU %", "mfu", [](const Estimate& e) { return 100 * e.mfu; }, "{:.1f}"},
    {"memory GiB/GPU", "memory_bytes_per_gpu",
     [](const Estimate& e) { return e.memory_bytes / kGiB; }, "{:.2f}"},
    {"compute s", "compute_s", [](const Estimate& e) { return e.breakdown.compute_s; }, "{:.4f}"},
    {"TP comm s", "tp_comm_s", [](const Estimate& e) { return e.breakdown.tp_comm_s; }, "{:.4f}"},
    {"CP comm s", "cp_comm_s", [](const Estimate& e) { return e.breakdown.cp_comm_s; }, "{:.4f}"},
    {"EP comm s", "ep_comm_s", [](const Estimate& e) { return e.breakdown.ep_comm_s; }, "{:.4f}"},
    {"host launch s", "host_s", [](const Estimate& e) { return e.breakdown.host_s; }, "{:.4f}"},
    {"PP comm s", "pp_comm_s", [](const Estimate& e) { return e.breakdown.pp_comm_s; }, "{:.4f}"},
    {"DP comm s", "dp_comm_s", [](const Estimate& e) { return e.breakdown.dp_comm_s; }, "{:.4f}"},
    {"bubble s", "bubble_s", [](const Estimate& e) { return e.breakdown.bubble_s; }, "{:.4f}"},
    {"optimizer s", "optimizer_s", [](const Estimate& e) { return e.breakdown.optimizer_s; },
     "{:.4f}"},
    {"offload s", "offload_s", [](const Estimate& e) { return e.breakdown.offload_s; }, "{:.4f}"},
};

/// Percent change of `v` against `base`; NaN when the baseline is zero and `v` is not.
double diff_pct(double v, double base) {
  if (base == 0) return v == 0 ? 0.0 : std::numeric_limits<double>::quiet_NaN();
  return 100.0 * (v - base) / base;
}

std::string cell(const Metric& m, const Column& c, const Column& base, bool is_base) {
  if (!c.e.ok()) return "infeasible";
  std::string out = fmt(m.format, m.get(c.e));
  if (is_base || !base.e.ok()) return out;
  const double d = diff_pct(m.get(c.e), m.get(base.e));
  if (d != d) return out + " (new)";
  return out + fmt(" ({:+.1f}%)", d);
}

/// Rows of a label and cells, each column as wide as its widest cell plus two; no trailing blanks.
std::string columns_text(
    const std::vector<std::pair<std::string, std::vector<std::string>>>& rows) {
  std::vector<size_t> width;
  for (const auto& row : rows)
    for (size_t i = 0; i < row.second.size(); ++i) {
      if (width.size() <= i) width.push_back(0);
      width[i] = std::max(width[i], row.second[i].size() + 2);
    }
  std::string out;
  for (const auto& [label, cells] : rows) {
    std::string text = label + std::string(label.size() < 18 ? 18 - label.size() : 1, ' ');
    for (size_t i = 0; i < cells.size(); ++i)
      text += cells[i] + std::string(width[i] - cells[i].size(), ' ');
    while (!text.empty() && text.back() == ' ') text.pop_back();
    out += text + "\n";
  }
  return out;
}

void print_table(std::ostream& out, const Inputs& in, const std::vector<Column>& cols) {
  out << fmt("# planner {} compare\n# model   {} ({}): {:.2f}B parameters, seq {}{}\n",
             PLANNER_VERSION, in.model.name, in.model_file, in.model.total_params() / 1e9,
             in.model.seq_len, mtp_text(in.model));
  for (size_t i = 0; i < cols.size(); ++i) {
    const Column& c = cols[i];
    out << "# [" << i + 1 << "] " << c.v.label << ": " << c.v.cluster.name << " ("
        << c.v.cluster_file << "), " << c.v.cluster.gpu.name << ", --plan \""
        << to_plan_string(c.v.plan) << "\""
        << (c.e.framework ? std::string(", ") + to_string(*c.e.framework) : std::string()) << "\n";
  }
  out << "# differences in % against [1]\n#\n";
  std::vector<std::pair<std::string, std::vector<std::string>>> rows(1);
  for (size_t i = 0; i < cols.size(); ++i) {
    const std::string head = "[" + std::to_string(i + 1) + "] " + cols[i].v.label;
    rows[0].second.push_back(head.size() > 40 ? head.substr(0, 37) + "..." : head);
  }
  for (const Metric& m : kMetrics) {
    rows.push_back({m.label, {}});
    for (size_t i = 0; i < cols.size(); ++i)
      rows.back().second.push_back(cell(m, cols[i], cols[0], i == 0));
  }
  out << columns_text(rows);
  for (size_t i = 0; i < cols.size(); ++i)
    if (!cols[i].e.ok())
      out << "# [" << i + 1 << "] infeasible: " << rejection_message(cols[i].e) << "\n";
}

nlohmann::json to_json(const Inputs& in, const std::vector<Column>& cols) {
  nlohmann::json columns = nlohmann::json::array();
  for (const Column& c : cols) {
    Estimate planned;  // an infeasible column still reports its plan
    planned.plan = c.v.plan;
    nlohmann::json j = plan_json(in.model, c.e.ok() ? c.e : planned, 0);
    if (!c.e.ok()) j = {{"plan", j["plan"]}};
    j["label"] = c.v.label;
    j["cluster"] = {
        {"file", c.v.cluster_file}, {"name", c.v.cluster.name}, {"gpu", c.v.cluster.gpu.name}};
    j["plan_string"] = to_plan_string(c.v.plan);
    j["feasible"] = c.e.ok();
    if (!c.e.ok()) j["reason"] = rejection_message(c.e);
    if (c.e.ok() && cols[0].e.ok()) {
      nlohmann::json d = nlohmann::json::object();
      for (const Metric& m : kMetrics) {
        const double pct = diff_pct(m.get(c.e), m.get(cols[0].e));
        d[m.key] = pct == pct ? nlohmann::json(pct) : nlohmann::json(nullptr);
      }
      j["diff_pct"] = d;
    }
    columns.push_back(j);
  }
  return {
      {"schema_version", kJsonSchemaVersion},
      {"context",
       {{"planner_version", PLANNER_VERSION},
        {"model",
         {{"file", in.model_file}, {"name", in.model.name}, {"params", in.model.total_params()}}},
        {"seq_len", in.model.seq_len}}},
      {"baseline", 0},
      {"columns", columns}};
}

std::vector<Variant> variants(const CompareArgs& a, const Inputs& in, const Plan& plan) {
  std::vector<Variant> out;
  for (size_t i = 0; i < a.clusters.size(); ++i) {
    const std::string file =
        i == 0 ? in.cluster_file : resolve_input(a.clusters[i], "hw_profiles", "--cluster");
    Variant v{"", file, i == 0 ? in.cluster : io::load_cluster(file), plan, std::nullopt};
    v.label = v.cluster.name;
    out.push_back(std::move(v));
  }
  for (const std::string& text : a.vary) out.push_back(apply_vary(out.front(), text));
  return out;
}

int run_compare(const CompareArgs& a) {
  if (a.clusters.size() + a.vary.size() < 2)
    throw InputError("", 0, "--vary",
                     "compare needs two columns or more: --cluster twice or more, or --vary");
  if (a.clusters.size() + a.vary.size() > limits::kCompareColumns)
    throw InputError("", 0, "--vary",
                     std::to_string(a.clusters.size() + a.vary.size()) +
                         " columns (--cluster and --vary), over the limit of " +
                         std::to_string(limits::kCompareColumns));
  Inputs in = load_inputs(a.model, a.clusters.front());
  OutputArgs seq;
  seq.seq_len = a.seq_len;
  seq.mtp_layers = a.mtp_layers;
  apply_seq_len(in, seq);
  const Plan plan =
      complete_plan(a.plan, gpus_option(a.gpus, a.nodes, in.cluster), a.dtype, a.global_batch, in);
  const EstimateOptions o = estimate_options(a);
  std::vector<Column> cols;
  for (Variant& v : variants(a, in, plan)) {
    EstimateOptions vo = o;  // a column's own framework=NAME, else --framework
    if (v.framework) vo.framework = v.framework;
    Estimate e = refine(in.model, cluster_for(v.cluster, vo.framework), v.plan, vo);
    if (e.ok()) require_finite(e);
    cols.push_back({std::move(v), std::move(e)});
  }
  if (a.format == "json")
    std::cout << io::dump_json(to_json(in, cols), 2) << "\n";
  else
    print_table(std::cout, in, cols);
  return 0;
}

}  // namespace

void add_compare(CLI::App& app, int* rc) {
  auto a = std::make_shared<CompareArgs>();
  CLI::App* s = app.add_subcommand(
      "compare",
      "one model and plan across clusters, or one cluster under changed knobs, side by side");
  s->add_option("--model", a->model, "model YAML (configs/models/) or Hugging Face config.json")
      ->required();
  s->add_option("--cluster", a->clusters, "cluster profile YAML; repeat for one column per cluster")
      ->required();
  s->add_option("--plan", a->plan,
                "e.g. \"tp=8,pp=8,mbs=1,gbs=1536,vpp=3,zero=1,recompute=selective,sp=1\"")
      ->required();
  s->add_option("--vary", a->vary,
                "a column of changes to the first cluster and plan, e.g. \"ib_busbw*2\", "
                "\"cluster=hw_profiles/dgx-h100-80gb.yaml\", \"zero=3\" (repeatable; see README)");
  CLI::Option* gpus =
      s->add_option("--gpus", a->gpus,
                    "GPUs (default: dp*tp*pp*cp of the plan, else the first cluster's default)");
  s->add_option("--nodes", a->nodes, "hosts of the first cluster, in place of --gpus")
      ->excludes(gpus);
  s->add_option("--global-batch", a->global_batch, kGlobalBatchHelp + ", if not in --plan")
      ->transform(sequences_in(1, kMaxGlobalBatch));
  s->add_option("--dtype", a->dtype, "bf16 (default), fp16, fp8, tf32, mxfp8 (Blackwell)");
  s->add_option("--seq-len", a->seq_len, "sequence length in tokens (default: the model's)")
      ->check(integer_in(1, limits::kSeqLen));
  add_mtp_option(s, a->mtp_layers);
  add_limit_options(s, *a, "memory cap per GPU (default: each GPU's HBM)");
  add_framework_option(s, a->framework, false);
  s->add_option("--format", a->format, "table or json")->check(CLI::IsMember({"table", "json"}));
  s->callback([a, rc] { *rc = run_compare(*a); });
}

}  // namespace planner::cli
