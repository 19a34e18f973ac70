#pragma once
// What every harness shares: the shipped inputs it plans against, the planner's command line run
// in-process, and the checks that turn a defect into a crash libFuzzer reports:
//   - an exception other than InputError escaping a loader (libFuzzer reports the abort),
//   - exit code 3 ("internal error") from the command line,
//   - a result that is not finite, or "nan"/"inf" anywhere in what the planner prints,
//   - anything AddressSanitizer or UndefinedBehaviorSanitizer reports (the build has both).
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "planner/cluster.h"
#include "planner/estimate.h"
#include "planner/model.h"
#include "planner/plan.h"

namespace fuzz {

/// A path in the source tree (shipped models and profiles).
std::string source(const std::string& relative);

/// Once per process (fuzz_common.cc's LLVMFuzzerInitialize, shared by every harness): stdout
/// into a buffer the harness reads back, std::cerr into another, spdlog quiet.
void init();

/// `name` in this process's private temporary folder.
std::string temp_path(const std::string& name);

/// `bytes` as a file in that folder, named `name` (the extension picks the
/// format, as the planner's own loaders do); the same path each call.
std::string as_file(std::string_view bytes, const std::string& name);

/// Runs `planner ARGS...` in-process and returns its exit code; traps on exit 3 and, when it
/// succeeded, on "nan" or "inf" in what it printed, unless `input` (what the fuzzer gave, which
/// the output may echo) holds such a word itself.
int run_cli(const std::vector<std::string>& args, std::string_view input);

/// Estimates `p` (closed form, then the simulator) and renders it as text, JSON, SVG plot and
/// HTML report as the commands do; traps on a non-finite result.
void check_plan(const planner::ModelSpec& m, const planner::ClusterProfile& c,
                const planner::Plan& p);

/// A model file's bytes, named `name` (its extension picks YAML or JSON as the planner's loader
/// does): loaded, and every model it accepts planned on the H100 profile (check_plan).
void plan_model_file(std::string_view bytes, const std::string& name);

/// True when `text` holds "nan" or "inf" as a word of its own ("[info]" is not one).
bool has_nonfinite_word(std::string_view text);
/// "nan" or "inf" anywhere in `text`, in any case (a word of it or not).
bool holds_nan_or_inf(std::string_view text);

/// The plan "tp=1,pp=1,dp=D,mbs=1,gbs=D" (every layer on one stage, one micro-batch per rank).
planner::Plan simple_plan(int dp);

}  // namespace fuzz
