#include "calibrate/validate_time.h"

#include <cmath>
#include <functional>
#include <memory>
#include <vector>

#include "calibrate/device.h"
#include "calibrate/harness.h"
#include "calibrate/matmul.h"
#include "calibrate/validate_common.h"
#include "calibrate/validate_kernels.h"
#include "planner/format.h"
#include "planner/units.h"

namespace planner::calibrate {
namespace {

/// The device memory of one run: random inputs, zeroed outputs. In counting mode it allocates
/// nothing and only adds up the bytes (run_device_bytes), so both use one description.
class Buffers {
 public:
  Buffers(const TimingSetup* s) : s_(s) {}  // null: counting mode
  bool counting() const { return s_ == nullptr; }
  double bytes() const { return bytes_; }

  void* random(size_t n, ElementType t) {
    void* p = zeros(n * element_bytes(t));
    if (p) fill_uniform(p, n, t, s_->seed + 7919 * bufs_.size(), s_->stream);
    return p;
  }
  template <typename T = void>
  T* zeros(size_t bytes) {
    bytes_ += double(bytes);
    if (counting()) return nullptr;
    bufs_.emplace_back(bytes);
    CAL_CUDA(cudaMemsetAsync(bufs_.back().get(), 0, bytes, s_->stream));
    return static_cast<T*>(bufs_.back().get());
  }
  float* params(size_t n) { return static_cast<float*>(random(n, ElementType::f32)); }
  uint8_t* mask(size_t n) { return zeros<uint8_t>(n); }

 private:
  const TimingSetup* s_;
  double bytes_ = 0;
  std::vector<DeviceBuffer> bufs_;
};

using Op = std::function<void()>;

ElementType element(Dtype act) { return act == Dtype::fp16 ? ElementType::f16 : ElementType::bf16; }

Op gemm_op(const KernelRun& r, Buffers& b, const TimingSetup* s) {
  const MatmulTypes t = matmul_types(r.dtype);
  void* A = b.random(size_t(r.m) * r.k * r.batch, t.fill);
  void* B = b.random(size_t(r.k) * r.n * r.batch, t.fill);
  void* C = b.zeros(size_t(r.m) * r.n * r.batch * element_bytes(t.out));
  void* ws = b.zeros(kMatmulWorkspaceBytes);
  if (b.counting()) return {};
  auto mm = std::make_shared<Matmul>(s->lt, r.dtype,
                                     MatmulShape{r.transa, r.transb, r.m, r.n, r.k, r.batch});
  if (!mm->ok()) throw DeviceError("cuBLASLt has no algorithm for " + describe(r));
  return [=] { mm->run(A, B, C, ws, s->stream); };
}

Op flash_op(const KernelRun& r, Buffers& b, const TimingSetup* s) {
  const kernels::FlashShape f{r.bh, r.sq, r.sk, r.d, r.kv_group, r.causal};
  const size_t nq = size_t(r.bh) * r.sq * r.d, nk = size_t(r.bh / r.kv_group) * r.sk * r.d;
  const ElementType e = element(r.dtype);
  void *q = b.random(nq, e), *k = b.random(nk, e), *v = b.random(nk, e), *o = b.zeros(nq * 2);
  float* lse = b.zeros<float>(size_t(r.bh) * r.sq * 4);
  const Dtype act = r.dtype;
  if (r.kind == RunKind::flash_forward)
    return b.counting() ? Op{}
                        : Op([=] { kernels::flash_forward(q, k, v, o, lse, f, act, s->stream); });
  void *dout = b.random(nq, e), *dq = b.zeros(nq * 2), *dk = b.zeros(nk * 2), *dv = b.zeros(nk * 2);
  void* ws = b.zeros(kernels::flash_backward_workspace_bytes(f, act));
  if (b.counting()) return {};
  kernels::flash_forward(q, k, v, o, lse, f, act, s->stream);  // O and lse for the backward
  return [=] { kernels::flash_backward(q, k, v, o, dout, lse, dq, dk, dv, ws, f, act, s->stream); };
}

Op softmax_op(const KernelRun& r, Buffers& b, const TimingSetup* s) {
  const size_t n = size_t(r.bh) * r.sq * r.sk;
  const long rows = r.bh * r.sq, cols = r.sk, sq = r.sq;
  const float scale = 1.0f / std::sqrt(float(r.d));
  const ElementType e = element(r.dtype);
  const Dtype act = r.dtype;
  const bool causal = r.causal;
  void *x = b.random(n, e), *y = b.zeros(n * 2), *z = b.zeros(n * 2);
  uint8_t* mask = b.mask(n);
  if (r.kind == RunKind::softmax_forward)
    return b.counting() ? Op{} : Op([=] {
      kernels::softmax_forward(x, y, rows, cols, sq, scale, causal, act, s->stream);
      kernels::dropout_forward(y, z, mask, n, kDropoutP, 1234, act, s->stream);
    });
  void* dy = b.zeros(n * 2);  // x stands for the incoming gradient, z for the result
  if (b.counting()) return {};
  kernels::softmax_forward(x, y, rows, cols, sq, scale, causal, act, s->stream);
  kernels::dropout_forward(y, z, mask, n, kDropoutP, 1234, act, s->stream);
  return [=] {
    kernels::dropout_backward(x, mask, dy, n, kDropoutP, act, s->stream);
    kernels::softmax_backward(y, dy, z, rows, cols, scale, act, s->stream);
  };
}

/// Forward: ln1(x); out1 = x + dropout(attn + bias); ln2(out1); out2 = out1 + dropout(mlp + bias).
/// Backward: the gradient of out2 through both halves, with the norms' parameter gradients.
Op norm_op(const KernelRun& r, Buffers& b, const TimingSetup* s) {
  const size_t n = size_t(r.rows) * r.width;
  const long rows = r.rows, h = r.width;
  const bool rms = r.rms;
  const Dtype act = r.dtype;
  const ElementType e = element(act);
  void *x = b.random(n, e), *attn = b.random(n, e), *mlp = b.random(n, e), *y = b.zeros(n * 2);
  void *out1 = b.zeros(n * 2), *out2 = b.zeros(n * 2);
  uint8_t *m1 = b.mask(n), *m2 = b.mask(n);
  float *gamma = b.params(h), *beta = b.params(h), *bias = b.params(h);
  float *mean1 = b.zeros<float>(rows * 4), *rstd1 = b.zeros<float>(rows * 4);
  float *mean2 = b.zeros<float>(rows * 4), *rstd2 = b.zeros<float>(rows * 4);
  const cudaStream_t st = s ? s->stream : nullptr;
  const Op forward = [=] {
    kernels::norm_forward(x, gamma, beta, y, mean1, rstd1, rows, h, rms, act, st);
    kernels::bias_dropout_add(attn, bias, x, out1, m1, rows, h, kDropoutP, 11, act, st);
    kernels::norm_forward(out1, gamma, beta, y, mean2, rstd2, rows, h, rms, act, st);
    kernels::bias_dropout_add(mlp, bias, out1, out2, m2, rows, h, kDropoutP, 12, act, st);
  };
  if (r.kind == RunKind::norm_forward) return b.counting() ? Op{} : forward;
  void *d_out2 = b.random(n, e), *dy2 = b.random(n, e), *dy1 = b.random(n, e);
  void *d_mlp = b.zeros(n * 2), *d_out1 = b.zeros(n * 2), *d_attn = b.zeros(n * 2),
       *dx = b.zeros(n * 2);
  float* partial = b.zeros<float>(kernels::norm_partial_floats(h) * 4);
  float *dgamma = b.zeros<float>(h * 4), *dbeta = b.zeros<float>(h * 4);
  if (b.counting()) return {};
  forward();  // masks and the rows' statistics
  return [=] {
    kernels::dropout_backward(d_out2, m2, d_mlp, n, kDropoutP, act, st);
    kernels::norm_backward_input(out1, gamma, dy2, d_out2, mean2, rstd2, d_out1, rows, h, rms, act,
                                 st);
    kernels::norm_backward_params(out1, dy2, mean2, rstd2, partial, dgamma, dbeta, rows, h, rms,
                                  act, st);
    kernels::dropout_backward(d_out1, m1, d_attn, n, kDropoutP, act, st);
    kernels::norm_backward_input(x, gamma, dy1, d_out1, mean1, rstd1, dx, rows, h, rms, act, st);
    kernels::norm_backward_params(x, dy1, mean1, rstd1, partial, dgamma, dbeta, rows, h, rms, act,
                                  st);
  };
}

Op activation_op(const KernelRun& r, Buffers& b, const TimingSetup* s) {
  const long rows = r.rows, f = r.width;
  const size_t n_out = size_t(rows) * f, n_in = r.swiglu ? 2 * n_out : n_out;
  const Dtype act = r.dtype;
  const ElementType e = element(act);
  void *x = b.random(n_in, e), *y = b.zeros(n_out * 2);
  float* bias = r.swiglu ? nullptr : b.params(f);
  const bool fwd = r.kind == RunKind::activation_forward, swiglu = r.swiglu;
  void* dx = fwd ? nullptr : b.zeros(n_in * 2);  // y stands for the incoming gradient
  if (b.counting()) return {};
  return [=] {
    if (swiglu)
      fwd ? kernels::swiglu_forward(x, y, rows, f, act, s->stream)
          : kernels::swiglu_backward(x, y, dx, rows, f, act, s->stream);
    else
      fwd ? kernels::bias_gelu_forward(x, bias, y, rows, f, act, s->stream)
          : kernels::bias_gelu_backward(x, bias, y, dx, rows, f, act, s->stream);
  };
}

/// The copies' positions in expert order for the timing: a random permutation (the real order
/// depends on the routing; the rows moved are the same).
std::vector<int> shuffled_positions(long copies, unsigned long long seed) {
  std::vector<int> pos(static_cast<size_t>(copies));
  for (long c = 0; c < copies; ++c) pos[size_t(c)] = int(c);
  uint64_t x = seed;
  for (long c = copies - 1; c > 0; --c) {
    x = splitmix64(x);
    std::swap(pos[size_t(c)], pos[size_t(x % uint64_t(c + 1))]);
  }
  return pos;
}

/// Forward: the router's softmax and top-k, the permutation into expert order, the experts'
/// activation and the weighted combine. Backward: their gradients in reverse order.
Op moe_op(const KernelRun& r, Buffers& b, const TimingSetup* s) {
  const long T = r.rows, E = r.experts, k = r.topk, C = r.copies, h = r.width, f = r.expert_width;
  const Dtype act = r.dtype;
  const ElementType e = element(act);
  const bool fwd = r.kind == RunKind::moe_forward, swiglu = r.swiglu;
  float *logits = b.params(size_t(T) * E), *probs = b.zeros<float>(size_t(T) * E * 4);
  int* index = b.zeros<int>(size_t(T) * k * 4);
  float *weight = b.zeros<float>(size_t(T) * k * 4), *w = b.params(size_t(C));
  int* pos = b.zeros<int>(size_t(C) * 4);
  const size_t units = size_t(C / k) * h, rows = size_t(C) * h, a_out = size_t(C) * f;
  const size_t a_in = swiglu ? 2 * a_out : a_out;
  void *x = b.random(units, e), *permuted = b.zeros(rows * 2), *a = b.random(a_in, e);
  void *a_y = b.zeros(a_out * 2), *experts_out = b.random(rows, e), *y = b.zeros(units * 2);
  float* bias = swiglu ? nullptr : b.params(size_t(f));
  float *dweight = fwd ? nullptr : b.params(size_t(T) * k),
        *dw = fwd ? nullptr : b.zeros<float>(size_t(C) * 4);
  void* da = fwd ? nullptr : b.zeros(a_in * 2);
  if (b.counting()) return {};
  const std::vector<int> host = shuffled_positions(C, s->seed);
  CAL_CUDA(cudaMemcpyAsync(pos, host.data(), host.size() * 4, cudaMemcpyHostToDevice, s->stream));
  CAL_CUDA(cudaStreamSynchronize(s->stream));
  kernels::router_forward(logits, probs, index, weight, T, int(E), int(k), s->stream);
  const cudaStream_t st = s->stream;
  if (fwd)
    return [=] {
      kernels::router_forward(logits, probs, index, weight, T, int(E), int(k), st);
      kernels::permute_forward(x, pos, permuted, C, int(k), h, act, st);
      swiglu ? kernels::swiglu_forward(a, a_y, C, f, act, st)
             : kernels::bias_gelu_forward(a, bias, a_y, C, f, act, st);
      kernels::unpermute_forward(experts_out, w, pos, y, C, int(k), h, act, st);
    };
  // y stands for the combine's incoming gradient, permuted for the experts' output gradient and
  // x for the tokens' input gradient.
  return [=] {
    kernels::unpermute_backward(y, experts_out, w, pos, permuted, dw, C, int(k), h, act, st);
    swiglu ? kernels::swiglu_backward(a, a_y, da, C, f, act, st)
           : kernels::bias_gelu_backward(a, bias, a_y, da, C, f, act, st);
    kernels::permute_backward(permuted, pos, x, C, int(k), h, act, st);
    kernels::router_backward(probs, index, dweight, logits, T, int(E), int(k), st);
  };
}

/// Forward: the received rows sorted by local expert with their probabilities, the experts'
/// output rows sorted back. Backward: the two gradients the other way and the probabilities'.
/// One shuffle stands for both permutations: the sort's order depends on the routing, the rows
/// moved do not.
Op moe_sort_op(const KernelRun& r, Buffers& b, const TimingSetup* s) {
  const long R = r.rows, h = r.width;
  const Dtype act = r.dtype;
  const ElementType e = element(act);
  const size_t rows = size_t(R) * h;
  int* pos = b.zeros<int>(size_t(R) * 4);
  void *in = b.random(rows, e), *mid = b.zeros(rows * 2), *out = b.zeros(rows * 2);
  void *probs = b.random(size_t(R), e), *sorted_probs = b.zeros(size_t(R) * 2);
  if (b.counting()) return {};
  const std::vector<int> host = shuffled_positions(R, s->seed);
  CAL_CUDA(cudaMemcpyAsync(pos, host.data(), host.size() * 4, cudaMemcpyHostToDevice, s->stream));
  CAL_CUDA(cudaStreamSynchronize(s->stream));
  const cudaStream_t st = s->stream;
  return [=] {
    kernels::permute_forward(in, pos, mid, R, 1, h, act, st);
    kernels::scatter_scalars(probs, pos, sorted_probs, R, st);
    kernels::permute_forward(mid, pos, out, R, 1, h, act, st);
  };
}

Op prepare(const KernelRun& r, Buffers& b, const TimingSetup* s) {
  switch (r.kind) {
    case RunKind::gemm:
      return gemm_op(r, b, s);
    case RunKind::flash_forward:
    case RunKind::flash_backward:
      return flash_op(r, b, s);
    case RunKind::softmax_forward:
    case RunKind::softmax_backward:
      return softmax_op(r, b, s);
    case RunKind::norm_forward:
    case RunKind::norm_backward:
      return norm_op(r, b, s);
    case RunKind::activation_forward:
    case RunKind::activation_backward:
      return activation_op(r, b, s);
    case RunKind::moe_forward:
    case RunKind::moe_backward:
      return moe_op(r, b, s);
    case RunKind::moe_sort_forward:
    case RunKind::moe_sort_backward:
      return moe_sort_op(r, b, s);
  }
  return {};
}

}  // namespace

double run_device_bytes(const KernelRun& r) {
  Buffers count(nullptr);
  prepare(r, count, nullptr);
  return count.bytes();
}

RepeatStats time_run(const KernelRun& r, const TimingSetup& s) {
  size_t free_b = 0, total_b = 0;
  CAL_CUDA(cudaMemGetInfo(&free_b, &total_b));
  const double need = run_device_bytes(r);
  if (need > 0.9 * double(free_b))
    throw DeviceError(describe(r) + fmt(": needs {:.1f} GiB of device memory, {:.1f} GiB are free",
                                        need / kGiB, free_b / kGiB));
  Buffers buffers(&s);
  const Op op = prepare(r, buffers, &s);
  CAL_CUDA(cudaStreamSynchronize(s.stream));
  TimedOp t;
  t.streams = {{s.device, s.stream}};
  t.hide_launch_gaps = true;
  t.enqueue = [&](int iters) {
    for (int i = 0; i < iters; ++i) op();
  };
  const RepeatStats st = measure(t, s.policy);
  CAL_CUDA(cudaStreamSynchronize(s.stream));
  return st;
}

}  // namespace planner::calibrate
