// End-to-end: the smaller frictions of issue 15 (item 8): typos, shipped names, batch suffixes,
// the messages of knobs that cannot fit, over-memory estimates, the attention header, noise and
// --distinct.
#include <doctest/doctest.h>

#include <cmath>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "cli_run.h"

using cli_run::check_error;
using cli_run::planner;
using cli_run::Run;

namespace {

const std::string kSmall =
    "--model configs/models/gpt3-1.3b.yaml --cluster hw_profiles/dgx-a100-80gb.yaml";
const std::string kGpt175 =
    "--model configs/models/gpt3-175b.yaml --cluster hw_profiles/dgx-a100-80gb.yaml";

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("an option or command typo names the nearest one, exit 2") {
  struct Typo {
    std::string args, word, nearest, command;
  };
  const std::string estimate_args = "estimate --modle configs/models/gpt3-1.3b.yaml --plan tp=1";
  for (const Typo& t : std::vector<Typo>{
           {"suggest " + kSmall + " --gpu 8 --global-batch 64", "--gpu", "--gpus", "suggest"},
           {"suggest " + kSmall + " --gpus 8 --global-bach 64", "--global-bach", "--global-batch",
            "suggest"},
           // The typo, not the required option it left out, is what the user is told.
           {estimate_args, "--modle", "--model", "estimate"},
           {"suggest " + kSmall + " --gpus 8 --global-batch 64 --topp=3", "--topp", "--top",
            "suggest"}})
    check_error(t.args, "option " + t.word + ": unknown option, did you mean " + t.nearest +
                            "? (planner " + t.command + " --help lists the options)");
  check_error("sugest " + kSmall + " --gpus 8 --global-batch 64",
              "unknown command 'sugest', did you mean 'suggest'? (planner --help lists the "
              "commands)");
  check_error("frobnicate",
              "unknown command 'frobnicate', expected one of suggest, estimate, regress, "
              "validate, emit, compare, completion (planner --help lists the commands)");
  check_error("suggest " + kSmall + " --gpus 8 --global-batch 64 --zzzzzzzz",
              "option --zzzzzzzz: unknown option (planner suggest --help lists the options)");
}

TEST_CASE("--model and --cluster take shipped names, from any working directory") {
  const Run here = planner(
      "estimate --model llama3-8b --cluster dgx-h100-80gb --plan \"tp=8,pp=1,dp=1,gbs=64\"");
  REQUIRE(here.rc == 0);
  CHECK(has(here.out, "# model   llama3-8b (configs/models/llama3-8b.yaml)"));
  CHECK(has(here.out, "# cluster dgx-h100-80gb (hw_profiles/dgx-h100-80gb.yaml)"));
  const Run elsewhere = cli_run::shell("cd / && " PLANNER_BINARY
                                       " estimate --model gpt3-1.3b --cluster dgx-a100-80gb "
                                       "--plan \"tp=1,pp=1,dp=8,gbs=64\"");
  REQUIRE(elsewhere.rc == 0);
  CHECK(has(elsewhere.out, "(" PLANNER_SOURCE_DIR "/configs/models/gpt3-1.3b.yaml)"));
  CHECK(has(elsewhere.out, "(" PLANNER_SOURCE_DIR "/hw_profiles/dgx-a100-80gb.yaml)"));
  CHECK(planner("suggest --model gpt3-1.3b.yaml --cluster dgx-a100-80gb --gpus 8 "
                "--global-batch 64 --top 1")
            .rc == 0);
  check_error("estimate --model llama3-8 --cluster dgx-h100-80gb --plan tp=8",
              "option --model: 'llama3-8' is neither a file nor a name in configs/models/ "
              "(nearest: llama3-8b, llama2-7b, llama3-70b)");
  check_error("estimate --model llama3-8b --cluster dgx-h100 --plan tp=8",
              "option --cluster: 'dgx-h100' is neither a file nor a name in hw_profiles/ "
              "(nearest: dgx-h200, dgx-h100-80gb, dgx-a100-40gb)");
  // A path is read as given.
  check_error("estimate --model ./llama3-8b --cluster dgx-h100-80gb --plan tp=8",
              "./llama3-8b: cannot open file: No such file or directory");
}

TEST_CASE("rounding noise prints as 0 in every output") {
  // pp=1 with many micro-batches: the simulated makespan less the summed compute and TP time is
  // a difference of two sums of the same 768 tasks, rounding (about 1e-13 s) unless cleared.
  const std::string plan = " --plan \"tp=2,pp=1,dp=4,mbs=1,gbs=3072,sp=1,zero=1\"";
  const Run j = planner("estimate " + kSmall + plan + " --format json");
  REQUIRE(j.rc == 0);
  const auto e = nlohmann::json::parse(j.out);
  const double t = e["iteration_time_s"].get<double>();
  for (const auto& [key, v] : e["breakdown"].items()) {
    CAPTURE(key);
    CHECK((v.get<double>() == 0 || v.get<double>() > 1e-9 * t));
  }
  CHECK(e["breakdown"]["bubble_s"] == 0.0);
  for (const auto& v : e["pipeline"]["stage_idle_s"])
    CHECK((v == 0.0 || v.get<double>() > 1e-9 * t));
  // The CSV of a search holding such plans: no number of magnitude below 1e-9 s.
  const Run csv =
      planner("suggest " + kSmall + " --gpus 8 --global-batch 3072 --pp 1 --top 20 --format csv");
  REQUIRE(csv.rc == 0);
  std::istringstream lines(csv.out);
  std::string line;
  std::getline(lines, line);  // the header
  int rows = 0;
  for (; std::getline(lines, line); ++rows) {
    std::istringstream cells(line.substr(0, line.find('"')));
    for (std::string cell; std::getline(cells, cell, ',');) {
      if (cell.find("e-") == std::string::npos) continue;
      CAPTURE(line);
      CHECK(std::stod(cell) > 1e-9);
    }
  }
  CHECK(rows == 20);
}
