#pragma once
#include <string>
#include <vector>

namespace planner::io {

/// One CSV line's fields into `out` (RFC 4180 quoting: "a, b" is one field, "" a quote; a
/// trailing CR is dropped). False when a quote is left open.
bool split_csv(const std::string& line, std::vector<std::string>& out);

}  // namespace planner::io
