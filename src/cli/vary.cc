#include "cli/vary.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "planner/error.h"
#include "planner/format.h"
#include "planner/io/cluster_io.h"
#include "planner/limits.h"
#include "planner/units.h"

namespace planner::cli {
namespace {

/// A scaled profile number must stay in the range its key has in a profile file.
void check_scaled(double value, const limits::Range& range, const std::string& what) {
  if (!range.contains(value))
    throw InputError("", 0, "--vary",
                     "the scaled " + what + " would be " + fmt("{:g}", value) + ", outside " +
                         range.text() + " (the range a profile may give)");
}

void scale_tier(NetworkTier& t, const std::string& key, bool bandwidth, double f) {
  for (CollectiveCost& c : t.cost) {
    if (bandwidth) {
      c.busbw_Bps *= f;
      check_scaled(c.busbw_Bps / kGB, limits::kBusbwGBps, key + " busbw_GBps");
      for (auto& point : c.curve) {
        point.second *= f;
        check_scaled(point.second / kGB, limits::kCurveBusbwGBps, key + " busbw curve point");
      }
    } else {
      c.latency_s *= f;
      check_scaled(c.latency_s / kUs, limits::kLatencyUs, key + " latency_us");
    }
  }
  if (!bandwidth) {
    t.hop_latency_s *= f;
    check_scaled(t.hop_latency_s / kUs, limits::kLatencyUs, key + " hop_latency_us");
  }
}

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

double parse_factor(const std::string& text, const std::string& change) {
  try {
    size_t used = 0;
    const double f = std::stod(text, &used);
    if (used == text.size() && f > 0 && std::isfinite(f)) return f;
  } catch (const std::exception&) {
  }
  throw InputError("", 0, "--vary",
                   "'" + change + "': expected a positive factor after '*', got '" + text + "'");
}

/// The plan with knob changes: the baseline's plan string with the given keys replaced, parsed
/// again by parse_plan (so unknown knobs and bad values get its messages).
Plan vary_plan(const Plan& base, const std::vector<std::pair<std::string, std::string>>& knobs) {
  std::vector<std::pair<std::string, std::string>> kv;
  for (const std::string& item : split(to_plan_string(base), ','))
    kv.push_back({item.substr(0, item.find('=')), item.substr(item.find('=') + 1)});
  auto given = [&](const char* key) {
    return std::any_of(knobs.begin(), knobs.end(), [&](const auto& k) { return k.first == key; });
  };
  auto drop = [&](const char* key) {
    kv.erase(std::remove_if(kv.begin(), kv.end(), [&](const auto& x) { return x.first == key; }),
             kv.end());
  };
  const bool regroup = (given("tp") || given("pp") || given("cp")) && !given("dp");
  if (regroup) drop("dp");
  if (given("vpp") && !given("schedule")) drop("schedule");
  for (const auto& [key, value] : knobs) {
    drop(key.c_str());
    kv.push_back({key, value});
  }
  std::string text;
  for (const auto& [key, value] : kv) text += (text.empty() ? "" : ",") + key + "=" + value;
  Plan p = parse_plan(text, "--vary");
  if (p.dp == 0) {
    const long long model_parallel = 1LL * p.tp * p.pp * p.cp;
    if (base.gpus() % model_parallel != 0)
      throw InputError("", 0, "--vary",
                       "tp*pp*cp = " + std::to_string(model_parallel) +
                           " does not divide the baseline's " + std::to_string(base.gpus()) +
                           " GPUs");
    p.dp = static_cast<int>(base.gpus() / model_parallel);
  }
  return p;
}

}  // namespace

const std::vector<std::string>& vary_scale_names() {
  static const std::vector<std::string> names = {"ib_busbw",       "ib_latency", "nvlink_busbw",
                                                 "nvlink_latency", "hbm_bw",     "hbm_size",
                                                 "peak_flops"};
  return names;
}

void scale_profile(ClusterProfile& c, const std::string& name, double f) {
  if (name == "ib_busbw")
    scale_tier(c.inter, "inter_node", true, f);
  else if (name == "ib_latency")
    scale_tier(c.inter, "inter_node", false, f);
  else if (name == "nvlink_busbw")
    scale_tier(c.intra, "intra_node", true, f);
  else if (name == "nvlink_latency")
    scale_tier(c.intra, "intra_node", false, f);
  else if (name == "hbm_bw") {
    c.gpu.hbm_Bps *= f;
    check_scaled(c.gpu.hbm_Bps / kGB, limits::kHbmGBps, "hbm_bandwidth_GBps");
  } else if (name == "hbm_size") {
    c.gpu.hbm_bytes *= f;
    check_scaled(c.gpu.hbm_bytes / kGiB, limits::kHbmGiB, "hbm_GiB");
  } else if (name == "peak_flops") {
    for (int d = 0; d < kNumDtypes; ++d) {
      double& peak = c.gpu.peak_flops[d];
      if (peak <= 0) continue;  // not supported stays not supported
      peak *= f;
      check_scaled(peak / kTera, limits::kPeakTflops,
                   std::string("peak_tflops.") + to_string(static_cast<Dtype>(d)));
    }
  } else {
    const std::string near = nearest_word(name, vary_scale_names());
    std::string list;
    for (const std::string& n : vary_scale_names()) list += (list.empty() ? "" : ", ") + n;
    throw InputError("", 0, "--vary",
                     "unknown profile number '" + name + "'" +
                         (near.empty() ? "" : ", did you mean '" + near + "'?") +
                         " (scalable: " + list + ")");
  }
}

Variant apply_vary(const Variant& base, const std::string& text) {
  Variant v = base;
  v.label.clear();
  std::vector<std::pair<std::string, std::string>> knobs;
  const std::vector<std::string> changes = split(text, ',');
  if (changes.empty())
    throw InputError("", 0, "--vary",
                     "expected NAME*FACTOR, cluster=FILE, framework=NAME or KNOB=VALUE");
  for (const std::string& change : changes) {
    v.label += (v.label.empty() ? "" : ",") + change;
    const size_t star = change.find('*'), eq = change.find('=');
    if (star != std::string::npos && (eq == std::string::npos || star < eq)) {
      const double factor = parse_factor(change.substr(star + 1), change);
      try {
        scale_profile(v.cluster, change.substr(0, star), factor);
      } catch (const InputError& e) {  // name the change: a column may hold several
        throw InputError("", 0, "--vary", "'" + change + "': " + e.message());
      }
    } else if (eq != std::string::npos && change.substr(0, eq) == "framework") {
      v.framework = parse_framework(change.substr(eq + 1), "--vary");
    } else if (eq != std::string::npos && change.substr(0, eq) == "cluster") {
      const std::string given = change.substr(eq + 1);
      v.cluster_file = resolve_input(given, "hw_profiles", "--vary");
      v.cluster = io::load_cluster(v.cluster_file);
      v.label.resize(v.label.size() - given.size());  // the file's name, not its path
      v.label += std::filesystem::path(v.cluster_file).stem().string();
    } else if (eq != std::string::npos) {
      knobs.push_back({change.substr(0, eq), change.substr(eq + 1)});
    } else {
      throw InputError(
          "", 0, "--vary",
          "'" + change + "': expected NAME*FACTOR, cluster=FILE, framework=NAME or KNOB=VALUE");
    }
  }
  if (!knobs.empty()) v.plan = vary_plan(base.plan, knobs);
  return v;
}

}  // namespace planner::cli
