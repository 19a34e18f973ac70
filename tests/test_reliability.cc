// End-to-end: every reproducer of shared/reliability/ (found by sanitizers and fuzzing) as a test
// of the planner binary. Each ends in a correct result (exit 0) or in exit 2 with one clear
// message; never exit 3, an abort (134), a segfault (139) or a hang. Inputs in
// tests/data/reliability/.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_run.h"

namespace {

namespace fs = std::filesystem;
using cli_run::check_error;
using cli_run::planner;
using cli_run::Run;

const std::string kData = "tests/data/reliability/";
const std::string kH200 = " --cluster hw_profiles/dgx-h200.yaml";
const std::string k13b = " --model configs/models/gpt3-13b.yaml";
const std::string k1b = " --model configs/models/gpt3-1.3b.yaml";

/// What the planner prints for gpt3-1.3b on the H200 profile, with the model file named `as`.
std::string estimate_of(const std::string& model_arg) {
  return planner("estimate --model " + model_arg + kH200 + " --plan tp=1,pp=1,dp=8,mbs=1,gbs=64")
      .out;
}

}  // namespace

TEST_CASE("completion bash writes its script and exits 0 (was a heap-use-after-free)") {
  const Run r = planner("completion bash");
  CHECK(r.rc == 0);
  CHECK(r.out == cli_run::slurp(PLANNER_SOURCE_DIR "/configs/completion/planner.bash"));
}

TEST_CASE("loader exceptions are input errors with file, line and key, not exit 3") {
  check_error("estimate --model " + kData + "hf-number-overflow.json" + kH200 + " --plan tp=1",
              kData +
                  "hf-number-overflow.json:1: key 'n_layer': number out of range (number overflow "
                  "parsing '1e400')");
  check_error("regress --cases " + kData + "cases-long-cluster-name.csv",
              kData +
                  "cases-long-cluster-name.csv:2: column 'cluster': expected a profile name (up to "
                  "128 letters, digits, '.', '_' or '-', not starting with '.'), got "
                  "'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx...'");
}

TEST_CASE("a huge trace is refused before any work, with its size and the limit") {
  const std::string dir = cli_run::scratch("trace_limit");
  check_error(
      "estimate" + k13b + kH200 + " --plan tp=8,pp=8,mbs=1,gbs=2097152 --gpus 512 --trace " + dir +
          "/big.json",
      "option --trace: the trace of this plan would hold 7.86e+06 events (about 1227 MB; the "
      "limit is 2000000): the schedule repeats, so trace a smaller global batch");
  CHECK(fs::is_empty(dir));
  // Within the limit the trace is streamed to the file, complete.
  const Run ok = planner("estimate" + k13b + kH200 +
                         " --plan tp=8,pp=8,mbs=1,gbs=8192 --gpus 512 --trace " + dir + "/k.json");
  CHECK(ok.rc == 0);
  const std::string trace = cli_run::slurp(dir + "/k.json");
  CHECK(trace.rfind("{\"displayTimeUnit\":\"ms\"", 0) == 0);
  CHECK(trace.substr(trace.size() - 4) == "\n]}\n");
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 1);  // no temporary
  fs::remove_all(dir);
}

TEST_CASE("counts are bounded before any arithmetic: no overflow, no blow-up") {
  check_error("estimate --model " + kData + "hf-gpt2-n_embd-overflow.json" + kH200 + " --plan tp=1",
              kData +
                  "hf-gpt2-n_embd-overflow.json:1: key 'n_embd': is implausibly large: the default "
                  "n_inner, 4 x 1073741824 = 4294967296, exceeds 4194304");
  check_error(
      "estimate --model " + kData + "model-vit-layers-int-overflow.yaml" + kH200 +
          " --plan tp=1,gbs=64",
      kData +
          "model-vit-layers-int-overflow.yaml:10: key 'components[0].layers': is implausibly "
          "large (2147483647 > 100000)");
  check_error("estimate --model " + kData + "model-vit-layers-1e8-hang.yaml" + kH200 +
                  " --plan tp=1,gbs=64",
              kData +
                  "model-vit-layers-1e8-hang.yaml:10: key 'components[0].layers': is implausibly "
                  "large (100000000 > 100000)");
  // A 27 KB list of ranges that would expand to 3e8 values.
  std::string gpus;
  for (int i = 0; i < 3000; ++i) gpus.append(i ? ",0-100000" : "0-100000");
  check_error(
      "estimate" + k1b + kH200 + " --plan tp=1,pp=1,mbs=1,gbs=64 --gpus " + gpus,
      "option --gpus: the list expands to more than 1048576 values; give fewer or narrower ranges");
  check_error("estimate --model /dev/zero" + kH200 + " --plan tp=1",
              "/dev/zero: larger than the limit of 16 MiB for an input file");
  // The simulator's task bound names itself.
  check_error(
      "estimate" + k1b + kH200 + " --plan tp=4,pp=2,dp=1,mbs=1,gbs=20000000 --gpus 8",
      "option --plan: pp x vpp x micro-batches = 40000000 tasks to simulate, over the limit of "
      "4000000 (fewer micro-batches: a larger mbs or dp, or a smaller global batch) (model "
      "configs/models/gpt3-1.3b.yaml, cluster hw_profiles/dgx-h200.yaml)");
}

TEST_CASE("the model file is read once: from a pipe and from a FIFO as from a file") {
  const std::string plain = estimate_of("configs/models/gpt3-1.3b.yaml");
  REQUIRE(plain.find("iteration time") != std::string::npos);
  auto same_but_name = [&](const std::string& out, const std::string& name) {
    std::string expected = plain;
    expected.replace(expected.find("configs/models/gpt3-1.3b.yaml"), 29, name);
    return out == expected;
  };
  const Run pipe = cli_run::shell("cat configs/models/gpt3-1.3b.yaml | " PLANNER_BINARY
                                  " estimate --model /dev/stdin" +
                                  kH200 + " --plan tp=1,pp=1,dp=8,mbs=1,gbs=64");
  CHECK(pipe.rc == 0);
  CHECK(same_but_name(pipe.out, "/dev/stdin"));
  const std::string dir = cli_run::scratch("fifo");
  REQUIRE(::mkfifo((dir + "/model").c_str(), 0600) == 0);
  const Run fifo = cli_run::shell("(cat configs/models/gpt3-1.3b.yaml > " + dir +
                                  "/model &); timeout 60 " + PLANNER_BINARY " estimate --model " +
                                  dir + "/model" + kH200 + " --plan tp=1,pp=1,dp=8,mbs=1,gbs=64");
  CHECK(fifo.rc == 0);  // 124 was the hang
  CHECK(same_but_name(fifo.out, dir + "/model"));
  fs::remove_all(dir);
}

TEST_CASE("non-finite and absurd numbers are refused with the range") {
  const std::string m = k13b + " --plan tp=8,gbs=512 --gpus 64 --cluster " + kData;
  check_error("estimate" + m + "cluster-curve-nan-accepted.yaml",
              kData +
                  "cluster-curve-nan-accepted.yaml:40: key 'network.intra_node.allreduce.curve': "
                  "expected [bytes, busbw_GBps] pairs with ascending bytes in [1, 1e+15] and busbw "
                  "in [1e-06, 100000]");
  check_error("estimate" + m + "cluster-hbm-1e308-accepted.yaml",
              kData +
                  "cluster-hbm-1e308-accepted.yaml:11: key 'gpu.hbm_GiB': must be in [0.1, 16384], "
                  "got 1e+308");
  check_error(
      "estimate" + m + "cluster-busbw-1e308-accepted.yaml",
      kData +
          "cluster-busbw-1e308-accepted.yaml:38: key 'network.intra_node.allreduce.busbw_GBps': "
          "must be in [0.01, 100000], got 1e+308");
  const std::string c = "compare" + k13b + kH200 + " --plan tp=8,pp=1,gbs=512 --gpus 64 --vary ";
  check_error(
      c + "'hbm_bw*1e300'",
      "option --vary: 'hbm_bw*1e300': the scaled hbm_bandwidth_GBps would be inf, outside [1, "
      "1e+06] (the range a profile may give)");
  check_error(c + "'peak_flops*1e-300'",
              "option --vary: 'peak_flops*1e-300': the scaled peak_tflops.fp16 would be 9.89e-298, "
              "outside [0.1, 1e+06] (the range a profile may give)");
  check_error(
      c + "'ib_busbw*1e308'",
      "option --vary: 'ib_busbw*1e308': the scaled inter_node busbw_GBps would be inf, outside "
      "[0.01, 100000] (the range a profile may give)");
  check_error(c + "'nvlink_busbw*1e308'",
              "option --vary: 'nvlink_busbw*1e308': the scaled intra_node busbw_GBps would be inf, "
              "outside [0.01, 100000] (the range a profile may give)");
  // Options: 0 and NaN are refused, not taken for "the default".
  const std::string e = "estimate" + k13b + kH200 + " --plan tp=8,gbs=512 --gpus 64";
  check_error(e + " --seq-len 0", "option --seq-len: must be from 1 to 16777216, got 0");
  check_error(e + " --memory-limit-GiB 0",
              "option --memory-limit-GiB: must be finite and in (0, 1e+06], got 0");
  check_error(e + " --memory-limit-GiB nan",
              "option --memory-limit-GiB: must be finite and in (0, 1e+06], got nan");
  check_error(
      "suggest" + k13b + kH200 + " --global-batch 1e8",
      "option --global-batch: expected an integer from 1 to 268435456, got '1e8' (write it in "
      "digits: 100000000)");
  check_error("regress --cases tests/data/published-runs.csv --tolerance nan",
              "option --tolerance: must be finite and in [0, 1000], got nan");
}

TEST_CASE("regress fails when it models no row, or skips rows unasked") {
  check_error(
      "regress --cases tests/data/published-runs.csv --profiles /nonexistent --tolerance 10",
      "option --profiles: /nonexistent is not a folder (of cluster profiles named as the cases' "
      "cluster column)");
  // A folder without the profiles the rows name: nothing modelled, exit 1 (a failed check).
  const std::string empty = cli_run::scratch("no_profiles");
  const Run none = planner("regress --cases tests/data/published-runs.csv --profiles " + empty +
                           " --tolerance 10");
  CHECK(none.rc == 1);
  CHECK(none.out.find("planner: regress modelled none of the 49 rows") != std::string::npos);
  // Only the A100 profile: the H100 rows are unsupported, which fails unless allowed.
  fs::copy_file(PLANNER_SOURCE_DIR "/hw_profiles/dgx-a100-80gb.yaml",
                empty + "/dgx-a100-80gb.yaml");
  const std::string some = "regress --cases tests/data/published-runs.csv --profiles " + empty;
  const Run partial = planner(some);
  CHECK(partial.rc == 1);
  CHECK(partial.out.find("planner: regress modelled 22 of 49 rows; 27 unsupported") !=
        std::string::npos);
  CHECK(planner(some + " --allow-unsupported").rc == 0);
  fs::remove_all(empty);
}

TEST_CASE("emit replaces its launch files together or not at all, and says so") {
  const std::string dir = cli_run::scratch("emit_set") + "/out";
  const std::string m = k1b + kH200 + " --framework megatron --out " + dir + " --plan ";
  REQUIRE(planner("emit" + m + "tp=1,pp=1,dp=8,mbs=1,gbs=64").rc == 0);
  const std::string old_torchrun = cli_run::slurp(dir + "/megatron_torchrun.sh");
  fs::remove(dir + "/megatron_sbatch.sh");
  fs::create_directories(dir + "/megatron_sbatch.sh/x");  // the second file cannot be replaced
  // The first file is renamed into place, the second fails, the first is put back.
  check_error("emit" + m + "tp=2,pp=1,dp=4,mbs=1,gbs=64",
              "option --out: cannot replace " + dir +
                  "/megatron_sbatch.sh: Is a directory; nothing "
                  "was replaced (" +
                  dir + " is as it was)");
  CHECK(cli_run::slurp(dir + "/megatron_torchrun.sh") == old_torchrun);              // still tp=1
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 2);  // no temporary
  fs::remove_all(fs::path(dir).parent_path());
}

TEST_CASE("deep nesting is named as such") {
  const std::string dir = cli_run::scratch("deep");
  std::ofstream(dir + "/deep.yaml")
      << "a: " << std::string(5000, '[') << std::string(5000, ']') << "\n";
  std::ofstream(dir + "/deep.json") << std::string(100, '[') << std::string(100, ']') << "\n";
  const Run y = planner("estimate --model " + dir + "/deep.yaml" + kH200 + " --plan tp=1");
  CHECK(y.rc == 2);
  CHECK(y.out.find("deep.yaml:1: YAML nested too deeply") != std::string::npos);
  check_error("estimate --model " + dir + "/deep.json" + kH200 + " --plan tp=1",
              dir + "/deep.json:1: invalid JSON: nested deeper than 64 levels");
  fs::remove_all(dir);
}

TEST_CASE("a name that is not UTF-8 gets U+FFFD in JSON output instead of exit 3 (fuzz finding)") {
  const std::string dir = cli_run::scratch("utf8");
  std::string model = cli_run::slurp(PLANNER_SOURCE_DIR "/configs/models/gpt3-1.3b.yaml");
  model.replace(model.find("name: gpt3-1.3b"), 15, "name: gpt3-\xff-1.3b");
  std::ofstream(dir + "/m.yaml") << model;
  const Run r = planner("estimate --model " + dir + "/m.yaml" + kH200 +
                        " --plan tp=1,pp=1,dp=8,mbs=1,gbs=64 --format json");
  CHECK(r.rc == 0);
  CHECK(r.out.find("gpt3-\xef\xbf\xbd-1.3b") != std::string::npos);
  fs::remove_all(dir);
}

TEST_CASE("a search's simulation has a budget; the candidates past it keep their closed form") {
  const Run r = planner("suggest" + k1b +
                        " --cluster hw_profiles/dgx-a100-80gb.yaml --gpus 8 --pp 2-8 "
                        "--global-batch 1000000 --top 3");
  CHECK(r.rc == 0);
  CHECK(r.out.find(" more by the closed form alone: the search's simulation budget (6e+06 tasks) "
                   "was spent\n") != std::string::npos);
  const Run j = planner("suggest" + k1b +
                        " --cluster hw_profiles/dgx-a100-80gb.yaml --gpus 8 --pp 2-8 "
                        "--global-batch 1000000 --top 3 --format json");
  CHECK(j.out.find("\"closed_form_only_candidates\": ") != std::string::npos);
}

TEST_CASE("a search too wide to finish in about a second is refused before it starts") {
  const std::string s =
      "suggest --model configs/models/gpt3-1.3b.yaml --cluster hw_profiles/dgx-a100-80gb.yaml ";
  check_error(s + "--gpus 64-4096 --global-batch 4096 --mbs 1-32",
              "the knob ranges span 533667840 plans, over the limit of 2e+08; narrow --pp, --vpp, "
              "--mbs, --tp or --ep");
  check_error(s + "--gpus 1024 --cp 1-1000 --mbs 1-1000 --global-batch 1536",
              "the knob ranges give 8e+07 combinations of GPU count, tp, cp, mbs, sp and pp, over "
              "the limit of 5e+06; narrow --gpus, --tp, --cp, --mbs or --pp");
  // 2.8e5 plans estimated in full: past the bound of a build with the sanitizers (1e5), inside a
  // plain build's (1e6, 0.4 s).
  const std::string wide = s + "--gpus 8-2048 --global-batch 1536 --cp 1,2,4,8";
#ifdef PLANNER_INSTRUMENTED  // limits::kSearchEstimates: 1e5 in a build with the sanitizers
  check_error(wide,
              "more than 1e+05 plans are structurally valid and would be estimated in full (one "
              "refused for memory counting 0.6); narrow the knob ranges or --gpus");
#else
  CHECK(planner(wide + " --top 1").rc == 0);
#endif
}

TEST_CASE("a mixture of experts' default search at a large batch fits a plain build's bound") {
  // Qwen3-30B-A3B on 64 H100s at 15,360 sequences: every divisor of the local batch up to 64 as
  // the micro-batch, 35k plans that fit and 305k refused for memory (2.2e5 estimates' worth),
  // 0.5 s; refused by the search's bound until it was 1e6 in a plain build.
  const Run r = planner(
      "suggest --model configs/models/qwen3-30b-a3b.json --cluster hw_profiles/dgx-h100-80gb.yaml "
      "--gpus 64 --global-batch 15360 --top 1 --format json");
#ifdef PLANNER_INSTRUMENTED  // limits::kSearchEstimates: 1e5 in a build with the sanitizers
  CHECK(r.rc == 2);
  CHECK(r.out.find("estimated in full") != std::string::npos);
#else
  REQUIRE(r.rc == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  // limits::kOutOfMemoryEstimateWeight: a plan refused for memory at 0.6 of an estimate.
  const double units =
      j["plans_ranked"].get<double>() + 0.6 * j["rejections"]["out of memory"].get<double>();
  CHECK(units > 100'000);
#endif
}

TEST_CASE("a large mixture of experts' default search fits the bound on estimates") {
  // Llama 4 Maverick (400B, 128 experts) on 256 H100s over the three splits the default search
  // tried before short_last: 8,230 plans fit and about 120,000 are refused for memory, each at
  // about 0.6 of a full estimate's time (limits::kOutOfMemoryEstimateWeight). Counted as full
  // estimates they passed the bound of 1e5 (still a build with the sanitizers' bound) and the
  // search was refused. (With short_last too the default passes 1e5 and fits a plain build's 1e6.)
  const Run r = planner(
      "suggest --model configs/models/llama4-maverick.json --cluster "
      "hw_profiles/dgx-h100-80gb.yaml --gpus 256 --global-batch 1024 --top 1 --format json "
      "--split even,short_ends,embed_loss");
  REQUIRE(r.rc == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["plans_ranked"].get<long>() > 1000);
  CHECK(j["rejections"]["out of memory"].get<long>() > 100000);  // limits::kSearchEstimates
}

TEST_CASE("vpp values past the layers are counted, not tried one by one") {
  // A million vpp values on 24 layers: all but the dozen that fit two stages are refused whatever
  // the other knobs, and counted at once (tried one by one, as a fuzzer found, this took over
  // 10 s under the sanitizers for a 37,537-value range).
  const Run r = planner(
      "suggest --model configs/models/gpt3-1.3b.yaml --cluster hw_profiles/dgx-a100-80gb.yaml "
      "--gpus 1024 --pp 2 --tp 8 --vpp 1-1048576 --mbs 1,2,4,8 --global-batch 1536 --split even "
      "--top 1 --format json");
  REQUIRE(r.rc == 0);
  const nlohmann::json j = nlohmann::json::parse(r.out);
  CHECK(j["rejections"]["vpp not dividing stage layers"].get<long long>() > 100'000'000);
  CHECK(j["plans"].size() == 1);
}

TEST_CASE("commands whose work grows with an input's length are bounded too") {
  const std::string dir = cli_run::scratch("many");
  const std::string cases = cli_run::slurp(PLANNER_SOURCE_DIR "/tests/data/published-runs.csv");
  const std::string header = cases.substr(0, cases.find('\n') + 1);
  const std::string row =
      cases.substr(header.size(), cases.find('\n', header.size()) + 1 - header.size());
  std::string many = header;
  for (int i = 0; i < 1001; ++i) many += row;
  std::ofstream(dir + "/many.csv") << many;
  check_error("regress --cases " + dir + "/many.csv",
              dir + "/many.csv:1002: more than 1000 rows (each is a search); split the file");
  std::string vary;
  for (int i = 0; i < 64; ++i) vary += " --vary zero=0";
  check_error("compare" + k13b + kH200 + " --plan tp=8,pp=1,gbs=512 --gpus 64" + vary,
              "option --vary: 65 columns (--cluster and --vary), over the limit of 64");
  fs::remove_all(dir);
}
