#pragma once
#include <string>

#include "planner/cluster.h"

namespace planner::io {

ClusterProfile load_cluster(const std::string& path);
ClusterProfile parse_cluster(const std::string& yaml_text, const std::string& file);

}  // namespace planner::io
