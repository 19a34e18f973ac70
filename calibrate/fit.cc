// fit_profile: the base profile with every measured part replaced, and its provenance.
#include "calibrate/fit.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>

#include "calibrate/context.h"
#include "planner/cost/compute.h"
#include "planner/format.h"
#include "planner/units.h"

namespace planner::calibrate {
namespace {

/// Past the largest L2 cache of the GPUs this targets (H200: 60 MB, shared/DEVICE.md).
constexpr double kHbmFitMinBytes = 64 * kMiB;

std::string versions(const RunContext& c) {
  return "GPU " + c.gpu + " (" + std::to_string(c.sms) + " SMs, compute capability " +
         c.compute_capability + "), driver " + c.driver + ", CUDA runtime " + c.cuda_runtime +
         ", cuBLAS " + c.cublas + ", NCCL " + c.nccl;
}

std::string hosts(const RunContext& c) {
  std::string out;
  for (const std::string& h : c.hosts) out += (out.empty() ? "" : ", ") + h;
  return out.empty() ? "unknown host" : out;
}

void apply_context(const RunContext& c, ClusterProfile& p, FitOutcome& out) {
  if (!c.gpu.empty()) p.gpu.name = c.gpu;
  if (c.hbm_bytes > 0) p.gpu.hbm_bytes = c.hbm_bytes;
  if (c.sms > 0 && c.sms != p.gpu.sms)
    out.report.push_back("warning: the GPU has " + std::to_string(c.sms) +
                         " SMs, the base profile " + std::to_string(p.gpu.sms) +
                         ": check that --base describes this GPU (its peak_tflops are kept)");
  if (c.sms > 0) p.gpu.sms = c.sms;
}

void apply_hbm(const Samples& s, const ClusterProfile& base, ClusterProfile& p, FitOutcome& out) {
  const HbmFit h = fit_hbm(s.hbm, kHbmFitMinBytes);
  if (!(h.copy_Bps > 0)) return;
  double eff = h.copy_Bps / base.gpu.hbm_Bps;
  std::string note;
  if (eff > 1) {  // the datasheet figure is too low; keep efficiency a fraction
    p.gpu.hbm_Bps = h.copy_Bps, eff = 1;
    note = " (above the base's datasheet figure, which is replaced)";
  }
  p.gpu.hbm_efficiency = eff;
  std::string line =
      fmt("device-to-device copy {:.0f} GB/s (bytes read + written, sizes >= 64 MiB) "
          "= {:.3f} of {:.0f} GB/s",
          h.copy_Bps / kGB, eff, p.gpu.hbm_Bps / kGB) +
      note;
  if (h.read_Bps > 0) line += fmt("; read kernel {:.0f} GB/s", h.read_Bps / kGB);
  if (h.h2d_Bps > 0)
    line += fmt("; host-to-device {:.1f} GB/s, device-to-host {:.1f} GB/s (pinned)",
                h.h2d_Bps / kGB, h.d2h_Bps / kGB);
  p.provenance["gpu.hbm_efficiency"] = "[calibrated] " + line;
  out.report.push_back("hbm: " + line);
  // The host link for offload: the slower direction (an optimizer step moves both ways), where
  // the base describes the host (a measured rate is capped at the datasheet link).
  const double link = std::min(h.h2d_Bps, h.d2h_Bps);
  if (p.host.present() && link > 0) {
    p.host.measured_Bps = std::min(link, p.host.link_Bps);
    p.provenance["host.measured_link_GBps"] =
        fmt("[calibrated] pinned cudaMemcpy, the slower of host-to-device {:.1f} and "
            "device-to-host {:.1f} GB/s",
            h.h2d_Bps / kGB, h.d2h_Bps / kGB);
  }
}

/// bf16 first (what training runs), then fp16, then whatever was measured with a known peak.
bool pick_gemm_dtype(const Samples& s, const Gpu& gpu, Dtype& dt) {
  for (Dtype d : {Dtype::bf16, Dtype::fp16, Dtype::tf32, Dtype::fp8})
    for (const GemmSample& g : s.gemm)
      if (g.dtype == d && gpu.peak_flops[static_cast<int>(d)] > 0) return dt = d, true;
  return false;
}

std::string tiles_text(const GemmModel& g) {
  std::string t;
  for (const GemmTile& tile : g.tiles)
    t += (t.empty() ? "" : ", ") + std::to_string(tile.m) + "x" + std::to_string(tile.n) +
         fmt(" {:.2f}", tile.relative_efficiency);
  return t;
}

/// The whole-layer check: spread over all layers, then a few examples (4096 tokens, TP 1 and 8).
void report_layers(const std::vector<GemmSample>& samples, const Gpu& gpu, Dtype dt,
                   FitOutcome& out) {
  const std::vector<LayerCheck> layers = layer_check(samples, gpu, dt);
  if (layers.empty()) return;
  double worst = 0;
  for (const LayerCheck& l : layers)
    worst = std::max(worst, std::abs(l.model_s / l.measured_s - 1));
  out.report.push_back(
      fmt("gemm: {} whole layers (12 GEMMs each): model vs measured sum within "
          "{:.1f}%; before sustained_efficiency, which planner estimate divides by",
          layers.size(), 100 * worst));
  for (const LayerCheck& l : layers)
    if (l.tokens == 4096 && (l.tp == 1 || l.tp == 8))
      out.report.push_back(fmt("gemm:   layer hidden {}, tp {}, 4096 tokens: measured {:.3f} ms, "
                               "model {:.3f} ms",
                               l.hidden, l.tp, l.measured_s * 1e3, l.model_s * 1e3) +
                           fmt(" ({:+.1f}%)", 100 * (l.model_s / l.measured_s - 1)));
}

/// Every timed shape as a measured entry (its layouts' times averaged geometrically: the shape
/// does not name the layout), and the fitted dtype's rms with the table against without it.
void keep_measured(const std::vector<GemmSample>& samples, Gpu& gpu, Dtype dt, FitOutcome& out) {
  std::map<std::tuple<int, double, double, double>, std::pair<double, int>> shapes;
  for (const GemmSample& g : samples) {
    if (!(gpu.peak_flops[static_cast<int>(g.dtype)] > 0)) continue;
    auto& [log_sum, n] = shapes[{int(g.dtype), g.m, g.n, g.k}];
    log_sum += std::log(g.time_s), ++n;
  }
  const Gpu model = gpu;
  for (const auto& [key, acc] : shapes) {
    const auto [d, m, n, k] = key;
    const double t = std::exp(acc.first / acc.second);
    gpu.gemm.measured.push_back(
        {m, n, k, 1, Dtype(d), 2 * m * n * k / (t * gpu.peak_flops[size_t(d)])});
  }
  auto rms = [&](const Gpu& with) {
    double sum = 0;
    int count = 0;
    for (const GemmSample& g : samples)
      if (g.dtype == dt) {
        const double e = std::log(gemm_time_s(with, dt, {g.m, g.n, g.k}) / g.time_s);
        sum += e * e, ++count;
      }
    return count ? std::sqrt(sum / count) : 0.0;
  };
  out.report.push_back(
      fmt("gemm: {} measured shapes kept (gpu.gemm.measured); {} rms log error "
          "on the samples {:.1f}% with them, {:.1f}% with the fitted model alone",
          gpu.gemm.measured.size(), to_string(dt), 100 * rms(gpu), 100 * rms(model)));
}

void apply_gemm(const Samples& s, const ClusterProfile& base, ClusterProfile& p, FitOutcome& out) {
  Dtype dt = Dtype::bf16;
  if (!pick_gemm_dtype(s, p.gpu, dt)) return;
  if (!p.gpu.gemm.measured.empty())  // exact-shape overrides measured on the base's hardware
    out.report.push_back("gemm: the base's " + std::to_string(p.gpu.gemm.measured.size()) +
                         " measured-shape entries (gpu.gemm.measured) are dropped: this GPU was "
                         "measured instead");
  p.gpu.gemm.measured.clear();
  const GemmFit f = fit_gemm(s.gemm, p.gpu, dt);
  p.gpu.gemm = f.model;
  const GemmModel& b = base.gpu.gemm;
  std::string line =
      std::to_string(f.samples) + " " + to_string(dt) + " cuBLASLt samples: max_efficiency " +
      fmt("{:.3f} (base {:.3f}), k_half {:.0f} ({:.0f}), ", f.model.max_efficiency,
          b.max_efficiency, f.model.k_half, b.k_half) +
      fmt("launch_us {:.2f} ({:.2f}), ", f.model.launch_s / kUs, b.launch_s / kUs) + "tiles " +
      tiles_text(f.model) +
      (f.misaligned_fitted ? fmt(", misaligned_factor {:.2f} ({:.2f})", f.model.misaligned_factor,
                                 b.misaligned_factor)
                           : std::string(", misaligned_factor kept (no misaligned shape)")) +
      fmt("; rms log error {:.1f}%, worst {:.1f}%", 100 * f.rms_log_err, 100 * f.max_rel_err);
  p.provenance["gpu.gemm"] = "[calibrated] least squares on log time over " + line +
                             "; alignment and tile shapes from the base";
  out.report.push_back("gemm: " + line);
  for (Dtype other : {Dtype::fp16, Dtype::bf16, Dtype::tf32, Dtype::fp8}) {
    if (other == dt || !(p.gpu.peak_flops[static_cast<int>(other)] > 0)) continue;
    const double r = median_time_ratio(s.gemm, p.gpu, other);
    if (r > 0)
      out.report.push_back(std::string("gemm: ") + to_string(other) +
                           fmt(" measured / predicted time with this model, median {:.3f} "
                               "(one model for all dtypes; peak_tflops kept)",
                               r));
  }
  keep_measured(s.gemm, p.gpu, dt, out);
  p.provenance["gpu.gemm.measured"] =
      "[calibrated] every timed shape, its layouts' geometric mean time as the efficiency: exact "
      "shapes replace the model, shapes within 4x correct it (planner's gemm_time_s)";
  report_layers(s.gemm, p.gpu, dt, out);
  out.replaced.insert("gpu.gemm.measured");
  for (const char* k :
       {"gpu.gemm.max_efficiency", "gpu.gemm.k_half", "gpu.gemm.launch_us", "gpu.gemm.tiles"})
    out.replaced.insert(k);
  if (f.misaligned_fitted) out.replaced.insert("gpu.gemm.misaligned_factor");
}

void apply_tier(Tier tier, const Samples& s, ClusterProfile& p, FitOutcome& out) {
  NetworkTier& t = tier == Tier::intra_node ? p.intra : p.inter;
  const std::string key = std::string("network.") + to_string(tier);
  bool measured = false;
  for (Collective c : {Collective::allreduce, Collective::allgather, Collective::reduce_scatter,
                       Collective::alltoall, Collective::sendrecv}) {
    std::vector<CollectiveSample> group;
    for (const CollectiveSample& x : s.collectives)
      if (x.tier == tier && x.collective == c) group.push_back(x);
    if (group.empty()) continue;
    const CollectiveFit f = fit_collective(group);
    t.cost[static_cast<int>(c)] = f.cost;
    t.reference_ranks = f.ranks;
    measured = true;
    const std::string line =
        fmt("{} sizes on {} ranks: latency {:.2f} us, busbw {:.1f} GB/s", f.samples, f.ranks,
            f.cost.latency_s / kUs, f.cost.busbw_Bps / kGB) +
        fmt(" (alpha-beta least squares, rms error {:.0f}%); curve = measured busbw at each size",
            100 * f.rms_rel_err);
    p.provenance[key + "." + to_string(c)] = "[calibrated] " + line;
    out.report.push_back(key.substr(8) + " " + to_string(c) + ": " + line);
  }
  if (!measured) return;
  if (tier == Tier::intra_node && s.context.gpus_per_node > 1)
    p.gpus_per_node = s.context.gpus_per_node;
  p.provenance[key] = "[calibrated] " + t.name + " measured on " + hosts(s.context) +
                      "; collectives without a [calibrated] entry and hop_latency_us from the base";
}

/// Base entries stay, marked as such, unless a calibrated entry replaced them.
void set_provenance(const Samples& s, const FitSettings& st, const ClusterProfile& base,
                    const std::set<std::string>& replaced, ClusterProfile& p) {
  std::map<std::string, std::string> merged;
  const std::string base_file = st.base_file.empty() ? base.name : st.base_file;
  for (const auto& [k, v] : base.provenance)
    if (!replaced.count(k) && !p.provenance.count(k)) merged[k] = "[base " + base_file + "] " + v;
  for (const auto& [k, v] : p.provenance) merged[k] = v;
  const RunContext& c = s.context;
  merged["calibrate"] =
      c.tool + " on " + hosts(c) + " at " + c.date + " (" + c.sweep + " sweep): " + c.command_line;
  merged["calibrate.versions"] = versions(c);
  merged["calibrate.samples"] = (st.samples_file.empty() ? "samples" : st.samples_file) + ": " +
                                std::to_string(s.gemm.size()) + " GEMM, " +
                                std::to_string(s.hbm.size()) + " memory, " +
                                std::to_string(s.collectives.size()) + " collective samples";
  merged["calibrate.base"] = base_file +
                             ": datasheet peaks, sustained_efficiency, attention-kernel rates, hop "
                             "latencies and whatever was not measured";
  p.provenance = merged;
}

}  // namespace

FitOutcome fit_profile(const Samples& s, const ClusterProfile& base, const FitSettings& st) {
  FitOutcome out;
  ClusterProfile& p = out.profile;
  p = base;
  p.provenance.clear();
  p.file.clear();
  p.name = st.name.empty() ? base.name + "-calibrated" : st.name;
  if (st.nodes > 0) p.nodes = st.nodes;
  apply_context(s.context, p, out);
  apply_hbm(s, base, p, out);
  apply_gemm(s, base, p, out);
  apply_tier(Tier::intra_node, s, p, out);
  apply_tier(Tier::inter_node, s, p, out);
  bool any_network = false;
  for (const CollectiveSample& c : s.collectives) any_network = any_network || c.ranks > 1;
  if (!any_network)
    out.report.push_back(
        "network: no collective samples (one GPU, or --skip nccl): both tiers "
        "come from the base profile");
  set_provenance(s, st, base, out.replaced, p);
  return out;
}

}  // namespace planner::calibrate
