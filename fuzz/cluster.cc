// Cluster profiles (hw_profiles/*.yaml): io::parse_cluster, then a model planned on the profile
// with data parallelism over one node and with tensor parallelism over it.
#include "fuzz_common.h"
#include "planner/error.h"
#include "planner/io/cluster_io.h"
#include "planner/io/model_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const planner::ModelSpec model =
      planner::io::load_model(fuzz::source("configs/models/gpt3-1.3b.yaml"));
  const std::string text(reinterpret_cast<const char*>(data), size);
  planner::ClusterProfile c;
  try {
    c = planner::io::parse_cluster(text, "cluster.yaml");
  } catch (const planner::InputError&) {
    return 0;
  }
  const int node = std::min(c.gpus_per_node, 64);
  fuzz::check_plan(model, c, fuzz::simple_plan(node));
  planner::Plan tp = fuzz::simple_plan(1);
  tp.tp = node, tp.sp = node > 1, tp.zero = 1, tp.gbs = 16, tp.mbs = 2;
  if (model.heads % node == 0) fuzz::check_plan(model, c, tp);
  return 0;
}
