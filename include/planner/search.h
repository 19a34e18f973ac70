#pragma once
#include <array>
#include <functional>
#include <optional>
#include <vector>

#include "planner/estimate.h"
#include "planner/knob_table.h"
#include "planner/plot_sample.h"

namespace planner {

/// Values each knob of the knob table may take (its integer encoding: numbers, word indices,
/// kUnset); the search enumerates the product of the `searched` knobs. dp: empty, it follows from
/// the GPU count, else it must be one of these; gbs, dtype and attn come from SearchOptions.
/// Interleaving is implied by vpp > 1 (schedule lists the other schedules to try).
struct KnobSpace {
  std::array<std::vector<int>, kNumKnobs> values;
  std::vector<int>& operator[](KnobId id) { return values[static_cast<int>(id)]; }
  const std::vector<int>& operator[](KnobId id) const { return values[static_cast<int>(id)]; }
  /// vpp values above kDenseVpp are tried only where every chunk gets the same whole number of
  /// blocks (set by default_knobs for its extra values; a user's --vpp list is tried as given).
  bool vpp_whole_chunks_only = false;
  /// mbs values are tried only where they divide the plan's local batch gbs / dp (set by
  /// default_knobs, whose list is 1..kMaxDefaultMicroBatch; a user's --mbs list is tried as
  /// given, and its non-divisors counted as rejections).
  bool mbs_divisors_only = false;
};

/// The default micro-batch sizes: every divisor of the local batch up to this many sequences.
/// A search bound, not a cost constant: past 64 sequences (131,072 tokens at 2,048) a micro-batch's
/// GEMMs are already at their largest-shape efficiency and only its activations grow.
inline constexpr int kMaxDefaultMicroBatch = 64;
/// Over a range of GPU counts, the default micro-batch sizes are the powers of two up to 16 that
/// divide the local batch (the list before every divisor was searched): the search's bound on
/// plans estimated in full (limits::kSearchEstimates) holds for --gpus 8-2048 with it for small
/// models (GPT-3 1.3B), not for 70B and up (README, suggest).
inline constexpr int kMaxRangeMicroBatch = 16;

/// vpp values up to this are searched with uneven chunks allowed; larger ones only where every
/// chunk gets the same whole number of blocks.
inline constexpr int kDenseVpp = 8;

/// Defaults: tp 1..the NVLink domain (at most the GPUs), pp every divisor of the GPU count up to
/// the layers (of the layers too for a model with encoders), cp 1, vpp 1..8 and every divisor of
/// the blocks above 8, mbs every divisor of the local batch up to 64, zero 0..3, every recompute,
/// sp 0/1, 1F1B (interleaved where vpp > 1), every split (even, short_ends, embed_loss,
/// short_last) of a decoder-only model, the execution knobs left to the stack, the optimizer and
/// the ZeRO-3 parameters offloaded to host memory or not (an offload plan is tried only where its
/// twin without offload does not fit), both rank orders (the second only where it moves a group).
KnobSpace default_knobs(const ModelSpec& m, const ClusterProfile& c, int gpus);

enum class Objective { time, cost };

struct SearchOptions {
  std::vector<int> gpus;  ///< candidate GPU counts (usually one)
  int global_batch = 0;
  int top_k = 10;
  Objective objective = Objective::time;
  Dtype dtype = Dtype::bf16;
  std::optional<AttentionKernel> attention;  ///< overrides the stack's attention
  EstimateOptions estimate;
  /// The closed form pre-filters; this many of its best plans (at least 4 x top_k) are then run
  /// through the pipeline simulator on the even and the balanced partition and re-ranked.
  /// 0 ranks by the closed form alone.
  int simulate_candidates = 32;
  std::function<void(double)> progress;  ///< fraction done, called now and then
  /// Feasible (memory, TFLOP/s) points to keep for plots (SearchResult::feasible); 0: none.
  std::size_t plot_points = 0;
  /// Plans whose split cannot cut the layers, and those of vpp values past the layers, counted a
  /// block at a time; false takes each through the search's filters one by one (the same counts:
  /// a test compares them).
  bool split_in_bulk = true;
};

struct SearchResult {
  long long evaluated = 0;
  /// Plans estimated one by one, against limits::kSearchChecked: not those refused in bulk (with
  /// SearchOptions::split_in_bulk, those whose split cannot cut the layers too).
  long long checked = 0;
  /// Offload plans not estimated: the same plan without offload fits, and offload only adds time.
  long long offload_dominated = 0;
  std::array<long long, kNumRejections> rejections{};
  std::vector<Estimate> top;    ///< best first, at most top_k
  Estimate closest_infeasible;  ///< smallest memory overshoot, when nothing fits
  bool any_memory_rejection = false;
  /// Plans a framework refused (Rejection::framework_refuses), the 1st, 2nd, 4th, 8th ... of
  /// each framework's search, which a no-fit message asks that framework about.
  struct Refused {
    Framework framework;
    Plan plan;
  };
  std::vector<Refused> framework_refused;
  double search_time_s = 0;
  int simulated = 0;  ///< candidates re-ranked by the simulator
  /// Candidates ranked by their closed form alone: the search's simulation budget
  /// (limits::kSearchSimulatedTasks) was spent before them.
  int closed_form_only = 0;
  double max_closed_form_gap_pct = 0;  ///< largest |closed form - simulated| among them
  PlotSample feasible;  ///< closed-form points of the ranked plans, when plot_points > 0
  std::vector<Framework> frameworks;  ///< searched for (SearchOptions::estimate.framework)
  /// suggest ranked no plan with TP inside an NVLink domain and searched again with TP
  /// groups across domains (widen_tp_across_nodes): the domain's size; 0 when it did not.
  int tp_across_nodes_after = 0;
};

/// Adds the TP sizes beyond one NVLink domain (2x, 4x, ... the domain, up to the model's heads)
/// to `k` and allows them in `o`; false when there are none. For a model that fits in no plan with
/// TP inside a node, as a second search (suggest does this unless --tp or --tp-across-nodes is
/// given).
bool widen_tp_across_nodes(const ModelSpec& m, const ClusterProfile& c, KnobSpace& k,
                           SearchOptions& o);

/// Every plan of the knob space for the framework o.estimate.framework (the cluster's execution
/// stack should be that framework's: execution_stack), ranked.
SearchResult search(const ModelSpec& m, const ClusterProfile& c, const KnobSpace& k,
                    const SearchOptions& o);

/// The searches of several frameworks as one result (`--framework all`): counts added, the best
/// o.top_k plans of all of them ranked together, each Estimate naming its framework.
SearchResult merge_results(const std::vector<SearchResult>& parts, const SearchOptions& o);

}  // namespace planner
