#include "calibrate/matmul.h"

#include <stdexcept>
#include <string>

namespace planner::calibrate {
namespace {

/// A matrix of rows x cols (column-major, leading dimension rows), `batch` copies back to back.
cublasLtMatrixLayout_t layout(cudaDataType_t type, long long rows, long long cols,
                              long long batch) {
  cublasLtMatrixLayout_t l = nullptr;
  CAL_CUBLAS(cublasLtMatrixLayoutCreate(&l, type, uint64_t(rows), uint64_t(cols), int64_t(rows)));
  if (batch > 1) {
    const int32_t count = int32_t(batch);
    const int64_t stride = int64_t(rows * cols);
    CAL_CUBLAS(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count,
                                                sizeof count));
    CAL_CUBLAS(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                &stride, sizeof stride));
  }
  return l;
}

}  // namespace

MatmulTypes matmul_types(Dtype d) {
  switch (d) {
    case Dtype::fp16:
      return {CUDA_R_16F, CUDA_R_16F, CUBLAS_COMPUTE_32F, ElementType::f16, ElementType::f16, 70};
    case Dtype::bf16:
      return {CUDA_R_16BF,       CUDA_R_16BF,       CUBLAS_COMPUTE_32F,
              ElementType::bf16, ElementType::bf16, 80};
    case Dtype::tf32:
      return {CUDA_R_32F,       CUDA_R_32F,       CUBLAS_COMPUTE_32F_FAST_TF32,
              ElementType::f32, ElementType::f32, 80};
    case Dtype::fp8:
      return {CUDA_R_8F_E4M3,    CUDA_R_16BF,       CUBLAS_COMPUTE_32F,
              ElementType::e4m3, ElementType::bf16, 89};
    case Dtype::mxfp8:  // block-scaled operands need scale pointers the runner does not set up
      break;
  }
  throw std::invalid_argument(std::string("no cuBLASLt types for ") + to_string(d));
}

Matmul::Matmul(cublasLtHandle_t h, Dtype dtype, const MatmulShape& s) : handle_(h) {
  const MatmulTypes t = matmul_types(dtype);
  CAL_CUBLAS(cublasLtMatmulDescCreate(&op_, t.compute, CUDA_R_32F));
  const cublasOperation_t ta = s.transa == 'T' ? CUBLAS_OP_T : CUBLAS_OP_N;
  const cublasOperation_t tb = s.transb == 'T' ? CUBLAS_OP_T : CUBLAS_OP_N;
  CAL_CUBLAS(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
  CAL_CUBLAS(cublasLtMatmulDescSetAttribute(op_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
  // op(A) is m x k, stored k x m when transposed; op(B) is k x n, stored n x k when transposed.
  a_ = ta == CUBLAS_OP_T ? layout(t.ab, s.k, s.m, s.batch) : layout(t.ab, s.m, s.k, s.batch);
  b_ = tb == CUBLAS_OP_T ? layout(t.ab, s.n, s.k, s.batch) : layout(t.ab, s.k, s.n, s.batch);
  c_ = layout(t.c, s.m, s.n, s.batch);
  CAL_CUBLAS(cublasLtMatmulPreferenceCreate(&pref_));
  const uint64_t ws = kMatmulWorkspaceBytes;
  CAL_CUBLAS(cublasLtMatmulPreferenceSetAttribute(pref_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &ws, sizeof ws));
  const cublasStatus_t st =
      cublasLtMatmulAlgoGetHeuristic(h, op_, a_, b_, c_, c_, pref_, 1, &heuristic_, &found_);
  if (st != CUBLAS_STATUS_SUCCESS) found_ = 0;
}

Matmul::~Matmul() {
  cublasLtMatmulPreferenceDestroy(pref_);
  cublasLtMatrixLayoutDestroy(c_);
  cublasLtMatrixLayoutDestroy(b_);
  cublasLtMatrixLayoutDestroy(a_);
  cublasLtMatmulDescDestroy(op_);
}

void Matmul::run(const void* a, const void* b, void* c, void* workspace, cudaStream_t s) const {
  const float alpha = 1, beta = 0;
  CAL_CUBLAS(cublasLtMatmul(handle_, op_, &alpha, a, a_, b, b_, &beta, c, c_, c, c_,
                            &heuristic_.algo, workspace, kMatmulWorkspaceBytes, s));
}

}  // namespace planner::calibrate
