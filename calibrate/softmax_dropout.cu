// The attention core's element-wise kernels when attention is unfused (Megatron-LM 2021): the
// fused scale-mask-softmax, then dropout; backward, dropout then softmax. Bytes per score
// element: 2 + 2 (softmax), 2 + 2 + 1 (dropout) forward; 2 + 1 + 2, then 2 + 2 + 2 backward: the
// cost model's 9 and 11 (cost/compute.cc).
#include <cmath>

#include "calibrate/kernel_util.cuh"
#include "calibrate/validate_common.h"
#include "calibrate/validate_kernels.h"

namespace planner::calibrate::kernels {
namespace {

constexpr int kRowThreads = 128;
constexpr float kLog2e = 1.4426950408889634f;

/// Online (max, sum of 2^(x - max)) pairs, merged.
__device__ __forceinline__ void merge(float& m, float& l, float m2, float l2) {
  const float mn = fmaxf(m, m2);
  if (mn == -INFINITY) return;
  l = (m == -INFINITY ? 0.0f : l * exp2f(m - mn)) + (m2 == -INFINITY ? 0.0f : l2 * exp2f(m2 - mn));
  m = mn;
}

/// One block per row; the row is read twice (the second time from cache).
template <typename T>
__global__ void __launch_bounds__(kRowThreads)
    softmax_fwd_kernel(const T* __restrict__ x, T* __restrict__ y, long cols, long sq, float scale2,
                       bool causal) {
  __shared__ float red[2][32];
  const long r = blockIdx.x;
  const long last = causal ? (r % sq) + (cols - sq) : cols - 1;  // last visible key
  const T* in = x + r * cols;
  T* out = y + r * cols;
  float m = -INFINITY, l = 0;
  for (long c = threadIdx.x * 8L; c < cols; c += kRowThreads * 8L) {
    float v[8], cm = -INFINITY, cl = 0;
    load8(in + c, v);
#pragma unroll
    for (int e = 0; e < 8; ++e)
      v[e] = c + e <= last ? v[e] * scale2 : -INFINITY, cm = fmaxf(cm, v[e]);
    if (cm == -INFINITY) continue;
#pragma unroll
    for (int e = 0; e < 8; ++e) cl += exp2f(v[e] - cm);  // 2^-inf = 0
    merge(m, l, cm, cl);
  }
  const float row_max = block_reduce<true>(m, red[0]);
  const float row_sum = block_reduce<false>(m == -INFINITY ? 0.0f : l * exp2f(m - row_max), red[1]);
  const float inv = row_sum > 0 ? 1.0f / row_sum : 0.0f;
  for (long c = threadIdx.x * 8L; c < cols; c += kRowThreads * 8L) {
    float v[8];
    load8(in + c, v);
#pragma unroll
    for (int e = 0; e < 8; ++e) v[e] = c + e <= last ? exp2f(v[e] * scale2 - row_max) * inv : 0.0f;
    store8(out + c, v);
  }
}

template <typename T>
__global__ void __launch_bounds__(kRowThreads)
    softmax_bwd_kernel(const T* __restrict__ y, const T* __restrict__ dy, T* __restrict__ dx,
                       long cols, float scale) {
  __shared__ float red[32];
  const long base = blockIdx.x * cols;
  float dot = 0;
  for (long c = threadIdx.x * 8L; c < cols; c += kRowThreads * 8L) {
    float a[8], b[8];
    load8(y + base + c, a);
    load8(dy + base + c, b);
#pragma unroll
    for (int e = 0; e < 8; ++e) dot += a[e] * b[e];
  }
  dot = block_reduce<false>(dot, red);
  for (long c = threadIdx.x * 8L; c < cols; c += kRowThreads * 8L) {
    float a[8], b[8];
    load8(y + base + c, a);
    load8(dy + base + c, b);
#pragma unroll
    for (int e = 0; e < 8; ++e) a[e] = scale * a[e] * (b[e] - dot);
    store8(dx + base + c, a);
  }
}

template <typename T>
__global__ void dropout_fwd_kernel(const T* __restrict__ x, T* __restrict__ y,
                                   uint8_t* __restrict__ mask, size_t n8, float p, uint64_t seed) {
  const float inv = 1.0f / (1.0f - p);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n8;
       i += size_t(gridDim.x) * blockDim.x) {
    float v[8];
    uint8_t keep[8];
    load8(x + i * 8, v);
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      keep[e] = dropout_keep(seed, i * 8 + e, p);
      v[e] = keep[e] ? v[e] * inv : 0.0f;
    }
    store8(y + i * 8, v);
    store_mask8(mask + i * 8, keep);
  }
}

template <typename T>
__global__ void dropout_bwd_kernel(const T* __restrict__ dy, const uint8_t* __restrict__ mask,
                                   T* __restrict__ dx, size_t n8, float p) {
  const float inv = 1.0f / (1.0f - p);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n8;
       i += size_t(gridDim.x) * blockDim.x) {
    float v[8];
    uint8_t keep[8];
    load8(dy + i * 8, v);
    load_mask8(mask + i * 8, keep);
#pragma unroll
    for (int e = 0; e < 8; ++e) v[e] = keep[e] ? v[e] * inv : 0.0f;
    store8(dx + i * 8, v);
  }
}

}  // namespace

void softmax_forward(const void* x, void* y, long rows, long cols, long sq, float scale,
                     bool causal, Dtype act, cudaStream_t s) {
  dispatch_16bit(act, [&](auto tag) {
    using T = decltype(tag);
    softmax_fwd_kernel<T><<<unsigned(rows), kRowThreads, 0, s>>>(
        static_cast<const T*>(x), static_cast<T*>(y), cols, sq, scale * kLog2e, causal);
  });
  CAL_CUDA(cudaGetLastError());
}

void softmax_backward(const void* y, const void* dy, void* dx, long rows, long cols, float scale,
                      Dtype act, cudaStream_t s) {
  dispatch_16bit(act, [&](auto tag) {
    using T = decltype(tag);
    softmax_bwd_kernel<T><<<unsigned(rows), kRowThreads, 0, s>>>(
        static_cast<const T*>(y), static_cast<const T*>(dy), static_cast<T*>(dx), cols, scale);
  });
  CAL_CUDA(cudaGetLastError());
}

void dropout_forward(const void* x, void* y, uint8_t* mask, size_t n, float p, uint64_t seed,
                     Dtype act, cudaStream_t s) {
  dispatch_16bit(act, [&](auto tag) {
    using T = decltype(tag);
    dropout_fwd_kernel<T><<<grid_for(n / 8, 256), 256, 0, s>>>(
        static_cast<const T*>(x), static_cast<T*>(y), mask, n / 8, p, seed);
  });
  CAL_CUDA(cudaGetLastError());
}

void dropout_backward(const void* dy, const uint8_t* mask, void* dx, size_t n, float p, Dtype act,
                      cudaStream_t s) {
  dispatch_16bit(act, [&](auto tag) {
    using T = decltype(tag);
    dropout_bwd_kernel<T><<<grid_for(n / 8, 256), 256, 0, s>>>(static_cast<const T*>(dy), mask,
                                                               static_cast<T*>(dx), n / 8, p);
  });
  CAL_CUDA(cudaGetLastError());
}

}  // namespace planner::calibrate::kernels
