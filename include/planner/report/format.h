#pragma once
#include <cstdio>
#include <ostream>
#include <string>

namespace planner {

/// printf-style formatting into a string (the reports print fixed-width numbers).
template <typename... Args>
std::string fmt(const char* f, Args... args) {
  const int n = std::snprintf(nullptr, 0, f, args...);
  std::string s(n > 0 ? static_cast<size_t>(n) : 0, '\0');
  if (n > 0) std::snprintf(s.data(), s.size() + 1, f, args...);
  return s;
}

/// The same, written to a stream.
template <typename... Args>
void line(std::ostream& out, const char* f, Args... args) {
  out << fmt(f, args...);
}

}  // namespace planner
