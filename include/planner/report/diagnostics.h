#pragma once
#include <string>
#include <vector>

#include "planner/estimate.h"

namespace planner {

/// One finding about a plan, with what to change.
struct Diagnostic {
  std::string id;        ///< stable identifier, e.g. "bubble_share"
  std::string severity;  ///< "info" or "warning"
  std::string message;
  std::string remedy;
};

/// The shard-size threshold below which tensor cores idle (the source this project follows:
/// GEMM shards under 256 x 256 waste tensor cores).
inline constexpr double kTensorCoreMinShard = 256;
/// Bubble share above which the pipeline is called out.
inline constexpr double kBubbleWarnFraction = 0.10;
/// Headroom under which a plan risks fragmentation OOMs.
inline constexpr double kMemoryHeadroomWarnFraction = 0.05;

std::vector<Diagnostic> diagnose(const ModelSpec& m, const ClusterProfile& c, const Estimate& e);

}  // namespace planner
