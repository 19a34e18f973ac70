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
