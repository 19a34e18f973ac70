#pragma once

namespace planner::cli {

/// Parses the command line and runs the subcommand. Returns the exit code: 0 done, 1 a check that
/// failed (regress over its tolerance), 2 bad input (after one "planner: error:" line on stderr),
/// 3 an internal error (a bug). Never exits the process.
int run(int argc, const char* const* argv);

}  // namespace planner::cli
