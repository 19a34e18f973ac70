#pragma once
// Runs the planner binary (or any command) from the source folder, for end-to-end tests.
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace cli_run {

struct Run {
  int rc = -1;
  std::string out;  ///< stdout and stderr together
};

/// `command` through the shell in the source folder, stderr merged into stdout.
inline Run shell(const std::string& command) {
  const std::string cmd = "cd " PLANNER_SOURCE_DIR " && " + command + " 2>&1";
  Run r;
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

inline Run planner(const std::string& args) { return shell(PLANNER_BINARY " " + args); }

/// The planner fails with exactly one line "planner: error: <message>" and exit code 2.
/// (Include doctest before this header.)
inline void check_error(const std::string& args, const std::string& message) {
  const Run r = planner(args);
  CAPTURE(args);
  CHECK(r.rc == 2);
  CHECK(r.out == "planner: error: " + message + "\n");
}

/// True when `program` is on PATH.
inline bool have(const std::string& program) {
  return std::system(("command -v " + program + " >/dev/null 2>&1").c_str()) == 0;
}

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// An empty scratch folder under the system's temporary folder.
inline std::string scratch(const std::string& name) {
  const auto d = std::filesystem::temp_directory_path() /
                 ("planner_ux_" + name + "_" + std::to_string(::getpid()));
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d.string();
}

}  // namespace cli_run
