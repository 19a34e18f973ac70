#pragma once
/// Strict JSON for every JSON file the planner and its GPU programs read (Hugging Face configs,
/// the validate runner's workload and results, calibration samples).
#include <string>

#include <nlohmann/json.hpp>

namespace planner::io {

/// Nesting deeper than this is refused: the planner's JSON inputs need at most 4 levels.
inline constexpr int kJsonMaxDepth = 64;

/// Parses `text`; `file` names it in errors. A syntax error, a number out of range (1e400) or
/// nesting deeper than kJsonMaxDepth throws InputError with the line (and, where known, the key).
nlohmann::json parse_json(const std::string& text, const std::string& file);

/// True when `text` is JSON, or would be but for a number out of range or nesting too deep (which
/// parse_json then reports).
bool is_json(const std::string& text);

}  // namespace planner::io
