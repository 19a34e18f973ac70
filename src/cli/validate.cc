#include "planner/validate.h"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/outputs.h"
#include "planner/error.h"
#include "planner/io/file.h"
#include "planner/io/json.h"
#include "planner/io/output.h"
#include "planner/limits.h"

namespace planner::cli {
namespace {

struct ValidateArgs : PlanArgs {
  std::string format = "text", update_profile, runner;
  std::string workload_out, measured;
  int layers = 0, iters = 20;
  int mtp_layers = -1;  ///< --mtp-layers (-1: the model file's)
};

/// The CUDA runner: --runner, else planner-validate beside this executable.
std::string find_runner(const std::string& given) {
  if (!given.empty()) return given;
  std::error_code ec;
  const auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  const auto beside = self.parent_path() / "calibrate" / "planner-validate";
  for (const auto& p : {self.parent_path() / "planner-validate", beside})
    if (!ec && std::filesystem::exists(p)) return p.string();
  throw InputError("", 0, "",
                   "planner validate needs the CUDA build: planner-validate was not found next to "
                   "planner (it is "
                   "built when CMake finds the CUDA toolkit, cuBLAS and NCCL; see calibrate/). "
                   "--workload-out writes the work to run elsewhere, --measured reads its results");
}

/// Runs the GPU runner on the workload and returns its JSON results.
nlohmann::json run_on_gpu(const ValidateArgs& a, const Workload& w) {
  const std::string runner = find_runner(a.runner);
  std::error_code ec;
  auto tmp = std::filesystem::temp_directory_path(ec);
  if (ec) tmp = "/tmp";
  const auto dir = tmp / ("planner-validate-" + std::to_string(getpid()));
  std::filesystem::create_directories(dir, ec);
  if (ec) throw InputError(dir.string(), 0, "", "cannot create the work folder: " + ec.message());
  const std::string work = (dir / "workload.json").string(), out = (dir / "measured.json").string();
  io::write_file_atomically(work, io::dump_json(workload_json(w), 2) + "\n");
  const std::string cmd = "'" + runner + "' --workload '" + work + "' --out '" + out +
                          "' --iters " + std::to_string(a.iters);
  const int status = std::system(cmd.c_str());
  if (status != 0 || !std::filesystem::exists(out, ec)) {
    std::filesystem::remove_all(dir, ec);
    throw InputError("", 0, "",
                     "planner validate: the GPU runner failed (" + runner + ", exit " +
                         std::to_string(WEXITSTATUS(status)) +
                         (status == 0 ? "; it wrote no results" : "") +
                         "): on a machine without a GPU it says so above");
  }
  const std::string text = io::read_file(out);
  std::filesystem::remove_all(dir, ec);
  return io::parse_json(text, runner + " (its results)");
}

int run_validate(const ValidateArgs& a) {
  Inputs in = load_inputs(a.model, a.cluster);
  OutputArgs model_args;
  model_args.mtp_layers = a.mtp_layers;
  apply_seq_len(in, model_args);
  const Plan p =
      complete_plan(a.plan, gpus_option(a.gpus, a.nodes, in.cluster), a.dtype, a.global_batch, in);
  const Workload w = build_workload(in.model, in.cluster, p, a.layers);
  if (!a.workload_out.empty()) {
    io::write_file_atomically(a.workload_out, io::dump_json(workload_json(w), 2) + "\n");
    if (a.measured.empty()) return 0;
  }
  nlohmann::json results;
  if (!a.measured.empty()) {
    results = io::parse_json(io::read_file(a.measured), a.measured);
  } else {
    results = run_on_gpu(a, w);
  }
  const Measured m =
      parse_measured(results, w, a.measured.empty() ? "planner-validate" : a.measured);
  const ValidationReport r = compare(w, m);
  if (a.format == "json")
    std::cout << io::dump_json(validation_json(w, r), 2) << "\n";
  else
    print_validation(std::cout, w, r);
  if (!a.update_profile.empty())
    io::write_file_atomically(a.update_profile,
                              update_profile_text(in.cluster_bytes, w, m, in.cluster));
  return 0;
}

}  // namespace

void add_validate(CLI::App& app, int* rc) {
  auto a = std::make_shared<ValidateArgs>();
  CLI::App* s = app.add_subcommand(
      "validate", "run a plan's kernels on the local GPUs and compare with the prediction");
  add_plan_options(s, *a, "tp=8,pp=1,dp=8,mbs=4,gbs=1536,zero=1,sp=1");
  s->add_option("--layers", a->layers,
                "layers to run (default: those of the estimate's critical stage)")
      ->check(integer_in(1, limits::kLayers));
  add_mtp_option(s, a->mtp_layers);
  s->add_option("--iters", a->iters, "timed repetitions (median reported)")
      ->check(integer_in(1, 100000));
  s->add_option("--format", a->format, "text or json")->check(CLI::IsMember({"text", "json"}));
  s->add_option("--update-profile", a->update_profile,
                "write the profile with the measured GEMM (and attention) efficiencies here");
  s->add_option("--runner", a->runner,
                "the CUDA runner (default: planner-validate beside planner)");
  s->add_option("--workload-out", a->workload_out, "write the work to run as JSON (no GPU needed)");
  s->add_option("--measured", a->measured,
                "compare with a runner's saved results instead of running");
  s->callback([a, rc] { *rc = run_validate(*a); });
}

}  // namespace planner::cli
