// Model YAML (configs/models/*.yaml): io::parse_model_file, then every accepted model planned.
#include "fuzz_common.h"
#include "planner/error.h"
#include "planner/io/cluster_io.h"
#include "planner/io/model_io.h"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fuzz::init();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const planner::ClusterProfile h100 = planner::io::load_cluster(fuzz::source("hw_profiles/dgx-h100-80gb.yaml"));
  const std::string text(reinterpret_cast<const char*>(data), size);
  planner::ModelSpec m;
  try {
    m = planner::io::parse_model_file(text, "model.yaml");
  } catch (const planner::InputError&) {
    return 0;  // refused with a message: what bad input should get
  }
  fuzz::check_plan(m, h100, fuzz::simple_plan(8));
  planner::Plan two = fuzz::simple_plan(4);
  two.tp = 2, two.pp = 1, two.sp = true, two.recompute = planner::Recompute::selective;
  fuzz::check_plan(m, h100, two);
  return 0;
}
