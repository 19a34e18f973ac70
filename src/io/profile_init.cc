#include "planner/io/profile_init.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>

#include "planner/error.h"
#include "planner/format.h"
#include "planner/io/cluster_io.h"
#include "planner/io/profile_yaml.h"
#include "planner/units.h"

namespace planner::io {
namespace {

std::string num(double v) { return fmt("{:.6g}", v); }

/// Where kPeakNames[i] lives in a Gpu, FLOP/s (const or not).
template <typename G>
auto& peak_of(G& g, size_t i) {
  const std::string p = kPeakNames[i];
  if (p == "nvfp4") return g.nvfp4_flops;
  for (Dtype d : {Dtype::fp16, Dtype::bf16, Dtype::fp8, Dtype::tf32, Dtype::mxfp8})
    if (p == to_string(d)) return g.peak_flops[static_cast<int>(d)];
  throw std::logic_error("no precision " + p);
}
double peak_tflops(const Gpu& g, size_t i) { return peak_of(g, i) / kTera; }

/// |ln(a / b)|, the distance of one fact from a candidate's (a missing one counts as far).
double log_distance(double given, double theirs) {
  constexpr double kMissing = 10;  // e^10: further than any real pair of GPUs
  return theirs > 0 ? std::fabs(std::log(given / theirs)) : kMissing;
}

/// Whether provenance key `key` is `prefix` or under it ("gpu.peak_tflops.mxfp8").
bool under(const std::string& key, const std::string& prefix) {
  return key == prefix || key.rfind(prefix + ".", 0) == 0;
}

/// The peaks: given, else the base's scaled by its ratio to the first given precision (in
/// kPeakNames order), else the base's. Returns their provenance ("" when none was given).
std::string apply_peaks(const ProfileFacts& f, const std::string& base_label, Gpu& g) {
  std::optional<size_t> ref;
  for (size_t i = 0; i < kPeakNames.size() && !ref; ++i)
    if (f.peak_tflops[i]) ref = i;
  if (!ref) return "";
  const double base_ref = peak_tflops(g, *ref);
  std::string given, derived;
  for (size_t i = 0; i < kPeakNames.size(); ++i) {
    const char* p = kPeakNames[i];
    const double base = peak_tflops(g, i);
    if (f.peak_tflops[i]) {
      peak_of(g, i) = *f.peak_tflops[i] * kTera;
      given += fmt("{}{} {}", given.empty() ? "" : ", ", p, num(*f.peak_tflops[i]));
    } else if (base > 0 && base_ref > 0) {
      peak_of(g, i) = base / base_ref * *f.peak_tflops[*ref] * kTera;
      derived += fmt("{}{} {} = {}'s {}/{} ratio x the given {}", derived.empty() ? "" : "; ", p,
                     num(peak_tflops(g, i)), base_label, p, kPeakNames[*ref], kPeakNames[*ref]);
    } else if (base > 0) {
      derived += fmt("{}{} {} [carried from {}] (no base {} to scale by)",
                     derived.empty() ? "" : "; ", p, num(base), base_label, kPeakNames[*ref]);
    }
  }
  return fmt("given (dense per GPU, {}): {}{}", f.source, given,
             derived.empty() ? "" : "; [D] " + derived);
}

}  // namespace

bool ProfileFacts::any_gpu_fact() const {
  return sms || hbm_GiB || hbm_GBps ||
         std::any_of(peak_tflops.begin(), peak_tflops.end(), [](const auto& p) { return bool(p); });
}

std::optional<size_t> nearest_profile(const ProfileFacts& f,
                                      const std::vector<ClusterProfile>& candidates) {
  std::optional<size_t> best;
  double best_distance = 0;
  for (size_t c = 0; c < candidates.size(); ++c) {
    const ClusterProfile& p = candidates[c];
    double d = 0;
    int facts = 0;
    auto add = [&](const auto& given, double theirs) {
      if (given) d += log_distance(double(*given), theirs), ++facts;
    };
    for (size_t i = 0; i < kPeakNames.size(); ++i) add(f.peak_tflops[i], peak_tflops(p.gpu, i));
    add(f.sms, p.gpu.sms);
    add(f.hbm_GiB, p.gpu.hbm_bytes / kGiB);
    add(f.hbm_GBps, p.gpu.hbm_Bps / kGB);
    add(f.nvlink_GBps, p.intra.link_Bps / kGB);
    if (facts == 0) return std::nullopt;
    if (!best || d < best_distance) best = c, best_distance = d;
  }
  return best;
}

std::string init_profile(const ProfileFacts& f, const std::string& base_file,
                         const std::string& base_label, const std::string& out_label) {
  const ClusterProfile base = load_cluster(base_file);
  ClusterProfile c = base;
  ProfileFacts facts = f;
  if (facts.source.empty()) facts.source = "the datasheet";
  const std::string& src = facts.source;
  std::map<std::string, std::string> given;  // provenance of the facts
  std::vector<std::string> replaced;         // base provenance keys the facts make untrue

  c.name = f.name;
  if (!f.gpu_name.empty())
    c.gpu.name = f.gpu_name;
  else if (f.any_gpu_fact())
    c.gpu.name = f.name;
  if (std::string peaks = apply_peaks(facts, base_label, c.gpu); !peaks.empty())
    given["gpu.peak_tflops"] = std::move(peaks), replaced.push_back("gpu.peak_tflops");
  if (f.sms) {
    c.gpu.sms = *f.sms;
    given["gpu.sms"] = fmt("given ({})", src), replaced.push_back("gpu.sms");
  }
  if (f.hbm_GiB) c.gpu.hbm_bytes = *f.hbm_GiB * kGiB;
  if (f.hbm_GBps) c.gpu.hbm_Bps = *f.hbm_GBps * kGB;
  if (f.hbm_GiB || f.hbm_GBps) {
    given["gpu.hbm"] =
        fmt("given ({}): {}, {}", src, f.hbm_GiB ? num(*f.hbm_GiB) + " GiB" : "size [carried]",
            f.hbm_GBps ? num(*f.hbm_GBps) + " GB/s" : "bandwidth [carried]");
    for (const char* k : {"gpu.hbm", "gpu.hbm_GiB", "gpu.hbm_bandwidth_GBps"})
      replaced.push_back(k);
  }

  if (f.nvlink_GBps) {
    if (base.intra.link_Bps <= 0)
      throw InputError(base_file, 0, "network.intra_node.link_GBps",
                       "the base profile does not state its NVLink bandwidth per GPU, so "
                       "--nvlink-GBps cannot scale its NVLink figures; add the key to it or "
                       "choose another base with --like");
    const double ratio = *f.nvlink_GBps * kGB / base.intra.link_Bps;
    for (CollectiveCost& cost : c.intra.cost) {  // bandwidths scale, latencies carry
      cost.busbw_Bps *= ratio;
      for (auto& point : cost.curve) point.second *= ratio;
    }
    c.intra.link_Bps = *f.nvlink_GBps * kGB;
    c.intra.name = fmt("NVLink, {} GB/s per GPU per direction (figures scaled from {})",
                       num(*f.nvlink_GBps), base_label);
    given["network.intra_node.busbw"] =
        fmt("[D] {}'s measured busbw and curves x {} = the given NVLink bandwidth {} GB/s ({}) / "
            "{}'s {} GB/s; latencies [carried]",
            base_label, num(ratio), num(*f.nvlink_GBps), src, base_label,
            num(base.intra.link_Bps / kGB));
    for (const char* k : {"allreduce", "allgather", "reduce_scatter", "alltoall", "sendrecv"})
      replaced.push_back(std::string("network.intra_node.") + k);
    replaced.push_back("network.intra_node.link_GBps");
  }

  // The topology: a fact given, else the base's where the host is the base's, else one per GPU.
  const bool host_given = bool(f.gpus_per_node);
  c.gpus_per_node = f.gpus_per_node.value_or(base.gpus_per_node);
  c.nvlink_domain = f.nvlink_domain.value_or(host_given ? c.gpus_per_node : base.nvlink_domain);
  c.nics_per_node = f.nics_per_node.value_or(host_given ? c.gpus_per_node : base.nics_per_node);
  if (c.nvlink_domain % c.gpus_per_node != 0)
    throw InputError("", 0, f.nvlink_domain ? "--nvlink-domain" : "--gpus-per-node",
                     fmt("the NVLink domain must be a whole number of hosts: {} GPUs is not a "
                         "multiple of {} GPUs per host",
                         c.nvlink_domain, c.gpus_per_node));
  if (f.nic_gbps) c.nic_Bps = *f.nic_gbps * kGbit;
  if (f.gpus_per_node || f.nvlink_domain || f.nics_per_node || f.nic_gbps) {
    given["topology"] =
        fmt("given ({}): {} GPUs per host, NVLink domain {}, {} NICs per host{}; the inter-domain "
            "figures are {}'s, measured with one {} Gb/s NIC per GPU, scaled by the loader's "
            "NIC-share rule (README, Inputs)",
            src, c.gpus_per_node, c.nvlink_domain, c.nics_per_node,
            c.nic_Bps > 0 ? " of " + num(c.nic_Bps / kGbit) + " Gb/s" : "", base_label,
            num(base.inter.nic_Bps / kGbit));
    replaced.push_back("topology");
  }
  // The job's size and its price are the user's: the base's are not carried.
  c.nodes = f.nodes.value_or(0);
  c.gpu_hour_usd = f.gpu_hour_usd.value_or(0);
  if (f.nodes) given["nodes"] = "given to profile init (the default job size, not a cap)";
  if (f.gpu_hour_usd) given["gpu_hour_usd"] = fmt("given ({})", src);

  // Provenance: what profile init did, the facts, then every base entry still true, marked.
  c.provenance = given;
  c.provenance["profile_init"] = fmt(
      "written by planner profile init {} from datasheet facts ({}) on the base profile {} ({}), "
      "the nearest known GPU: every constant not given here is {}'s, carried unchanged "
      "(entries marked [carried from {}]); none of them was measured on this hardware",
      PLANNER_VERSION, src, base_label, std::filesystem::path(base_file).filename().string(),
      base_label, base_label);
  for (const auto& entry : base.provenance) {  // no structured binding: clang's lambdas
    const std::string& key = entry.first;
    const bool stale = std::any_of(replaced.begin(), replaced.end(),
                                   [&](const std::string& p) { return under(key, p); });
    if (!stale && !given.count(key))
      c.provenance[key] = fmt("[carried from {}] {}", base_label, entry.second);
  }
  const std::string text = cluster_yaml(
      c, {fmt("{}: written by planner profile init from datasheet facts on the base profile {}.",
              f.name, base_label),
          fmt("Every constant not given is {}'s (see provenance); predictions on this hardware",
              base_label),
          "are untested against measured runs until it is calibrated (calibrate/, README)."});
  parse_cluster(text, out_label);  // what is written loads, or nothing is written
  return text;
}

}  // namespace planner::io
