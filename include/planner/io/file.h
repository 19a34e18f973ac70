#pragma once
#include <string>

namespace planner::io {

/// A whole file's bytes, read once from start to end (so a pipe, a FIFO or /dev/stdin works as
/// well as a file). A missing or unreadable file, a folder, or one larger than
/// limits::kInputFileBytes throws InputError naming it.
std::string read_file(const std::string& path);

}  // namespace planner::io
