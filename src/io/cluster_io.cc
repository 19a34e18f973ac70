#include "planner/io/cluster_io.h"

#include <algorithm>
#include <cmath>

#include "planner/error.h"
#include "planner/format.h"
#include "planner/framework.h"
#include "planner/io/yaml_util.h"
#include "planner/limits.h"
#include "planner/names.h"
#include "planner/units.h"

namespace planner::io {
namespace {

using limits::Range;

std::string number_text(double v) { return fmt("{:g}", v); }

/// A number in `range` (the unit is the key's), else an error that states the range.
double in_range(const YamlReader& r, const std::string& key, const Range& range) {
  const double v = r.get_double(key);
  if (!range.contains(v)) r.fail(key, "must be in " + range.text() + ", got " + number_text(v));
  return v;
}

int int_in(const YamlReader& r, const std::string& key, int lo, int hi) {
  const int v = r.get_int(key);
  if (v < lo || v > hi)
    r.fail(key, "must be an integer from " + std::to_string(lo) + " to " + std::to_string(hi) +
                    ", got " + std::to_string(v));
  return v;
}

/// One element of a list entry as a finite number; false when it is not one.
bool element(const YAML::Node& n, double& out) {
  try {
    out = n.as<double>();
  } catch (const YAML::Exception&) {
    return false;
  }
  return std::isfinite(out);
}

/// gpu.gemm.measured: [[m, n, k, batch, dtype, efficiency], ...] from planner validate.
std::vector<MeasuredGemm> read_measured(const YamlReader& r) {
  const YAML::Node list = r.node("measured");
  if (!list.IsSequence())
    r.fail("measured", "expected a list of [m, n, k, batch, dtype, efficiency]");
  std::vector<MeasuredGemm> out;
  for (const auto& e : list) {
    MeasuredGemm x;
    bool ok = e.IsSequence() && e.size() == 6 && element(e[0], x.m) && element(e[1], x.n) &&
              element(e[2], x.k) && element(e[3], x.batch) && element(e[5], x.efficiency) &&
              e[4].IsScalar();
    if (ok) {
      const std::string d = e[4].Scalar();
      const std::optional<Dtype> dt = named<Dtype>(d);
      ok = dt.has_value();
      x.dtype = dt.value_or(Dtype::bf16);
    }
    const Range& dim = limits::kGemmDim;
    if (!ok || !dim.contains(x.m) || !dim.contains(x.n) || !dim.contains(x.k) ||
        !dim.contains(x.batch) || !limits::kEfficiency.contains(x.efficiency))
      throw InputError(r.file(), e.Mark().line + 1, r.path("measured"),
                       "expected [m, n, k, batch, dtype, efficiency] with m, n, k and batch in " +
                           dim.text() + " and efficiency in " + limits::kEfficiency.text());
    out.push_back(x);
  }
  return out;
}

GemmModel read_gemm(const YamlReader& r) {
  r.check_keys({"max_efficiency", "k_half", "misaligned_factor", "alignment", "launch_us", "tiles",
                "measured"});
  GemmModel g;
  g.max_efficiency = in_range(r, "max_efficiency", limits::kEfficiency);
  g.k_half = in_range(r, "k_half", limits::kKHalf);
  g.misaligned_factor = in_range(r, "misaligned_factor", limits::kEfficiency);
  g.alignment = int_in(r, "alignment", 1, limits::kAlignment);
  g.launch_s = in_range(r, "launch_us", limits::kLatencyUs) * kUs;
  const YAML::Node tiles = r.node("tiles");
  if (!tiles.IsSequence() || tiles.size() == 0)
    r.fail("tiles", "expected a list of [m, n, relative_efficiency]");
  for (const auto& t : tiles) {
    double m = 0, n = 0, eff = 0;
    const bool ok = t.IsSequence() && t.size() == 3 && element(t[0], m) && element(t[1], n) &&
                    element(t[2], eff) && m == std::floor(m) && n == std::floor(n) && m >= 1 &&
                    n >= 1 && m <= limits::kTileDim && n <= limits::kTileDim &&
                    limits::kEfficiency.contains(eff);
    if (!ok)
      throw InputError(r.file(), t.Mark().line + 1, r.path("tiles"),
                       "expected [m, n, relative_efficiency] with m and n integers from 1 to " +
                           std::to_string(limits::kTileDim) + " and efficiency in " +
                           limits::kEfficiency.text());
    g.tiles.push_back({static_cast<int>(m), static_cast<int>(n), eff});
  }
  if (r.has("measured")) g.measured = read_measured(r);
  return g;
}

Gpu read_gpu(const YamlReader& r) {
  r.check_keys({"name", "sms", "peak_tflops", "hbm_GiB", "hbm_bandwidth_GBps", "hbm_efficiency",
                "sustained_efficiency", "gemm", "flash_efficiency", "flash_backward_efficiency",
                "overlap_compute_slowdown"});
  Gpu g;
  g.name = r.get_string("name");
  g.sms = int_in(r, "sms", 1, limits::kSms);
  const YamlReader peak = r.child("peak_tflops");
  peak.check_keys({"fp16", "bf16", "fp8", "tf32", "mxfp8", "nvfp4"});
  auto peak_of = [&](const std::string& key) {
    const bool none = !peak.has(key) || peak.get_double(key) == 0;  // no tensor-core support
    return none ? 0.0 : in_range(peak, key, limits::kPeakTflops) * kTera;
  };
  for (Dtype d : {Dtype::fp16, Dtype::bf16, Dtype::fp8, Dtype::tf32, Dtype::mxfp8})
    g.peak_flops[static_cast<int>(d)] = peak_of(to_string(d));
  g.nvfp4_flops = peak_of("nvfp4");
  g.hbm_bytes = in_range(r, "hbm_GiB", limits::kHbmGiB) * kGiB;
  g.hbm_Bps = in_range(r, "hbm_bandwidth_GBps", limits::kHbmGBps) * kGB;
  g.hbm_efficiency = in_range(r, "hbm_efficiency", limits::kEfficiency);
  g.sustained_efficiency = in_range(r, "sustained_efficiency", limits::kEfficiency);
  g.gemm = read_gemm(r.child("gemm"));
  return g;
}

CollectiveCost read_collective(const YamlReader& r) {
  r.check_keys({"busbw_GBps", "latency_us", "curve"});
  CollectiveCost c;
  c.busbw_Bps = in_range(r, "busbw_GBps", limits::kBusbwGBps) * kGB;
  c.latency_s = in_range(r, "latency_us", limits::kLatencyUs) * kUs;
  if (!r.has("curve")) return c;
  const YAML::Node curve = r.node("curve");
  if (!curve.IsSequence()) r.fail("curve", "expected a list of [bytes, busbw_GBps]");
  double last = 0;
  for (const auto& p : curve) {
    double bytes = 0, busbw = 0;
    const bool ok = p.IsSequence() && p.size() == 2 && element(p[0], bytes) &&
                    element(p[1], busbw) && bytes > last && limits::kCurveBytes.contains(bytes) &&
                    limits::kCurveBusbwGBps.contains(busbw);
    if (!ok)
      throw InputError(r.file(), p.Mark().line + 1, r.path("curve"),
                       "expected [bytes, busbw_GBps] pairs with ascending bytes in " +
                           limits::kCurveBytes.text() + " and busbw in " +
                           limits::kCurveBusbwGBps.text());
    last = bytes;
    c.curve.emplace_back(bytes, busbw * kGB);
  }
  return c;
}

NetworkTier read_tier(const YamlReader& r) {
  r.check_keys({"name", "reference_ranks", "hop_latency_us", "nic_gbps", "link_GBps", "allreduce",
                "allgather", "reduce_scatter", "alltoall", "sendrecv"});
  NetworkTier t;
  t.name = r.get_string("name");
  t.reference_ranks = int_in(r, "reference_ranks", 1, static_cast<int>(limits::kClusterGpus));
  t.hop_latency_s = in_range(r, "hop_latency_us", limits::kLatencyUs) * kUs;
  if (r.has("nic_gbps")) t.nic_Bps = in_range(r, "nic_gbps", limits::kNicGbps) * kGbit;
  if (r.has("link_GBps")) t.link_Bps = in_range(r, "link_GBps", limits::kBusbwGBps) * kGB;
  for (Collective c : {Collective::allreduce, Collective::allgather, Collective::reduce_scatter,
                       Collective::alltoall, Collective::sendrecv})
    t.cost[static_cast<int>(c)] = read_collective(r.child(to_string(c)));
  return t;
}

/// The GPU's attention-kernel rates and its compute slowdown beside a collective, each from the
/// gpu block or else (profiles written before the hardware/software split) the software block.
void read_kernel_rates(const YamlReader& gpu, const YamlReader* legacy, Gpu& g) {
  auto from = [&](const char* key) -> const YamlReader& {
    return legacy && !gpu.has(key) && legacy->has(key) ? *legacy : gpu;
  };
  g.flash_efficiency = in_range(from("flash_efficiency"), "flash_efficiency", limits::kEfficiency);
  // Optional (profiles written before these keys existed): the defaults' sources are in cluster.h.
  const YamlReader& bwd = from("flash_backward_efficiency");
  g.flash_backward_efficiency =
      bwd.has("flash_backward_efficiency")
          ? in_range(bwd, "flash_backward_efficiency", limits::kEfficiency)
          : g.flash_efficiency * kFlashBackwardOverForward;
  const YamlReader& slow = from("overlap_compute_slowdown");
  if (slow.has("overlap_compute_slowdown"))
    g.overlap_compute_slowdown = in_range(slow, "overlap_compute_slowdown", {0, 1});
}

/// A legacy `software:` block: the default execution choices, read as before.
SoftwareStack read_software(const YamlReader& r) {
  r.check_keys({"attention", "flash_efficiency", "flash_backward_efficiency", "overlap_grad_reduce",
                "overlap_param_gather", "overlap_tp_comm", "causal_attention_skip",
                "zero3_collective_nics", "overlap_compute_slowdown"});
  SoftwareStack s;
  const std::string attn = r.get_string("attention");
  if (attn != "flash" && attn != "unfused")
    r.fail("attention", "expected flash or unfused, got '" + attn + "'");
  s.attention = attn == "flash" ? AttentionKernel::flash : AttentionKernel::unfused;
  s.overlap_grad_reduce = r.get_bool("overlap_grad_reduce");
  s.overlap_param_gather = r.get_bool("overlap_param_gather");
  s.overlap_tp_comm = r.has("overlap_tp_comm") && r.get_bool("overlap_tp_comm");
  s.causal_attention_skip = r.get_bool("causal_attention_skip");
  s.zero3_collective_nics = int_in(r, "zero3_collective_nics", 1, limits::kNics);
  return s;
}

/// The kernel rates, and a legacy software block's execution choices (a key in both is refused).
void read_rates_and_legacy(const YamlReader& r, ClusterProfile& c) {
  const YamlReader gpu = r.child("gpu");
  if (!r.has("software")) return read_kernel_rates(gpu, nullptr, c.gpu);
  const YamlReader sw = r.child("software");
  c.legacy_software = read_software(sw);
  for (const char* key :
       {"flash_efficiency", "flash_backward_efficiency", "overlap_compute_slowdown"})
    if (gpu.has(key) && sw.has(key))
      sw.fail(key, std::string("given twice, also as gpu.") + key + "; keep the gpu one");
  read_kernel_rates(gpu, &sw, c.gpu);
}

/// Every key a profile must have, as dotted paths ("gpu.gemm.k_half"); flash_efficiency may
/// instead sit in a legacy software block.
std::vector<std::string> required_keys() {
  std::vector<std::string> keys = {"name",
                                   "gpus_per_node",
                                   "gpu.name",
                                   "gpu.sms",
                                   "gpu.peak_tflops",
                                   "gpu.hbm_GiB",
                                   "gpu.hbm_bandwidth_GBps",
                                   "gpu.hbm_efficiency",
                                   "gpu.sustained_efficiency",
                                   "gpu.gemm.max_efficiency",
                                   "gpu.gemm.k_half",
                                   "gpu.gemm.misaligned_factor",
                                   "gpu.gemm.alignment",
                                   "gpu.gemm.launch_us",
                                   "gpu.gemm.tiles"};
  for (const char* tier : {"intra_node", "inter_node"}) {
    const std::string t = std::string("network.") + tier + ".";
    for (const char* k : {"name", "reference_ranks", "hop_latency_us"}) keys.push_back(t + k);
    for (Collective c : {Collective::allreduce, Collective::allgather, Collective::reduce_scatter,
                         Collective::alltoall, Collective::sendrecv})
      for (const char* k : {"busbw_GBps", "latency_us"}) keys.push_back(t + to_string(c) + "." + k);
  }
  return keys;
}

/// All the missing keys in one message (a profile written from a datasheet lacks several at
/// once); a missing section is named once, not each key under it.
void check_required(const YAML::Node& root, const std::string& file) {
  std::vector<std::string> missing;
  for (const std::string& path : required_keys()) {
    YAML::Node node;
    node.reset(root);  // a Node's operator= writes through; reset() only rebinds
    std::string at;
    bool present = true;
    bool misspelt = false;  // a near key is there: the reader's "did you mean" says more
    for (size_t start = 0; present && start <= path.size();) {
      const size_t dot = std::min(path.find('.', start), path.size());
      const std::string key = path.substr(start, dot - start);
      at += (at.empty() ? "" : ".") + key;
      const YAML::Node& here = node;  // const: a lookup must not insert the key
      present = here.IsMap() && here[key];
      if (present) {
        node.reset(here[key]);
      } else if (here.IsMap()) {
        std::vector<std::string> there;
        for (auto it = node.begin(); it != node.end(); ++it)
          if (it->first.IsScalar()) there.push_back(it->first.Scalar());
        misspelt = !nearest_word(key, there).empty();
      }
      start = dot + 1;
    }
    if (present || misspelt) continue;
    const bool under_missing = std::any_of(missing.begin(), missing.end(), [&](const auto& m) {
      return at.rfind(m + ".", 0) == 0 || at == m;
    });
    const bool legacy_flash = at == "gpu.flash_efficiency";
    if (!under_missing && !legacy_flash) missing.push_back(at);
  }
  if (missing.empty()) return;
  std::string list;
  for (const std::string& k : missing) list += (list.empty() ? "" : ", ") + k;
  throw InputError(file, 0, "",
                   fmt("missing {} key{}: {} (README, Inputs: every key with its meaning)",
                       missing.size(), missing.size() == 1 ? "" : "s", list));
}

/// The optional `host:` block: system memory, DRAM and host-link bandwidth, NVMe (offload).
Host read_host(const YamlReader& r) {
  r.check_keys(
      {"memory_GiB", "memory_bandwidth_GBps", "link_GBps", "measured_link_GBps", "nvme_GBps"});
  Host h;
  h.memory_bytes = in_range(r, "memory_GiB", limits::kHostMemoryGiB) * kGiB;
  h.memory_Bps = in_range(r, "memory_bandwidth_GBps", limits::kHostGBps) * kGB;
  h.link_Bps = in_range(r, "link_GBps", limits::kHostGBps) * kGB;
  if (r.has("measured_link_GBps")) {
    h.measured_Bps = in_range(r, "measured_link_GBps", limits::kHostGBps) * kGB;
    if (h.measured_Bps > h.link_Bps)
      r.fail("measured_link_GBps", fmt("must not exceed link_GBps ({:g}), got {:g}",
                                       h.link_Bps / kGB, h.measured_Bps / kGB));
  }
  if (r.has("nvme_GBps")) h.nvme_Bps = in_range(r, "nvme_GBps", limits::kHostGBps) * kGB;
  return h;
}

ClusterProfile read_cluster(const YamlReader& r) {
  r.check_keys({"name", "gpus_per_node", "nvlink_domain", "nics_per_node", "nic_gbps", "nodes",
                "gpu_hour_usd", "gpu", "host", "software", "network", "provenance"});
  ClusterProfile c;
  c.file = r.file();
  c.name = r.get_string("name");
  for (char ch : c.name)
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f)
      r.fail("name", "must not contain control characters (newlines, tabs)");
  c.gpus_per_node = int_in(r, "gpus_per_node", 1, limits::kGpusPerNode);
  c.nvlink_domain = c.gpus_per_node;
  if (r.has("nvlink_domain")) {
    c.nvlink_domain = int_in(r, "nvlink_domain", 1, limits::kNvlinkDomain);
    if (c.nvlink_domain % c.gpus_per_node != 0)
      r.fail("nvlink_domain", fmt("must be a whole number of hosts of gpus_per_node={}, got {}",
                                  c.gpus_per_node, c.nvlink_domain));
  }
  c.nics_per_node =
      r.has("nics_per_node") ? int_in(r, "nics_per_node", 1, limits::kNics) : c.gpus_per_node;
  if (r.has("nic_gbps")) c.nic_Bps = in_range(r, "nic_gbps", limits::kNicGbps) * kGbit;
  if (r.has("nodes")) {  // the default job size, not a cap
    c.nodes = int_in(r, "nodes", 1, static_cast<int>(limits::kClusterGpus));
    if (1LL * c.nodes * c.gpus_per_node > limits::kClusterGpus)
      r.fail("nodes", "nodes x gpus_per_node = " + std::to_string(1LL * c.nodes * c.gpus_per_node) +
                          " GPUs, over the limit of " + std::to_string(limits::kClusterGpus));
  }
  if (r.has("gpu_hour_usd")) c.gpu_hour_usd = in_range(r, "gpu_hour_usd", limits::kGpuHourUsd);
  c.gpu = read_gpu(r.child("gpu"));
  if (r.has("host")) c.host = read_host(r.child("host"));
  read_rates_and_legacy(r, c);
  c.software = c.legacy_software.value_or(info(Framework::megatron).stack);
  const YamlReader net = r.child("network");
  net.check_keys({"intra_node", "inter_node"});
  c.intra = read_tier(net.child("intra_node"));
  c.inter = read_tier(net.child("inter_node"));
  if (!r.has("provenance")) return c;  // optional: a profile should name its sources
  const YAML::Node prov = r.node("provenance");
  if (!prov.IsMap()) r.fail("provenance", "expected a mapping of key: source");
  for (auto it = prov.begin(); it != prov.end(); ++it) {
    if (!it->second.IsScalar())
      throw InputError(r.file(), it->first.Mark().line + 1, "provenance." + it->first.Scalar(),
                       "expected a source as text");
    c.provenance[it->first.Scalar()] = it->second.Scalar();
  }
  return c;
}

}  // namespace

ClusterProfile load_cluster(const std::string& path) {
  const YAML::Node root = load_yaml_file(path);
  if (root.IsMap()) check_required(root, path);
  return read_cluster(YamlReader(root, path));
}

ClusterProfile parse_cluster(const std::string& text, const std::string& file) {
  const YAML::Node root = parse_yaml_text(text, file);
  if (root.IsMap()) check_required(root, file);
  return read_cluster(YamlReader(root, file));
}

}  // namespace planner::io
