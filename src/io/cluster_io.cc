#include "planner/io/cluster_io.h"

#include "planner/error.h"
#include "planner/io/yaml_util.h"
#include "planner/units.h"

namespace planner::io {
namespace {

double positive(const YamlReader& r, const std::string& key) {
  const double v = r.get_double(key);
  if (!(v > 0)) r.fail(key, "must be positive");
  return v;
}

double fraction(const YamlReader& r, const std::string& key) {
  const double v = r.get_double(key);
  if (!(v > 0 && v <= 1)) r.fail(key, "must be in (0, 1]");
  return v;
}

/// gpu.gemm.measured: [[m, n, k, batch, dtype, efficiency], ...] from planner validate.
std::vector<MeasuredGemm> read_measured(const YamlReader& r) {
  const YAML::Node list = r.node("measured");
  if (!list.IsSequence()) r.fail("measured", "expected a list of [m, n, k, batch, dtype, efficiency]");
  std::vector<MeasuredGemm> out;
  for (const auto& e : list) {
    MeasuredGemm x;
    bool ok = e.IsSequence() && e.size() == 6;
    try {
      if (ok) {
        x.m = e[0].as<double>(), x.n = e[1].as<double>(), x.k = e[2].as<double>();
        x.batch = e[3].as<double>(), x.efficiency = e[5].as<double>();
        const std::string d = e[4].as<std::string>();
        ok = d == "bf16" || d == "fp16" || d == "fp8" || d == "tf32";
        x.dtype = d == "fp16" ? Dtype::fp16 : d == "fp8" ? Dtype::fp8 : d == "tf32" ? Dtype::tf32 : Dtype::bf16;
      }
    } catch (const YAML::Exception&) {
      ok = false;
    }
    if (!ok || x.m <= 0 || x.n <= 0 || x.k <= 0 || x.batch <= 0 || !(x.efficiency > 0 && x.efficiency <= 1))
      throw InputError(r.file(), e.Mark().line + 1, r.path("measured"),
                       "expected [m, n, k, batch, dtype, efficiency] with efficiency in (0, 1]");
    out.push_back(x);
  }
  return out;
}

GemmModel read_gemm(const YamlReader& r) {
  r.check_keys({"max_efficiency", "k_half", "misaligned_factor", "alignment", "launch_us", "tiles",
                "measured"});
  GemmModel g;
  g.max_efficiency = fraction(r, "max_efficiency");
  g.k_half = r.get_double("k_half");
  if (g.k_half < 0) r.fail("k_half", "must not be negative");
  g.misaligned_factor = fraction(r, "misaligned_factor");
  g.alignment = r.get_int("alignment");
  if (g.alignment < 1) r.fail("alignment", "must be a positive number of elements");
  g.launch_s = r.get_double("launch_us") * kUs;
  if (g.launch_s < 0) r.fail("launch_us", "must not be negative");
  const YAML::Node tiles = r.node("tiles");
  if (!tiles.IsSequence() || tiles.size() == 0)
    r.fail("tiles", "expected a list of [m, n, relative_efficiency]");
  for (const auto& t : tiles) {
    GemmTile tile;
    try {
      if (t.IsSequence() && t.size() == 3)
        tile = {t[0].as<int>(), t[1].as<int>(), t[2].as<double>()};
    } catch (const YAML::Exception&) {
      tile.m = 0;
    }
    if (!t.IsSequence() || t.size() != 3 || tile.m <= 0 || tile.n <= 0 ||
        !(tile.relative_efficiency > 0 && tile.relative_efficiency <= 1))
      throw InputError(r.file(), t.Mark().line + 1, r.path("tiles"),
                       "expected [m, n, relative_efficiency] with positive m, n and efficiency in (0, 1]");
    g.tiles.push_back(tile);
  }
  if (r.has("measured")) g.measured = read_measured(r);
  return g;
}

Gpu read_gpu(const YamlReader& r) {
  r.check_keys({"name", "sms", "peak_tflops", "hbm_GiB", "hbm_bandwidth_GBps", "hbm_efficiency",
                "sustained_efficiency", "gemm"});
  Gpu g;
  g.name = r.get_string("name");
  g.sms = r.get_int("sms");
  if (g.sms <= 0) r.fail("sms", "must be a positive integer");
  const YamlReader peak = r.child("peak_tflops");
  peak.check_keys({"fp16", "bf16", "fp8", "tf32"});
  for (Dtype d : {Dtype::fp16, Dtype::bf16, Dtype::fp8, Dtype::tf32}) {
    const std::string key = to_string(d);
    const double v = peak.has(key) ? peak.get_double(key) : 0.0;
    if (v < 0) peak.fail(key, "must not be negative");
    g.peak_flops[static_cast<int>(d)] = v * kTera;
  }
  g.hbm_bytes = positive(r, "hbm_GiB") * kGiB;
  g.hbm_Bps = positive(r, "hbm_bandwidth_GBps") * kGB;
  g.hbm_efficiency = fraction(r, "hbm_efficiency");
  g.sustained_efficiency = fraction(r, "sustained_efficiency");
  g.gemm = read_gemm(r.child("gemm"));
  return g;
}

CollectiveCost read_collective(const YamlReader& r) {
  r.check_keys({"busbw_GBps", "latency_us", "curve"});
  CollectiveCost c;
  c.busbw_Bps = positive(r, "busbw_GBps") * kGB;
  c.latency_s = r.get_double("latency_us") * kUs;
  if (c.latency_s < 0) r.fail("latency_us", "must not be negative");
  if (!r.has("curve")) return c;
  const YAML::Node curve = r.node("curve");
  if (!curve.IsSequence()) r.fail("curve", "expected a list of [bytes, busbw_GBps]");
  double last = 0;
  for (const auto& p : curve) {
    double bytes = 0, busbw = 0;
    try {
      if (p.IsSequence() && p.size() == 2) bytes = p[0].as<double>(), busbw = p[1].as<double>();
    } catch (const YAML::Exception&) {
      bytes = 0;
    }
    if (bytes <= last || busbw <= 0)
      throw InputError(r.file(), p.Mark().line + 1, r.path("curve"),
                       "expected [bytes, busbw_GBps] pairs with ascending bytes and positive busbw");
    last = bytes;
    c.curve.emplace_back(bytes, busbw * kGB);
  }
  return c;
}

NetworkTier read_tier(const YamlReader& r) {
  r.check_keys({"name", "reference_ranks", "hop_latency_us", "allreduce", "allgather",
                "reduce_scatter", "alltoall", "sendrecv"});
  NetworkTier t;
  t.name = r.get_string("name");
  t.reference_ranks = r.get_int("reference_ranks");
  if (t.reference_ranks < 1) r.fail("reference_ranks", "must be a positive integer");
  t.hop_latency_s = r.get_double("hop_latency_us") * kUs;
  if (t.hop_latency_s < 0) r.fail("hop_latency_us", "must not be negative");
  for (Collective c : {Collective::allreduce, Collective::allgather, Collective::reduce_scatter,
                       Collective::alltoall, Collective::sendrecv})
    t.cost[static_cast<int>(c)] = read_collective(r.child(to_string(c)));
  return t;
}

SoftwareStack read_software(const YamlReader& r) {
  r.check_keys({"attention", "flash_efficiency", "flash_backward_efficiency", "overlap_grad_reduce", "overlap_param_gather",
                "overlap_tp_comm", "causal_attention_skip", "zero3_collective_nics", "overlap_compute_slowdown"});
  SoftwareStack s;
  const std::string attn = r.get_string("attention");
  if (attn != "flash" && attn != "unfused") r.fail("attention", "expected flash or unfused, got '" + attn + "'");
  s.attention = attn == "flash" ? AttentionKernel::flash : AttentionKernel::unfused;
  s.flash_efficiency = fraction(r, "flash_efficiency");
  // Optional (profiles written before these keys existed): the defaults' sources are in cluster.h.
  s.flash_backward_efficiency = r.has("flash_backward_efficiency")
                                    ? fraction(r, "flash_backward_efficiency")
                                    : s.flash_efficiency * kFlashBackwardOverForward;
  s.overlap_grad_reduce = r.get_bool("overlap_grad_reduce");
  s.overlap_param_gather = r.get_bool("overlap_param_gather");
  if (r.has("overlap_tp_comm")) s.overlap_tp_comm = r.get_bool("overlap_tp_comm");
  s.causal_attention_skip = r.get_bool("causal_attention_skip");
  s.zero3_collective_nics = r.get_int("zero3_collective_nics");
  if (s.zero3_collective_nics <= 0) r.fail("zero3_collective_nics", "must be a positive integer");
  if (r.has("overlap_compute_slowdown")) {
    s.overlap_compute_slowdown = r.get_double("overlap_compute_slowdown");
    if (!(s.overlap_compute_slowdown >= 0 && s.overlap_compute_slowdown <= 1))
      r.fail("overlap_compute_slowdown", "must be in [0, 1]");
  }
  return s;
}

ClusterProfile read_cluster(const YamlReader& r) {
  r.check_keys({"name", "gpus_per_node", "nodes", "gpu_hour_usd", "gpu", "software", "network",
                "provenance"});
  ClusterProfile c;
  c.file = r.file();
  c.name = r.get_string("name");
  for (char ch : c.name)
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f)
      r.fail("name", "must not contain control characters (newlines, tabs)");
  c.gpus_per_node = r.get_int("gpus_per_node");
  if (c.gpus_per_node <= 0) r.fail("gpus_per_node", "must be a positive integer");
  c.nodes = r.get_int("nodes");
  if (c.nodes <= 0) r.fail("nodes", "must be a positive integer");
  if (1LL * c.nodes * c.gpus_per_node > (1 << 24)) r.fail("nodes", "more than 16M GPUs in all");
  if (r.has("gpu_hour_usd")) c.gpu_hour_usd = r.get_double("gpu_hour_usd");
  c.gpu = read_gpu(r.child("gpu"));
  c.software = read_software(r.child("software"));
  const YamlReader net = r.child("network");
  net.check_keys({"intra_node", "inter_node"});
  c.intra = read_tier(net.child("intra_node"));
  c.inter = read_tier(net.child("inter_node"));
  const YAML::Node prov = r.node("provenance");
  if (!prov.IsMap() || prov.size() == 0) r.fail("provenance", "expected a mapping of key: source");
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
  return read_cluster(YamlReader(load_yaml_file(path), path));
}

ClusterProfile parse_cluster(const std::string& text, const std::string& file) {
  return read_cluster(YamlReader(parse_yaml_text(text, file), file));
}

}  // namespace planner::io
