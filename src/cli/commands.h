#pragma once
#include <CLI/CLI.hpp>
#include <string>

#include "cli/common.h"

namespace planner::cli {

/// Option checks that state what is wanted: "expected an integer from 1 to 268435456, got '1e8'
/// (write it in digits)", "must be finite and in (0, 1e+06], got nan".
CLI::Validator integer_in(long long lo, long long hi);
CLI::Validator number_in(double lo, double hi, bool lo_open = false);

/// --global-batch's suffixes: binary, as batch sizes are powers of two (Llama 3's "4M-token"
/// batch is 1,024 sequences of 4,096 = 4,194,304 tokens; GPT-3's 1,536 sequences are 1.5K).
inline constexpr long long kBinaryK = 1024, kBinaryM = 1024 * 1024;
/// A count of sequences in digits, or with K or M ("2K" = 2048, "1.5K" = 1536): a transform
/// (register it with ->transform()) that leaves the digits for the option to read. Lowercase k
/// and m are refused as ambiguous (SI's k is 1000), as is a product that is not a whole number.
CLI::Validator sequences_in(long long lo, long long hi);
/// --global-batch's help: its unit and suffixes.
inline const std::string kGlobalBatchHelp =
    "global batch in sequences (not tokens); K = 1024, M = 1048576 sequences (2K = 2048)";

/// Registers --model, --cluster, --gpus, --plan, --global-batch and --dtype.
void add_plan_options(CLI::App* s, PlanArgs& a, const std::string& plan_example);
/// Registers --tp-across-nodes and --memory-limit-GiB.
void add_limit_options(CLI::App* s, LimitArgs& a,
                       const std::string& memory_help = "memory cap per GPU (default: HBM)");

/// Registers --framework: megatron (default), deepspeed, and with `all` every framework at once.
void add_framework_option(CLI::App* s, std::string& framework, bool all);

/// Each registers its subcommand; the callback runs it and stores the exit code in `*rc`.
void add_suggest(CLI::App& app, int* rc);
void add_estimate(CLI::App& app, int* rc);
void add_regress(CLI::App& app, int* rc);
void add_validate(CLI::App& app, int* rc);
void add_emit(CLI::App& app, int* rc);
void add_compare(CLI::App& app, int* rc);
/// `planner advise`: which cluster and framework, with the source's rules checked.
void add_advise(CLI::App& app, int* rc);
/// `planner profile init`: a cluster profile from datasheet facts.
void add_profile(CLI::App& app, int* rc);
/// `planner completion bash`: reads the subcommands and options of `app` when it runs.
void add_completion(CLI::App& app, int* rc);

}  // namespace planner::cli
