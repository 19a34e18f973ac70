#include "planner/regress.h"

#include <fmt/core.h>

#include <cmath>
#include <iostream>
#include <map>

#include "cli/commands.h"
#include "planner/error.h"
#include "planner/format.h"
#include "planner/framework.h"
#include "planner/io/bands_io.h"
#include "planner/io/json.h"
#include "planner/io/output.h"
#include "planner/limits.h"
#include "planner/report/report.h"

namespace planner::cli {
namespace {

struct RegressArgs {
  std::vector<std::string> cases;
  std::string profiles = "hw_profiles", format = "table", explain, framework, cv;
  std::string write_bands;
  double tolerance = -1, cv_tolerance = -1;
  bool allow_unsupported = false;
};

void print_table(const RegressionReport& rep) {
  fmt::print("# {:<15} {:<13} {:>10} {:>10} {:>9} {:>9} {:>8}  plan\n", "id", "cluster", "pred_s",
             "meas_s", "pred_TF", "meas_TF", "error%");
  for (const RegressionRow& r : rep.rows) {
    const RegressionCase& c = *r.c;
    if (r.unsupported) {
      fmt::print("  {:<15} {:<13} unsupported: {}\n", c.id, c.cluster, *r.unsupported);
      continue;
    }
    const double meas_tf =
        r.predicted_tflops_per_gpu * r.estimate.iteration_time_s / r.measured_iter_time_s;
    fmt::print("  {:<15} {:<13} {:>10.3f} {:>10.3f} {:>9.1f} {:>9.1f} {:>+8.1f}  --plan \"{}\"\n",
               c.id, c.cluster, r.estimate.iteration_time_s, r.measured_iter_time_s,
               r.predicted_tflops_per_gpu, meas_tf, r.error_pct, to_plan_string(r.estimate.plan));
  }
  fmt::print("# {} of {} rows modelled: mean absolute error {:.2f}%, max {:.2f}%\n", rep.supported,
             rep.rows.size(), rep.mean_abs_error_pct, rep.max_abs_error_pct);
  double sum = 0, worst = 0;
  for (const RegressionRow& r : rep.rows) {
    if (r.unsupported) continue;
    const double gap =
        100.0 * std::fabs(r.estimate.closed_form_time_s / r.estimate.iteration_time_s - 1);
    sum += gap, worst = std::max(worst, gap);
  }
  if (rep.supported > 0)
    fmt::print(
        "# closed form against the pipeline simulator on the chosen plans: mean {:.2f}%, max "
        "{:.2f}%\n",
        sum / rep.supported, worst);
}

void print_cv(const CrossValidation& cv) {
  if (cv.refit)
    fmt::print(
        "# leave one source out: each source predicted with sustained_efficiency refitted "
        "on the others\n");
  else
    fmt::print(
        "# as shipped: nothing refitted, each row's error as it stands (out of sample only for "
        "rows no constant was fitted to); each source's bands from the other sources' rows\n");
  fmt::print("# {:<58} {:>4} {:>9} {:>8} {:>8}  refitted\n", "source", "rows", "in-sample",
             "cv_mean", "cv_max");
  for (const CvFold& f : cv.folds) {
    if (!f.fitted) {
      fmt::print("  {:<58} {:>4} {:>8.2f}% {:>8} {:>8}  none: no other source to refit on\n",
                 f.source.substr(0, 58), f.rows, f.in_sample_mean_pct, "-", "-");
      continue;
    }
    std::string fit = cv.refit ? "" : "none: ";
    for (const auto& [cluster, eta] : f.sustained)
      fit += fmt("{}{} {:.4f}", fit.empty() || fit == "none: " ? "" : ", ", cluster, eta);
    fmt::print("  {:<58} {:>4} {:>8.2f}% {:>7.2f}% {:>7.2f}%  {}\n", f.source.substr(0, 58), f.rows,
               f.in_sample_mean_pct, f.cv_mean_pct, f.cv_max_pct, fit);
  }
  std::string fit;
  for (const auto& [cluster, eta] : cv.in_sample_fit)
    fit += fmt("{}{} {:.4f}", fit.empty() ? "" : ", ", cluster, eta);
  if (cv.rows == 0 && !cv.refit)
    fmt::print("# as shipped: no row modelled\n");
  else if (cv.rows == 0)
    fmt::print(
        "# cross-validated: no row (the cases have one source: leaving it out leaves nothing to "
        "refit on; in-sample refit on every row: {})\n",
        fit);
  else if (cv.refit)
    fmt::print(
        "# cross-validated: mean absolute error {:.2f}%, max {:.2f}% over {} rows (in-sample "
        "refit on every row: {})\n",
        cv.mean_abs_error_pct, cv.max_abs_error_pct, cv.rows, fit);
  else
    fmt::print("# as shipped: mean absolute error {:.2f}%, max {:.2f}% over {} rows ({})\n",
               cv.mean_abs_error_pct, cv.max_abs_error_pct, cv.rows, fit);
  fmt::print(
      "# bands: {} of {} measured times inside their {:.0f}% bands (each band from the other "
      "sources' comparable rows)\n",
      cv.inside, cv.banded, 100 * (kBandHighQuantile - kBandLowQuantile));
}

nlohmann::json cv_json(const CrossValidation& cv) {
  nlohmann::json folds = nlohmann::json::array();
  // A figure over no row is null, not 0.
  auto figure = [](bool any, double v) { return any ? nlohmann::json(v) : nlohmann::json(); };
  for (const CvFold& f : cv.folds)
    folds.push_back({{"source", f.source},
                     {"rows", f.rows},
                     {"fitted", f.fitted},
                     {"in_sample_mean_abs_error_pct", f.in_sample_mean_pct},
                     {"cv_mean_abs_error_pct", figure(f.fitted, f.cv_mean_pct)},
                     {"cv_max_abs_error_pct", figure(f.fitted, f.cv_max_pct)},
                     {"sustained_efficiency", f.sustained}});
  return {{"by", cv.refit ? "source" : "shipped"},
          {"refit", cv.refit},
          {"folds", folds},
          {"band_rows", cv.banded},
          {"band_inside", cv.inside},
          {"in_sample_sustained_efficiency", cv.in_sample_fit},
          {"rows_cross_validated", cv.rows},
          {"mean_abs_error_pct", figure(cv.rows > 0, cv.mean_abs_error_pct)},
          {"max_abs_error_pct", figure(cv.rows > 0, cv.max_abs_error_pct)}};
}

nlohmann::json to_json(const RegressionReport& rep) {
  nlohmann::json rows = nlohmann::json::array();
  for (const RegressionRow& r : rep.rows) {
    const RegressionCase& c = *r.c;
    nlohmann::json j = {{"id", c.id}, {"cluster", c.cluster}, {"source", c.source}};
    if (c.measured_iter_time_s) j["measured_iter_time_s"] = *c.measured_iter_time_s;
    if (c.measured_tflops_per_gpu) j["measured_tflops_per_gpu"] = *c.measured_tflops_per_gpu;
    if (r.unsupported) {
      j["unsupported"] = *r.unsupported;
      j["error_pct"] = nullptr;
    } else {
      j["plan"] = to_plan_string(r.estimate.plan);
      j["predicted_iter_time_s"] = r.estimate.iteration_time_s;
      j["closed_form_iter_time_s"] = r.estimate.closed_form_time_s;
      j["predicted_tflops_per_gpu"] = r.predicted_tflops_per_gpu;
      if (!c.measured_iter_time_s) j["measured_iter_time_s_derived"] = r.measured_iter_time_s;
      j["error_pct"] = r.error_pct;
      if (r.cv_error_pct) j["cv_error_pct"] = *r.cv_error_pct;
      if (r.band) {
        j["predicted_low_s"] = r.predicted_low_s;
        j["predicted_high_s"] = r.predicted_high_s;
        j["inside_band"] = r.inside_band;
      }
    }
    rows.push_back(j);
  }
  return {{"schema_version", kJsonSchemaVersion},
          {"rows", rows},
          {"rows_modelled", rep.supported},
          {"mean_abs_error_pct", rep.mean_abs_error_pct},
          {"max_abs_error_pct", rep.max_abs_error_pct}};
}

int explain(const RegressionReport& rep, const std::string& id, const std::string& profiles) {
  for (const RegressionRow& r : rep.rows) {
    if (r.c->id != id) continue;
    const RegressionCase& c = *r.c;
    fmt::print("# {}: {}\n", c.id, c.source);
    if (r.unsupported) {
      fmt::print("unsupported: {}\n", *r.unsupported);
      return 0;
    }
    const RunContext ctx{"row " + c.id, profiles + "/" + c.cluster + ".yaml",
                         &c.model,      &r.cluster,
                         c.num_gpus,    0,
                         c.gbs,         0};
    print_estimate_text(std::cout, ctx, r.estimate);
    fmt::print("\nmeasured   {:.3f} s per iteration", r.measured_iter_time_s);
    if (c.measured_tflops_per_gpu)
      fmt::print(" (from {:.1f} TFLOP/s per GPU, {})", *c.measured_tflops_per_gpu, c.flops_formula);
    fmt::print(
        "\npredicted  {:.3f} s per iteration, {:.1f} TFLOP/s per GPU by the same formula: "
        "{:+.1f}%\n",
        r.estimate.iteration_time_s, r.predicted_tflops_per_gpu, r.error_pct);
    return 0;
  }
  throw InputError("", 0, "--explain", "no row with id '" + id + "'");
}

/// Every file's rows, in order; an id given twice is an error naming the second.
std::vector<RegressionCase> load_all(const std::vector<std::string>& files) {
  std::vector<RegressionCase> all;
  std::map<std::string, std::string> seen;  // id -> its file
  for (const std::string& f : files)
    for (RegressionCase& c : load_cases(f)) {
      if (const auto [at, fresh] = seen.emplace(c.id, f); !fresh)
        throw InputError(f, c.line, "id",
                         "duplicate id '" + c.id + "' (first in " + at->second + ")");
      all.push_back(std::move(c));
    }
  return all;
}

int run_regress(const RegressArgs& a) {
  const std::vector<RegressionCase> cases = load_all(a.cases);
  const std::optional<Framework> framework =
      a.framework.empty() ? std::nullopt
                          : std::optional<Framework>(parse_framework(a.framework, "--framework"));
  RegressionReport rep = run_regression(cases, a.profiles, framework);
  if (!a.explain.empty()) return explain(rep, a.explain, a.profiles);
  std::optional<CrossValidation> cv;
  if (!a.cv.empty())
    cv = cross_validate(rep, framework, a.cv == "shipped" ? CvMode::shipped : CvMode::source);
  if (!a.write_bands.empty() && !cv)
    throw InputError("", 0, "--write-bands",
                     "needs --cv source or --cv shipped (the bands are its errors)");
  if (a.format == "json") {
    nlohmann::json j = to_json(rep);
    if (cv) j["cv"] = cv_json(*cv);
    std::cout << io::dump_json(j, 2) << "\n";
  } else {
    print_table(rep);
    if (cv) print_cv(*cv);
  }
  // The gate: a check that modelled nothing, or skipped rows unasked, has not checked the model.
  const int rc = [&] {
    const int rows = static_cast<int>(rep.rows.size());
    if (rep.supported == 0) {
      std::cerr << fmt(
          "planner: regress modelled none of the {} rows (each says why in the output)\n", rows);
      return 1;
    }
    if (rep.supported < rows && !a.allow_unsupported) {
      std::cerr << fmt(
          "planner: regress modelled {} of {} rows; {} unsupported (listed in the "
          "output; --allow-unsupported accepts that)\n",
          rep.supported, rows, rows - rep.supported);
      return 1;
    }
    if (a.tolerance >= 0 && !(rep.mean_abs_error_pct <= a.tolerance)) {  // NaN fails too
      std::cerr << fmt("planner: mean absolute error {:.2f}% exceeds the tolerance {:.2f}%\n",
                       rep.mean_abs_error_pct, a.tolerance);
      return 1;
    }
    if (cv && a.cv_tolerance >= 0 && cv->rows == 0) {
      std::cerr << "planner: --cv-tolerance: no row was cross-validated (the cases have one "
                   "source, and leaving it out leaves nothing to refit on)\n";
      return 1;
    }
    if (cv && a.cv_tolerance >= 0 && !(cv->mean_abs_error_pct <= a.cv_tolerance)) {
      std::cerr << fmt("planner: {} mean absolute error {:.2f}% exceeds the tolerance {:.2f}%\n",
                       cv->refit ? "cross-validated" : "as-shipped", cv->mean_abs_error_pct,
                       a.cv_tolerance);
      return 1;
    }
    return 0;
  }();
  // The bands only from a run that passed: a file of nothing would replace the shipped one.
  if (rc == 0 && !a.write_bands.empty())
    io::write_file_atomically(a.write_bands, io::bands_csv(cv->bands));
  return rc;
}

}  // namespace

void add_regress(CLI::App& app, int* rc) {
  auto a = std::make_shared<RegressArgs>();
  CLI::App* s = app.add_subcommand("regress", "check the cost model against measured runs");
  s->add_option("--cases", a->cases,
                "regression cases CSV (the format of published-runs.csv); several: their rows "
                "together")
      ->required()
      ->take_all();
  s->add_option("--profiles", a->profiles, "folder of cluster profiles (default hw_profiles)");
  s->add_option("--tolerance", a->tolerance, "exit 1 when the mean absolute error (%) exceeds this")
      ->check(number_in(0, 1000));
  s->add_flag("--allow-unsupported", a->allow_unsupported,
              "pass although some rows cannot be modelled (by default they fail the run)");
  s->add_option("--format", a->format, "table or json")->check(CLI::IsMember({"table", "json"}));
  s->add_option("--cv", a->cv,
                "source: leave one source out, refitting sustained_efficiency on the others; "
                "shipped: refit nothing (rows never fitted to), each source's bands from the "
                "others")
      ->check(CLI::IsMember({"source", "shipped"}));
  s->add_option("--cv-tolerance", a->cv_tolerance,
                "with --cv, exit 1 when the cross-validated mean absolute error (%) exceeds this")
      ->check(number_in(0, 1000));
  s->add_option("--write-bands", a->write_bands,
                "with --cv, write the accuracy bands suggest and estimate print "
                "(configs/accuracy/bands.csv; moe-bands.csv for models with experts)");
  s->add_option("--explain", a->explain, "one row's full breakdown next to its measurement");
  s->add_option(
      "--framework", a->framework,
      framework_names() +
          ": every row's plan and stack for that framework (default: each row as it ran, on its "
          "framework column's stack)");
  s->callback([a, rc] { *rc = run_regress(*a); });
}

}  // namespace planner::cli
