#pragma once
/// The three measurements of planner-calibrate: GEMMs (gemm.cc), memory (hbm.cc) and NCCL
/// collectives (nccl_sweep.cc with one file per collective). Each prints nccl-tests-style tables
/// through Output and appends its raw samples.
#include <array>
#include <vector>

#include "calibrate/harness.h"
#include "calibrate/sweeps.h"
#include "calibrate/world.h"

namespace planner::calibrate {

struct GemmRun {
  int device = 0;
  RepeatPolicy policy;
  unsigned long long seed = 42;
  std::array<double, kNumDtypes> peak_flops{};  ///< the base profile's, for the %peak column
};
/// cuBLASLt bf16/fp16 (fp32 accumulation), tf32, and fp8 e4m3 (bf16 output) on sm_89 and newer.
void run_gemm_sweep(const std::vector<GemmCase>& cases, const GemmRun& run, Output& out,
                    Samples& samples);

struct HbmRun {
  int device = 0;
  RepeatPolicy policy;
  unsigned long long seed = 42;
  std::vector<double> hbm_sizes, pcie_sizes;
};
/// Device-to-device copy (bytes read + written), a read-dominated kernel, and host-to-device /
/// device-to-host copies from pinned memory.
void run_hbm_sweep(const HbmRun& run, Output& out, Samples& samples);

struct NcclRun {
  RepeatPolicy policy;
  unsigned long long seed = 42;
  std::vector<double> sizes;  ///< nccl-tests sizes S, 8 B .. 1 GiB by 2
  double timeout_s = 120;     ///< the watchdog's limit for one step
  int gpus = 0;               ///< local GPUs in single-process mode; 0: all visible
};
/// The NCCL sweeps: under MPI one rank per GPU, communicators split into the node's ranks
/// (intra_node) and one rank per node (inter_node); without MPI all local GPUs from this one
/// process (ncclCommInitAll, nccl-tests -g); with a single GPU, a message and nothing else.
void run_nccl_sweeps(const NcclRun& run, const World& world, Output& out, Samples& samples);

/// How many measurements run_nccl_sweeps will make (for the progress bar).
int nccl_steps(const NcclRun& run, const World& world);

}  // namespace planner::calibrate
