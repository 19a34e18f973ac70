// Flash attention backward (FlashAttention-2, Dao 2023, Algorithm 2): a preprocessing kernel
// computes D_i = rowsum(dO_i * O_i); then one block per 64 keys of one head keeps K_j, V_j in
// shared memory and dK_j, dV_j in tensor-core accumulators while it walks the query tiles:
//   S^T = K Q^T, P^T = exp2(S^T - lse), dV += P^T dO, dP^T = V dO^T, dS^T = P^T (dP^T - D),
//   dK += dS^T Q, dQ += dS K (fp32 atomics into a workspace, converted at the end).
// Five matrix products per tile, as the cost model assumes (2.5x the forward's FLOPs). With
// grouped-query attention dK and dV are written per query head and summed over each group.
#include <cmath>

#include "calibrate/flash_common.cuh"

namespace planner::calibrate::kernels::flash {
namespace {

template <int D>
struct BwdLayout {
  static constexpr size_t kTileBytes = size_t(kTile) * ld_tile<D>() * 2;
  static constexpr size_t k = 0, v = kTileBytes, q = 2 * kTileBytes, dout = 3 * kTileBytes;
  static constexpr size_t s = 4 * kTileBytes;                         ///< fp32 16 x 64 per warp
  static constexpr size_t pt = s + size_t(kWarps) * 16 * kLdS * 4;    ///< P^T, 16 x 64 per warp
  static constexpr size_t dst = pt + size_t(kWarps) * 16 * kLdP * 2;  ///< dS^T, 64 x 64
  static constexpr size_t rows = dst + size_t(kTile) * kLdP * 2;      ///< lse and D per query
  static constexpr size_t bytes = rows + 2 * kTile * 4;
};

using Acc = wmma::fragment<wmma::accumulator, 16, 16, 16, float>;

/// acc[nb] += A (16 x 64, row-major at a, stride lda) x B (64 x D, row-major at b, stride ld).
template <typename T, int D>
__device__ __forceinline__ void accumulate_16x64_64xD(Acc (&acc)[D / 16], const T* a, int lda,
                                                      const T* b) {
  constexpr int ld = ld_tile<D>();
#pragma unroll
  for (int kk = 0; kk < kTile / 16; ++kk) {
    wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> af;
    wmma::load_matrix_sync(af, a + kk * 16, lda);
#pragma unroll
    for (int nb = 0; nb < D / 16; ++nb) {
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> bf;
      wmma::load_matrix_sync(bf, b + kk * 16 * ld + nb * 16, ld);
      wmma::mma_sync(acc[nb], af, bf, acc[nb]);
    }
  }
}

/// out (16 x 64 fp32, stride kLdS) = A (this warp's 16 rows of a 64 x D tile) x B^T, B the
/// 64 x D tile `b`: a row of 64 dot products per row of A.
template <typename T, int D>
__device__ __forceinline__ void rows_times_tile_t(const T* a, const T* b, float* out) {
  constexpr int ld = ld_tile<D>();
#pragma unroll
  for (int nb = 0; nb < kTile / 16; ++nb) {
    Acc acc;
    wmma::fill_fragment(acc, 0.0f);
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> af;
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> bf;
      wmma::load_matrix_sync(af, a + kk * 16, ld);
      wmma::load_matrix_sync(bf, b + nb * 16 * ld + kk * 16, ld);
      wmma::mma_sync(acc, af, bf, acc);
    }
    wmma::store_matrix_sync(out + nb * 16, acc, kLdS, wmma::mem_row_major);
  }
}

/// Writes a warp's 16 x D accumulators, times `scale`, to rows [row0, row0 + 16) of out.
template <typename T, int D>
__device__ void store_rows(const Acc (&acc)[D / 16], float scale, float* scratch, T* out, long row0,
                           long rows) {
  const int lane = threadIdx.x & 31, r = lane >> 1, c = (lane & 1) * 8;
#pragma unroll
  for (int nb = 0; nb < D / 16; ++nb) {
    wmma::store_matrix_sync(scratch, acc[nb], kLdS, wmma::mem_row_major);
    __syncwarp();
    float v[8];
#pragma unroll
    for (int e = 0; e < 8; ++e) v[e] = scratch[r * kLdS + c + e] * scale;
    if (row0 + r < rows) store8(out + (row0 + r) * D + nb * 16 + c, v);
    __syncwarp();
  }
}

/// The query tile's part of dQ: rows [q0 + 16 warp, +16) of dS K, added (times `scale`) into
/// the fp32 accumulator with atomics; dS is dS^T read column-major.
template <typename T, int D>
__device__ __forceinline__ void add_dq(const T* dST, const T* Ks, float* Sw, float* dq_rows,
                                       long rows_left, float scale) {
  constexpr int ld = ld_tile<D>();
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  for (int c0 = 0; c0 < D; c0 += kTile) {
    const int width = min(kTile, D - c0);
    for (int nb = 0; nb < width / 16; ++nb) {
      Acc acc;
      wmma::fill_fragment(acc, 0.0f);
#pragma unroll
      for (int kk = 0; kk < kTile / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::col_major> af;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> bf;
        wmma::load_matrix_sync(af, dST + kk * 16 * kLdP + warp * 16, kLdP);
        wmma::load_matrix_sync(bf, Ks + kk * 16 * ld + c0 + nb * 16, ld);
        wmma::mma_sync(acc, af, bf, acc);
      }
      wmma::store_matrix_sync(Sw + nb * 16, acc, kLdS, wmma::mem_row_major);
    }
    __syncwarp();
    for (int r = 0; r < 16 && r < rows_left; ++r)
      for (int c = lane; c < width; c += 32)
        atomicAdd(dq_rows + r * D + c0 + c, scale * Sw[r * kLdS + c]);
    __syncwarp();
  }
}

template <typename T, int D>
__global__ void __launch_bounds__(kThreads)
    flash_bwd_kernel(const T* __restrict__ Q, const T* __restrict__ K, const T* __restrict__ V,
                     const T* __restrict__ dO, const float* __restrict__ LSE,
                     const float* __restrict__ Dsum, float* __restrict__ dQacc, T* __restrict__ dK,
                     T* __restrict__ dV, FlashShape f) {
  using L = BwdLayout<D>;
  constexpr int ld = ld_tile<D>();
  extern __shared__ __align__(128) unsigned char smem[];
  T* Ks = reinterpret_cast<T*>(smem + L::k);
  T* Vs = reinterpret_cast<T*>(smem + L::v);
  T* Qs = reinterpret_cast<T*>(smem + L::q);
  T* dOs = reinterpret_cast<T*>(smem + L::dout);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, row = lane >> 1;
  float* Sw = reinterpret_cast<float*>(smem + L::s) + warp * 16 * kLdS;
  T* PTw = reinterpret_cast<T*>(smem + L::pt) + warp * 16 * kLdP;
  T* dST = reinterpret_cast<T*>(smem + L::dst);
  float* Ls = reinterpret_cast<float*>(smem + L::rows);
  float* Ds = Ls + kTile;

  const long bh = blockIdx.y, j0 = long(blockIdx.x) * kTile, kvh = bh / f.kv_group;
  const long off = f.sk - f.sq, kj = j0 + warp * 16 + row;  // this lane's key
  load_tile<T, D>(Ks, K + kvh * f.sk * D, j0, f.sk);
  load_tile<T, D>(Vs, V + kvh * f.sk * D, j0, f.sk);
  Acc dk[D / 16], dv[D / 16];
#pragma unroll
  for (int nb = 0; nb < D / 16; ++nb)
    wmma::fill_fragment(dk[nb], 0.0f), wmma::fill_fragment(dv[nb], 0.0f);
  const float scale = rsqrtf(float(D)), scale2 = kLog2e * scale;
  const long first_q = f.causal ? max(0L, j0 - off) : 0;  // queries before see none of the keys
  for (long q0 = first_q / kTile * kTile; q0 < f.sq; q0 += kTile) {
    __syncthreads();  // the previous tile's Q, dO and dS^T are no longer read
    load_tile<T, D>(Qs, Q + bh * f.sq * D, q0, f.sq);
    load_tile<T, D>(dOs, dO + bh * f.sq * D, q0, f.sq);
    for (int i = threadIdx.x; i < kTile; i += kThreads) {
      Ls[i] = q0 + i < f.sq ? LSE[bh * f.sq + q0 + i] : 0.0f;
      Ds[i] = q0 + i < f.sq ? Dsum[bh * f.sq + q0 + i] : 0.0f;
    }
    __syncthreads();
    rows_times_tile_t<T, D>(Ks + warp * 16 * ld, Qs, Sw);  // S^T: 16 keys x 64 queries
    __syncwarp();
#pragma unroll
    for (int c = 0; c < 32; ++c) {  // P^T = exp2(S^T - lse) where the key is seen
      const int col = scratch_col(lane, c);
      const long qi = q0 + col;
      const bool seen = kj < f.sk && qi < f.sq && (!f.causal || kj <= qi + off);
      PTw[row * kLdP + col] =
          from_float<T>(seen ? exp2f(Sw[row * kLdS + col] * scale2 - Ls[col]) : 0.0f);
    }
    __syncwarp();
    rows_times_tile_t<T, D>(Vs + warp * 16 * ld, dOs, Sw);  // dP^T
    __syncwarp();
#pragma unroll
    for (int c = 0; c < 32; ++c) {  // dS^T = P^T (dP^T - D)
      const int col = scratch_col(lane, c);
      const float p = to_float(PTw[row * kLdP + col]);
      dST[(warp * 16 + row) * kLdP + col] = from_float<T>(p * (Sw[row * kLdS + col] - Ds[col]));
    }
    __syncwarp();
    accumulate_16x64_64xD<T, D>(dv, PTw, kLdP, dOs);
    accumulate_16x64_64xD<T, D>(dk, dST + warp * 16 * kLdP, kLdP, Qs);
    __syncthreads();  // all of dS^T is written
    const long q_warp = q0 + warp * 16;
    add_dq<T, D>(dST, Ks, Sw, dQacc + (bh * f.sq + q_warp) * D, f.sq - q_warp, scale);
  }
  const long out_head = f.kv_group > 1 ? bh : kvh;  // grouped: per query head, summed later
  store_rows<T, D>(dk, scale, Sw, dK + out_head * f.sk * D, j0 + warp * 16, f.sk);
  store_rows<T, D>(dv, 1.0f, Sw, dV + out_head * f.sk * D, j0 + warp * 16, f.sk);
}

/// D_i = sum_c dO[i][c] O[i][c], one warp per row.
template <typename T>
__global__ void row_dot_kernel(const T* __restrict__ dO, const T* __restrict__ O, float* out,
                               long rows, int d) {
  const long r = blockIdx.x * long(blockDim.x / 32) + threadIdx.x / 32;
  if (r >= rows) return;
  float acc = 0;
  for (int c = threadIdx.x & 31; c < d; c += 32)
    acc += to_float(dO[r * d + c]) * to_float(O[r * d + c]);
  acc = warp_sum(acc);
  if ((threadIdx.x & 31) == 0) out[r] = acc;
}

template <typename T>
__global__ void convert_kernel(const float* __restrict__ in, T* __restrict__ out, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x)
    out[i] = from_float<T>(in[i]);
}

/// out[kvh][j][c] = sum over the group's query heads of in[kvh * group + g][j][c].
template <typename T>
__global__ void group_sum_kernel(const T* __restrict__ in, T* __restrict__ out, size_t per_head,
                                 long kv_heads, long group) {
  const size_t n = per_head * kv_heads;
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n;
       i += size_t(gridDim.x) * blockDim.x) {
    const size_t h = i / per_head, e = i % per_head;
    float acc = 0;
    for (long g = 0; g < group; ++g) acc += to_float(in[(h * group + g) * per_head + e]);
    out[i] = from_float<T>(acc);
  }
}

size_t align256(size_t b) { return (b + 255) / 256 * 256; }

}  // namespace
}  // namespace planner::calibrate::kernels::flash

namespace planner::calibrate::kernels {

size_t flash_backward_workspace_bytes(const FlashShape& f, Dtype) {
  using flash::align256;
  const size_t q = size_t(f.bh) * f.sq * f.d, grouped = size_t(f.bh) * f.sk * f.d;
  return align256(q * 4) + align256(size_t(f.bh) * f.sq * 4) +
         (f.kv_group > 1 ? 2 * align256(grouped * 2) : 0);
}

void flash_backward(const void* q, const void* k, const void* v, const void* o, const void* dout,
                    const float* lse, void* dq, void* dk, void* dv, void* workspace,
                    const FlashShape& f, Dtype act, cudaStream_t s) {
  using namespace flash;
  const size_t nq = size_t(f.bh) * f.sq * f.d, per_head = size_t(f.sk) * f.d;
  char* ws = static_cast<char*>(workspace);
  float* dq_acc = reinterpret_cast<float*>(ws);
  float* dsum = reinterpret_cast<float*>(ws + align256(nq * 4));
  char* expanded = ws + align256(nq * 4) + align256(size_t(f.bh) * f.sq * 4);
  CAL_CUDA(cudaMemsetAsync(dq_acc, 0, nq * 4, s));
  const bool ok = dispatch(act, f.d, [&](auto tag, auto dim) {
    using T = decltype(tag);
    constexpr int D = decltype(dim)::value;
    const long rows = f.bh * f.sq;
    row_dot_kernel<T><<<unsigned((rows + 7) / 8), 256, 0, s>>>(
        static_cast<const T*>(dout), static_cast<const T*>(o), dsum, rows, D);
    T* dk_out = f.kv_group > 1 ? reinterpret_cast<T*>(expanded) : static_cast<T*>(dk);
    T* dv_out = f.kv_group > 1
                    ? reinterpret_cast<T*>(expanded + align256(size_t(f.bh) * per_head * 2))
                    : static_cast<T*>(dv);
    const auto kernel = flash_bwd_kernel<T, D>;
    const size_t bytes = BwdLayout<D>::bytes;
    CAL_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
    const dim3 grid(unsigned((f.sk + kTile - 1) / kTile), unsigned(f.bh));
    kernel<<<grid, kThreads, bytes, s>>>(static_cast<const T*>(q), static_cast<const T*>(k),
                                         static_cast<const T*>(v), static_cast<const T*>(dout), lse,
                                         dsum, dq_acc, dk_out, dv_out, f);
    CAL_CUDA(cudaGetLastError());
    convert_kernel<T><<<grid_for(nq, 256), 256, 0, s>>>(dq_acc, static_cast<T*>(dq), nq);
    if (f.kv_group > 1) {
      const long kv_heads = f.bh / f.kv_group;
      group_sum_kernel<T><<<grid_for(per_head * kv_heads, 256), 256, 0, s>>>(
          dk_out, static_cast<T*>(dk), per_head, kv_heads, f.kv_group);
      group_sum_kernel<T><<<grid_for(per_head * kv_heads, 256), 256, 0, s>>>(
          dv_out, static_cast<T*>(dv), per_head, kv_heads, f.kv_group);
    }
  });
  if (!ok) throw DeviceError("flash_backward: no kernel for head dimension " + std::to_string(f.d));
  CAL_CUDA(cudaGetLastError());
}

}  // namespace planner::calibrate::kernels
