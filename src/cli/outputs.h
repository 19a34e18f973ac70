#pragma once
/// What suggest and estimate share beyond their text: --seq-len, --plot FILE.svg and
/// --report FILE.html, and the `planner emit` command lines a report shows.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "cli/common.h"
#include "planner/report/html.h"
#include "planner/report/report.h"

namespace planner::cli {

struct OutputArgs {
  int seq_len = 0;               ///< --seq-len: the model's sequence length instead of its file's
  double routing_imbalance = 0;  ///< --routing-imbalance: a model with experts' (0: its file's)
  int mtp_layers = -1;           ///< --mtp-layers: multi-token-prediction modules (-1: the file's)
  std::string plot;              ///< --plot FILE.svg
  std::string report;            ///< --report FILE.html
  bool wants_points() const { return !plot.empty() || !report.empty(); }
};

/// Feasible points a search keeps for the suggest plot (16 bytes each).
inline constexpr std::size_t kPlotPoints = std::size_t{1} << 16;

/// Adds --seq-len, --routing-imbalance, --mtp-layers, --plot and --report to a subcommand;
/// `what` says what the plot shows.
void add_output_options(CLI::App* s, OutputArgs& a, const std::string& what);
/// --mtp-layers alone (emit and compare, which take no plot).
void add_mtp_option(CLI::App* s, int& mtp_layers);

/// --seq-len: replaces the model's (decoder's) sequence length; it must be positive.
/// --routing-imbalance: replaces a model with experts' routing imbalance (an error for a dense
/// model). --mtp-layers: replaces the model's multi-token-prediction modules (0: none).
void apply_seq_len(Inputs& in, const OutputArgs& a);

/// The `planner emit` line for each framework: the first of `ranked` it can express.
std::vector<LaunchCommand> launch_commands(const Inputs& in, const std::vector<Estimate>& ranked,
                                           const OutputArgs& a, const EstimateOptions& o);

/// Writes --plot and --report of a search, each atomically.
void write_suggest_outputs(const Inputs& in, const RunContext& ctx, const SearchResult& r,
                           const OutputArgs& a, const EstimateOptions& o);
/// Writes --plot and --report of one estimate, each atomically.
void write_estimate_outputs(const Inputs& in, const RunContext& ctx, const Estimate& e,
                            const OutputArgs& a, const EstimateOptions& o);

/// A word as the shell reads it: as is when it holds only safe characters, else single-quoted.
std::string shell_quote(const std::string& word);

}  // namespace planner::cli
