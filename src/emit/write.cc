// What the pure emitters need beyond the plan: the inputs' hashes and the prediction on the stack
// the framework runs. (The files are written as one set by io::write_file_set.)
#include "planner/emit.h"
#include "planner/error.h"

namespace planner::emit {

EmitRequest prepare(Framework f, const std::string& model_file, const std::string& model_bytes,
                    const ModelSpec& model, const std::string& cluster_file,
                    const std::string& cluster_bytes, const ClusterProfile& cluster,
                    const Plan& plan, const EstimateOptions& o, const Estimate* estimated) {
  // Names and paths land in shell comments and directives: one line each, nothing to execute.
  for (const auto& [text, option] :
       {std::pair{&model_file, "--model"}, {&cluster_file, "--cluster"}})
    for (char ch : *text)
      if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f)
        throw InputError("", 0, option, "the path must not contain control characters");
  check_expressible(f, model, cluster, plan);  // what it cannot express, before any estimate
  EmitRequest r;
  r.model_file = model_file;
  r.cluster_file = cluster_file;
  r.model = model;
  r.cluster = cluster;
  r.model_sha256 = sha256_hex(model_bytes);
  r.cluster_sha256 = sha256_hex(cluster_bytes);
  r.plan = plan;
  r.split = stage_split(model, plan);
  r.cluster.software = execution_stack(f, cluster, &r.stack_note);
  if (estimated && estimated->framework == f &&
      to_plan_string(estimated->plan) == to_plan_string(plan)) {  // the string has every knob
    r.estimate = *estimated;
  } else {
    // Simulate the plan's own split of the layers, as the run will execute it.
    EstimateOptions of = o;
    of.framework = f;
    r.estimate = simulate_plan(r.model, r.cluster, plan, of);
  }
  if (!r.estimate.ok()) throw InputError("", 0, "--plan", rejection_message(r.estimate));
  if (!finite_result(r.estimate))
    throw InputError("", 0, "--plan",
                     "the prediction is not a finite number: no launch file written");
  return r;
}

}  // namespace planner::emit
