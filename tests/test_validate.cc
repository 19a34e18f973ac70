#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "planner/cost/compute.h"
#include "planner/error.h"
#include "planner/io/cluster_io.h"
#include "planner/io/model_io.h"
#include "planner/validate.h"

using namespace planner;

namespace {
const ClusterProfile& h200() {
  static const ClusterProfile c = io::load_cluster(PLANNER_SOURCE_DIR "/hw_profiles/dgx-h200.yaml");
  return c;
}
const ModelSpec& m18() {
  static const ModelSpec m =
      io::load_model(PLANNER_SOURCE_DIR "/configs/models/megatron-18.4b.yaml");
  return m;
}
Plan plan(const std::string& s) { return parse_plan(s, "--plan"); }
int count(const Workload& w, KernelClass c, bool recompute) {
  int n = 0;
  for (size_t i = 0; i < w.kernels.size(); ++i)
    n += w.kernels[i].cls == c && w.is_recompute[i] == recompute;
  return n;
}
}  // namespace

TEST_CASE("a layer's workload: 4 GEMMs x 3 passes, attention, element-wise, at the TP shard") {
  const Workload w = build_workload(m18(), h200(), plan("tp=8,pp=1,dp=4,mbs=1,gbs=32,sp=1"));
  CHECK(count(w, KernelClass::gemm, false) == 12);
  CHECK(count(w, KernelClass::attention, false) == 2);  // flash forward and backward
  CHECK(count(w, KernelClass::elementwise, false) == 4);
  // QKV forward: tokens 2048 x (48 + 2 x 48) x 128 / 8 = 2304 columns x hidden 6144.
  const Kernel& qkv = w.kernels[0];
  CHECK(std::string(qkv.name) == "qkv");
  CHECK(qkv.gemm.m == 2048);
  CHECK(qkv.gemm.n == 6144 * 3 / 8);
  CHECK(qkv.gemm.k == 6144);
  CHECK(w.stage_layers == 40);
  CHECK(w.layers == 40);
}

TEST_CASE("recomputation re-runs forward work inside backward") {
  const Workload none = build_workload(m18(), h200(), plan("tp=8,dp=4,mbs=1,gbs=32"));
  const Workload sel =
      build_workload(m18(), h200(), plan("tp=8,dp=4,mbs=1,gbs=32,recompute=selective"));
  const Workload full =
      build_workload(m18(), h200(), plan("tp=8,dp=4,mbs=1,gbs=32,recompute=full"));
  CHECK(none.kernels.size() == 18);
  CHECK(count(sel, KernelClass::attention, true) == 1);
  CHECK(sel.kernels.size() == 19);
  CHECK(full.kernels.size() == 18 + 7);  // every forward kernel again
}

TEST_CASE("TP collectives carry the real message size: mbs x seq x hidden x 2 bytes") {
  const Workload ar = build_workload(m18(), h200(), plan("tp=8,dp=4,mbs=2,gbs=32"));
  REQUIRE(ar.collectives.size() == 2);
  CHECK(ar.collectives[0].coll == Collective::allreduce);
  CHECK(ar.collectives[0].bytes == 2.0 * 2 * 2048 * 6144);
  CHECK(ar.collectives[0].count == 2);
  // Without TP overlap (the H200 stack's default, which pairs each with its GEMM:
  // test_validate_collectives.cc), one entry per collective and pass.
  const Workload sp = build_workload(
      m18(), h200(), plan("tp=8,dp=4,mbs=2,gbs=32,sp=1,recompute=full,tp_comm_overlap=0"));
  REQUIRE(sp.collectives.size() == 4);
  CHECK(sp.collectives[2].count == 4);  // backward: 2 + the recomputed forward's 2
  const Workload one =
      build_workload(m18(), h200(), plan("tp=1,pp=4,dp=8,mbs=1,gbs=32,zero=1,recompute=full"));
  CHECK(one.collectives.empty());
  CHECK(one.stage_layers == 10);
}

TEST_CASE("predicted against measured, per component") {
  const Workload w = build_workload(m18(), h200(), plan("tp=8,dp=4,mbs=1,gbs=32"));
  nlohmann::json j = {
      {"device", "test"}, {"kernels_s", nlohmann::json::array()}, {"collectives_s", nullptr}};
  for (const Kernel& k : w.kernels)
    j["kernels_s"].push_back(k.time_s * (k.cls == KernelClass::gemm ? 1.25 : 1.0));
  const ValidationReport r = compare(w, parse_measured(j, w, "m.json"));
  CHECK(!r.communication_measured);
  CHECK(r.diff_pct(r.predicted[0].total(), r.measured[0].total()) ==
        doctest::Approx(-20.0));  // 1/1.25
  CHECK(r.diff_pct(r.predicted[1].total(), r.measured[1].total()) == doctest::Approx(0.0));
  CHECK(r.measured[3].total() == doctest::Approx(r.predicted[3].total()));  // profile's times
  const auto js = validation_json(w, r);
  CHECK(js["components"].contains("gemm"));
  CHECK(js["layer"]["total_diff_pct"].get<double>() < 0);
  CHECK(r.measured_compute().total() ==
        doctest::Approx(r.measured[0].total() + r.measured[1].total() + r.measured[2].total()));
  CHECK(js["compute"]["total_measured_s"].get<double>() ==
        doctest::Approx(r.measured_compute().total()));
  CHECK(js["dp"]["measured_s"].is_null());  // not run: fewer local GPUs
  REQUIRE(w.dp.size() == 1);
  // One all-reduce per gradient bucket: 2.3B parameters per rank in 40M-parameter buckets.
  const double calls = w.dp_calls(0);
  CHECK(calls == 58);
  CHECK(js["dp"]["predicted_s"].get<double>() == doctest::Approx(calls * w.dp[0].predicted_s));
  j["dp_s"] = 0.005;  // an older runner's single number: the one DP collective, each call
  const ValidationReport with_dp = compare(w, parse_measured(j, w, "m.json"));
  CHECK(validation_json(w, with_dp)["dp"]["measured_s"].get<double>() ==
        doctest::Approx(0.005 * calls));
  std::ostringstream text;
  print_validation(text, w, with_dp);
  CHECK(text.str().find("measured 0.290 s") != std::string::npos);
}

TEST_CASE("an attention reference replaces the own attention kernels in the totals") {
  const Workload w = build_workload(m18(), h200(), plan("tp=8,dp=4,mbs=1,gbs=32"));
  nlohmann::json j = {{"kernels_s", nlohmann::json::array()}};
  nlohmann::json ref = nlohmann::json::array();
  for (const Kernel& k : w.kernels) {
    const bool attn = k.cls == KernelClass::attention;
    j["kernels_s"].push_back(k.time_s * (attn ? 10.0 : 1.0));  // own kernel 10x slow
    ref.push_back(attn ? nlohmann::json(k.time_s * 2) : nlohmann::json(nullptr));
  }
  j["attention_reference"] = {{"source", "SDPA test"}, {"kernels_s", ref}};
  const ValidationReport r = compare(w, parse_measured(j, w, "m.json"));
  CHECK(r.measured[1].total() == doctest::Approx(2 * r.predicted[1].total()));
  CHECK(r.own_attention.total() == doctest::Approx(10 * r.predicted[1].total()));
  CHECK(r.measured[0].total() == doctest::Approx(r.predicted[0].total()));
  CHECK(r.attention_source == "SDPA test");
  CHECK(validation_json(w, r)["attention_reference"]["source"] == "SDPA test");
  ref[0] = 1.0;  // kernel 0 is a GEMM: ignored; an attention entry must be a time
  for (size_t i = 0; i < w.kernels.size(); ++i)
    if (w.kernels[i].cls == KernelClass::attention) ref[i] = nullptr;
  j["attention_reference"]["kernels_s"] = ref;
  CHECK_THROWS_WITH_AS(parse_measured(j, w, "m.json"),
                       doctest::Contains("attention_reference.kernels_s"), InputError);
  j["attention_reference"] = {{"source", ""}, {"kernels_s", ref}};
  CHECK_THROWS_WITH_AS(parse_measured(j, w, "m.json"), doctest::Contains("non-empty"), InputError);
}

TEST_CASE("bad runner output is refused with the key") {
  const Workload w = build_workload(m18(), h200(), plan("tp=8,dp=4,mbs=1,gbs=32"));
  CHECK_THROWS_WITH(parse_measured({{"kernels_s", {1.0}}}, w, "m.json"),
                    "m.json: key 'kernels_s': expected 18 times, found 1");
  nlohmann::json neg = {{"kernels_s", std::vector<double>(18, -1.0)}};
  CHECK_THROWS_WITH(
      parse_measured(neg, w, "m.json"),
      "m.json: key 'kernels_s': times must be positive numbers of seconds, at most 3600");
  nlohmann::json huge = {{"kernels_s", std::vector<double>(18, 1e308)}};
  CHECK_THROWS_WITH(
      parse_measured(huge, w, "m.json"),
      "m.json: key 'kernels_s': times must be positive numbers of seconds, at most 3600");
}

TEST_CASE("--update-profile writes measured GEMM efficiencies that the model then uses") {
  const Workload w = build_workload(m18(), h200(), plan("tp=8,dp=4,mbs=1,gbs=32"));
  Measured m;
  m.device = "test";
  for (const Kernel& k : w.kernels) m.kernel_s.push_back(k.time_s * 2);  // everything half as fast
  std::ifstream in(PLANNER_SOURCE_DIR "/hw_profiles/dgx-h200.yaml");
  const std::string text((std::istreambuf_iterator<char>(in)), {});
  const std::string updated = update_profile_text(text, w, m, h200());
  CHECK(update_profile_text(updated, w, m, h200()) == updated);  // replaces, never stacks
  const ClusterProfile c = io::parse_cluster(updated, "u.yaml");
  // 4 linears x 3 orientations = 12 GEMMs; fc2's forward and backward-data shapes are fc1's
  // backward-data and forward shapes ([2048 x 6144] x [6144 x 3072] both ways), so 10 distinct.
  REQUIRE(c.gpu.gemm.measured.size() == 10);
  const Kernel& qkv = w.kernels[0];
  // The model now reproduces the measured (doubled) time of that shape.
  CHECK(gemm_time_s(c.gpu, Dtype::bf16, qkv.gemm) ==
        doctest::Approx(2 * qkv.time_s).epsilon(0.001));
  CHECK(c.gpu.flash_efficiency == h200().gpu.flash_efficiency);  // no reference: kept

  // With an attention reference, its FLOP rates set the flash efficiencies.
  Measured ref = m;
  ref.attention_reference_source = "SDPA\ntest";  // a newline must not break the YAML
  for (size_t i = 0; i < w.kernels.size(); ++i)
    ref.attention_reference_s.push_back(
        w.kernels[i].cls == KernelClass::attention ? w.kernels[i].time_s * 1.25 : std::nan(""));
  const std::string with_attn = update_profile_text(text, w, ref, h200());
  CHECK(update_profile_text(with_attn, w, ref, h200()) == with_attn);
  const ClusterProfile a = io::parse_cluster(with_attn, "u.yaml");
  // The model, given those efficiencies, reproduces the reference's times.
  const Workload again = build_workload(m18(), a, plan("tp=8,dp=4,mbs=1,gbs=32"));
  for (size_t i = 0; i < again.kernels.size(); ++i)
    if (again.kernels[i].cls == KernelClass::attention)
      CHECK(again.kernels[i].time_s == doctest::Approx(ref.attention_reference_s[i]).epsilon(1e-3));
}

TEST_CASE("a plan the model rejects cannot be validated") {
  CHECK_THROWS_WITH(build_workload(m18(), h200(), plan("tp=5,dp=8,mbs=1,gbs=64")),
                    "option --plan: tp=5 does not divide heads=48");
}

TEST_CASE("a mixture-of-experts layer: router, grouped expert GEMMs, routing, its collectives") {
  ModelSpec m = io::load_model(PLANNER_SOURCE_DIR "/configs/models/qwen3-30b-a3b.json");
  m.seq_len = 4096;
  // ep = 1: every one of the 128 experts on this rank, 4096 x 8 / 128 = 256 tokens each.
  const Workload one = build_workload(m, h200(), plan("tp=1,pp=8,dp=1,mbs=1,gbs=64,zero=0"));
  auto find = [](const Workload& w, const char* name, Pass pass) -> const Kernel* {
    for (size_t i = 0; i < w.kernels.size(); ++i)
      if (std::string(w.kernels[i].name) == name && w.kernels[i].pass == pass && !w.is_recompute[i])
        return &w.kernels[i];
    return nullptr;
  };
  const Kernel* fc1 = find(one, "expert_fc1", Pass::forward);
  REQUIRE(fc1);
  // Transformer Engine's grouped linear: rounds of 4 concurrent GEMMs, 32 of them for 128.
  CHECK(fc1->gemm.batch == kTeGroupedGemmStreams);
  auto rounds = [](const Workload& w, const char* name, Pass pass) {
    int n = 0;
    for (size_t i = 0; i < w.kernels.size(); ++i)
      n +=
          std::string(w.kernels[i].name) == name && w.kernels[i].pass == pass && !w.is_recompute[i];
    return n;
  };
  CHECK(rounds(one, "expert_fc1", Pass::forward) == 128 / kTeGroupedGemmStreams);
  CHECK(fc1->gemm.m == 256);
  CHECK(fc1->gemm.n == 2 * 768);  // SwiGLU's two halves of moe_intermediate_size
  CHECK(fc1->gemm.k == 2048);
  const Kernel* router = find(one, "router", Pass::forward);
  REQUIRE(router);
  CHECK(router->gemm.m == 4096);
  CHECK(router->gemm.n == 128);
  CHECK(find(one, "moe_routing", Pass::forward));
  CHECK(find(one, "moe_routing", Pass::backward_data));
  CHECK_FALSE(find(one, "activation", Pass::forward));  // no shared experts: no dense MLP
  CHECK_FALSE(find(one, "fc1", Pass::forward));
  CHECK(one.collectives.empty());
  const nlohmann::json j = workload_json(one);
  CHECK(j["layer"]["moe"]["copies"] == 4096 * 8);
  CHECK(j["layer"]["moe"]["router_tokens"] == 4096);
  CHECK(j["layer"]["moe"]["expert_width"] == 768);
  // With one replica nothing is reduced; at ep = 8 below the experts reduce over dp x ep / ep.
  CHECK(one.dp.empty());

  // ep = 8: 16 experts per rank, each receiving the copies of 8 ranks, 8 x 4096 x 8 / 128 = 2048
  // tokens, through an all-to-all whose message is this rank's every token copy: 4096 x 8 x 2048
  // x 2 bytes, dispatch and combine in each pass.
  const Workload eight =
      build_workload(m, h200(), plan("tp=1,pp=1,dp=16,ep=8,mbs=1,gbs=64,zero=1,recompute=full"));
  CHECK(find(eight, "expert_fc1", Pass::forward)->gemm.batch == kTeGroupedGemmStreams);
  CHECK(rounds(eight, "expert_fc1", Pass::forward) == 16 / kTeGroupedGemmStreams);
  CHECK(find(eight, "expert_fc1", Pass::forward)->gemm.m == 2048);
  // The all-to-all dispatcher's sort by local expert, in the runner since it has the kernels:
  // the 8 x 4096 x 8 / 8 received rows of 2048, 8 bytes an element and 4 a row each pass.
  for (Pass pass : {Pass::forward, Pass::backward_data}) {
    const Kernel* sort = find(eight, "moe_sort", pass);
    REQUIRE(sort);
    CHECK(sort->bytes == doctest::Approx(4096.0 * 8 * (8 * 2048 + 4)));
  }
  CHECK(find(one, "moe_sort", Pass::forward));  // 128 experts on one rank are sorted too
  CHECK_FALSE(find(build_workload(m, h200(),
                                  plan("tp=1,pp=1,dp=8,ep=8,mbs=1,gbs=64,zero=1,"
                                       "recompute=full,dispatcher=allgather")),
                   "moe_sort", Pass::forward));  // one permutation: nothing to sort
  int fwd = 0, bwd = 0;
  for (const WorkCollective& c : eight.collectives) {
    REQUIRE(c.name == "ep_alltoall");
    CHECK(c.bytes == doctest::Approx(4096.0 * 8 * 2048 * 2));
    CHECK(c.ranks == 8);
    (c.pass == Pass::forward ? fwd : bwd) += c.count;
  }
  CHECK(fwd == 2);
  CHECK(bwd == 4);  // the recomputed forward's dispatch and combine again
  // Each expert has 16 / 8 = 2 replicas: its gradients reduce-scattered and its weights gathered
  // (the distributed optimizer) over them, apart from the dense weights' over 16.
  int expert_dp = 0;
  for (const WorkCollective& c : eight.dp)
    if (c.name.rfind("expert_dp_", 0) == 0) {
      CHECK(c.ranks == 2);
      ++expert_dp;
    }
  CHECK(expert_dp == 2);
  // selective_moe re-runs the kernel groups holding its checkpoints (the norms, the experts'
  // activation), not the GEMMs and not the core attention.
  const Workload sel = build_workload(
      m, h200(), plan("tp=1,pp=1,dp=16,ep=8,mbs=1,gbs=64,zero=1,recompute=selective_moe"));
  int again_gemm = 0, again_attention = 0, again_other = 0;
  for (size_t i = 0; i < sel.kernels.size(); ++i)
    if (sel.is_recompute[i])
      (sel.kernels[i].cls == KernelClass::gemm        ? again_gemm
       : sel.kernels[i].cls == KernelClass::attention ? again_attention
                                                      : again_other)++;
  CHECK(again_gemm == 0);
  CHECK(again_attention == 0);
  CHECK(again_other == 2);  // norm_residual, moe_routing
}

TEST_CASE("validate's expert dispatcher collectives add up to the estimate's EP communication") {
  ModelSpec m = io::load_model(PLANNER_SOURCE_DIR "/configs/models/qwen3-30b-a3b.json");
  m.seq_len = 4096;
  for (const char* text :
       {"tp=1,pp=1,dp=16,ep=8,mbs=1,gbs=64,zero=1,recompute=full",
        "tp=1,pp=1,dp=16,ep=8,mbs=1,gbs=64,zero=1,dispatcher=allgather",
        "tp=2,sp=1,pp=1,dp=8,ep=4,etp=2,mbs=1,gbs=64,zero=1",
        "tp=1,pp=1,dp=16,ep=16,mbs=1,gbs=64,zero=1,capacity_factor=1.0,pad_to_capacity=1"}) {
    CAPTURE(text);
    const Plan p = plan(text);
    const Workload w = build_workload(m, h200(), p);
    const Estimate e = estimate(m, h200(), p);
    REQUIRE(e.ok());
    double per_layer = 0;  // one micro-batch, forward and backward
    for (const WorkCollective& c : w.collectives)
      if (c.name.rfind("tp_", 0) != 0) per_layer += c.count * c.exposed_s;
    CHECK(per_layer > 0);
    // pp = 1: every layer of every micro-batch on the critical path.
    CHECK(per_layer * m.layers * p.microbatches() ==
          doctest::Approx(e.breakdown.ep_comm_s).epsilon(1e-6));
  }
  ModelSpec q = m;
  CHECK_THROWS_WITH_AS(
      build_workload(q, h200(),
                     plan("tp=1,pp=2,dp=8,ep=8,vpp=12,mbs=1,gbs=1024,zero=1,ep_comm_overlap=1")),
      doctest::Contains("ep_comm_overlap=0"), InputError);
}

TEST_CASE("latent attention and DeepEP's dispatch are refused, not timed as something else") {
  const ModelSpec ds = io::load_model(PLANNER_SOURCE_DIR "/configs/models/deepseek-v3.json");
  CHECK_THROWS_WITH_AS(
      build_workload(ds, h200(), plan("tp=1,pp=16,dp=8,ep=8,mbs=1,gbs=1024,zero=1,recompute=full")),
      doctest::Contains("no latent-attention kernels"), InputError);
  ModelSpec m = io::load_model(PLANNER_SOURCE_DIR "/configs/models/qwen3-30b-a3b.json");
  m.seq_len = 4096;
  CHECK_THROWS_WITH_AS(
      build_workload(m, h200(), plan("tp=1,pp=1,dp=16,ep=16,mbs=1,gbs=64,zero=1,dispatcher=flex")),
      doctest::Contains("dispatcher=alltoall"), InputError);
}
