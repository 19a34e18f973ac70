#include <doctest/doctest.h>

#include "planner/error.h"
#include "planner/regress.h"

using namespace planner;

namespace {
const std::string kHeader =
    "id,source,cluster,num_gpus,layers,hidden,heads,kv_heads,ffn,swiglu,vocab,seq,tp,pp,dp,cp,sp,"
    "vpp,mbs,gbs,zero,recompute,precision,measured_iter_time_s,measured_tflops_per_gpu,flops_"
    "formula\n";
const std::string kRow =
    "r1,\"Paper, Table "
    "1\",dgx-a100-80gb,32,24,2304,24,,9216,0,51200,2048,1,1,32,,0,,,512,0,full,fp16,,137,megatron-"
    "hfu\n";

std::string error_of(const std::string& text) {
  try {
    parse_cases(text, "c.csv");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}
}  // namespace

TEST_CASE("regression cases parse, with quoted commas and empty knobs") {
  const auto cases = parse_cases(kHeader + kRow, "c.csv");
  REQUIRE(cases.size() == 1);
  const RegressionCase& c = cases[0];
  CHECK(c.source == "Paper, Table 1");
  CHECK(c.model.kv_heads == 24);   // empty kv_heads = heads
  CHECK(c.knob(KnobId::tp) == 1);  // the knob columns are read through the knob table
  CHECK(!c.knob(KnobId::vpp).has_value());
  CHECK(!c.knob(KnobId::mbs).has_value());
  CHECK(c.knob(KnobId::recompute) == int(Recompute::full));
  CHECK(c.knob(KnobId::zero) == 0);
  CHECK(!c.knob(KnobId::schedule).has_value());  // not a column of the format
  CHECK(*c.measured_tflops_per_gpu == 137);
}

TEST_CASE("malformed case files name the line and the column") {
  CHECK(error_of("id,source\n") == "c.csv:1: expected column 3 to be 'cluster', found ''");
  CHECK(error_of(kHeader + "r1,x,dgx-a100-80gb,abc" + kRow.substr(kRow.find(",24,2304"))) ==
        "c.csv:2: column 'num_gpus': expected an integer from 1 to 1048576, got 'abc'");
  std::string bad = kRow;
  bad.replace(bad.find(",full,"), 6, ",most,");
  CHECK(error_of(kHeader + bad) ==
        "c.csv:2: column 'recompute': unknown value 'most' (expected one of none, selective, full, "
        "selective_moe)");
  bad = kRow;
  bad.replace(bad.find(",0,full,"), 8, ",4,full,");
  CHECK(error_of(kHeader + bad) == "c.csv:2: column 'zero': must be 0, 1, 2 or 3, got 4");
  bad = kRow;
  bad.replace(bad.find("megatron-hfu"), 12, "guess");
  CHECK(error_of(kHeader + bad) ==
        "c.csv:2: column 'flops_formula': unknown formula 'guess' (megatron-hfu, megatron-mfu)");
  // A row with only a measured time named a formula that does not exist: it was accepted and
  // regress dereferenced the empty formula (the long fuzz run's cases_csv finding).
  bad.replace(bad.find(",137,"), 5, ",3,");
  bad.replace(bad.find(",0,full,fp16,,3,"), 16, ",0,full,fp16,3,,");
  CHECK(error_of(kHeader + bad) ==
        "c.csv:2: column 'flops_formula': unknown formula 'guess' (megatron-hfu, megatron-mfu)");
  CHECK(error_of(kHeader + "r1,x\n") == "c.csv:2: expected 26 columns, found 2");
  CHECK(error_of(kHeader) == "c.csv: no rows");
}

TEST_CASE("a measured TFLOP/s converts to time through the row's formula") {
  auto cases = parse_cases(kHeader + kRow, "c.csv");
  const RegressionReport rep = run_regression(cases, PLANNER_SOURCE_DIR "/hw_profiles");
  REQUIRE(rep.rows.size() == 1);
  const RegressionRow& r = rep.rows[0];
  REQUIRE(!r.unsupported);
  // 96 B s L h^2 (1 + s/6h + V/16Lh) / (137e12 x 32 GPUs): 1.5466e16 / 4.384e15 = 3.528 s
  CHECK(r.measured_iter_time_s == doctest::Approx(3.528).epsilon(0.001));
  CHECK(r.error_pct ==
        doctest::Approx(100 * (r.estimate.iteration_time_s / r.measured_iter_time_s - 1)));
  CHECK(r.estimate.plan.tp == 1);  // fixed knobs are kept
  CHECK(r.estimate.plan.recompute == Recompute::full);
}

TEST_CASE("rows the model cannot represent say why") {
  std::string fp8 = kRow;
  fp8.replace(fp8.find(",fp16,"), 6, ",fp8,");
  std::string nocluster = kRow;
  nocluster.replace(nocluster.find("dgx-a100-80gb"), 13, "tpu-v9");
  auto cases = parse_cases(kHeader + fp8 + nocluster, "c.csv");
  const RegressionReport rep = run_regression(cases, PLANNER_SOURCE_DIR "/hw_profiles");
  CHECK(*rep.rows[0].unsupported == "A100-SXM4-80GB has no fp8 tensor-core peak");
  CHECK(rep.rows[1].unsupported->find("no cluster profile") == 0);
  CHECK(rep.supported == 0);
}

TEST_CASE("leave one source out: each source predicted with constants fitted without it") {
  std::vector<RegressionCase> cases =
      load_cases(PLANNER_SOURCE_DIR "/tests/data/published-runs.csv");
  RegressionReport rep = run_regression(cases, PLANNER_SOURCE_DIR "/hw_profiles");
  const CrossValidation cv = cross_validate(rep);
  int rows = 0;
  for (const CvFold& f : cv.folds) rows += f.rows;
  CHECK(rows == rep.supported);
  for (const RegressionRow& r : rep.rows)
    CHECK(r.cv_error_pct.has_value() != r.unsupported.has_value());
  // The A100 rows are all Narayanan et al.'s: without them no A100 row is left, so the fold
  // predicts them with the efficiency pooled over the rows that are (all H100): the H100 value.
  bool found = false;
  for (const CvFold& f : cv.folds) {
    if (f.source != "Narayanan et al. 2021 (SC21)") continue;
    found = true;
    CHECK(f.rows == 22);
    CHECK(f.sustained.at("dgx-a100-80gb") == f.sustained.at("dgx-h100-80gb"));
  }
  CHECK(found);
  // The folds refit without their source: at least one fold's H100 value differs from the refit
  // on every row.
  bool differs = false;
  for (const CvFold& f : cv.folds)
    differs |= f.sustained.at("dgx-h100-80gb") != cv.in_sample_fit.at("dgx-h100-80gb");
  CHECK(differs);
  CHECK(cv.mean_abs_error_pct >= 0);
  CHECK(cv.max_abs_error_pct >= cv.mean_abs_error_pct);
}

TEST_CASE("accuracy bands: quantiles of the signed errors, the narrowest class with enough rows") {
  CHECK(quantile({3, 1, 2, 5, 4}, 0.5) == doctest::Approx(3));
  CHECK(quantile({0, 10}, 0.1) == doctest::Approx(1));
  CHECK(quantile({0, 10}, 0.9) == doctest::Approx(9));
  const AccuracyBands bands = {{"H100", "fp8", 4, 2, -1, 30},  // too few rows to stand alone
                               {"*", "fp8", 18, 2, -8, 25},
                               {"A100", "fp16", 22, 2, -5, 11},
                               {"*", "*", 49, 4, -8, 15}};
  CHECK(band_for(bands, "H100", "fp8")->rows == 18);  // the precision over every GPU
  CHECK(band_for(bands, "A100", "fp16")->rows == 22);
  CHECK(band_for(bands, "B200", "bf16")->rows == 49);   // nothing closer: every row
  CHECK(band_for(bands, "B200", "mxfp8")->rows == 18);  // no MXFP8 run: FP8's rows
  AccuracyBands b200 = bands;
  b200.push_back({"B200", "fp8", 6, 2, -3, 4});
  CHECK(band_for(b200, "B200", "mxfp8")->rows == 6);  // the same GPU's FP8 rows first
  CHECK(band_for({}, "A100", "fp16") == nullptr);
  // Rows enough but from one source: that source's bias, not a spread; the next class stands.
  AccuracyBands one = bands;
  one[2].sources = 1;
  CHECK(band_for(one, "A100", "fp16")->rows == 49);
  // A prediction 25% slow at the 90th percentile: the true time is t / 1.25 at the low end.
  const auto [lo, hi] = band_times(10.0, bands[1]);
  CHECK(lo == doctest::Approx(10.0 / 1.25));
  CHECK(hi == doctest::Approx(10.0 / 0.92));
  CHECK(band_text(bands[1]) == "-20%/+9%");
}

TEST_CASE("accuracy bands from regress: a class counts its sources") {
  // Two sources' rows in one class, one source's in another.
  RegressionReport rep;
  std::vector<RegressionCase> cases(3);
  cases[0].source = "A et al., Table 1", cases[1].source = "A et al., Table 2";
  cases[2].source = "B docs";
  for (auto& c : cases) c.precision = "fp8";
  for (int i = 0; i < 3; ++i) {
    RegressionRow r;
    r.c = &cases[size_t(i)];
    r.cluster.gpu.name = i < 2 ? "H100" : "B200";
    r.cv_error_pct = 10.0 * i;
    rep.rows.push_back(r);
  }
  const AccuracyBands b = accuracy_bands(rep);
  auto find = [&](const std::string& gpu) {
    for (const AccuracyBand& x : b)
      if (x.gpu == gpu && x.precision == "fp8") return x;
    FAIL("no band");
    return AccuracyBand{};
  };
  CHECK(find("H100").rows == 2);
  CHECK(find("H100").sources == 1);  // one source up to its first comma
  CHECK(find("*").rows == 3);
  CHECK(find("*").sources == 2);
  CHECK(accuracy_bands(rep, "B docs").size() == 3);  // H100/fp8, */fp8, */*, each without B
}

TEST_CASE("optional columns: a model file in place of the shape columns, ep and etp anywhere") {
  // `model` and `published_tflops_per_gpu` among the base columns, the model file relative to the
  // CSV (here tests/data/).
  std::string header = kHeader;
  header.replace(header.find(",layers,"), 8, ",model,layers,");
  header.replace(header.find(",sp,"), 4, ",ep,etp,sp,");
  header.insert(header.size() - 1, ",published_tflops_per_gpu");
  const std::string csv = PLANNER_SOURCE_DIR "/tests/data/c.csv";
  const std::string dense =
      "r1,x,dgx-a100-80gb,32,../../configs/models/gpt3-1.3b.yaml,,,,,,,,2048,1,1,32,,,,0,,,512,0,"
      "full,fp16,,137,megatron-hfu,140\n";
  const auto cases = parse_cases(header + dense, csv);
  REQUIRE(cases.size() == 1);
  CHECK(cases[0].model.layers == 24);
  CHECK(cases[0].model.hidden == 2048);
  CHECK(cases[0].model.seq_len == 2048);
  CHECK(*cases[0].published_tflops_per_gpu == 140);
  CHECK(!cases[0].knob(KnobId::ep).has_value());

  const std::string moe =
      "q,x,dgx-h100-80gb,16,hf/Qwen3-30B-A3B/config.json,,,,,,,,4096,1,1,16,1,16,1,,,1,1024,,,fp8,"
      "29.701,,,203\n";
  const auto m = parse_cases(header + moe, csv);
  CHECK(m[0].model.moe.experts == 128);
  CHECK(m[0].knob(KnobId::ep) == 16);
  CHECK(m[0].knob(KnobId::etp) == 1);

  auto error_at = [&](const std::string& text) {
    try {
      parse_cases(text, csv);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string bad = dense;
  bad.replace(bad.find(".yaml,,"), 7, ".yaml,24,");
  CHECK(error_at(header + bad) ==
        csv + ":2: column 'layers': must be empty when 'model' names the model file");
  bad = dense;
  bad.replace(bad.find(",32,,,,0,"), 9, ",32,,4,,0,");
  CHECK(error_at(header + bad) == csv + ":2: column 'ep': needs a model with experts");
  CHECK(error_at(header.substr(0, header.size() - 1) + ",notes\n" + dense) ==
        csv +
            ":1: unexpected extra column 'notes' (the optional columns: model, "
            "published_tflops_per_gpu, framework, mtp_layers, model_parallel and any plan knob "
            "of --plan but dtype)");
  // mtp_layers: the run's multi-token-prediction modules over the model file's (DeepSeek-V3's 1).
  const std::string mtp_header = header.substr(0, header.size() - 1) + ",mtp_layers\n";
  const std::string ds =
      "d,x,dgx-h800,256,hf/DeepSeek-V3/config.json,,,,,,,,4096,1,8,32,1,8,1,,,1,1024,,,fp8,"
      "30,,,";
  CHECK(parse_cases(mtp_header + ds + ",\n", csv)[0].model.mtp_layers == 1);
  CHECK(parse_cases(mtp_header + ds + ",0\n", csv)[0].model.mtp_layers == 0);
  CHECK(parse_cases(mtp_header + dense.substr(0, dense.size() - 1) + ",2\n", csv)[0]
            .model.mtp_layers == 2);
  CHECK(error_at(mtp_header + ds + ",65\n") ==
        csv + ":2: column 'mtp_layers': expected 0 to 64, got 65");
  CHECK(error_at(mtp_header + ds + ",-1\n").find("column 'mtp_layers': expected an integer") !=
        std::string::npos);
  std::string twice = header;
  twice.replace(twice.find(",etp,"), 5, ",ep,");
  CHECK(error_at(twice + dense).find("expected column 19 to be 'sp', found 'ep'") !=
        std::string::npos);
}

TEST_CASE(
    "model_parallel: a row that publishes only tp x pp searches the pairs with that product") {
  // 64 GPUs of a 24-layer model with model-parallel size 8: tp x pp = 8, dp = 8.
  const std::string header = kHeader.substr(0, kHeader.size() - 1) + ",model_parallel\n";
  const std::string row =
      "mp,x,dgx-a100-80gb,64,24,2304,24,,9216,0,51200,2048,,,,,0,,1,512,0,full,fp16,,137,"
      "megatron-hfu,8\n";
  const auto cases = parse_cases(header + row, "c.csv");
  REQUIRE(cases[0].model_parallel == 8);
  const RegressionReport rep = run_regression(cases, PLANNER_SOURCE_DIR "/hw_profiles");
  REQUIRE(!rep.rows[0].unsupported);
  const Plan& p = rep.rows[0].estimate.plan;
  CHECK(p.tp * p.pp == 8);
  CHECK(p.dp == 8);
  // The fastest of the pairs: each pair fixed as tp and pp columns predicts no faster.
  for (int tp : {1, 2, 4, 8}) {
    CAPTURE(tp);
    std::string fixed = row;
    fixed.replace(fixed.find(",2048,,,,,0,"), 12,
                  ",2048," + std::to_string(tp) + "," + std::to_string(8 / tp) + ",,,0,");
    fixed.replace(fixed.rfind(",8\n"), 3, ",\n");
    const RegressionReport one =
        run_regression(parse_cases(header + fixed, "c.csv"), PLANNER_SOURCE_DIR "/hw_profiles");
    if (one.rows[0].unsupported) continue;
    CHECK(one.rows[0].estimate.iteration_time_s >=
          rep.rows[0].estimate.iteration_time_s * (1 - 1e-12));
    if (one.rows[0].estimate.plan.tp == p.tp)
      CHECK(one.rows[0].estimate.iteration_time_s ==
            doctest::Approx(rep.rows[0].estimate.iteration_time_s));
  }
  // A product that does not divide the GPUs leaves the row unmodelled, saying why.
  std::string odd = row;
  odd.replace(odd.rfind(",8\n"), 3, ",3\n");
  const RegressionReport three =
      run_regression(parse_cases(header + odd, "c.csv"), PLANNER_SOURCE_DIR "/hw_profiles");
  CHECK(three.rows[0].unsupported == "model_parallel 3 does not divide num_gpus 64");
  // Given with tp or pp it is refused: the row says one or the other.
  std::string both = row;
  both.replace(both.find(",2048,,,,,0,"), 12, ",2048,2,,,,0,");
  CHECK(error_of(header + both) ==
        "c.csv:2: column 'model_parallel': give tp and pp, or their product model_parallel, not "
        "both");
  std::string zero = row;
  zero.replace(zero.rfind(",8\n"), 3, ",0\n");
  CHECK(error_of(header + zero).find("column 'model_parallel': expected an integer from 1") !=
        std::string::npos);
}
