// Calibration samples JSON (planner-calibrate --samples; planner-calibrate-fit --fit-only):
// load, fit on the H200 base profile and write the profile as the fit command does, then plan
// a model on what it wrote.
#include <cstdio>

#include "calibrate/fit_command.h"
#include "fuzz_common.h"
#include "planner/error.h"
#include "planner/io/cluster_io.h"
#include "planner/io/model_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace planner;
  static const ModelSpec model = io::load_model(fuzz::source("configs/models/gpt3-1.3b.yaml"));
  static std::FILE* report = std::fopen("/dev/null", "w");
  calibrate::FitCommand cmd;
  cmd.samples_file = fuzz::as_file({reinterpret_cast<const char*>(data), size}, "s.samples.json");
  cmd.base_file = fuzz::source("hw_profiles/dgx-h200.yaml");
  cmd.out_file = fuzz::temp_path("fitted.yaml");
  try {
    calibrate::run_fit_only(cmd, report);
  } catch (const InputError&) {
    return 0;
  }
  const ClusterProfile c = io::load_cluster(cmd.out_file);
  fuzz::check_plan(model, c, fuzz::simple_plan(std::min(c.gpus_per_node, 64)));
  return 0;
}
