#pragma once
#include <string>

#include "planner/model.h"

namespace planner::io {

ModelSpec load_model(const std::string& path);
/// Parses model YAML text; `file` names it in errors.
ModelSpec parse_model(const std::string& yaml_text, const std::string& file);

}  // namespace planner::io
