#pragma once
/// The definitions that planner-validate's CUDA kernels and their CPU references must share so
/// that a check can compare them element by element: the dropout decision (a counter-based hash,
/// so the reference reproduces the GPU's mask without reading it), the GeLU and SiLU formulas,
/// and the constants of the layer. Compiles as CUDA (__host__ __device__) and as plain C++.
#include <cmath>
#include <cstdint>

#if defined(__CUDACC__)
#define PLANNER_HD __host__ __device__ __forceinline__
#else
#define PLANNER_HD inline
#endif

namespace planner::calibrate {

/// Dropout probability of the hidden states and the attention probabilities: GPT-3 and the
/// Megatron-LM papers train with 0.1 (Brown et al. 2020; Narayanan et al. 2021). The cost model
/// counts the 1-byte mask whatever the rate.
inline constexpr float kDropoutP = 0.1f;
/// Layer norm and RMSNorm epsilon (Megatron-LM's default layernorm_epsilon).
inline constexpr float kNormEps = 1e-5f;

/// The most experts the router kernel takes (a row of probabilities is staged in shared memory).
inline constexpr int kMaxRouterExperts = 1024;

/// splitmix64 (Steele, Lea and Flood 2014).
PLANNER_HD uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

/// Whether element `index` survives dropout with drop probability `p` under `seed`: a uniform
/// number in [0, 1) from 24 bits of the hash, kept when it is at least p.
PLANNER_HD bool dropout_keep(uint64_t seed, uint64_t index, float p) {
  const uint64_t h = splitmix64(seed * 0xD1B54A32D192ED03ull + index);
  return float(h >> 40) * (1.0f / 16777216.0f) >= p;
}

/// GeLU with the tanh approximation, as Megatron-LM's fused bias_gelu (Hendrycks and Gimpel 2016).
PLANNER_HD float gelu(float x) {
  const float inner = 0.7978845608f * x * (1.0f + 0.044715f * x * x);
  return 0.5f * x * (1.0f + tanhf(inner));
}
/// d gelu / dx of the same approximation.
PLANNER_HD float gelu_grad(float x) {
  const float inner = 0.7978845608f * x * (1.0f + 0.044715f * x * x);
  const float t = tanhf(inner);
  const float dinner = 0.7978845608f * (1.0f + 3.0f * 0.044715f * x * x);
  return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * dinner;
}

PLANNER_HD float sigmoid(float x) { return 1.0f / (1.0f + expf(-x)); }
/// SiLU (swish) and its derivative, the gate of SwiGLU (Shazeer 2020).
PLANNER_HD float silu(float x) { return x * sigmoid(x); }
PLANNER_HD float silu_grad(float x) {
  const float s = sigmoid(x);
  return s * (1.0f + x * (1.0f - s));
}

}  // namespace planner::calibrate
