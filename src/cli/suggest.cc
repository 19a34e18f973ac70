#include <spdlog/spdlog.h>

#include <algorithm>
#include <iostream>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/emit.h"
#include "cli/no_fit.h"
#include "cli/outputs.h"
#include "planner/error.h"
#include "planner/format.h"
#include "planner/io/json.h"
#include "planner/io/knobs.h"
#include "planner/knob_table.h"
#include "planner/limits.h"
#include "planner/report/progress.h"
#include "planner/report/report.h"

namespace planner::cli {
namespace {

/// --top's bound.
inline constexpr int kMaxTop = 1000;

struct SuggestArgs : LimitArgs {
  std::string model, cluster, gpus, nodes;
  std::array<std::string, kNumKnobs> knobs;  ///< --tp, --pp, ...: each searched knob's values
  std::string attention, trace;
  std::string format = "table", objective = "time", dtype = "bf16", train_tokens;
  std::string emit, out;  ///< --emit FRAMEWORK --out DIR: launch files of the top plan
  int global_batch = 0;
  int top = 10;
  bool distinct = false;  ///< --distinct: one row for plans that differ only in vpp
  OutputArgs extra;       ///< --seq-len, --plot, --report
};

KnobSpace knobs_from(const SuggestArgs& a, const Inputs& in, int gpus) {
  using K = KnobId;
  KnobSpace k = default_knobs(in.model, in.cluster, gpus);
  auto given = [&](K id) { return !a.knobs[int(id)].empty(); };
  if (a.tp_across_nodes && !given(K::tp))
    for (int t = in.cluster.nvlink_domain * 2; t <= in.model.heads; t *= 2) k[K::tp].push_back(t);
  for (const KnobDef& d : knob_table()) {
    const std::string& text = a.knobs[int(d.id)];
    if (!d.searched || text.empty()) continue;
    const std::string option = d.option();
    std::vector<int>& values = k[d.id];
    values.clear();
    if (d.is_integer()) {
      for (int v : io::parse_int_set(text, option)) {
        if (v < d.lo)
          throw InputError("", 0, option, "values must be at least " + std::to_string(d.lo));
        if (v > d.hi)
          throw InputError("", 0, option, "values must be at most " + std::to_string(d.hi));
        values.push_back(v);
      }
    } else {
      for (const std::string& w : io::parse_word_set(text, option, d.words))
        values.push_back(parse_knob_value(d, w, option));
    }
  }
  if (given(K::vpp)) k.vpp_whole_chunks_only = false;
  if (given(K::mbs)) k.mbs_divisors_only = false;
  const std::vector<int>& sched = k[K::schedule];
  if (given(K::schedule) && !given(K::vpp) &&
      std::find(sched.begin(), sched.end(), int(Schedule::interleaved)) == sched.end())
    k[K::vpp] = {1};
  return k;
}

/// Why `v`, a value of knob `id`, can run in no plan on any of `gpus` ("3 does not divide 64
/// GPUs"), or "" when some plan may use it. The checks are check_layout's that hold whatever the
/// other knobs are.
std::string never_fits(KnobId id, int v, const ModelSpec& m, const ClusterProfile& c,
                       const std::vector<int>& gpus, int global_batch, bool tp_across_nodes) {
  using K = KnobId;
  if (id == K::tp || id == K::pp || id == K::cp || id == K::dp) {
    bool divides = false;
    std::string counts;
    for (int g : gpus) {
      divides = divides || g % v == 0;
      counts += (counts.empty() ? "" : " or ") + std::to_string(g);
    }
    if (!divides) return std::to_string(v) + " does not divide " + counts + " GPUs";
  }
  const bool plain = m.encoders.empty();
  if (id == K::tp && (m.heads % v != 0 || m.kv_heads % v != 0))
    return tp_heads_message(v, m.heads, m.kv_heads);
  if (id == K::tp && !tp_across_nodes && v > c.nvlink_domain)
    return "tp=" + std::to_string(v) + " does not fit in an NVLink domain of " +
           std::to_string(c.nvlink_domain) + " GPUs (allow with --tp-across-nodes)";
  // pp need not divide the layers (split=short_ends, embed_loss); it cannot exceed them.
  if (id == K::pp && plain && v > m.layers)
    return "pp=" + std::to_string(v) + " exceeds layers=" + std::to_string(m.layers);
  if (id == K::cp && v > 1 && m.seq_len % (2 * v) != 0)
    return "cp=" + std::to_string(v) + ": seq_len=" + std::to_string(m.seq_len) +
           " is not divisible by 2*cp=" + std::to_string(2 * v);
  if (id == K::mbs && global_batch % v != 0)
    return "mbs=" + std::to_string(v) + " does not divide the global batch of " +
           std::to_string(global_batch) + " sequences";
  return "";
}

/// A knob the user gave whose every value can never fit is an error saying why ("option --tp: 3
/// does not divide 64 GPUs"), rather than a search that ranks nothing; values of a longer list
/// that can never fit are logged.
void check_given_knobs(const SuggestArgs& a, const KnobSpace& k, const Inputs& in,
                       const std::vector<int>& gpus) {
  constexpr size_t kListed = 4;  // reasons a message spells out; the rest are counted
  for (const KnobDef& d : knob_table()) {
    if (!d.searched || a.knobs[int(d.id)].empty() || !d.is_integer()) continue;
    const std::vector<int>& values = k[d.id];
    // Past the search's own bound the search refuses the ranges, with its message.
    if (double(values.size()) * double(gpus.size()) > limits::kSearchCells) continue;
    std::string listed;
    size_t failing = 0;
    for (int v : values) {
      const std::string w =
          never_fits(d.id, v, in.model, in.cluster, gpus, a.global_batch, a.tp_across_nodes);
      if (w.empty()) continue;
      if (++failing <= kListed) listed += (listed.empty() ? "" : "; ") + w;
    }
    if (failing == 0) continue;
    if (failing > kListed) listed += "; and " + std::to_string(failing - kListed) + " more";
    if (failing == values.size()) throw InputError("", 0, d.option(), listed);
    spdlog::info("{}: no plan can use these values: {}", d.option(), listed);
  }
}

/// How many more plans the search keeps under --distinct, so that `--top K` can still list K.
inline constexpr int kDistinctOverfetch = 4;

/// The plan with its vpp (and the interleaving it implies) taken out: plans with the same key
/// differ only in vpp.
std::string without_vpp(const Estimate& e) {
  Plan p = e.plan;
  p.vpp = 1;
  if (p.schedule == Schedule::interleaved) p.schedule = Schedule::one_f_one_b;
  return to_plan_string(p) + (e.framework ? to_string(*e.framework) : "");
}

/// The ranked plans less those within kDistinctTolerance of a better one that differs only in
/// vpp, at most `top`; `*collapsed` counts those left out.
std::vector<Estimate> distinct_plans(const std::vector<Estimate>& ranked, int top, int* collapsed) {
  std::vector<Estimate> out;
  *collapsed = 0;
  for (const Estimate& e : ranked) {
    const std::string key = without_vpp(e);
    const bool near = std::any_of(out.begin(), out.end(), [&](const Estimate& kept) {
      return without_vpp(kept) == key &&
             e.iteration_time_s <= kept.iteration_time_s * (1 + kDistinctTolerance);
    });
    if (near)
      ++*collapsed;
    else if (static_cast<int>(out.size()) < top)
      out.push_back(e);
  }
  return out;
}

/// --framework, with --emit's framework as the default: plans ranked for one framework and emitted
/// for another would not be the plans of the table.
std::vector<Framework> frameworks_to_rank(const SuggestArgs& a) {
  if (a.emit.empty()) return frameworks_of(a.framework, true);
  const Framework e = parse_framework(a.emit, "--emit", true);
  if (a.framework.empty()) return {e};
  const std::vector<Framework> f = frameworks_of(a.framework, true);
  if (std::find(f.begin(), f.end(), e) == f.end())
    throw InputError("", 0, "--emit",
                     "the plans are ranked for --framework " + a.framework + "; --emit " + a.emit +
                         " needs --framework " + a.emit + " or all");
  return f;
}

int run_suggest(const SuggestArgs& a) {
  if (!a.emit.empty() && a.out.empty())
    throw InputError("", 0, "--out", "required with --emit (the directory for the files)");
  if (a.emit.empty() && !a.out.empty())
    throw InputError("", 0, "--emit", "required with --out (megatron, deepspeed or torchtitan)");
  Inputs in = load_inputs(a.model, a.cluster);
  apply_seq_len(in, a.extra);
  SearchOptions so;
  so.gpus = parse_gpus(gpus_option(a.gpus, a.nodes, in.cluster), in.cluster);
  if (a.global_batch <= 0)
    throw InputError("", 0, "--global-batch", "must be a positive number of sequences");
  so.global_batch = a.global_batch;
  so.top_k = a.top;
  so.objective = a.objective == "cost" ? Objective::cost : Objective::time;
  so.dtype = parse_dtype(a.dtype);
  so.attention = parse_attention(a.attention);
  so.estimate = estimate_options(a, true);
  if (!a.train_tokens.empty())
    so.estimate.train_tokens = io::parse_count(a.train_tokens, "--train-tokens");
  if (a.distinct) so.top_k = std::min(kMaxTop, a.top * kDistinctOverfetch);
  KnobSpace knobs = knobs_from(a, in, so.gpus.back());
  check_given_knobs(a, knobs, in, so.gpus);
  const std::vector<Framework> frameworks = frameworks_to_rank(a);
  so.plot_points = a.extra.wants_points() ? kPlotPoints : 0;
  ProgressBar bar("planner: searching");
  const std::function<void(double)> progress = bar.callback();
  auto search_all = [&] {
    std::vector<SearchResult> parts;
    for (size_t i = 0; i < frameworks.size(); ++i) {
      // Each framework on its own execution stack, its refusals pruning the search.
      SearchOptions fo = so;
      fo.estimate.framework = frameworks[i];
      if (progress)
        fo.progress = [&, i](double f) { progress((double(i) + f) / double(frameworks.size())); };
      parts.push_back(search(in.model, cluster_for(in.cluster, frameworks[i]), knobs, fo));
    }
    return parts.size() == 1 ? parts.front() : merge_results(parts, so);
  };
  SearchResult r = search_all();
  // Nothing runs with TP inside an NVLink domain (no plan fits in memory, or none can use the
  // GPUs): the model needs wider TP groups, so search them too (unless the user chose the TP
  // sizes or already allowed them).
  if (r.top.empty() && !a.tp_across_nodes && a.knobs[int(KnobId::tp)].empty() &&
      widen_tp_across_nodes(in.model, in.cluster, knobs, so)) {
    const SearchResult narrow = r;
    try {
      r = search_all();
      r.tp_across_nodes_after = in.cluster.nvlink_domain;
    } catch (const InputError& e) {  // the wider search past a bound: keep the narrower answer
      spdlog::info("TP across nodes not searched: {}", e.what());
    }
    if (r.top.empty()) r = narrow;  // the no-fit remedies of the narrower search
  }
  bar.finish();
  int collapsed = 0;
  if (a.distinct) r.top = distinct_plans(r.top, a.top, &collapsed);
  spdlog::info("{}", counts_line(r));
  // The report's context (header, diagnostics) shows the first framework's stack.
  Inputs ranked = in;
  ranked.cluster = cluster_for(in.cluster, frameworks.front(), false);
  if (r.top.empty()) throw_no_fit(ranked, r);
  for (const Estimate& e : r.top) require_finite(e);

  RunContext ctx{
      .model_file = ranked.model_file,
      .cluster_file = ranked.cluster_file,
      .model = &ranked.model,
      .cluster = &ranked.cluster,
      .gpus = *std::max_element(so.gpus.begin(), so.gpus.end()),
      .gpus_min = so.gpus.size() > 1 ? *std::min_element(so.gpus.begin(), so.gpus.end()) : 0,
      .global_batch = a.global_batch,
      .train_tokens =
          a.train_tokens.empty() ? 0 : io::parse_count(a.train_tokens, "--train-tokens")};
  if (a.distinct) ctx.distinct_left_out = collapsed;
  ctx.bands = shipped_bands();
  ctx.moe_bands = shipped_moe_bands();
  if (a.format == "json")
    std::cout << io::dump_json(suggest_json(ctx, r), 2) << "\n";
  else if (a.format == "csv")
    print_suggest_csv(std::cout, r);
  else
    print_suggest_table(std::cout, ctx, r);
  if (!a.emit.empty()) emit_top_plan(in, r, a.emit, a.out);
  if (!a.trace.empty()) write_trace(ranked, r.top.front(), so.estimate, a.trace);
  write_suggest_outputs(ranked, ctx, r, a.extra, so.estimate);
  return 0;
}

}  // namespace

void add_suggest(CLI::App& app, int* rc) {
  auto a = std::make_shared<SuggestArgs>();
  CLI::App* s =
      app.add_subcommand("suggest", "search every parallel plan and rank the feasible ones");
  s->add_option("--model", a->model, "model YAML (configs/models/) or Hugging Face config.json")
      ->required();
  s->add_option("--cluster", a->cluster, "cluster profile YAML (hw_profiles/)")->required();
  CLI::Option* gpus = s->add_option(
      "--gpus", a->gpus,
      "GPUs to use: a count or a set/range of counts (default: the profile's nodes, else one "
      "NVLink domain)");
  s->add_option("--nodes", a->nodes,
                "hosts of gpus_per_node GPUs (a count or set), in place of --gpus")
      ->excludes(gpus);
  s->add_option("--global-batch", a->global_batch, kGlobalBatchHelp)
      ->transform(sequences_in(1, kMaxGlobalBatch))
      ->required();
  for (const KnobDef& d : knob_table())  // the searched knobs of the knob table
    if (d.searched) s->add_option(d.option(), a->knobs[int(d.id)], d.help);
  s->add_option("--attention", a->attention, "flash or unfused (default: the framework's stack)");
  s->add_option("--trace", a->trace, "write the top plan's simulated iteration as a Chrome trace");
  s->add_option("--dtype", a->dtype, "bf16 (default), fp16, fp8, tf32, mxfp8 (Blackwell)");
  s->add_option("--top", a->top, "plans to list (default 10, at most 1000)")
      ->check(integer_in(1, kMaxTop));
  s->add_flag("--distinct", a->distinct,
              fmt("leave out plans that differ from a better-ranked one only in vpp and are "
                  "within {:g}% of its time",
                  100 * kDistinctTolerance));
  s->add_option("--objective", a->objective, "rank by iteration time or by GPU-seconds")
      ->check(CLI::IsMember({"time", "cost"}));
  s->add_option("--train-tokens", a->train_tokens,
                "report days and GPU-hours for this many tokens (e.g. 300B)");
  add_limit_options(s, *a);
  add_framework_option(s, a->framework, true);
  s->add_option("--format", a->format, "table, json or csv")
      ->check(CLI::IsMember({"table", "json", "csv"}));
  s->add_option("--emit", a->emit,
                "write the top plan's launch files: megatron, deepspeed or torchtitan");
  s->add_option("--out", a->out, "directory for --emit's files (created if needed)");
  add_output_options(s, a->extra,
                     "model TFLOP/s per GPU against memory per GPU of every feasible plan");
  s->callback([a, rc] { *rc = run_suggest(*a); });
}

}  // namespace planner::cli
