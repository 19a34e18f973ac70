#include "planner/search.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <optional>
#include <queue>
#include <tuple>

#include "planner/cost/communication.h"
#include "planner/error.h"
#include "planner/format.h"
#include "planner/limits.h"

namespace planner {

KnobSpace default_knobs(const ModelSpec& m, const ClusterProfile& c, int gpus) {
  using K = KnobId;
  KnobSpace k;
  for (int t = 1; t <= std::min(c.nvlink_domain, gpus); ++t) k[K::tp].push_back(t);
  // Every pp that divides the GPUs: the splits (short_ends, embed_loss, short_last) cut layers
  // that pp does not divide; a model with encoders splits its blocks as evenly as they allow.
  for (int p = 1; p <= std::min(m.layers, gpus); ++p)
    if (gpus % p == 0 && (m.encoders.empty() || m.layers % p == 0)) k[K::pp].push_back(p);
  k[K::cp] = {1};
  for (int v = 1; v <= kDenseVpp; ++v) k[K::vpp].push_back(v);
  // Beyond that, the interleavings that give every chunk whole blocks (Megatron-LM's
  // --num-layers-per-virtual-pipeline-stage): 92 layers on pp=4 interleave only as vpp=23.
  const int blocks = block_layout(m).count();
  for (int v = kDenseVpp + 1; v <= blocks; ++v)
    if (blocks % v == 0) k[K::vpp].push_back(v);
  k.vpp_whole_chunks_only = true;
  for (int b = 1; b <= kMaxDefaultMicroBatch; ++b) k[K::mbs].push_back(b);
  k.mbs_divisors_only = true;
  k[K::zero] = {0, 1, 2, 3};
  k[K::recompute] = {int(Recompute::none), int(Recompute::selective), int(Recompute::full)};
  k[K::sp] = {0, 1};
  k[K::schedule] = {int(Schedule::one_f_one_b)};
  for (const KnobDef& d : knob_table())  // the execution knobs: the stack's own choice
    if (d.searched && d.optional) k[d.id] = {kUnset};
  // Offload to host memory where a plan does not fit without it (the search skips an offload
  // plan whose twin without offload fits: offload only adds time); all the states moved.
  if (c.host.present()) {
    k[K::offload_optimizer] = {kUnset, int(OffloadDevice::cpu)};
    k[K::offload_params] = {kUnset, int(OffloadDevice::cpu)};
  }
  // Every split of the decoder layers: where pp does not divide them, and where shorter first
  // and last stages (the embedding's and the logits', a model's MTP modules) beat the even split.
  // (short_last was tried only when asked until the plans whose split cannot cut the layers
  // were counted a block at a time: DeepSeek-V3 on 2,048 GPUs passed the checked-plan bound.)
  if (m.encoders.empty())
    k[K::split] = {kUnset, int(PipelineSplit::short_ends), int(PipelineSplit::embed_loss),
                   int(PipelineSplit::short_last)};
  // Both rank orders: the pipeline inside a node pays where TP leaves room in it.
  k[K::order] = {kUnset, int(RankOrder::tp_pp_dp)};
  // Expert parallelism for a model with experts: every power of two dividing them (check_plan
  // keeps those whose groups fold into a stage's ranks), etp 1 as Megatron-Bridge's MoE recipes,
  // the all-to-all overlap and the flex and all-gather dispatchers; ZeRO-1 at most and no ZeRO-3
  // parameter offload (the experts' states shard under the distributed optimizer only).
  if (m.moe.any()) {
    for (int e = 2; e <= std::min(m.moe.experts, gpus); e *= 2)
      if (m.moe.experts % e == 0) k[K::ep].push_back(e);
    k[K::ep_comm_overlap] = {kUnset, 1};  // off is the stack's default
    k[K::dispatcher] = {kUnset, int(Dispatcher::flex), int(Dispatcher::allgather)};
    k[K::zero] = {0, 1};
    k[K::offload_params] = {kUnset};
    k[K::recompute].push_back(int(Recompute::selective_moe));
  }
  return k;
}

namespace {

/// The micro-batch sizes the cells loop over: a given list as given; the default list less the
/// sizes that divide no local batch (a local batch gbs / dp divides gbs, so its divisors do too),
/// and over several GPU counts only its powers of two up to kMaxRangeMicroBatch.
std::vector<int> searched_mbs(const KnobSpace& k, const SearchOptions& o) {
  if (!k.mbs_divisors_only) return k[KnobId::mbs];
  std::vector<int> out;
  for (int b : k[KnobId::mbs]) {
    const bool power_of_two = (b & (b - 1)) == 0;
    if (o.gpus.size() > 1 && (!power_of_two || b > kMaxRangeMicroBatch)) continue;
    if (b > 0 && o.global_batch % b == 0) out.push_back(b);
  }
  return out;
}

double score(const Estimate& e, Objective o) {
  return o == Objective::cost ? e.iteration_time_s * e.plan.gpus() : e.iteration_time_s;
}

struct Worse {
  Objective o;
  bool operator()(const Estimate& a, const Estimate& b) const { return score(a, o) < score(b, o); }
};

class TopK {
 public:
  TopK(int k, Objective o) : k_(k), worse_{o}, heap_(worse_) {}
  void offer(const Estimate& e) {
    if (static_cast<int>(heap_.size()) < k_) {
      heap_.push(e);
    } else if (worse_(e, heap_.top())) {
      heap_.pop();
      heap_.push(e);
    }
  }
  std::vector<Estimate> sorted() {
    std::vector<Estimate> v;
    for (; !heap_.empty(); heap_.pop()) v.push_back(heap_.top());
    std::reverse(v.begin(), v.end());
    return v;
  }

 private:
  int k_;
  Worse worse_;
  std::priority_queue<Estimate, std::vector<Estimate>, Worse> heap_;
};

/// Schedules worth trying: interleaved when vpp > 1; without pipelining they are all the same
/// plan, so one of them.
std::vector<Schedule> schedules_for(int vpp, int pp, const std::vector<int>& allowed) {
  if (vpp > 1) return {Schedule::interleaved};
  std::vector<Schedule> s;
  for (int x : allowed)
    if (Schedule(x) != Schedule::interleaved && (pp > 1 || s.empty())) s.push_back(Schedule(x));
  return s;
}

/// The knobs an odometer turns inside each (pp, vpp, schedule): every searched knob of the table
/// but those the loops hold (tp, cp, mbs, sp, pp, vpp and the schedule it implies), in the
/// table's order, the last turning fastest.
struct InnerKnobs {
  std::vector<const KnobDef*> knobs;
  std::vector<const std::vector<int>*> values;
  long long combinations = 1;  ///< of the knobs but offload
  /// Positions of the offload knobs: the table's last rows, so they turn fastest and each run
  /// of them follows the same other knobs.
  std::vector<size_t> offload;
  /// Whether the positions `at` start a run of offload values (all at their first value).
  bool offload_run_start(const std::vector<size_t>& at) const {
    for (size_t i : offload)
      if (at[i] != 0) return false;
    return true;
  }
  /// A plan another position already gave: offload_pct moves nothing without offload_optimizer.
  bool duplicate(const std::vector<size_t>& at, const Plan& p) const {
    if (p.offload_optimizer != OffloadDevice::none) return false;
    for (size_t i : offload)
      if (knobs[i]->id == KnobId::offload_pct && at[i] != 0) return true;
    return false;
  }

  explicit InnerKnobs(const KnobSpace& k) {
    for (const KnobDef& d : knob_table()) {
      if (!d.searched || k[d.id].empty()) continue;
      switch (d.id) {
        case KnobId::tp:
        case KnobId::pp:
        case KnobId::cp:
        case KnobId::mbs:
        case KnobId::sp:
        case KnobId::vpp:
        case KnobId::schedule:
          continue;
        default:
          const bool off = d.id == KnobId::offload_optimizer || d.id == KnobId::offload_params ||
                           d.id == KnobId::offload_pct;
          if (off) offload.push_back(knobs.size());
          knobs.push_back(&d);
          values.push_back(&k[d.id]);
          // Offload variants are estimated only where the plan without offload does not fit
          // (Searcher::record), and rank-order variants only where the order moves a group, so
          // neither multiplies the plans counted and bounded.
          if (!off && d.id != KnobId::order) combinations *= static_cast<long long>(k[d.id].size());
      }
    }
  }
  /// Sets the plan's inner knobs from position `from` on to the positions `at`.
  void apply(const std::vector<size_t>& at, Plan& p, size_t from = 0) const {
    for (size_t i = from; i < knobs.size(); ++i) knobs[i]->set(p, (*values[i])[at[i]]);
  }
  /// The next position; false after the last. `changed`, when given, receives the first knob
  /// whose value moved (the ones after it went back to their first value).
  bool advance(std::vector<size_t>& at, size_t* changed = nullptr) const {
    for (size_t i = knobs.size(); i-- > 0;) {
      if (++at[i] < values[i]->size()) {
        if (changed) *changed = i;
        return true;
      }
      at[i] = 0;
    }
    return false;
  }
};

/// Runs the closed form's best candidates through the simulator (even and balanced partitions)
/// and keeps the top_k by simulated time.
void rerank_simulated(const ModelSpec& m, const ClusterProfile& c, const SearchOptions& o,
                      bool offload, SearchResult& r) {
  std::vector<Estimate> refined;
  double tasks = 0;  // simulated so far; candidates beyond the budget keep their closed form
  for (const Estimate& e : r.top) {
    const Plan& p = e.plan;
    tasks += 2.0 * p.pp * p.vpp * p.microbatches() * (p.schedule == Schedule::zb_h1 ? 3 : 2);
    if (tasks > limits::kSearchSimulatedTasks) {
      ++r.closed_form_only;
      refined.push_back(e);
      continue;
    }
    Estimate s = refine(m, c, e.plan, o.estimate);
    // The simulated peak of micro-batches in flight may not fit where the closed form's did; the
    // search skipped this plan's offload variants because it fitted, so try the optimizer's.
    if (s.rejection == Rejection::out_of_memory && offload && !p.offloads() && p.zero >= 1) {
      Plan q = p;
      q.offload_optimizer = OffloadDevice::cpu;
      s = refine(m, c, q, o.estimate);
    }
    if (!s.ok()) continue;
    r.max_closed_form_gap_pct =
        std::max(r.max_closed_form_gap_pct,
                 100.0 * std::abs(s.closed_form_time_s - s.iteration_time_s) / s.iteration_time_s);
    refined.push_back(std::move(s));
  }
  r.simulated = static_cast<int>(refined.size()) - r.closed_form_only;
  std::stable_sort(refined.begin(), refined.end(), [&](const Estimate& a, const Estimate& b) {
    return score(a, o.objective) < score(b, o.objective);
  });
  if (static_cast<int>(refined.size()) > o.top_k) refined.resize(o.top_k);
  r.top = std::move(refined);
}

/// Whether the loop tries this (pp, vpp) pair: default values beyond the dense range only where
/// every chunk gets the same whole number of blocks.
bool vpp_tried(const KnobSpace& k, int blocks, int pp, int vpp) {
  return !k.vpp_whole_chunks_only || vpp <= kDenseVpp || blocks % (pp * vpp) == 0;
}

/// Plans per pp value in the inner loops (vpp, schedule, ZeRO, recomputation), without iterating
/// a user's long lists: vpp > 1 is interleaved only; vpp = 1 tries the other schedules (one when
/// pp = 1).
std::vector<long long> inner_plans(const KnobSpace& k, int blocks) {
  const long long per_schedule = InnerKnobs(k).combinations;
  const std::vector<int>& vpps = k[KnobId::vpp];
  std::vector<long long> out;
  for (int pp : k[KnobId::pp]) {
    long long n = 0;
    if (k.vpp_whole_chunks_only) {  // the defaults: a short list
      for (int vpp : vpps)
        if (vpp_tried(k, blocks, pp, vpp))
          n += static_cast<long long>(schedules_for(vpp, pp, k[KnobId::schedule]).size());
    } else {
      const bool one = std::find(vpps.begin(), vpps.end(), 1) != vpps.end();
      n = static_cast<long long>(vpps.size()) - one;
      if (one) n += static_cast<long long>(schedules_for(1, pp, k[KnobId::schedule]).size());
    }
    out.push_back(n * per_schedule);
  }
  return out;
}

/// Refuses, before any work, knob ranges whose product alone would take more than about a second:
/// over kSearchPlans plans, or over kSearchCells (GPU count, tp, cp, mbs, sp, pp) cells, each of
/// which is checked once.
void check_space(const KnobSpace& k, const SearchOptions& o, int blocks) {
  using K = KnobId;
  const double cells = double(o.gpus.size()) * k[K::tp].size() * k[K::cp].size() *
                       searched_mbs(k, o).size() * k[K::sp].size() * k[K::pp].size();
  if (cells > limits::kSearchCells)
    throw InputError(
        "", 0, "",
        fmt("the knob ranges give {:.3g} combinations of GPU count, tp, cp, mbs, sp and "
            "pp, over the limit of {:.0e}; narrow --gpus, --tp, --cp, --mbs or --pp",
            cells, limits::kSearchCells));
  double pp_vpp = double(k[K::pp].size()) * k[K::vpp].size();  // a user's lists, tried whole
  if (k.vpp_whole_chunks_only) {  // the defaults: short lists, so the exact count is cheap
    pp_vpp = 0;
    for (int pp : k[K::pp])
      for (int vpp : k[K::vpp]) pp_vpp += vpp_tried(k, blocks, pp, vpp);
  }
  const double space = cells / k[K::pp].size() * pp_vpp *
                       std::max<size_t>(1, k[K::schedule].size()) *
                       double(InnerKnobs(k).combinations);
  if (space > limits::kSearchPlans)
    throw InputError(
        "", 0, "",
        fmt("the knob ranges span {:.0f} plans, over the limit of {:.0e}; narrow --pp, "
            "--vpp, --mbs, --tp or --ep",
            space, limits::kSearchPlans));
}

/// Counts the plans the search checks one by one and those it estimates in full, and refuses
/// (deterministically: by count, not by time) a search that goes past either limit.
struct SearchWork {
  long long checked = 0;
  double estimated = 0;  ///< estimates in full; one refused for memory counts its share
  void check() {
    if (++checked > limits::kSearchChecked)
      throw InputError(
          "", 0, "",
          fmt("more than {:.0e} plans pass the GPU-count and layout checks; narrow --vpp, "
              "--zero, --recompute or --schedule",
              double(limits::kSearchChecked)));
  }
  void estimate(double weight) {
    if ((estimated += weight) > double(limits::kSearchEstimates))
      throw InputError(
          "", 0, "",
          fmt("more than {:.0e} plans are structurally valid and would be estimated in "
              "full (one refused for memory counting {:g}); narrow the knob ranges or --gpus",
              double(limits::kSearchEstimates), limits::kOutOfMemoryEstimateWeight));
  }
};

/// One search's state: the knob space, the memoised layer costs of the current (tp, cp, mbs,
/// sp) cell, the workspace every estimate reuses, the top plans and the counts.
class Searcher {
 public:
  Searcher(const ModelSpec& m, const ClusterProfile& c, const KnobSpace& k, const SearchOptions& o)
      : m_(m),
        c_(c),
        k_(k),
        o_(o),
        inner_(k),
        at_(inner_.knobs.size()),
        top_(std::max(1, o.simulate_candidates > 0 ? std::max(4 * o.top_k, o.simulate_candidates)
                                                   : o.top_k),
             o.objective) {
    cache_.layout = block_layout(m);
    blocks_ = cache_.layout.count();
    split_pos_ = inner_.knobs.size();
    for (size_t i = 0; i < inner_.knobs.size(); ++i)
      if (inner_.knobs[i]->id == KnobId::split) split_pos_ = i;
    vpps_ascending_ = std::is_sorted(k[KnobId::vpp].begin(), k[KnobId::vpp].end());
    check_space(k, o, blocks_);
    plans_per_pp_ = inner_plans(k, blocks_);
    r_.feasible = PlotSample(o.plot_points);
    // Plans are ranked on a small result (no messages, no per-stage detail); the plans kept are
    // estimated in full at the end.
    eo_ = o.estimate;
    eo_.reasons = false;
    eo_.detail = false;
  }

  /// Every plan of one (GPU count, tp, cp, mbs, sp) cell: each pp, then the inner knobs.
  void cell(int gpus, int tp, int cp, int mbs, int sp) {
    computed_ = false;
    inner_cells_.clear();
    for (size_t ip = 0; ip < k_[KnobId::pp].size(); ++ip) {
      Plan p;
      p.tp = tp, p.cp = cp, p.pp = k_[KnobId::pp][ip], p.mbs = mbs, p.sp = sp != 0;
      p.gbs = o_.global_batch, p.dtype = o_.dtype, p.attention = o_.attention;
      const long long model_parallel = 1LL * tp * cp * p.pp;
      p.dp = static_cast<int>(gpus / model_parallel);
      // The default micro-batch list is the local batch's divisors: other values are not plans.
      // Where the layout does not match the GPU count there is no local batch: its plans are
      // counted once, as mbs=1's.
      if (k_.mbs_divisors_only &&
          (model_parallel * p.dp == gpus ? o_.global_batch % (1LL * mbs * p.dp) != 0 : mbs != 1))
        continue;
      const std::vector<int>& dps = k_[KnobId::dp];
      const bool divides = model_parallel * p.dp == gpus &&
                           (dps.empty() || std::find(dps.begin(), dps.end(), p.dp) != dps.end());
      // A rejection that no inner knob changes is counted for all of them at once, as if each
      // had been tried.
      const Rejection shared =
          divides ? check_layout(m_, c_, p, eo_, nullptr) : Rejection::gpus_mismatch;
      if (shared != Rejection::none) {
        r_.evaluated += plans_per_pp_[ip];
        r_.rejections[int(shared)] += plans_per_pp_[ip];
        continue;
      }
      inner_plans_of(p);
    }
  }

  /// The ranked result: the simulator's re-ranking, then the full detail of what is kept.
  SearchResult finish() {
    r_.top = top_.sorted();
    r_.checked = work_.checked;
    const std::vector<int>& off = k_[KnobId::offload_optimizer];
    const bool offload = std::find(off.begin(), off.end(), int(OffloadDevice::cpu)) != off.end();
    if (o_.simulate_candidates > 0) rerank_simulated(m_, c_, o_, offload, r_);
    for (Estimate& e : r_.top)  // the closed form's detail for those the simulator did not time
      if (!e.simulated) e = estimate(m_, c_, e.plan, o_.estimate);
    if (r_.any_memory_rejection)
      r_.closest_infeasible = estimate(m_, c_, r_.closest_infeasible.plan, o_.estimate);
    if (o_.estimate.framework) r_.frameworks = {*o_.estimate.framework};
    return std::move(r_);
  }

 private:
  /// vpp, the schedules it allows, then the odometer over the other inner knobs.
  void inner_plans_of(Plan& p) {
    far_vpp_known_ = false;
    distinct_known_ = false;
    const std::vector<int>& vpps = k_[KnobId::vpp];
    for (size_t i = 0; i < vpps.size(); ++i) {
      const int vpp = vpps[i];
      if (!vpp_tried(k_, blocks_, p.pp, vpp)) continue;  // a default meant for other pp
      // A user's list (ascending) past the layers: every later value is refused as this one was,
      // counted at once (a list of 800,000 values kept the search busy for seconds per cell).
      if (far_vpp_known_ && vpps_ascending_ && !k_.vpp_whole_chunks_only && vpp > 1 &&
          far_vpp(p, vpp)) {
        add_far_vpp_counts(static_cast<long long>(vpps.size() - i));
        break;
      }
      const std::vector<Schedule> schedules = schedules_for(vpp, p.pp, k_[KnobId::schedule]);
      if (o_.split_in_bulk && vpp_never_fits(p, vpp) && count_refused_vpp(p, vpp, schedules))
        continue;
      for (Schedule sched : schedules) {
        p.vpp = vpp, p.schedule = sched;
        // The split values that cannot cut the layers over this (pp, vpp) refuse all their plans
        // alike: counted at once, the odometer turned over the others alone.
        const InnerKnobs* odometer = &inner_;
        std::optional<InnerKnobs> passing_only;
        std::vector<int> passing;
        if (split_in_bulk()) {
          const std::vector<int>& splits = *inner_.values[split_pos_];
          for (int v : splits) {
            Plan q = p;
            knob(KnobId::split).set(q, v);
            if (const Rejection r = split_rejection(q); r == Rejection::none)
              passing.push_back(v);
            else
              add_counts(r, distinct_plans(p));
          }
          if (passing.empty()) continue;
          if (passing.size() < splits.size()) {
            passing_only.emplace(inner_);
            passing_only->values[split_pos_] = &passing;
            odometer = &*passing_only;
          }
        }
        std::fill(at_.begin(), at_.end(), 0);
        odometer->apply(at_, p);
        // Each step sets only the knobs the odometer moved (record reads the plan, never
        // writes it).
        for (size_t changed = 0;;) {
          record(p);
          if (!odometer->advance(at_, &changed)) break;
          odometer->apply(at_, p, changed);
        }
      }
    }
  }

  /// Whether split-refused plans are counted in bulk here: a decoder-only model (check_plan's
  /// own split checks, after the cell's), a split knob in the odometer, and not turned off.
  bool split_in_bulk() const {
    return o_.split_in_bulk && split_pos_ < inner_.knobs.size() && m_.encoders.empty();
  }

  /// `n` plans refused as `r`.
  void add_counts(Rejection r, long long n) {
    r_.rejections[int(r)] += n;
    r_.evaluated += n;
  }

  /// The plans of one split value that record() would evaluate in the current (cell, pp), all
  /// refused by that split: the positions its filters admit (which read neither vpp, the
  /// schedule nor the split), an offload variant admitted only where its twin without offload
  /// was not (a refused twin is neither out of memory nor ZeRO-invalid). Counted once a pp.
  long long distinct_plans(const Plan& base) {
    if (distinct_known_) return distinct_;
    InnerKnobs one_split = inner_;
    const bool split = split_pos_ < inner_.knobs.size();
    const std::vector<int> first = {split ? inner_.values[split_pos_]->front() : 0};
    if (split) one_split.values[split_pos_] = &first;
    std::vector<size_t> at(one_split.knobs.size(), 0);
    Plan q = base;
    one_split.apply(at, q);
    long long n = 0;
    for (size_t changed = 0;;) {
      if (admitted(at, q)) {
        ++n;
        if (!q.offloads()) twin_ = Rejection::pp_not_dividing_layers, twin_known_ = true;
      }
      if (!one_split.advance(at, &changed)) break;
      one_split.apply(at, q, changed);
    }
    distinct_known_ = true;
    return distinct_ = n;
  }

  /// Whether every plan of this (pp, vpp) is refused whatever the inner knobs: more virtual
  /// stages than blocks, or interleaving without a pipeline. A user's --vpp range may reach far
  /// past the blocks; iterating its plans one by one took seconds for nothing.
  bool vpp_never_fits(const Plan& p, int vpp) const {
    return vpp > 1 && (p.pp == 1 || 1LL * p.pp * vpp > blocks_);
  }

  /// The counts of `values` far vpp values of the current (cell, pp), each refused as the first.
  void add_far_vpp_counts(long long values) {
    for (int i = 0; i < kNumRejections; ++i) add_counts(Rejection(i), values * far_vpp_counted_[i]);
  }

  /// Past layers + 2 chunks (or without a pipeline) every split refuses every such vpp for the
  /// same reason (split_check); a model with encoders, past its blocks.
  bool far_vpp(const Plan& p, int vpp) const {
    // A model with encoders: check_plan's blocks check fires first, whatever the split, and at
    // pp = 1 only past the blocks (below them, "vpp needs pp > 1").
    if (!m_.encoders.empty()) return 1LL * p.pp * vpp > blocks_;
    return p.pp == 1 || 1LL * p.pp * vpp > blocks_ + 2;
  }

  /// Counts the plans of a (pp, vpp) that vpp_never_fits without iterating them: whether it is
  /// refused, and as what (more stages than layers, or chunks not dividing them), depends among
  /// the inner knobs on the split alone, so one check per split value gives every plan's
  /// rejection. False (nothing counted) should a plan of it pass.
  bool count_refused_vpp(Plan& p, int vpp, const std::vector<Schedule>& schedules) {
    // Past layers + 2 chunks (or without a pipeline) every split refuses every such vpp for the
    // same reason (split_check), so one vpp's counts stand for all the others of this pp.
    const bool far = far_vpp(p, vpp);
    if (far && far_vpp_known_) {
      add_far_vpp_counts(1);
      return true;
    }
    std::fill(at_.begin(), at_.end(), 0);
    p.vpp = vpp, p.schedule = schedules.front();
    const size_t split = split_pos_;
    const size_t values = split < inner_.knobs.size() ? inner_.values[split]->size() : 1;
    std::array<long long, kNumRejections> counted{};
    // Each split value's plans as record() would count them: the positions the filters admit.
    const long long each = static_cast<long long>(schedules.size()) * distinct_plans(p);
    for (size_t v = 0; v < values; ++v) {
      if (split < inner_.knobs.size()) at_[split] = v;
      inner_.apply(at_, p);
      const Rejection r = check_plan(m_, c_, p, eo_, nullptr);
      if (r == Rejection::none) return false;
      counted[int(r)] += each;
    }
    for (int i = 0; i < kNumRejections; ++i) add_counts(Rejection(i), counted[i]);
    if (far) far_vpp_counted_ = counted, far_vpp_known_ = true;
    return true;
  }

  /// Whether the plan at positions `at` is one the search evaluates: not a plan another position
  /// gave, not an expert or rank-order variant that changes nothing, not an offload variant its
  /// twin without offload makes pointless (the twin's state kept here).
  bool admitted(const std::vector<size_t>& at, const Plan& p) {
    if (inner_.duplicate(at, p)) return false;
    // Without expert parallelism the expert knobs change nothing (a plan another position gave);
    // the flex dispatcher differs from the all-to-all only across nodes.
    // (Only where the search tries the plain value too: a value the user fixed is estimated.)
    if ((p.ep == 1 && p.ep_comm_overlap.value_or(false) && tries_unset(KnobId::ep_comm_overlap)) ||
        (1LL * p.ep * p.etp == 1 && p.dispatcher != Dispatcher::alltoall &&
         tries_unset(KnobId::dispatcher)))
      return false;
    if (is_flex(p.dispatcher) && tries_unset(KnobId::dispatcher) && ep_group(p, c_).nodes <= 1)
      return false;
    // The all-gather dispatcher moves every token to every rank of its group: tried where that
    // group stays on NVLink.
    if (p.dispatcher == Dispatcher::allgather && tries_unset(KnobId::dispatcher) &&
        (1LL * p.ep * p.etp == 1 || tp_ep_group(p, c_).nodes > 1))
      return false;
    // The other rank order is another plan only where it moves the DP group or a stage pair.
    if (p.order != RankOrder::tp_cp_dp_pp && !rank_order_matters(p, c_)) return false;
    if (inner_.offload_run_start(at)) twin_ = Rejection::none, twin_known_ = false;
    // Offload is tried only where it can help: where the same plan without it is out of memory,
    // or refused only because ZeRO has one replica to shard over (the offload's own optimizer).
    if (p.offloads() && twin_known_ && twin_ != Rejection::out_of_memory &&
        twin_ != Rejection::zero_invalid) {
      if (twin_ == Rejection::none) ++r_.offload_dominated;  // it fits and is faster
      return false;
    }
    return true;
  }

  void record(const Plan& p) {
    if (!admitted(at_, p)) return;
    ++r_.evaluated;
    work_.check();
    // An expert layout check_plan refuses is not priced (a long ep or etp list would price each
    // one); estimate rejects it, in check_plan's order, before it reads the costs.
    if (check_expert_layout(m_, p) == Rejection::none) layer_costs(p);
    Estimate e = estimate(m_, c_, p, eo_, &cache_, &ws_);
    // Refused for host memory (offload), an estimate has run nearly every step.
    if (e.ok() || e.rejection == Rejection::host_out_of_memory) work_.estimate(1);
    if (e.rejection == Rejection::out_of_memory) work_.estimate(limits::kOutOfMemoryEstimateWeight);
    ++r_.rejections[int(e.rejection)];
    if (const long long n = r_.rejections[int(Rejection::framework_refuses)];
        e.rejection == Rejection::framework_refuses && eo_.framework && (n & (n - 1)) == 0)
      r_.framework_refused.push_back({*eo_.framework, p});
    if (!p.offloads()) twin_ = e.rejection, twin_known_ = true;
    if (e.rejection == Rejection::out_of_memory) {
      r_.any_memory_rejection = true;
      if (r_.closest_infeasible.memory_bytes == 0 ||
          e.memory_bytes < r_.closest_infeasible.memory_bytes)
        r_.closest_infeasible = e;
    }
    if (e.ok()) {
      top_.offer(e);
      r_.feasible.add(e.memory_bytes, e.tflops_per_gpu);
    }
  }

  /// check_plan's rejection of a decoder-only plan whose split does not cut its layers (after
  /// check_layout, which the cell passed, and the pp = 1 interleaving that count_refused_vpp
  /// counts); Rejection::none otherwise, and for multimodal models (their own split checks).
  /// The bulk count asks it before the odometer turns, so record() meets no such plan.
  Rejection split_rejection(const Plan& p) const {
    if (!m_.encoders.empty() || (p.vpp > 1 && p.pp == 1)) return Rejection::none;
    switch (split_check(m_.layers, p)) {
      case SplitError::none:
        return Rejection::none;
      case SplitError::layers:
        return Rejection::pp_not_dividing_layers;
      case SplitError::vpp:
        return Rejection::vpp_invalid;
    }
    return Rejection::none;
  }

  /// Whether the search tries knob `id` at its plain value too (unset, or 0: no overlap, the
  /// all-to-all dispatcher).
  bool tries_unset(KnobId id) const {
    const std::vector<int>& v = k_[id];
    return std::find(v.begin(), v.end(), kUnset) != v.end() ||
           std::find(v.begin(), v.end(), 0) != v.end();
  }

  /// The cell's block and head costs (cell_costs), computed once the first plan needs them: cells
  /// whose GPU counts none of the pp values fit cost only their enumeration.
  void layer_costs(const Plan& p) {
    const InnerKey key{p.ep,
                       p.etp,
                       p.dispatcher,
                       p.capacity_factor,
                       p.pad_to_capacity.value_or(false),
                       p.loss_fusion,
                       p.fp8_recipe};
    if (computed_ && key == cell_key_) return;
    // The expert and loss knobs turn inside the cell: each combination's costs are kept until it
    // ends.
    // (A map: a knob list of thousands of values must not make each lookup scan them all.)
    auto kept = inner_cells_.extract(key);
    if (computed_) inner_cells_.emplace(cell_key_, std::move(cache_.cell));
    computed_ = true, cell_key_ = key;
    cache_.cell = kept ? std::move(kept.mapped()) : cell_costs(m_, c_, p, cache_.layout);
  }

  const ModelSpec& m_;
  const ClusterProfile& c_;
  const KnobSpace& k_;
  const SearchOptions& o_;
  const InnerKnobs inner_;
  std::vector<size_t> at_;
  TopK top_;
  EstimateCache cache_;
  EstimateOptions eo_;
  Workspace ws_;
  SearchWork work_;
  SearchResult r_;
  std::vector<long long> plans_per_pp_;
  int blocks_ = 0;
  bool computed_ = false;
  /// count_refused_vpp's counts for the vpp values past the layers of the current (cell, pp).
  std::array<long long, kNumRejections> far_vpp_counted_{};
  bool far_vpp_known_ = false;
  bool vpps_ascending_ = false;  ///< the vpp list, as the list options give it
  /// The inner knobs a cell's costs depend on (the expert knobs' blocks, the loss kernel's head),
  /// those the current costs are for, and the costs of the cell's other combinations so far.
  struct InnerKey {
    int ep = 1, etp = 1;
    Dispatcher dispatcher = Dispatcher::alltoall;
    double capacity = 0;
    bool pad = false;
    LossFusion loss = LossFusion::none;
    Fp8Recipe fp8_recipe = Fp8Recipe::delayed;
    auto tied() const { return std::tie(ep, etp, dispatcher, capacity, pad, loss, fp8_recipe); }
    bool operator==(const InnerKey& o) const { return tied() == o.tied(); }
    bool operator<(const InnerKey& o) const { return tied() < o.tied(); }
  };
  InnerKey cell_key_;
  std::map<InnerKey, CellCosts> inner_cells_;
  /// The current run of offload values: how its plan without offload fared.
  Rejection twin_ = Rejection::none;
  bool twin_known_ = false;
  size_t split_pos_ = 0;    ///< the split knob's place in the odometer (its size when absent)
  long long distinct_ = 0;  ///< distinct_plans() of the current (cell, pp)
  bool distinct_known_ = false;
};

}  // namespace

SearchResult search(const ModelSpec& m, const ClusterProfile& c, const KnobSpace& k,
                    const SearchOptions& o) {
  const auto start = std::chrono::steady_clock::now();
  Searcher s(m, c, k, o);
  using K = KnobId;
  const std::vector<int> mbs_values = searched_mbs(k, o);
  const double cells = double(o.gpus.size() * k[K::tp].size() * k[K::cp].size() *
                              mbs_values.size() * k[K::sp].size());
  double done = 0;
  for (int gpus : o.gpus)
    for (int tp : k[K::tp])
      for (int cp : k[K::cp])
        for (int mbs : mbs_values)
          for (int sp : k[K::sp]) {
            if (o.progress) o.progress(done / cells);
            done += 1;
            s.cell(gpus, tp, cp, mbs, sp);
          }
  SearchResult r = s.finish();
  r.search_time_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return r;
}

bool widen_tp_across_nodes(const ModelSpec& m, const ClusterProfile& c, KnobSpace& k,
                           SearchOptions& o) {
  std::vector<int>& tps = k[KnobId::tp];
  const size_t before = tps.size();
  for (long long t = 2LL * c.nvlink_domain; t <= m.heads; t *= 2)
    if (std::find(tps.begin(), tps.end(), int(t)) == tps.end()) tps.push_back(int(t));
  o.estimate.tp_across_nodes = true;
  return tps.size() > before;
}

SearchResult merge_results(const std::vector<SearchResult>& parts, const SearchOptions& o) {
  SearchResult r;
  r.feasible = PlotSample(o.plot_points);
  for (const SearchResult& part : parts) {
    r.evaluated += part.evaluated;
    r.checked += part.checked;
    for (int i = 0; i < kNumRejections; ++i) r.rejections[i] += part.rejections[i];
    r.top.insert(r.top.end(), part.top.begin(), part.top.end());
    const Estimate& c = part.closest_infeasible;
    if (part.any_memory_rejection &&
        (!r.any_memory_rejection || c.memory_bytes < r.closest_infeasible.memory_bytes))
      r.closest_infeasible = c;
    r.any_memory_rejection = r.any_memory_rejection || part.any_memory_rejection;
    r.framework_refused.insert(r.framework_refused.end(), part.framework_refused.begin(),
                               part.framework_refused.end());
    r.search_time_s += part.search_time_s;
    r.simulated += part.simulated;
    r.closed_form_only += part.closed_form_only;
    r.offload_dominated += part.offload_dominated;
    r.max_closed_form_gap_pct = std::max(r.max_closed_form_gap_pct, part.max_closed_form_gap_pct);
    for (const PlotPoint& pt : part.feasible.points()) r.feasible.add(pt[0], pt[1]);
    for (const PlotPoint& pt : part.feasible.front()) r.feasible.add(pt[0], pt[1]);
    r.frameworks.insert(r.frameworks.end(), part.frameworks.begin(), part.frameworks.end());
    r.tp_across_nodes_after = std::max(r.tp_across_nodes_after, part.tp_across_nodes_after);
  }
  std::stable_sort(r.top.begin(), r.top.end(), [&](const Estimate& a, const Estimate& b) {
    return score(a, o.objective) < score(b, o.objective);
  });
  if (static_cast<int>(r.top.size()) > o.top_k) r.top.resize(o.top_k);
  return r;
}

}  // namespace planner
