// Job shapes (issue 15): any GPU count (part of a host, a profile's nodes only a default), NVLink
// domains larger than a host, NICs per host, and the pipeline splits of layer counts that pp does
// not divide.
#include <doctest/doctest.h>

#include <fstream>
#include <iterator>
#include <map>
#include <numeric>
#include <string>

#include "planner/cost/communication.h"
#include "planner/cost/stages.h"
#include "planner/error.h"
#include "planner/estimate.h"
#include "planner/io/cluster_io.h"
#include "planner/io/model_io.h"
#include "planner/search.h"

using namespace planner;

namespace {
std::string file_text(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}
std::string replace(std::string text, const std::string& from, const std::string& to) {
  const size_t at = text.find(from);
  REQUIRE(at != std::string::npos);
  return text.replace(at, from.size(), to);
}
const std::string& h100_text() {
  static const std::string t = file_text(PLANNER_SOURCE_DIR "/hw_profiles/dgx-h100-80gb.yaml");
  return t;
}
const ClusterProfile& h100() {
  static const ClusterProfile c = io::parse_cluster(h100_text(), "dgx-h100-80gb.yaml");
  return c;
}
/// The H100 profile as hosts of 4 GPUs in NVLink domains of 72 (the NVL72 shape, H100 numbers).
ClusterProfile domain72() {
  return io::parse_cluster(
      replace(h100_text(), "gpus_per_node: 8", "gpus_per_node: 4\nnvlink_domain: 72"), "nvl.yaml");
}
const ModelSpec& model(const std::string& name) {
  static std::map<std::string, ModelSpec> cache;
  auto it = cache.find(name);
  if (it == cache.end())
    it = cache.emplace(name, io::load_model(PLANNER_SOURCE_DIR "/configs/models/" + name + ".yaml"))
             .first;
  return it->second;
}
Plan plan(const std::string& s) { return parse_plan(s, "--plan"); }
Partition split(int layers, const std::string& s) {
  Partition part;
  const Plan p = plan(s);
  REQUIRE(split_check(layers, p) == SplitError::none);
  split_partition(layers, p, part);
  CHECK(std::accumulate(part.begin(), part.end(), 0) == layers);
  for (int stage = 0; stage < p.pp; ++stage) {
    int sum = 0;
    for (int k = 0; k < p.vpp; ++k) sum += part[size_t(k * p.pp + stage)];
    CHECK(split_stage_layers(layers, p, stage) == sum);
  }
  return part;
}
}  // namespace

TEST_CASE("splits: even, short ends and the embedding and loss counted as layers") {
  CHECK(split(96, "pp=8") == Partition(8, 12));
  // Llama 3 405B as Meta trained it: 126 layers on 16 stages, one fewer on the first and last.
  Partition meta(16, 8);
  meta.front() = meta.back() = 7;
  CHECK(split(126, "pp=16,split=short_ends") == meta);
  // 96 layers on 8: the fewest fewer that splits the rest evenly is 3 (9, 6 x 13, 9).
  Partition short96(8, 13);
  short96.front() = short96.back() = 9;
  CHECK(split(96, "pp=8,split=short_ends") == short96);
  // Megatron-Bridge's Llama 3.1 405B: pp=8 x vpp=8 with the embedding and the loss as layers:
  // 128 places in 64 chunks of 2, the first and the last chunk one decoder layer each.
  const Partition bridge = split(126, "pp=8,vpp=8,split=embed_loss");
  CHECK(bridge.size() == 64);
  CHECK(bridge.front() == 1);
  CHECK(bridge.back() == 1);
  CHECK(bridge[1] == 2);
  // BLOOM-176B: 70 layers on 12 stages, DeepSpeed counting both embeddings (5, 10 x 6, 5).
  Partition bloom(12, 6);
  bloom.front() = bloom.back() = 5;
  CHECK(split(70, "pp=12,split=embed_loss") == bloom);
  // With vpp, short ends keep whole chunks: 28 layers on pp=4 x vpp=2 as stages of 6, 8, 8, 6,
  // each in two chunks (3, 4, 4, 3 | 3, 4, 4, 3).
  const Partition chunks = split(28, "pp=4,vpp=2,split=short_ends");
  CHECK(chunks == Partition{3, 4, 4, 3, 3, 4, 4, 3});
  // With the embedding and the loss as layers, 126 on 16 stages is Meta's split too.
  CHECK(split(126, "pp=16,split=embed_loss") == meta);
  std::string why;
  CHECK(split_check(126, plan("pp=16"), &why) == SplitError::layers);
  CHECK(why.find("pp=16 does not divide layers=126") == 0);
  CHECK(split_check(96, plan("pp=8,vpp=5"), &why) == SplitError::vpp);
  CHECK(split_check(126, plan("pp=2,split=short_ends"), &why) == SplitError::layers);
  CHECK(why.find("needs pp >= 3") != std::string::npos);
  CHECK(split_check(126, plan("pp=5,split=embed_loss"), &why) == SplitError::layers);
  CHECK(why.find("layers + 2 = 128") != std::string::npos);
  // The last stage alone shorter: DeepSeek-V3's 61 layers on 8 stages as 7 x 8 and 5 (room for
  // the logits and the MTP module), on 4 as 3 x 16 and 13; with vpp=2 on pp=4, 56 layers as
  // 3 x 16 and 8 (chunks of 8 and 4), the largest l below (56 - l) / 3 with both multiples of 2.
  Partition ds8(8, 8);
  ds8.back() = 5;
  CHECK(split(61, "pp=8,split=short_last") == ds8);
  CHECK(short_last_layers(61, 4, 1) == 13);
  CHECK(split(56, "pp=4,vpp=2,split=short_last") == Partition{8, 8, 8, 4, 8, 8, 8, 4});
  CHECK(split_check(61, plan("pp=1,split=short_last"), &why) == SplitError::layers);
  CHECK(why.find("split=short_last needs pp >= 2") == 0);
  CHECK(short_last_layers(64, 8, 1) == 1);  // 1, 7 x 9: the fewest fewer that divides the rest
}

TEST_CASE("Llama 3 405B at tp=8, pp=16 on 8,192 H100s plans with shortened end stages") {
  const ModelSpec& m = model("llama3-405b");
  REQUIRE(m.layers == 126);
  KnobSpace k = default_knobs(m, h100(), 8192);
  k[KnobId::tp] = {8}, k[KnobId::pp] = {16};
  SearchOptions o;
  o.gpus = {8192};
  o.global_batch = 2048;
  o.top_k = 3;
  o.estimate.framework = Framework::megatron;
  const SearchResult r = search(m, h100(), k, o);
  REQUIRE(!r.top.empty());
  const Estimate& best = r.top.front();
  CHECK(best.plan.split != PipelineSplit::even);
  CHECK(best.partition.size() == 16);
  CHECK(std::accumulate(best.partition.begin(), best.partition.end(), 0) == 126);
  CHECK(best.mfu > 0.3);  // the even-only planner fell back to ZeRO-3 at 15.7%
  // The even split is refused with the layers named; DeepSpeed has no short ends.
  std::string why;
  EstimateOptions eo;
  eo.framework = Framework::deepspeed;
  CHECK(check_plan(m, h100(), plan("tp=8,pp=16,dp=64,mbs=1,gbs=2048,zero=1,split=short_ends"), eo,
                   &why) == Rejection::framework_refuses);
  CHECK(why.find("partition_method") != std::string::npos);
  CHECK(check_plan(m, h100(), plan("tp=8,pp=16,dp=64,mbs=1,gbs=2048"), {}, &why) ==
        Rejection::pp_not_dividing_layers);
}

TEST_CASE("shorter end stages are tried where pp divides the layers too") {
  // GPT-3 175B's 96 layers on pp=8: the embedding's and the logits' stages carry more work, so
  // the search weighs short ends against the even split; both are estimated.
  const ModelSpec& m = model("gpt3-175b");
  const std::string base = "tp=8,pp=8,dp=16,mbs=1,gbs=1536,zero=1,sp=1,recompute=selective";
  const Estimate even = estimate(m, h100(), plan(base));
  const Estimate ends = estimate(m, h100(), plan(base + ",split=short_ends"));
  REQUIRE(even.ok());
  REQUIRE(ends.ok());
  CHECK(ends.partition == Partition{9, 13, 13, 13, 13, 13, 13, 9});
  CHECK(ends.iteration_time_s != doctest::Approx(even.iteration_time_s));
}

TEST_CASE("any GPU count inside an NVLink domain, whole hosts beyond; nodes is only a default") {
  const ClusterProfile& c = h100();
  CHECK(c.default_gpus() == 768 * 8);  // the profile's nodes
  for (int g : {1, 2, 3, 4, 8, 16, 8192, 16384}) CHECK(c.job_size_ok(g));
  CHECK(!c.job_size_ok(12));
  const ClusterProfile no_nodes =
      io::parse_cluster(replace(h100_text(), "nodes: 768\n", ""), "c.yaml");
  CHECK(no_nodes.nodes == 0);
  CHECK(no_nodes.default_gpus() == 8);  // one NVLink domain
  // Llama 3 8B on 2 and 4 GPUs of a host plans; on one it cannot fit without offload
  // (16 bytes per parameter of weights, gradients and Adam states: 120 GiB).
  const ModelSpec& m = model("llama3-8b");
  for (int g : {2, 4}) {
    CAPTURE(g);
    SearchOptions o;
    o.gpus = {g};
    o.global_batch = 64;
    o.top_k = 1;
    const SearchResult r = search(m, c, default_knobs(m, c, g), o);
    CHECK(!r.top.empty());
  }
  SearchOptions one;
  one.gpus = {1};
  one.global_batch = 8;
  KnobSpace no_offload = default_knobs(m, c, 1);
  no_offload[KnobId::offload_optimizer] = no_offload[KnobId::offload_params] = {kUnset};
  const SearchResult r1 = search(m, c, no_offload, one);
  CHECK(r1.top.empty());  // with offload it plans (test_offload.cc)
  CHECK(r1.any_memory_rejection);
  CHECK(r1.closest_infeasible.memory_bytes > 100.0 * (1 << 30));
  // A job larger than the profile's nodes is the user's to ask for.
  CHECK(estimate(m, c, plan("tp=8,pp=1,dp=1536,mbs=1,gbs=3072,zero=1")).ok());
}

TEST_CASE("an NVLink domain of 72: TP inside it across hosts, NVLink for groups that fit") {
  const ClusterProfile c = domain72();
  CHECK(c.gpus_per_node == 4);
  CHECK(c.nvlink_domain == 72);
  CHECK(c.default_gpus() == 768 * 4);
  CHECK(c.job_size_ok(64));   // 64 of a rack's 72
  CHECK(c.job_size_ok(70));   // any count inside one domain
  CHECK(!c.job_size_ok(74));  // beyond it, whole hosts of 4
  CHECK(c.job_size_ok(76));
  const Plan p = plan("tp=8,pp=1,dp=8,mbs=1,gbs=64");
  const GroupLayout tp = tp_group(p, c), dp = dp_group(p, c);
  CHECK((tp.ranks == 8 && tp.nodes == 1));  // two hosts, one NVLink domain
  CHECK((dp.ranks == 8 && dp.nodes == 1));  // all 64 GPUs in the rack
  const ModelSpec& m = model("llama3-70b");
  const ModelSpec& gpt3 = model("gpt3-175b");
  std::string why;
  // tp=16 on 64 GPUs sits inside the rack; on 144 (two racks of 72) a group would straddle them,
  // where tp=8 groups tile each rack.
  CHECK(check_plan(gpt3, c, plan("tp=16,pp=1,dp=4,mbs=1,gbs=64"), {}, &why) == Rejection::none);
  CHECK(check_plan(gpt3, c, plan("tp=16,pp=1,dp=9,mbs=1,gbs=144"), {}, &why) ==
        Rejection::tp_across_nodes);
  CHECK(why == "tp=16 does not fit in an NVLink domain of 72 GPUs (allow with --tp-across-nodes)");
  CHECK(check_plan(gpt3, c, plan("tp=8,pp=1,dp=18,mbs=1,gbs=144"), {}, &why) == Rejection::none);
  // The DP all-reduce of 64 GPUs in one domain runs on NVLink: faster than across 8 DGX hosts.
  const double in_rack = collective_time_s(c, Collective::allreduce, 1e9, dp);
  const double dgx = collective_time_s(h100(), Collective::allreduce, 1e9, dp_group(p, h100()));
  CHECK(in_rack < dgx / 3);
  // Llama 3 70B on 64 GPUs of a GB200-shaped rack plans.
  SearchOptions o;
  o.gpus = {64};
  o.global_batch = 128;
  o.top_k = 1;
  CHECK(!search(m, c, default_knobs(m, c, 64), o).top.empty());
}

TEST_CASE("NICs per host: each GPU's share of its host's NIC bandwidth") {
  const ClusterProfile c = h100();
  CHECK(c.nics_per_node == 8);
  CHECK(c.inter_share() == 1.0);
  const ClusterProfile four = io::parse_cluster(
      replace(h100_text(), "gpus_per_node: 8", "gpus_per_node: 8\nnics_per_node: 4"), "c.yaml");
  CHECK(four.inter_share() == doctest::Approx(0.5));
  const ClusterProfile slow = io::parse_cluster(
      replace(h100_text(), "gpus_per_node: 8", "gpus_per_node: 8\nnics_per_node: 4\nnic_gbps: 200"),
      "c.yaml");
  CHECK(slow.inter_share() == doctest::Approx(0.25));  // half the NICs at half the NDR rate
  // A DP all-reduce across 16 hosts, one rank each: the NIC term doubles with half the NICs.
  const GroupLayout g = group_layout(16, 8, 8);
  const double lat = collective_latency_s(c, Collective::allreduce, g);
  const double full = collective_time_s(c, Collective::allreduce, 4e9, g) - lat;
  const double half = collective_time_s(four, Collective::allreduce, 4e9, g) - lat;
  CHECK(half == doctest::Approx(2 * full));
  // Inside a host nothing changes.
  const GroupLayout host = group_layout(8, 1, 8);
  CHECK(collective_time_s(four, Collective::allreduce, 4e9, host) ==
        collective_time_s(c, Collective::allreduce, 4e9, host));
}

TEST_CASE("topology keys are checked with the file and key") {
  auto error = [](const std::string& text) {
    try {
      io::parse_cluster(text, "c.yaml");
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  CHECK(
      error(replace(h100_text(), "gpus_per_node: 8", "gpus_per_node: 8\nnvlink_domain: 12")) ==
      "c.yaml:6: key 'nvlink_domain': must be a whole number of hosts of gpus_per_node=8, got 12");
  CHECK(error(replace(h100_text(), "gpus_per_node: 8", "gpus_per_node: 8\nnics_per_node: 0"))
            .find("key 'nics_per_node': must be an integer from 1") != std::string::npos);
  CHECK(error(replace(h100_text(), "gpus_per_node: 8", "gpus_per_node: 8\nnic_gbps: 0"))
            .find("key 'nic_gbps'") != std::string::npos);
  // A profile begun from a datasheet: every missing key in one message, a missing section once.
  const std::string sparse =
      "name: b200\ngpus_per_node: 8\ngpu:\n  name: B200\n  sms: 148\n  peak_tflops: {bf16: "
      "2250}\n  hbm_GiB: 178\n  hbm_bandwidth_GBps: 7700\n";
  const std::string e = error(sparse);
  CHECK(e ==
        "c.yaml: missing 4 keys: gpu.hbm_efficiency, gpu.sustained_efficiency, gpu.gemm, network "
        "(README, Inputs: every key with its meaning)");
  // The block-scaled peaks are read; provenance is optional.
  const ClusterProfile blackwell = io::parse_cluster(
      replace(replace(h100_text(), "fp8: 1979}", "fp8: 1979, mxfp8: 1979, nvfp4: 3958}"),
              h100_text().substr(h100_text().find("provenance:")), ""),
      "c.yaml");
  CHECK(blackwell.gpu.peak_flops[int(Dtype::mxfp8)] == 1979e12);
  CHECK(blackwell.gpu.nvfp4_flops == 3958e12);
  CHECK(blackwell.provenance.empty());
}

TEST_CASE("the Blackwell and H800 profiles load and plan; Llama 3 70B on 64 GPUs of a GB200 rack") {
  const ModelSpec& m = model("llama3-8b");
  for (const char* name : {"dgx-b200", "gb200-nvl72", "dgx-b300", "gb300-nvl72", "dgx-h800"}) {
    CAPTURE(name);
    const ClusterProfile c =
        io::load_cluster(std::string(PLANNER_SOURCE_DIR "/hw_profiles/") + name + ".yaml");
    CHECK(!c.provenance.empty());
    const Estimate e = estimate(m, c, plan("tp=1,pp=1,dp=8,mbs=1,gbs=64,zero=1"));
    CHECK(e.rejection != Rejection::gpus_mismatch);
    CHECK(estimate(m, c, plan("tp=1,pp=1,dp=8,mbs=1,gbs=64,zero=1,recompute=full")).ok());
  }
  const ClusterProfile nvl = io::load_cluster(PLANNER_SOURCE_DIR "/hw_profiles/gb200-nvl72.yaml");
  CHECK(nvl.nvlink_domain == 72);
  CHECK(nvl.gpu.peak_flops[int(Dtype::mxfp8)] > 0);
  const ModelSpec& big = model("llama3-70b");
  SearchOptions o;
  o.gpus = {64};
  o.global_batch = 128;
  o.top_k = 1;
  o.estimate.framework = Framework::megatron;
  const SearchResult r = search(big, nvl, default_knobs(big, nvl, 64), o);
  REQUIRE(!r.top.empty());
  CHECK(tp_group(r.top.front().plan, nvl).nodes == 1);
}
