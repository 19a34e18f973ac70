// planner advise: for each cluster profile and each framework, the best plan, the days, GPU-hours
// and cost to train, and the memory headroom; then a recommendation in the design source's terms
// (its hardware guidance by model size and its framework decision tree, shared/source/), checked
// against the planner's own numbers.
#include <algorithm>
#include <atomic>
#include <cmath>
#include <exception>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <system_error>
#include <thread>

#include "cli/commands.h"
#include "cli/outputs.h"
#include "planner/error.h"
#include "planner/format.h"
#include "planner/io/cluster_io.h"
#include "planner/io/json.h"
#include "planner/io/knobs.h"
#include "planner/io/output.h"
#include "planner/limits.h"
#include "planner/report/html.h"
#include "planner/search.h"
#include "planner/units.h"

namespace planner::cli {
namespace {

/// Training tokens per parameter when --train-tokens is not given: the compute-optimal ratio of
/// Hoffmann et al. 2022 (Chinchilla), about 20.
constexpr double kTokensPerParam = 20;
/// --train-tokens above this (a thousand times any published run) is refused: days and dollars
/// stay finite.
constexpr double kMaxTrainTokens = 1e16;

/// The source's hardware guidance (s.5.2), in its own units: 10-100亿 (1-10 billion) parameters on
/// one node of 8 A100 80GB with pure data parallelism and gradient accumulation; 100-1000亿
/// (10-100 billion) on 4-8 nodes with data plus tensor parallelism (TP=8) and ZeRO-3; above that
/// (千亿以上, over 100 billion) on 64+ nodes with 3D parallelism. The GPU counts are its nodes
/// of 8.
enum class Rule { pure_dp, tp8_zero3, three_d };

Rule rule_for(double params) {
  if (params < 1e10) return Rule::pure_dp;
  if (params < 1e11) return Rule::tp8_zero3;
  return Rule::three_d;
}
const char* class_name(Rule r) {
  return r == Rule::pure_dp ? "1-10B" : r == Rule::tp8_zero3 ? "10-100B" : "over 100B";
}
const char* rule_text(Rule r) {
  switch (r) {
    case Rule::pure_dp:
      return "one node of 8 A100 80GB, pure data parallelism with gradient accumulation";
    case Rule::tp8_zero3:
      return "4-8 nodes, data plus tensor parallelism (TP=8) with ZeRO-3";
    case Rule::three_d:
      return "64+ nodes, 3D parallelism (DP + TP + PP)";
  }
  return "";
}
const char* rule_gpus(Rule r) {
  return r == Rule::pure_dp ? "8" : r == Rule::tp8_zero3 ? "32,64" : "512";
}

/// The knob space of the source's rule for `r`: pure DP (tp = pp = cp = 1), TP=8 with ZeRO-3 and
/// no pipeline, or every plan with tp > 1, pp > 1 and dp > 1 (checked on the result).
KnobSpace rule_knobs(Rule r, const ModelSpec& m, const ClusterProfile& c, int gpus) {
  KnobSpace k = default_knobs(m, c, gpus);
  if (r == Rule::pure_dp) k[KnobId::tp] = {1}, k[KnobId::pp] = {1};
  if (r == Rule::tp8_zero3) k[KnobId::tp] = {8}, k[KnobId::pp] = {1}, k[KnobId::zero] = {3};
  if (r == Rule::three_d) {
    std::erase(k[KnobId::tp], 1);
    std::erase(k[KnobId::pp], 1);
    for (int d = 2; d <= gpus; ++d)  // DP too: every dp > 1 the GPU count allows
      if (gpus % d == 0) k[KnobId::dp].push_back(d);
  }
  return k;
}

struct AdviseArgs : LimitArgs {
  std::string model, clusters_dir, gpus, train_tokens, dtype = "bf16", format = "text";
  std::string report;  ///< --report FILE.html
  std::vector<std::string> clusters;
  double deadline_days = 0, budget_usd = 0, gpu_hour_usd = 0;
  int global_batch = 0;
  int mtp_layers = -1;  ///< --mtp-layers (-1: the model file's)
};

/// One (cluster, framework) answer: its best plan over the GPU counts, and what training takes.
struct Row {
  std::string cluster_file;
  ClusterProfile cluster;
  Framework framework = Framework::megatron;
  std::optional<Estimate> best;
  std::string why_none;  ///< when no plan fits
  double days = 0, gpu_hours = 0, usd = 0, headroom_GiB = 0;
  double price = 0;          ///< per GPU-hour (0: unknown)
  std::string price_source;  ///< "--gpu-hour-usd", "profile", ""
  bool meets_deadline = true, meets_budget = true;
};

std::vector<std::string> cluster_files(const AdviseArgs& a) {
  std::vector<std::string> out;
  for (const std::string& c : a.clusters)
    out.push_back(resolve_input(c, "hw_profiles", "--cluster"));
  if (!a.clusters_dir.empty()) {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (!fs::is_directory(a.clusters_dir, ec))
      throw InputError("", 0, "--clusters", "'" + a.clusters_dir + "' is not a directory");
    std::vector<std::string> found;
    for (fs::directory_iterator it(a.clusters_dir, ec), end; !ec && it != end; it.increment(ec))
      if (it->path().extension() == ".yaml") found.push_back(it->path().string());
    std::sort(found.begin(), found.end());
    if (found.empty())
      throw InputError("", 0, "--clusters", "no .yaml profile in '" + a.clusters_dir + "'");
    out.insert(out.end(), found.begin(), found.end());
  }
  if (out.empty())
    for (const std::string& name : shipped_names("hw_profiles"))
      out.push_back(resolve_input(name, "hw_profiles", "--cluster"));
  if (out.empty())  // no hw_profiles/ here or beside the sources
    throw InputError("", 0, "--cluster",
                     "no cluster profile given and no shipped one found (hw_profiles/); give "
                     "--cluster FILE or --clusters DIR");
  if (out.size() > size_t(limits::kCompareColumns))
    throw InputError(
        "", 0, "--cluster",
        fmt("{} cluster profiles, over the limit of {}", out.size(), limits::kCompareColumns));
  return out;
}

/// The best plan of `f` on `c` for each GPU count, the one chosen: the cheapest that meets the
/// deadline (GPU-hours when no price is known), else the fastest.
Row answer(const AdviseArgs& a, const ModelSpec& m, const std::string& file,
           const ClusterProfile& c, Framework f, double tokens, Dtype dt) {
  Row row;
  row.cluster_file = file, row.cluster = c, row.framework = f;
  row.price = a.gpu_hour_usd > 0 ? a.gpu_hour_usd : c.gpu_hour_usd;
  row.price_source = a.gpu_hour_usd > 0 ? "--gpu-hour-usd" : c.gpu_hour_usd > 0 ? "profile" : "";
  std::vector<int> counts;
  try {
    counts = parse_gpus(a.gpus.empty() ? rule_gpus(rule_for(m.total_params())) : a.gpus, c);
  } catch (const InputError& e) {
    row.why_none = e.what();
    return row;
  }
  if (c.gpu.peak_flops[static_cast<int>(dt)] <= 0) {
    row.why_none = dtype_unsupported_message(c.gpu, dt);
    return row;
  }
  const ClusterProfile stack = cluster_for(c, f, false);
  // A precision the framework has no mode for: its reason, not "no plan fits". The default
  // plan differs from a bf16 one only in its precision; what refuses it (experts or MTP modules
  // on a framework that plans neither) is the row's reason when no plan is found.
  Plan probe;
  const std::optional<std::string> bf16_why = why_not(f, m, stack, probe);
  probe.dtype = dt;
  if (const std::optional<std::string> why = why_not(f, m, stack, probe); why && !bf16_why) {
    row.why_none = *why;
    return row;
  }
  std::vector<Estimate> candidates;
  for (int g : counts) {
    SearchOptions o;
    o.gpus = {g};
    o.global_batch = a.global_batch;
    o.top_k = 1;
    o.dtype = dt;
    o.estimate = estimate_options(a);
    o.estimate.framework = f;
    try {
      const SearchResult r = search(m, stack, default_knobs(m, stack, g), o);
      if (!r.top.empty()) candidates.push_back(r.top.front());
    } catch (const InputError& e) {  // a search over its limits: said in the row, not fatal
      row.why_none = e.what();
    }
  }
  if (candidates.empty()) {
    if (row.why_none.empty() && bf16_why) row.why_none = *bf16_why;
    if (row.why_none.empty()) {
      std::string list;
      for (int g : counts) list += (list.empty() ? "" : ", ") + std::to_string(g);
      row.why_none = "no plan fits on " + list + " GPUs";
    }
    return row;
  }
  auto hours = [&](const Estimate& e) { return tokens / e.tokens_per_s * e.plan.gpus() / 3600.0; };
  auto days = [&](const Estimate& e) { return tokens / e.tokens_per_s / kSecondsPerDay; };
  const Estimate* pick = nullptr;
  for (const Estimate& e : candidates)
    if ((a.deadline_days <= 0 || days(e) <= a.deadline_days) && (!pick || hours(e) < hours(*pick)))
      pick = &e;
  if (!pick)
    for (const Estimate& e : candidates)
      if (!pick || e.iteration_time_s < pick->iteration_time_s) pick = &e;
  row.best = *pick;
  row.days = days(*pick);
  row.gpu_hours = hours(*pick);
  row.usd = row.price * row.gpu_hours;
  row.headroom_GiB = (pick->memory_limit_bytes - pick->memory_bytes) / kGiB;
  row.meets_deadline = a.deadline_days <= 0 || row.days <= a.deadline_days;
  row.meets_budget = a.budget_usd <= 0 || row.price <= 0 || row.usd <= a.budget_usd;
  return row;
}

/// The recommended row: meeting the deadline and the budget, cheapest (by dollars where every
/// candidate has a price, else by GPU-hours), the first of equals in the table's order. A row
/// without a price cannot be held to --budget-usd: it is kept, and its cost printed as "-".
const Row* recommend(const std::vector<Row>& rows) {
  bool priced = true;
  for (const Row& r : rows)
    if (r.best) priced = priced && r.price > 0;
  const Row* best = nullptr;
  for (int strict = 1; strict >= 0 && !best; --strict)
    for (const Row& r : rows) {
      if (!r.best || (strict && !(r.meets_deadline && r.meets_budget))) continue;
      const double cost = priced ? r.usd : r.gpu_hours,
                   best_cost = best ? (priced ? best->usd : best->gpu_hours) : 0;
      if (!best || cost < best_cost) best = &r;
    }
  return best;
}

/// The source's rule on the recommended cluster and framework against the planner's best there.
struct RuleCheck {
  Rule rule = Rule::pure_dp;
  std::optional<Estimate> rule_best;
  int gpus = 0;
  std::string verdict;
};

RuleCheck check_rule(const AdviseArgs& a, const ModelSpec& m, const Row& row, Dtype dt) {
  RuleCheck rc;
  rc.rule = rule_for(m.total_params());
  const Estimate& best = *row.best;
  rc.gpus = static_cast<int>(best.plan.gpus());
  const ClusterProfile stack = cluster_for(row.cluster, row.framework, false);
  SearchOptions o;
  o.gpus = {rc.gpus};
  o.global_batch = a.global_batch;
  o.top_k = 1;
  o.dtype = dt;
  o.estimate = estimate_options(a);
  o.estimate.framework = row.framework;
  SearchResult r;
  try {
    r = search(m, stack, rule_knobs(rc.rule, m, stack, rc.gpus), o);
  } catch (const InputError& e) {
    rc.verdict = std::string("the rule's plans could not be searched: ") + e.what();
    return rc;
  }
  if (r.top.empty()) {
    rc.verdict = fmt("the planner finds no plan of that shape that fits on {} GPUs of {}", rc.gpus,
                     row.cluster.name);
    return rc;
  }
  rc.rule_best = r.top.front();
  const double slower = 100.0 * (rc.rule_best->iteration_time_s / best.iteration_time_s - 1.0);
  rc.verdict =
      slower < 0.5
          ? fmt("the planner agrees: the rule's best plan is its best ({:.3f} s)",
                rc.rule_best->iteration_time_s)
          : fmt("the planner disagrees: the rule's best plan takes {:.3f} s, {:.1f}% slower than "
                "its best {:.3f} s",
                rc.rule_best->iteration_time_s, slower, best.iteration_time_s);
  return rc;
}

/// The source's decision tree (s.5.3 of shared/source) against the frameworks' best times on the
/// recommended cluster: Megatron-LM's "peak performance" checked against DeepSpeed and torchtitan.
std::string framework_verdict(const std::vector<Row>& rows, const Row& pick) {
  const Row* best[kFrameworkInfo.size()] = {};
  for (const Row& r : rows)
    if (r.cluster_file == pick.cluster_file && r.best) best[int(r.framework)] = &r;
  std::string out =
      "the source's decision tree: peak performance -> Megatron-LM; ease of use -> DeepSpeed; "
      "flexibility -> PyTorch-native distributed (torchtitan); otherwise Horovod or ColossalAI "
      "(not modelled)";
  const Row* mg = best[int(Framework::megatron)];
  if (!mg) return out + "; Megatron-LM fits no plan here, so the tree is not checked";
  int compared = 0;
  for (Framework f : {Framework::deepspeed, Framework::torchtitan}) {
    const Row* other = best[int(f)];
    if (!other) continue;
    ++compared;
    const double gain = 100.0 * (other->best->iteration_time_s / mg->best->iteration_time_s - 1);
    out += gain >= 0 ? fmt("; Megatron-LM is {:.1f}% faster than {}, as its 'peak performance' "
                           "branch says",
                           gain, info(f).title)
                     : fmt("; {} is {:.1f}% faster than Megatron-LM, against the tree's 'peak "
                           "performance' branch",
                           info(f).title, -gain);
  }
  return compared ? out : out + "; only Megatron-LM fits here, so the tree is not checked";
}

/// The source's hardware for the 1-10B class (one node of 8 A100 80GB) against the pick, where
/// an A100 80GB profile was among the clusters.
std::string hardware_verdict(const std::vector<Row>& rows, const Row& pick, Rule rule) {
  if (rule != Rule::pure_dp) return "";
  const Row* a100 = nullptr;
  for (const Row& r : rows)
    if (r.best && r.cluster.gpu.name.find("A100") != std::string::npos &&
        r.cluster.gpu.hbm_bytes > 60 * kGiB && (!a100 || r.days < a100->days))
      a100 = &r;
  if (!a100) return "";
  if (a100->cluster_file == pick.cluster_file)
    return "the source's A100 80GB node is also the planner's pick";
  return fmt(
      "on the source's 8 x A100 80GB ({}) the best plan takes {:.1f} days and {:.0f} "
      "GPU-hours, {:.1f}x the pick's",
      a100->cluster.name, a100->days, a100->gpu_hours, a100->gpu_hours / pick.gpu_hours);
}

std::string money(const Row& r) { return r.price > 0 ? fmt("{:.0f}", r.usd) : "-"; }

void print_text(std::ostream& out, const ModelSpec& m, const AdviseArgs& a, double tokens,
                const std::vector<Row>& rows, const Row* pick, const RuleCheck* rc,
                const std::string& fw) {
  const Rule rule = rule_for(m.total_params());
  out << fmt("# model    {}: {:.2f}B parameters, the source's {} class{}\n", m.name,
             m.total_params() / 1e9, class_name(rule), mtp_text(m));
  out << fmt("# training {:.3g} tokens{}, global batch {} sequences of {}\n", tokens,
             a.train_tokens.empty() ? " (20 per parameter, Chinchilla)" : "", a.global_batch,
             m.seq_len);
  if (a.deadline_days > 0) out << fmt("# deadline {:g} days\n", a.deadline_days);
  if (a.budget_usd > 0) out << fmt("# budget   {:g} USD\n", a.budget_usd);
  out << fmt("\n{:<18} {:<10} {:>5} {:>8} {:>8} {:>11} {:>11} {:>9}  {}\n", "cluster", "framework",
             "gpus", "iter_s", "days", "GPU-hours", "cost_usd", "free_GiB", "plan");
  for (const Row& r : rows) {
    if (!r.best) {
      out << fmt("{:<18} {:<10} {}\n", r.cluster.name, to_string(r.framework), r.why_none);
      continue;
    }
    const Estimate& e = *r.best;
    out << fmt("{:<18} {:<10} {:>5} {:>8.3f} {:>8.1f} {:>11.0f} {:>11} {:>9.1f}  {}{}\n",
               r.cluster.name, to_string(r.framework), e.plan.gpus(), e.iteration_time_s, r.days,
               r.gpu_hours, money(r), r.headroom_GiB, to_plan_string(e.plan),
               r.meets_deadline && r.meets_budget ? "" : "  (misses the deadline or budget)");
  }
  bool any_price = false;
  for (const Row& r : rows) any_price = any_price || r.price > 0;
  if (!any_price)
    out << "# no profile states gpu_hour_usd: give --gpu-hour-usd for costs; ranked by GPU-hours\n";
  if (!pick) return;
  const Estimate& e = *pick->best;
  out << fmt("\nrecommendation: {} with {} on {} GPUs: {:.1f} days, {:.0f} GPU-hours{}\n",
             pick->cluster.name, info(pick->framework).title, e.plan.gpus(), pick->days,
             pick->gpu_hours,
             pick->price > 0 ? fmt(", {:.0f} USD at {:g} USD/GPU-hour ({})", pick->usd, pick->price,
                                   pick->price_source)
                             : std::string());
  out << "  --plan \"" << to_plan_string(e.plan) << "\"\n";
  if (!(pick->meets_deadline && pick->meets_budget))
    out << "  no row meets the deadline and the budget: this is the cheapest of all\n";
  out << fmt("  size: {:.1f}B parameters is the source's {} class: {}\n", m.total_params() / 1e9,
             class_name(rule), rule_text(rule));
  if (rc) out << "  " << rc->verdict << "\n";
  const std::string hw = hardware_verdict(rows, *pick, rule);
  if (!hw.empty()) out << "  " << hw << "\n";
  out << "  " << fw << "\n";
}

nlohmann::ordered_json to_json(const ModelSpec& m, double tokens, const std::vector<Row>& rows,
                               const Row* pick, const RuleCheck* rc, const std::string& fw) {
  nlohmann::ordered_json j;
  j["model"] = {{"name", m.name},
                {"params", m.total_params()},
                {"mtp_layers", m.mtp_layers},
                {"mtp_params", m.mtp_params()}};
  j["train_tokens"] = tokens;
  j["size_class"] = class_name(rule_for(m.total_params()));
  j["source_rule"] = rule_text(rule_for(m.total_params()));
  for (const Row& r : rows) {
    nlohmann::ordered_json x = {{"cluster", r.cluster.name},
                                {"cluster_file", r.cluster_file},
                                {"framework", to_string(r.framework)}};
    if (!r.best) {
      x["error"] = r.why_none;
    } else {
      x["plan"] = to_plan_string(r.best->plan);
      x["gpus"] = r.best->plan.gpus();
      x["iteration_time_s"] = r.best->iteration_time_s;
      x["train_days"] = r.days;
      x["train_gpu_hours"] = r.gpu_hours;
      x["cost_usd"] = r.price > 0 ? nlohmann::ordered_json(r.usd) : nullptr;
      x["gpu_hour_usd_source"] = r.price_source;
      x["memory_headroom_GiB"] = r.headroom_GiB;
      x["meets_deadline"] = r.meets_deadline;
      x["meets_budget"] = r.meets_budget;
    }
    j["rows"].push_back(x);
  }
  if (pick) {
    j["recommendation"] = {
        {"cluster", pick->cluster.name},
        {"framework", to_string(pick->framework)},
        {"plan", to_plan_string(pick->best->plan)},
        {"rule_check", rc ? rc->verdict : ""},
        {"framework_check", fw},
        {"hardware_check", hardware_verdict(rows, *pick, rule_for(m.total_params()))}};
    if (rc && rc->rule_best) j["recommendation"]["rule_plan"] = to_plan_string(rc->rule_best->plan);
  }
  return j;
}

/// The same answer as one HTML page: the inputs, every (cluster, framework) row with the pick
/// marked, and the recommendation with the source's rules checked.
std::string advise_html(const ModelSpec& m, double tokens, const AdviseArgs& a,
                        const std::vector<Row>& rows, const Row& pick, const RuleCheck& rc,
                        const std::string& fw) {
  const Rule rule = rule_for(m.total_params());
  std::string body = "<section id=\"inputs\">\n<h2>Inputs</h2>\n";
  body +=
      html_table({{"input", "value"},
                  {"model", fmt("{}: {:.2f}B parameters, the source's {} class", m.name,
                                m.total_params() / 1e9, class_name(rule))},
                  {"training", fmt("{:.3g} tokens, global batch {} sequences of {}", tokens,
                                   a.global_batch, m.seq_len)},
                  {"deadline, budget",
                   fmt("{} days, {} USD", a.deadline_days > 0 ? fmt("{:g}", a.deadline_days) : "-",
                       a.budget_usd > 0 ? fmt("{:g}", a.budget_usd) : "-")}});
  body += "</section>\n<section id=\"rows\">\n<h2>Each cluster and framework's best plan</h2>\n";
  std::vector<std::vector<std::string>> table = {{"cluster", "framework", "gpus", "iter_s", "days",
                                                  "GPU-hours", "cost_usd", "free_GiB", "plan"}};
  int picked = -1;
  for (const Row& r : rows) {
    if (&r == &pick) picked = int(table.size()) - 1;
    if (!r.best) {
      table.push_back({r.cluster.name, to_string(r.framework), "", "", "", "", "", "", r.why_none});
      continue;
    }
    const Estimate& e = *r.best;
    table.push_back({r.cluster.name, to_string(r.framework), std::to_string(e.plan.gpus()),
                     fmt("{:.3f}", e.iteration_time_s), fmt("{:.1f}", r.days),
                     fmt("{:.0f}", r.gpu_hours), money(r), fmt("{:.1f}", r.headroom_GiB),
                     "--plan \"" + to_plan_string(e.plan) + "\""});
  }
  body += html_table(table, picked) + "</section>\n";
  body += "<section id=\"recommendation\">\n<h2>Recommendation</h2>\n<ul>\n";
  auto item = [&](const std::string& text) {
    if (!text.empty()) body += "<li>" + html_escape(text) + "</li>\n";
  };
  item(fmt("{} with {} on {} GPUs: {:.1f} days, {:.0f} GPU-hours{}", pick.cluster.name,
           info(pick.framework).title, pick.best->plan.gpus(), pick.days, pick.gpu_hours,
           pick.price > 0 ? fmt(", {:.0f} USD", pick.usd) : std::string()));
  item(fmt("size: {:.1f}B parameters is the source's {} class: {}", m.total_params() / 1e9,
           class_name(rule), rule_text(rule)));
  item(rc.verdict);
  item(hardware_verdict(rows, pick, rule));
  item(fw);
  body += "</ul>\n</section>\n";
  return html_page(fmt("planner advise: {}", m.name), body);
}

int run_advise(const AdviseArgs& a) {
  if (a.global_batch <= 0)
    throw InputError("", 0, "--global-batch", "must be a positive number of sequences");
  const std::vector<std::string> files = cluster_files(a);
  Inputs in = load_inputs(a.model, files.front());
  OutputArgs model_args;
  model_args.mtp_layers = a.mtp_layers;
  apply_seq_len(in, model_args);
  const ModelSpec& m = in.model;
  const double tokens = a.train_tokens.empty() ? kTokensPerParam * m.total_params()
                                               : io::parse_count(a.train_tokens, "--train-tokens");
  if (!(tokens > 0) || tokens > kMaxTrainTokens)
    throw InputError("", 0, "--train-tokens",
                     fmt("must be a positive count of at most {:.0e} tokens", kMaxTrainTokens));
  const Dtype dt = parse_dtype(a.dtype);
  std::vector<ClusterProfile> clusters;  // read in order, so a bad file is the first one named
  for (size_t i = 0; i < files.size(); ++i)
    clusters.push_back(i == 0 ? in.cluster : io::load_cluster(files[i]));
  // Each (cluster, framework) is its own search: run them on the machine's cores, the rows kept
  // in the table's order (the search keeps no state between calls).
  const size_t tasks = clusters.size() * kCurrentFrameworks.size();
  std::vector<Row> rows(tasks);
  std::vector<std::exception_ptr> failed(tasks);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t t; (t = next++) < tasks;) try {
        const size_t i = t / kCurrentFrameworks.size();
        rows[t] = answer(a, m, files[i], clusters[i],
                         kCurrentFrameworks[t % kCurrentFrameworks.size()], tokens, dt);
      } catch (...) {
        failed[t] = std::current_exception();
      }
  };
  {
    std::vector<std::jthread> workers(
        std::min<size_t>(tasks, std::max(1u, std::thread::hardware_concurrency())) - 1);
    try {
      for (std::jthread& w : workers) w = std::jthread(work);
    } catch (const std::system_error&) {  // no more threads: this one takes the rest
    }
    work();
  }
  for (const std::exception_ptr& e : failed)
    if (e) std::rethrow_exception(e);
  for (const Row& r : rows)
    if (r.best) require_finite(*r.best);
  const Row* pick = recommend(rows);
  if (!pick) {  // each distinct reason once, with where it held
    std::vector<std::pair<std::string, std::string>> why;  // reason, "cluster/framework, ..."
    for (const Row& r : rows) {
      const std::string where = r.cluster.name + "/" + to_string(r.framework);
      auto it =
          std::find_if(why.begin(), why.end(), [&](auto& w) { return w.first == r.why_none; });
      if (it == why.end())
        why.emplace_back(r.why_none, where);
      else
        it->second += ", " + where;
    }
    std::string msg = "no plan fits on any cluster for any framework:";
    for (const auto& [reason, where] : why) msg += "\n  " + where + ": " + reason;
    throw InputError("", 0, "", msg);
  }
  const RuleCheck rc = check_rule(a, m, *pick, dt);
  const std::string fw = framework_verdict(rows, *pick);
  if (a.format == "json")
    std::cout << io::dump_json(to_json(m, tokens, rows, pick, &rc, fw), 2) << "\n";
  else
    print_text(std::cout, m, a, tokens, rows, pick, &rc, fw);
  if (!a.report.empty())
    io::write_file_atomically(a.report, advise_html(m, tokens, a, rows, *pick, rc, fw));
  return 0;
}

}  // namespace

void add_advise(CLI::App& app, int* rc) {
  auto a = std::make_shared<AdviseArgs>();
  CLI::App* s = app.add_subcommand(
      "advise", "which cluster and framework: each one's best plan, days, GPU-hours and cost");
  s->add_option("--model", a->model, "model YAML (configs/models/) or Hugging Face config.json")
      ->required();
  s->add_option("--cluster", a->clusters,
                "cluster profile YAML; repeatable (default: every "
                "shipped profile)");
  s->add_option("--clusters", a->clusters_dir, "a directory of cluster profiles (*.yaml)");
  s->add_option("--gpus", a->gpus,
                "GPU counts to try (default: the source's nodes for the model's size class: 8; "
                "32,64; 512)");
  s->add_option("--global-batch", a->global_batch, kGlobalBatchHelp)
      ->required()
      ->transform(sequences_in(1, kMaxGlobalBatch));
  s->add_option("--train-tokens", a->train_tokens,
                "tokens to train on (default 20 per parameter), e.g. 2e12");
  s->add_option("--deadline-days", a->deadline_days, "train within this many days")
      ->check(number_in(0, 1e6, true));
  s->add_option("--budget-usd", a->budget_usd, "spend at most this much")
      ->check(number_in(0, 1e15, true));
  s->add_option("--gpu-hour-usd", a->gpu_hour_usd,
                "price per GPU-hour for every cluster (default: each profile's gpu_hour_usd)")
      ->check(number_in(0, limits::kGpuHourUsd.hi, true));
  s->add_option("--dtype", a->dtype, "bf16 (default), fp16, fp8, tf32, mxfp8 (Blackwell)");
  add_mtp_option(s, a->mtp_layers);
  add_limit_options(s, *a);
  s->add_option("--format", a->format, "text or json")->check(CLI::IsMember({"text", "json"}));
  s->add_option("--report", a->report,
                "write the answer as a self-contained HTML page to this file");
  s->callback([a, rc] { *rc = run_advise(*a); });
}

}  // namespace planner::cli
