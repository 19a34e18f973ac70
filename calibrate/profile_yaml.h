#pragma once
/// Writes a cluster profile in the format of hw_profiles/*.yaml (the keys io::load_cluster
/// reads, with units in their names), and writes files atomically.
#include <string>
#include <vector>

#include "planner/cluster.h"

namespace planner::calibrate {

/// The profile as YAML, `comments` first as `# ` lines. Numbers keep 6 significant digits
/// (bytes exactly), strings are double-quoted.
std::string cluster_yaml(const ClusterProfile& c, const std::vector<std::string>& comments);

/// Writes `text` to `path` through a temporary file in the same folder, flushed to disk and
/// then renamed over `path`, so that readers see the old file or the new one, never half of
/// one. Throws InputError naming the path when the folder is missing or not writable.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace planner::calibrate
