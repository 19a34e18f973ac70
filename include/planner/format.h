#pragma once
#include <cstdarg>
#include <ostream>
#include <string>

namespace planner {

/// printf-style formatting into a string; the compiler checks each format against its arguments.
std::string fmt(const char* format, ...) __attribute__((format(printf, 1, 2)));
std::string vfmt(const char* format, va_list args);

/// The same, written to a stream.
void line(std::ostream& out, const char* format, ...) __attribute__((format(printf, 2, 3)));

}  // namespace planner
