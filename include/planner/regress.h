#pragma once
#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

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
  /// The framework version the run used (the optional `framework` column): the row is predicted
  /// on its execution stack. None: the loaded profile's default stack (Megatron-LM's, or a legacy
  /// software block's).
  std::optional<Framework> framework;
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
};

struct RegressionReport {
  std::vector<RegressionRow> rows;
  double mean_abs_error_pct = 0, max_abs_error_pct = 0;
  int supported = 0;
};

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
