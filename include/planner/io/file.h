#pragma once
#include <string>

namespace planner::io {

/// A whole file's bytes. A missing or unreadable file, or a folder, throws InputError naming it.
std::string read_file(const std::string& path);

}  // namespace planner::io
