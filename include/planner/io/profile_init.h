#pragma once
/// `planner profile init`: a complete, loadable cluster profile from a handful of datasheet
/// facts. Every constant a datasheet does not give (the GEMM model, sustained and attention
/// efficiencies, collective curves and latencies) is the base profile's, the nearest known GPU's,
/// and its provenance entry says so.
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "planner/cluster.h"

namespace planner::io {

/// The precisions whose dense peak a datasheet gives, as the profile spells them.
inline constexpr std::array<const char*, 6> kPeakNames = {"bf16", "fp16",  "fp8",
                                                          "tf32", "mxfp8", "nvfp4"};

/// What the user read off a datasheet; unset: the base profile's (or derived from it).
struct ProfileFacts {
  std::string name;      ///< the profile's name (required)
  std::string gpu_name;  ///< default: the base GPU's when no GPU fact is given, else `name`
  std::string source;    ///< the datasheet, named in each given fact's provenance
  std::array<std::optional<double>, kPeakNames.size()> peak_tflops{};  ///< dense, per GPU
  std::optional<int> sms, gpus_per_node, nvlink_domain, nics_per_node, nodes;
  std::optional<double> hbm_GiB, hbm_GBps;
  std::optional<double> nvlink_GBps;  ///< NVLink per GPU per direction
  std::optional<double> nic_gbps;     ///< each NIC's line rate
  std::optional<double> gpu_hour_usd;
  bool any_gpu_fact() const;
};

/// The candidate nearest the facts: the least sum of |ln(given / candidate's)| over the peaks,
/// SMs, HBM size and bandwidth and NVLink bandwidth given (a tie: the first). nullopt when no such
/// fact is given.
std::optional<size_t> nearest_profile(const ProfileFacts& f,
                                      const std::vector<ClusterProfile>& candidates);

/// The profile's YAML text: `base_file` (a profile, named `base_label` in provenance) with the
/// facts applied by the rules in the README (Inputs, "planner profile init"). The text is parsed
/// back (parse_cluster, naming `out_label`) before it is returned, so what is written loads.
std::string init_profile(const ProfileFacts& f, const std::string& base_file,
                         const std::string& base_label, const std::string& out_label);

}  // namespace planner::io
