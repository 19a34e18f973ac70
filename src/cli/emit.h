#pragma once
#include <string>

#include "cli/common.h"
#include "planner/emit.h"
#include "planner/search.h"

namespace planner::cli {

/// `suggest --emit FRAMEWORK --out DIR`: writes the launch files of the best ranked plan of that
/// framework (the search ranked only plans it runs), with the search's own estimate in the header.
void emit_top_plan(const Inputs& in, const SearchResult& r, const std::string& framework,
                   const std::string& out);

}  // namespace planner::cli
