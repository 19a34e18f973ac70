#pragma once
/// `planner compare --vary TEXT`: one column of the comparison, the baseline with changes.
///
///   TEXT   := CHANGE[,CHANGE...]            the changes of one column, applied together
///   CHANGE := NAME*FACTOR                   scale a number of the cluster profile
///           | cluster=FILE                  another cluster profile (A100 -> H100)
///           | framework=NAME                the plan for another framework, on its stack
///           | KNOB=VALUE                    a plan knob, as in --plan (zero=3, mbs=2, tp=4 ...)
///   NAME   := ib_busbw | ib_latency         InfiniBand (inter-node) bus bandwidth, latency
///           | nvlink_busbw | nvlink_latency NVLink/NVSwitch (intra-node) bus bandwidth, latency
///           | hbm_bw | hbm_size             HBM bandwidth, HBM capacity
///           | peak_flops                    dense peak FLOP/s of every precision
///
/// Changing tp, pp or cp without dp keeps the GPU count (dp follows); changing vpp without
/// schedule picks interleaved for vpp > 1 and 1f1b otherwise.
#include <optional>
#include <string>
#include <vector>

#include "cli/common.h"

namespace planner::cli {

/// One column of `planner compare`.
struct Variant {
  std::string label;  ///< the cluster's name, or the --vary text (cluster=FILE: its stem)
  std::string cluster_file;
  ClusterProfile cluster;
  Plan plan;
  std::optional<Framework> framework;  ///< set by framework=NAME; else the command's --framework
};

/// The scalable profile numbers, in documentation order.
const std::vector<std::string>& vary_scale_names();

/// `base` with the changes of one --vary text applied; bad text throws InputError naming
/// option --vary and the offending change.
Variant apply_vary(const Variant& base, const std::string& text);

/// Scales one named profile number by `factor` (> 0).
void scale_profile(ClusterProfile& c, const std::string& name, double factor);

}  // namespace planner::cli
