#pragma once
/// The fit: raw samples -> cluster profile parameters, on the CPU (Eigen least squares and a
/// derivative-free search over the planner's own GEMM model). No CUDA here.
#include <set>
#include <string>
#include <vector>

#include "calibrate/samples.h"
#include "planner/cluster.h"

namespace planner::calibrate {

/// t = alpha + x beta by least squares on relative residuals (pred - t) / t, so that 8-byte
/// latencies and 1 GiB bandwidths weigh alike; alpha >= 0 and beta > 0 (refit without alpha
/// when it comes out negative). Throws std::invalid_argument for fewer than 2 points or when no
/// positive slope fits.
struct AlphaBeta {
  double alpha_s = 0;
  double beta_s_per_byte = 0;
  double rms_rel_err = 0;  ///< of the fitted line against the samples
};
AlphaBeta fit_alpha_beta(const std::vector<double>& x_bytes, const std::vector<double>& t_s);

/// One tier's one collective: latency_s = alpha and busbw_Bps = 1 / beta on
/// t = alpha + S x bus_factor(n) / busbw (nccl-tests' S and factor, doc/PERFORMANCE.md), and the
/// measured busbw at every size as the curve (median where a size repeats). All samples must
/// share tier and collective.
struct CollectiveFit {
  CollectiveCost cost;
  int ranks = 0;  ///< the communicator size most samples have
  int samples = 0;
  double rms_rel_err = 0;
};
CollectiveFit fit_collective(const std::vector<CollectiveSample>& samples);

/// Sustained bandwidth of each kind (1 / beta of the alpha-beta fit over sizes >= min_bytes, so
/// past the L2 cache); 0 where a kind has no sample that large.
struct HbmFit {
  double copy_Bps = 0;              ///< device-to-device copy, bytes read plus written
  double read_Bps = 0;              ///< read-dominated kernel
  double h2d_Bps = 0, d2h_Bps = 0;  ///< pinned host memory over PCIe / C2C
};
HbmFit fit_hbm(const std::vector<HbmSample>& samples, double min_bytes);

/// The GEMM model's parameters fitted to measured GEMMs of one dtype: max_efficiency, k_half,
/// launch_us, the relative efficiency of every tile but the first (which stays as in `start`,
/// or max_efficiency could not be told apart from it) and, when misaligned shapes were
/// measured, misaligned_factor. It minimises sum (log predicted - log measured)^2 with
/// predicted = planner::gemm_time_s (the planner's own model): a coarse grid over
/// (max_efficiency, k_half, launch_us), then a compass search with shrinking steps.
struct GemmFit {
  GemmModel model;
  Dtype dtype = Dtype::bf16;
  int samples = 0;
  double rms_log_err = 0;  ///< sqrt(mean squared log error)
  double max_rel_err = 0;  ///< max |predicted / measured - 1|
  bool misaligned_fitted = false;
  int evaluations = 0;
};
GemmFit fit_gemm(const std::vector<GemmSample>& samples, const Gpu& start, Dtype dtype);

/// Median of measured / predicted time over the samples of `dtype` with `gpu`'s model.
double median_time_ratio(const std::vector<GemmSample>& samples, const Gpu& gpu, Dtype dtype);

/// The GEMMs of whole GPT layers among the samples (all twelve of layer_linears() for one
/// hidden, tp and tokens): the measured sum next to the model's, in microbenchmark terms (the
/// planner's layer times also divide by sustained_efficiency).
struct LayerCheck {
  int hidden = 0, tp = 0, tokens = 0;
  double measured_s = 0, model_s = 0;
};
std::vector<LayerCheck> layer_check(const std::vector<GemmSample>& samples, const Gpu& gpu,
                                    Dtype dtype);

struct FitSettings {
  std::string name;          ///< profile name; default: the base's name + "-calibrated"
  std::string base_file;     ///< for provenance
  std::string samples_file;  ///< for provenance
  int nodes = 0;             ///< cluster size to plan for; 0 keeps the base's
};

struct FitOutcome {
  ClusterProfile profile;
  std::vector<std::string> report;  ///< one line per fitted part, for stdout
  std::set<std::string> replaced;   ///< base provenance keys whose values were measured
};

/// The base profile with every measured part replaced: GPU name, SMs and memory from the run,
/// hbm_efficiency, the GEMM model (fitted to bf16, else fp16, else the first dtype present) and
/// each measured tier and collective. Datasheet peaks, hop latencies, the attention-kernel rates
/// and unmeasured tiers stay the base's, and the provenance says which is which.
FitOutcome fit_profile(const Samples& samples, const ClusterProfile& base, const FitSettings& s);

}  // namespace planner::calibrate
