#pragma once
#include "cli/common.h"
#include "planner/search.h"

namespace planner::cli {

/// Nothing ranked: says why (the closest plan's memory against the limit and which knob would
/// help most, or the rejection counts) and throws InputError, so main exits 2.
[[noreturn]] void throw_no_fit(const Inputs& in, const SearchResult& r);

/// "\n  zero=1           -> 61.2 GiB" per single-knob change to `plan` that lowers its memory
/// (ZeRO, full recompute, sp, half the mbs), for `framework` or, where it cannot run the change,
/// another; "" when there is none.
std::string memory_remedies(const Inputs& in, const Plan& plan, std::optional<Framework> framework);

}  // namespace planner::cli
