// `planner profile init` (issue 15, item 5): a profile from datasheet facts loads, carries every
// constant it was not given from its base, says so in provenance, and scales what it must.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <string>
#include <vector>

#include "planner/error.h"
#include "planner/estimate.h"
#include "planner/io/cluster_io.h"
#include "planner/io/model_io.h"
#include "planner/io/profile_init.h"
#include "planner/units.h"

using namespace planner;

namespace {

std::string shipped(const std::string& name) {
  return PLANNER_SOURCE_DIR "/hw_profiles/" + name + ".yaml";
}
const std::vector<std::string>& profile_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const auto& e : std::filesystem::directory_iterator(PLANNER_SOURCE_DIR "/hw_profiles"))
      if (e.path().extension() == ".yaml") out.push_back(e.path().stem().string());
    std::sort(out.begin(), out.end());  // as the command lists them: a tie goes to the first
    return out;
  }();
  return names;
}
double peak(const ClusterProfile& c, Dtype d) { return c.gpu.peak_flops[int(d)] / kTera; }
size_t peak_index(const std::string& name) {
  for (size_t i = 0; i < io::kPeakNames.size(); ++i)
    if (name == io::kPeakNames[i]) return i;
  FAIL("no precision " << name);
  return 0;
}
ClusterProfile init(const io::ProfileFacts& f, const std::string& base) {
  return io::parse_cluster(io::init_profile(f, shipped(base), base, "init.yaml"), "init.yaml");
}

}  // namespace

TEST_CASE("profile init: the given facts, the base's ratios and NVLink scaling, all loadable") {
  io::ProfileFacts f;
  f.name = "my-cluster";
  f.source = "a datasheet";
  f.peak_tflops[peak_index("bf16")] = 1000;
  f.sms = 140;
  f.hbm_GiB = 120;
  f.hbm_GBps = 6000;
  f.nvlink_GBps = 600;
  f.gpus_per_node = 4;
  f.nics_per_node = 2;
  f.nic_gbps = 800;
  for (const std::string& base_name : profile_names()) {
    CAPTURE(base_name);
    const ClusterProfile base = io::load_cluster(shipped(base_name));
    const ClusterProfile c = init(f, base_name);
    CHECK(c.name == "my-cluster");
    CHECK(c.gpu.name == "my-cluster");
    CHECK(peak(c, Dtype::bf16) == doctest::Approx(1000));
    // Precisions not given keep the base's ratio to bf16 (0 stays 0: A100 has no fp8).
    for (Dtype d : {Dtype::fp16, Dtype::fp8, Dtype::tf32})
      CHECK(peak(c, d) ==
            doctest::Approx(peak(base, d) / peak(base, Dtype::bf16) * 1000).epsilon(1e-5));
    CHECK(c.gpu.peak_flops[int(Dtype::mxfp8)] ==
          doctest::Approx(base.gpu.peak_flops[int(Dtype::mxfp8)] / peak(base, Dtype::bf16) * 1000)
              .epsilon(1e-5));
    CHECK(c.gpu.sms == 140);
    CHECK(c.gpu.hbm_bytes == doctest::Approx(120 * kGiB));
    CHECK(c.gpu.hbm_Bps == doctest::Approx(6000 * kGB));
    CHECK(c.gpus_per_node == 4);
    CHECK(c.nvlink_domain == 4);  // the host was given, the domain not: one host
    CHECK(c.nics_per_node == 2);
    CHECK(c.nic_Bps == doctest::Approx(800 * kGbit));
    CHECK(c.nodes == 0);  // the base's job size is not carried
    CHECK(c.gpu_hour_usd == 0);
    // NVLink figures scale with the datasheet bandwidth; latencies and the inter tier carry.
    const double ratio = 600 / (base.intra.link_Bps / kGB);
    for (int k = 0; k < kNumCollectives; ++k) {
      CHECK(c.intra.cost[k].busbw_Bps ==
            doctest::Approx(base.intra.cost[k].busbw_Bps * ratio).epsilon(1e-5));
      CHECK(c.intra.cost[k].latency_s == base.intra.cost[k].latency_s);
      REQUIRE(c.intra.cost[k].curve.size() == base.intra.cost[k].curve.size());
      for (size_t i = 0; i < c.intra.cost[k].curve.size(); ++i)
        CHECK(c.intra.cost[k].curve[i].second ==
              doctest::Approx(base.intra.cost[k].curve[i].second * ratio).epsilon(1e-5));
      CHECK(c.inter.cost[k].busbw_Bps == base.inter.cost[k].busbw_Bps);
    }
    CHECK(c.intra.link_Bps == doctest::Approx(600 * kGB));
    // Each NIC of 800 Gb/s against the base's measured one, two per four GPUs.
    CHECK(c.inter_share() == doctest::Approx(2.0 / 4 * 800 / (base.inter.nic_Bps / kGbit)));
    // Everything no datasheet gives is the base's.
    CHECK(c.gpu.sustained_efficiency == base.gpu.sustained_efficiency);
    CHECK(c.gpu.hbm_efficiency == base.gpu.hbm_efficiency);
    CHECK(c.gpu.flash_efficiency == base.gpu.flash_efficiency);
    CHECK(c.gpu.flash_backward_efficiency == base.gpu.flash_backward_efficiency);
    CHECK(c.gpu.gemm.max_efficiency == base.gpu.gemm.max_efficiency);
    CHECK(c.gpu.gemm.k_half == base.gpu.gemm.k_half);
    CHECK(c.gpu.gemm.tiles.size() == base.gpu.gemm.tiles.size());
    CHECK(c.gpu.gemm.measured.size() == base.gpu.gemm.measured.size());
    // Provenance: what init did, each fact with its source, every other base entry marked.
    REQUIRE(c.provenance.count("profile_init"));
    CHECK(c.provenance.at("profile_init").find(base_name) != std::string::npos);
    for (const char* key :
         {"gpu.peak_tflops", "gpu.sms", "gpu.hbm", "network.intra_node.busbw", "topology"}) {
      CAPTURE(key);
      REQUIRE(c.provenance.count(key));
      CHECK(c.provenance.at(key).find("a datasheet") != std::string::npos);
    }
    for (const auto& entry : base.provenance) {
      CAPTURE(entry.first);
      const bool replaced = c.provenance.count(entry.first) == 0 ||
                            c.provenance.at(entry.first).rfind("[carried from ", 0) != 0;
      const bool fact = entry.first.rfind("gpu.peak_tflops", 0) == 0 ||
                        entry.first.rfind("gpu.hbm", 0) == 0 || entry.first == "gpu.sms" ||
                        entry.first == "topology" ||
                        entry.first.rfind("network.intra_node.", 0) == 0;
      if (!fact) CHECK_FALSE(replaced);
      if (!replaced)
        CHECK(c.provenance.at(entry.first) == "[carried from " + base_name + "] " + entry.second);
    }
  }
}

TEST_CASE("profile init with the base's own facts plans exactly as the base") {
  const ModelSpec m = io::load_model(PLANNER_SOURCE_DIR "/configs/models/llama3-8b.yaml");
  const ClusterProfile base = io::load_cluster(shipped("dgx-h100-80gb"));
  io::ProfileFacts f;
  f.name = "h100-again";
  f.peak_tflops[peak_index("bf16")] = peak(base, Dtype::bf16);
  f.hbm_GiB = base.gpu.hbm_bytes / kGiB;
  f.hbm_GBps = base.gpu.hbm_Bps / kGB;
  f.nvlink_GBps = base.intra.link_Bps / kGB;
  f.gpus_per_node = 8;
  const ClusterProfile c = init(f, "dgx-h100-80gb");
  const Plan p = parse_plan("tp=2,pp=2,dp=4,mbs=1,gbs=64,zero=1,recompute=selective,sp=1", "p");
  const Estimate a = estimate(m, base, p), b = estimate(m, c, p);
  REQUIRE(a.ok());
  CHECK(b.iteration_time_s == doctest::Approx(a.iteration_time_s).epsilon(1e-6));
  CHECK(b.memory_bytes == doctest::Approx(a.memory_bytes).epsilon(1e-6));
  // Half the NVLink bandwidth: the same plan's TP traffic takes longer.
  f.nvlink_GBps = base.intra.link_Bps / kGB / 2;
  const Estimate slow = estimate(m, init(f, "dgx-h100-80gb"), p);
  CHECK(slow.breakdown.tp_comm_s > 1.5 * a.breakdown.tp_comm_s);
}

TEST_CASE("profile init's base: the known GPU nearest the facts") {
  std::vector<ClusterProfile> known;
  for (const std::string& n : profile_names()) known.push_back(io::load_cluster(shipped(n)));
  auto nearest = [&](double bf16, double hbm_GBps, double hbm_GiB) {
    io::ProfileFacts f;
    f.peak_tflops[peak_index("bf16")] = bf16;
    f.hbm_GBps = hbm_GBps;
    f.hbm_GiB = hbm_GiB;
    const std::optional<size_t> i = io::nearest_profile(f, known);
    REQUIRE(i);
    return known[*i].gpu.name;
  };
  CHECK(nearest(312, 2039, 80).rfind("A100", 0) == 0);          // A100 80GB SXM
  CHECK(nearest(312, 1555, 40).rfind("A100", 0) == 0);          // A100 40GB
  CHECK(nearest(989, 3350, 79.6).rfind("H100", 0) == 0);        // H100 SXM
  CHECK(nearest(2250, 8000, 179).rfind("B200", 0) == 0);        // B200
  CHECK_FALSE(io::nearest_profile(io::ProfileFacts{}, known));  // no fact: no nearest
}

TEST_CASE("profile init refuses what would not load, naming the option") {
  io::ProfileFacts f;
  f.name = "bad";
  f.nvlink_domain = 12;  // the A100 host holds 8
  try {
    (void)io::init_profile(f, shipped("dgx-a100-80gb"), "dgx-a100-80gb", "out.yaml");
    FAIL("expected an InputError");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).find("--nvlink-domain") != std::string::npos);
    CHECK(std::string(e.what()).find("multiple of 8") != std::string::npos);
  }
}
