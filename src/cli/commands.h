#pragma once
#include <CLI/CLI.hpp>

#include <string>

#include "cli/common.h"

namespace planner::cli {

/// Registers --model, --cluster, --gpus, --plan, --global-batch and --dtype.
void add_plan_options(CLI::App* s, PlanArgs& a, const std::string& plan_example);
/// Registers --tp-across-nodes and --memory-limit-GiB.
void add_limit_options(CLI::App* s, LimitArgs& a,
                       const std::string& memory_help = "memory cap per GPU (default: HBM)");

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
