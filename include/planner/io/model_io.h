#pragma once
#include <string>

#include "planner/model.h"

namespace planner::io {

/// Reads a model file once: a Hugging Face config.json (see is_hf_config) or model YAML.
ModelSpec load_model(const std::string& path);
/// The same on a file's bytes, read already; `file` names it (and decides JSON by its extension).
ModelSpec parse_model_file(const std::string& text, const std::string& file);
/// Parses model YAML text; `file` names it in errors.
ModelSpec parse_model(const std::string& yaml_text, const std::string& file);

}  // namespace planner::io
