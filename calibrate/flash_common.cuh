#pragma once
/// What the flash attention kernels share: tile sizes, shared-memory strides, tile loads, and
/// the dispatch over element type and head dimension.
///
/// Tiles of 64 queries x 64 keys, four warps of 16 rows each; matrix products on tensor cores
/// through WMMA 16x16x16 fragments (bf16/fp16 in, fp32 accumulation). Shared-memory rows are
/// padded by 8 halves (16 bytes) or 4 floats against bank conflicts; every fragment pointer stays
/// 32-byte aligned, as load_matrix_sync requires, because fragments start on multiples of 16
/// rows and 16 columns.
#include <mma.h>

#include <type_traits>

#include "calibrate/kernel_util.cuh"
#include "calibrate/validate_kernels.h"

namespace planner::calibrate::kernels::flash {

namespace wmma = nvcuda::wmma;

constexpr int kTile = 64;  ///< queries and keys per tile
constexpr int kWarps = 4;  ///< 16 rows each
constexpr int kThreads = 128;
constexpr int kLdS = kTile + 4;  ///< fp32 scratch of 16 x 64 per warp
constexpr int kLdP = kTile + 8;  ///< 16-bit 16 x 64 tiles (P, dS)
constexpr float kLog2e = 1.4426950408889634f;

template <int D>
__host__ __device__ constexpr int ld_tile() {
  return D + 8;  ///< 16-bit 64 x D tiles (Q, K, V, dO)
}

/// Rows [row0, row0 + 64) of a [rows][D] tensor into `dst` (stride ld_tile<D>()), zeros past
/// `rows`. All threads of the block take part; the caller synchronises.
template <typename T, int D>
__device__ __forceinline__ void load_tile(T* dst, const T* src, long row0, long rows) {
  constexpr int kVecs = D / 8;
  for (int v = threadIdx.x; v < kTile * kVecs; v += kThreads) {
    const int r = v / kVecs, c = (v % kVecs) * 8;
    uint4 val = make_uint4(0, 0, 0, 0);
    if (row0 + r < rows) val = *reinterpret_cast<const uint4*>(src + (row0 + r) * D + c);
    *reinterpret_cast<uint4*>(dst + r * ld_tile<D>() + c) = val;
  }
}

/// A warp's rows of a 16 x 64 fp32 scratch, 2 lanes per row and 32 columns each: the column of
/// step `c` (0..31), rotated by row so that the 32 lanes hit 32 different banks.
__device__ __forceinline__ int scratch_col(int lane, int c) {
  const int r = lane >> 1, half = lane & 1;
  return half * 32 + ((c + 10 * r + half) & 31);
}

/// Calls f(T{}, std::integral_constant<int, D>{}) for the element type and head dimension;
/// false when the head dimension has no instance.
template <typename F>
bool dispatch(Dtype act, long d, F&& f) {
  bool ok = true;
  dispatch_16bit(act, [&](auto tag) {
    switch (d) {
      case 64:
        f(tag, std::integral_constant<int, 64>{});
        break;
      case 80:
        f(tag, std::integral_constant<int, 80>{});
        break;
      case 96:
        f(tag, std::integral_constant<int, 96>{});
        break;
      case 128:
        f(tag, std::integral_constant<int, 128>{});
        break;
      default:
        ok = false;
    }
  });
  return ok;
}

}  // namespace planner::calibrate::kernels::flash
