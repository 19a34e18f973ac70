#pragma once
#include <string>

#include <nlohmann/json.hpp>

#include "planner/cost/simulate.h"
#include "planner/plan.h"

namespace planner {

/// The simulated iteration as Chrome trace events (Perfetto, chrome://tracing): one track per
/// stage with its forward (F), backward (B, or B and W under ZB-H1) slices and a second track per
/// stage with the transfers it receives, each slice labelled with its micro-batch and chunk.
nlohmann::json chrome_trace(const SimResult& sim, const Plan& p);

/// Writes `content` to `path` atomically (a temporary file, then rename); throws InputError
/// naming the path when it cannot.
void write_file_atomically(const std::string& path, const std::string& content);

}  // namespace planner
