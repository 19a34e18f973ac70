#pragma once
/// Strict JSON for every JSON file the planner and its GPU programs read (Hugging Face configs,
/// after their Python-style NaN and Infinity values are read as {"non-finite": ...} objects:
/// hf_config.h; the validate runner's workload and results, calibration samples).
#include <nlohmann/json.hpp>
#include <string>

namespace planner::io {

/// Nesting deeper than this is refused: the planner's JSON inputs need at most 4 levels.
inline constexpr int kJsonMaxDepth = 64;

/// Parses `text`; `file` names it in errors. A syntax error, a number out of range (1e400) or
/// nesting deeper than kJsonMaxDepth throws InputError with the line (and, where known, the key).
nlohmann::json parse_json(const std::string& text, const std::string& file);

/// `j` as JSON text (`indent` as nlohmann's dump; nlohmann::json or ordered_json). A string that is
/// not valid UTF-8 (a name or a path as the user gave it) gets U+FFFD for its bad bytes instead
/// of an exception.
template <typename Json>
std::string dump_json(const Json& j, int indent = -1) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

/// `j` as JSON text for a message: at most about 60 characters.
std::string json_excerpt(const nlohmann::json& j);

/// True when `text` is JSON, or would be but for a number out of range or nesting too deep (which
/// parse_json then reports).
bool is_json(const std::string& text);

}  // namespace planner::io
