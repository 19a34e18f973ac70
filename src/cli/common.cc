#include "cli/common.h"

#include "cli/commands.h"

#include "planner/error.h"
#include "planner/io/cluster_io.h"
#include "planner/io/knobs.h"
#include "planner/io/model_io.h"
#include "planner/report/trace.h"
#include "planner/units.h"

namespace planner::cli {

void add_plan_options(CLI::App* s, PlanArgs& a, const std::string& plan_example) {
  s->add_option("--model", a.model, "model YAML (configs/models/) or Hugging Face config.json")->required();
  s->add_option("--cluster", a.cluster, "cluster profile YAML (hw_profiles/)")->required();
  s->add_option("--gpus", a.gpus, "GPUs (default: dp*tp*pp*cp of the plan, else all)");
  s->add_option("--plan", a.plan, "e.g. \"" + plan_example + "\"")->required();
  s->add_option("--global-batch", a.global_batch, "global batch in sequences, if not in --plan")
      ->check(CLI::Range(1, 1 << 28));
  s->add_option("--dtype", a.dtype, "bf16 (default), fp16, fp8, tf32");
}

void add_limit_options(CLI::App* s, LimitArgs& a, const std::string& memory_help) {
  s->add_flag("--tp-across-nodes", a.tp_across_nodes, "allow TP groups larger than a node");
  s->add_option("--memory-limit-GiB", a.memory_limit_GiB, memory_help)->check(CLI::Range(0.0, 1e6));
}

EstimateOptions estimate_options(const LimitArgs& a) {
  EstimateOptions o;
  o.tp_across_nodes = a.tp_across_nodes;
  o.memory_limit_bytes = a.memory_limit_GiB * kGiB;
  return o;
}

Inputs load_inputs(const std::string& model_file, const std::string& cluster_file) {
  Inputs in;
  in.model_file = model_file;
  in.cluster_file = cluster_file;
  in.model = io::load_model(model_file);
  in.cluster = io::load_cluster(cluster_file);
  return in;
}

std::vector<int> parse_gpus(const std::string& text, const ClusterProfile& c) {
  if (text.empty()) return {c.total_gpus()};
  const bool range = text.find('-') != std::string::npos;
  std::vector<int> out;
  for (int g : io::parse_int_set(text, "--gpus")) {
    if (range && (g <= 0 || g % c.gpus_per_node != 0)) continue;  // a range keeps whole nodes
    if (g <= 0)
      throw InputError("", 0, "--gpus", "must be positive, got " + std::to_string(g));
    if (g % c.gpus_per_node != 0)
      throw InputError("", 0, "--gpus",
                       std::to_string(g) + " is not a multiple of gpus_per_node=" +
                           std::to_string(c.gpus_per_node) + " in " + c.file);
    if (g > c.total_gpus())
      throw InputError("", 0, "--gpus",
                       std::to_string(g) + " exceeds the " + std::to_string(c.total_gpus()) +
                           " GPUs of " + c.file + " (raise its nodes)");
    out.push_back(g);
  }
  if (out.empty()) throw InputError("", 0, "--gpus", "'" + text + "' holds no whole-node GPU count");
  return out;
}

Dtype parse_dtype(const std::string& text) {
  const auto w = io::parse_word_set(text, "--dtype", {"bf16", "fp16", "fp8", "tf32"});
  if (w.size() != 1) throw InputError("", 0, "--dtype", "expected one precision");
  if (w[0] == "fp16") return Dtype::fp16;
  if (w[0] == "fp8") return Dtype::fp8;
  if (w[0] == "tf32") return Dtype::tf32;
  return Dtype::bf16;
}

std::optional<AttentionKernel> parse_attention(const std::string& text) {
  if (text.empty()) return std::nullopt;
  const auto w = io::parse_word_set(text, "--attention", {"flash", "unfused"});
  if (w.size() != 1) throw InputError("", 0, "--attention", "expected one of flash, unfused");
  return w[0] == "flash" ? AttentionKernel::flash : AttentionKernel::unfused;
}

void write_trace(const Inputs& in, const Estimate& e, const EstimateOptions& o, const std::string& path) {
  SimResult sim;
  simulate_plan(in.model, in.cluster, e.plan, o, &e.chunk_partition, &sim, true);
  write_file_atomically(path, chrome_trace(sim, e.plan).dump() + "\n");
}

Plan complete_plan(const std::string& plan, const std::string& gpus_text, const std::string& dtype,
                   int global_batch, const Inputs& in) {
  Plan p = parse_plan(plan, "--plan");
  const long long gpus = !gpus_text.empty() ? parse_gpus(gpus_text, in.cluster).back()
                   : p.dp > 0         ? p.gpus()
                                      : in.cluster.total_gpus();
  if (!dtype.empty()) p.dtype = parse_dtype(dtype);
  const long long model_parallel = 1LL * p.tp * p.pp * p.cp;
  if (p.dp == 0) {
    if (gpus % model_parallel != 0)
      throw InputError("", 0, "--plan",
                       "tp*pp*cp = " + std::to_string(model_parallel) + " does not divide " +
                           std::to_string(gpus) + " GPUs");
    p.dp = static_cast<int>(gpus / model_parallel);
  } else if (p.gpus() != gpus) {
    throw InputError("", 0, "--plan",
                     "dp*tp*pp*cp = " + std::to_string(p.gpus()) + " but --gpus is " + std::to_string(gpus));
  }
  if (p.gbs == 0) p.gbs = global_batch;
  if (p.gbs <= 0)
    throw InputError("", 0, "--plan", "no global batch: give gbs=... in --plan or --global-batch");
  return p;
}

}  // namespace planner::cli
