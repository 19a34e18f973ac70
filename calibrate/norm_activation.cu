// The layer's other element-wise kernels: layer norm / RMSNorm forward and backward (the input
// gradient, then the parameter gradients by column partial sums, as Apex's fused layer norm),
// Megatron's bias-dropout-add, and the MLP activation (bias-GeLU or SwiGLU). 16-bit data, fp32
// arithmetic and parameters; rows of a multiple of 8 elements.
#include <cmath>

#include "calibrate/kernel_util.cuh"
#include "calibrate/validate_common.h"
#include "calibrate/validate_kernels.h"

namespace planner::calibrate::kernels {
namespace {

/// Column partitions of the parameter-gradient partial sums.
constexpr int kParts = 32;

int row_threads(long h) { return h / 8 <= 128 ? 128 : 256; }

__device__ __forceinline__ void load8f(const float* p, float (&f)[8]) {
  const float4 a = *reinterpret_cast<const float4*>(p), b = *reinterpret_cast<const float4*>(p + 4);
  f[0] = a.x, f[1] = a.y, f[2] = a.z, f[3] = a.w, f[4] = b.x, f[5] = b.y, f[6] = b.z, f[7] = b.w;
}

/// One block per row: mean (layer norm), variance, then the output.
template <typename T>
__global__ void __launch_bounds__(256)
    norm_fwd_kernel(const T* __restrict__ x, const float* __restrict__ gamma,
                    const float* __restrict__ beta, T* __restrict__ y, float* mean_out,
                    float* rstd_out, long h, bool rms) {
  __shared__ float red[32];
  const T* in = x + blockIdx.x * h;
  float sum = 0;
  if (!rms)
    for (long c = threadIdx.x * 8L; c < h; c += blockDim.x * 8L) {
      float v[8];
      load8(in + c, v);
#pragma unroll
      for (int e = 0; e < 8; ++e) sum += v[e];
    }
  const float mean = rms ? 0.0f : block_reduce<false>(sum, red) / float(h);
  float sq = 0;
  for (long c = threadIdx.x * 8L; c < h; c += blockDim.x * 8L) {
    float v[8];
    load8(in + c, v);
#pragma unroll
    for (int e = 0; e < 8; ++e) sq += (v[e] - mean) * (v[e] - mean);
  }
  const float rstd = rsqrtf(block_reduce<false>(sq, red) / float(h) + kNormEps);
  for (long c = threadIdx.x * 8L; c < h; c += blockDim.x * 8L) {
    float v[8], g[8], b[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    load8(in + c, v);
    load8f(gamma + c, g);
    if (!rms) load8f(beta + c, b);
#pragma unroll
    for (int e = 0; e < 8; ++e) v[e] = (v[e] - mean) * rstd * g[e] + b[e];
    store8(y + blockIdx.x * h + c, v);
  }
  if (threadIdx.x == 0) mean_out[blockIdx.x] = mean, rstd_out[blockIdx.x] = rstd;
}

/// dx = rstd (g - mean(g) - xhat mean(g xhat)) with g = dy gamma (no mean(g) for RMSNorm).
template <typename T>
__global__ void __launch_bounds__(256)
    norm_bwd_input_kernel(const T* __restrict__ x, const float* __restrict__ gamma,
                          const T* __restrict__ dy, const T* __restrict__ d_residual,
                          const float* __restrict__ mean_in, const float* __restrict__ rstd_in,
                          T* __restrict__ dx, long h, bool rms) {
  __shared__ float red[2][32];
  const long base = blockIdx.x * h;
  const float mean = mean_in[blockIdx.x], rstd = rstd_in[blockIdx.x];
  float sum_g = 0, sum_gx = 0;
  for (long c = threadIdx.x * 8L; c < h; c += blockDim.x * 8L) {
    float v[8], d[8], g[8];
    load8(x + base + c, v);
    load8(dy + base + c, d);
    load8f(gamma + c, g);
#pragma unroll
    for (int e = 0; e < 8; ++e) sum_g += d[e] * g[e], sum_gx += d[e] * g[e] * (v[e] - mean) * rstd;
  }
  const float mg = rms ? 0.0f : block_reduce<false>(sum_g, red[0]) / float(h);
  const float mgx = block_reduce<false>(sum_gx, red[1]) / float(h);
  for (long c = threadIdx.x * 8L; c < h; c += blockDim.x * 8L) {
    float v[8], d[8], g[8], res[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    load8(x + base + c, v);
    load8(dy + base + c, d);
    load8f(gamma + c, g);
    if (d_residual) load8(d_residual + base + c, res);
#pragma unroll
    for (int e = 0; e < 8; ++e)
      v[e] = rstd * (d[e] * g[e] - mg - (v[e] - mean) * rstd * mgx) + res[e];
    store8(dx + base + c, v);
  }
}

/// Block (32, 8) over 32 columns; partition blockIdx.y of kParts takes every kParts-th group of
/// 8 rows. partial = [kParts][h] of dgamma, then [kParts][h] of dbeta.
template <typename T>
__global__ void norm_params_partial_kernel(const T* __restrict__ x, const T* __restrict__ dy,
                                           const float* __restrict__ mean,
                                           const float* __restrict__ rstd, float* partial,
                                           long rows, long h) {
  __shared__ float sg[8][33], sb[8][33];
  const long c = blockIdx.x * 32L + threadIdx.x;
  float dg = 0, db = 0;
  if (c < h)
    for (long r = blockIdx.y * 8L + threadIdx.y; r < rows; r += 8L * kParts) {
      const float d = to_float(dy[r * h + c]);
      dg += d * (to_float(x[r * h + c]) - mean[r]) * rstd[r];
      db += d;
    }
  sg[threadIdx.y][threadIdx.x] = dg, sb[threadIdx.y][threadIdx.x] = db;
  __syncthreads();
  if (threadIdx.y == 0 && c < h) {
    for (int i = 1; i < 8; ++i) dg += sg[i][threadIdx.x], db += sb[i][threadIdx.x];
    partial[blockIdx.y * h + c] = dg;
    partial[(kParts + blockIdx.y) * h + c] = db;
  }
}

__global__ void norm_params_final_kernel(const float* partial, float* dgamma, float* dbeta, long h,
                                         bool rms) {
  const long c = blockIdx.x * long(blockDim.x) + threadIdx.x;
  if (c >= h) return;
  float g = 0, b = 0;
  for (int p = 0; p < kParts; ++p) g += partial[p * h + c], b += partial[(kParts + p) * h + c];
  dgamma[c] = g;
  if (!rms) dbeta[c] = b;
}

template <typename T>
__global__ void bias_dropout_add_kernel(const T* __restrict__ a, const float* __restrict__ bias,
                                        const T* __restrict__ residual, T* __restrict__ out,
                                        uint8_t* __restrict__ mask, size_t n8, long h, float p,
                                        uint64_t seed) {
  const float inv = 1.0f / (1.0f - p);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n8;
       i += size_t(gridDim.x) * blockDim.x) {
    float v[8], b[8], res[8];
    uint8_t keep[8];
    load8(a + i * 8, v);
    load8f(bias + (i * 8) % h, b);
    load8(residual + i * 8, res);
#pragma unroll
    for (int e = 0; e < 8; ++e) {
      keep[e] = dropout_keep(seed, i * 8 + e, p);
      v[e] = res[e] + (keep[e] ? (v[e] + b[e]) * inv : 0.0f);
    }
    store8(out + i * 8, v);
    store_mask8(mask + i * 8, keep);
  }
}

/// kBackward: dx = dy * gelu'(x + bias); else y = gelu(x + bias).
template <typename T, bool kBackward>
__global__ void bias_gelu_kernel(const T* __restrict__ x, const float* __restrict__ bias,
                                 const T* __restrict__ dy, T* __restrict__ out, size_t n8,
                                 long cols) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n8;
       i += size_t(gridDim.x) * blockDim.x) {
    float v[8], b[8], d[8];
    load8(x + i * 8, v);
    load8f(bias + (i * 8) % cols, b);
    if (kBackward) load8(dy + i * 8, d);
#pragma unroll
    for (int e = 0; e < 8; ++e)
      v[e] = kBackward ? d[e] * gelu_grad(v[e] + b[e]) : gelu(v[e] + b[e]);
    store8(out + i * 8, v);
  }
}

template <typename T, bool kBackward>
__global__ void swiglu_kernel(const T* __restrict__ x, const T* __restrict__ dy,
                              T* __restrict__ out, size_t n8, long f) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n8;
       i += size_t(gridDim.x) * blockDim.x) {
    const size_t r = i * 8 / f, c = i * 8 % f;
    float a[8], b[8], d[8];
    load8(x + r * 2 * f + c, a);
    load8(x + r * 2 * f + f + c, b);
    if (!kBackward) {
#pragma unroll
      for (int e = 0; e < 8; ++e) a[e] = silu(a[e]) * b[e];
      store8(out + i * 8, a);
      continue;
    }
    load8(dy + i * 8, d);
    float da[8], db[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) da[e] = d[e] * b[e] * silu_grad(a[e]), db[e] = d[e] * silu(a[e]);
    store8(out + r * 2 * f + c, da);
    store8(out + r * 2 * f + f + c, db);
  }
}

}  // namespace

void norm_forward(const void* x, const float* gamma, const float* beta, void* y, float* mean,
                  float* rstd, long rows, long h, bool rms, Dtype act, cudaStream_t s) {
  dispatch_16bit(act, [&](auto tag) {
    using T = decltype(tag);
    norm_fwd_kernel<T><<<unsigned(rows), row_threads(h), 0, s>>>(
        static_cast<const T*>(x), gamma, beta, static_cast<T*>(y), mean, rstd, h, rms);
  });
  CAL_CUDA(cudaGetLastError());
}

void norm_backward_input(const void* x, const float* gamma, const void* dy, const void* d_residual,
                         const float* mean, const float* rstd, void* dx, long rows, long h,
                         bool rms, Dtype act, cudaStream_t s) {
  dispatch_16bit(act, [&](auto tag) {
    using T = decltype(tag);
    norm_bwd_input_kernel<T><<<unsigned(rows), row_threads(h), 0, s>>>(
        static_cast<const T*>(x), gamma, static_cast<const T*>(dy),
        static_cast<const T*>(d_residual), mean, rstd, static_cast<T*>(dx), h, rms);
  });
  CAL_CUDA(cudaGetLastError());
}

size_t norm_partial_floats(long h) { return size_t(2) * kParts * size_t(h); }

void norm_backward_params(const void* x, const void* dy, const float* mean, const float* rstd,
                          float* partial, float* dgamma, float* dbeta, long rows, long h, bool rms,
                          Dtype act, cudaStream_t s) {
  dispatch_16bit(act, [&](auto tag) {
    using T = decltype(tag);
    norm_params_partial_kernel<T><<<dim3(unsigned((h + 31) / 32), kParts), dim3(32, 8), 0, s>>>(
        static_cast<const T*>(x), static_cast<const T*>(dy), mean, rstd, partial, rows, h);
  });
  CAL_CUDA(cudaGetLastError());
  norm_params_final_kernel<<<unsigned((h + 255) / 256), 256, 0, s>>>(partial, dgamma, dbeta, h,
                                                                     rms);
  CAL_CUDA(cudaGetLastError());
}

void bias_dropout_add(const void* a, const float* bias, const void* residual, void* out,
                      uint8_t* mask, long rows, long h, float p, uint64_t seed, Dtype act,
                      cudaStream_t s) {
  const size_t n8 = size_t(rows) * h / 8;
  dispatch_16bit(act, [&](auto tag) {
    using T = decltype(tag);
    bias_dropout_add_kernel<T><<<grid_for(n8, 256), 256, 0, s>>>(
        static_cast<const T*>(a), bias, static_cast<const T*>(residual), static_cast<T*>(out), mask,
        n8, h, p, seed);
  });
  CAL_CUDA(cudaGetLastError());
}

void bias_gelu_forward(const void* x, const float* bias, void* y, long rows, long cols, Dtype act,
                       cudaStream_t s) {
  const size_t n8 = size_t(rows) * cols / 8;
  dispatch_16bit(act, [&](auto tag) {
    using T = decltype(tag);
    bias_gelu_kernel<T, false><<<grid_for(n8, 256), 256, 0, s>>>(
        static_cast<const T*>(x), bias, nullptr, static_cast<T*>(y), n8, cols);
  });
  CAL_CUDA(cudaGetLastError());
}

void bias_gelu_backward(const void* x, const float* bias, const void* dy, void* dx, long rows,
                        long cols, Dtype act, cudaStream_t s) {
  const size_t n8 = size_t(rows) * cols / 8;
  dispatch_16bit(act, [&](auto tag) {
    using T = decltype(tag);
    bias_gelu_kernel<T, true><<<grid_for(n8, 256), 256, 0, s>>>(
        static_cast<const T*>(x), bias, static_cast<const T*>(dy), static_cast<T*>(dx), n8, cols);
  });
  CAL_CUDA(cudaGetLastError());
}

void swiglu_forward(const void* x, void* y, long rows, long f, Dtype act, cudaStream_t s) {
  const size_t n8 = size_t(rows) * f / 8;
  dispatch_16bit(act, [&](auto tag) {
    using T = decltype(tag);
    swiglu_kernel<T, false><<<grid_for(n8, 256), 256, 0, s>>>(static_cast<const T*>(x), nullptr,
                                                              static_cast<T*>(y), n8, f);
  });
  CAL_CUDA(cudaGetLastError());
}

void swiglu_backward(const void* x, const void* dy, void* dx, long rows, long f, Dtype act,
                     cudaStream_t s) {
  const size_t n8 = size_t(rows) * f / 8;
  dispatch_16bit(act, [&](auto tag) {
    using T = decltype(tag);
    swiglu_kernel<T, true><<<grid_for(n8, 256), 256, 0, s>>>(
        static_cast<const T*>(x), static_cast<const T*>(dy), static_cast<T*>(dx), n8, f);
  });
  CAL_CUDA(cudaGetLastError());
}

}  // namespace planner::calibrate::kernels
