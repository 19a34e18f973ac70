#pragma once
/// What planner-calibrate measures: the GEMM shapes the cost model asks about, and the message
/// sizes of the NCCL sweeps. Pure C++ so that the sweep sizes and their run time are tested on
/// the CPU.
#include <string>
#include <vector>

#include "calibrate/timing.h"
#include "planner/cluster.h"
#include "planner/cost/compute.h"

namespace planner::calibrate {

/// --quick (a smoke test, ~20 s), the default (the planner's shapes, < 3 min on one GPU), --full.
enum class SweepSize { quick, standard, full };
const char* to_string(SweepSize s);  ///< "quick", "default", "full"

/// One GEMM to run. `shape` is the planner's convention (cost/compute.h linear_shapes); the
/// cuBLAS column-major problem is C[cm x cn] = op(A)[cm x ck] op(B)[ck x cn] with PyTorch's
/// layouts for y = x W^T: forward TN, backward-data NN, backward-weight NT (fp8 runs TN only,
/// as Transformer Engine does, since cuBLASLt's fp8 kernels need A transposed).
struct GemmCase {
  Dtype dtype = Dtype::bf16;
  std::string linear;       ///< qkv | proj | fc1 | fc2 | square | ffn-misaligned | ffn-aligned
  std::string orientation;  ///< fwd | bwd_data | bwd_weight
  int hidden = 0, tp = 0, tokens = 0;
  GemmShape shape;
  char transa = 'T', transb = 'N';
  double cm = 0, cn = 0, ck = 0;
  std::string layout() const { return std::string{transa, transb}; }
};

/// The four linear layers of a GPT block on one TP rank (ffn = 4h): qkv h -> 3h/tp, proj
/// h/tp -> h, fc1 h -> 4h/tp, fc2 4h/tp -> h, each with its three GEMMs.
struct NamedLinear {
  std::string name;
  LinearShapes shapes;
};
std::vector<NamedLinear> layer_linears(int hidden, int tp, int tokens);

/// The GEMM sweep. The first of `dtypes` (bf16 by default) gets the transformer grid: QKV,
/// projection, MLP up and down of a GPT layer (ffn = 4h) for hidden sizes 1k..32k, TP shards
/// 1..8 and 1k..32k tokens per micro-batch, in all three orientations, plus squares (comparable
/// with published cuBLAS tables) and an aligned/misaligned SwiGLU pair (d_ff 10944 vs 10922,
/// Anthony et al. 2024) for the misalignment factor. The other dtypes get a smaller grid unless
/// `size` is full. Identical problems are measured once.
std::vector<GemmCase> gemm_sweep(SweepSize size, const std::vector<Dtype>& dtypes);

/// Bytes moved by one GEMM's operands and result (A, B read, C written).
double gemm_operand_bytes(const GemmCase& c);

/// Buffer sizes of the HBM sweep (device copy and read kernel): 1 MiB .. 4 GiB by 4, the fit
/// uses those past the L2 cache; and of the host-device sweep (pinned memory).
std::vector<double> hbm_sizes(SweepSize size);
std::vector<double> pcie_sizes(SweepSize size);

/// Message sizes from `min_bytes` to `max_bytes` by factors of 2 (nccl-tests -b 8 -e 1G -f 2).
std::vector<double> message_sizes(double min_bytes, double max_bytes);

/// Expected wall time of a GEMM sweep on `gpu`, from the planner's own GEMM model and the
/// harness's warm-up and batching rules: what the --quick/default/--full help text quotes, and
/// what the test of the < 3 minute single-GPU budget checks.
double estimate_gemm_sweep_s(const std::vector<GemmCase>& cases, const Gpu& gpu,
                             const RepeatPolicy& policy);

}  // namespace planner::calibrate
