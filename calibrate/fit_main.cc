// planner-calibrate-fit: the CPU half of planner-calibrate, always built (no CUDA needed), so
// that users and CI can refit a profile from saved samples:
//   planner-calibrate-fit --fit-only SAMPLES.json --base hw_profiles/dgx-h200.yaml --out P.yaml
#include <CLI/CLI.hpp>
#include <cstdio>
#include <iostream>

#include "calibrate/fit_command.h"
#include "planner/error.h"

int main(int argc, char** argv) {
  CLI::App app{
      "planner-calibrate-fit: fit a cluster profile to samples saved by planner-calibrate"};
  app.set_version_flag("--version", std::string("planner-calibrate-fit ") + PLANNER_VERSION);
  planner::calibrate::FitCommand cmd;
  app.add_option("--fit-only", cmd.samples_file, "samples JSON written by planner-calibrate")
      ->required();
  app.add_option("--base", cmd.base_file,
                 "profile for what is not measured (default: hw_profiles/ by the GPU's name)");
  app.add_option("--out", cmd.out_file, "profile YAML to write (atomically)")->required();
  app.add_option("--name", cmd.name, "profile name (default: --out's file name)");
  app.add_option("--nodes", cmd.nodes, "nodes of the cluster to plan for (default: the base's)")
      ->check(CLI::PositiveNumber);
  try {
    app.parse(argc, argv);
    planner::calibrate::run_fit_only(cmd, stdout);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  } catch (const planner::InputError& e) {
    std::cerr << "planner-calibrate-fit: error: " << e.what() << "\n";
    return 2;
  }
  return 0;
}
