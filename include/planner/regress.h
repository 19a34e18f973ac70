#pragma once
#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "planner/accuracy.h"
#include "planner/cluster.h"
#include "planner/estimate.h"
#include "planner/knob_table.h"
#include "planner/model.h"

namespace planner {

/// One measured run (a row of the regression-case CSV, shared/data/README.md). Knobs left empty
/// are std::nullopt: the planner chooses them under its own model.
struct RegressionCase {
  int line = 0;  ///< in the CSV, for messages
  std::string id, source, cluster, precision, flops_formula;
  int num_gpus = 0;
  ModelSpec model;
  /// The plan knobs the row fixes, by knob-table row (its integer encoding); the knob table's
  /// rows that are columns of the file (tp, pp, dp, cp, sp, vpp, mbs, zero, recompute) are read.
  std::array<std::optional<int>, kNumKnobs> knobs;
  std::optional<int> knob(KnobId id) const { return knobs[static_cast<int>(id)]; }
  int gbs = 0;
  std::optional<double> measured_iter_time_s, measured_tflops_per_gpu;
  /// The source's own model TFLOP/s (`published_tflops_per_gpu`): for checking the planner's
  /// FLOP count against the measured time, not a measurement.
  std::optional<double> published_tflops_per_gpu;
  /// The framework version the run used (the optional `framework` column): the row is predicted
  /// on its execution stack. None: the loaded profile's default stack (Megatron-LM's, or a legacy
  /// software block's).
  std::optional<Framework> framework;
  /// tp x pp where the source publishes only the model-parallel size (`model_parallel`; Narayanan
  /// et al. 2021 Table 2): regress searches the tp, pp pairs whose product it is.
  std::optional<int> model_parallel;
};

/// Reads the CSV; a malformed file throws InputError naming the line (row) and the column.
std::vector<RegressionCase> load_cases(const std::string& path);
std::vector<RegressionCase> parse_cases(const std::string& text, const std::string& file);

struct RegressionRow {
  const RegressionCase* c = nullptr;
  std::optional<std::string> unsupported;  ///< why the model cannot represent the row
  ClusterProfile cluster;                  ///< the row's profile, sized to its GPU count
  Estimate estimate;                       ///< the plan the planner chose, when supported
  double measured_iter_time_s = 0;         ///< given, or converted from TFLOP/s by the formula
  double predicted_tflops_per_gpu = 0;     ///< the prediction counted with the row's formula
  double error_pct = 0;                    ///< 100 (predicted - measured) / measured time
  /// Leave-one-source-out (cross_validate): the error with the fitted constants refitted on the
  /// other sources' rows.
  std::optional<double> cv_error_pct;
  /// The band from the other sources' comparable rows (cross_validate): the range the measured
  /// time should fall in, and whether it did.
  std::optional<AccuracyBand> band;
  double predicted_low_s = 0, predicted_high_s = 0;
  bool inside_band = false;
};

struct RegressionReport {
  std::vector<RegressionRow> rows;
  double mean_abs_error_pct = 0, max_abs_error_pct = 0;
  int supported = 0;
};

/// A row's source for cross-validation: its `source` up to the first comma ("Narayanan et al.
/// 2021 (SC21)").
std::string source_key(const RegressionCase& c);

/// Leave one source out. The fitted global constant, each profile's `sustained_efficiency`, is
/// refitted (least mean absolute error) on the other sources' rows of that profile, or, where
/// they have none, pooled over all their rows; the left-out source is predicted with it. Each
/// row keeps the plan the in-sample search chose; its time at another efficiency is its
/// simulated time scaled by the closed form's ratio at the two efficiencies.
struct CvFold {
  std::string source;
  int rows = 0;
  double in_sample_mean_pct = 0, cv_mean_pct = 0, cv_max_pct = 0;
  std::map<std::string, double> sustained;  ///< per cluster, as refitted without this source
  /// False where no other source has a modelled row: nothing to refit on, so its rows get no
  /// cross-validated error (and count in no cross-validated figure).
  bool fitted = true;
};
struct CrossValidation {
  /// False under CvMode::shipped: nothing refitted, each row's "cross-validated" error its error.
  bool refit = true;
  std::vector<CvFold> folds;
  AccuracyBands bands;         ///< from every row's cross-validated error (what suggest reads)
  int banded = 0, inside = 0;  ///< rows with a band from the other sources, and inside it
  std::map<std::string, double> in_sample_fit;  ///< per cluster, fitted on every row
  double mean_abs_error_pct = 0, max_abs_error_pct = 0;
  int rows = 0;  ///< rows with a cross-validated error (0: every source alone, nothing held out)
};
/// The bands of the rows' cross-validated errors, every class with at least one row, leaving out
/// the rows of `exclude_source` (empty: none).
AccuracyBands accuracy_bands(const RegressionReport& rep, const std::string& exclude_source = "");

/// How cross_validate holds each source out. `source`: sustained_efficiency refitted without it.
/// `shipped`: nothing refitted, for rows no constant was fitted to (the MoE runs and the
/// independent checks: the one fitted constant is fitted on the dense public set), whose errors
/// with the profiles as shipped are already out of sample; their bands still come from the other
/// sources' rows.
enum class CvMode { source, shipped };

/// Fills each modelled row's cv_error_pct, and its band from the other sources' rows (and whether
/// the measured time fell inside it). `framework` as given to run_regression.
CrossValidation cross_validate(RegressionReport& rep,
                               std::optional<Framework> framework = std::nullopt,
                               CvMode mode = CvMode::source);

/// FLOPs of one iteration counted with a named formula ("megatron-hfu", "megatron-mfu").
std::optional<double> formula_flops(const std::string& formula, const ModelSpec& m, double gbs);

/// Runs every case: loads `profiles_dir`/<cluster>.yaml, fixes the given knobs, searches the rest.
/// `framework`: the rows' plans and stack for that framework (execution_stack; rows it cannot run
/// are unsupported); none, the default: each row as it ran, on the stack of the framework its
/// `framework` column names (else the profile's default), refused only where no framework runs it.
RegressionReport run_regression(const std::vector<RegressionCase>& cases,
                                const std::string& profiles_dir,
                                std::optional<Framework> framework = std::nullopt);

}  // namespace planner
