#pragma once
#include <functional>
#include <string_view>

#include "planner/cost/simulate.h"
#include "planner/plan.h"

namespace planner {

/// At most how many events the trace of `p`'s iteration holds: the track names, every forward
/// and backward (and ZB-H1 weight-gradient) task, and every transfer between virtual stages.
/// A double: the knobs' product can exceed 64 bits.
double trace_events(const Plan& p);

/// The simulated iteration as Chrome trace JSON (Perfetto, chrome://tracing), handed to `out` in
/// pieces, one event at a time (a trace of millions of events is never held in memory): one
/// track per stage with its forward (F), backward (B, or B and W under ZB-H1) slices and a second
/// track per stage with the transfers it receives, each slice labelled with its micro-batch and
/// chunk.
void write_chrome_trace(const SimResult& sim, const Plan& p,
                        const std::function<void(std::string_view)>& out);

}  // namespace planner
