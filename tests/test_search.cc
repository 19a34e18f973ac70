#include <doctest/doctest.h>

#include <numeric>
#include <set>

#include "planner/io/cluster_io.h"
#include "planner/io/model_io.h"
#include "planner/search.h"

using namespace planner;

namespace {
const ClusterProfile& a100() {
  static const ClusterProfile c =
      io::load_cluster(PLANNER_SOURCE_DIR "/hw_profiles/dgx-a100-80gb.yaml");
  return c;
}
const ModelSpec& gpt175() {
  static const ModelSpec m = io::load_model(PLANNER_SOURCE_DIR "/configs/models/gpt3-175b.yaml");
  return m;
}
const ClusterProfile& h100() {
  static const ClusterProfile c =
      io::load_cluster(PLANNER_SOURCE_DIR "/hw_profiles/dgx-h100-80gb.yaml");
  return c;
}
/// The bulk counts (SearchOptions::split_in_bulk) against one by one's: every count and the
/// ranked plans. One by one estimates the plans the bulk counts (check_plan refuses them), so
/// checks more.
void check_same_counts(const SearchResult& bulk, const SearchResult& each) {
  CHECK(bulk.evaluated == each.evaluated);
  CHECK(bulk.offload_dominated == each.offload_dominated);
  CHECK(bulk.checked <= each.checked);
  for (int i = 0; i < kNumRejections; ++i) {
    CAPTURE(to_string(Rejection(i)));
    CHECK(bulk.rejections[i] == each.rejections[i]);
  }
  REQUIRE(bulk.top.size() == each.top.size());
  CHECK(!bulk.top.empty());
  for (size_t i = 0; i < bulk.top.size(); ++i) {
    CHECK(to_plan_string(bulk.top[i].plan) == to_plan_string(each.top[i].plan));
    CHECK(bulk.top[i].iteration_time_s == each.top[i].iteration_time_s);
  }
}
SearchResult run(int gpus, int gbs, int top = 1000) {
  SearchOptions o;
  o.gpus = {gpus};
  o.global_batch = gbs;
  o.top_k = top;
  return search(gpt175(), a100(), default_knobs(gpt175(), a100(), gpus), o);
}
}  // namespace

TEST_CASE("every ranked plan satisfies the structural constraints") {
  const SearchResult r = run(1024, 1536);
  REQUIRE(!r.top.empty());
  for (const Estimate& e : r.top) {
    const Plan& p = e.plan;
    CHECK(p.dp * p.tp * p.pp * p.cp == 1024);
    CHECK(96 % p.tp == 0);                          // tp divides heads
    CHECK(8 % p.tp == 0);                           // tp inside a node
    CHECK(split_check(96, p) == SplitError::none);  // the split cuts the layers
    CHECK(1536 % (p.mbs * p.dp) == 0);
    if (p.vpp > 1) {
      CHECK(p.schedule == Schedule::interleaved);
      CHECK(p.microbatches() % p.pp == 0);
    }
    if (p.sp) CHECK(p.tp > 1);
    if (p.zero >= 2) CHECK(p.pp == 1);
    CHECK(e.memory_bytes <= a100().gpu.hbm_bytes);
  }
}

TEST_CASE("the counts add up and the list is sorted by iteration time") {
  const SearchResult r = run(1024, 1536, 50);
  const long long sum = std::accumulate(r.rejections.begin(), r.rejections.end(), 0LL);
  CHECK(sum == r.evaluated);
  CHECK(r.rejections[int(Rejection::out_of_memory)] > 0);
  for (size_t i = 1; i < r.top.size(); ++i)
    CHECK(r.top[i - 1].iteration_time_s <= r.top[i].iteration_time_s);
  CHECK(r.top.size() == 50);
}

TEST_CASE("tp across nodes only when allowed") {
  ModelSpec m = gpt175();
  KnobSpace k = default_knobs(m, a100(), 1024);
  k[KnobId::tp] = {16};
  SearchOptions o;
  o.gpus = {1024};
  o.global_batch = 1536;
  SearchResult r = search(m, a100(), k, o);
  CHECK(r.top.empty());
  CHECK(r.rejections[int(Rejection::tp_across_nodes)] > 0);
  o.estimate.tp_across_nodes = true;
  r = search(m, a100(), k, o);
  CHECK(!r.top.empty());
}

TEST_CASE("cost objective ranks GPU-seconds across GPU counts") {
  SearchOptions o;
  o.gpus = {512, 1024};
  o.global_batch = 1536;
  o.objective = Objective::cost;
  const SearchResult r = search(gpt175(), a100(), default_knobs(gpt175(), a100(), 1024), o);
  REQUIRE(r.top.size() >= 2);
  CHECK(r.top[0].iteration_time_s * r.top[0].plan.gpus() <=
        r.top[1].iteration_time_s * r.top[1].plan.gpus());
}

TEST_CASE("a model too large for the GPUs ranks nothing and reports the closest plan") {
  const SearchResult r = run(8, 8);
  CHECK(r.top.empty());
  CHECK(r.any_memory_rejection);
  CHECK(r.closest_infeasible.memory_bytes > a100().gpu.hbm_bytes);
}

TEST_CASE("default vpp: 1..8 with uneven chunks, above 8 only where every chunk is whole") {
  ModelSpec m = gpt175();
  m.layers = 92;  // 23 layers per stage on pp=4: vpp 23 is the only interleaving beyond 1
  const KnobSpace k = default_knobs(m, a100(), 1536);
  CHECK(k.vpp_whole_chunks_only);
  CHECK(k[KnobId::vpp] == std::vector<int>{1, 2, 3, 4, 5, 6, 7, 8, 23, 46, 92});
  KnobSpace fixed = k;
  fixed[KnobId::pp] = {4};
  fixed[KnobId::tp] = {8};
  SearchOptions o;
  o.gpus = {1536};
  o.global_batch = 768;
  o.top_k = 5000;
  o.simulate_candidates = 0;
  const SearchResult r = search(m, a100(), fixed, o);
  bool saw23 = false;
  for (const Estimate& e : r.top) {
    CHECK((e.plan.vpp <= kDenseVpp || 92 % (e.plan.pp * e.plan.vpp) == 0));
    saw23 = saw23 || e.plan.vpp == 23;
  }
  CHECK(saw23);
  // A user's list is tried as given: vpp 10 on pp 4 is evaluated and refused with its reason.
  fixed[KnobId::vpp] = {10};
  fixed.vpp_whole_chunks_only = false;
  const SearchResult user = search(m, a100(), fixed, o);
  CHECK(user.evaluated > 0);
  CHECK(user.top.empty());
}

TEST_CASE("the rejections counted in bulk are those of checking every plan one by one") {
  // The search counts a (GPU count, tp, cp, mbs, sp, pp) cell's plans at once when the GPU count
  // or a layout check refuses them all; enumerate every plan here and compare the counts.
  const ModelSpec llava = io::load_model(PLANNER_SOURCE_DIR "/configs/models/llava-1.5-13b.yaml");
  for (const ModelSpec* m : {&gpt175(), &llava}) {
    KnobSpace k = default_knobs(*m, a100(), 256);
    k[KnobId::cp] = {1, 2, 3};
    k[KnobId::schedule] = {int(Schedule::one_f_one_b), int(Schedule::gpipe), int(Schedule::zb_h1)};
    // Offload variants are estimated only where their twin is out of memory, rank-order variants
    // only where the order moves a group: filters this enumeration does not repeat (the test of
    // the block counts below compares with the search's own filters).
    k[KnobId::offload_optimizer] = k[KnobId::offload_params] = k[KnobId::order] = {kUnset};
    // A given micro-batch list (mbs=3 divides no local batch of 768 here), every value counted.
    k[KnobId::mbs] = {1, 2, 3, 4, 8, 16};
    k.mbs_divisors_only = false;
    SearchOptions o;
    o.gpus = {128, 256};
    o.global_batch = 768;
    o.simulate_candidates = 0;
    const SearchResult r = search(*m, a100(), k, o);
    std::array<long long, kNumRejections> each{};
    long long plans = 0;
    const int blocks = block_layout(*m).count();
    for (int gpus : o.gpus)
      for (int tp : k[KnobId::tp])
        for (int cp : k[KnobId::cp])
          for (int mbs : k[KnobId::mbs])
            for (int sp : k[KnobId::sp])
              for (int pp : k[KnobId::pp])
                for (int vpp : k[KnobId::vpp]) {
                  if (vpp > kDenseVpp && blocks % (pp * vpp) != 0) continue;
                  std::vector<Schedule> scheds;
                  if (vpp > 1)
                    scheds = {Schedule::interleaved};
                  else
                    for (int s : k[KnobId::schedule])
                      if (pp > 1 || scheds.empty()) scheds.push_back(Schedule(s));
                  for (Schedule sched : scheds)
                    for (int zero : k[KnobId::zero])
                      for (int rc : k[KnobId::recompute])
                        for (int split : k[KnobId::split]) {
                          ++plans;
                          Plan p;
                          knob(KnobId::split).set(p, split);
                          p.tp = tp, p.cp = cp, p.pp = pp, p.mbs = mbs, p.sp = sp != 0, p.vpp = vpp;
                          p.schedule = sched, p.zero = zero, p.recompute = Recompute(rc),
                          p.gbs = o.global_batch;
                          p.dp = gpus / (tp * cp * pp);
                          if (1LL * p.dp * tp * cp * pp != gpus) {
                            ++each[int(Rejection::gpus_mismatch)];
                            continue;
                          }
                          ++each[int(estimate(*m, a100(), p, {}).rejection)];
                        }
                }
    CHECK(r.evaluated == plans);
    for (int i = 0; i < kNumRejections; ++i) {
      CAPTURE(to_string(Rejection(i)));
      CHECK(r.rejections[i] == each[i]);
    }
  }
}

TEST_CASE("the cell costs the search memoises give every plan of the cell its own figures") {
  // The search computes cell_costs once per (tp, cp, mbs, sp); an estimate through that cache
  // must equal one that computes everything for the plan, to the bit.
  const ModelSpec llava = io::load_model(PLANNER_SOURCE_DIR "/configs/models/llava-1.5-13b.yaml");
  for (const ModelSpec* m : {&gpt175(), &llava}) {
    int ranked = 0;
    for (const char* cell : {"tp=8,pp=4,dp=4,cp=1,mbs=1,sp=1", "tp=4,pp=2,dp=4,cp=2,mbs=2,sp=0"}) {
      Plan base = parse_plan(std::string(cell) + ",gbs=128", "test");
      EstimateCache cache;
      cache.layout = block_layout(*m);
      cache.cell = cell_costs(*m, a100(), base, cache.layout);
      for (int zero : {0, 1})
        for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full})
          for (bool overlap : {false, true}) {
            Plan p = base;
            p.zero = zero, p.recompute = r, p.tp_comm_overlap = overlap;
            CAPTURE(to_plan_string(p));
            const Estimate cached = estimate(*m, a100(), p, {}, &cache);
            const Estimate fresh = estimate(*m, a100(), p);
            CHECK(cached.rejection == fresh.rejection);
            CHECK(cached.iteration_time_s == fresh.iteration_time_s);
            CHECK(cached.memory_bytes == fresh.memory_bytes);
            CHECK(cached.breakdown.tp_comm_s == fresh.breakdown.tp_comm_s);
            CHECK(cached.breakdown.cp_comm_s == fresh.breakdown.cp_comm_s);
            ranked += fresh.ok();
          }
    }
    CHECK(ranked > 0);
  }
}

TEST_CASE("default micro-batch sizes: every divisor of the local batch up to 64, nothing else") {
  // GPT-3 175B on 96 GPUs, global batch 1,536: dp = 96 / (tp pp cp), local batch 1536 / dp.
  SearchOptions o;
  o.gpus = {96};
  o.global_batch = 1536;
  o.top_k = 5000;
  o.simulate_candidates = 0;
  KnobSpace k = default_knobs(gpt175(), a100(), 96);
  REQUIRE(k.mbs_divisors_only);
  REQUIRE(k[KnobId::mbs].size() == size_t(kMaxDefaultMicroBatch));
  k[KnobId::tp] = {8};
  k[KnobId::pp] = {12};  // dp = 1: a local batch of 1,536, divisors 1, 2, 3, 4, 6, 8, ..., 48, 64
  const SearchResult r = search(gpt175(), a100(), k, o);
  CHECK(r.rejections[int(Rejection::batch_not_divisible)] == 0);
  std::set<int> seen;
  for (const Estimate& e : r.top) {
    CHECK(1536 % (e.plan.mbs * e.plan.dp) == 0);
    seen.insert(e.plan.mbs);
  }
  CHECK(seen.count(3) == 1);  // not in the old 1, 2, 4, 8, 16
  CHECK(seen.count(5) == 0);
  // A given list is tried as given: its non-divisors are counted as rejections.
  k[KnobId::mbs] = {5};
  k.mbs_divisors_only = false;
  CHECK(search(gpt175(), a100(), k, o).rejections[int(Rejection::batch_not_divisible)] > 0);
}

TEST_CASE("the loss kernel is part of a cell's costs: each value ranked on its own head time") {
  // Llama 3 8B on 8 GPUs, fp8, one layout: only loss_fusion varies, in either order; the fused
  // loss moves fewer bytes a logit, so it ranks first whichever value the cell met first.
  const ModelSpec m = io::load_model(PLANNER_SOURCE_DIR "/configs/models/llama3-8b.yaml");
  for (const std::vector<int>& losses : {std::vector<int>{int(LossFusion::native), kUnset},
                                         std::vector<int>{kUnset, int(LossFusion::native)}}) {
    KnobSpace k = default_knobs(m, a100(), 8);
    k[KnobId::tp] = {1}, k[KnobId::pp] = {1}, k[KnobId::mbs] = {1}, k[KnobId::zero] = {1};
    k[KnobId::recompute] = {int(Recompute::full)}, k[KnobId::sp] = {0};
    k[KnobId::loss_fusion] = losses;
    SearchOptions o;
    o.gpus = {8}, o.global_batch = 64, o.top_k = 2, o.simulate_candidates = 0;
    const SearchResult r = search(m, a100(), k, o);
    REQUIRE(r.top.size() == 2);
    CHECK(r.top[0].plan.loss_fusion == LossFusion::native);
    CHECK(r.top[1].plan.loss_fusion == LossFusion::none);
    CHECK(r.top[0].iteration_time_s < r.top[1].iteration_time_s);
  }
}

TEST_CASE("the FP8 recipe is part of a cell's costs: each value ranked on its own layer time") {
  // Llama 3 8B on 8 H100s, fp8, one layout: only fp8_recipe varies, in either order; delayed
  // scaling moves fewer bytes (no amax passes, the norms write FP8), so it ranks first whichever
  // value the cell met first.
  const ModelSpec m = io::load_model(PLANNER_SOURCE_DIR "/configs/models/llama3-8b.yaml");
  for (const std::vector<int>& recipes : {std::vector<int>{int(Fp8Recipe::tensorwise), kUnset},
                                          std::vector<int>{kUnset, int(Fp8Recipe::tensorwise)}}) {
    KnobSpace k = default_knobs(m, h100(), 8);
    k[KnobId::tp] = {2}, k[KnobId::pp] = {1}, k[KnobId::mbs] = {1}, k[KnobId::zero] = {1};
    k[KnobId::recompute] = {int(Recompute::none)}, k[KnobId::sp] = {1};
    k[KnobId::fp8_recipe] = recipes;
    SearchOptions o;
    o.gpus = {8}, o.global_batch = 64, o.top_k = 2, o.simulate_candidates = 0;
    o.dtype = Dtype::fp8;
    const SearchResult r = search(m, h100(), k, o);
    REQUIRE(r.top.size() == 2);
    CHECK(r.top[0].plan.fp8_recipe == Fp8Recipe::delayed);
    CHECK(r.top[1].plan.fp8_recipe == Fp8Recipe::tensorwise);
    CHECK(r.top[0].iteration_time_s < r.top[1].iteration_time_s);
  }
}

TEST_CASE("plans whose split cannot cut the layers are counted, not estimated one by one") {
  // 61 layers (DeepSeek-V3's count, a prime): the even split cuts them over pp = 1 only, so
  // every plan at pp 2 or 4 is refused by its split before any cost is read. They are counted as
  // estimate counts them but take no place in the checked-plan bound (DeepSeek-V3 on 512 GPUs
  // went past its 5e6 with them).
  ModelSpec m = gpt175();
  m.layers = 61;
  KnobSpace k = default_knobs(m, a100(), 64);
  k[KnobId::pp] = {1, 2, 4};
  k[KnobId::vpp] = {1};
  k[KnobId::split] = {int(PipelineSplit::even)};
  SearchOptions o;
  o.gpus = {64};
  o.global_batch = 512;
  o.simulate_candidates = 0;
  const SearchResult all = search(m, a100(), k, o);
  k[KnobId::pp] = {1};
  const SearchResult one = search(m, a100(), k, o);
  CHECK(all.rejections[int(Rejection::pp_not_dividing_layers)] > 0);
  CHECK(all.checked == one.checked);  // pp 2 and 4: none estimated
  CHECK(all.checked > 0);
  CHECK(all.evaluated > one.evaluated);
  const long long sum = std::accumulate(all.rejections.begin(), all.rejections.end(), 0LL);
  CHECK(sum == all.evaluated);
}

TEST_CASE("split-refused plans counted a block at a time: the counts and ranks of one by one") {
  // Every filter of the search (expert variants, rank orders, offload twins) reads neither vpp,
  // the schedule nor the split, so a split that cannot cut the layers refuses the same number of
  // plans for every (vpp, schedule) of a cell's pp, as does a vpp past the layers: the bulk
  // counts against record() on each plan.
  const ModelSpec deepseek = io::load_model(PLANNER_SOURCE_DIR "/configs/models/deepseek-v3.json");
  const ModelSpec qwen = io::load_model(PLANNER_SOURCE_DIR "/configs/models/qwen3-30b-a3b.json");
  for (const ModelSpec* m : {&deepseek, &qwen, &gpt175()}) {
    CAPTURE(m->name);
    const ClusterProfile& c = m == &gpt175() ? a100() : h100();
    const int gpus = m == &deepseek ? 128 : 64;
    KnobSpace k = default_knobs(*m, c, gpus);
    k[KnobId::mbs] = {1, 2};
    k.mbs_divisors_only = false;
    k[KnobId::offload_optimizer] = {int(OffloadDevice::none), int(OffloadDevice::cpu)};
    SearchOptions o;
    o.gpus = {gpus};
    o.global_batch = 1024;
    o.top_k = 20;
    o.simulate_candidates = 0;
    o.dtype = m == &gpt175() ? Dtype::bf16 : Dtype::fp8;
    const SearchResult bulk = search(*m, c, k, o);
    o.split_in_bulk = false;
    const SearchResult each = search(*m, c, k, o);
    check_same_counts(bulk, each);
    CHECK(bulk.rejections[int(Rejection::pp_not_dividing_layers)] +
              bulk.rejections[int(Rejection::vpp_invalid)] >
          0);
  }
}

TEST_CASE("a user's vpp list past the layers: the far values' counts those of one by one") {
  // An ascending list reaching past the layers (or a multimodal model's blocks) counts every
  // value past the first far one at once, each refused for the first one's reason: for a model
  // with encoders that reason holds only past its blocks (below them, at pp = 1, "vpp needs
  // pp > 1"; past them the blocks check fires first).
  const ModelSpec llava = io::load_model(PLANNER_SOURCE_DIR "/configs/models/llava-1.5-13b.yaml");
  const ModelSpec qwen = io::load_model(PLANNER_SOURCE_DIR "/configs/models/qwen3-30b-a3b.json");
  for (const ModelSpec* m : {&llava, &qwen}) {
    CAPTURE(m->name);
    KnobSpace k = default_knobs(*m, h100(), 8);
    k[KnobId::pp] = {1, 2};
    k[KnobId::vpp] = {1, 2, 3, 50, 100, 200};
    k.vpp_whole_chunks_only = false;
    k[KnobId::mbs] = {1};
    k.mbs_divisors_only = false;
    SearchOptions o;
    o.gpus = {8};
    o.global_batch = 64;
    o.top_k = 5;
    o.simulate_candidates = 0;
    const SearchResult bulk = search(*m, h100(), k, o);
    o.split_in_bulk = false;
    const SearchResult each = search(*m, h100(), k, o);
    check_same_counts(bulk, each);
    CHECK(bulk.rejections[int(Rejection::vpp_invalid)] > 0);
  }
}
