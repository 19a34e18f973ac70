#pragma once
// The shipped profiles and models the unit tests share, each read once.
#include <map>
#include <string>

#include "planner/io/cluster_io.h"
#include "planner/io/model_io.h"

namespace fixtures {

/// `load`(PLANNER_SOURCE_DIR/`folder`/<name>.yaml), read once per name.
template <typename T, T (*load)(const std::string&)>
const T& shipped(const std::string& folder, const std::string& name) {
  static std::map<std::string, T> cache;
  auto it = cache.find(name);
  if (it == cache.end())
    it = cache.emplace(name, load(PLANNER_SOURCE_DIR "/" + folder + "/" + name + ".yaml")).first;
  return it->second;
}

/// hw_profiles/<name>.yaml
inline const planner::ClusterProfile& cluster(const std::string& name) {
  return shipped<planner::ClusterProfile, planner::io::load_cluster>("hw_profiles", name);
}

inline planner::ModelSpec load_dense_model(const std::string& path) {
  return planner::io::load_model(path);
}

/// configs/models/<name>.yaml
inline const planner::ModelSpec& model(const std::string& name) {
  return shipped<planner::ModelSpec, load_dense_model>("configs/models", name);
}

}  // namespace fixtures
