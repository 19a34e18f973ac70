#pragma once
#include <string>
#include <vector>

namespace planner::io {

/// "8", "1-64", "0,1", "1,2,4-8" -> sorted unique values. Throws InputError naming `option`.
std::vector<int> parse_int_set(const std::string& text, const std::string& option);
/// Comma-separated words each in `allowed`.
std::vector<std::string> parse_word_set(const std::string& text, const std::string& option,
                                        const std::vector<std::string>& allowed);
/// "1e12", "300B", "2T", "15.6T" -> a count.
double parse_count(const std::string& text, const std::string& option);

}  // namespace planner::io
