#pragma once
/// Writes a cluster profile in the format of hw_profiles/*.yaml (the keys io::load_cluster
/// reads, with units in their names); io::write_file_atomically writes it.
#include <string>
#include <vector>

#include "planner/cluster.h"

namespace planner::calibrate {

/// The profile as YAML, `comments` first as `# ` lines. Numbers keep 6 significant digits
/// (bytes exactly), strings are double-quoted.
std::string cluster_yaml(const ClusterProfile& c, const std::vector<std::string>& comments);

}  // namespace planner::calibrate
