#pragma once
#include <CLI/CLI.hpp>

namespace planner::cli {

/// Each registers its subcommand; the callback runs it and stores the exit code in `*rc`.
void add_suggest(CLI::App& app, int* rc);
void add_estimate(CLI::App& app, int* rc);
void add_regress(CLI::App& app, int* rc);
void add_validate(CLI::App& app, int* rc);
void add_emit(CLI::App& app, int* rc);
void add_compare(CLI::App& app, int* rc);
/// `planner completion bash`: reads the subcommands and options of `app` when it runs.
void add_completion(CLI::App& app, int* rc);

}  // namespace planner::cli
