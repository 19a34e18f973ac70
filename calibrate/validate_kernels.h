#pragma once
/// The kernels planner-validate writes itself (everything of a layer but the GEMMs): host entry
/// points over device pointers. 16-bit data (`Dtype::bf16` or `Dtype::fp16`, the `act` argument)
/// with fp32 arithmetic; norm and bias parameters in fp32. Row-major; widths (hidden, ffn shard,
/// keys) are multiples of 8 (16-byte vector loads). Each function checks its launch.
///
/// What they compute is defined by the CPU references (validate_reference.h), which the runner
/// compares them with before timing.
#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "planner/cluster.h"

namespace planner::calibrate::kernels {

// ---- unfused attention: softmax_dropout.cu ------------------------------------------------

/// Megatron's fused scale-mask-softmax: y = softmax(scale x) over rows of `cols`; rows =
/// batch x sq, row r is query r % sq; causal hides keys j > i + (cols - sq).
void softmax_forward(const void* x, void* y, long rows, long cols, long sq, float scale,
                     bool causal, Dtype act, cudaStream_t s);
/// dx = scale * y * (dy - sum(y dy)) per row.
void softmax_backward(const void* y, const void* dy, void* dx, long rows, long cols, float scale,
                      Dtype act, cudaStream_t s);
/// y = keep ? x / (1 - p) : 0 and the 1-byte mask (validate_common.h dropout_keep).
void dropout_forward(const void* x, void* y, uint8_t* mask, size_t n, float p, uint64_t seed,
                     Dtype act, cudaStream_t s);
void dropout_backward(const void* dy, const uint8_t* mask, void* dx, size_t n, float p, Dtype act,
                      cudaStream_t s);

// ---- norms, residual, activation: norm_activation.cu ---------------------------------------

/// Layer norm or RMSNorm (`rms`, beta unused) of rows x h; saves each row's mean and 1/std.
void norm_forward(const void* x, const float* gamma, const float* beta, void* y, float* mean,
                  float* rstd, long rows, long h, bool rms, Dtype act, cudaStream_t s);
/// dx = the norm's input gradient, plus `d_residual` when it is not null (the residual branch's
/// gradient, added in the same pass).
void norm_backward_input(const void* x, const float* gamma, const void* dy, const void* d_residual,
                         const float* mean, const float* rstd, void* dx, long rows, long h,
                         bool rms, Dtype act, cudaStream_t s);
/// Floats of the `partial` scratch that norm_backward_params needs.
size_t norm_partial_floats(long h);
/// dgamma = sum over rows of dy * xhat, dbeta = sum of dy (fp32, h each; dbeta untouched for
/// RMSNorm), by column partial sums (as Apex's cuComputePartGradGammaBeta) then a reduction.
void norm_backward_params(const void* x, const void* dy, const float* mean, const float* rstd,
                          float* partial, float* dgamma, float* dbeta, long rows, long h, bool rms,
                          Dtype act, cudaStream_t s);
/// out = residual + dropout(a + bias), with its mask (Megatron's bias_dropout_add).
void bias_dropout_add(const void* a, const float* bias, const void* residual, void* out,
                      uint8_t* mask, long rows, long h, float p, uint64_t seed, Dtype act,
                      cudaStream_t s);
/// y = gelu(x + bias), bias per column (Megatron's bias_gelu); and dx = dy * gelu'(x + bias).
void bias_gelu_forward(const void* x, const float* bias, void* y, long rows, long cols, Dtype act,
                       cudaStream_t s);
void bias_gelu_backward(const void* x, const float* bias, const void* dy, void* dx, long rows,
                        long cols, Dtype act, cudaStream_t s);
/// x has rows of 2f: y = silu(x[:, :f]) * x[:, f:]; dx has rows of 2f.
void swiglu_forward(const void* x, void* y, long rows, long f, Dtype act, cudaStream_t s);
void swiglu_backward(const void* x, const void* dy, void* dx, long rows, long f, Dtype act,
                     cudaStream_t s);

// ---- flash attention: flash_forward.cu, flash_backward.cu -------------------------------------

/// Q and O are [bh][sq][d]; K and V [bh / kv_group][sk][d] (grouped-query attention when
/// kv_group > 1: query head h reads key/value head h / kv_group). Causal: bottom-right aligned,
/// query i sees keys j <= i + (sk - sq). d is 64, 80, 96 or 128.
struct FlashShape {
  long bh = 0, sq = 0, sk = 0, d = 0, kv_group = 1;
  bool causal = true;
};
/// O and the rows' log-sum-exp (`lse`, fp32 [bh][sq], base 2 of the scaled scores: what the
/// backward reads).
void flash_forward(const void* q, const void* k, const void* v, void* o, float* lse,
                   const FlashShape& f, Dtype act, cudaStream_t s);
size_t flash_backward_workspace_bytes(const FlashShape& f, Dtype act);
/// dQ, dK, dV (dK, dV shaped like K, V) from dO and the forward's O and lse.
void flash_backward(const void* q, const void* k, const void* v, const void* o, const void* dout,
                    const float* lse, void* dq, void* dk, void* dv, void* workspace,
                    const FlashShape& f, Dtype act, cudaStream_t s);

// ---- a mixture-of-experts layer's routing: moe_routing.cu -----------------------------------

/// Softmax over each row of `experts` fp32 logits (probs, fp32), then its k most probable experts
/// (index, the lower index first on ties) and their probabilities (weight): [tokens][k] each.
void router_forward(const float* logits, float* probs, int* index, float* weight, long tokens,
                    int experts, int k, cudaStream_t s);
/// dlogits = p (g - sum p g), g the weights' gradient at the chosen experts (fp32 throughout).
void router_backward(const float* probs, const int* index, const float* dweight, float* dlogits,
                     long tokens, int experts, int k, cudaStream_t s);
/// out[pos[c]] = x[c / k] for copies c < copies (rows of h, 16-bit).
void permute_forward(const void* x, const int* pos, void* out, long copies, int k, long h,
                     Dtype act, cudaStream_t s);
/// out[pos[i]] = in[i] for i < n: 16-bit scalars (the sorted rows' routing probabilities).
void scatter_scalars(const void* in, const int* pos, void* out, long n, cudaStream_t s);
/// dx[u] = sum over j < k of dout[pos[u k + j]], for rows u < copies / k.
void permute_backward(const void* dout, const int* pos, void* dx, long copies, int k, long h,
                      Dtype act, cudaStream_t s);
/// y[u] = sum over j < k of w[u k + j] e[pos[u k + j]] (w fp32).
void unpermute_forward(const void* e, const float* w, const int* pos, void* y, long copies, int k,
                       long h, Dtype act, cudaStream_t s);
/// de[pos[c]] = w[c] dy[c / k] and dw[c] = dy[c / k] . e[pos[c]] (dw fp32).
void unpermute_backward(const void* dy, const void* e, const float* w, const int* pos, void* de,
                        float* dw, long copies, int k, long h, Dtype act, cudaStream_t s);

}  // namespace planner::calibrate::kernels
