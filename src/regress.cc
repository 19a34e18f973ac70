#include "planner/regress.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <tuple>

#include "planner/error.h"
#include "planner/format.h"
#include "planner/io/cluster_io.h"
#include "planner/names.h"
#include "planner/search.h"
#include "planner/units.h"

namespace planner {

std::optional<double> formula_flops(const std::string& formula, const ModelSpec& m, double gbs) {
  if (formula == "megatron-hfu") return megatron_hfu_flops_per_iteration(m, gbs);
  if (formula == "megatron-mfu") return model_flops_per_iteration(m, gbs);
  return std::nullopt;
}

namespace {

std::optional<Dtype> dtype_of(const std::string& precision) { return named<Dtype>(precision); }

/// The knobs a row fixes take its value; the others keep the full default range.
/// The split a row ran when it does not say: even where pp divides the layers (or pp is the
/// search's), else the framework's own rule. Megatron-LM counts the embedding and the loss as
/// layers when that makes the division exact, else shortens the first and last stage
/// (--decoder-first/last-pipeline-num-layers); DeepSpeed's pipeline balances the layers with both
/// embeddings (partition_method type:transformer|embedding).
int row_split(const RegressionCase& c, std::optional<int> pp, std::optional<Framework> fw) {
  if (!pp || *pp <= 0 || c.model.layers % *pp == 0 || !c.model.encoders.empty()) return kUnset;
  if (fw && !is_megatron(*fw)) return int(PipelineSplit::embed_loss);
  Plan p;
  p.pp = *pp, p.vpp = c.knob(KnobId::vpp).value_or(1), p.split = PipelineSplit::embed_loss;
  return split_check(c.model.layers, p) == SplitError::none ? int(PipelineSplit::embed_loss)
                                                            : int(PipelineSplit::short_ends);
}

/// `tp_pp`: the pair to fix where the row gives only their product (model_parallel).
KnobSpace knobs_for(const RegressionCase& c, const ClusterProfile& cl, std::optional<Framework> fw,
                    std::optional<std::pair<int, int>> tp_pp = std::nullopt) {
  KnobSpace k = default_knobs(c.model, cl, c.num_gpus);
  const std::optional<int> pp = tp_pp ? std::optional<int>(tp_pp->second) : c.knob(KnobId::pp);
  k[KnobId::split] = {row_split(c, pp, fw)};
  if (tp_pp) k[KnobId::tp] = {tp_pp->first}, k[KnobId::pp] = {tp_pp->second};
  // No published run names its rank order: Megatron-LM's and DeepSpeed's default.
  k[KnobId::order] = {kUnset};
  for (const KnobDef& d : knob_table())  // what the row fixes; the search chooses the rest
    if (const std::optional<int> v = c.knob(d.id)) k[d.id] = {*v};
  if (c.knob(KnobId::mbs)) k.mbs_divisors_only = false;
  return k;
}

void run_row(const RegressionCase& c, const ClusterProfile& profile,
             std::optional<Framework> framework, RegressionRow& row) {
  const std::optional<Dtype> dtype = dtype_of(c.precision);
  if (!dtype) return void(row.unsupported = "precision '" + c.precision + "' is not modelled");
  if (profile.gpu.peak_flops[int(*dtype)] <= 0)
    return void(row.unsupported =
                    profile.gpu.name + " has no " + c.precision + " tensor-core peak");
  try {
    validate_model(c.model, c.id);
  } catch (const InputError& e) {
    return void(row.unsupported = std::string("model shape: ") + e.what());
  }
  row.cluster = profile;  // the job's size, on the profile's node type
  ClusterProfile& cl = row.cluster;
  // The stack: --framework's, else the one the row ran on. The refusals: --framework's only (the
  // row fixes what it ran; the pinned versions' rules are not the ones of every run's version).
  const std::optional<Framework> fw = framework ? framework : c.framework;
  if (fw) cl.software = execution_stack(*fw, cl);
  SearchOptions o;
  o.estimate.framework = framework;
  o.estimate.balanced_partitions = false;  // the split it ran, never one no framework launches
  o.gpus = {c.num_gpus};
  o.global_batch = c.gbs;
  o.top_k = 1;
  o.dtype = *dtype;
  // A published model-parallel size alone (tp x pp): every pair with that product, the fastest.
  std::vector<KnobSpace> spaces;
  if (c.model_parallel && (*c.model_parallel <= 0 || c.num_gpus % *c.model_parallel != 0))
    return void(row.unsupported = "model_parallel " + std::to_string(*c.model_parallel) +
                                  " does not divide num_gpus " + std::to_string(c.num_gpus));
  if (c.model_parallel) {
    for (int tp = 1; tp <= *c.model_parallel; ++tp)
      if (const int pp = *c.model_parallel / tp;
          *c.model_parallel % tp == 0 && tp <= c.model.heads && pp <= c.model.layers)
        spaces.push_back(knobs_for(c, cl, fw, std::pair(tp, pp)));
    if (spaces.empty())
      return void(row.unsupported = "no tp x pp = " + std::to_string(*c.model_parallel) +
                                    " has tp within the model's heads and pp within its layers");
  } else {
    spaces.push_back(knobs_for(c, cl, fw));
  }
  SearchResult r;
  for (const KnobSpace& k : spaces) {
    SearchResult one = search(c.model, cl, k, o);
    r.any_memory_rejection |= one.any_memory_rejection;
    if (one.top.empty()) {
      const double need = one.closest_infeasible.memory_bytes;
      if (need > 0 &&
          (r.closest_infeasible.memory_bytes <= 0 || need < r.closest_infeasible.memory_bytes))
        r.closest_infeasible = one.closest_infeasible;
      continue;
    }
    if (r.top.empty() || one.top.front().iteration_time_s < r.top.front().iteration_time_s)
      r.top = {one.top.front()};
  }
  if (r.top.empty()) {
    row.unsupported = "no plan fits under the model";
    if (r.any_memory_rejection)
      *row.unsupported += ": the closest needs " +
                          std::to_string(int(r.closest_infeasible.memory_bytes / kGiB)) + " GiB";
    return;
  }
  row.estimate = r.top.front();
  if (!finite_result(row.estimate))
    return void(row.unsupported = "the prediction is not a finite number");
  const std::string formula = c.flops_formula.empty() ? "megatron-mfu" : c.flops_formula;
  const std::optional<double> flops_or = formula_flops(formula, c.model, c.gbs);
  if (!flops_or) return void(row.unsupported = "unknown FLOP formula '" + formula + "'");
  const double flops = *flops_or;
  row.measured_iter_time_s = c.measured_iter_time_s
                                 ? *c.measured_iter_time_s
                                 : flops / (*c.measured_tflops_per_gpu * kTera * c.num_gpus);
  const double t = row.estimate.iteration_time_s;
  row.predicted_tflops_per_gpu = flops / (t * c.num_gpus) / kTera;
  row.error_pct = 100.0 * (t - row.measured_iter_time_s) / row.measured_iter_time_s;
}

}  // namespace

RegressionReport run_regression(const std::vector<RegressionCase>& cases,
                                const std::string& profiles_dir,
                                std::optional<Framework> framework) {
  std::error_code ec;
  if (!std::filesystem::is_directory(profiles_dir, ec))
    throw InputError(
        "", 0, "--profiles",
        profiles_dir + " is not a folder (of cluster profiles named as the cases' cluster column)");
  RegressionReport rep;
  std::map<std::string, ClusterProfile> profiles;
  double sum = 0;
  for (const RegressionCase& c : cases) {
    RegressionRow row;
    row.c = &c;
    const std::string path = profiles_dir + "/" + c.cluster + ".yaml";
    if (!profiles.count(c.cluster)) {
      if (!std::filesystem::exists(path, ec)) {
        row.unsupported = "no cluster profile " + path;
        rep.rows.push_back(row);
        continue;
      }
      profiles.emplace(c.cluster, io::load_cluster(path));
    }
    run_row(c, profiles.at(c.cluster), framework, row);
    if (!row.unsupported) {
      ++rep.supported;
      sum += std::fabs(row.error_pct);
      rep.max_abs_error_pct = std::max(rep.max_abs_error_pct, std::fabs(row.error_pct));
    }
    rep.rows.push_back(row);
  }
  rep.mean_abs_error_pct = rep.supported ? sum / rep.supported : 0;
  return rep;
}

std::string source_key(const RegressionCase& c) { return c.source.substr(0, c.source.find(',')); }

namespace {

/// The efficiencies the fit searches: the loader's range of a fitted efficiency, in steps.
constexpr double kFitLo = 0.30, kFitHi = 1.00, kFitStep = 0.0025;
constexpr int kFitPoints = int((kFitHi - kFitLo) / kFitStep + 0.5) + 1;
double fit_eta(int i) { return kFitLo + i * kFitStep; }

/// A row and its error at each efficiency of the grid, computed once: its simulated time scaled
/// by the closed form's ratio at that efficiency and at the profile's own value.
struct CvRow {
  RegressionRow* row;
  std::string source, cluster;
  std::vector<double> error_pct;  ///< per grid point
};

/// The grid point with the least mean absolute error over `rows` (a grid: the error is not
/// smooth in the efficiency where a plan's bottleneck changes).
int fit_sustained(const std::vector<const CvRow*>& rows) {
  int best = 0;
  double best_err = 1e300;
  for (int i = 0; i < kFitPoints; ++i) {
    double err = 0;
    for (const CvRow* r : rows) err += std::fabs(r->error_pct[size_t(i)]);
    if (err < best_err) best = i, best_err = err;
  }
  return best;
}

/// Each row's band from the other sources' rows of `sources` (its own left out, as its error
/// was), whether its measured time fell inside, and the bands of every row (what suggest reads).
void add_bands(RegressionReport& rep, const std::vector<std::string>& sources,
               CrossValidation& out) {
  std::map<std::string, AccuracyBands> without;  // per source
  for (const std::string& s : sources) without[s] = accuracy_bands(rep, s);
  for (RegressionRow& r : rep.rows) {
    if (!r.cv_error_pct) continue;
    const AccuracyBand* b =
        band_for(without.at(source_key(*r.c)), r.cluster.gpu.name, r.c->precision);
    if (!b) continue;
    r.band = *b;
    std::tie(r.predicted_low_s, r.predicted_high_s) = band_times(r.estimate.iteration_time_s, *b);
    r.inside_band =
        r.measured_iter_time_s >= r.predicted_low_s && r.measured_iter_time_s <= r.predicted_high_s;
    ++out.banded, out.inside += r.inside_band;
  }
  out.bands = accuracy_bands(rep);
}

/// CvMode::shipped: every row keeps its error with the profiles as shipped.
CrossValidation as_shipped(RegressionReport& rep) {
  CrossValidation out;
  out.refit = false;
  std::vector<std::string> sources;
  double sum = 0;
  for (RegressionRow& r : rep.rows) {
    if (r.unsupported) continue;
    const std::string s = source_key(*r.c);
    auto f = std::find_if(out.folds.begin(), out.folds.end(),
                          [&](const CvFold& x) { return x.source == s; });
    if (f == out.folds.end()) {
      sources.push_back(s);
      out.folds.push_back({});
      f = out.folds.end() - 1;
      f->source = s;
    }
    const double e = std::fabs(r.error_pct);
    r.cv_error_pct = r.error_pct;
    f->sustained[r.c->cluster] = r.cluster.gpu.sustained_efficiency;
    out.in_sample_fit[r.c->cluster] = r.cluster.gpu.sustained_efficiency;
    // Running means: in sample and "left out" are one figure here.
    f->in_sample_mean_pct += (e - f->in_sample_mean_pct) / ++f->rows;
    f->cv_mean_pct = f->in_sample_mean_pct, f->cv_max_pct = std::max(f->cv_max_pct, e);
    out.max_abs_error_pct = std::max(out.max_abs_error_pct, e);
    sum += e, ++out.rows;
  }
  out.mean_abs_error_pct = out.rows ? sum / out.rows : 0;
  add_bands(rep, sources, out);
  return out;
}

}  // namespace

CrossValidation cross_validate(RegressionReport& rep, std::optional<Framework> framework,
                               CvMode mode) {
  if (mode == CvMode::shipped) return as_shipped(rep);
  std::vector<CvRow> rows;
  EstimateOptions options;
  options.framework = framework;
  for (RegressionRow& r : rep.rows) {
    if (r.unsupported) continue;
    ClusterProfile c = r.cluster;  // one copy per row; only its efficiency changes
    const double base = estimate(r.c->model, c, r.estimate.plan, options).iteration_time_s;
    if (!(base > 0)) continue;  // (a modelled row always has a closed form)
    CvRow cv{&r, source_key(*r.c), r.c->cluster, {}};
    for (int i = 0; i < kFitPoints; ++i) {
      c.gpu.sustained_efficiency = fit_eta(i);
      const double t = r.estimate.iteration_time_s *
                       estimate(r.c->model, c, r.estimate.plan, options).iteration_time_s / base;
      cv.error_pct.push_back(100.0 * (t - r.measured_iter_time_s) / r.measured_iter_time_s);
    }
    rows.push_back(std::move(cv));
  }
  CrossValidation out;
  std::vector<std::string> sources, clusters;
  for (const CvRow& r : rows) {
    if (std::find(sources.begin(), sources.end(), r.source) == sources.end())
      sources.push_back(r.source);
    if (std::find(clusters.begin(), clusters.end(), r.cluster) == clusters.end())
      clusters.push_back(r.cluster);
  }
  auto select = [&](auto keep) {
    std::vector<const CvRow*> v;
    for (const CvRow& r : rows)
      if (keep(r)) v.push_back(&r);
    return v;
  };
  for (const std::string& cl : clusters)
    out.in_sample_fit[cl] =
        fit_eta(fit_sustained(select([&](const CvRow& r) { return r.cluster == cl; })));
  double sum = 0;
  int n = 0;
  for (const std::string& s : sources) {
    CvFold fold;
    fold.source = s;
    const auto train = select([&](const CvRow& r) { return r.source != s; });
    if (train.empty()) {  // a lone source: a fit on no rows would be any grid point
      fold.fitted = false;
      double in = 0;
      for (const CvRow& r : rows)
        if (r.source == s) ++fold.rows, in += std::fabs(r.row->error_pct);
      fold.in_sample_mean_pct = in / fold.rows;
      out.folds.push_back(fold);
      continue;
    }
    const int pooled = fit_sustained(train);
    std::map<std::string, int> point;  // per cluster, the grid point fitted without `s`
    for (const std::string& cl : clusters) {
      const auto mine = select([&](const CvRow& r) { return r.source != s && r.cluster == cl; });
      point[cl] = mine.empty() ? pooled : fit_sustained(mine);
      fold.sustained[cl] = fit_eta(point[cl]);
    }
    double in = 0, cv = 0;
    for (CvRow& r : rows) {
      if (r.source != s) continue;
      const double e = r.error_pct[size_t(point.at(r.cluster))];
      r.row->cv_error_pct = e;
      in += std::fabs(r.row->error_pct), cv += std::fabs(e);
      fold.cv_max_pct = std::max(fold.cv_max_pct, std::fabs(e));
      out.max_abs_error_pct = std::max(out.max_abs_error_pct, std::fabs(e));
      ++fold.rows, ++n, sum += std::fabs(e);
    }
    fold.in_sample_mean_pct = in / fold.rows, fold.cv_mean_pct = cv / fold.rows;
    out.folds.push_back(fold);
  }
  out.mean_abs_error_pct = n ? sum / n : 0;
  out.rows = n;
  add_bands(rep, sources, out);
  return out;
}

AccuracyBands accuracy_bands(const RegressionReport& rep, const std::string& exclude_source) {
  struct Class {
    std::vector<double> errors;
    std::set<std::string> sources;
  };
  std::map<std::pair<std::string, std::string>, Class> classes;
  for (const RegressionRow& r : rep.rows) {
    const std::string source = source_key(*r.c);
    if (!r.cv_error_pct || (!exclude_source.empty() && source == exclude_source)) continue;
    for (const auto& key : {std::pair{r.cluster.gpu.name, r.c->precision},
                            std::pair<std::string, std::string>{"*", r.c->precision},
                            std::pair<std::string, std::string>{"*", "*"}}) {
      classes[key].errors.push_back(*r.cv_error_pct);
      classes[key].sources.insert(source);
    }
  }
  AccuracyBands out;
  for (const auto& [key, k] : classes)
    out.push_back({key.first, key.second, int(k.errors.size()), int(k.sources.size()),
                   quantile(k.errors, kBandLowQuantile), quantile(k.errors, kBandHighQuantile)});
  return out;
}

}  // namespace planner
