#pragma once
// The shipped profiles and models the unit tests share, each read once.
#include <map>
#include <string>

#include "planner/io/cluster_io.h"
#include "planner/io/model_io.h"

namespace fixtures {

/// hw_profiles/<name>.yaml
inline const planner::ClusterProfile& cluster(const std::string& name) {
  static std::map<std::string, planner::ClusterProfile> cache;
  auto it = cache.find(name);
  if (it == cache.end())
    it = cache
             .emplace(name, planner::io::load_cluster(PLANNER_SOURCE_DIR "/hw_profiles/" + name +
                                                      ".yaml"))
             .first;
  return it->second;
}

/// configs/models/<name>.yaml
inline const planner::ModelSpec& model(const std::string& name) {
  static std::map<std::string, planner::ModelSpec> cache;
  auto it = cache.find(name);
  if (it == cache.end())
    it = cache
             .emplace(name, planner::io::load_model(PLANNER_SOURCE_DIR "/configs/models/" + name +
                                                    ".yaml"))
             .first;
  return it->second;
}

}  // namespace fixtures
