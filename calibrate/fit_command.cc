#include "calibrate/fit_command.h"

#include <fmt/core.h>

#include <filesystem>
#include <stdexcept>

#include "calibrate/context.h"
#include "calibrate/fit.h"
#include "planner/error.h"
#include "planner/io/cluster_io.h"
#include "planner/io/output.h"
#include "planner/io/profile_yaml.h"

namespace planner::calibrate {

std::string default_samples_path(const std::string& out_file) {
  std::filesystem::path p(out_file);
  if (p.extension() == ".yaml" || p.extension() == ".yml") p.replace_extension();
  return p.string() + ".samples.json";
}

void fit_and_write(const Samples& samples, const FitCommand& cmd, std::FILE* report) {
  if (cmd.out_file.empty()) throw InputError("", 0, "--out", "is required (the profile to write)");
  const std::string base_file =
      resolve_base_profile(cmd.base_file, samples.context.gpu, samples.context.hbm_bytes);
  const ClusterProfile base = io::load_cluster(base_file);
  FitSettings st;
  st.name = cmd.name.empty() ? std::filesystem::path(cmd.out_file).stem().string() : cmd.name;
  st.base_file = base_file;
  st.samples_file = cmd.samples_file;
  st.nodes = cmd.nodes;
  FitOutcome fit;
  try {
    fit = fit_profile(samples, base, st);
  } catch (const std::invalid_argument& e) {
    throw InputError(cmd.samples_file, 0, "", std::string("cannot fit these samples: ") + e.what());
  }
  const RunContext& c = samples.context;
  const std::string refit = "planner-calibrate --fit-only " + cmd.samples_file + " --base " +
                            base_file + " --out " + cmd.out_file;
  const std::vector<std::string> comments = {
      st.name + ": calibrated by " + c.tool + " at " + c.date + " on " + c.gpu + ".",
      "Measured: " + c.command_line, "Refit from the raw samples: " + refit,
      "Provenance marks each value [calibrated] (measured here) or [base FILE] (kept from the "
      "base)."};
  const std::string profile = io::cluster_yaml(fit.profile, comments);
  (void)io::parse_cluster(profile, cmd.out_file);  // the planner must read it: check before writing
  io::write_file_atomically(cmd.out_file, profile);
  fmt::print(report, "# fit (base {})\n", base_file);
  for (const std::string& line : fit.report) fmt::print(report, "#   {}\n", line);
  fmt::print(report, "# wrote {}\n", cmd.out_file);
}

void run_fit_only(const FitCommand& cmd, std::FILE* report) {
  if (cmd.samples_file.empty())
    throw InputError("", 0, "--fit-only", "needs the samples file (SAMPLES.json)");
  fit_and_write(load_samples(cmd.samples_file), cmd, report);
}

}  // namespace planner::calibrate
