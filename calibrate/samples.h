#pragma once
/// Raw calibration samples: what planner-calibrate measures and saves as JSON, and what the fit
/// reads back. The structs hold SI units (seconds, bytes); the JSON file keeps microseconds and
/// GB/s in its keys (`time_us`, `busbw_GBps`), as nccl-tests prints them.
///
/// Plain C++ (no JSON or YAML types here): the CUDA sources include this header.
#include <string>
#include <vector>

#include "planner/cluster.h"

namespace planner::calibrate {

inline constexpr int kSamplesSchemaVersion = 1;

/// Where and with what the samples were taken; it becomes the profile's provenance.
struct RunContext {
  std::string tool;                ///< "planner-calibrate 0.1.0"
  std::string gpu;                 ///< cudaDeviceProp::name of the GPU that ran the GEMMs
  int sms = 0;                     ///< streaming multiprocessors
  std::string compute_capability;  ///< "9.0"
  double hbm_bytes = 0;            ///< cudaDeviceProp::totalGlobalMem
  double l2_bytes = 0;
  std::string driver;              ///< NVIDIA kernel driver, e.g. "580.159"
  std::string cuda_runtime;        ///< "13.0"
  std::string cublas;              ///< "13.0.2"
  std::string nccl;                ///< "2.28.3"
  std::vector<std::string> hosts;  ///< one per node, in node order
  int gpus_per_node = 1;           ///< GPUs (ranks) per node in the run
  int nodes = 1;
  std::string date;          ///< ISO 8601, UTC
  std::string command_line;  ///< the exact argument line, shell-quoted
  std::string sweep;         ///< quick | default | full
};

/// One GEMM in the planner's convention (cost/compute.h linear_shapes: fwd {tokens, out, in},
/// bwd_data {tokens, in, out}, bwd_weight {in, out, tokens}) and how cuBLASLt ran it.
struct GemmSample {
  Dtype dtype = Dtype::bf16;
  std::string linear;       ///< qkv | proj | fc1 | fc2 | square | ffn-misaligned | ffn-aligned
  std::string orientation;  ///< fwd | bwd_data | bwd_weight
  std::string layout;       ///< cuBLAS op(A) op(B): TN (fwd), NN (bwd_data), NT (bwd_weight)
  int hidden = 0, tp = 0, tokens = 0;  ///< the transformer shape it came from; 0 for squares
  double m = 0, n = 0, k = 0;
  double time_s = 0;  ///< median time of one GEMM
  int repeats = 0;    ///< timed batches behind the median
  double spread = 0;  ///< interquartile range of the batches / median
};

enum class HbmKind { d2d_copy, read, h2d, d2h };
const char* to_string(HbmKind k);

/// One memory-bandwidth point.
struct HbmSample {
  HbmKind kind = HbmKind::d2d_copy;
  double bytes = 0;        ///< buffer size
  double moved_bytes = 0;  ///< bytes through HBM (copy: read + write = 2x) or over PCIe
  double time_s = 0;
  int repeats = 0;
  double spread = 0;
  double bandwidth_Bps() const { return moved_bytes / time_s; }
};

/// The planner's two network tiers (cluster.h): inside a node, and across nodes with one rank
/// per node on each communicator (one NIC per GPU, all rails busy at once).
enum class Tier { intra_node, inter_node };
const char* to_string(Tier t);

/// One collective at one size, with nccl-tests' definitions (doc/PERFORMANCE.md).
struct CollectiveSample {
  Tier tier = Tier::intra_node;
  Collective collective = Collective::allreduce;
  int ranks = 0;      ///< communicator size n
  double bytes = 0;   ///< nccl-tests size S (allgather: output, reduce-scatter: input)
  double time_s = 0;  ///< median over repeats of the slowest rank
  int repeats = 0;
  double spread = 0;
  double algbw_Bps() const { return bytes / time_s; }
  double busbw_Bps() const;  ///< algbw x bus_factor(collective, ranks)
};

struct Samples {
  RunContext context;
  std::vector<GemmSample> gemm;
  std::vector<HbmSample> hbm;
  std::vector<CollectiveSample> collectives;
};

/// Reads a samples file; every problem throws InputError naming the file, the line where known
/// and the key path ("gemm[3].time_us").
Samples load_samples(const std::string& path);
Samples parse_samples(const std::string& json_text, const std::string& file);
/// Pretty JSON with `schema_version`, units in keys, derived columns (TFLOP/s, GB/s) for readers.
std::string samples_json(const Samples& s);

}  // namespace planner::calibrate
