// A mixture-of-experts layer's routing, as Megatron-Core runs it around the grouped expert GEMMs
// (router.py's softmax and top-k; moe_utils permute and unpermute): the router's probabilities
// and choices, the permutation of token copies into expert order and the weighted combine back,
// and their gradients. fp32 routing, 16-bit token rows of a multiple of 8 elements.
#include <cfloat>

#include "calibrate/kernel_util.cuh"
#include "calibrate/validate_common.h"
#include "calibrate/validate_kernels.h"

namespace planner::calibrate::kernels {
namespace {

constexpr int kRouterThreads = 128;

/// The block's largest (value, index) pair, the lower index on ties, to every thread.
__device__ void block_argmax(float& v, int& i, float* sv, int* si) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  auto better = [](float a, int ia, float b, int ib) { return a > b || (a == b && ia < ib); };
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float ov = __shfl_xor_sync(0xffffffffu, v, o);
    const int oi = __shfl_xor_sync(0xffffffffu, i, o);
    if (better(ov, oi, v, i)) v = ov, i = oi;
  }
  if (lane == 0) sv[warp] = v, si[warp] = i;
  __syncthreads();
  v = -FLT_MAX, i = 0x7fffffff;
  for (int w = 0; w < warps; ++w)
    if (better(sv[w], si[w], v, i)) v = sv[w], i = si[w];
  __syncthreads();
}

__global__ void __launch_bounds__(kRouterThreads)
    router_fwd_kernel(const float* __restrict__ logits, float* __restrict__ probs,
                      int* __restrict__ index, float* __restrict__ weight, long tokens, int experts,
                      int k) {
  __shared__ float row[kMaxRouterExperts];
  __shared__ float red[32];
  __shared__ float sv[32];
  __shared__ int si[32];
  for (long t = blockIdx.x; t < tokens; t += gridDim.x) {
    const float* x = logits + t * experts;
    float top = -FLT_MAX;
    for (int e = threadIdx.x; e < experts; e += blockDim.x) top = fmaxf(top, x[e]);
    top = block_reduce<true>(top, red);
    float sum = 0;
    for (int e = threadIdx.x; e < experts; e += blockDim.x) sum += expf(x[e] - top);
    sum = block_reduce<false>(sum, red);
    for (int e = threadIdx.x; e < experts; e += blockDim.x) {
      const float p = expf(x[e] - top) / sum;
      probs[t * experts + e] = p, row[e] = p;
    }
    __syncthreads();
    for (int j = 0; j < k; ++j) {
      float v = -FLT_MAX;
      int i = 0x7fffffff;
      for (int e = threadIdx.x; e < experts; e += blockDim.x)
        if (row[e] > v) v = row[e], i = e;  // ascending e: the lower index kept on ties
      block_argmax(v, i, sv, si);
      if (threadIdx.x == 0) {
        index[t * k + j] = i, weight[t * k + j] = v;
        row[i] = -FLT_MAX;  // taken
      }
      __syncthreads();
    }
  }
}

__global__ void __launch_bounds__(kRouterThreads)
    router_bwd_kernel(const float* __restrict__ probs, const int* __restrict__ index,
                      const float* __restrict__ dweight, float* __restrict__ dlogits, long tokens,
                      int experts, int k) {
  for (long t = blockIdx.x; t < tokens; t += gridDim.x) {
    const float* p = probs + t * experts;
    float s = 0;
    for (int j = 0; j < k; ++j) s += p[index[t * k + j]] * dweight[t * k + j];
    for (int e = threadIdx.x; e < experts; e += blockDim.x) {
      float g = 0;
      for (int j = 0; j < k; ++j)
        if (index[t * k + j] == e) g = dweight[t * k + j];
      dlogits[t * experts + e] = p[e] * (g - s);
    }
  }
}

/// One thread per 8 elements of a copy's row.
template <typename T>
__global__ void permute_fwd_kernel(const T* __restrict__ x, const int* __restrict__ pos,
                                   T* __restrict__ out, size_t vectors, int k, long h) {
  const long per_row = h / 8;
  for (size_t v = blockIdx.x * size_t(blockDim.x) + threadIdx.x; v < vectors;
       v += size_t(gridDim.x) * blockDim.x) {
    const long c = long(v / per_row), col = long(v % per_row) * 8;
    *reinterpret_cast<uint4*>(out + long(pos[c]) * h + col) =
        *reinterpret_cast<const uint4*>(x + (c / k) * h + col);
  }
}

/// One thread per 16-bit scalar (its type does not matter to a copy).
__global__ void scatter_scalars_kernel(const uint16_t* __restrict__ in, const int* __restrict__ pos,
                                       uint16_t* __restrict__ out, long n) {
  for (long i = blockIdx.x * long(blockDim.x) + threadIdx.x; i < n;
       i += long(gridDim.x) * blockDim.x)
    out[pos[i]] = in[i];
}

/// One thread per 8 elements of an output row: the sum of its k copies' rows, each weighted by
/// `w` (unpermute) or not (the permutation's gradient, w null).
template <typename T>
__global__ void gather_sum_kernel(const T* __restrict__ in, const float* __restrict__ w,
                                  const int* __restrict__ pos, T* __restrict__ out, size_t vectors,
                                  int k, long h) {
  const long per_row = h / 8;
  for (size_t v = blockIdx.x * size_t(blockDim.x) + threadIdx.x; v < vectors;
       v += size_t(gridDim.x) * blockDim.x) {
    const long u = long(v / per_row), col = long(v % per_row) * 8;
    float acc[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (int j = 0; j < k; ++j) {
      const long c = u * k + j;
      const float scale = w ? w[c] : 1.0f;
      float f[8];
      load8(in + long(pos[c]) * h + col, f);
#pragma unroll
      for (int e = 0; e < 8; ++e) acc[e] += scale * f[e];
    }
    store8(out + u * h + col, acc);
  }
}

/// One block per copy: its row of de and the dot product dw.
template <typename T>
__global__ void __launch_bounds__(256)
    unpermute_bwd_kernel(const T* __restrict__ dy, const T* __restrict__ e,
                         const float* __restrict__ w, const int* __restrict__ pos,
                         T* __restrict__ de, float* __restrict__ dw, long copies, int k, long h) {
  __shared__ float red[32];
  for (long c = blockIdx.x; c < copies; c += gridDim.x) {
    const T* d = dy + (c / k) * h;
    const long row = long(pos[c]) * h;
    float dot = 0;
    for (long col = threadIdx.x * 8L; col < h; col += blockDim.x * 8L) {
      float a[8], b[8];
      load8(d + col, a);
      load8(e + row + col, b);
#pragma unroll
      for (int i = 0; i < 8; ++i) dot += a[i] * b[i], a[i] *= w[c];
      store8(de + row + col, a);
    }
    dot = block_reduce<false>(dot, red);
    if (threadIdx.x == 0) dw[c] = dot;
  }
}

unsigned row_blocks(long rows) { return unsigned(rows < 1 ? 1 : rows > 65536 ? 65536 : rows); }

}  // namespace

void router_forward(const float* logits, float* probs, int* index, float* weight, long tokens,
                    int experts, int k, cudaStream_t s) {
  router_fwd_kernel<<<row_blocks(tokens), kRouterThreads, 0, s>>>(logits, probs, index, weight,
                                                                  tokens, experts, k);
  CAL_CUDA(cudaGetLastError());
}

void router_backward(const float* probs, const int* index, const float* dweight, float* dlogits,
                     long tokens, int experts, int k, cudaStream_t s) {
  router_bwd_kernel<<<row_blocks(tokens), kRouterThreads, 0, s>>>(probs, index, dweight, dlogits,
                                                                  tokens, experts, k);
  CAL_CUDA(cudaGetLastError());
}

void permute_forward(const void* x, const int* pos, void* out, long copies, int k, long h,
                     Dtype act, cudaStream_t s) {
  const size_t vectors = size_t(copies) * h / 8;
  dispatch_16bit(act, [&](auto tag) {
    using T = decltype(tag);
    permute_fwd_kernel<T><<<grid_for(vectors, 256), 256, 0, s>>>(
        static_cast<const T*>(x), pos, static_cast<T*>(out), vectors, k, h);
  });
  CAL_CUDA(cudaGetLastError());
}

void scatter_scalars(const void* in, const int* pos, void* out, long n, cudaStream_t s) {
  scatter_scalars_kernel<<<grid_for(size_t(n), 256), 256, 0, s>>>(
      static_cast<const uint16_t*>(in), pos, static_cast<uint16_t*>(out), n);
  CAL_CUDA(cudaGetLastError());
}

void permute_backward(const void* dout, const int* pos, void* dx, long copies, int k, long h,
                      Dtype act, cudaStream_t s) {
  const size_t vectors = size_t(copies / k) * h / 8;
  dispatch_16bit(act, [&](auto tag) {
    using T = decltype(tag);
    gather_sum_kernel<T><<<grid_for(vectors, 256), 256, 0, s>>>(
        static_cast<const T*>(dout), nullptr, pos, static_cast<T*>(dx), vectors, k, h);
  });
  CAL_CUDA(cudaGetLastError());
}

void unpermute_forward(const void* e, const float* w, const int* pos, void* y, long copies, int k,
                       long h, Dtype act, cudaStream_t s) {
  const size_t vectors = size_t(copies / k) * h / 8;
  dispatch_16bit(act, [&](auto tag) {
    using T = decltype(tag);
    gather_sum_kernel<T><<<grid_for(vectors, 256), 256, 0, s>>>(static_cast<const T*>(e), w, pos,
                                                                static_cast<T*>(y), vectors, k, h);
  });
  CAL_CUDA(cudaGetLastError());
}

void unpermute_backward(const void* dy, const void* e, const float* w, const int* pos, void* de,
                        float* dw, long copies, int k, long h, Dtype act, cudaStream_t s) {
  const int threads = h / 8 <= 128 ? 128 : 256;
  dispatch_16bit(act, [&](auto tag) {
    using T = decltype(tag);
    unpermute_bwd_kernel<T>
        <<<row_blocks(copies), threads, 0, s>>>(static_cast<const T*>(dy), static_cast<const T*>(e),
                                                w, pos, static_cast<T*>(de), dw, copies, k, h);
  });
  CAL_CUDA(cudaGetLastError());
}

}  // namespace planner::calibrate::kernels
