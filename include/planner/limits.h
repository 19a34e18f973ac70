#pragma once
/// Every bound the planner puts on what a user gives it, in one place. Each is far beyond any real
/// model, cluster or job, and keeps every derived size finite and allocatable and every command
/// within seconds and a few hundred MiB; an input outside one is refused with a message that
/// states it. (The parallelism and batch knobs' bounds, kMaxKnob and kMaxGlobalBatch, are in
/// plan.h.)
#include <cstddef>
#include <string>

namespace planner::limits {

/// A closed interval a number from an input must lie in, in the unit its key names.
struct Range {
  double lo, hi;
  bool contains(double v) const { return v >= lo && v <= hi; }  ///< false for NaN
  std::string text() const;                                     ///< "[0.01, 1e+05]"
};

// ---- Inputs as a whole --------------------------------------------------------------------
/// Bytes of one input file (model, profile, cases CSV, JSON). The largest shipped input is the
/// 41 KB H200 calibration samples file; 16 MiB also stops /dev/zero or a wrong path early.
inline constexpr std::size_t kInputFileBytes = 16u << 20;
/// Values one list option (--gpus, --tp, --pp, ...) may expand to, all its ranges together:
/// every knob value up to kMaxKnob once.
inline constexpr long long kListValues = 1 << 20;

// ---- Model files (layers, widths and counts; ModelSpec, validate_model) -------------------
inline constexpr int kLayers = 100000;   ///< decoder layers, and all blocks with encoders
inline constexpr int kHidden = 1 << 20;  ///< hidden, and a projector's in_features
inline constexpr int kHeads = 1 << 16;   ///< heads and kv_heads
inline constexpr int kFfn = 1 << 22;
inline constexpr int kExperts = 1 << 16;  ///< routed experts per MoE layer (DeepSeek-V3: 256)
/// Multi-token-prediction modules (DeepSeek-V3 trains 1; Megatron-LM takes any count).
inline constexpr int kMtpLayers = 64;
inline constexpr int kVocab = 1 << 24;
inline constexpr int kSeqLen = 1 << 24;  ///< seq_len, --seq-len and an encoder's tokens
inline constexpr int kImages = 1 << 16;  ///< an encoder's images (tiles) per sample
/// RoPE base (rope_theta): the shipped models use 1e4 and 5e5 (Qwen2: 1e6). Below 2 no
/// frequency falls along the head dimension; 2^31 - 1 keeps Megatron-LM's integer --rotary-base
/// a 32-bit int.
inline constexpr Range kRopeTheta{2, 2147483647};

// ---- Cluster profiles (hw_profiles/*.yaml) and --vary factors on them -------------------------
inline constexpr Range kPeakTflops{0.1, 1e6};  ///< per precision (absent or 0: none)
inline constexpr Range kHbmGiB{0.1, 16384};
inline constexpr Range kHbmGBps{1, 1e6};
inline constexpr Range kEfficiency{0.01, 1};        ///< any efficiency or fraction of peak
inline constexpr Range kBusbwGBps{0.01, 1e5};       ///< a collective's (large-message) busbw
inline constexpr Range kCurveBusbwGBps{1e-6, 1e5};  ///< a busbw curve's points (8 B: 0.0006)
inline constexpr Range kLatencyUs{0, 1e6};          ///< collective, hop and kernel-launch latency
inline constexpr Range kCurveBytes{1, 1e15};        ///< message sizes of a busbw curve
inline constexpr Range kKHalf{0, 1e6};              ///< elements
inline constexpr Range kGemmDim{1, 1e9};            ///< m, n, k, batch of a measured GEMM
inline constexpr Range kGpuHourUsd{0, 1e6};
inline constexpr Range kHostMemoryGiB{1, 1 << 20};  ///< a node's system memory
inline constexpr Range kHostGBps{0.1, 1e5};         ///< DRAM, host-link and NVMe bandwidth
inline constexpr int kSms = 100000;                 ///< streaming multiprocessors
inline constexpr int kTileDim = 4096;               ///< a GEMM tile's m or n
inline constexpr int kAlignment = 4096;             ///< elements
inline constexpr int kGpusPerNode = 1 << 16;
inline constexpr long long kClusterGpus = 1 << 24;  ///< nodes x gpus_per_node
inline constexpr int kNics = 4096;  ///< nics_per_node, a legacy software.zero3_collective_nics
inline constexpr int kNvlinkDomain = 1 << 16;  ///< GPUs in one NVLink domain
inline constexpr Range kNicGbps{1, 1e5};       ///< a NIC's line rate, Gb/s

// ---- Work a command may do or write -------------------------------------------------------
/// Rows of a regression-case CSV, each a search: the public sets have 31 and 49.
inline constexpr std::size_t kCaseRows = 1000;
/// Columns of `planner compare` (--cluster and --vary together), each an estimate.
inline constexpr std::size_t kCompareColumns = 64;
/// Tasks the pipeline simulator runs (pp x vpp x micro-batches): about 0.07 s and 250 MiB at the
/// bound. Real runs need under 100,000 (pp=64, vpp=2, 512 micro-batches: 65,536); a plan beyond
/// it is refused with a message that names the bound.
inline constexpr long long kSimulatedTasks = 4'000'000;
/// A search's work, each bounded before it is done (search.cc), at a tenth of a second or so on
/// one core: the sanitizer build with the fuzzers' instrumentation runs it about 40 times slower,
/// and must stay under their 10 s per input. A user's ranges past one get a message that names
/// it. GPT-3 175B over --gpus 64-4096 (0.26-0.45 s on a 2-core machine, 2026-12-07) counts 2.1e7
/// plans, 2.0e4 of them ranked and 2.3e5 refused for memory.
inline constexpr double kSearchPlans = 2e8;  ///< the plans the ranges span (most refused in bulk)
inline constexpr double kSearchCells = 5e6;  ///< (GPU count, tp, cp, mbs, sp, pp) combinations
inline constexpr long long kSearchChecked = 5'000'000;  ///< plans checked one by one
/// Structurally valid plans estimated in full: 1e6 in a plain build, about a second (a mixture of
/// experts' default search at a large batch needs 1.0e5-2.0e5: Qwen3-30B-A3B, gpt-oss, Llama 4 and
/// Qwen3-235B on 32-3,072 H100s at 15,360 sequences, 0.26-0.64 s); 1e5 in a build with the
/// sanitizers or the fuzzers' instrumentation (PLANNER_INSTRUMENTED, CMakeLists.txt), about 40
/// times slower an estimate, so that a fuzzer's input stays under its 10 s.
#ifdef PLANNER_INSTRUMENTED
inline constexpr long long kSearchEstimates = 100'000;
#else
inline constexpr long long kSearchEstimates = 1'000'000;
#endif
/// What a plan refused for memory counts against kSearchEstimates: its estimate stops at the
/// memory step (estimate.cc, step 4), before the pipeline times, the DP cost and the metrics.
/// Measured on this 2-core machine (the search timing each estimate, 2026-12-07): 0.32-0.56 us
/// against 0.60-1.33 us for an estimate in full, 0.47-0.65 of it (Llama 4 Maverick and Scout on
/// 64-512 H100s, Qwen3-235B on 256, gpt-oss-20b on 64 A100s; DeepSeek-V3 on 2,048 H800s 0.34,
/// over its 66 estimates in full): the larger share, so the bound stays on the safe side.
/// Counted as one, Maverick's default search on 64-512 GPUs (98k-127k of them beside 1.4k-11k
/// plans that fit, 0.34-0.52 s) was refused.
inline constexpr double kOutOfMemoryEstimateWeight = 0.6;
/// Tasks one search simulates in all when it re-ranks its best candidates (each on the even and
/// the balanced partition): about 0.1 s. The candidates beyond it keep their closed-form time,
/// which for the many micro-batches that exhaust it is within a fraction of a percent (the bubble
/// is small). The public regression set needs at most 2.1e6, megatron-1t on 3,072 GPUs 4.4e6.
inline constexpr double kSearchSimulatedTasks = 6e6;
/// Events in a --trace file (about 320 MB at the bound): Perfetto's and chrome://tracing's JSON
/// importers load files of a few hundred MB in a browser tab.
inline constexpr long long kTraceEvents = 2'000'000;
/// Bytes per trace event, for the size a refusal states: 4.80 MB for the 30,745 events of
/// GPT-3 13B at tp=8, pp=8 with 1,024 micro-batches (tests/test_reliability.cc).
inline constexpr double kTraceEventBytes = 156;

}  // namespace planner::limits
