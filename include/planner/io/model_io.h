#pragma once
#include <string>

#include "planner/model.h"

namespace planner::io {

/// Reads a model file once: a Hugging Face config.json (see is_hf_config) or model YAML. A model
/// with multi-head latent attention is refused with its counts (latent_attention_refusal) unless
/// `experts_ok`: the cost model does not plan it yet; its counts and FLOPs are ModelSpec's.
ModelSpec load_model(const std::string& path, bool experts_ok = false);
/// The same on a file's bytes, read already; `file` names it (and decides JSON by its extension).
ModelSpec parse_model_file(const std::string& text, const std::string& file,
                           bool experts_ok = false);
/// Parses model YAML text; `file` names it in errors.
ModelSpec parse_model(const std::string& yaml_text, const std::string& file,
                      bool experts_ok = false);

}  // namespace planner::io
