#pragma once
/// Plain CPU references for every kernel planner-validate writes or configures (no CUDA): the
/// runner checks its kernels against these on small random inputs before timing anything, and
/// the unit tests check the references themselves (rows of a softmax sum to one, the tiled
/// online-softmax attention equals the naive one, gradients equal finite differences).
///
/// Layouts: row-major unless stated; attention tensors are [bh][s][d]; the GEMM reference follows
/// cuBLAS (column-major, op(A) op(B)). Values are float; the runner decodes the GPU's 16-bit and
/// 8-bit data with the converters below before comparing.
#include <cstdint>
#include <vector>

namespace planner::calibrate::ref {

using Vec = std::vector<float>;

float bf16_to_float(uint16_t bits);
/// Round to nearest even.
uint16_t float_to_bf16(float x);
float fp16_to_float(uint16_t bits);
/// Round to nearest even; overflow to infinity, tiny values to subnormals or zero.
uint16_t float_to_fp16(float x);
/// OCP FP8 E4M3 (bias 7, no infinities, 0x7F/0xFF are NaN).
float e4m3_to_float(uint8_t bits);

/// max |got - want| / max |want| over all elements (infinite when the sizes differ or a value is
/// not finite): a relative error that tolerates the zeros of masks and dropout.
double relative_error(const Vec& got, const Vec& want);

/// cuBLAS semantics: C[m x n] = op(A) op(B), column-major, `batch` copies strided by the size of
/// each operand. op(A) is m x k, stored k x m (lda k) when ta == 'T', else m x k (lda m).
Vec gemm(char ta, char tb, int m, int n, int k, int batch, const Vec& a, const Vec& b);

/// Scaled, masked softmax over rows of `cols` scores; `rows` = batch x sq and row r is query
/// r % sq. Causal: query i sees keys j <= i + (cols - sq) (the last sq of cols positions).
Vec softmax_forward(const Vec& x, int rows, int cols, int sq, float scale, bool causal);
/// Gradient with respect to the unscaled scores: scale * y * (dy - sum_j y dy).
Vec softmax_backward(const Vec& y, const Vec& dy, int rows, int cols, float scale);

struct Dropped {
  Vec out;
  std::vector<uint8_t> mask;  ///< 1 kept, 0 dropped
};
/// out = keep ? x / (1 - p) : 0, with keep = dropout_keep(seed, index, p).
Dropped dropout_forward(const Vec& x, float p, uint64_t seed);
Vec dropout_backward(const Vec& dy, const std::vector<uint8_t>& mask, float p);

struct Attention {
  Vec o;    ///< [bh][sq][d]
  Vec lse;  ///< [bh][sq], natural log of each row's sum of exp(scaled score)
};
/// softmax(Q K^T / sqrt(d) + causal mask) V, materialising the scores.
Attention attention_forward(const Vec& q, const Vec& k, const Vec& v, int bh, int sq, int sk, int d,
                            bool causal);
/// The same by key tiles of `bc` with an online softmax (Dao et al. 2022, Algorithm 1; Milakov
/// and Gimelshein 2018), skipping tiles the causal mask hides: the algorithm of the flash kernel.
Attention attention_forward_tiled(const Vec& q, const Vec& k, const Vec& v, int bh, int sq, int sk,
                                  int d, bool causal, int bc);

struct AttentionGrads {
  Vec dq, dk, dv;
};
/// Gradients of sum(O * dO) with respect to Q, K and V.
AttentionGrads attention_backward(const Vec& q, const Vec& k, const Vec& v, const Vec& dout, int bh,
                                  int sq, int sk, int d, bool causal);

/// The same gradients in the flash kernel's order (FlashAttention-2, Algorithm 2): per key tile
/// of `bc`, over the query tiles of `br` that see it, from the forward's log-sum-exp and
/// D = rowsum(dO * O); dQ accumulates across key tiles.
AttentionGrads attention_backward_tiled(const Vec& q, const Vec& k, const Vec& v, const Vec& dout,
                                        int bh, int sq, int sk, int d, bool causal, int br, int bc);

struct Norm {
  Vec y;
  Vec mean, rstd;  ///< per row (mean stays 0 for RMSNorm)
};
/// Layer norm (y = (x - mean) * rstd * gamma + beta) or, with `rms`, RMSNorm (y = x * rstd *
/// gamma, rstd = 1 / sqrt(mean(x^2) + eps)); beta is ignored for RMSNorm.
Norm norm_forward(const Vec& x, const Vec& gamma, const Vec& beta, int rows, int h, bool rms);
struct NormGrads {
  Vec dx, dgamma, dbeta;
};
NormGrads norm_backward(const Vec& x, const Vec& gamma, const Vec& dy, int rows, int h, bool rms);

/// out = residual + dropout(a + bias) (Megatron-LM's bias_dropout_add); bias has h entries.
Dropped bias_dropout_add(const Vec& a, const Vec& bias, const Vec& residual, int rows, int h,
                         float p, uint64_t seed);

/// GeLU of x + bias (bias per column, Megatron's bias_gelu), and its gradient.
Vec bias_gelu_forward(const Vec& x, const Vec& bias, int rows, int cols);
Vec bias_gelu_backward(const Vec& x, const Vec& bias, const Vec& dy, int rows, int cols);
/// SwiGLU on rows of 2f: out = silu(x[:, :f]) * x[:, f:] (f columns), and the 2f-column gradient.
Vec swiglu_forward(const Vec& x, int rows, int f);
Vec swiglu_backward(const Vec& x, const Vec& dy, int rows, int f);

// ---- a mixture-of-experts layer's routing (the runner's moe_routing kernels) -----------------

struct Routing {
  Vec probs;               ///< [tokens][experts], the softmax over every expert (fp32)
  std::vector<int> index;  ///< [tokens][k], the chosen experts, the most probable first
  Vec weight;              ///< [tokens][k], their probabilities: the combine's weights
};
/// A top-k router with the softmax before the top-k (Megatron-Core's --moe-router-pre-softmax
/// path of router.py topk_routing_with_score_function, no renormalisation): a softmax over each
/// row of `experts` fp32 logits, then the k largest (the lower index first on ties). Its
/// default takes the top-k of the logits and a softmax over those k: the same rows read and
/// written, which is what the timing measures.
Routing router_forward(const Vec& logits, int tokens, int experts, int k);
/// The logits' gradient from the weights' (`dweight`, [tokens][k]): the softmax's p_i (g_i -
/// sum_j p_j g_j), with g the weights' gradient at the chosen experts and 0 elsewhere.
Vec router_backward(const Routing& r, const Vec& dweight, int tokens, int experts, int k);
/// Where each token copy goes in the expert-ordered buffer: copy c (the (c % k)-th choice of row
/// c / k) to row pos[c], the copies grouped by expert in token order (moe_utils permute's sort).
std::vector<int> expert_order(const std::vector<int>& index, int experts);

/// The dispatch's permutation of rows of h (16-bit in the runner): out[pos[c]] = x[c / k], for
/// every copy c of pos.size() = rows x k.
Vec permute_forward(const Vec& x, const std::vector<int>& pos, int k, int h);
/// Its gradient: dx[u] = sum over j < k of dout[pos[u k + j]].
Vec permute_backward(const Vec& dout, const std::vector<int>& pos, int k, int h);
/// The combine's weighted sum of each row's expert outputs: y[u] = sum over j < k of
/// w[u k + j] e[pos[u k + j]].
Vec unpermute_forward(const Vec& e, const Vec& w, const std::vector<int>& pos, int k, int h);
struct UnpermuteGrads {
  Vec de;  ///< de[pos[c]] = w[c] dy[c / k]
  Vec dw;  ///< dw[c] = dy[c / k] . e[pos[c]]
};
UnpermuteGrads unpermute_backward(const Vec& dy, const Vec& e, const Vec& w,
                                  const std::vector<int>& pos, int k, int h);

}  // namespace planner::calibrate::ref
