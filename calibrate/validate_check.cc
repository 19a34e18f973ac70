#include "calibrate/validate_check.h"

#include <cstring>
#include <random>
#include <set>
#include <tuple>

#include "calibrate/device.h"
#include "calibrate/matmul.h"
#include "calibrate/validate_common.h"
#include "calibrate/validate_kernels.h"
#include "calibrate/validate_reference.h"
#include "planner/format.h"

namespace planner::calibrate {
namespace {

using ref::Vec;

/// Device data of the checks: random values quantised to the element type before they are
/// uploaded (so the reference sees exactly what the GPU reads), downloads decoded to float,
/// and the comparison.
class Bench {
 public:
  Bench(Dtype act, cudaStream_t s, unsigned long long seed, std::vector<CheckResult>& results,
        const std::function<void(const CheckResult&)>& report)
      : act(act), stream(s), seed(seed), rng_(seed), results_(results), report_(report) {}

  Vec random(size_t n, float amplitude) {
    std::uniform_real_distribution<float> u(-amplitude, amplitude);
    Vec v(n);
    for (float& x : v) x = decode(encode(u(rng_)));
    return v;
  }
  Vec random_f32(size_t n, float center, float amplitude) {
    std::uniform_real_distribution<float> u(center - amplitude, center + amplitude);
    Vec v(n);
    for (float& x : v) x = u(rng_);
    return v;
  }
  DeviceBuffer upload(const Vec& v) {
    std::vector<uint16_t> bits(v.size());
    for (size_t i = 0; i < v.size(); ++i) bits[i] = encode(v[i]);
    DeviceBuffer b(bits.size() * 2);
    CAL_CUDA(cudaMemcpy(b.get(), bits.data(), bits.size() * 2, cudaMemcpyHostToDevice));
    CAL_CUDA(cudaDeviceSynchronize());  // the non-blocking stream does not wait for the copy
    return b;
  }
  DeviceBuffer upload_f32(const Vec& v) {
    DeviceBuffer b(v.size() * 4);
    CAL_CUDA(cudaMemcpy(b.get(), v.data(), v.size() * 4, cudaMemcpyHostToDevice));
    CAL_CUDA(cudaDeviceSynchronize());
    return b;
  }
  static DeviceBuffer zeros(size_t bytes) {
    DeviceBuffer b(bytes);
    CAL_CUDA(cudaMemset(b.get(), 0, bytes));
    CAL_CUDA(cudaDeviceSynchronize());
    return b;
  }
  Vec download(const void* p, size_t n) { return download_as(p, n, element()); }
  Vec download_as(const void* p, size_t n, ElementType t) {
    CAL_CUDA(cudaStreamSynchronize(stream));
    std::vector<unsigned char> raw(n * element_bytes(t));
    CAL_CUDA(cudaMemcpy(raw.data(), p, raw.size(), cudaMemcpyDeviceToHost));
    Vec v(n);
    for (size_t i = 0; i < n; ++i) {
      uint16_t h = 0;
      if (t == ElementType::f16 || t == ElementType::bf16) std::memcpy(&h, &raw[2 * i], 2);
      switch (t) {
        case ElementType::f32:
          std::memcpy(&v[i], &raw[4 * i], 4);
          break;
        case ElementType::f16:
          v[i] = ref::fp16_to_float(h);
          break;
        case ElementType::bf16:
          v[i] = ref::bf16_to_float(h);
          break;
        case ElementType::e4m3:
          v[i] = ref::e4m3_to_float(raw[i]);
          break;
      }
    }
    return v;
  }
  void expect(const std::string& what, const Vec& got, const Vec& want) {
    const CheckResult r{what, ref::relative_error(got, want)};
    results_.push_back(r);
    report_(r);
    if (!(r.relative_error <= kCheckTolerance))
      throw CheckFailure(what + ": relative error " + std::to_string(r.relative_error) +
                         " against the CPU reference exceeds " + std::to_string(kCheckTolerance) +
                         "; nothing was timed");
  }
  std::string tag() const { return std::string(" (") + to_string(act); }

  const Dtype act;
  const cudaStream_t stream;
  const unsigned long long seed;

 private:
  ElementType element() const { return act == Dtype::fp16 ? ElementType::f16 : ElementType::bf16; }
  uint16_t encode(float x) const {
    return act == Dtype::fp16 ? ref::float_to_fp16(x) : ref::float_to_bf16(x);
  }
  float decode(uint16_t h) const {
    return act == Dtype::fp16 ? ref::fp16_to_float(h) : ref::bf16_to_float(h);
  }
  std::mt19937_64 rng_;
  std::vector<CheckResult>& results_;
  const std::function<void(const CheckResult&)>& report_;
};

void check_gemm(Bench& b, cublasLtHandle_t lt, Dtype dt, char ta, char tb, long batch) {
  const long long m = 64, n = 48, k = 80;  // multiples of 16, as FP8 needs
  const MatmulTypes t = matmul_types(dt);
  int device = 0, major = 0, minor = 0;
  CAL_CUDA(cudaGetDevice(&device));
  CAL_CUDA(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device));
  CAL_CUDA(cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device));
  if (10 * major + minor < t.min_cc)
    throw DeviceError(fmt("{} GEMMs need compute capability {:.1f}; this GPU has {}.{}",
                          to_string(dt), t.min_cc / 10.0, major, minor));
  const size_t na = m * k * batch, nb = k * n * batch, nc = m * n * batch;
  DeviceBuffer a(na * element_bytes(t.fill)), bm(nb * element_bytes(t.fill));
  DeviceBuffer c(nc * element_bytes(t.out)), ws(kMatmulWorkspaceBytes);
  fill_uniform(a.get(), na, t.fill, b.seed + 1, b.stream);
  fill_uniform(bm.get(), nb, t.fill, b.seed + 2, b.stream);
  const std::string what = std::string("cuBLASLt ") + to_string(dt) + " " + ta + tb +
                           (batch > 1 ? " strided-batched" : "") + " GEMM";
  Matmul mm(lt, dt, {ta, tb, m, n, k, batch});
  if (!mm.ok()) throw CheckFailure(what + ": cuBLASLt has no algorithm for it on this GPU");
  mm.run(a.get(), bm.get(), c.get(), ws.get(), b.stream);
  const Vec A = b.download_as(a.get(), na, t.fill), B = b.download_as(bm.get(), nb, t.fill);
  b.expect(what, b.download_as(c.get(), nc, t.out), ref::gemm(ta, tb, m, n, k, batch, A, B));
}

void check_softmax(Bench& b) {
  const long bh = 3, sq = 40, sk = 72, rows = bh * sq, n = rows * sk;  // causal offset 32
  const float scale = 0.5f;
  const uint64_t seed = b.seed + 3;
  const Vec x = b.random(n, 4.0f);
  DeviceBuffer dx_in = b.upload(x), y(n * 2), z(n * 2), mask(n), dy(n * 2), dx(n * 2);
  kernels::softmax_forward(dx_in.get(), y.get(), rows, sk, sq, scale, true, b.act, b.stream);
  const Vec Y = b.download(y.get(), n);
  b.expect("scale-mask-softmax fwd" + b.tag() + ", causal)", Y,
           ref::softmax_forward(x, rows, sk, sq, scale, true));
  auto* m = static_cast<uint8_t*>(mask.get());
  kernels::dropout_forward(y.get(), z.get(), m, n, kDropoutP, seed, b.act, b.stream);
  const ref::Dropped want = ref::dropout_forward(Y, kDropoutP, seed);
  b.expect("dropout fwd" + b.tag() + ")", b.download(z.get(), n), want.out);
  const Vec dz = b.random(n, 1.0f);
  DeviceBuffer dz_in = b.upload(dz);
  kernels::dropout_backward(dz_in.get(), m, dy.get(), n, kDropoutP, b.act, b.stream);
  const Vec DY = b.download(dy.get(), n);
  b.expect("dropout bwd" + b.tag() + ")", DY, ref::dropout_backward(dz, want.mask, kDropoutP));
  kernels::softmax_backward(y.get(), dy.get(), dx.get(), rows, sk, scale, b.act, b.stream);
  b.expect("softmax bwd" + b.tag() + ")", b.download(dx.get(), n),
           ref::softmax_backward(Y, DY, rows, sk, scale));
}

/// K or V of kv heads repeated for each query head of its group.
Vec expand_heads(const Vec& x, long kv_heads, long group, size_t per_head) {
  Vec out(x.size() * group);
  for (long h = 0; h < kv_heads * group; ++h)
    std::copy_n(x.begin() + (h / group) * per_head, per_head, out.begin() + h * per_head);
  return out;
}
Vec sum_heads(const Vec& x, long kv_heads, long group, size_t per_head) {
  Vec out(kv_heads * per_head, 0.0f);
  for (long h = 0; h < kv_heads * group; ++h)
    for (size_t e = 0; e < per_head; ++e) out[(h / group) * per_head + e] += x[h * per_head + e];
  return out;
}

void check_flash(Bench& b, const KernelRun& run) {
  kernels::FlashShape f;
  f.kv_group = run.kv_group, f.bh = 2 * run.kv_group, f.sq = 80, f.sk = 144, f.d = run.d;
  f.causal = run.causal;  // partial tiles at both ends, a causal offset of 64
  const long kvh = f.bh / f.kv_group;
  const size_t nq = f.bh * f.sq * f.d, nk = kvh * f.sk * f.d, per_head = f.sk * f.d;
  const Vec q = b.random(nq, 1.5f), k = b.random(nk, 1.5f), v = b.random(nk, 1.0f);
  const Vec dout = b.random(nq, 1.0f);
  DeviceBuffer Q = b.upload(q), K = b.upload(k), V = b.upload(v), dO = b.upload(dout);
  DeviceBuffer O(nq * 2), lse(f.bh * f.sq * 4), dQ(nq * 2), dK(nk * 2), dV(nk * 2);
  DeviceBuffer ws = Bench::zeros(kernels::flash_backward_workspace_bytes(f, b.act));
  kernels::flash_forward(Q.get(), K.get(), V.get(), O.get(), static_cast<float*>(lse.get()), f,
                         b.act, b.stream);
  const Vec ke = expand_heads(k, kvh, f.kv_group, per_head),
            ve = expand_heads(v, kvh, f.kv_group, per_head);
  const std::string tag = b.tag() + ", d=" + std::to_string(f.d) + (f.causal ? ", causal" : "") +
                          (f.kv_group > 1 ? ", kv_group=" + std::to_string(f.kv_group) : "") + ")";
  b.expect("flash attention fwd O" + tag, b.download(O.get(), nq),
           ref::attention_forward(q, ke, ve, f.bh, f.sq, f.sk, f.d, f.causal).o);
  kernels::flash_backward(Q.get(), K.get(), V.get(), O.get(), dO.get(),
                          static_cast<float*>(lse.get()), dQ.get(), dK.get(), dV.get(), ws.get(), f,
                          b.act, b.stream);
  const ref::AttentionGrads g =
      ref::attention_backward(q, ke, ve, dout, f.bh, f.sq, f.sk, f.d, f.causal);
  b.expect("flash attention bwd dQ" + tag, b.download(dQ.get(), nq), g.dq);
  b.expect("flash attention bwd dK" + tag, b.download(dK.get(), nk),
           sum_heads(g.dk, kvh, f.kv_group, per_head));
  b.expect("flash attention bwd dV" + tag, b.download(dV.get(), nk),
           sum_heads(g.dv, kvh, f.kv_group, per_head));
}

void check_norm(Bench& b, bool rms) {
  const long rows = 70, h = 2056;  // 257 vectors of 8: two passes of 256 threads, the second short
  const size_t n = rows * h;
  const std::string name = std::string(rms ? "RMSNorm" : "layer norm");
  const Vec x = b.random(n, 2.0f), gamma = b.random_f32(h, 1.0f, 0.5f),
            beta = b.random_f32(h, 0.0f, 0.5f);
  DeviceBuffer X = b.upload(x), G = b.upload_f32(gamma), Bt = b.upload_f32(beta), Y(n * 2);
  DeviceBuffer mean(rows * 4), rstd(rows * 4);
  auto* mu = static_cast<float*>(mean.get());
  auto* rs = static_cast<float*>(rstd.get());
  kernels::norm_forward(X.get(), static_cast<float*>(G.get()), static_cast<float*>(Bt.get()),
                        Y.get(), mu, rs, rows, h, rms, b.act, b.stream);
  b.expect(name + " fwd" + b.tag() + ")", b.download(Y.get(), n),
           ref::norm_forward(x, gamma, beta, rows, h, rms).y);
  const Vec dy = b.random(n, 1.0f), dres = b.random(n, 1.0f);
  DeviceBuffer DY = b.upload(dy), DR = b.upload(dres), DX(n * 2),
               partial(kernels::norm_partial_floats(h) * 4);
  DeviceBuffer dgamma = Bench::zeros(h * 4), dbeta = Bench::zeros(h * 4);
  kernels::norm_backward_input(X.get(), static_cast<float*>(G.get()), DY.get(), DR.get(), mu, rs,
                               DX.get(), rows, h, rms, b.act, b.stream);
  ref::NormGrads g = ref::norm_backward(x, gamma, dy, rows, h, rms);
  for (size_t i = 0; i < n; ++i) g.dx[i] += dres[i];
  b.expect(name + " bwd dx + residual gradient" + b.tag() + ")", b.download(DX.get(), n), g.dx);
  kernels::norm_backward_params(X.get(), DY.get(), mu, rs, static_cast<float*>(partial.get()),
                                static_cast<float*>(dgamma.get()), static_cast<float*>(dbeta.get()),
                                rows, h, rms, b.act, b.stream);
  b.expect(name + " bwd dgamma" + b.tag() + ")", b.download_as(dgamma.get(), h, ElementType::f32),
           g.dgamma);
  if (!rms)
    b.expect(name + " bwd dbeta" + b.tag() + ")", b.download_as(dbeta.get(), h, ElementType::f32),
             g.dbeta);
  const Vec a = b.random(n, 1.0f), bias = b.random_f32(h, 0.0f, 0.5f);
  DeviceBuffer A = b.upload(a), Bias = b.upload_f32(bias), Out(n * 2), M(n);
  const uint64_t seed = b.seed + 4;
  kernels::bias_dropout_add(A.get(), static_cast<float*>(Bias.get()), X.get(), Out.get(),
                            static_cast<uint8_t*>(M.get()), rows, h, kDropoutP, seed, b.act,
                            b.stream);
  b.expect("bias-dropout-add fwd" + b.tag() + ")", b.download(Out.get(), n),
           ref::bias_dropout_add(a, bias, x, rows, h, kDropoutP, seed).out);
}

void check_activation(Bench& b, bool swiglu) {
  const long rows = 70, f = swiglu ? 1032 : 2056, in_cols = swiglu ? 2 * f : f;
  const size_t n_in = rows * in_cols, n_out = rows * f;
  const Vec x = b.random(n_in, 3.0f), dy = b.random(n_out, 1.0f),
            bias = b.random_f32(f, 0.0f, 0.5f);
  DeviceBuffer X = b.upload(x), DY = b.upload(dy), Bias = b.upload_f32(bias), Y(n_out * 2),
               DX(n_in * 2);
  const auto* bp = static_cast<const float*>(Bias.get());
  if (swiglu) {
    kernels::swiglu_forward(X.get(), Y.get(), rows, f, b.act, b.stream);
    kernels::swiglu_backward(X.get(), DY.get(), DX.get(), rows, f, b.act, b.stream);
  } else {
    kernels::bias_gelu_forward(X.get(), bp, Y.get(), rows, f, b.act, b.stream);
    kernels::bias_gelu_backward(X.get(), bp, DY.get(), DX.get(), rows, f, b.act, b.stream);
  }
  const std::string name = swiglu ? "SwiGLU" : "bias-GeLU";
  b.expect(name + " fwd" + b.tag() + ")", b.download(Y.get(), n_out),
           swiglu ? ref::swiglu_forward(x, rows, f) : ref::bias_gelu_forward(x, bias, rows, f));
  b.expect(name + " bwd" + b.tag() + ")", b.download(DX.get(), n_in),
           swiglu ? ref::swiglu_backward(x, dy, rows, f)
                  : ref::bias_gelu_backward(x, bias, dy, rows, f));
}

/// The router on fp32 logits, then the permutation of its choices into expert order and the
/// weighted combine, and their gradients; the shapes the workload's (experts, top-k), few rows
/// of a width that leaves a partial pass of threads.
void check_moe(Bench& b, const KernelRun& run) {
  const int T = 70, E = int(run.experts), k = int(run.topk), h = 264;
  const size_t C = size_t(T) * k;
  const Vec logits = b.random_f32(size_t(T) * E, 0.0f, 3.0f);
  DeviceBuffer L = b.upload_f32(logits), P(size_t(T) * E * 4), I(C * 4), W(C * 4);
  auto* probs = static_cast<float*>(P.get());
  auto* index = static_cast<int*>(I.get());
  auto* weight = static_cast<float*>(W.get());
  kernels::router_forward(static_cast<float*>(L.get()), probs, index, weight, T, E, k, b.stream);
  const ref::Routing want = ref::router_forward(logits, T, E, k);
  const std::string tag = fmt(" (E={}, top-{})", E, k);
  b.expect("router softmax" + tag, b.download_as(probs, size_t(T) * E, ElementType::f32),
           want.probs);
  // The GPU's choices (a near tie may pick either expert): their weights are the reference's.
  std::vector<int> got(C);
  CAL_CUDA(cudaStreamSynchronize(b.stream));
  CAL_CUDA(cudaMemcpy(got.data(), index, C * 4, cudaMemcpyDeviceToHost));
  for (int t = 0; t < T; ++t)  // every choice an expert, no expert twice in a row
    for (int j = 0; j < k; ++j) {
      const int e = got[size_t(t) * k + j];
      bool repeated = false;
      for (int i = 0; i < j; ++i) repeated |= got[size_t(t) * k + i] == e;
      if (e < 0 || e >= E || repeated)
        throw CheckFailure(
            fmt("router top-k{}: token {} choice {} is expert {} ({}); nothing was "
                "timed",
                tag, t, j, e, repeated ? "chosen twice" : "out of range"));
    }
  b.expect("router top-k weights" + tag, b.download_as(weight, C, ElementType::f32), want.weight);
  ref::Routing gpu = want;
  gpu.index = got;
  Vec picked(C);
  for (size_t c = 0; c < C; ++c) picked[c] = want.probs[size_t(c / k) * E + size_t(got[c])];
  b.expect("router top-k choices" + tag, picked, want.weight);
  const Vec dweight = b.random_f32(C, 0.0f, 1.0f);
  DeviceBuffer DW = b.upload_f32(dweight), DL(size_t(T) * E * 4);
  kernels::router_backward(probs, index, static_cast<float*>(DW.get()),
                           static_cast<float*>(DL.get()), T, E, k, b.stream);
  b.expect("router bwd" + tag, b.download_as(DL.get(), size_t(T) * E, ElementType::f32),
           ref::router_backward(gpu, dweight, T, E, k));

  const std::vector<int> pos = ref::expert_order(got, E);
  DeviceBuffer Pos(C * 4);
  CAL_CUDA(cudaMemcpy(Pos.get(), pos.data(), C * 4, cudaMemcpyHostToDevice));
  CAL_CUDA(cudaDeviceSynchronize());  // the non-blocking stream does not wait for the copy
  const auto* dpos = static_cast<const int*>(Pos.get());
  const Vec x = b.random(size_t(T) * h, 2.0f), e = b.random(C * h, 2.0f);
  const Vec dy = b.random(size_t(T) * h, 1.0f), dperm = b.random(C * h, 1.0f);
  const Vec w = b.download_as(weight, C, ElementType::f32);
  DeviceBuffer X = b.upload(x), Ex = b.upload(e), DY = b.upload(dy), DP = b.upload(dperm);
  DeviceBuffer Perm(C * h * 2), Y(size_t(T) * h * 2), DX(size_t(T) * h * 2), DE(C * h * 2),
      DWc(C * 4);
  kernels::permute_forward(X.get(), dpos, Perm.get(), long(C), k, h, b.act, b.stream);
  b.expect("permute fwd" + b.tag() + ")", b.download(Perm.get(), C * h),
           ref::permute_forward(x, pos, k, h));
  kernels::permute_backward(DP.get(), dpos, DX.get(), long(C), k, h, b.act, b.stream);
  b.expect("permute bwd" + b.tag() + ")", b.download(DX.get(), size_t(T) * h),
           ref::permute_backward(dperm, pos, k, h));
  kernels::unpermute_forward(Ex.get(), weight, dpos, Y.get(), long(C), k, h, b.act, b.stream);
  b.expect("unpermute fwd" + b.tag() + ")", b.download(Y.get(), size_t(T) * h),
           ref::unpermute_forward(e, w, pos, k, h));
  kernels::unpermute_backward(DY.get(), Ex.get(), weight, dpos, DE.get(),
                              static_cast<float*>(DWc.get()), long(C), k, h, b.act, b.stream);
  const ref::UnpermuteGrads g = ref::unpermute_backward(dy, e, w, pos, k, h);
  b.expect("unpermute bwd de" + b.tag() + ")", b.download(DE.get(), C * h), g.de);
  b.expect("unpermute bwd dw" + b.tag() + ")", b.download_as(DWc.get(), C, ElementType::f32), g.dw);
}

/// The sort by local expert: a permutation of rows (one copy each) and of 16-bit scalars.
void check_moe_sort(Bench& b, long width) {
  const long R = 1000, h = std::min(width, 256L);
  std::vector<int> pos(static_cast<size_t>(R));  // i -> 389 i mod R, a permutation (R = 1000)
  for (long i = 0; i < R; ++i) pos[size_t(i)] = int(i * 389 % R);
  DeviceBuffer Pos(size_t(R) * 4);
  CAL_CUDA(cudaMemcpy(Pos.get(), pos.data(), size_t(R) * 4, cudaMemcpyHostToDevice));
  CAL_CUDA(cudaDeviceSynchronize());  // the non-blocking stream does not wait for the copy
  const auto* dpos = static_cast<const int*>(Pos.get());
  const Vec x = b.random(size_t(R) * h, 2.0f), p = b.random(size_t(R), 1.0f);
  DeviceBuffer X = b.upload(x), P = b.upload(p), Out(size_t(R) * h * 2), Pout(size_t(R) * 2);
  kernels::permute_forward(X.get(), dpos, Out.get(), R, 1, h, b.act, b.stream);
  b.expect("moe sort rows" + b.tag() + ")", b.download(Out.get(), size_t(R) * h),
           ref::permute_forward(x, pos, 1, int(h)));
  kernels::scatter_scalars(P.get(), dpos, Pout.get(), R, b.stream);
  b.expect("moe sort probabilities" + b.tag() + ")", b.download(Pout.get(), size_t(R)),
           ref::permute_forward(p, pos, 1, 1));
}

}  // namespace

std::vector<CheckResult> check_kernels(const RunnerWorkload& w, cublasLtHandle_t lt,
                                       cudaStream_t stream, unsigned long long seed,
                                       const std::function<void(const CheckResult&)>& report) {
  std::vector<CheckResult> results;
  Bench b(activation_dtype(w.dtype), stream, seed, results, report);
  std::set<std::tuple<int, char, char, bool>> gemms;
  bool flash = false, softmax = false, norm = false, activation = false, moe = false;
  bool sort = false;
  long sort_width = 0;
  KernelRun flash_run, moe_run;
  for (size_t i = 0; i < w.kernels.size(); ++i) {
    const KernelRun r = kernel_run(w, i);
    switch (r.kind) {
      case RunKind::gemm:
        gemms.insert({int(r.dtype), r.transa, r.transb, r.batch > 1});
        break;
      case RunKind::flash_forward:
      case RunKind::flash_backward:
        flash = true, flash_run = r;
        break;
      case RunKind::softmax_forward:
      case RunKind::softmax_backward:
        softmax = true;
        break;
      case RunKind::norm_forward:
      case RunKind::norm_backward:
        norm = true;
        break;
      case RunKind::activation_forward:
      case RunKind::activation_backward:
        activation = true;
        break;
      case RunKind::moe_forward:
      case RunKind::moe_backward:
        moe = true, moe_run = r, activation = true;  // the experts' activation is the dense one's
        break;
      case RunKind::moe_sort_forward:
      case RunKind::moe_sort_backward:
        sort = true, sort_width = r.width;
        break;
    }
  }
  for (const auto& [dt, ta, tb, batched] : gemms)
    check_gemm(b, lt, Dtype(dt), ta, tb, batched ? 3 : 1);
  if (softmax) check_softmax(b);
  if (flash) check_flash(b, flash_run);
  if (norm) check_norm(b, w.layer.swiglu);
  if (activation) check_activation(b, w.layer.swiglu);
  if (moe) check_moe(b, moe_run);
  if (sort) check_moe_sort(b, sort_width);
  return results;
}

}  // namespace planner::calibrate
