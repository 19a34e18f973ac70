#pragma once
/// The fit as a command: samples -> profile YAML on disk, shared by `planner-calibrate` (after
/// measuring, or with --fit-only) and the CPU-only `planner-calibrate-fit`.
#include <cstdio>
#include <string>

#include "calibrate/samples.h"

namespace planner::calibrate {

struct FitCommand {
  std::string samples_file;  ///< --fit-only SAMPLES.json (or where the samples were just saved)
  std::string base_file;     ///< --base; "" picks hw_profiles/ by the GPU named in the samples
  std::string out_file;      ///< --out PROFILE.yaml
  std::string name;          ///< --name; default: the file name of --out without .yaml
  int nodes = 0;             ///< --nodes: cluster size to plan for; 0 keeps the base's
};

/// "hw_profiles/mine.yaml" -> "hw_profiles/mine.samples.json".
std::string default_samples_path(const std::string& out_file);

/// Loads the base profile, fits, checks that the planner's io::parse_cluster reads the profile (so
/// one the planner cannot read is never written), writes `out_file` atomically, and
/// prints one report line per fitted part to `report`. Errors throw InputError.
void fit_and_write(const Samples& samples, const FitCommand& cmd, std::FILE* report);

/// --fit-only: load_samples(cmd.samples_file), then fit_and_write.
void run_fit_only(const FitCommand& cmd, std::FILE* report);

}  // namespace planner::calibrate
