// End-to-end: the planner binary's exit codes, messages and output formats.
#include <doctest/doctest.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "cli_run.h"

namespace {

/// The cell of `column` in row `rank` of a suggest table (columns named by its "# rank" line).
std::string table_cell(const std::string& out, int rank, const std::string& column) {
  std::istringstream lines(out);
  std::vector<std::string> header;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream words(line);
    std::vector<std::string> w;
    for (std::string x; words >> x;) w.push_back(x);
    if (w.size() > 1 && w[0] == "#" && w[1] == "rank") header.assign(w.begin() + 1, w.end());
    if (header.empty() || w.empty() || w[0] != std::to_string(rank)) continue;
    for (size_t i = 0; i < header.size() && i < w.size(); ++i)
      if (header[i] == column) return w[i];
  }
  return "";
}

using cli_run::planner;
using cli_run::Run;

const std::string kModel = "--model configs/models/gpt3-175b.yaml";
const std::string kCluster = "--cluster hw_profiles/dgx-a100-80gb.yaml";

using cli_run::check_error;

}  // namespace

TEST_CASE("suggest prints a ranked table with reproducible plans") {
  const Run r =
      planner("suggest " + kModel + " " + kCluster + " --gpus 1024 --global-batch 1536 --top 3");
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("# model   gpt3-175b") != std::string::npos);
  CHECK(r.out.find(" ranked, ") != std::string::npos);
  CHECK(r.out.find("--plan \"tp=") != std::string::npos);
}

TEST_CASE("suggest --format json carries the documented keys") {
  const Run r =
      planner("suggest " + kModel + " " + kCluster +
              " --gpus 1024 --global-batch 1536 --top 2 --format json --train-tokens 300B");
  REQUIRE(r.rc == 0);
  const auto j = nlohmann::json::parse(r.out);
  for (const char* k :
       {"schema_version", "context", "plans_evaluated", "search_time_s", "rejections", "plans"})
    CHECK(j.contains(k));
  REQUIRE(j["plans"].size() == 2);
  const auto& p = j["plans"][0];
  for (const char* k :
       {"dp", "tp", "pp", "cp", "vpp", "mbs", "gbs", "zero", "recompute", "sp", "schedule"})
    CHECK(p["plan"].contains(k));
  for (const char* k : {"iteration_time_s", "tokens_per_s", "tflops_per_gpu", "mfu",
                        "memory_bytes_per_gpu", "train_days", "train_gpu_hours"})
    CHECK(p.contains(k));
  for (const char* k : {"compute_s", "tp_comm_s", "cp_comm_s", "ep_comm_s", "host_s", "pp_comm_s",
                        "dp_comm_s", "bubble_s", "optimizer_s", "offload_s"})
    CHECK(p["breakdown"].contains(k));
}

TEST_CASE("suggest --format csv has a header and K rows") {
  const Run r = planner("suggest " + kModel + " " + kCluster +
                        " --gpus 1024 --global-batch 1536 --top 4 --format csv");
  REQUIRE(r.rc == 0);
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 5);
  // The columns: every knob of the knob table, the metrics, the framework and the plan string.
  CHECK(
      r.out.rfind(
          "rank,tp,pp,dp,cp,ep,etp,vpp,mbs,gbs,zero,recompute,recompute_layers,sp,schedule,split,"
          "order,dtype,attn,overlap_grad_reduce,overlap_param_gather,tp_comm_overlap,"
          "ep_comm_overlap,dispatcher,capacity_factor,pad_to_capacity,cuda_graphs,grad_compression,"
          "zeropp,grad_reduce_bf16,loss_fusion,fp8_recipe,offload_activations,offload_optimizer,"
          "offload_params,offload_pct,iteration_time_s,",
          0) == 0);
}

TEST_CASE("estimate --format json has model_params, layer and diagnostics") {
  const Run r =
      planner("estimate " + kModel + " " + kCluster +
              " --plan \"tp=8,pp=8,dp=16,mbs=1,gbs=1536,vpp=3,zero=1,recompute=selective,sp=1\" "
              "--format json");
  REQUIRE(r.rc == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["model_params"].get<double>() == doctest::Approx(174.56e9).epsilon(0.001));
  for (const char* k : {"fwd_compute_s", "bwd_compute_s", "fwd_comm_s", "bwd_comm_s"})
    CHECK(j["layer"].contains(k));
  std::vector<std::string> ids;
  for (const auto& d : j["diagnostics"]) ids.push_back(d["id"]);
  CHECK(std::find(ids.begin(), ids.end(), "compute_vs_comm") != ids.end());
  CHECK(std::find(ids.begin(), ids.end(), "bubble_share") != ids.end());
  CHECK(std::find(ids.begin(), ids.end(), "memory_headroom") != ids.end());
}

TEST_CASE("estimate diagnoses too few micro-batches and tiny shards") {
  const Run r = planner("estimate --model configs/models/gpt3-350m.yaml " + kCluster +
                        " --plan \"tp=8,pp=4,dp=1,mbs=1,gbs=2\"");
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("2 micro-batches for 4 pipeline stages") != std::string::npos);
  CHECK(r.out.find("the smallest GEMM shard dimension is 128") != std::string::npos);
  CHECK(r.out.find("tensor cores are under-used") != std::string::npos);
}

TEST_CASE("bad input: one clear message and exit 2") {
  check_error("suggest --model /no/such.yaml " + kCluster + " --global-batch 8",
              "/no/such.yaml: cannot open file: No such file or directory");
  check_error("suggest " + kModel + " " + kCluster + " --gpus 0 --global-batch 8",
              "option --gpus: must be positive, got 0");
  check_error("suggest " + kModel + " " + kCluster + " --gpus 12 --global-batch 8",
              "option --gpus: 12 GPUs: beyond one NVLink domain (8 GPUs) a job takes whole hosts "
              "of gpus_per_node=8 (hw_profiles/dgx-a100-80gb.yaml)");
  check_error("estimate " + kModel + " " + kCluster + " --plan \"tp=8,pipe=4\" --global-batch 8",
              "--plan: key 'pipe': unknown plan knob, did you mean 'pp'?");
  check_error("estimate " + kModel + " " + kCluster +
                  " --gpus 1280 --plan \"tp=5,pp=4\" --global-batch 1536",
              "option --plan: tp=5 does not divide heads=96 (model "
              "configs/models/gpt3-175b.yaml, cluster hw_profiles/dgx-a100-80gb.yaml)");
  // Over memory: the breakdown on stdout, then the error (test_friction_cli.cc has the rest).
  const Run oom =
      planner("estimate " + kModel + " " + kCluster + " --plan \"tp=8,pp=1,dp=1,gbs=8\"");
  CHECK(oom.rc == 2);
  CHECK(oom.out.find("planner: error: option --plan: does not fit: needs 417.2 GiB per GPU of "
                     "80.0 GiB") != std::string::npos);
}

TEST_CASE("mixture-of-experts configs are planned with expert parallelism, latent attention too") {
  const std::string moe = "tests/data/hf/mixtral-8x7b-v0.1.json";
  const Run s = planner("suggest --model " + moe + " " + kCluster +
                        " --gpus 16 --global-batch 64 --top 3 --format json");
  REQUIRE(s.rc == 0);
  CHECK(s.out.find("\"ep\": ") != std::string::npos);
  const Run e = planner("estimate --model " + moe + " " + kCluster +
                        " --plan \"tp=4,pp=2,dp=2,ep=8,sp=1,mbs=1,gbs=64,zero=1\"");
  REQUIRE(e.rc == 0);
  CHECK(e.out.find("EP communication") != std::string::npos);
  // The MoE runs' band (configs/accuracy/moe-bands.csv), not the dense runs', and the warning.
  CHECK(e.out.find("cross-validated") == std::string::npos);
  CHECK(e.out.find("runs with experts, never fitted to; any GPU bf16") != std::string::npos);
  CHECK(e.out.find("a band printed beside the time is the MoE runs'") != std::string::npos);
  const auto sj = nlohmann::json::parse(s.out);
  CHECK(sj["plans"][0]["accuracy_band"]["rows"] >= 5);
  check_error("estimate --model " + moe + " " + kCluster +
                  " --plan \"tp=1,pp=1,dp=16,ep=16,mbs=1,gbs=64,zero=1\"",
              "option --plan: ep=16 does not divide the 8 experts (model " + moe +
                  ", cluster hw_profiles/dgx-a100-80gb.yaml)");
  check_error("estimate " + kModel + " " + kCluster + " --plan \"tp=1,pp=8,dp=128,ep=2,gbs=1024\"",
              "option --plan: ep=2 etp=1 need a model with experts (model "
              "configs/models/gpt3-175b.yaml, cluster hw_profiles/dgx-a100-80gb.yaml)");
  // DeepSeek-V3 (latent attention, 256 experts) on one node: no plan, and how many GPUs its
  // states alone need.
  const Run ds = planner("suggest --model tests/data/hf/deepseek-v3.json " + kCluster +
                         " --gpus 8 --global-batch 8");
  CHECK(ds.rc == 2);
  CHECK(ds.out.find("no plan fits") != std::string::npos);
  CHECK(ds.out.find("at least 144 GPUs of 80 GiB") != std::string::npos);  // with its MTP module
  // The MTP module in the header and the time; --mtp-layers 0 plans without it, 65 is refused.
  const std::string h800 =
      "estimate --model tests/data/hf/deepseek-v3.json --cluster "
      "hw_profiles/dgx-h800.yaml --plan \"tp=8,pp=1,dp=256,ep=256,mbs=1,"
      "gbs=4096,zero=1,sp=1\" --format json";
  const Run with = planner(h800), without = planner(h800 + " --mtp-layers 0");
  REQUIRE(with.rc == 0);
  REQUIRE(without.rc == 0);
  const auto jw = nlohmann::json::parse(with.out), jo = nlohmann::json::parse(without.out);
  CHECK(jw["context"]["model"]["mtp_layers"] == 1);
  CHECK(jw["context"]["model"]["mtp_params"].get<double>() ==
        doctest::Approx(11.61e9).epsilon(1e-3));
  CHECK(jo["context"]["model"]["mtp_params"].get<double>() == 0);
  CHECK(jw["iteration_time_s"].get<double>() > jo["iteration_time_s"].get<double>());
  check_error(h800 + " --mtp-layers 65", "option --mtp-layers: must be from 0 to 64, got 65");
}

TEST_CASE("expert knobs asked of a dense model: every plan refused, and the reason said") {
  for (const char* knob : {"--cuda-graphs 1", "--ep-comm-overlap 1", "--ep 2"}) {
    CAPTURE(knob);
    const Run r =
        planner("suggest " + kModel + " " + kCluster + " --gpus 64 --global-batch 512 " + knob);
    CHECK(r.rc == 2);
    CHECK(r.out.find("need a model with experts; gpt3-175b has none") != std::string::npos);
  }
}

TEST_CASE("every plan refused by the framework: the no-fit message says why, for some of them") {
  const Run moe = planner("suggest --model configs/models/qwen3-30b-a3b.json " + kCluster +
                          " --gpus 64 --global-batch 1024 --framework deepspeed");
  CHECK(moe.rc == 2);
  CHECK(moe.out.find("framework cannot run") != std::string::npos);  // the count
  CHECK(moe.out.find("\nthe framework cannot run plans such as --plan \"tp=") != std::string::npos);
  CHECK(moe.out.find("DeepSpeed is not planned for a model with experts here") !=
        std::string::npos);
  const Run gqa = planner("suggest --model configs/models/llama3-70b.yaml " + kCluster +
                          " --gpus 64 --global-batch 1024 --framework megatron-2021");
  CHECK(gqa.rc == 2);
  CHECK(gqa.out.find("Megatron-LM 2021 has no grouped-query attention") != std::string::npos);
  // Several reasons, the most frequent among the sampled refusals first: the schedule asked for
  // is what no plan can change, not the ZeRO stage of the first plan tried.
  const Run many = planner("suggest --model configs/models/llama3-8b.yaml " + kCluster +
                           " --gpus 8 --global-batch 64 --framework deepspeed --schedule "
                           "interleaved");
  CHECK(many.rc == 2);
  const size_t interleaved = many.out.find("DeepSpeed's pipeline engine has no interleaved"),
               zero = many.out.find("use zero=1");
  CHECK(interleaved != std::string::npos);
  CHECK(interleaved < zero);
  // --framework all: each framework's reasons, named.
  const Run all = planner("suggest --model configs/models/llama3-8b.yaml " + kCluster +
                          " --gpus 8 --global-batch 64 --framework all --loss-fusion te");
  CHECK(all.rc == 2);
  for (const char* f : {"megatron", "deepspeed", "torchtitan"}) {
    CAPTURE(f);
    CHECK(all.out.find(std::string("\n--framework ") + f + " cannot run plans such as --plan") !=
          std::string::npos);
  }
  // A no-fit for memory alone names no framework refusal.
  const Run mem = planner("suggest " + kModel + " " + kCluster +
                          " --gpus 32 --global-batch 64 --offload-optimizer none "
                          "--offload-params none");
  CHECK(mem.rc == 2);
  CHECK(mem.out.find("plans such as") == std::string::npos);
}

TEST_CASE("a model that fits no plan says how far the closest is and what would help") {
  const Run r =
      planner("suggest " + kModel + " " + kCluster +
              " --gpus 32 --global-batch 64 --offload-optimizer none --offload-params none");
  CHECK(r.rc == 2);
  CHECK(r.out.rfind("planner: error: no plan fits: ", 0) == 0);
  CHECK(r.out.find("the closest plan needs") != std::string::npos);
  CHECK(r.out.find("at least 37 GPUs of 80 GiB") != std::string::npos);
  CHECK(r.out.find("offload_optimizer=cpu") != std::string::npos);  // a remedy, with its GiB
  // With offload in the search (the default), GPT-3 175B plans on those 32 GPUs.
  const Run off = planner("suggest " + kModel + " " + kCluster + " --gpus 32 --global-batch 64");
  CHECK(off.rc == 0);
  CHECK(off.out.find("offload_optimizer=cpu") != std::string::npos);
}

TEST_CASE("usage errors exit 2, --version exits 0") {
  CHECK(planner("suggest " + kModel + " " + kCluster).rc == 2);  // --global-batch missing
  CHECK(planner("frobnicate").rc == 2);
  const Run v = planner("--version");
  CHECK(v.rc == 0);
  CHECK(v.out.rfind("planner ", 0) == 0);
}

TEST_CASE("regress: table, json, explain, tolerance and malformed files") {
  const std::string cases = "--cases tests/data/published-runs.csv";
  const Run t = planner("regress " + cases);
  REQUIRE(t.rc == 0);
  CHECK(t.out.find("mean absolute error") != std::string::npos);
  const Run j = planner("regress " + cases + " --format json");
  REQUIRE(j.rc == 0);
  const auto js = nlohmann::json::parse(j.out);
  CHECK(js.contains("mean_abs_error_pct"));
  CHECK(js.contains("max_abs_error_pct"));
  REQUIRE(js["rows"].size() == 49);
  for (const char* k :
       {"id", "plan", "predicted_iter_time_s", "predicted_tflops_per_gpu", "error_pct"})
    CHECK(js["rows"][0].contains(k));
  const Run e = planner("regress " + cases + " --explain meg24-h100-05");
  CHECK(e.rc == 0);
  CHECK(e.out.find("time breakdown") != std::string::npos);
  CHECK(e.out.find("measured   ") != std::string::npos);
  CHECK(planner("regress " + cases + " --tolerance 0.01").rc == 1);
  // Leave one source out: a cv_error_pct per row, a fold per source, its own gate.
  const Run cv = planner("regress " + cases + " --cv source --format json");
  REQUIRE(cv.rc == 0);
  const auto jc = nlohmann::json::parse(cv.out);
  for (const auto& row : jc["rows"]) CHECK(row.contains("cv_error_pct"));
  CHECK(jc["cv"]["folds"].size() == 4);
  CHECK(jc["cv"]["mean_abs_error_pct"].get<double>() >= 0);
  CHECK(planner("regress " + cases + " --cv source --cv-tolerance 0.01").rc == 1);
  // One source alone: nothing to refit on without it, so no cross-validated figure (a fit on no
  // rows once gave the grid's lowest efficiency and a 179% "cross-validated" error), and a
  // --cv-tolerance gate fails rather than pass on nothing.
  const std::string lone = "--cases tests/data/bridge-bf16-dense-check.csv --cv source";
  const Run one = planner("regress " + lone + " --format json");
  REQUIRE(one.rc == 0);
  const auto j1 = nlohmann::json::parse(one.out);
  CHECK(j1["cv"]["rows_cross_validated"] == 0);
  CHECK(j1["cv"]["mean_abs_error_pct"].is_null());
  CHECK(j1["cv"]["folds"][0]["fitted"] == false);
  CHECK_FALSE(j1["rows"][0].contains("cv_error_pct"));
  CHECK(planner("regress " + lone).out.find("none: no other source to refit on") !=
        std::string::npos);
  CHECK(planner("regress " + lone + " --cv-tolerance 50").rc == 1);
  CHECK(jc["cv"]["rows_cross_validated"] == 49);
  // The committed bands are the current model's (cmake --build build --target update_bands).
  const std::string bands = (std::filesystem::temp_directory_path() /
                             ("planner_cli_bands_" + std::to_string(::getpid()) + ".csv"))
                                .string();
  REQUIRE(planner("regress " + cases + " --cv source --write-bands " + bands).rc == 0);
  CHECK(cli_run::slurp(bands) == cli_run::slurp(PLANNER_SOURCE_DIR "/configs/accuracy/bands.csv"));
  std::filesystem::remove(bands);
  check_error("regress " + cases + " --write-bands " + bands,
              "option --write-bands: needs --cv source or --cv shipped (the bands are its errors)");
  // A model with experts: the MoE runs and checks together (two files), nothing refitted, each
  // source's band from the others; the committed moe-bands.csv is theirs.
  const std::string moe_cases =
      "--cases tests/data/published-moe-runs.csv tests/data/moe-bf16-checks.csv --cv shipped";
  REQUIRE(planner("regress " + moe_cases + " --write-bands " + bands).rc == 0);
  CHECK(cli_run::slurp(bands) ==
        cli_run::slurp(PLANNER_SOURCE_DIR "/configs/accuracy/moe-bands.csv"));
  std::filesystem::remove(bands);
  const Run moe_run = planner("regress " + moe_cases + " --format json");
  REQUIRE(moe_run.rc == 0);
  const auto jm = nlohmann::json::parse(moe_run.out);
  CHECK(jm["rows"].size() == 14);
  CHECK(jm["cv"]["by"] == "shipped");
  CHECK(jm["cv"]["refit"] == false);
  CHECK(jm["cv"]["rows_cross_validated"] == 14);
  CHECK(jm["cv"]["mean_abs_error_pct"].get<double>() ==
        doctest::Approx(jm["mean_abs_error_pct"].get<double>()));
  for (const auto& row : jm["rows"]) CHECK(row["cv_error_pct"] == row["error_pct"]);
  CHECK(planner("regress " + moe_cases).out.find("# as shipped: nothing refitted") !=
        std::string::npos);
  // A failing run writes no bands (a file of nothing would replace the shipped one).
  CHECK(planner("regress " + moe_cases + " --tolerance 1 --write-bands " + bands).rc == 1);
  CHECK_FALSE(std::filesystem::exists(bands));
  // The same file twice: its first id again, named with both files.
  check_error("regress --cases tests/data/moe-bf16-checks.csv tests/data/moe-bf16-checks.csv",
              "tests/data/moe-bf16-checks.csv:2: key 'id': duplicate id "
              "'mbskill-qwen3-30b-hybridep-overlap' "
              "(first in tests/data/moe-bf16-checks.csv)");
  // Each banded row: its range, whether the measurement fell inside; the count in the table.
  for (const auto& row : jc["rows"])
    if (row.contains("predicted_low_s")) {
      CHECK(row["predicted_low_s"].get<double>() <= row["predicted_high_s"].get<double>());
      const double m = row.contains("measured_iter_time_s_derived")
                           ? row["measured_iter_time_s_derived"].get<double>()
                           : row["measured_iter_time_s"].get<double>();
      CHECK(row["inside_band"] == (m >= row["predicted_low_s"].get<double>() &&
                                   m <= row["predicted_high_s"].get<double>()));
    }
  CHECK(planner("regress " + cases + " --cv source")
            .out.find("# cross-validated: mean absolute "
                      "error ") != std::string::npos);
  check_error("regress " + cases + " --explain nope", "option --explain: no row with id 'nope'");
  check_error("regress --cases README.md",
              "README.md:1: expected column 1 to be 'id', found '# planner'");
}

namespace {

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string fresh_out(const std::string& name) {
  const auto d = std::filesystem::temp_directory_path() /
                 ("planner_cli_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  return d.string();
}

}  // namespace

TEST_CASE("emit writes the golden Megatron-LM files and lists them") {
  const std::string out = fresh_out("emit");
  const Run r =
      planner("emit " + kModel + " " + kCluster +
              " --plan \"tp=8,pp=8,dp=16,mbs=1,gbs=1536,vpp=3,zero=1,recompute=selective,sp=1\""
              " --framework megatron --out " +
              out + "/run");
  REQUIRE(r.rc == 0);
  CHECK(r.out == out + "/run/megatron_torchrun.sh\n" + out + "/run/megatron_sbatch.sh\n");
  for (const char* f : {"megatron_torchrun.sh", "megatron_sbatch.sh"})
    CHECK(slurp(out + "/run/" + f) == slurp(PLANNER_SOURCE_DIR
                                            "/tests/data/golden/megatron-gpt3-175b-a100x1024/" +
                                            std::string(f)));
  std::filesystem::remove_all(out);
}

TEST_CASE("emit refuses what the framework cannot run, and writes nothing") {
  const std::string out = fresh_out("emit_refused");
  check_error(
      "emit " + kModel + " " + kCluster +
          " --plan \"tp=8,pp=8,dp=16,gbs=1536,schedule=gpipe\" --framework megatron --out " + out,
      "option --plan: Megatron-LM has no GPipe schedule (its pipelines run 1F1B); use "
      "schedule=1f1b");
  check_error(
      "emit " + kModel + " " + kCluster +
          " --plan \"tp=8,pp=8,dp=16,gbs=1536,zero=2\" --framework deepspeed --out " + out,
      "option --plan: DeepSpeed's pipeline engine refuses zero=2 with pp=8 (ZeRO-2 and ZeRO-3 are "
      "incompatible with pipeline parallelism); use zero<=1 or pp=1");
  check_error(
      "emit " + kModel + " " + kCluster +
          " --plan \"tp=8,pp=8,dp=16,gbs=1536\" --framework jax --out " + out,
      "option --framework: unknown framework 'jax' (expected megatron, deepspeed or torchtitan)");
  const Run oom = planner("emit " + kModel + " " + kCluster +
                          " --plan \"tp=8,pp=1,dp=1,gbs=8\" --framework megatron --out " + out);
  CHECK(oom.rc == 2);
  CHECK(oom.out.rfind("planner: error: option --plan: out of memory: the plan needs ", 0) == 0);
  CHECK(!std::filesystem::exists(out));
}

TEST_CASE("suggest --emit deepspeed ranks and predicts on the stack DeepSpeed runs, and says so") {
  const std::string out = fresh_out("suggest_emit_h100");
  // A profile written before the hardware/software split: its software block asks for the TP and
  // parameter-gather overlaps, which DeepSpeed lacks (a hardware-only profile gives DeepSpeed's
  // own stack, and no such line).
  const Run r = planner(
      "suggest --model configs/models/llama3-70b.yaml --cluster "
      "tests/data/legacy/dgx-h100-80gb.yaml --gpus 64 --global-batch 128 --top 3 --emit deepspeed "
      "--out " +
      out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("tests/data/legacy/dgx-h100-80gb.yaml: its software block is read as the "
                   "default execution choices") != std::string::npos);
  const std::string launcher = slurp(out + "/deepspeed_launch.sh");
  CHECK(launcher.find(
            "# stack      DeepSpeed runs without the profile's software.overlap_tp_comm and "
            "overlap_param_gather: predicted without them\n") != std::string::npos);
  // The header's prediction is rank 1's time (the iter_s column), the plan it emits.
  const size_t at = launcher.find("# predicted  iteration ");
  REQUIRE(at != std::string::npos);
  const double secs = std::stod(launcher.substr(at + 23));
  CHECK(std::stod(table_cell(r.out, 1, "iter_s")) == doctest::Approx(secs).epsilon(1e-4));
  // The trace is simulated on the same stack: `estimate --framework deepspeed` of the emitted
  // plan traces the same iteration; on Megatron-LM's stack (TP communication overlapped) a plan
  // both run ends sooner than on DeepSpeed's.
  const Run t = planner(
      "suggest --model configs/models/llama3-70b.yaml --cluster hw_profiles/dgx-h100-80gb.yaml "
      "--gpus 64 --global-batch 128 --top 1 --emit deepspeed --out " +
      out + "2 --trace " + out + "/trace.json");
  REQUIRE(t.rc == 0);
  const size_t p = launcher.find("# plan       --plan \"");
  REQUIRE(p != std::string::npos);
  const std::string plan = launcher.substr(p + 21, launcher.find('"', p + 21) - p - 21);
  const std::string est =
      "estimate --model configs/models/llama3-70b.yaml --cluster hw_profiles/dgx-h100-80gb.yaml ";
  const Run same =
      planner(est + "--framework deepspeed --plan \"" + plan + "\" --trace " + out + "/ds.json");
  REQUIRE(same.rc == 0);
  const std::string both = "tp=8,pp=4,dp=2,mbs=1,gbs=128,zero=1,recompute=selective,sp=1";
  const Run ds1 =
      planner(est + "--framework deepspeed --plan " + both + " --trace " + out + "/ds1.json");
  const Run mg1 = planner(est + "--plan " + both + " --trace " + out + "/plain.json");
  REQUIRE(ds1.rc == 0);
  REQUIRE(mg1.rc == 0);
  auto trace_end = [](const std::string& path) {
    double end = 0;
    const nlohmann::json trace = nlohmann::json::parse(slurp(path));
    for (const auto& e : trace["traceEvents"])
      if (e.contains("dur")) end = std::max(end, e["ts"].get<double>() + e["dur"].get<double>());
    return end;
  };
  CHECK(trace_end(out + "/trace.json") == doctest::Approx(trace_end(out + "/ds.json")));
  CHECK(trace_end(out + "/ds1.json") > 1.05 * trace_end(out + "/plain.json"));
  std::filesystem::remove_all(out + "2");
  std::filesystem::remove_all(out);
}

TEST_CASE("suggest --emit writes the top plan's DeepSpeed files") {
  const std::string out = fresh_out("suggest_emit");
  const std::string search =
      "suggest " + kModel + " " + kCluster + " --gpus 1024 --global-batch 1536 --top 3";
  const Run r = planner(search + " --emit deepspeed --out " + out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("planner: wrote deepspeed launch files for plan ") != std::string::npos);
  const std::string launcher = slurp(out + "/deepspeed_launch.sh");
  const size_t at = launcher.find("# plan       --plan \"");
  REQUIRE(at != std::string::npos);
  const std::string plan = launcher.substr(at + 13, launcher.find('\n', at) - at - 13);
  CHECK(r.out.find(plan) != std::string::npos);  // one of the ranked rows
  CHECK(std::filesystem::exists(out + "/ds_config.json"));
  check_error(search + " --emit megatron",
              "option --out: required with --emit (the directory for the files)");
  check_error(search + " --out " + out,
              "option --emit: required with --out (megatron, deepspeed or torchtitan)");
  check_error(
      search + " --emit jax --out " + out,
      "option --emit: unknown framework 'jax' (expected megatron, deepspeed or torchtitan)");
  std::filesystem::remove_all(out);
}

TEST_CASE("hostile inputs end in one message and exit 2, never a crash or a hang") {
  namespace fs = std::filesystem;
  const fs::path dir =
      fs::temp_directory_path() / ("planner-hostile-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto write = [&](const char* name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  };
  const std::string key = write("key.yaml", "name: x\n[a, b]: 1\n");
  const std::string dup = write("dup.yaml", "name: x\nname: y\nlayers: 2\n");
  const std::string huge = write("huge.yaml",
                                 "name: x\nlayers: 2000000000\nhidden: 64\nheads: 4\nffn: 256\n"
                                 "swiglu: false\nvocab: 100\nseq_len: 64\n");
  const std::string inject = write("inject.yaml",
                                   "name: \"x\\necho INJECTED\"\nlayers: 2\nhidden: 64\nheads: 4\n"
                                   "ffn: 256\nswiglu: false\nvocab: 100\nseq_len: 64\n");
  const std::string small = "--model configs/models/gpt3-1.3b.yaml " + kCluster;
  const std::vector<std::string> cases = {
      "estimate " + small + " --plan \"tp=8,pp=1,dp=4,mbs=1073741824,gbs=8\"",
      "estimate " + small + " --plan \"tp=65536,pp=65536\" --global-batch 8",
      "suggest " + small + " --gpus 32 --global-batch 64 --mbs 1073741824",
      "suggest " + small + " --gpus 64 --global-batch 512 --vpp 1-100000 --pp 1-1000",
      "suggest " + small + " --gpus 32 --global-batch 64 --top 0",
      "suggest " + small + " --gpus 32 --global-batch 64 --memory-limit-GiB -5",
      "estimate " + small + " --plan \"pp=4,schedule=interleaved\" --global-batch 64 --gpus 32",
      "suggest --model " + key + " " + kCluster + " --global-batch 8",
      "suggest --model " + dup + " " + kCluster + " --global-batch 8",
      "suggest --model " + huge + " " + kCluster + " --global-batch 8",
      "suggest --model " + inject + " " + kCluster + " --global-batch 8",
      "suggest --model configs/models " + kCluster + " --global-batch 8",
  };
  for (const std::string& c : cases) {
    CAPTURE(c);
    const Run r = planner(c);
    CHECK(r.rc == 2);
    CHECK(!r.out.empty());
    CHECK(r.out.find("internal error") == std::string::npos);
  }
  fs::remove_all(dir);
}

TEST_CASE("suggest --framework: the table says which framework; emit writes rank 1 as listed") {
  const std::string out = fresh_out("suggest_framework");
  const std::string s =
      "suggest --model configs/models/llama3-70b.yaml --cluster hw_profiles/dgx-h100-80gb.yaml "
      "--gpus 64 --global-batch 128";
  // Was exit 2: "none of the 3 listed plans can be run by megatron".
  const Run r = planner(s + " --top 3 --emit megatron --out " + out);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("# for     Megatron-LM d98e8a64 (--framework megatron): only plans it runs are "
                   "ranked, on its execution stack\n") != std::string::npos);
  CHECK(r.out.find("planner: wrote megatron launch files for plan 1 to ") != std::string::npos);
  CHECK(r.out.find("is not expressible") == std::string::npos);  // no retries
  // The header is the table's row 1: same plan, same time, to the table's precision.
  const std::string launcher = slurp(out + "/megatron_torchrun.sh");
  const size_t row = r.out.find("\n     1 ");
  REQUIRE(row != std::string::npos);
  const std::string line = r.out.substr(row + 1, r.out.find('\n', row + 1) - row - 1);
  const std::string plan = line.substr(line.find("--plan \""));
  CHECK(launcher.find("# plan       " + plan + "\n") != std::string::npos);
  const size_t at = launcher.find("# predicted  iteration ");
  REQUIRE(at != std::string::npos);
  CHECK(std::stod(launcher.substr(at + 23)) ==
        doctest::Approx(std::stod(table_cell(r.out, 1, "iter_s"))).epsilon(1e-4));
  // The table shows cp and schedule, as the plan says them.
  CHECK(plan.find("schedule=" + table_cell(r.out, 1, "schedule") + ",") != std::string::npos);
  CHECK(table_cell(r.out, 1, "cp") == "1");
  std::filesystem::remove_all(out);

  const Run all = planner(s + " --framework all --top 1000");
  REQUIRE(all.rc == 0);
  CHECK(all.out.find(" framework  plan\n") != std::string::npos);
  CHECK(all.out.find(" megatron   --plan ") != std::string::npos);
  CHECK(all.out.find(" deepspeed  --plan ") != std::string::npos);
  const nlohmann::json j = nlohmann::json::parse(planner(s + " --framework all --format json").out);
  CHECK(j["frameworks"] == nlohmann::json::array({"megatron", "deepspeed", "torchtitan"}));
  for (const auto& p : j["plans"])
    CHECK((p["framework"] == "megatron" || p["framework"] == "deepspeed" ||
           p["framework"] == "torchtitan"));
  const std::string csv = planner(s + " --framework deepspeed --format csv").out;
  CHECK(csv.find(",optimizer_s,offload_s,framework,plan\n") != std::string::npos);
  CHECK(csv.find(",deepspeed,\"tp=") != std::string::npos);

  check_error(s + " --framework megatron --emit deepspeed --out " + out,
              "option --emit: the plans are ranked for --framework megatron; --emit deepspeed "
              "needs --framework deepspeed or all");
  check_error(s + " --framework jax",
              "option --framework: unknown framework 'jax' (expected megatron, deepspeed, "
              "torchtitan, megatron-2021, deepspeed-2021 or megatron-2022, or all)");
  check_error("estimate " + std::string("--model configs/models/llama3-70b.yaml --cluster "
                                        "hw_profiles/dgx-h100-80gb.yaml --plan "
                                        "tp=8,pp=2,dp=4,gbs=128,schedule=gpipe"),
              "option --plan: Megatron-LM has no GPipe schedule (its pipelines run 1F1B); use "
              "schedule=1f1b (model configs/models/llama3-70b.yaml, cluster "
              "hw_profiles/dgx-h100-80gb.yaml)");
  CHECK(!std::filesystem::exists(out));
}

TEST_CASE("advise: each cluster and framework's best plan, a recommendation, the source's rules") {
  const Run r = planner(
      "advise --model configs/models/llama3-8b.yaml --cluster hw_profiles/dgx-a100-80gb.yaml "
      "--cluster hw_profiles/dgx-h100-80gb.yaml --global-batch 512 --gpu-hour-usd 2 --format json");
  REQUIRE(r.rc == 0);
  const auto j = nlohmann::json::parse(r.out);
  CHECK(j["size_class"] == "1-10B");
  REQUIRE(j["rows"].size() == 6);  // two clusters x megatron, deepspeed, torchtitan
  for (const auto& row : j["rows"]) {
    CHECK(row["gpus"] == 8);  // the source's one node for this size
    CHECK(row["cost_usd"].get<double>() ==
          doctest::Approx(2 * row["train_gpu_hours"].get<double>()));
  }
  CHECK(j["recommendation"]["cluster"] == "dgx-h100-80gb");  // fewer GPU-hours at one price
  CHECK(j["recommendation"]["rule_check"].get<std::string>().find("planner") != std::string::npos);
  CHECK(j["recommendation"]["hardware_check"].get<std::string>().find("A100 80GB") !=
        std::string::npos);
  const Run none = planner("advise --model configs/models/llama3-8b.yaml --global-batch 0");
  CHECK(none.rc == 2);
  // --mtp-layers as estimate's: the model's modules counted, named in the header and the JSON.
  const Run mtp = planner(
      "advise --model configs/models/llama3-8b.yaml --cluster hw_profiles/dgx-h100-80gb.yaml "
      "--global-batch 512 --mtp-layers 1 --format json");
  REQUIRE(mtp.rc == 0);
  const auto jm = nlohmann::json::parse(mtp.out);
  CHECK(jm["model"]["mtp_layers"] == 1);
  CHECK(jm["model"]["mtp_params"].get<double>() > 0.2e9);  // a layer, eh_proj, norms
  CHECK(j["model"]["mtp_layers"] == 0);
  CHECK(planner("advise --model configs/models/llama3-8b.yaml --mtp-layers 65").rc == 2);
  // A precision: rows say which GPU has no rate for it and which framework no mode, not that no
  // plan fits; when no row has a plan, the reasons with where each held.
  const Run mx = planner(
      "advise --model configs/models/llama3-8b.yaml --cluster hw_profiles/dgx-h100-80gb.yaml "
      "--cluster hw_profiles/dgx-b200.yaml --global-batch 512 --dtype mxfp8 --format json");
  REQUIRE(mx.rc == 0);
  const auto jx = nlohmann::json::parse(mx.out);
  REQUIRE(jx["rows"].size() == 6);
  CHECK(jx["recommendation"]["cluster"] == "dgx-b200");
  const std::string text =
      planner(
          "advise --model configs/models/llama3-8b.yaml --cluster hw_profiles/dgx-h100-80gb.yaml "
          "--cluster hw_profiles/dgx-b200.yaml --global-batch 512 --dtype mxfp8")
          .out;
  CHECK(text.find("H100-SXM5-80GB has no mxfp8 tensor-core peak") != std::string::npos);
  CHECK(text.find("the DeepSpeed config has no mxfp8 mode") != std::string::npos);
  CHECK(text.find("no plan fits") == std::string::npos);
  // A model a framework is not planned for: its reason in the row.
  const std::string moe = planner(
                              "advise --model configs/models/qwen3-30b-a3b.json --cluster "
                              "hw_profiles/dgx-h100-80gb.yaml "
                              "--global-batch 512")
                              .out;
  CHECK(moe.find("DeepSpeed is not planned for a model with experts here") != std::string::npos);
  cli_run::check_error(
      "advise --model configs/models/llama3-8b.yaml --cluster hw_profiles/dgx-a100-80gb.yaml "
      "--global-batch 512 --dtype fp8",
      "no plan fits on any cluster for any framework:\n  dgx-a100-80gb/megatron, "
      "dgx-a100-80gb/deepspeed, dgx-a100-80gb/torchtitan: A100-SXM4-80GB has no fp8 "
      "tensor-core peak");
  // The same answer as one HTML page, the pick's row marked.
  const std::string html = cli_run::scratch("advise") + "/advise.html";
  const Run page = planner(
      "advise --model configs/models/llama3-8b.yaml --cluster hw_profiles/dgx-a100-80gb.yaml "
      "--cluster hw_profiles/dgx-h100-80gb.yaml --global-batch 512 --report " +
      html);
  REQUIRE(page.rc == 0);
  const std::string h = cli_run::slurp(html);
  CHECK(h.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK(h.find("<tr class=\"top\"><td class=\"l\">dgx-h100-80gb</td><td>megatron</td>") !=
        std::string::npos);
  CHECK(h.find("torchtitan") != std::string::npos);
  CHECK(h.find("<h2>Recommendation</h2>") != std::string::npos);
  CHECK(h.find("</html>") != std::string::npos);
}

TEST_CASE("estimate says when DeepSpeed's 1-bit Adam would pay, and emits it") {
  const std::string base =
      "estimate --model configs/models/gpt3-1.3b.yaml --cluster hw_profiles/dgx-a100-80gb.yaml "
      "--gpus 64 --dtype fp16 --framework deepspeed ";
  const Run exposed = planner(base + "--plan \"tp=1,pp=1,mbs=1,gbs=64,overlap_grad_reduce=0\"");
  REQUIRE(exposed.rc == 0);
  CHECK(
      exposed.out.find("[info] DP communication is 20% of the iteration: DeepSpeed's 1-bit Adam") !=
      std::string::npos);
  CHECK(exposed.out.find("grad_compression=onebit_adam") != std::string::npos);
  // Hidden behind the backward, the reduction leaves nothing for compression to win.
  const Run hidden = planner(base + "--plan \"tp=1,pp=1,mbs=1,gbs=64\"");
  REQUIRE(hidden.rc == 0);
  CHECK(hidden.out.find("1-bit Adam") == std::string::npos);
  CHECK(hidden.out.find("8-bit") == std::string::npos);
}

TEST_CASE("estimate prices the design source's 8-bit gradient all-reduce where it would pay") {
  const Run r = planner(
      "estimate --model configs/models/gpt3-1.3b.yaml --cluster hw_profiles/dgx-a100-80gb.yaml "
      "--gpus 64 --plan \"tp=1,pp=1,mbs=1,gbs=64,overlap_grad_reduce=0\"");
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("[info] DP communication is 30% of the iteration: the design source's 8-bit "
                   "gradient all-reduce with bucketed scales would take 0.166 s (14% less)") !=
        std::string::npos);
  CHECK(r.out.find("none of the frameworks planner writes launch files for runs it") !=
        std::string::npos);
}

TEST_CASE("suggest searches TP across nodes where nothing runs inside one NVLink domain") {
  // One layer of hidden 49,152 and a global batch of one sequence: on 16 GPUs no plan with tp <= 8
  // uses them all (pp <= 1 layer, dp <= 1 sequence), so tp=16 across two nodes is searched.
  const std::string dir = cli_run::scratch("wide");
  std::ofstream(dir + "/wide.yaml") << "name: wide\nlayers: 1\nhidden: 49152\nheads: 128\n"
                                       "ffn: 196608\nswiglu: false\nvocab: 50257\nseq_len: 2048\n";
  const std::string base = "suggest --model " + dir +
                           "/wide.yaml --cluster hw_profiles/dgx-a100-80gb.yaml --gpus 16 "
                           "--global-batch 1 --top 1";
  const Run r = planner(base);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("# TP across nodes searched too: no plan ran with TP inside one NVLink domain "
                   "of 8 GPUs\n") != std::string::npos);
  CHECK(r.out.find("--plan \"tp=16,pp=1,dp=1,") != std::string::npos);
  // The plan's column runs as copied: estimate refuses tp=16 on 8-GPU nodes without the flag.
  CHECK(r.out.find("\" --tp-across-nodes\n") != std::string::npos);
  const auto j = nlohmann::json::parse(planner(base + " --format json").out);
  CHECK(j["tp_across_nodes_searched"] == true);
  // A TP list the user gave is searched as given: nothing runs.
  CHECK(planner(base + " --tp 1-8").rc == 2);
  // Where a plan runs inside a node, the search stays there.
  const auto inside =
      nlohmann::json::parse(planner("suggest " + kModel + " " + kCluster +
                                    " --gpus 64 --global-batch 64 --top 1 --format json")
                                .out);
  CHECK(inside["tp_across_nodes_searched"] == false);
}

TEST_CASE("estimate names ZeRO++ where a ZeRO-3 plan's communication is exposed") {
  const std::string base =
      "estimate --model configs/models/gpt3-175b.yaml --cluster hw_profiles/dgx-a100-80gb.yaml "
      "--gpus 1536 --dtype fp16 --framework deepspeed --plan ";
  const Run exposed = planner(base + "\"tp=1,pp=1,mbs=1,gbs=1536,zero=3,recompute=full\"");
  REQUIRE(exposed.rc == 0);
  CHECK(exposed.out.find("on DeepSpeed's stack ZeRO++ would take") != std::string::npos);
  CHECK(exposed.out.find(",zeropp=1\"") != std::string::npos);
  // Once chosen, or where the reduction hides behind the compute, nothing is said.
  const Run chosen = planner(base + "\"tp=1,pp=1,mbs=1,gbs=1536,zero=3,recompute=full,zeropp=1\"");
  REQUIRE(chosen.rc == 0);
  CHECK(chosen.out.find("ZeRO++ would") == std::string::npos);
  CHECK(planner(base + "\"tp=1,pp=1,mbs=1,gbs=1536,zero=1,recompute=full,zeropp=1\"").rc == 2);
}

TEST_CASE("validate --mtp-layers: the module's embedding copy and its all-reduce in the workload") {
  // Llama 3 8B (untied) on two stages: an MTP module puts a copy of the embedding on the last
  // stage, whose gradient is all-reduced with the first stage's (Megatron-Core); none without.
  const std::string out = cli_run::scratch("validate-mtp") + "/w.json";
  auto collectives = [&](int mtp) {
    const Run r = planner(
        "validate --model configs/models/llama3-8b.yaml --cluster hw_profiles/dgx-h100-80gb.yaml "
        "--plan \"tp=2,pp=2,dp=2,mbs=1,gbs=64,zero=1,sp=1\" --mtp-layers " +
        std::to_string(mtp) + " --workload-out " + out);
    REQUIRE(r.rc == 0);
    std::vector<std::string> names;
    const auto w = nlohmann::json::parse(cli_run::slurp(out));
    for (const auto& d : w["dp"]) names.push_back(d["name"].get<std::string>());
    return names;
  };
  const auto with = collectives(1), without = collectives(0);
  CHECK(std::find(with.begin(), with.end(), "tied_embedding_allreduce") != with.end());
  CHECK(std::find(without.begin(), without.end(), "tied_embedding_allreduce") == without.end());
}
