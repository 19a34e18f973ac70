#pragma once
#include <string>

#include "cli/common.h"
#include "planner/emit.h"
#include "planner/search.h"

namespace planner::cli {

/// `suggest --emit FRAMEWORK --out DIR`: writes the launch files of the best ranked plan the
/// framework can express (the top one unless the framework refuses it, which is said on stderr).
/// Narrows the search to what the framework can express (Megatron-LM: zero <= 1, no GPipe;
/// DeepSpeed: no interleaving, no context parallelism). A knob the user set to values the
/// framework refuses is left alone, so that emit_top_plan says why.
void restrict_knobs(emit::Framework f, KnobSpace& k);

void emit_top_plan(const Inputs& in, const SearchResult& r, const std::string& framework,
                   const std::string& out, EstimateOptions o);

}  // namespace planner::cli
