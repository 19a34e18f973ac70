#pragma once
#include <iosfwd>
#include <nlohmann/json.hpp>
#include <string>

#include "planner/accuracy.h"
#include "planner/knob_table.h"
#include "planner/report/diagnostics.h"
#include "planner/search.h"

namespace planner {

inline constexpr int kJsonSchemaVersion = 1;

/// suggest --distinct: plans that differ only in vpp (and so in interleaving) and are within this
/// fraction of the iteration time of a better-ranked one are left out (issue 15's 0.5%: below
/// the simulator's own gap to the closed form, up to 3%, such plans are one choice).
inline constexpr double kDistinctTolerance = 0.005;

/// The inputs of a run, echoed in every report.
struct RunContext {
  std::string model_file, cluster_file;
  const ModelSpec* model = nullptr;
  const ClusterProfile* cluster = nullptr;
  int gpus = 0;      ///< the largest GPU count searched
  int gpus_min = 0;  ///< the smallest, when --gpus gave several (0: one)
  int global_batch = 0;
  double train_tokens = 0;     ///< 0: not asked
  int distinct_left_out = -1;  ///< plans suggest --distinct left out; -1: not asked
  /// The accuracy bands (configs/accuracy/bands.csv) the reports print beside each time; none:
  /// no band is printed.
  const AccuracyBands* bands = nullptr;
  /// The bands of a model with experts (configs/accuracy/moe-bands.csv, from the MoE runs: the
  /// dense runs' residuals are of another sign).
  const AccuracyBands* moe_bands = nullptr;
  /// Findings the command adds to diagnose()'s (estimate: whether compression would pay).
  std::vector<Diagnostic> extra{};
  /// diagnose()'s findings for `e`, then `extra`.
  std::vector<Diagnostic> diagnostics(const Estimate& e) const {
    std::vector<Diagnostic> d = diagnose(*model, *cluster, e);
    d.insert(d.end(), extra.begin(), extra.end());
    return d;
  }
  /// The band of a plan on this cluster in its precision, or nullptr: from moe_bands for a
  /// model with experts, else from bands.
  /// The bands this model's plans take (moe_bands for a model with experts), or nullptr.
  const AccuracyBands* model_bands() const { return model && model->moe.any() ? moe_bands : bands; }
  const AccuracyBand* band(const Plan& p) const {
    const AccuracyBands* b = model_bands();
    return b && cluster ? band_for(*b, cluster->gpu.name, to_string(p.dtype)) : nullptr;
  }
  /// "6144 GPUs" or "GPUs: 64-512" (several counts searched).
  std::string gpus_text() const {
    return gpus_min > 0 && gpus_min != gpus
               ? "GPUs: " + std::to_string(gpus_min) + "-" + std::to_string(gpus)
               : std::to_string(gpus) + " GPUs";
  }
};

/// "flash", or "unfused (the plan's attn=unfused; the stack's is flash)": the attention kernel
/// `p` runs on `c` (attention_of), for the headers of suggest and estimate.
std::string attention_note(const Plan& p, const ClusterProfile& c);

/// "# for     Megatron-LM d98e8a64 (--framework megatron): ..." (the table's and estimate's header)
std::string frameworks_line(const std::vector<Framework>& frameworks, bool ranked);

/// What the decoder layer has beyond its sizes, for the model line: " of 128" after the heads
/// where heads x head_dim is not hidden (`heads`), and "; QKV bias; window 4096 on 50% of the
/// layers ..." (`extras`, empty for a plain layer).
std::string head_width_text(const ModelSpec& m);
/// "; 1 multi-token-prediction module (11.61B parameters more, last stage)", or "" without.
std::string mtp_text(const ModelSpec& m);
std::string layer_extras_text(const ModelSpec& m);

/// "12,480 plans: 3,117 ranked, 8,903 out of memory, 460 batch not divisible"
std::string counts_line(const SearchResult& r);

void print_suggest_table(std::ostream& out, const RunContext& ctx, const SearchResult& r);
void print_suggest_csv(std::ostream& out, const SearchResult& r);
nlohmann::json suggest_json(const RunContext& ctx, const SearchResult& r);

void print_estimate_text(std::ostream& out, const RunContext& ctx, const Estimate& e);
nlohmann::json estimate_json(const RunContext& ctx, const Estimate& e);

/// The JSON object of one plan (plan, metrics, breakdown).
/// `band`: the accuracy band for the plan (iteration_time_s_low and _high), or none.
nlohmann::json plan_json(const ModelSpec& m, const Estimate& e, double train_tokens,
                         const AccuracyBand* band = nullptr);

/// The knob-table columns of a list of plans: every knob with a column, the optional ones only
/// where some plan sets them (the text table and the HTML table).
std::vector<const KnobDef*> plan_columns(const std::vector<Estimate>& plans);

/// The plan's knobs as JSON, every knob of the table: numbers, words, null where left unset.
nlohmann::json knobs_json(const Plan& p);

/// "12,480"
std::string with_commas(long long v);

/// Run-length form of per-stage counts: {12,12,12,13} -> "12x3,13".
std::string compact_list(const std::vector<int>& v);

}  // namespace planner
