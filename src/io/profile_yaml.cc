#include "planner/io/profile_yaml.h"

#include <algorithm>
#include <cctype>

#include "planner/error.h"
#include "planner/format.h"
#include "planner/units.h"

namespace planner::io {
namespace {

/// 6 significant digits: what a measurement supports, and what the round-trip test expects.
std::string num(double v) { return fmt("{:.6g}", v); }

std::string integer(double v) { return fmt("{:.0f}", v); }

/// A YAML double-quoted scalar.
std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char ch : s) {
    const unsigned char c = static_cast<unsigned char>(ch);
    if (c == '"' || c == '\\') {
      out += '\\', out += ch;
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20) {
      out += fmt("\\x{:02x}", c);
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

/// A mapping key, quoted only when it is not a plain `word.word-word` key.
std::string plain_key(const std::string& k) {
  const bool plain = !k.empty() && std::all_of(k.begin(), k.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  });
  return plain ? k : quoted(k);
}

void write_gemm(std::string& o, const GemmModel& g) {
  o += "  gemm:\n";
  o += "    max_efficiency: " + num(g.max_efficiency) + "\n";
  o += "    k_half: " + num(g.k_half) + "\n";
  o += "    misaligned_factor: " + num(g.misaligned_factor) + "\n";
  o += fmt("    alignment: {}\n", g.alignment);
  o += "    launch_us: " + num(g.launch_s / kUs) + "\n";
  o += "    tiles: [";
  for (size_t i = 0; i < g.tiles.size(); ++i)
    o += fmt("{}[{}, {}, {}]", i ? ", " : "", g.tiles[i].m, g.tiles[i].n,
             num(g.tiles[i].relative_efficiency));
  o += "]\n";
  if (g.measured.empty()) return;
  o += "    measured: [";  // [m, n, k, batch, dtype, efficiency], as planner validate writes
  for (size_t i = 0; i < g.measured.size(); ++i) {
    const MeasuredGemm& x = g.measured[i];
    o += fmt("{}[{}, {}, {}, {}, {}, {}]", i ? ",\n               " : "", integer(x.m),
             integer(x.n), integer(x.k), integer(x.batch), to_string(x.dtype), num(x.efficiency));
  }
  o += "]\n";
}

void write_gpu(std::string& o, const Gpu& g) {
  o += "gpu:\n";
  o += "  name: " + quoted(g.name) + "\n";
  o += fmt("  sms: {}\n", g.sms);
  o += "  peak_tflops: {";
  for (Dtype d : {Dtype::fp16, Dtype::bf16, Dtype::fp8, Dtype::tf32})
    o += fmt("{}{}: {}", d == Dtype::fp16 ? "" : ", ", to_string(d),
             num(g.peak_flops[static_cast<int>(d)] / kTera));
  if (const double mx = g.peak_flops[static_cast<int>(Dtype::mxfp8)]; mx > 0)
    o += ", mxfp8: " + num(mx / kTera);
  if (g.nvfp4_flops > 0) o += ", nvfp4: " + num(g.nvfp4_flops / kTera);
  o += "}\n";
  o += "  hbm_GiB: " + num(g.hbm_bytes / kGiB) + "\n";
  o += "  hbm_bandwidth_GBps: " + num(g.hbm_Bps / kGB) + "\n";
  o += "  hbm_efficiency: " + num(g.hbm_efficiency) + "\n";
  o += "  sustained_efficiency: " + num(g.sustained_efficiency) + "\n";
  o += "  flash_efficiency: " + num(g.flash_efficiency) + "\n";
  o += "  flash_backward_efficiency: " + num(g.flash_backward_efficiency) + "\n";
  o += "  overlap_compute_slowdown: " + num(g.overlap_compute_slowdown) + "\n";
  write_gemm(o, g.gemm);
}

void write_collective(std::string& o, Collective c, const CollectiveCost& cost) {
  o += fmt("    {}:\n", to_string(c));
  o += "      busbw_GBps: " + num(cost.busbw_Bps / kGB) + "\n";
  o += "      latency_us: " + num(cost.latency_s / kUs) + "\n";
  if (cost.curve.empty()) return;
  o += "      curve: [";
  for (size_t i = 0; i < cost.curve.size(); ++i) {
    if (i) o += i % 4 == 0 ? ",\n              " : ", ";
    o += fmt("[{}, {}]", integer(cost.curve[i].first), num(cost.curve[i].second / kGB));
  }
  o += "]\n";
}

void write_tier(std::string& o, const char* key, const NetworkTier& t) {
  o += fmt("  {}:\n", key);
  o += "    name: " + quoted(t.name) + "\n";
  o += fmt("    reference_ranks: {}\n", t.reference_ranks);
  o += "    hop_latency_us: " + num(t.hop_latency_s / kUs) + "\n";
  if (t.nic_Bps > 0) o += "    nic_gbps: " + num(t.nic_Bps / kGbit) + "\n";
  if (t.link_Bps > 0) o += "    link_GBps: " + num(t.link_Bps / kGB) + "\n";
  for (Collective c : {Collective::allreduce, Collective::allgather, Collective::reduce_scatter,
                       Collective::alltoall, Collective::sendrecv})
    write_collective(o, c, t.cost[static_cast<int>(c)]);
}

}  // namespace

std::string cluster_yaml(const ClusterProfile& c, const std::vector<std::string>& comments) {
  std::string o;
  for (const std::string& line : comments) o += "# " + line + "\n";
  o += "name: " + quoted(c.name) + "\n";
  o += fmt("gpus_per_node: {}\n", c.gpus_per_node);
  if (c.nvlink_domain != c.gpus_per_node) o += fmt("nvlink_domain: {}\n", c.nvlink_domain);
  if (c.nics_per_node != c.gpus_per_node) o += fmt("nics_per_node: {}\n", c.nics_per_node);
  if (c.nic_Bps > 0) o += "nic_gbps: " + num(c.nic_Bps / kGbit) + "\n";
  if (c.nodes > 0) o += fmt("nodes: {}\n", c.nodes);
  if (c.gpu_hour_usd > 0) o += "gpu_hour_usd: " + num(c.gpu_hour_usd) + "\n";
  write_gpu(o, c.gpu);
  if (c.host.present()) {
    const Host& h = c.host;
    o += "host:\n";
    o += "  memory_GiB: " + num(h.memory_bytes / kGiB) + "\n";
    o += "  memory_bandwidth_GBps: " + num(h.memory_Bps / kGB) + "\n";
    o += "  link_GBps: " + num(h.link_Bps / kGB) + "\n";
    if (h.measured_Bps > 0) o += "  measured_link_GBps: " + num(h.measured_Bps / kGB) + "\n";
    if (h.nvme_Bps > 0) o += "  nvme_GBps: " + num(h.nvme_Bps / kGB) + "\n";
  }
  o += "network:\n";
  write_tier(o, "intra_node", c.intra);
  write_tier(o, "inter_node", c.inter);
  o += "provenance:\n";
  for (const auto& [key, source] : c.provenance)
    o += "  " + plain_key(key) + ": " + quoted(source) + "\n";
  return o;
}

}  // namespace planner::io
