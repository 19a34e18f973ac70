#pragma once
/// Device helpers shared by planner-validate's kernels: 16-bit conversions, 16-byte vector loads
/// of 8 elements, block reductions, and the bf16/fp16 dispatch.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

#include "calibrate/harness.h"
#include "planner/cluster.h"

namespace planner::calibrate::kernels {

__device__ __forceinline__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ __forceinline__ float to_float(__half x) { return __half2float(x); }
template <typename T>
__device__ __forceinline__ T from_float(float x);
template <>
__device__ __forceinline__ __nv_bfloat16 from_float<__nv_bfloat16>(float x) {
  return __float2bfloat16(x);
}
template <>
__device__ __forceinline__ __half from_float<__half>(float x) {
  return __float2half(x);
}

/// Eight consecutive elements from 16-byte aligned `p`, as floats.
template <typename T>
__device__ __forceinline__ void load8(const T* p, float (&f)[8]) {
  const uint4 u = *reinterpret_cast<const uint4*>(p);
  const T* t = reinterpret_cast<const T*>(&u);
#pragma unroll
  for (int i = 0; i < 8; ++i) f[i] = to_float(t[i]);
}
template <typename T>
__device__ __forceinline__ void store8(T* p, const float (&f)[8]) {
  uint4 u;
  T* t = reinterpret_cast<T*>(&u);
#pragma unroll
  for (int i = 0; i < 8; ++i) t[i] = from_float<T>(f[i]);
  *reinterpret_cast<uint4*>(p) = u;
}
/// Eight mask bytes.
__device__ __forceinline__ void load_mask8(const uint8_t* p, uint8_t (&m)[8]) {
  const uint2 u = *reinterpret_cast<const uint2*>(p);
  const uint8_t* b = reinterpret_cast<const uint8_t*>(&u);
#pragma unroll
  for (int i = 0; i < 8; ++i) m[i] = b[i];
}
__device__ __forceinline__ void store_mask8(uint8_t* p, const uint8_t (&m)[8]) {
  uint2 u;
  uint8_t* b = reinterpret_cast<uint8_t*>(&u);
#pragma unroll
  for (int i = 0; i < 8; ++i) b[i] = m[i];
  *reinterpret_cast<uint2*>(p) = u;
}

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ float warp_max(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}

/// Sum (or max) of `v` over the block, returned to every thread. `scratch` holds 32 floats;
/// blockDim.x is a multiple of 32. Ends with a barrier, so scratch can be reused at once.
template <bool kMax>
__device__ float block_reduce(float v, float* scratch) {
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  v = kMax ? warp_max(v) : warp_sum(v);
  if (lane == 0) scratch[warp] = v;
  __syncthreads();
  float r = lane < warps ? scratch[lane] : (kMax ? -INFINITY : 0.0f);
  r = kMax ? warp_max(r) : warp_sum(r);
  __syncthreads();
  return r;
}

/// Grid for `n` work items of `threads` each, at most 65536 blocks (grid-stride loops).
inline unsigned grid_for(size_t n, int threads) {
  const size_t blocks = (n + threads - 1) / threads;
  return unsigned(blocks < 1 ? 1 : blocks > 65536 ? 65536 : blocks);
}

/// Calls `f` with a value of the 16-bit element type of `act` (bf16 or fp16).
template <typename F>
void dispatch_16bit(Dtype act, F&& f) {
  if (act == Dtype::fp16)
    f(__half{});
  else
    f(__nv_bfloat16{});
}

}  // namespace planner::calibrate::kernels
