#pragma once
// Text formatting: {fmt} (Debian's libfmt-dev, the one spdlog is built against). The format string
// is checked against the arguments at compile time (fmt::format_string is consteval in C++20),
// and the text goes into a string of the size it needs: no fixed buffer holds formatted text.
#include <fmt/core.h>

#include <ostream>
#include <string>

namespace planner {

/// fmt::format under the project's short name: `fmt("{:.3f} s", t)`. Outside namespace planner
/// (a file with `using namespace planner;` at global scope) write planner::fmt: unqualified,
/// the name would also be {fmt}'s namespace.
template <typename... Args>
std::string fmt(fmt::format_string<Args...> format, Args&&... args) {
  return fmt::vformat(format, fmt::make_format_args(args...));
}

/// The same, written to a stream (no newline is added).
template <typename... Args>
void line(std::ostream& out, fmt::format_string<Args...> format, Args&&... args) {
  out << fmt::vformat(format, fmt::make_format_args(args...));
}

}  // namespace planner
