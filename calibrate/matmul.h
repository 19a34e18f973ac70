#pragma once
/// One cuBLASLt matmul, plain or strided-batched, in the planner's precisions: what
/// planner-calibrate's GEMM sweep (gemm.cc) and planner-validate's GEMMs (validate_time.cc) run.
#include <cublasLt.h>

#include <cstddef>

#include "calibrate/device.h"
#include "calibrate/harness.h"
#include "planner/cluster.h"

#define CAL_CUBLAS(call)                                                   \
  do {                                                                     \
    const cublasStatus_t cal_s_ = (call);                                  \
    if (cal_s_ != CUBLAS_STATUS_SUCCESS)                                   \
      ::planner::calibrate::device_failure(__FILE__, __LINE__, #call,      \
                                           cublasGetStatusString(cal_s_)); \
  } while (0)

namespace planner::calibrate {

/// NVIDIA recommends 32 MiB of cuBLASLt workspace on Hopper (cuBLAS docs, cublasSetWorkspace).
inline constexpr size_t kMatmulWorkspaceBytes = 32u << 20;

struct MatmulTypes {
  cudaDataType_t ab, c;
  cublasComputeType_t compute;
  ElementType fill, out;  ///< inputs, result
  int min_cc;             ///< compute capability x 10 that has tensor cores for it
};
/// bf16/fp16 with fp32 accumulation, tf32 (fp32 data), fp8 e4m3 with a bf16 result.
MatmulTypes matmul_types(Dtype d);

/// C[m x n] = op(A) op(B), column-major (cuBLAS): op(A) is m x k, stored k x m when transa is
/// 'T'; op(B) is k x n. `batch` > 1: A, B and C are strided by their own sizes.
struct MatmulShape {
  char transa = 'T', transb = 'N';
  long long m = 0, n = 0, k = 0, batch = 1;
};

/// The descriptors of one problem and the heuristic's first algorithm.
class Matmul {
 public:
  Matmul(cublasLtHandle_t h, Dtype dtype, const MatmulShape& s);
  ~Matmul();
  Matmul(const Matmul&) = delete;
  Matmul& operator=(const Matmul&) = delete;
  bool ok() const { return found_ > 0; }
  /// `workspace` holds kMatmulWorkspaceBytes.
  void run(const void* a, const void* b, void* c, void* workspace, cudaStream_t s) const;

 private:
  cublasLtHandle_t handle_;
  cublasLtMatmulDesc_t op_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, c_ = nullptr;
  cublasLtMatmulPreference_t pref_ = nullptr;
  cublasLtMatmulHeuristicResult_t heuristic_{};
  int found_ = 0;
};

}  // namespace planner::calibrate
