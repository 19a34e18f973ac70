// Flash attention forward (Dao et al. 2022; the loop order of FlashAttention-2, Dao 2023): one
// block per 64 queries of one head, over key tiles of 64 with an online softmax, so that the
// sq x sk scores never reach HBM. The algorithm is ref::attention_forward_tiled.
//
// Per key tile and warp (16 queries): S = Q K^T on tensor cores into fp32 scratch; the row max,
// the probabilities P (16-bit) and the row sums in registers, two lanes per row; then O = O alpha
// + P V, with O kept in fp32 shared memory (WMMA accumulators have no portable row mapping, so
// the per-row rescaling happens there). Causal tiles past the diagonal are skipped.
#include <cmath>

#include "calibrate/flash_common.cuh"

namespace planner::calibrate::kernels::flash {
namespace {

template <int D>
struct FwdLayout {
  static constexpr int kLdO = D + 4;
  static constexpr size_t kTileBytes = size_t(kTile) * ld_tile<D>() * 2;
  static constexpr size_t k = 0, v = kTileBytes, s = 2 * kTileBytes;
  static constexpr size_t p = s + size_t(kWarps) * 16 * kLdS * 4;
  static constexpr size_t o = p + size_t(kWarps) * 16 * kLdP * 2;
  static constexpr size_t stats = o + size_t(kWarps) * 16 * kLdO * 4;  ///< alpha, l per row
  static constexpr size_t bytes = stats + size_t(kWarps) * 2 * 16 * 4;
};

template <typename T, int D>
using QFrags = wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major>[D / 16];

/// Sw (16 x 64 fp32) = this warp's queries x the key tile, K^T read column-major from Ks.
template <typename T, int D>
__device__ __forceinline__ void scores(const QFrags<T, D>& qf, const T* Ks, float* Sw) {
  constexpr int ld = ld_tile<D>();
#pragma unroll
  for (int nb = 0; nb < kTile / 16; ++nb) {
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 0.0f);
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
      wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> kf;
      wmma::load_matrix_sync(kf, Ks + nb * 16 * ld + kk * 16, ld);
      wmma::mma_sync(acc, qf[kk], kf, acc);
    }
    wmma::store_matrix_sync(Sw + nb * 16, acc, kLdS, wmma::mem_row_major);
  }
}

/// The online softmax step of one lane (half a row: 32 scores of the tile starting at key j0):
/// masks and scales the scores (base 2), writes P, updates the row's max m and sum l, and
/// leaves the rescaling factor of the row's output in alpha_w.
template <typename T>
__device__ __forceinline__ void online_softmax(float* Sw, T* Pw, float* alpha_w, long j0,
                                               long visible, long sk, float scale2, float& m,
                                               float& l) {
  const int lane = threadIdx.x & 31, row = lane >> 1;
  float tile_max = -INFINITY;
#pragma unroll
  for (int c = 0; c < 32; ++c) {
    const int col = scratch_col(lane, c);
    const long j = j0 + col;
    const float s = (j <= visible && j < sk) ? Sw[row * kLdS + col] * scale2 : -INFINITY;
    Sw[row * kLdS + col] = s;
    tile_max = fmaxf(tile_max, s);
  }
  const float m_new = fmaxf(m, fmaxf(tile_max, __shfl_xor_sync(0xffffffffu, tile_max, 1)));
  float sum = 0;
#pragma unroll
  for (int c = 0; c < 32; ++c) {
    const int col = scratch_col(lane, c);
    const float s = Sw[row * kLdS + col];
    const float p = s == -INFINITY ? 0.0f : exp2f(s - m_new);
    Pw[row * kLdP + col] = from_float<T>(p);
    sum += p;
  }
  sum += __shfl_xor_sync(0xffffffffu, sum, 1);
  const float alpha = m == -INFINITY ? 0.0f : exp2f(m - m_new);
  l = l * alpha + sum;
  m = m_new;
  if ((lane & 1) == 0) alpha_w[row] = alpha;
}

/// Ow = Ow alpha + P V, 64 output columns at a time through the scratch Sw.
template <typename T, int D, int kLdO>
__device__ __forceinline__ void accumulate_pv(const T* Pw, const T* Vs, float* Sw, float* Ow,
                                              const float* alpha_w) {
  constexpr int ld = ld_tile<D>();
  const int lane = threadIdx.x & 31;
  for (int c0 = 0; c0 < D; c0 += kTile) {
    const int width = min(kTile, D - c0);
    for (int nb = 0; nb < width / 16; ++nb) {
      wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
      wmma::fill_fragment(acc, 0.0f);
#pragma unroll
      for (int kk = 0; kk < kTile / 16; ++kk) {
        wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> pf;
        wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> vf;
        wmma::load_matrix_sync(pf, Pw + kk * 16, kLdP);
        wmma::load_matrix_sync(vf, Vs + kk * 16 * ld + c0 + nb * 16, ld);
        wmma::mma_sync(acc, pf, vf, acc);
      }
      wmma::store_matrix_sync(Sw + nb * 16, acc, kLdS, wmma::mem_row_major);
    }
    __syncwarp();
    for (int r = 0; r < 16; ++r)
      for (int c = lane; c < width; c += 32)
        Ow[r * kLdO + c0 + c] = Ow[r * kLdO + c0 + c] * alpha_w[r] + Sw[r * kLdS + c];
    __syncwarp();
  }
}

template <typename T, int D>
__global__ void __launch_bounds__(kThreads)
    flash_fwd_kernel(const T* __restrict__ Q, const T* __restrict__ K, const T* __restrict__ V,
                     T* __restrict__ O, float* __restrict__ LSE, FlashShape f) {
  using L = FwdLayout<D>;
  extern __shared__ __align__(128) unsigned char smem[];
  T* Ks = reinterpret_cast<T*>(smem + L::k);
  T* Vs = reinterpret_cast<T*>(smem + L::v);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, row = lane >> 1;
  float* Sw = reinterpret_cast<float*>(smem + L::s) + warp * 16 * kLdS;
  T* Pw = reinterpret_cast<T*>(smem + L::p) + warp * 16 * kLdP;
  float* Ow = reinterpret_cast<float*>(smem + L::o) + warp * 16 * L::kLdO;
  float* alpha_w = reinterpret_cast<float*>(smem + L::stats) + warp * 32;
  float* l_w = alpha_w + 16;

  const long bh = blockIdx.y, q0 = long(blockIdx.x) * kTile, kvh = bh / f.kv_group;
  load_tile<T, D>(Ks, Q + bh * f.sq * D, q0, f.sq);  // Q passes through the K buffer
  __syncthreads();
  QFrags<T, D> qf;
#pragma unroll
  for (int kk = 0; kk < D / 16; ++kk)
    wmma::load_matrix_sync(qf[kk], Ks + warp * 16 * ld_tile<D>() + kk * 16, ld_tile<D>());
  for (int i = lane; i < 16 * L::kLdO; i += 32) Ow[i] = 0.0f;
  __syncthreads();

  const long qi = q0 + warp * 16 + row, off = f.sk - f.sq;
  const long visible = f.causal ? qi + off : f.sk - 1;  // this lane's last visible key
  const long last_key = f.causal ? min(f.sk - 1, q0 + kTile - 1 + off) : f.sk - 1;
  const float scale2 = kLog2e / sqrtf(float(D));
  float m = -INFINITY, l = 0;
  for (long j0 = 0; j0 <= last_key; j0 += kTile) {  // tiles past the diagonal are skipped
    load_tile<T, D>(Ks, K + kvh * f.sk * D, j0, f.sk);
    load_tile<T, D>(Vs, V + kvh * f.sk * D, j0, f.sk);
    __syncthreads();
    scores<T, D>(qf, Ks, Sw);
    __syncwarp();
    online_softmax<T>(Sw, Pw, alpha_w, j0, visible, f.sk, scale2, m, l);
    __syncwarp();
    accumulate_pv<T, D, L::kLdO>(Pw, Vs, Sw, Ow, alpha_w);
    __syncthreads();  // K and V are reloaded next
  }
  if ((lane & 1) == 0) l_w[row] = l;
  if ((lane & 1) == 0 && qi < f.sq) LSE[bh * f.sq + qi] = m + log2f(l);
  __syncwarp();
  T* o = O + bh * f.sq * D;
  for (int r = 0; r < 16; ++r) {
    const long i = q0 + warp * 16 + r;
    if (i >= f.sq) break;
    const float inv = 1.0f / l_w[r];
    for (int c = lane; c < D; c += 32) o[i * D + c] = from_float<T>(Ow[r * L::kLdO + c] * inv);
  }
}

}  // namespace
}  // namespace planner::calibrate::kernels::flash

namespace planner::calibrate::kernels {

void flash_forward(const void* q, const void* k, const void* v, void* o, float* lse,
                   const FlashShape& f, Dtype act, cudaStream_t s) {
  using namespace flash;
  const bool ok = dispatch(act, f.d, [&](auto tag, auto dim) {
    using T = decltype(tag);
    constexpr int D = decltype(dim)::value;
    const auto kernel = flash_fwd_kernel<T, D>;
    const size_t bytes = FwdLayout<D>::bytes;
    CAL_CUDA(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, int(bytes)));
    const dim3 grid(unsigned((f.sq + kTile - 1) / kTile), unsigned(f.bh));
    kernel<<<grid, kThreads, bytes, s>>>(static_cast<const T*>(q), static_cast<const T*>(k),
                                         static_cast<const T*>(v), static_cast<T*>(o), lse, f);
  });
  if (!ok) throw DeviceError("flash_forward: no kernel for head dimension " + std::to_string(f.d));
  CAL_CUDA(cudaGetLastError());
}

}  // namespace planner::calibrate::kernels
