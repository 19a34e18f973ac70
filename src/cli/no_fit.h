#pragma once
#include "cli/common.h"
#include "planner/search.h"

namespace planner::cli {

/// Nothing ranked: says why (the closest plan's memory against the limit and which knob would
/// help most, or the rejection counts) and throws InputError, so main exits 2.
[[noreturn]] void throw_no_fit(const Inputs& in, const SearchResult& r);

}  // namespace planner::cli
