// The collectives of validate's workload against the estimate's: the DP collectives of each ZeRO
// stage with cost/data_parallel.cc's bytes, groups and totals, and the overlap flags with
// overlaps_of and the TP pairing of cost/stages.cc.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <sstream>
#include <tuple>

#include "planner/cost/communication.h"
#include "planner/cost/memory.h"
#include "planner/cost/stages.h"
#include "planner/estimate.h"
#include "planner/framework.h"
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
double params_rank(const ModelSpec& m, const Plan& p) {
  double most = 0;
  for (int s = 0; s < p.pp; ++s) most = std::max(most, stage_params_per_rank(m, p, s));
  return most;
}
/// The DP collectives' seconds on the wire per iteration.
double dp_wire(const Workload& w) {
  double t = 0;
  for (size_t i = 0; i < w.dp.size(); ++i) t += w.dp_calls(i) * w.dp[i].predicted_s;
  return t;
}
double dp_time(const Plan& p, Collective c, double bytes) {
  return collective_time_s(h200(), c, bytes, dp_group(p, h200()));
}
}  // namespace

TEST_CASE(
    "ZeRO-0: a gradient all-reduce per bucket over dp x cp, with the estimate's bytes and time") {
  const Plan p = plan("tp=8,dp=4,cp=2,mbs=1,gbs=32,zero=0");
  const Workload w = build_workload(m18(), h200(), p);
  REQUIRE(w.dp.size() == 1);
  const WorkCollective& ar = w.dp[0];
  CHECK(ar.name == "dp_grad_allreduce");
  CHECK(ar.coll == Collective::allreduce);
  CHECK(ar.ranks == 8);  // dp 4 x cp 2
  // fp32 gradients under bf16, one all-reduce per bucket of max(40M, 1M x 8) parameters.
  const double params = params_rank(m18(), p);
  CHECK(ar.count == int(std::ceil(params / 40e6)));
  CHECK(ar.bytes == doctest::Approx(params * 4 / ar.count));
  CHECK(ar.pass == Pass::backward_weight);
  CHECK(!ar.per_microbatch);
  CHECK(ar.predicted_s == doctest::Approx(dp_time(p, Collective::allreduce, ar.bytes)));
  CHECK(ar.overlapped);  // the H200 profile's stack overlaps the reduction with the backward
  const Estimate e = estimate(m18(), h200(), p);
  CHECK(dp_wire(w) == doctest::Approx(e.dp_comm_total_s));
  CHECK(w.dp_total_s == doctest::Approx(e.dp_comm_total_s));
  CHECK(w.dp_exposed_s == doctest::Approx(e.breakdown.dp_comm_s));
  CHECK(build_workload(m18(), h200(), plan("tp=8,dp=1,mbs=1,gbs=8")).dp.empty());
}

TEST_CASE("ZeRO-1 and ZeRO-2: the gradients' reduce-scatter and the parameters' all-gather") {
  for (int zero : {1, 2}) {
    CAPTURE(zero);
    const Plan p = plan("tp=8,dp=4,cp=2,mbs=1,gbs=32,zero=" + std::to_string(zero));
    const Workload w = build_workload(m18(), h200(), p);
    REQUIRE(w.dp.size() == 2);
    const double params = params_rank(m18(), p);
    const WorkCollective &rs = w.dp[0], &ag = w.dp[1];
    CHECK(rs.name == "dp_grad_reduce_scatter");
    CHECK(rs.coll == Collective::reduce_scatter);
    CHECK(rs.bytes == doctest::Approx(params * 4));
    CHECK(rs.ranks == 8);
    CHECK(rs.pass == Pass::backward_weight);
    CHECK(rs.predicted_s == doctest::Approx(dp_time(p, Collective::reduce_scatter, rs.bytes)));
    // After the optimizer step every rank gathers the updated 16-bit parameters of its stage.
    CHECK(ag.name == "dp_param_allgather");
    CHECK(ag.coll == Collective::allgather);
    CHECK(ag.bytes == doctest::Approx(params * 2));
    CHECK(ag.ranks == 8);
    CHECK(ag.pass == Pass::forward);
    CHECK(ag.count == 1);
    CHECK(!ag.per_microbatch);
    CHECK(ag.predicted_s == doctest::Approx(dp_time(p, Collective::allgather, ag.bytes)));
    const Estimate e = estimate(m18(), h200(), p);
    CHECK(dp_wire(w) == doctest::Approx(e.dp_comm_total_s));
    CHECK(w.dp_exposed_s == doctest::Approx(e.breakdown.dp_comm_s));
  }
}

TEST_CASE(
    "DeepSpeed's pipeline engine: the estimate's reduction after the pipeline, nothing hidden") {
  ClusterProfile c = h200();
  c.software = kDeepSpeedStack;
  for (const char* dtype : {"bf16", "fp16"}) {
    CAPTURE(dtype);
    const Plan p = plan(std::string("tp=8,pp=2,dp=4,mbs=1,gbs=32,zero=1,dtype=") + dtype);
    const Workload w = build_workload(m18(), c, p);
    REQUIRE(w.dp.size() == 3);  // and the first and last stage's tied embedding
    CHECK(w.dp[2].name == "tied_embedding_allreduce");
    const bool bf16 = std::string(dtype) == "bf16";
    // BF16_Optimizer all-reduces the whole gradient in bf16; fp16 ZeRO-1 reduces partitions.
    CHECK(w.dp[0].coll == (bf16 ? Collective::allreduce : Collective::reduce_scatter));
    CHECK(w.dp[0].count * w.dp[0].bytes == doctest::Approx(params_rank(m18(), p) * 2));
    CHECK(w.dp[1].name == "dp_param_allgather");
    for (const WorkCollective& x : w.dp) CHECK(!x.overlapped);
    const Estimate e = estimate(m18(), c, p);
    REQUIRE(e.ok());
    CHECK(dp_wire(w) == doctest::Approx(e.dp_comm_total_s));
    CHECK(w.dp_exposed_s == doctest::Approx(e.breakdown.dp_comm_s));
  }
}

TEST_CASE(
    "ZeRO-3: each linear's gather per layer and pass, bucketed reduce-scatters, per micro-batch") {
  for (const char* recompute : {"none", "full"}) {
    CAPTURE(recompute);
    const Plan p = plan(std::string("tp=8,dp=8,mbs=1,gbs=64,zero=3,recompute=") + recompute);
    const Workload w = build_workload(m18(), h200(), p);
    const Estimate e = estimate(m18(), h200(), p);
    REQUIRE(e.ok());
    CHECK(dp_wire(w) == doctest::Approx(e.dp_comm_total_s));
    int fwd = 0, bwd = 0, scatters = 0;
    double fwd_bytes = 0, scatter_bytes = 0;
    for (const WorkCollective& c : w.dp) {
      CHECK(c.per_microbatch);
      CHECK(c.overlapped);  // prefetched a bucket ahead; reduce-scattered beside the backward
      CHECK(c.ranks == 8);
      if (c.coll == Collective::allgather) (c.pass == Pass::forward ? fwd : bwd) += c.count;
      if (c.coll == Collective::allgather && c.pass == Pass::forward)
        fwd_bytes += c.count * c.bytes;
      if (c.coll == Collective::reduce_scatter)
        scatters += c.count, scatter_bytes += c.count * c.bytes;
    }
    CHECK(fwd == 4 * 40);  // qkv, proj, fc1 and fc2 of each of the 40 layers
    CHECK(bwd == (std::string(recompute) == "full" ? 2 : 1) * 4 * 40);
    // The stage's parameters once per pass (embedding and head spread over the layers, as the
    // estimate spreads them), and its gradients once per micro-batch.
    CHECK(fwd_bytes == doctest::Approx(params_rank(m18(), p) * 2));
    CHECK(scatter_bytes == doctest::Approx(params_rank(m18(), p) * 4));
    CHECK(scatters >= 1);
  }
}

TEST_CASE("pipelined tied embeddings: the first and last stage all-reduce the embedding gradient") {
  const Plan p = plan("tp=8,pp=4,dp=2,mbs=1,gbs=32");
  const Workload w = build_workload(m18(), h200(), p);
  REQUIRE(w.dp.size() == 2);
  const WorkCollective& tied = w.dp[1];
  CHECK(tied.name == "tied_embedding_allreduce");
  CHECK(tied.coll == Collective::allreduce);
  CHECK(tied.ranks == 2);
  CHECK(tied.bytes == doctest::Approx(51200.0 * 6144 / 8 * 4));
  CHECK(!tied.overlapped);
  CHECK(dp_wire(w) == doctest::Approx(estimate(m18(), h200(), p).dp_comm_total_s));
}

TEST_CASE("overlap flags follow overlaps_of: the plan's knobs over the profile's stack") {
  const Workload w = build_workload(
      m18(), h200(),
      plan("tp=8,dp=4,mbs=1,gbs=32,zero=1,sp=1,tp_comm_overlap=1,overlap_grad_reduce=0,"
           "overlap_param_gather=1"));
  REQUIRE(w.dp.size() == 2);
  CHECK(!w.dp[0].overlapped);
  CHECK(w.dp[1].overlapped);
  // TP overlap: one entry per collective and the GEMM the estimate pairs it with (stages.cc).
  REQUIRE(w.collectives.size() == 8);
  std::set<std::tuple<std::string, Pass, std::string, Pass>> pairs;
  for (const WorkCollective& c : w.collectives) {
    REQUIRE(c.overlapped);
    REQUIRE(c.beside >= 0);
    REQUIRE(c.beside < int(w.kernels.size()));
    const Kernel& k = w.kernels[c.beside];
    CHECK(k.cls == KernelClass::gemm);
    CHECK(!w.is_recompute[c.beside]);
    CHECK(c.count == 1);
    CHECK(c.exposed_s < c.predicted_s);
    pairs.insert({c.name, c.pass, k.name, k.pass});
  }
  const auto fwd = Pass::forward, data = Pass::backward_data, weight = Pass::backward_weight;
  const std::set<std::tuple<std::string, Pass, std::string, Pass>> expected = {
      {"tp_allgather", fwd, "qkv", fwd},          {"tp_reduce_scatter", fwd, "proj", fwd},
      {"tp_allgather", fwd, "fc1", fwd},          {"tp_reduce_scatter", fwd, "fc2", fwd},
      {"tp_reduce_scatter", data, "qkv", weight}, {"tp_allgather", data, "proj", data},
      {"tp_reduce_scatter", data, "fc1", weight}, {"tp_allgather", data, "fc2", data}};
  CHECK(pairs == expected);

  const Workload off = build_workload(
      m18(), h200(),
      plan("tp=8,dp=4,mbs=1,gbs=32,zero=1,sp=1,tp_comm_overlap=0,overlap_grad_reduce=1,"
           "overlap_param_gather=0"));
  CHECK(off.dp[0].overlapped);
  CHECK(!off.dp[1].overlapped);
  REQUIRE(off.collectives.size() == 4);
  for (const WorkCollective& c : off.collectives) {
    CHECK(!c.overlapped);
    CHECK(c.beside == -1);
    CHECK(c.exposed_s == c.predicted_s);
  }
  // The estimate overlaps TP collectives only with sequence parallelism (Transformer Engine's
  // userbuffers need it), whatever the knob says.
  for (const WorkCollective& c :
       build_workload(m18(), h200(), plan("tp=8,dp=4,mbs=1,gbs=32,tp_comm_overlap=1")).collectives)
    CHECK(!c.overlapped);
  // Unset: the profile's stack (the H200's overlaps all three).
  const Workload stack = build_workload(m18(), h200(), plan("tp=8,dp=4,mbs=1,gbs=32,zero=1,sp=1"));
  CHECK(stack.dp[0].overlapped);
  CHECK(stack.dp[1].overlapped);
  CHECK(stack.collectives.size() == 8);
}

TEST_CASE("the TP collectives' exposed times add up to the estimate's TP communication") {
  for (const char* s : {"tp=8,dp=4,mbs=1,gbs=32", "tp=8,dp=4,mbs=1,gbs=32,sp=1,tp_comm_overlap=0",
                        "tp=8,dp=4,mbs=1,gbs=32,sp=1", "tp=8,dp=4,mbs=2,gbs=32,sp=1,recompute=full",
                        "tp=8,dp=4,mbs=1,gbs=32,sp=1,recompute=selective"}) {
    CAPTURE(s);
    const Plan p = plan(s);
    const Workload w = build_workload(m18(), h200(), p);
    const Estimate e = estimate(m18(), h200(), p);
    double fwd = 0, bwd = 0;
    for (const WorkCollective& c : w.collectives)
      (c.pass == Pass::forward ? fwd : bwd) += c.count * c.exposed_s;
    CHECK(fwd == doctest::Approx(e.layer.fwd_comm_s));
    CHECK(bwd == doctest::Approx(e.layer.bwd_comm_s));
  }
  // Full recompute: the recomputed forward's collectives beside the recomputed GEMMs.
  const Workload full =
      build_workload(m18(), h200(), plan("tp=8,dp=4,mbs=2,gbs=32,sp=1,recompute=full"));
  REQUIRE(full.collectives.size() == 12);
  int recomputed = 0;
  for (const WorkCollective& c : full.collectives) recomputed += full.is_recompute.at(c.beside);
  CHECK(recomputed == 4);
}

TEST_CASE("validate compares exposed with exposed, and each DP collective on the wire") {
  const Plan p = plan("tp=8,dp=4,mbs=1,gbs=32,zero=1,sp=1");
  const Workload w = build_workload(m18(), h200(), p);
  const Estimate e = estimate(m18(), h200(), p);
  nlohmann::json j = {{"device", "test"}, {"kernels_s", nlohmann::json::array()}};
  for (const Kernel& k : w.kernels) j["kernels_s"].push_back(k.time_s);
  for (const WorkCollective& c : w.collectives) {
    j["collectives_s"].push_back(c.predicted_s);
    j["collectives_exposed_s"].push_back(2 * c.exposed_s);
  }
  for (const WorkCollective& c : w.dp) j["dp_s"].push_back(1.5 * c.predicted_s);
  const ValidationReport r = compare(w, parse_measured(j, w, "m.json"));
  CHECK(r.communication_basis == "exposed");
  CHECK(r.predicted[3].total() == doctest::Approx(e.layer.fwd_comm_s + e.layer.bwd_comm_s));
  CHECK(r.measured[3].total() == doctest::Approx(2 * r.predicted[3].total()));
  REQUIRE(r.dp_measured_s.size() == 2);
  CHECK(r.dp_predicted_total_s == doctest::Approx(e.dp_comm_total_s));
  CHECK(r.dp_measured_total_s == doctest::Approx(1.5 * e.dp_comm_total_s));
  CHECK(r.dp_exposed_s == doctest::Approx(e.breakdown.dp_comm_s));
  std::ostringstream text;
  print_validation(text, w, r);
  CHECK(text.str().find("dp_param_allgather") != std::string::npos);
  const nlohmann::json js = validation_json(w, r);
  CHECK(js["dp"]["collectives"].size() == 2);
  CHECK(js["dp"]["collectives"][1]["name"] == "dp_param_allgather");
  CHECK(js["communication_basis"] == "exposed");

  // Without the times beside the GEMMs (a runner that ran them alone): both sides on the wire.
  j.erase("collectives_exposed_s");
  const ValidationReport wire = compare(w, parse_measured(j, w, "m.json"));
  CHECK(wire.communication_basis == "wire");
  double on_wire = 0;
  for (const WorkCollective& c : w.collectives) on_wire += c.count * c.predicted_s;
  CHECK(wire.predicted[3].total() == doctest::Approx(on_wire));
  CHECK(wire.measured[3].total() == doctest::Approx(on_wire));
  // Not measured at all: the estimate's charge on both sides.
  j.erase("collectives_s");
  j.erase("dp_s");
  const ValidationReport none = compare(w, parse_measured(j, w, "m.json"));
  CHECK(none.predicted[3].total() == doctest::Approx(e.layer.fwd_comm_s + e.layer.bwd_comm_s));
  CHECK(none.dp_measured_total_s < 0);
  j["dp_s"] = {1.0};
  CHECK_THROWS_WITH(parse_measured(j, w, "m.json"), "m.json: key 'dp_s': expected 2 times");
}

namespace {
/// The workload's TP communication of one micro-batch on its stage: its layers' exposed TP
/// collectives and the stage-boundary all-gathers.
double stage_tp_s(const Workload& w) {
  double layer = 0, boundary = 0;
  for (const WorkCollective& c : w.collectives) layer += c.count * c.exposed_s;
  for (const WorkCollective& c : w.boundary) boundary += c.count * c.predicted_s;
  return w.stage_layers * layer + boundary;
}
}  // namespace

TEST_CASE("without sp the receiver all-gathers each activation crossing a stage boundary") {
  // Per micro-batch into each of the stage's chunks but the model's first (forward) and each but
  // its last (backward), the whole activation over the TP group, as plan_costs charges it.
  for (const char* s :
       {"tp=8,pp=4,dp=2,mbs=1,gbs=32", "tp=8,pp=4,dp=2,mbs=2,gbs=32,vpp=2",
        "tp=4,pp=2,dp=8,mbs=1,gbs=64,recompute=full", "tp=8,pp=8,dp=1,mbs=1,gbs=16,vpp=5"}) {
    CAPTURE(s);
    const Plan p = plan(s);
    const Workload w = build_workload(m18(), h200(), p);
    const Estimate e = estimate(m18(), h200(), p);
    REQUIRE(e.ok());
    CHECK(w.stage == e.critical_stage);
    CHECK(w.stage_layers == e.partition[size_t(w.stage)]);
    const BlockLayout layout = block_layout(m18());
    const double gather_s = plan_costs(m18(), h200(), p, layout).p2p_gather_s;
    REQUIRE(gather_s > 0);
    const int chunks = p.pp * p.vpp;
    int fwd = 0, bwd = 0;
    for (int vs = w.stage; vs < chunks; vs += p.pp) fwd += vs > 0, bwd += vs < chunks - 1;
    int seen_fwd = 0, seen_bwd = 0;
    for (const WorkCollective& c : w.boundary) {
      CHECK(c.name == "pp_boundary_allgather");
      CHECK(c.coll == Collective::allgather);
      CHECK(c.bytes == doctest::Approx(2.0 * p.mbs * 2048 * 6144));
      CHECK(c.ranks == p.tp);
      CHECK(c.per_microbatch);
      CHECK(!c.overlapped);
      CHECK(c.predicted_s == doctest::Approx(gather_s));
      (c.pass == Pass::forward ? seen_fwd : seen_bwd) += c.count;
    }
    CHECK(seen_fwd == fwd);
    CHECK(seen_bwd == bwd);
    // With the layers' TP collectives they are the estimate's whole TP communication.
    CHECK(p.microbatches() * stage_tp_s(w) == doctest::Approx(e.breakdown.tp_comm_s));
  }
  // Each stage of pp=4 x vpp=2 (chunks 0-7): stage 0 holds chunks 0 and 4 (the model's first
  // receives nothing forward), stage 3 chunks 3 and 7 (the last receives nothing backward).
  const Plan p = plan("tp=8,pp=4,dp=2,mbs=1,gbs=32,vpp=2");
  const Partition part = even_partition(40, 8);
  const int expected[4][2] = {{1, 2}, {2, 2}, {2, 2}, {2, 1}};
  for (int stage = 0; stage < 4; ++stage) {
    CAPTURE(stage);
    const std::vector<WorkCollective> b = boundary_collectives(m18(), h200(), p, part, stage);
    REQUIRE(b.size() == 2);
    CHECK(b[0].pass == Pass::forward);
    CHECK(b[0].count == expected[stage][0]);
    CHECK(b[1].pass == Pass::backward_data);
    CHECK(b[1].count == expected[stage][1]);
  }
  const std::vector<WorkCollective> first = boundary_collectives(
      m18(), h200(), plan("tp=8,pp=4,dp=2,mbs=1,gbs=32"), even_partition(40, 4), 0);
  REQUIRE(first.size() == 1);  // the first stage without interleaving: backward only
  CHECK(first[0].pass == Pass::backward_data);
  // With sp the slice is the next layer's sequence shard as it is; no TP, no pipeline: none.
  for (const char* s : {"tp=8,pp=4,dp=2,mbs=1,gbs=32,sp=1", "tp=1,pp=4,dp=16,mbs=1,gbs=32",
                        "tp=8,pp=1,dp=8,mbs=1,gbs=32"})
    CHECK(build_workload(m18(), h200(), plan(s)).boundary.empty());
}

TEST_CASE("validate adds the stage boundaries to the stage's micro-batch, measured or not") {
  const Plan p = plan("tp=8,pp=4,dp=2,mbs=1,gbs=32,vpp=2");
  const Workload w = build_workload(m18(), h200(), p);
  REQUIRE(!w.boundary.empty());
  nlohmann::json j = {{"device", "test"}, {"kernels_s", nlohmann::json::array()}};
  for (const Kernel& k : w.kernels) j["kernels_s"].push_back(k.time_s);
  const ValidationReport none = compare(w, parse_measured(j, w, "m.json"));
  double boundary = 0;
  for (const WorkCollective& c : w.boundary) boundary += c.count * c.predicted_s;
  CHECK(!none.boundary_run);
  CHECK(none.boundary_predicted.total() == doctest::Approx(boundary));
  CHECK(none.boundary_measured.total() == doctest::Approx(boundary));  // the profile's
  CHECK(none.predicted_microbatch_s() ==
        doctest::Approx(none.predicted_layer.total() * w.stage_layers + boundary));
  CHECK(validation_json(w, none)["boundary"]["measured_s"].is_null());
  for (const WorkCollective& c : w.boundary) j["boundary_s"].push_back(3 * c.predicted_s);
  const ValidationReport r = compare(w, parse_measured(j, w, "m.json"));
  CHECK(r.boundary_run);
  CHECK(r.boundary_measured.total() == doctest::Approx(3 * boundary));
  CHECK(r.measured_microbatch_s() - r.predicted_microbatch_s() == doctest::Approx(2 * boundary));
  const nlohmann::json js = validation_json(w, r);
  CHECK(js["boundary"]["stage"] == w.stage);
  CHECK(js["boundary"]["measured_s"].get<double>() == doctest::Approx(3 * boundary));
  CHECK(js["microbatch"]["measured_s"].get<double>() == doctest::Approx(r.measured_microbatch_s()));
  std::ostringstream text;
  print_validation(text, w, r);
  CHECK(text.str().find("boundaries per micro-batch") != std::string::npos);
  CHECK(text.str().find("pp_boundary_allgather") != std::string::npos);
  CHECK(text.str().find("with the stage boundaries") != std::string::npos);
  j["boundary_s"] = {1.0, 2.0, 3.0};
  CHECK_THROWS_WITH(
      parse_measured(j, w, "m.json"),
      doctest::Contains(
          ("key 'boundary_s': expected " + std::to_string(w.boundary.size()) + " times").c_str()));
}

TEST_CASE("current-scaling FP8 with sp: the amax all-reduces are in the workload as estimated") {
  // QKV's and fc1's inputs forward, the projection's and fc2's gradients backward, 4 bytes each
  // over the TP group; a recomputed forward's again in the backward. With the other TP
  // collectives they are the estimate's whole TP communication.
  for (const char* s : {"tp=4,dp=2,mbs=1,gbs=16,sp=1,dtype=fp8,fp8_recipe=tensorwise",
                        "tp=4,dp=2,mbs=1,gbs=16,sp=1,dtype=fp8,fp8_recipe=tensorwise,"
                        "recompute=full,tp_comm_overlap=0",
                        "tp=4,dp=2,mbs=1,gbs=16,sp=1,dtype=fp8"}) {
    CAPTURE(s);
    const Plan p = plan(s);
    const Workload w = build_workload(m18(), h200(), p);
    const Estimate e = estimate(m18(), h200(), p);
    REQUIRE(e.ok());
    int fwd = 0, bwd = 0;
    for (const WorkCollective& c : w.collectives)
      if (c.name == "tp_fp8_amax_allreduce") {
        CHECK(c.bytes == kFp8AmaxAllreduceBytes);
        CHECK(c.ranks == p.tp);
        (c.pass == Pass::forward ? fwd : bwd) += c.count;
      }
    const bool current = p.fp8_recipe == Fp8Recipe::tensorwise;
    const bool full = p.recompute == Recompute::full;
    CHECK(fwd == (current ? 2 : 0));
    CHECK(bwd == (current ? (full ? 4 : 2) : 0));
    CHECK(p.microbatches() * stage_tp_s(w) == doctest::Approx(e.breakdown.tp_comm_s));
  }
}
