#include "cli/outputs.h"

#include <spdlog/spdlog.h>

#include <cctype>
#include <cstdio>

#include "cli/commands.h"
#include "planner/emit.h"
#include "planner/error.h"
#include "planner/format.h"
#include "planner/io/output.h"
#include "planner/limits.h"
#include "planner/report/svg.h"
#include "planner/units.h"

namespace planner::cli {

void add_output_options(CLI::App* s, OutputArgs& a, const std::string& what) {
  s->add_option("--seq-len", a.seq_len,
                "sequence length in tokens (default: the model file's seq_len, or a Hugging Face "
                "config's max_position_embeddings up to 8192)")
      ->check(integer_in(1, limits::kSeqLen));
  s->add_option("--routing-imbalance", a.routing_imbalance,
                "a model with experts: the token copies the busiest expert rank receives over the "
                "mean (default 1, balanced routing)")
      ->check(number_in(1, kMaxRoutingImbalance, false));
  add_mtp_option(s, a.mtp_layers);
  s->add_option("--plot", a.plot, "write " + what + " as SVG to this file");
  s->add_option("--report", a.report,
                "write a self-contained HTML report (inputs, plans, breakdowns, plots, "
                "diagnostics, launch commands) to this file");
}

void add_mtp_option(CLI::App* s, int& mtp_layers) {
  s->add_option("--mtp-layers", mtp_layers,
                "multi-token-prediction modules after the decoder, on the last pipeline stage "
                "(default: the model file's, e.g. DeepSeek-V3's num_nextn_predict_layers; 0: none)")
      ->check(integer_in(0, limits::kMtpLayers));
}

void apply_seq_len(Inputs& in, const OutputArgs& a) {
  if (a.mtp_layers >= 0 && a.mtp_layers != in.model.mtp_layers) {
    in.model.mtp_layers = a.mtp_layers;
    spdlog::info("{} multi-token-prediction module(s) (--mtp-layers)", a.mtp_layers);
  }
  if (a.routing_imbalance > 0) {  // given (the option itself refuses values under 1)
    if (!in.model.moe.any())
      throw InputError("", 0, "--routing-imbalance",
                       "needs a model with experts; " + in.model_file + " has none");
    in.model.moe.imbalance = a.routing_imbalance;
  }
  if (a.seq_len == 0) return;  // not given (the option itself refuses 0)
  in.model.seq_len = a.seq_len;
  spdlog::info("sequence length {} tokens (--seq-len)", a.seq_len);
}

std::string shell_quote(const std::string& word) {
  bool safe = !word.empty();
  for (char ch : word)
    safe = safe && (std::isalnum(static_cast<unsigned char>(ch)) ||
                    std::string("_-./:=,+@%").find(ch) != std::string::npos);
  if (safe) return word;
  std::string out = "'";
  for (char ch : word) out += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
  return out + "'";
}

namespace {

std::string emit_line(const Inputs& in, const Plan& p, const OutputArgs& a,
                      const EstimateOptions& o, Framework f) {
  std::string cmd = "planner emit --model " + shell_quote(in.model_file) + " --cluster " +
                    shell_quote(in.cluster_file) + " --plan \"" + to_plan_string(p) + "\"";
  if (a.seq_len > 0) cmd += " --seq-len " + std::to_string(a.seq_len);
  if (a.mtp_layers >= 0) cmd += " --mtp-layers " + std::to_string(a.mtp_layers);
  if (o.tp_across_nodes) cmd += " --tp-across-nodes";
  if (o.memory_limit_bytes > 0) {
    cmd += fmt(" --memory-limit-GiB {:.6g}", o.memory_limit_bytes / kGiB);
  }
  const std::string name = to_string(f);
  return cmd + " --framework " + name + " --out launch-" + name;
}

}  // namespace

std::vector<LaunchCommand> launch_commands(const Inputs& in, const std::vector<Estimate>& ranked,
                                           const OutputArgs& a, const EstimateOptions& o) {
  std::vector<LaunchCommand> out;
  for (Framework f : kCurrentFrameworks) {
    LaunchCommand l;
    l.framework = to_string(f);
    for (size_t rank = 0; rank < ranked.size() && l.rank == 0; ++rank) {
      try {
        emit::check_expressible(f, in.model, in.cluster, ranked[rank].plan);
        l.rank = static_cast<int>(rank) + 1;
        l.command = emit_line(in, ranked[rank].plan, a, o, f);
      } catch (const InputError& e) {
        if (l.refusal.empty()) l.refusal = e.what();
      }
    }
    out.push_back(l);
  }
  return out;
}

void write_suggest_outputs(const Inputs& in, const RunContext& ctx, const SearchResult& r,
                           const OutputArgs& a, const EstimateOptions& o) {
  if (!a.plot.empty()) {
    io::write_file_atomically(a.plot, suggest_plot_svg(ctx, r));
    spdlog::info("wrote the plot to {}", a.plot);
  }
  if (!a.report.empty()) {
    io::write_file_atomically(a.report, suggest_html(ctx, r, launch_commands(in, r.top, a, o)));
    spdlog::info("wrote the report to {}", a.report);
  }
}

void write_estimate_outputs(const Inputs& in, const RunContext& ctx, const Estimate& e,
                            const OutputArgs& a, const EstimateOptions& o) {
  if (!a.plot.empty()) {
    io::write_file_atomically(a.plot, estimate_plot_svg(ctx, e));
    spdlog::info("wrote the plot to {}", a.plot);
  }
  if (!a.report.empty()) {
    io::write_file_atomically(a.report, estimate_html(ctx, e, launch_commands(in, {e}, a, o)));
    spdlog::info("wrote the report to {}", a.report);
  }
}

}  // namespace planner::cli
