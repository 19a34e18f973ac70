#pragma once
/// Writes a cluster profile in the format of hw_profiles/*.yaml (the keys load_cluster reads,
/// with units in their names): the one writer, for calibrate/ and profile init.
#include <string>
#include <vector>

#include "planner/cluster.h"

namespace planner::io {

/// The profile as YAML, `comments` first as `# ` lines. Numbers keep 6 significant digits
/// (bytes exactly), strings are double-quoted.
std::string cluster_yaml(const ClusterProfile& c, const std::vector<std::string>& comments);

}  // namespace planner::io
