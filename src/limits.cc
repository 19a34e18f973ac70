#include "planner/limits.h"

#include "planner/format.h"

namespace planner::limits {

std::string Range::text() const { return fmt("[{:g}, {:g}]", lo, hi); }

}  // namespace planner::limits
