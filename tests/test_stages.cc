#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "planner/cost/communication.h"
#include "planner/cost/data_parallel.h"
#include "planner/cost/stages.h"
#include "planner/error.h"
#include "planner/estimate.h"
#include "planner/framework.h"
#include "planner/io/cluster_io.h"
#include "planner/io/model_io.h"
#include "planner/plan.h"
#include "planner/report/trace.h"
#include "planner/units.h"

using namespace planner;

namespace {
const ClusterProfile& a100() {
  static const ClusterProfile c =
      io::load_cluster(PLANNER_SOURCE_DIR "/hw_profiles/dgx-a100-80gb.yaml");
  return c;
}
const ClusterProfile& h100() {
  static const ClusterProfile c =
      io::load_cluster(PLANNER_SOURCE_DIR "/hw_profiles/dgx-h100-80gb.yaml");
  return c;
}
const ModelSpec& llava() {
  static const ModelSpec m =
      io::load_model(PLANNER_SOURCE_DIR "/configs/models/llava-1.5-13b.yaml");
  return m;
}
Plan plan(int tp, int pp, int dp, int mbs, int gbs) {
  Plan p;
  p.tp = tp, p.pp = pp, p.dp = dp, p.mbs = mbs, p.gbs = gbs, p.zero = dp > 1 ? 1 : 0;
  p.recompute = Recompute::selective, p.sp = tp > 1;
  return p;
}
}  // namespace

TEST_CASE("a multimodal model is a list of blocks: encoder layers, then decoder layers") {
  const ModelSpec& m = llava();
  REQUIRE(m.encoders.size() == 2);
  CHECK(m.encoders[0].type == ComponentType::vit);
  CHECK(m.encoders[0].shape.seq == 577);
  CHECK(!m.encoders[0].shape.causal);
  CHECK(m.encoders[1].type == ComponentType::projector);
  const BlockLayout b = block_layout(m);
  CHECK(b.count() == 24 + 1 + 40);
  CHECK(b.first_decoder == 25);
  CHECK(b.shapes.size() == 3);
  // CLIP ViT-L/14 layer: 12 x 1024^2 + 2 x 1024 norms = 12,584,960 weights (biases not counted).
  CHECK(m.encoders[0].shape.params() == doctest::Approx(12.0 * 1024 * 1024 + 2 * 1024));
  // LLaVA-1.5 13B: 13.0B Vicuna + 0.30B CLIP + 0.03B projector ~ 13.35B.
  CHECK(m.total_params() == doctest::Approx(13.35e9).epsilon(0.01));
}

TEST_CASE("even partition puts the remainder on the first stages") {
  CHECK(even_partition(65, 4) == Partition{17, 16, 16, 16});
  CHECK(even_partition(96, 8) == Partition(8, 12));
}

TEST_CASE("vision layers on the first stages beat an even split by more than 15%") {
  const Plan p = plan(2, 4, 4, 1, 128);
  const Estimate e = refine(llava(), a100(), p);
  REQUIRE(e.ok());
  CHECK(e.balanced);
  CHECK(e.balanced_gain_pct > 15.0);
  // All 24 ViT layers and the projector sit in the first stage with a few decoder layers.
  REQUIRE(e.partition.size() == 4);
  CHECK(e.partition[0] > 25);
  int sum = 0;
  for (int n : e.partition) sum += n;
  CHECK(sum == 65);
}

TEST_CASE("the balanced partition respects each stage's memory") {
  const ModelSpec m = io::load_model(PLANNER_SOURCE_DIR "/configs/models/gpt3-175b.yaml");
  Plan p = plan(8, 8, 2, 1, 64);
  const BlockLayout layout = block_layout(m);
  const PlanCosts pc = plan_costs(m, a100(), p, layout);
  // The even split's first stage (8 micro-batches in flight) needs the most; cap memory 5% below
  // it, so the balanced partition must move layers off the first stage to fit.
  const Stages even = build_stages(layout, pc, p, even_partition(96, 8));
  const double first = stage_memory(even.load[0], p, in_flight_on(p, 0)).total();
  const double limit = 0.95 * first;
  const Partition part = balanced_partition(layout, pc, p, limit);
  CHECK(part != even_partition(96, 8));
  CHECK(part[0] < 12);
  const Stages st = build_stages(layout, pc, p, part);
  for (int s = 0; s < p.pp; ++s)
    CHECK(stage_memory(st.load[s], p, in_flight_on(p, s)).total() <= limit);
}

TEST_CASE("with one stage the simulator and the closed form agree exactly") {
  const ModelSpec m = io::load_model(PLANNER_SOURCE_DIR "/configs/models/gpt3-1.3b.yaml");
  const Plan p = plan(1, 1, 8, 4, 256);
  const Estimate closed = estimate(m, a100(), p);
  const Estimate sim = simulate_plan(m, a100(), p);
  REQUIRE((closed.ok() && sim.ok()));
  CHECK(sim.iteration_time_s == doctest::Approx(closed.iteration_time_s));
}

TEST_CASE("the closed form stays close to the simulator for uniform decoders") {
  const ModelSpec m = io::load_model(PLANNER_SOURCE_DIR "/configs/models/gpt3-175b.yaml");
  Plan p = plan(8, 8, 16, 1, 1536);
  p.vpp = 3, p.schedule = Schedule::interleaved;
  const Estimate sim = simulate_plan(m, a100(), p);
  REQUIRE(sim.ok());
  CHECK(sim.closed_form_time_s == doctest::Approx(sim.iteration_time_s).epsilon(0.02));
  // Interleaving hides each transfer behind the stage's other chunks; the closed form charges the
  // fill's and the drain's 2 (pv - 1) hops only (it charged 2 v per micro-batch and stage: 4.8%
  // over the simulator on this plan, whose stages meet across nodes).
  ModelSpec q = io::load_model(PLANNER_SOURCE_DIR "/tests/data/hf/Qwen3-30B-A3B/config.json");
  q.seq_len = 4096;
  const Plan moe = parse_plan("tp=1,pp=2,dp=8,ep=8,vpp=12,mbs=1,gbs=1024,zero=1", "--plan");
  REQUIRE(pp_pair(moe, h100()).nodes == 2);
  const Estimate qs = simulate_plan(q, h100(), moe);
  REQUIRE(qs.ok());
  CHECK(qs.closed_form_time_s == doctest::Approx(qs.iteration_time_s).epsilon(0.005));
  // Interleaving: the first stage holds p + (p-1)/v micro-batches' worth of chunks.
  CHECK(sim.peak_in_flight[0] == doctest::Approx(3 * (8 + 7.0 / 3)).epsilon(0.05));
}

TEST_CASE("a schedule that cannot complete is a rejection with the simulator's message") {
  const ModelSpec m = io::load_model(PLANNER_SOURCE_DIR "/configs/models/gpt3-175b.yaml");
  Plan p = plan(8, 8, 16, 1, 1536);
  p.vpp = 3, p.schedule = Schedule::interleaved, p.gbs = 16 * 12;  // 12 micro-batches, pp = 8
  const Estimate e = simulate_plan(m, a100(), p);
  CHECK(e.rejection == Rejection::interleave_microbatches);
  CHECK(e.reason.find("multiple of pp") != std::string::npos);
}

TEST_CASE("the Chrome trace has one track per stage and labelled slices") {
  const ModelSpec m = io::load_model(PLANNER_SOURCE_DIR "/configs/models/gpt3-1.3b.yaml");
  const Plan p = plan(1, 4, 2, 1, 16);  // 8 micro-batches over 4 stages
  SimResult sim;
  const Estimate e = simulate_plan(m, a100(), p, {}, nullptr, &sim, true);
  REQUIRE(e.ok());
  std::string text;
  write_chrome_trace(sim, p, [&](std::string_view piece) { text += piece; });
  const nlohmann::json t = nlohmann::json::parse(text);
  CHECK(double(t["traceEvents"].size()) <= trace_events(p));
  int slices = 0, transfers = 0, names = 0;
  for (const auto& ev : t["traceEvents"]) {
    if (ev["ph"] == "M" && ev["name"] == "thread_name") ++names;
    if (ev["ph"] != "X") continue;
    ++slices;
    CHECK(ev["dur"].get<double>() > 0);
    CHECK(ev["name"].get<std::string>().find(" mb") != std::string::npos);
    CHECK(ev["args"].contains("microbatch"));
    if (ev["cat"] == "transfer") ++transfers;
  }
  CHECK(names == 2 * 4);                   // compute and receive track per stage
  CHECK(slices - transfers == 4 * 8 * 2);  // every stage runs F and B of every micro-batch
  CHECK(transfers == 2 * 3 * 8);           // 3 boundaries, forward and backward, per micro-batch
}

TEST_CASE("bad multimodal descriptions name the component") {
  auto err = [](const std::string& text) {
    try {
      io::parse_model(text, "mm.yaml");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string vit =
      "  - {type: vit, name: v, layers: 2, hidden: 64, heads: 4, ffn: 256, tokens: 10}\n";
  const std::string dec =
      "  - {type: decoder, name: d, layers: 2, hidden: 64, heads: 4, ffn: 256, swiglu: false, "
      "vocab: 100, seq_len: 32}\n";
  CHECK(err("name: mm\ncomponents:\n" + dec + vit) ==
        "mm.yaml:3: key 'components[0].type': the decoder must be the last component");
  CHECK(err("name: mm\ncomponents:\n  - {type: audio, name: a}\n" + dec) ==
        "mm.yaml:3: key 'components[0].type': unknown component type 'audio' (expected vit, "
        "projector or decoder)");
  CHECK(err("name: mm\ncomponents:\n" + vit) ==
        "mm.yaml:2: key 'components': no decoder component (it must be the last one)");
  CHECK(err("name: mm\ncomponents:\n  - {type: vit, name: v, layers: 2, hidden: 64, heads: 4, ffn: "
            "256, tokns: 10}\n" +
            dec) == "mm.yaml:3: key 'components[0].tokns': unknown key, did you mean 'tokens'?");
  CHECK(err("name: mm\ncomponents:\n" + vit + dec).find("no error") == 0);
}

TEST_CASE("closed-form micro-batches in flight agree with the simulator on every stage") {
  const ModelSpec m = io::load_model(PLANNER_SOURCE_DIR "/configs/models/gpt3-1.3b.yaml");
  for (Schedule s : {Schedule::one_f_one_b, Schedule::zb_h1, Schedule::gpipe})
    for (int gbs : {2, 4, 16}) {  // fewer, as many and more micro-batches than the 4 stages
      Plan p = plan(1, 4, 1, 1, gbs);
      p.schedule = s;
      CAPTURE(gbs);
      CAPTURE(to_string(s));
      SimResult sim;
      REQUIRE(simulate_plan(m, a100(), p, {}, nullptr, &sim).ok());
      for (int st = 0; st < 4; ++st) CHECK(in_flight_on(p, st) == sim.peak_in_flight[st]);
    }
}

TEST_CASE("the simulated breakdown adds up to the iteration") {
  const ModelSpec m = io::load_model(PLANNER_SOURCE_DIR "/configs/models/gpt3-1.3b.yaml");
  const Estimate e = simulate_plan(m, a100(), plan(1, 24, 8, 8, 4096));
  REQUIRE(e.ok());
  const Breakdown& b = e.breakdown;
  CHECK(b.compute_s + b.tp_comm_s + b.cp_comm_s + b.pp_comm_s + b.dp_comm_s + b.bubble_s +
            b.optimizer_s ==
        doctest::Approx(e.iteration_time_s));
}

TEST_CASE("an interleaved plan reports its bubble, about (p - 1) / (v m) of the pipeline") {
  // The README's rank-1 GPT-3 175B plan: pp = 8, vpp = 12, 48 micro-batches. The bubble used to
  // be charged to PP transfers first and showed as 0.
  const ModelSpec m = io::load_model(PLANNER_SOURCE_DIR "/configs/models/gpt3-175b.yaml");
  const Plan p = parse_plan(
      "tp=4,pp=8,dp=32,cp=1,vpp=12,mbs=1,gbs=1536,zero=1,recompute=selective,sp=1,"
      "schedule=interleaved,dtype=bf16",
      "test");
  const ClusterProfile c = io::load_cluster(PLANNER_SOURCE_DIR "/hw_profiles/dgx-a100-80gb.yaml");
  const Estimate e = simulate_plan(m, c, p);
  REQUIRE(e.ok());
  const Breakdown& b = e.breakdown;
  const double busy = b.compute_s + b.tp_comm_s;
  const double expect = 7.0 / (12 * 48);  // 1.2%
  CHECK(b.bubble_s / busy > 0.8 * expect);
  CHECK(b.bubble_s / busy < 1.5 * expect);
  CHECK(b.pp_comm_s < b.bubble_s);  // transfers overlap other stages' work
  const Estimate closed = estimate(m, c, p);
  REQUIRE(closed.ok());
  CHECK(closed.breakdown.bubble_s / busy == doctest::Approx(expect).epsilon(0.1));
}

TEST_CASE("context parallelism: gradients reduced and ZeRO shards over dp x cp") {
  const ModelSpec m = io::load_model(PLANNER_SOURCE_DIR "/configs/models/llama3-8b.yaml");
  const ClusterProfile c = io::load_cluster(PLANNER_SOURCE_DIR "/hw_profiles/dgx-h100-80gb.yaml");
  // tp=4, cp=2, dp=1 with ZeRO-1 was refused ("ZeRO shards over data parallelism; dp=1").
  const Plan one = parse_plan("tp=4,pp=1,dp=1,cp=2,mbs=1,gbs=8,zero=1,sp=1", "test");
  std::string why;
  CHECK(check_plan(m, c, one, {}, &why) == Rejection::none);
  CHECK(why.empty());
  const Plan no_zero = parse_plan("tp=4,pp=1,dp=1,cp=2,mbs=1,gbs=8,zero=0,sp=1", "test");
  const Estimate e0 = estimate(m, c, no_zero), e1 = estimate(m, c, one);
  REQUIRE(e0.ok());
  REQUIRE(e1.ok());
  CHECK(e0.dp_comm_total_s > 0);  // the gradients are all-reduced over the 2 CP ranks
  CHECK(e0.breakdown.dp_comm_s > 0);
  CHECK(e1.memory.optimizer == doctest::Approx(e0.memory.optimizer / 2));
  // dp x cp = 2 the other way round: the same shards, the same group size.
  const Plan dp2 = parse_plan("tp=4,pp=1,dp=2,cp=1,mbs=1,gbs=8,zero=1,sp=1", "test");
  const Estimate e2 = estimate(m, c, dp2);
  REQUIRE(e2.ok());
  CHECK(e2.memory.optimizer == doctest::Approx(e1.memory.optimizer));
  CHECK(e2.memory.weights == doctest::Approx(e1.memory.weights));
  CHECK(e2.dp_comm_total_s == doctest::Approx(e1.dp_comm_total_s));  // same bytes, same group
  const Plan neither = parse_plan("tp=4,pp=1,dp=1,cp=1,mbs=1,gbs=8,zero=1,sp=1", "test");
  CHECK(check_plan(m, c, neither, {}, &why) == Rejection::zero_invalid);
  CHECK(why == "ZeRO shards over the data- and context-parallel ranks; dp x cp = 1");
}

TEST_CASE("the CP exchange is a breakdown term of its own, not TP communication") {
  const ModelSpec m = io::load_model(PLANNER_SOURCE_DIR "/configs/models/gpt3-1.3b.yaml");
  ClusterProfile c = io::load_cluster(PLANNER_SOURCE_DIR "/hw_profiles/dgx-h100-80gb.yaml");
  for (CollectiveCost& k : c.intra.cost) {  // NVLink 1000 times slower: the K,V ring shows
    k.busbw_Bps /= 1000;
    for (auto& point : k.curve) point.second /= 1000;
  }
  for (const char* text : {"tp=1,pp=1,dp=1,cp=2,mbs=1,gbs=4,zero=0,recompute=selective",
                           "tp=1,pp=2,dp=1,cp=2,mbs=1,gbs=4,zero=0,recompute=full"}) {
    CAPTURE(text);
    const Plan p = parse_plan(text, "test");
    for (const Estimate& e : {estimate(m, c, p), simulate_plan(m, c, p)}) {
      REQUIRE(e.ok());
      const Breakdown& b = e.breakdown;
      CHECK(b.cp_comm_s > 0);
      if (p.pp == 1) CHECK(b.tp_comm_s == 0);  // tp = 1 and no stage boundary: no TP collective
      CHECK(b.compute_s + b.tp_comm_s + b.cp_comm_s + b.pp_comm_s + b.dp_comm_s + b.bubble_s +
                b.optimizer_s ==
            doctest::Approx(e.iteration_time_s));
      // One layer's communication is the TP and the CP parts together.
      CHECK(e.layer.fwd_comm_s + e.layer.bwd_comm_s > 0);
    }
  }
  const Plan none = parse_plan("tp=1,pp=1,dp=2,cp=1,mbs=1,gbs=4,zero=0", "test");
  CHECK(estimate(m, c, none).breakdown.cp_comm_s == 0);
}

TEST_CASE("ZeRO-3 gathers and scatters module by module beside the compute") {
  // GPT-3 175B under ZeRO-3, one micro-batch of 4 per GPU (Narayanan 2021 Table 2): the gathers
  // and scatters are a little shorter than the compute, but one module of prefetch cannot hide
  // the projection's and fc1's gathers behind the attention core and the projection.
  const ModelSpec m = io::load_model(PLANNER_SOURCE_DIR "/configs/models/gpt3-175b.yaml");
  const Plan p =
      parse_plan("tp=1,pp=1,dp=384,mbs=4,gbs=1536,zero=3,recompute=full,dtype=fp16", "test");
  ClusterProfile c = a100();
  c.software = info(Framework::deepspeed_2021).stack;  // the stack that run used
  c.gpu.overlap_compute_slowdown = 0;
  const Estimate e0 = estimate(m, c, p);
  REQUIRE(e0.ok());
  const double total = e0.dp_comm_total_s, layers = m.layers, compute = e0.breakdown.compute_s;
  REQUIRE(total == doctest::Approx(compute).epsilon(0.05));  // about as long as the compute
  // Each linear layer's gather (forward, recompute, backward) and reduce-scatter is a collective
  // of its own: the wire time of the whole model's, plus a latency each (96 layers x 4 linears).
  GroupLayout z3 = dp_group(p, c);
  z3.ranks_per_node = c.software.zero3_collective_nics;
  const double params = e0.memory.optimizer / kOptimizerBytesPerParam * p.dp;  // on this rank
  const double ag_lat = collective_latency_s(c, Collective::allgather, z3);
  const double rs_lat = collective_latency_s(c, Collective::reduce_scatter, z3);
  const double ag =
      collective_time_s(c, Collective::allgather, params * kWeightBytesPerParam, z3) - ag_lat;
  const double rs =
      collective_time_s(c, Collective::reduce_scatter, params * grad_wire_bytes(p), z3) - rs_lat;
  CHECK(total == doctest::Approx(3 * ag + rs + 4 * layers * (3 * ag_lat + rs_lat)));
  CHECK(ag_lat == doctest::Approx(25e-6 + 47 * 14e-6));  // the tier's latency, 47 node hops
  CHECK(e0.breakdown.dp_comm_s > 2 * total / layers);    // more than a whole-pass overlap's tail
  CHECK(e0.breakdown.dp_comm_s < 0.3 * total);
  // Compute beside the collectives slows: more exposed.
  c.gpu.overlap_compute_slowdown = 0.189;
  const Estimate e = estimate(m, c, p);
  CHECK(e.breakdown.dp_comm_s > e0.breakdown.dp_comm_s + 0.05 * compute);
  // Communication-bound (one sequence per GPU): the link is busy throughout, so the exposed part
  // is the traffic beyond the compute plus about a module's gather at each end of a pass.
  const Plan comm_bound =
      parse_plan("tp=1,pp=1,dp=1536,mbs=1,gbs=1536,zero=3,recompute=full,dtype=fp16", "test");
  const Estimate b = estimate(m, c, comm_bound);
  REQUIRE(b.ok());
  const double beyond = b.dp_comm_total_s - b.breakdown.compute_s;
  CHECK(b.breakdown.dp_comm_s >= beyond);
  CHECK(b.breakdown.dp_comm_s < beyond + b.dp_comm_total_s / layers);
}

TEST_CASE("ZeRO++: int8 forward gathers, backward gathers inside the node, int4 reduce-scatters") {
  // GPT-3 175B, ZeRO-3 over 384 A100s on DeepSpeed's stack. ZeRO++ (zeropp=1) sends the forward's
  // gather at 1 byte an element across the 48 nodes, the recompute's and backward's at bf16 among
  // the node's 8 ranks from the secondary partition, and the gradients at half a byte.
  const ModelSpec m = io::load_model(PLANNER_SOURCE_DIR "/configs/models/gpt3-175b.yaml");
  const Plan p = parse_plan("tp=1,pp=1,dp=384,mbs=4,gbs=1536,zero=3,recompute=full,zeropp=1", "t");
  ClusterProfile c = a100();
  c.software = info(Framework::deepspeed).stack;
  c.gpu.hbm_bytes = 96 * kGiB;  // the traffic is checked here; on 80 GiB it is 0.2 GiB over
  const Estimate e = estimate(m, c, p);
  REQUIRE(e.ok());
  Plan plain = p;
  plain.zeropp = false;
  const Estimate e0 = estimate(m, c, plain);
  REQUIRE(e0.ok());
  const double layers = m.layers;
  const double params = e0.memory.optimizer / kOptimizerBytesPerParam * p.dp;  // on this rank
  GroupLayout z3 = dp_group(p, c);
  z3.ranks_per_node = c.software.zero3_collective_nics;
  REQUIRE(hpz_partition(c, p) == 8);
  const GroupLayout node{8, 8, 1};
  const double ag_lat = collective_latency_s(c, Collective::allgather, z3);
  const double rs_lat = collective_latency_s(c, Collective::reduce_scatter, z3);
  const double node_lat = collective_latency_s(c, Collective::allgather, node);
  const double ag8 = collective_time_s(c, Collective::allgather, params * 1.0, z3) - ag_lat;
  const double ag_node =
      collective_time_s(c, Collective::allgather, params * kWeightBytesPerParam, node) - node_lat;
  const double rs4 = collective_time_s(c, Collective::reduce_scatter, params * 0.5, z3) - rs_lat;
  CHECK(e.dp_comm_total_s ==
        doctest::Approx(ag8 + 2 * ag_node + rs4 + 4 * layers * (ag_lat + 2 * node_lat + rs_lat)));
  CHECK(e.dp_comm_total_s < 0.5 * e0.dp_comm_total_s);  // the paper's 4x less traffic, in time
  // hpZ's secondary partition: a bf16 copy of the weights sharded over the node's 8 ranks.
  CHECK(e.memory.weights - e0.memory.weights ==
        doctest::Approx(params * kWeightBytesPerParam / 8).epsilon(1e-9));
  // Inside one node there is nothing to keep local: no secondary partition.
  const Plan one_node =
      parse_plan("tp=1,pp=1,dp=8,mbs=1,gbs=8,zero=3,recompute=full,zeropp=1", "t");
  CHECK(hpz_partition(c, one_node) == 1);
  // ZeRO++ is ZeRO-3's: any other stage is refused, and only DeepSpeed runs it.
  CHECK(estimate(m, c, parse_plan("tp=8,pp=8,dp=6,mbs=1,gbs=48,zero=1,zeropp=1", "t")).rejection ==
        Rejection::zero_invalid);
  // Planned for pure data parallelism: hpZ's groups are a node's consecutive ranks.
  CHECK(estimate(m, c, parse_plan("tp=8,pp=1,dp=48,mbs=1,gbs=48,zero=3,zeropp=1", "t")).rejection ==
        Rejection::zero_invalid);
  CHECK(why_not(Framework::megatron, m, c, p)->find("ZeRO++") != std::string::npos);
  CHECK(!why_not(Framework::deepspeed, m, c, p));
}

TEST_CASE("TP communication overlapped with the GEMMs beside it (overlap_tp_comm) exposes tails") {
  static const ClusterProfile h100 =
      io::load_cluster(PLANNER_SOURCE_DIR "/hw_profiles/dgx-h100-80gb.yaml");
  const ModelSpec m = io::load_model(PLANNER_SOURCE_DIR "/configs/models/llama3-70b.yaml");
  ClusterProfile c = h100;
  c.gpu.overlap_compute_slowdown = 0;
  const Plan p = parse_plan("tp=8,pp=4,dp=2,mbs=1,gbs=128,zero=1,recompute=full,sp=1", "test");
  c.software.overlap_tp_comm = false;
  const Estimate off = estimate(m, c, p);
  c.software.overlap_tp_comm = true;
  const Estimate on = estimate(m, c, p);
  REQUIRE(off.ok());
  REQUIRE(on.ok());
  // One micro-batch's activation, sharded: allgather and reduce-scatter, twice each per pass.
  const double act = 2.0 * p.mbs * m.seq_len * m.hidden;
  const GroupLayout tpg = tp_group(p, c);
  const double ag = collective_time_s(c, Collective::allgather, act, tpg);
  const double rs = collective_time_s(c, Collective::reduce_scatter, act, tpg);
  CHECK(off.layer.fwd_comm_s == doctest::Approx(2 * (ag + rs)));
  // Each collective beside its GEMM: what the GEMM cannot cover, and at least its last 1/tp chunk.
  const auto& g = on.layer_compute.linear;
  auto beside = [&](double t, double gemm) { return std::max(t / p.tp, t - gemm); };
  const double fwd = beside(ag, g[kQkv].fwd_s) + beside(rs, g[kProj].fwd_s) +
                     beside(ag, g[kFc1].fwd_s) + beside(rs, g[kFc2].fwd_s);
  const double bwd = beside(ag, g[kProj].bwd_data_s) + beside(rs, g[kQkv].bwd_weight_s) +
                     beside(ag, g[kFc2].bwd_data_s) + beside(rs, g[kFc1].bwd_weight_s);
  CHECK(on.layer.fwd_comm_s == doctest::Approx(fwd));
  CHECK(on.layer.bwd_comm_s == doctest::Approx(bwd + fwd));  // full recompute re-runs the forward
  CHECK(on.layer.fwd_comm_s < 0.5 * off.layer.fwd_comm_s);
  CHECK(on.iteration_time_s < off.iteration_time_s);
  // Megatron's --tp-comm-overlap needs sequence parallelism: without it nothing changes.
  const Plan no_sp = parse_plan("tp=8,pp=4,dp=2,mbs=1,gbs=128,zero=1,recompute=full,sp=0", "test");
  const Estimate a = estimate(m, c, no_sp);
  c.software.overlap_tp_comm = false;
  const Estimate b = estimate(m, c, no_sp);
  CHECK(a.iteration_time_s == b.iteration_time_s);
}

TEST_CASE("without SP the receiving stage all-gathers each boundary activation over its TP group") {
  const ModelSpec m = io::load_model(PLANNER_SOURCE_DIR "/configs/models/gpt3-175b.yaml");
  const BlockLayout layout = block_layout(m);
  Plan p = parse_plan("tp=8,pp=4,dp=2,vpp=2,mbs=1,gbs=64,zero=1,recompute=full,sp=0", "test");
  const PlanCosts pc = plan_costs(m, a100(), p, layout);
  const double act = 2.0 * p.mbs * m.seq_len * m.hidden;  // the whole activation, rebuilt
  CHECK(pc.p2p_gather_s == doctest::Approx(collective_time_s(a100(), Collective::allgather, act,
                                                             tp_group(p, a100()))));
  CHECK(pc.p2p_gather_s > 0.1 * pc.p2p_s);
  // The first chunk receives no input and the last no gradient; the others one of each.
  const Stages st = build_stages(layout, pc, p, even_partition(layout.count(), p.pp * p.vpp));
  const Stages none = [&] {
    PlanCosts without = pc;
    without.p2p_gather_s = 0;
    return build_stages(layout, without, p, even_partition(layout.count(), p.pp * p.vpp));
  }();
  const int V = p.pp * p.vpp;
  for (int vs = 0; vs < V; ++vs) {
    CAPTURE(vs);
    CHECK(st.chunks[vs].fwd_s - none.chunks[vs].fwd_s ==
          doctest::Approx(vs > 0 ? pc.p2p_gather_s : 0));
    CHECK(st.chunks[vs].bwd_s - none.chunks[vs].bwd_s ==
          doctest::Approx(vs < V - 1 ? pc.p2p_gather_s : 0));
  }
  // With sequence parallelism the slice is the next layer's sequence shard: nothing to gather.
  p.sp = true;
  CHECK(plan_costs(m, a100(), p, layout).p2p_gather_s == 0);
}

TEST_CASE("the logits' forward, backward and weight gradient reach the last chunk separately") {
  const ModelSpec m = io::load_model(PLANNER_SOURCE_DIR "/configs/models/gpt3-1.3b.yaml");
  Plan p = plan(1, 4, 1, 1, 8);
  p.schedule = Schedule::zb_h1;
  const BlockLayout layout = block_layout(m);
  const PlanCosts pc = plan_costs(m, a100(), p, layout);
  const HeadCompute head =
      head_compute(m, a100(), {1, 1, 1, false, Dtype::bf16, attention_of(p, a100())});
  CHECK(pc.logits_fwd_s == head.logits_fwd_s);
  CHECK(pc.logits_bwd_s == head.logits_bwd_s);
  // The weight gradient of the output GEMM is part of the backward, and a GEMM of its own.
  CHECK(pc.logits_bwd_weight_s > 0);
  CHECK(pc.logits_bwd_weight_s < pc.logits_bwd_s);
  const Stages st = build_stages(layout, pc, p, even_partition(layout.count(), 4));
  const BlockCost& b = pc.shape.front();
  const double n = m.layers / 4.0;
  CHECK(st.chunks.back().fwd_s == doctest::Approx(n * b.fwd_s + pc.logits_fwd_s));
  CHECK(st.chunks.back().bwd_s == doctest::Approx(n * b.bwd_s + pc.logits_bwd_s));
  // ZB-H1 defers exactly the blocks' weight gradients and the logits' (not the loss's kernels).
  CHECK(st.chunks.back().bwd_weight_s ==
        doctest::Approx(n * b.bwd_weight_s + pc.logits_bwd_weight_s));
  CHECK(st.chunks[1].bwd_weight_s == doctest::Approx(n * b.bwd_weight_s));
  CHECK(st.chunks.front().fwd_s == doctest::Approx(n * b.fwd_s + pc.embed_fwd_s));
}

TEST_CASE("recompute_layers: the first N layers of each chunk recomputed, the rest kept") {
  // Megatron-LM's --recompute-method block (core/recompute.py): per model chunk, the first N
  // layers pay the forward again and keep only their input; the others keep everything.
  const ClusterProfile& c = a100();
  const ModelSpec m = io::load_model(PLANNER_SOURCE_DIR "/configs/models/gpt3-13b.yaml");
  const BlockLayout layout = block_layout(m);
  REQUIRE(layout.shapes.size() == 1);
  for (int vpp : {1, 2}) {
    CAPTURE(vpp);
    Plan p = plan(2, 4, 2, 1, 64);
    p.zero = 1, p.vpp = vpp, p.recompute = Recompute::full;
    if (vpp > 1) p.schedule = Schedule::interleaved;
    Plan none = p;
    none.recompute = Recompute::none;
    const PlanCosts full = plan_costs(m, c, p, layout), kept = plan_costs(m, c, none, layout);
    const Partition part = even_partition(m.layers, p.pp * vpp);  // 40 layers: 10 or 5 a chunk
    for (int n : {1, 3, 5, 40}) {
      CAPTURE(n);
      Plan q = p;
      q.recompute_layers = n;
      const PlanCosts pc = plan_costs(m, c, q, layout);
      REQUIRE(pc.kept.size() == 1);
      const Stages st = build_stages(layout, pc, q, part);
      const Stages all = build_stages(layout, full, p, part);
      for (size_t vs = 0; vs < part.size(); ++vs) {
        const int redo = std::min(n, part[vs]), rest = part[vs] - redo;
        const double layer_bwd = redo * full.shape[0].bwd_s + rest * kept.shape[0].bwd_s;
        const double all_bwd = part[vs] * full.shape[0].bwd_s;
        // The chunk's other terms (the embedding, the logits, the boundary gathers) as under
        // full recomputation.
        CHECK(st.chunks[vs].bwd_s - layer_bwd == doctest::Approx(all.chunks[vs].bwd_s - all_bwd));
        CHECK(st.chunks[vs].fwd_s == doctest::Approx(all.chunks[vs].fwd_s));
      }
      for (int s = 0; s < p.pp; ++s) {
        int redo = 0, blocks = 0;
        for (size_t vs = s; vs < part.size(); vs += p.pp)
          redo += std::min(n, part[vs]), blocks += part[vs];
        const double extra = st.load[s].act_per_mb - all.load[s].act_per_mb;
        CHECK(extra == doctest::Approx((blocks - redo) *
                                       (kept.shape[0].act_bytes - full.shape[0].act_bytes)));
      }
    }
  }
  // Refused without recompute=full and past the model's layers; priced for Megatron-LM only.
  Plan q = plan(2, 4, 2, 1, 64);
  q.zero = 1, q.recompute_layers = 2;
  std::string why;
  CHECK(check_plan(m, c, q, {}, &why) == Rejection::recompute_invalid);
  CHECK(why.find("needs recompute=full") != std::string::npos);
  q.recompute = Recompute::full, q.recompute_layers = 41;
  CHECK(check_plan(m, c, q, {}, &why) == Rejection::recompute_invalid);
  q.recompute_layers = 2;
  CHECK(check_plan(m, c, q, {}, &why) == Rejection::none);
  CHECK(to_plan_string(q).find("recompute=full,recompute_layers=2") != std::string::npos);
  CHECK(parse_plan(to_plan_string(q), "--plan").recompute_layers == 2);
  for (Framework f : {Framework::deepspeed, Framework::torchtitan, Framework::megatron_2022})
    CHECK(why_not(f, m, c, q).has_value());
  CHECK_FALSE(why_not(Framework::megatron, m, c, q).has_value());
  q.recompute_layers = 40;  // every layer of every chunk: allowed, the same as 0
  CHECK(check_plan(m, c, q, {}, &why) == Rejection::none);
  q.recompute = Recompute::selective;
  CHECK(check_plan(m, c, q, {}, &why) == Rejection::recompute_invalid);
  // A model with a vision encoder: refused (Megatron counts the decoder chunk's layers).
  Plan v = plan(2, 4, 2, 1, 64);
  v.zero = 1, v.recompute = Recompute::full, v.recompute_layers = 2;
  CHECK(check_plan(llava(), c, v, {}, &why) == Rejection::recompute_invalid);
  CHECK(why.find("encoder") != std::string::npos);
}

TEST_CASE("recompute_layers: Megatron-LM does not recompute the MTP modules under block") {
  // multi_token_prediction.py at d98e8a64: "recompute_method == 'block' is not supported for MTP
  // yet. Skipping recompute." The modules then cost what they cost without recomputation.
  ModelSpec m = io::load_model(PLANNER_SOURCE_DIR "/configs/models/gpt3-13b.yaml");
  m.mtp_layers = 1;
  const BlockLayout layout = block_layout(m);
  Plan p = plan(2, 4, 2, 1, 64);
  p.zero = 1, p.recompute = Recompute::full;
  Plan none = p, block = p;
  none.recompute = Recompute::none, block.recompute_layers = 3;
  const PlanCosts full = plan_costs(m, a100(), p, layout),
                  kept = plan_costs(m, a100(), none, layout),
                  part = plan_costs(m, a100(), block, layout);
  CHECK(part.logits_bwd_s == doctest::Approx(kept.logits_bwd_s));
  CHECK(part.mtp_act_bytes == doctest::Approx(kept.mtp_act_bytes));
  CHECK(full.logits_bwd_s > part.logits_bwd_s);
  CHECK(full.mtp_act_bytes < part.mtp_act_bytes);
}

TEST_CASE("context parallelism: ring attention's exchange beside each step's attention") {
  // Transformer Engine's ring (AttnFuncWithCPAndKVP2P) runs cp steps, each over one K,V block,
  // and exchanges the next block beside the current step: cp - 1 exchanges, each exposed by what
  // it outlasts 1/cp of the attention (the load-balanced causal split gives every step the same
  // pairs). The backward's cp steps send the block alone, then the block and the gradient so far
  // as one tensor (cp - 2 times), then the gradient alone, each beside 1/cp of its backward.
  static const ModelSpec m = io::load_model(PLANNER_SOURCE_DIR "/configs/models/llama2-7b.yaml");
  const BlockLayout layout = block_layout(m);
  // cp 8 inside one node at 4,096 tokens: 512 a rank, so each exchange outlasts its step.
  const Plan p = parse_plan("tp=1,pp=1,dp=1,cp=8,mbs=1,gbs=4,zero=0", "--plan");
  const GroupLayout g = cp_group(p, a100());
  const CellCosts cell = cell_costs(m, a100(), p, layout);  // kept: sc refers into it
  const ShapeCell& sc = cell.shape[0];
  const double kv = 2.0 * 1 * (4096.0 / 8) * 2 * m.kv_heads * (m.hidden / m.heads);
  const double step = collective_time_s(a100(), Collective::sendrecv, kv, g);
  const double pair = collective_time_s(a100(), Collective::sendrecv, 2 * kv, g);
  const double fwd = sc.compute.fwd_attn_s / 8, bwd = sc.compute.bwd_attn_s / 8;
  REQUIRE(step > fwd);
  CHECK(sc.cp_fwd_s == doctest::Approx(7 * (step - fwd)));
  CHECK(sc.cp_bwd_s ==
        doctest::Approx(2 * std::max(0.0, step - bwd) + 6 * std::max(0.0, pair - bwd)));
  CHECK(sc.cp_bwd_s > 0);
  // The whole ring against the whole attention hid more: the last step's attention has nothing
  // beside it.
  CHECK(sc.cp_fwd_s > std::max(0.0, 7 * step - sc.compute.fwd_attn_s));
  // The core attention recomputed (selective) runs its ring again, as full recomputation does.
  const Plan sel = parse_plan("tp=1,pp=1,dp=1,cp=8,mbs=1,gbs=4,zero=0,recompute=selective", "p");
  const PlanCosts pc = plan_costs(m, a100(), sel, layout);
  CHECK(pc.shape[0].cp_comm_s == doctest::Approx(2 * sc.cp_fwd_s + sc.cp_bwd_s));
  // At 128K tokens each step's attention outlasts its exchange: nothing exposed.
  ModelSpec longer = m;
  longer.seq_len = 131072;
  const CellCosts long_cell = cell_costs(longer, a100(), p, block_layout(longer));
  const ShapeCell& lc = long_cell.shape[0];
  CHECK(lc.cp_fwd_s == 0);
  CHECK(lc.cp_bwd_s == 0);
}
