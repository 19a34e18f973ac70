// calibrate/: the CPU fit on synthetic samples generated from known parameters, the profile it
// writes (loaded back with io::load_cluster), the samples file and its errors, the stopping
// rule and the sweeps. planner-calibrate's GPU half is not exercised here (no GPU in CI).
#include <doctest/doctest.h>
#include <fmt/core.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "calibrate/context.h"
#include "calibrate/fit.h"
#include "calibrate/samples.h"
#include "calibrate/sweeps.h"
#include "calibrate/timing.h"
#include "calibrate/watchdog.h"
#include "planner/cost/communication.h"
#include "planner/cost/compute.h"
#include "planner/error.h"
#include "planner/io/cluster_io.h"
#include "planner/io/output.h"
#include "planner/io/profile_yaml.h"

using namespace planner;
using namespace planner::calibrate;

namespace {

const std::string kFixture = PLANNER_SOURCE_DIR "/tests/data/calibrate/synthetic-h200.samples.json";

ClusterProfile h200() { return io::load_cluster(PLANNER_SOURCE_DIR "/hw_profiles/dgx-h200.yaml"); }

/// The "true" GPU behind the synthetic samples: every fitted parameter differs from the base.
Gpu truth_gpu() {
  Gpu g = h200().gpu;
  g.gemm.max_efficiency = 0.71, g.gemm.k_half = 260, g.gemm.launch_s = 2.5e-6;
  g.gemm.misaligned_factor = 0.6;
  g.gemm.tiles = {{256, 128, 1.0}, {128, 128, 0.86}, {128, 64, 0.55}, {64, 64, 0.33}};
  g.hbm_efficiency = 4200.0 / 4800;  // copy 4.2 TB/s (shared/DEVICE.md) of the 4.8 datasheet
  return g;
}

struct NetTruth {
  Collective c;
  double alpha_us, busbw_GBps;
};
// Intra-node (8 ranks) near the dgx-h200 profile, inter-node (2 ranks, one NIC each).
const NetTruth kIntra[] = {{Collective::allreduce, 24.5, 471},
                           {Collective::allgather, 18, 352},
                           {Collective::reduce_scatter, 19, 360},
                           {Collective::alltoall, 21, 331},
                           {Collective::sendrecv, 8.5, 372}};
const NetTruth kInter[] = {{Collective::allreduce, 31, 46.5},
                           {Collective::allgather, 25, 45},
                           {Collective::reduce_scatter, 26, 45.5},
                           {Collective::alltoall, 27, 43},
                           {Collective::sendrecv, 11, 47}};

void add_collectives(Samples& s, Tier tier, int n, const NetTruth (&truth)[5]) {
  for (const NetTruth& t : truth)
    for (double S : message_sizes(8, 1 << 30)) {
      const bool split = t.c == Collective::allgather || t.c == Collective::reduce_scatter ||
                         t.c == Collective::alltoall;  // S a multiple of n floats
      const double bytes = split ? std::floor(S / (4.0 * n)) * 4.0 * n : S;
      if (bytes <= 0) continue;
      const double time = t.alpha_us * 1e-6 + bytes * bus_factor(t.c, n) / (t.busbw_GBps * 1e9);
      s.collectives.push_back({tier, t.c, n, bytes, time, 3, 0.01});
    }
}

Samples synthetic_samples(SweepSize size, bool network) {
  Samples s;
  s.context = {"planner-calibrate 0.1.0",
               "NVIDIA H200 (synthetic)",
               132,
               "9.0",
               150754820096.0,
               62914560.0,
               "580.159",
               "13.0",
               "13.0.2",
               "2.28.3",
               {"node-a", "node-b"},
               network ? 8 : 1,
               network ? 2 : 1,
               "2025-01-01T00:00:00Z",
               "planner-calibrate --out hw_profiles/synthetic.yaml",
               to_string(size)};
  const Gpu truth = truth_gpu();
  for (const GemmCase& c : gemm_sweep(size, {Dtype::bf16})) {
    GemmSample g{c.dtype,
                 c.linear,
                 c.orientation,
                 c.layout(),
                 c.hidden,
                 c.tp,
                 c.tokens,
                 c.shape.m,
                 c.shape.n,
                 c.shape.k,
                 gemm_time_s(truth, c.dtype, c.shape),
                 3,
                 0.01};
    s.gemm.push_back(g);
  }
  const struct {
    HbmKind kind;
    double factor, GBps;
  } hbm[] = {{HbmKind::d2d_copy, 2, 4200},
             {HbmKind::read, 1, 4400},
             {HbmKind::h2d, 1, 53},
             {HbmKind::d2h, 1, 54}};
  for (const auto& h : hbm)
    for (double S = 1 << 20; S <= 4.0 * (1 << 30); S *= 4)
      s.hbm.push_back({h.kind, S, h.factor * S, 3e-6 + h.factor * S / (h.GBps * 1e9), 3, 0.01});
  if (network) {
    add_collectives(s, Tier::intra_node, 8, kIntra);
    add_collectives(s, Tier::inter_node, 2, kInter);
  }
  return s;
}

std::string error_of(const std::string& text) {
  try {
    parse_samples(text, "s.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

std::string temp_dir() {
  const auto dir =
      std::filesystem::temp_directory_path() / ("planner-cal-test-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  return dir.string();
}

}  // namespace

TEST_CASE("alpha-beta fit: hand-checkable points, a negative intercept, too few points") {
  // t = 10 us + x / 100 GB/s: 1 MB -> 20 us, 2 MB -> 30 us.
  const AlphaBeta ab = fit_alpha_beta({1e6, 2e6}, {20e-6, 30e-6});
  CHECK(ab.alpha_s == doctest::Approx(10e-6));
  CHECK(1 / ab.beta_s_per_byte == doctest::Approx(100e9));
  CHECK(ab.rms_rel_err == doctest::Approx(0).epsilon(1e-9));
  // Through these the line would cross below zero: refit through the origin instead.
  const AlphaBeta origin = fit_alpha_beta({1e6, 2e6}, {10e-6, 22e-6});
  CHECK(origin.alpha_s == 0);
  CHECK(origin.beta_s_per_byte > 0);
  CHECK_THROWS_AS(fit_alpha_beta({1e6}, {1e-5}), std::invalid_argument);
}

TEST_CASE("the collective fit recovers latency and bus bandwidth within 1% on both tiers") {
  const Samples s = synthetic_samples(SweepSize::quick, true);
  for (Tier tier : {Tier::intra_node, Tier::inter_node})
    for (const NetTruth& t : tier == Tier::intra_node ? kIntra : kInter) {
      std::vector<CollectiveSample> group;
      for (const CollectiveSample& c : s.collectives)
        if (c.tier == tier && c.collective == t.c) group.push_back(c);
      const CollectiveFit f = fit_collective(group);
      CAPTURE(to_string(tier));
      CAPTURE(to_string(t.c));
      CHECK(f.cost.latency_s == doctest::Approx(t.alpha_us * 1e-6).epsilon(0.01));
      CHECK(f.cost.busbw_Bps == doctest::Approx(t.busbw_GBps * 1e9).epsilon(0.01));
      CHECK(f.ranks == (tier == Tier::intra_node ? 8 : 2));
      // The curve is the measured busbw at each size: at 1 GiB, S f / t.
      REQUIRE(f.cost.curve.size() == group.size());
      CHECK(f.cost.curve.back().second == doctest::Approx(group.back().busbw_Bps()));
    }
}

TEST_CASE("HBM efficiency is the sustained device copy past the L2 cache over the datasheet") {
  const Samples s = synthetic_samples(SweepSize::quick, false);
  const HbmFit h = fit_hbm(s.hbm, 64.0 * (1 << 20));
  CHECK(h.copy_Bps == doctest::Approx(4200e9).epsilon(0.01));
  CHECK(h.read_Bps == doctest::Approx(4400e9).epsilon(0.01));
  CHECK(h.h2d_Bps == doctest::Approx(53e9).epsilon(0.01));
  const FitOutcome out = fit_profile(s, h200(), {});
  CHECK(out.profile.gpu.hbm_efficiency == doctest::Approx(4200.0 / 4800).epsilon(0.01));
}

TEST_CASE("the GEMM fit reproduces the synthetic times within 2% (default sweep, bf16)") {
  const Samples s = synthetic_samples(SweepSize::standard, false);
  Gpu start = h200().gpu;
  start.hbm_efficiency = truth_gpu().hbm_efficiency;  // fit_profile fits HBM first
  const GemmFit f = fit_gemm(s.gemm, start, Dtype::bf16);
  fmt::print(
      "  gemm fit: {} samples, {} evaluations, rms log error {:.4f}%, worst {:.3f}%, "
      "max_efficiency {:.4f} k_half {:.1f} launch_us {:.3f} misaligned {:.3f}\n",
      f.samples, f.evaluations, 100 * f.rms_log_err, 100 * f.max_rel_err, f.model.max_efficiency,
      f.model.k_half, f.model.launch_s * 1e6, f.model.misaligned_factor);
  CHECK(f.samples == static_cast<int>(s.gemm.size()));
  CHECK(f.misaligned_fitted);
  CHECK(f.max_rel_err < 0.02);
  Gpu fitted = start;
  fitted.gemm = f.model;
  for (const GemmSample& g : s.gemm)
    CHECK(gemm_time_s(fitted, Dtype::bf16, {g.m, g.n, g.k}) ==
          doctest::Approx(g.time_s).epsilon(0.02));
  CHECK(f.model.max_efficiency == doctest::Approx(0.71).epsilon(0.03));
  CHECK(f.model.misaligned_factor == doctest::Approx(0.6).epsilon(0.03));
}

TEST_CASE("with 2% timing noise the GEMM fit stays within the noise") {
  Samples s = synthetic_samples(SweepSize::standard, false);
  for (size_t i = 0; i < s.gemm.size(); ++i)  // deterministic +-2% pattern
    s.gemm[i].time_s *= 1 + 0.02 * std::sin(double(i) * 12.9898);
  Gpu start = h200().gpu;
  start.hbm_efficiency = truth_gpu().hbm_efficiency;
  const GemmFit f = fit_gemm(s.gemm, start, Dtype::bf16);
  CHECK(f.rms_log_err < 0.02);
  CHECK(f.max_rel_err < 0.05);
  CHECK(f.model.max_efficiency == doctest::Approx(0.71).epsilon(0.03));
}

TEST_CASE("the whole-layer check sums what planner estimate's layer GEMM time sums") {
  const Samples s = synthetic_samples(SweepSize::quick, false);
  ClusterProfile c = h200();
  c.gpu = truth_gpu();
  const std::vector<LayerCheck> layers = layer_check(s.gemm, c.gpu, Dtype::bf16);
  REQUIRE(layers.size() == 4);  // hidden 2048 and 8192, TP 1 and 8, 4096 tokens
  for (const LayerCheck& l : layers) {
    CHECK(l.model_s == doctest::Approx(l.measured_s).epsilon(1e-9));
    ModelSpec m;
    m.layers = 1, m.hidden = l.hidden, m.heads = l.hidden / 128, m.kv_heads = m.heads;
    m.ffn = 4 * l.hidden, m.vocab = 50304, m.seq_len = l.tokens;
    const LayerCompute lc =
        layer_compute(m, c, {l.tp, 1, 1, false, Dtype::bf16, AttentionKernel::flash});
    CHECK((lc.fwd_gemm_s + lc.bwd_gemm_s) * c.gpu.sustained_efficiency ==
          doctest::Approx(l.model_s));
  }
}

TEST_CASE("the written profile loads with io::load_cluster and round-trips the fitted numbers") {
  const ClusterProfile base = h200();
  const Samples s = synthetic_samples(SweepSize::quick, true);
  const FitOutcome out =
      fit_profile(s, base, {"h200-synthetic", "hw_profiles/dgx-h200.yaml", "x.json", 0});
  const std::string path = temp_dir() + "/h200-synthetic.yaml";
  ClusterProfile written = out.profile;
  written.gpu.gemm.measured = {{4096, 12288, 4096, 1, Dtype::bf16, 0.71}};  // planner validate's
  io::write_file_atomically(path, io::cluster_yaml(written, {"a comment"}));
  const ClusterProfile back = io::load_cluster(path);
  const ClusterProfile& p = out.profile;
  CHECK(back.name == "h200-synthetic");
  CHECK(back.gpu.name == "NVIDIA H200 (synthetic)");
  CHECK(back.gpus_per_node == 8);
  CHECK(back.nodes == base.nodes);
  CHECK(back.gpu.sms == 132);
  CHECK(back.gpu.peak_flops == base.gpu.peak_flops);  // datasheet, kept
  CHECK(back.gpu.hbm_efficiency == doctest::Approx(p.gpu.hbm_efficiency).epsilon(1e-5));
  CHECK(back.gpu.gemm.max_efficiency == doctest::Approx(p.gpu.gemm.max_efficiency).epsilon(1e-5));
  CHECK(back.gpu.gemm.k_half == doctest::Approx(p.gpu.gemm.k_half).epsilon(1e-5));
  CHECK(back.gpu.gemm.launch_s == doctest::Approx(p.gpu.gemm.launch_s).epsilon(1e-5));
  REQUIRE(back.gpu.gemm.tiles.size() == p.gpu.gemm.tiles.size());
  for (size_t i = 0; i < p.gpu.gemm.tiles.size(); ++i)
    CHECK(back.gpu.gemm.tiles[i].relative_efficiency ==
          doctest::Approx(p.gpu.gemm.tiles[i].relative_efficiency).epsilon(1e-5));
  for (int c = 0; c < kNumCollectives; ++c)
    for (const auto* tiers : {&back.intra, &back.inter}) {
      const NetworkTier& fitted = tiers == &back.intra ? p.intra : p.inter;
      const CollectiveCost& a = tiers->cost[c];
      CHECK(a.busbw_Bps == doctest::Approx(fitted.cost[c].busbw_Bps).epsilon(1e-5));
      CHECK(a.latency_s == doctest::Approx(fitted.cost[c].latency_s).epsilon(1e-5));
      REQUIRE(a.curve.size() == fitted.cost[c].curve.size());
      CHECK(a.curve.front().first == fitted.cost[c].curve.front().first);
      CHECK(a.curve.back().second ==
            doctest::Approx(fitted.cost[c].curve.back().second).epsilon(1e-5));
    }
  REQUIRE(back.gpu.gemm.measured.size() == 1);
  CHECK(back.gpu.gemm.measured[0].n == 12288);
  CHECK(back.gpu.gemm.measured[0].efficiency == doctest::Approx(0.71));
  CHECK(back.intra.reference_ranks == 8);
  CHECK(back.inter.reference_ranks == 2);
  CHECK(back.inter.hop_latency_s == base.inter.hop_latency_s);  // not measured: the base's
  CHECK(back.gpu.flash_efficiency == base.gpu.flash_efficiency);
  CHECK(back.provenance.at("calibrate.versions") ==
        "GPU NVIDIA H200 (synthetic) (132 SMs, compute capability 9.0), driver 580.159, CUDA "
        "runtime 13.0, cuBLAS 13.0.2, NCCL 2.28.3");
  CHECK(back.provenance.at("calibrate").find("node-a, node-b at 2025-01-01T00:00:00Z") !=
        std::string::npos);
  CHECK(back.provenance.at("gpu.gemm").rfind("[calibrated] least squares", 0) == 0);
  CHECK(back.provenance.at("gpu.peak_tflops").rfind("[base hw_profiles/dgx-h200.yaml] H200", 0) ==
        0);
  CHECK(back.provenance.count("gpu.gemm.tiles") == 0);  // replaced by the fit's entry
  std::filesystem::remove_all(std::filesystem::path(path).parent_path());
}

TEST_CASE("without collective samples (one GPU) the network tiers are the base's") {
  const ClusterProfile base = h200();
  const FitOutcome out = fit_profile(synthetic_samples(SweepSize::quick, false), base, {});
  CHECK(out.profile.name == "dgx-h200-calibrated");
  CHECK(out.profile.gpus_per_node == base.gpus_per_node);
  for (int c = 0; c < kNumCollectives; ++c) {
    CHECK(out.profile.intra.cost[c].busbw_Bps == base.intra.cost[c].busbw_Bps);
    CHECK(out.profile.inter.cost[c].latency_s == base.inter.cost[c].latency_s);
  }
  CHECK(out.profile.provenance.at("network.inter_node").rfind("[base dgx-h200] ", 0) == 0);
  CHECK(out.report.back() ==
        "network: no collective samples (one GPU, or --skip nccl): both "
        "tiers come from the base profile");
}

TEST_CASE("samples survive the JSON file") {
  const Samples s = synthetic_samples(SweepSize::quick, true);
  const Samples back = parse_samples(samples_json(s), "s.json");
  CHECK(back.context.hosts == s.context.hosts);
  CHECK(back.context.command_line == s.context.command_line);
  REQUIRE(back.gemm.size() == s.gemm.size());
  CHECK(back.gemm[5].layout == s.gemm[5].layout);
  CHECK(back.gemm[5].time_s == doctest::Approx(s.gemm[5].time_s).epsilon(1e-12));
  REQUIRE(back.collectives.size() == s.collectives.size());
  CHECK(back.collectives.back().tier == Tier::inter_node);
  CHECK(back.collectives.back().collective == Collective::sendrecv);
  CHECK(back.hbm[2].kind == s.hbm[2].kind);
}

TEST_CASE("the synthetic samples fixture golden is current") {
  // tests/data/calibrate/synthetic-h200.samples.json feeds the calibrate_fit_only ctest.
  const std::string text = samples_json(synthetic_samples(SweepSize::quick, true));
  if (std::getenv("PLANNER_UPDATE_GOLDENS")) std::ofstream(kFixture) << text;
  std::ifstream in(kFixture);
  std::stringstream ss;
  ss << in.rdbuf();
  CHECK(ss.str() == text);
}

TEST_CASE("malformed sample files name the file, line and key") {
  const std::string head = "{\"schema_version\": 1, \"context\": {},\n";
  const std::string gemm = "{\"dtype\": \"bf16\", \"m\": 8, \"n\": 8, \"k\": 8, \"time_us\": 1}";
  auto with_gemm = [&](std::string from, std::string to) {
    std::string g = gemm;
    g.replace(g.find(from), from.size(), to);
    return head + "\"gemm\": [\n" + gemm + ",\n" + g + "]}";
  };
  CHECK(error_of(head + "\"gemm\": [}") ==
        "s.json:2: invalid JSON: syntax error while parsing value - unexpected '}'; expected '[', "
        "'{', or a literal");
  CHECK(error_of(with_gemm("\"time_us\": 1", "\"tme_us\": 1")) ==
        "s.json:4: key 'gemm[1].tme_us': unknown key, did you mean 'time_us'?");
  CHECK(error_of(with_gemm(", \"time_us\": 1", "")) ==
        "s.json:4: key 'gemm[1].time_us': missing required key");
  CHECK(error_of(with_gemm("\"time_us\": 1", "\"time_us\": -3")) ==
        "s.json:4: key 'gemm[1].time_us': must be positive");
  CHECK(error_of(with_gemm("bf16", "bf61")) ==
        "s.json:4: key 'gemm[1].dtype': expected one of fp16, bf16, fp8, tf32, got 'bf61'");
  CHECK(error_of(with_gemm("\"m\": 8", "\"m\": \"eight\"")) ==
        "s.json:4: key 'gemm[1].m': expected a number, got 'eight'");
  CHECK(error_of("{\"schema_version\": 2, \"context\": {}}") ==
        "s.json:1: key 'schema_version': unsupported version 2 (this planner-calibrate reads "
        "version 1)");
  CHECK(error_of(head +
                 "\"collectives\": [{\"tier\": \"intra_node\", \"collective\": \"allreduce\", "
                 "\"ranks\": 1, \"bytes\": 8, \"time_us\": 20}]}") ==
        "s.json:2: key 'collectives[0].ranks': a collective needs at least 2 ranks");
  CHECK(error_of(head + "\"hbm\": {}}") == "s.json:2: key 'hbm': expected a list of samples");
  try {
    load_samples("/nonexistent/x.json");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) ==
          "/nonexistent/x.json: cannot open file: No such file or directory");
  }
  // The checked-in malformed file (the calibrate_fit_malformed ctest) fails to load too.
  CHECK_THROWS_AS(load_samples(PLANNER_SOURCE_DIR "/tests/data/calibrate/malformed.samples.json"),
                  InputError);
}

TEST_CASE("the stopping rule: median, spread, when to stop, batch sizes") {
  CHECK(median({3, 1, 2}) == 2);
  CHECK(median({4, 1, 3, 2}) == 2.5);
  CHECK(relative_spread({1, 2, 3, 4, 5}) == doctest::Approx((4.0 - 2.0) / 3.0));
  RepeatPolicy p;  // min 3, max 15, 2% spread, 0.5 s budget
  Repeats stable(p);
  for (double t : {1.00, 1.01, 0.99}) stable.add(t * 1e-3, 1e-3);
  CHECK(stable.done());
  CHECK(stable.stats().median_s == doctest::Approx(1e-3));
  Repeats noisy(p);
  int n = 0;
  while (!noisy.done()) noisy.add((n++ % 2 ? 1.0 : 1.5) * 1e-3, 1e-3);
  CHECK(noisy.stats().repeats == 15);  // never settles: stops at max_repeats
  Repeats slow(p);
  for (int i = 0; i < 3; ++i) slow.add(i + 1.0, 0.3);
  CHECK(slow.done());  // noisy, but the 0.5 s budget is spent
  CHECK(batch_iterations(5e-6, 1e-3, 200) == 200);
  CHECK(batch_iterations(3e-4, 1e-3, 200) == 4);
  CHECK(batch_iterations(2e-3, 1e-3, 200) == 1);
}

TEST_CASE("the GEMM sweep covers the planner's shapes and the default fits in 3 minutes") {
  const std::vector<GemmCase> quick = gemm_sweep(SweepSize::quick, {Dtype::bf16});
  const std::vector<Dtype> all = {Dtype::bf16, Dtype::fp16, Dtype::tf32, Dtype::fp8};
  const std::vector<GemmCase> standard = gemm_sweep(SweepSize::standard, all);
  std::set<int> hidden, tp, tokens;
  std::set<std::string> layouts;
  for (const GemmCase& c : standard) {
    if (c.dtype == Dtype::fp8) CHECK(c.layout() == "TN");
    if (c.dtype != Dtype::bf16 || c.hidden == 0) continue;
    hidden.insert(c.hidden), tp.insert(c.tp), tokens.insert(c.tokens), layouts.insert(c.layout());
  }
  CHECK(hidden == std::set<int>{1024, 2048, 4096, 8192, 16384, 32768});
  CHECK(tp == std::set<int>{1, 2, 4, 8});
  CHECK(tokens.count(1024) == 1);
  CHECK(tokens.count(16384) == 1);
  CHECK(layouts == std::set<std::string>{"TN", "NN", "NT"});
  // Forward of QKV, h = 4096, TP 1, 4096 tokens: planner {T, 3h, h}, cuBLAS TN C[3h x T].
  const auto qkv = std::find_if(standard.begin(), standard.end(), [](const GemmCase& c) {
    return c.linear == "qkv" && c.hidden == 4096 && c.tp == 1 && c.tokens == 4096 &&
           c.orientation == "fwd";
  });
  REQUIRE(qkv != standard.end());
  CHECK((qkv->shape.m == 4096 && qkv->shape.n == 12288 && qkv->shape.k == 4096));
  CHECK((qkv->cm == 12288 && qkv->cn == 4096 && qkv->ck == 4096));
  const Gpu gpu = h200().gpu;
  const RepeatPolicy policy;
  const double quick_s = estimate_gemm_sweep_s(quick, gpu, policy);
  const double standard_s = estimate_gemm_sweep_s(standard, gpu, policy);
  fmt::print(
      "  GEMM sweep on an H200 (model): quick {} GEMMs {:.0f} s, default {} GEMMs {:.0f} s\n",
      quick.size(), quick_s, standard.size(), standard_s);
  CHECK(quick_s < 30);
  CHECK(standard_s < 150);  // leaves room in the 3 minutes for memory, set-up and the fit
  const std::vector<double> sizes = message_sizes(8, 1 << 30);
  CHECK(sizes.size() == 28);
  CHECK(sizes.back() == 1 << 30);
}

TEST_CASE("context helpers: versions, driver, command line, ranks, base profile") {
  CHECK(nccl_version_string(22803) == "2.28.3");
  CHECK(nccl_version_string(2708) == "2.7.8");
  CHECK(cuda_version_string(13000) == "13.0");
  CHECK(cuda_version_string(12040) == "12.4");
  CHECK(cublas_version_string(130002) == "13.0.2");
  CHECK(parse_nvrm_driver_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159  Thu "
                                  "Oct 2 2025\nGCC version: 12.2") == "580.159");
  CHECK(parse_nvrm_driver_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  "
                                  "570.86.15  Release Build") == "570.86.15");
  CHECK(parse_nvrm_driver_version("") == "");
  const char* argv[] = {"planner-calibrate", "--out", "a b.yaml", "--name=x"};
  CHECK(shell_command_line(4, argv) == "planner-calibrate --out 'a b.yaml' --name=x");
  const char* quote[] = {"x", "it's"};
  CHECK(shell_command_line(2, quote) == "x 'it'\\''s'");
  CHECK(rank_list({3, 0, 1, 2, 8, 16, 17}) == "0-3,8,16-17");
  CHECK(parse_bytes("8", "-b") == 8);
  CHECK(parse_bytes("64K", "-b") == 65536);
  CHECK(parse_bytes("1G", "-e") == 1 << 30);
  try {
    parse_bytes("1T", "--max-bytes");
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()) ==
          "option --max-bytes: expected a size such as 8, 64K, 16M or 1G, got '1T'");
  }
  CHECK(default_base_profile("NVIDIA H200", 150e9) == "dgx-h200.yaml");
  CHECK(default_base_profile("NVIDIA A100-SXM4-40GB", 42e9) == "dgx-a100-40gb.yaml");
  CHECK(default_base_profile("NVIDIA A100-SXM4-80GB", 85e9) == "dgx-a100-80gb.yaml");
  CHECK(default_base_profile("NVIDIA GeForce RTX 4090", 25e9) == "");
  try {
    resolve_base_profile("", "NVIDIA GeForce RTX 4090", 25e9);
    FAIL("no error");
  } catch (const InputError& e) {
    CHECK(std::string(e.what()).rfind("option --base: no profile in hw_profiles/ matches GPU "
                                      "'NVIDIA GeForce RTX 4090'",
                                      0) == 0);
  }
}

TEST_CASE("the watchdog: done, an NCCL error, a hang on the GPU, a hang in a host call") {
  Watchdog wd(0.05, 0.05);
  int aborts = 0, polls = 0;
  PollTarget done{[&] { return ++polls < 3 ? 1 : 0; }, [] { return std::string(); },
                  [&] { ++aborts; }, nullptr};
  wd.wait(done, "allreduce of 8 bytes");
  CHECK(polls == 3);
  CHECK(aborts == 0);
  PollTarget error{[] { return 1; },
                   [] { return std::string("remote process exited or there was a network error"); },
                   [&] { ++aborts; }, nullptr};
  try {
    wd.wait(error, "allgather of 1024 bytes on ranks 0-7");
    FAIL("no error");
  } catch (const CollectiveTimeout& e) {
    CHECK(std::string(e.what()) ==
          "allgather of 1024 bytes on ranks 0-7: NCCL reported 'remote "
          "process exited or there was a network error'; communicators "
          "aborted (ncclCommAbort)");
  }
  PollTarget hang{[] { return 1; }, [] { return std::string(); }, [&] { ++aborts; }, nullptr};
  try {
    wd.wait(hang, "allreduce of 1073741824 bytes on ranks 0-7 (devices 0-7 of host a)");
    FAIL("no error");
  } catch (const CollectiveTimeout& e) {
    CHECK(std::string(e.what()) ==
          "allreduce of 1073741824 bytes on ranks 0-7 (devices 0-7 of "
          "host a) did not finish within 0.05 s (--timeout-s); "
          "communicators aborted (ncclCommAbort)");
  }
  CHECK(aborts == 2);
  // A step blocked in a host call: the backstop ends the process with code 3 and says what.
  int err[2];
  REQUIRE(pipe(err) == 0);
  const pid_t child = fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    dup2(err[1], STDERR_FILENO);
    Watchdog backstop(0.01, 0.02);
    backstop.arm("ncclCommInitAll of ranks 0-7");
    std::this_thread::sleep_for(std::chrono::seconds(5));
    _exit(0);  // not reached
  }
  close(err[1]);
  int status = 0;
  waitpid(child, &status, 0);
  char buf[512] = {};
  const ssize_t n = read(err[0], buf, sizeof buf - 1);
  close(err[0]);
  CHECK(WIFEXITED(status));
  CHECK(WEXITSTATUS(status) == 3);
  CHECK(n > 0);
  CHECK(std::string(buf).find("watchdog: ncclCommInitAll of ranks 0-7: still blocked") !=
        std::string::npos);
}

TEST_CASE("measured GEMMs near a shape correct the model: held-out on the H200 calibration") {
  // The 584 bf16 shapes timed on the lent H200: every other sample is the training half, from
  // which the parametric model is fitted (as planner-calibrate fits it, from the base profile
  // with the calibrated HBM rate) and the measured table built; the other half is predicted.
  // Nothing of the held-out half reaches the fit: the committed profile's constants, fitted on
  // all 584, would (they gave 7.07% parametric, 5.47% with the table, on this same split).
  const Samples all =
      load_samples(PLANNER_SOURCE_DIR "/bench/calibration-h200/h200-calibrated.samples.json");
  const ClusterProfile c = io::load_cluster(PLANNER_SOURCE_DIR "/hw_profiles/h200-calibrated.yaml");
  std::vector<GemmSample> bf16, train;
  for (const GemmSample& g : all.gemm)
    if (g.dtype == Dtype::bf16) bf16.push_back(g);
  REQUIRE(bf16.size() == 584);
  for (size_t i = 0; i < bf16.size(); i += 2) train.push_back(bf16[i]);
  Gpu start = io::load_cluster(PLANNER_SOURCE_DIR "/hw_profiles/dgx-h200.yaml").gpu;
  start.hbm_efficiency = c.gpu.hbm_efficiency;
  const GemmFit fit = fit_gemm(train, start, Dtype::bf16);
  const double peak = c.gpu.peak_flops[int(Dtype::bf16)];
  Gpu model = start;  // the training half's parametric model alone
  model.gemm = fit.model;
  Gpu table = model;
  for (const GemmSample& g : train)
    table.gemm.measured.push_back(
        {g.m, g.n, g.k, 1, Dtype::bf16, 2 * g.m * g.n * g.k / (g.time_s * peak)});
  auto rms = [&](const Gpu& gpu, size_t first) {
    double sum = 0, worst = 0;
    int n = 0;
    for (size_t i = first; i < bf16.size(); i += 2) {
      const GemmSample& g = bf16[i];
      const double e = std::log(gemm_time_s(gpu, Dtype::bf16, {g.m, g.n, g.k}) / g.time_s);
      sum += e * e, worst = std::max(worst, std::fabs(e)), ++n;
    }
    return std::pair{std::sqrt(sum / n), worst};
  };
  const auto [model_rms, model_worst] = rms(model, 1);
  const auto [held_rms, held_worst] = rms(table, 1);
  const auto [seen_rms, seen_worst] = rms(table, 0);
  MESSAGE(fmt::format(
      "bf16 GEMMs, held-out half: the training half's parametric fit rms {:.2f}% (worst "
      "{:.1f}%; {:.2f}% on its own half), with its measured table {:.2f}% (worst {:.1f}%); the "
      "table's own shapes {:.2f}%",
      100 * model_rms, 100 * model_worst, 100 * fit.rms_log_err, 100 * held_rms, 100 * held_worst,
      100 * seen_rms));
  // A measured shape is its measurement, but the samples time each m x n x k in up to three
  // layouts (TN, NN, NT) that the shape does not tell apart: the table keeps one of them.
  CHECK(seen_rms < held_rms);
  // The training half's model 8.43% rms (worst 46.5%), with its table 6.95%: the 3% is
  // not reached (the layouts of one shape alone differ by 2.1% rms about their mean).
  CHECK(held_rms < 0.072);
  CHECK(held_rms < model_rms);
}
