// planner-validate's CPU part: the references its CUDA kernels are checked against (checked here
// themselves: closed forms, finite differences, the tiled attention against the naive one), and
// the workload it reads, what it runs for each kernel, and the results it writes. The CUDA half
// needs a GPU and is not exercised here.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <random>

#include "calibrate/validate_common.h"
#include "calibrate/validate_reference.h"
#include "calibrate/validate_workload.h"
#include "planner/cost/compute.h"
#include "planner/error.h"
#include "planner/io/cluster_io.h"
#include "planner/io/model_io.h"
#include "planner/validate.h"

using namespace planner;
using namespace planner::calibrate;
using ref::Vec;

namespace {

Vec random_vec(size_t n, float amplitude, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<float> u(-amplitude, amplitude);
  Vec v(n);
  for (float& x : v) x = u(g);
  return v;
}

double dot(const Vec& a, const Vec& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += double(a[i]) * b[i];
  return s;
}

/// Central differences of a scalar function of `x`.
Vec numeric_gradient(Vec x, const std::function<double(const Vec&)>& f, float eps = 1e-2f) {
  Vec g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const float keep = x[i];
    x[i] = keep + eps;
    const double up = f(x);
    x[i] = keep - eps;
    const double down = f(x);
    x[i] = keep;
    g[i] = float((up - down) / (2 * eps));
  }
  return g;
}

const ClusterProfile& h200() {
  static const ClusterProfile c = io::load_cluster(PLANNER_SOURCE_DIR "/hw_profiles/dgx-h200.yaml");
  return c;
}
RunnerWorkload workload(const char* model, const char* plan) {
  const ModelSpec m = io::load_model(std::string(PLANNER_SOURCE_DIR "/configs/models/") + model);
  const Workload w = build_workload(m, h200(), parse_plan(plan, "--plan"));
  return parse_runner_workload(workload_json(w).dump(), "w.json");
}

}  // namespace

TEST_CASE("16-bit and 8-bit codes: 1.0, round to nearest even, limits") {
  CHECK(ref::float_to_bf16(1.0f) == 0x3F80);
  CHECK(ref::bf16_to_float(0x3F80) == 1.0f);
  CHECK(ref::float_to_bf16(1.0f + 1.0f / 256) == 0x3F80);  // halfway to 1 + 2^-7: even wins
  CHECK(ref::float_to_bf16(1.0f + 3.0f / 256) == 0x3F82);  // halfway to the even 1 + 2^-6
  CHECK(ref::float_to_fp16(1.0f) == 0x3C00);
  CHECK(ref::float_to_fp16(65504.0f) == 0x7BFF);
  CHECK(ref::float_to_fp16(1e6f) == 0x7C00);
  CHECK(ref::float_to_fp16(std::ldexp(1.0f, -24)) == 0x0001);
  CHECK(ref::fp16_to_float(0x0001) == std::ldexp(1.0f, -24));
  CHECK(ref::fp16_to_float(0xC000) == -2.0f);
  CHECK(ref::e4m3_to_float(0x38) == 1.0f);    // 0 0111 000
  CHECK(ref::e4m3_to_float(0x7E) == 448.0f);  // the largest: 1.75 x 2^8
  CHECK(std::isnan(ref::e4m3_to_float(0x7F)));
  for (float x : random_vec(1000, 100.0f, 1)) {
    CHECK(std::fabs(ref::fp16_to_float(ref::float_to_fp16(x)) - x) <=
          std::fabs(x) * 0x1p-11f + 1e-7f);
    CHECK(std::fabs(ref::bf16_to_float(ref::float_to_bf16(x)) - x) <= std::fabs(x) * 0x1p-8f);
  }
}

TEST_CASE("GEMM reference: cuBLAS column-major layouts agree, and a product checked by hand") {
  // op(A) = [[1, 2], [3, 4]], op(B) = [[5, 6], [7, 8]]: C = [[19, 22], [43, 50]], column-major.
  CHECK(ref::gemm('N', 'N', 2, 2, 2, 1, {1, 3, 2, 4}, {5, 7, 6, 8}) == Vec{19, 43, 22, 50});
  CHECK(ref::gemm('T', 'N', 2, 2, 2, 1, {1, 2, 3, 4}, {5, 7, 6, 8}) == Vec{19, 43, 22, 50});
  CHECK(ref::gemm('N', 'T', 2, 2, 2, 1, {1, 3, 2, 4}, {5, 6, 7, 8}) == Vec{19, 43, 22, 50});
  // Batched: the second copy reads the second slices.
  const Vec c = ref::gemm('N', 'N', 1, 1, 2, 2, {1, 2, 3, 4}, {1, 1, 1, 10});
  CHECK(c == Vec{3, 43});
}

TEST_CASE("softmax reference: rows sum to 1, the causal mask hides later keys, gradient") {
  const int batch = 2, sq = 3, sk = 5, rows = batch * sq;
  const Vec x = random_vec(size_t(rows) * sk, 3.0f, 2);
  const Vec y = ref::softmax_forward(x, rows, sk, sq, 0.7f, true);
  for (int r = 0; r < rows; ++r) {
    double sum = 0;
    for (int j = 0; j < sk; ++j) sum += y[size_t(r) * sk + j];
    CHECK(sum == doctest::Approx(1.0));
    for (int j = r % sq + (sk - sq) + 1; j < sk; ++j) CHECK(y[size_t(r) * sk + j] == 0.0f);
  }
  const Vec w = random_vec(x.size(), 1.0f, 3);
  const Vec g = ref::softmax_backward(y, w, rows, sk, 0.7f);
  const Vec fd = numeric_gradient(
      x, [&](const Vec& v) { return dot(ref::softmax_forward(v, rows, sk, sq, 0.7f, true), w); });
  CHECK(ref::relative_error(g, fd) < 1e-2);
}

TEST_CASE("dropout: reproducible mask, the kept fraction is 1 - p, kept values scaled") {
  const Vec x(100000, 1.0f);
  const ref::Dropped d = ref::dropout_forward(x, kDropoutP, 7);
  double kept = 0;
  for (uint8_t m : d.mask) kept += m;
  CHECK(kept / x.size() == doctest::Approx(1 - kDropoutP).epsilon(0.01));
  CHECK(ref::dropout_forward(x, kDropoutP, 7).mask == d.mask);
  CHECK(ref::dropout_forward(x, kDropoutP, 8).mask != d.mask);
  for (size_t i = 0; i < 100; ++i)
    CHECK(d.out[i] == (d.mask[i] ? doctest::Approx(1 / 0.9) : doctest::Approx(0.0)));
  const Vec g = ref::dropout_backward(x, d.mask, kDropoutP);
  CHECK(g == d.out);
}

TEST_CASE("flash attention's algorithm (key tiles, online softmax) equals naive attention") {
  for (bool causal : {false, true}) {
    const int bh = 2, sq = 7, sk = 11, d = 8;  // tiles of 4 keys: the last one partial
    const Vec q = random_vec(size_t(bh) * sq * d, 2.0f, 4),
              k = random_vec(size_t(bh) * sk * d, 2.0f, 5);
    const Vec v = random_vec(size_t(bh) * sk * d, 1.0f, 6);
    const ref::Attention naive = ref::attention_forward(q, k, v, bh, sq, sk, d, causal);
    const ref::Attention tiled = ref::attention_forward_tiled(q, k, v, bh, sq, sk, d, causal, 4);
    CHECK(ref::relative_error(tiled.o, naive.o) < 1e-5);
    CHECK(ref::relative_error(tiled.lse, naive.lse) < 1e-5);
  }
  // One key: the output is that key's value whatever the query.
  const ref::Attention one = ref::attention_forward({1, 2}, {3, 4}, {5, 6}, 1, 1, 1, 2, true);
  CHECK(one.o == Vec{5, 6});
}

TEST_CASE("attention backward reference equals finite differences of sum(O * dO)") {
  const int bh = 1, sq = 3, sk = 5, d = 4;
  Vec q = random_vec(size_t(bh) * sq * d, 1.0f, 7), k = random_vec(size_t(bh) * sk * d, 1.0f, 8);
  Vec v = random_vec(size_t(bh) * sk * d, 1.0f, 9);
  const Vec dout = random_vec(size_t(bh) * sq * d, 1.0f, 10);
  const ref::AttentionGrads g = ref::attention_backward(q, k, v, dout, bh, sq, sk, d, true);
  const auto loss = [&](const Vec& q2, const Vec& k2, const Vec& v2) {
    return dot(ref::attention_forward(q2, k2, v2, bh, sq, sk, d, true).o, dout);
  };
  CHECK(ref::relative_error(
            g.dq, numeric_gradient(q, [&](const Vec& x) { return loss(x, k, v); })) < 1e-2);
  CHECK(ref::relative_error(
            g.dk, numeric_gradient(k, [&](const Vec& x) { return loss(q, x, v); })) < 1e-2);
  CHECK(ref::relative_error(
            g.dv, numeric_gradient(v, [&](const Vec& x) { return loss(q, k, x); })) < 1e-2);
}

TEST_CASE(
    "flash attention's backward order (key tiles outer, lse and D = rowsum(dO O)) equals it") {
  for (bool causal : {false, true}) {
    const int bh = 2, sq = 6, sk = 9, d = 4;  // tiles of 4 queries and 4 keys, both partial
    const Vec q = random_vec(size_t(bh) * sq * d, 1.5f, 19),
              k = random_vec(size_t(bh) * sk * d, 1.5f, 20);
    const Vec v = random_vec(size_t(bh) * sk * d, 1.0f, 21),
              dout = random_vec(size_t(bh) * sq * d, 1.0f, 22);
    const ref::AttentionGrads naive = ref::attention_backward(q, k, v, dout, bh, sq, sk, d, causal);
    const ref::AttentionGrads tiled =
        ref::attention_backward_tiled(q, k, v, dout, bh, sq, sk, d, causal, 4, 4);
    CHECK(ref::relative_error(tiled.dq, naive.dq) < 1e-4);
    CHECK(ref::relative_error(tiled.dk, naive.dk) < 1e-4);
    CHECK(ref::relative_error(tiled.dv, naive.dv) < 1e-4);
  }
}

TEST_CASE("layer norm and RMSNorm: normalised rows, gradients equal finite differences") {
  const int rows = 3, h = 16;
  const Vec x = random_vec(size_t(rows) * h, 2.0f, 11);
  const Vec ones(h, 1.0f), zeros(h, 0.0f);
  const ref::Norm ln = ref::norm_forward(x, ones, zeros, rows, h, false);
  const ref::Norm rms = ref::norm_forward(x, ones, zeros, rows, h, true);
  for (int r = 0; r < rows; ++r) {
    double mean = 0, var = 0, ms = 0;
    for (int c = 0; c < h; ++c) mean += ln.y[r * h + c] / h;
    for (int c = 0; c < h; ++c) var += (ln.y[r * h + c] - mean) * (ln.y[r * h + c] - mean) / h;
    for (int c = 0; c < h; ++c) ms += rms.y[r * h + c] * rms.y[r * h + c] / h;
    CHECK(mean == doctest::Approx(0.0).epsilon(1e-6).scale(1));
    CHECK(var == doctest::Approx(1.0).epsilon(1e-4));  // eps = 1e-5 in the denominator
    CHECK(ms == doctest::Approx(1.0).epsilon(1e-4));
  }
  const Vec gamma = random_vec(h, 1.0f, 12), beta = random_vec(h, 1.0f, 13),
            w = random_vec(x.size(), 1.0f, 14);
  for (bool is_rms : {false, true}) {
    const ref::NormGrads g = ref::norm_backward(x, gamma, w, rows, h, is_rms);
    const auto loss = [&](const Vec& x2, const Vec& g2, const Vec& b2) {
      return dot(ref::norm_forward(x2, g2, b2, rows, h, is_rms).y, w);
    };
    CHECK(ref::relative_error(g.dx, numeric_gradient(x, [&](const Vec& v) {
                                return loss(v, gamma, beta);
                              })) < 1e-2);
    CHECK(ref::relative_error(g.dgamma, numeric_gradient(gamma, [&](const Vec& v) {
                                return loss(x, v, beta);
                              })) < 1e-2);
    if (!is_rms)
      CHECK(ref::relative_error(g.dbeta, numeric_gradient(beta, [&](const Vec& v) {
                                  return loss(x, gamma, v);
                                })) < 1e-2);
  }
}

TEST_CASE("GeLU and SwiGLU: values by hand, gradients equal finite differences") {
  CHECK(gelu(0.0f) == 0.0f);
  CHECK(gelu(10.0f) == doctest::Approx(10.0f));
  CHECK(gelu(1.0f) ==
        doctest::Approx(0.841192).epsilon(1e-5));  // 0.5 (1 + tanh(0.7978846 x 1.044715))
  CHECK(silu(0.0f) == 0.0f);
  const int rows = 2, f = 8;
  const Vec x = random_vec(size_t(rows) * f, 3.0f, 15), bias = random_vec(f, 0.5f, 16);
  const Vec w = random_vec(size_t(rows) * f, 1.0f, 17);
  CHECK(ref::relative_error(
            ref::bias_gelu_backward(x, bias, w, rows, f),
            numeric_gradient(
                x, [&](const Vec& v) { return dot(ref::bias_gelu_forward(v, bias, rows, f), w); },
                1e-3f)) < 1e-2);
  const Vec x2 = random_vec(size_t(rows) * 2 * f, 3.0f, 18);
  CHECK(ref::relative_error(
            ref::swiglu_backward(x2, w, rows, f),
            numeric_gradient(
                x2, [&](const Vec& v) { return dot(ref::swiglu_forward(v, rows, f), w); }, 1e-3f)) <
        1e-2);
}

TEST_CASE("bias-dropout-add keeps the residual where the branch is dropped") {
  const int rows = 4, h = 8;
  const Vec a(rows * h, 1.0f), bias(h, 0.5f), res(rows * h, 2.0f);
  const ref::Dropped d = ref::bias_dropout_add(a, bias, res, rows, h, kDropoutP, 3);
  for (size_t i = 0; i < d.out.size(); ++i)
    CHECK(d.out[i] == (d.mask[i] ? doctest::Approx(2 + 1.5 / 0.9) : doctest::Approx(2.0)));
}

TEST_CASE("MoE router: softmax rows sum to 1, top-k by probability, gradient by differences") {
  const int T = 5, E = 12, k = 3;
  const Vec logits = random_vec(size_t(T) * E, 2.0f, 21);
  const ref::Routing r = ref::router_forward(logits, T, E, k);
  for (int t = 0; t < T; ++t) {
    double sum = 0;
    for (int e = 0; e < E; ++e) sum += r.probs[size_t(t) * E + e];
    CHECK(sum == doctest::Approx(1.0).epsilon(1e-5));
    Vec sorted(r.probs.begin() + t * E, r.probs.begin() + (t + 1) * E);
    std::sort(sorted.rbegin(), sorted.rend());
    for (int j = 0; j < k; ++j) {
      CHECK(r.weight[size_t(t) * k + j] == sorted[size_t(j)]);
      CHECK(r.probs[size_t(t) * E + r.index[size_t(t) * k + j]] == r.weight[size_t(t) * k + j]);
    }
  }
  // Ties go to the lower index.
  const ref::Routing tie = ref::router_forward(Vec(4, 0.0f), 1, 4, 2);
  CHECK(tie.index == std::vector<int>{0, 1});
  // sum(dweight * weight(logits)), the choices held (small steps keep them).
  const Vec dweight = random_vec(size_t(T) * k, 1.0f, 22);
  const auto loss = [&](const Vec& x) {
    const ref::Routing q = ref::router_forward(x, T, E, k);
    double s = 0;
    for (size_t c = 0; c < q.weight.size(); ++c)
      s += double(dweight[c]) * q.probs[size_t(c / k) * E + r.index[c]];
    return s;
  };
  const Vec want = numeric_gradient(logits, loss, 1e-3f);
  CHECK(ref::relative_error(ref::router_backward(r, dweight, T, E, k), want) < 1e-2);
}

TEST_CASE("MoE dispatch: copies grouped by expert, permutation and combine with their gradients") {
  const int T = 6, E = 4, k = 2, h = 8;
  const std::vector<int> index = {2, 0, 1, 2, 3, 0, 0, 1, 2, 3, 1, 0};
  const std::vector<int> pos = ref::expert_order(index, E);
  // Expert 0 takes copies 1, 5, 6, 11 in token order, then expert 1 copies 2, 7, 10, ...
  CHECK(pos == std::vector<int>{7, 0, 4, 8, 10, 1, 2, 5, 9, 11, 6, 3});
  std::vector<int> seen(pos.size(), 0);
  for (int p : pos) ++seen[size_t(p)];
  CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
  const Vec x = random_vec(size_t(T) * h, 1.0f, 31), d = random_vec(pos.size() * h, 1.0f, 32);
  const Vec px = ref::permute_forward(x, pos, k, h);
  CHECK(px[size_t(pos[3]) * h + 5] == x[size_t(3 / k) * h + 5]);
  // The gradient is the adjoint: <permute(x), d> = <x, permute_backward(d)>.
  CHECK(dot(px, d) == doctest::Approx(dot(x, ref::permute_backward(d, pos, k, h))).epsilon(1e-5));
  const Vec e = random_vec(pos.size() * h, 1.0f, 33), w = random_vec(pos.size(), 1.0f, 34);
  const Vec dy = random_vec(size_t(T) * h, 1.0f, 35);
  const Vec y = ref::unpermute_forward(e, w, pos, k, h);
  CHECK(y[size_t(1) * h] ==
        doctest::Approx(w[2] * e[size_t(pos[2]) * h] + w[3] * e[size_t(pos[3]) * h]));
  const ref::UnpermuteGrads g = ref::unpermute_backward(dy, e, w, pos, k, h);
  const auto of_e = [&](const Vec& v) { return dot(ref::unpermute_forward(v, w, pos, k, h), dy); };
  const auto of_w = [&](const Vec& v) { return dot(ref::unpermute_forward(e, v, pos, k, h), dy); };
  CHECK(ref::relative_error(g.de, numeric_gradient(e, of_e)) < 1e-3);
  CHECK(ref::relative_error(g.dw, numeric_gradient(w, of_w)) < 1e-3);
}

TEST_CASE("the runner's view of a mixture-of-experts layer: router, grouped GEMMs, routing") {
  const ModelSpec m = io::load_model(PLANNER_SOURCE_DIR "/configs/models/qwen3-30b-a3b.json");
  const Workload built =
      build_workload(m, h200(), parse_plan("tp=1,pp=8,dp=1,mbs=1,gbs=64,zero=0", "--plan"));
  const RunnerWorkload w = parse_runner_workload(workload_json(built).dump(), "w.json");
  CHECK(w.layer.experts == 128);
  CHECK(w.layer.topk == 8);
  CHECK(w.layer.ffn == 0);
  bool grouped = false, fwd = false, bwd = false, sort_fwd = false, sort_bwd = false;
  for (size_t i = 0; i < w.kernels.size(); ++i) {
    const KernelRun r = kernel_run(w, i);
    if (r.kind == RunKind::moe_sort_forward || r.kind == RunKind::moe_sort_backward) {
      // The received rows (all 128 experts on this rank) sorted by expert and back: the
      // runner's two row permutations and one of the probabilities move the planner's bytes.
      (r.kind == RunKind::moe_sort_forward ? sort_fwd : sort_bwd) = true;
      CHECK(r.rows == long(m.seq_len) * 8);
      CHECK(r.width == 2048);
      CHECK(r.note.empty());
      CHECK(run_bytes(r) == doctest::Approx(w.kernels[i].bytes));
      CHECK(describe(r).find("moe sort by local expert") == 0);
    }
    if (w.kernels[i].name == "expert_fc1" && w.kernels[i].pass == Pass::forward) {
      grouped = true;
      // TE's rounds of 4 GEMMs, one per expert, each round strided-batched at the balanced count
      CHECK(r.batch == kTeGroupedGemmStreams);
      CHECK(r.n == long(m.seq_len) * 8 / 128);
    }
    if (r.kind == RunKind::moe_forward || r.kind == RunKind::moe_backward) {
      (r.kind == RunKind::moe_forward ? fwd : bwd) = true;
      CHECK(r.experts == 128);
      CHECK(r.copies == long(m.seq_len) * 8);
      CHECK(r.expert_width == 768);
      CHECK(r.swiglu);
      CHECK(describe(r).find("moe routing") == 0);
    }
  }
  CHECK(grouped);
  CHECK(fwd);
  CHECK(bwd);
  CHECK(sort_fwd);
  CHECK(sort_bwd);
  const std::vector<std::string> lines = dry_run_lines(w, 1);
  CHECK(std::any_of(lines.begin(), lines.end(),
                    [](const std::string& l) { return l.find("# experts: 128 top-8") == 0; }));
  // A layer without a dense MLP must say it has experts; copies must be whole rows of top-k.
  nlohmann::json j = workload_json(built);
  j["layer"].erase("moe");
  CHECK_THROWS_WITH_AS(parse_runner_workload(j.dump(), "w.json"), doctest::Contains("layer.ffn"),
                       InputError);
  j = workload_json(built);
  j["layer"]["moe"]["copies"] = 4097;
  CHECK_THROWS_WITH_AS(parse_runner_workload(j.dump(), "w.json"),
                       doctest::Contains("layer.moe.copies"), InputError);
}

TEST_CASE("the runner's view of a workload: cuBLAS layouts, flash shape, element-wise rows") {
  const RunnerWorkload w = workload(
      "megatron-18.4b.yaml", "tp=8,pp=1,dp=8,mbs=16,gbs=1024,zero=2,recompute=selective,sp=1");
  REQUIRE(w.kernels.size() == 19);
  CHECK(w.layer.tokens() == 32768);
  CHECK(w.layer.norm_rows() == 4096);  // sp: the norms see tokens / tp
  // qkv {tokens 32768, out 2304, in 6144}: forward TN C[2304 x 32768]; data grad NN; weight NT.
  const KernelRun fwd = kernel_run(w, 0);
  CHECK(describe(fwd) == "cuBLASLt bf16 TN 2304 x 32768 x 6144");
  CHECK(describe(kernel_run(w, 8)) == "cuBLASLt bf16 NN 6144 x 32768 x 2304");
  CHECK(describe(kernel_run(w, 9)) == "cuBLASLt bf16 NT 6144 x 2304 x 32768");
  const KernelRun flash = kernel_run(w, 4);
  CHECK(flash.kind == RunKind::flash_forward);
  CHECK(describe(flash) == "flash attention fwd bf16 bh=96 sq=2048 sk=2048 d=128 causal");
  CHECK(w.kernels[7].recompute);
  CHECK(describe(kernel_run(w, 7)) == describe(flash));  // the recomputed forward: same run
  const KernelRun norm = kernel_run(w, 5);
  CHECK(describe(norm) == "layernorm+bias-dropout-add x2 fwd bf16 4096 x 6144");
  CHECK(run_bytes(norm) == w.kernels[5].bytes);  // 22 bytes per element, as the cost model
  CHECK(norm.note.empty());
  CHECK(run_bytes(kernel_run(w, 6)) == w.kernels[6].bytes);  // GeLU: read 2 B, write 2 B
  // The H200 stack overlaps TP communication: each collective beside the GEMM it pairs with.
  REQUIRE(w.collectives.size() == 8);
  for (const auto& c : w.collectives) {
    CHECK(c.overlapped);
    REQUIRE(c.beside >= 0);
    CHECK(w.kernels[size_t(c.beside)].cls == KernelClass::gemm);
    CHECK(c.exposed_s < c.predicted_s);
  }
  CHECK(w.kernels[size_t(w.collectives[0].beside)].name == "qkv");
  REQUIRE(w.dp.size() == 2);  // ZeRO-2: the gradients' reduce-scatter, the parameters' gather
  CHECK(w.dp[0].coll == Collective::reduce_scatter);
  CHECK(w.dp[1].coll == Collective::allgather);
  CHECK(w.dp[1].name == "dp_param_allgather");
  CHECK(w.dp[1].pass == Pass::forward);
  CHECK(w.microbatches == 8);
}

TEST_CASE("unfused attention: batched GEMM layouts and the softmax of the cost model's bytes") {
  const RunnerWorkload w =
      workload("megatron-18.4b.yaml", "tp=8,pp=1,dp=8,mbs=2,gbs=1024,attn=unfused");
  CHECK(!w.flash);
  std::vector<std::string> runs;
  for (size_t i = 0; i < w.kernels.size(); ++i)
    if (w.kernels[i].cls == KernelClass::attention) runs.push_back(describe(kernel_run(w, i)));
  // scores Q K^T {2048, 2048, 128, batch 12}: TN; context P V {2048, 128, 2048}: NN.
  CHECK(runs[0] == "cuBLASLt bf16 TN 2048 x 2048 x 128 batch 12");
  CHECK(runs[1] == "cuBLASLt bf16 NN 128 x 2048 x 2048 batch 12");
  CHECK(runs[2] == "softmax+dropout fwd bf16 24576 rows x 2048 causal");
  for (size_t i = 0; i < w.kernels.size(); ++i)
    if (w.kernels[i].name == "softmax_dropout")
      CHECK(run_bytes(kernel_run(w, i)) == w.kernels[i].bytes);
}

TEST_CASE("grouped-query attention and SwiGLU: kv groups, RMSNorm, two-part activation") {
  const RunnerWorkload w = workload("llama3-70b.yaml", "tp=8,pp=4,dp=2,mbs=1,gbs=64,sp=1");
  bool seen = false;
  for (size_t i = 0; i < w.kernels.size(); ++i) {
    const KernelRun r = kernel_run(w, i);
    if (r.kind == RunKind::flash_forward) {
      CHECK(r.kv_group == 8);
      seen = true;
    }
    if (r.kind == RunKind::norm_forward) CHECK(r.rms);
    if (r.kind == RunKind::activation_forward) {
      CHECK(r.swiglu);
      CHECK(run_bytes(r) == w.kernels[i].bytes);
    }
  }
  CHECK(seen);
}

TEST_CASE("malformed workloads are refused with the file and key") {
  nlohmann::json j = workload_json(
      build_workload(io::load_model(PLANNER_SOURCE_DIR "/configs/models/megatron-1.7b.yaml"),
                     h200(), parse_plan("tp=1,dp=8,mbs=4,gbs=512", "--plan")));
  CHECK_NOTHROW(parse_runner_workload(j.dump(), "w.json"));
  nlohmann::json bad = j;
  bad["kernels"][0]["class"] = "gem";
  CHECK_THROWS_WITH(parse_runner_workload(bad.dump(), "w.json"),
                    "w.json: key 'kernels[0].class': unknown value 'gem', did you mean 'gemm'?");
  bad = j;
  bad["schema"] = "planner-validate-workload/2";  // before the stage-boundary list
  CHECK_THROWS_WITH(parse_runner_workload(bad.dump(), "w.json"),
                    "w.json: key 'schema': expected planner-validate-workload/3, found "
                    "'planner-validate-workload/2'");
  bad = j;
  bad.erase("boundary");
  CHECK_THROWS_WITH(parse_runner_workload(bad.dump(), "w.json"), "w.json: key 'boundary': missing");
  bad = j;
  bad["dp"][0]["per"] = "microbatches";
  CHECK_THROWS_WITH(
      parse_runner_workload(bad.dump(), "w.json"),
      "w.json: key 'dp[0].per': unknown value 'microbatches', did you mean 'microbatch'?");
  bad = j;
  bad["layer"].erase("ffn");
  CHECK_THROWS_WITH(parse_runner_workload(bad.dump(), "w.json"),
                    "w.json: key 'layer.ffn': missing");
  bad = j;
  bad["kernels"][4]["name"] = "flash_attn";
  CHECK_THROWS_WITH(parse_runner_workload(bad.dump(), "w.json"),
                    "w.json: key 'kernels[4]': unknown attention kernel 'flash_attn'");
  // A collective of 3e105 bytes (the runner_workload fuzzer's find: the dry run's integer print
  // of it was undefined).
  bad = j;
  bad["dp"][0]["bytes"] = 3.11e105;
  CHECK_THROWS_WITH(parse_runner_workload(bad.dump(), "w.json"),
                    "w.json: key 'dp[0].bytes': expected at most 1e+15 bytes");
  CHECK_THROWS_WITH(
      parse_runner_workload("[1, 2]", "w.json"),
      "w.json: not a JSON object (is it a workload from planner validate --workload-out?)");
}

TEST_CASE("dry run lists every kernel; results JSON is what planner validate reads") {
  const RunnerWorkload w = workload("megatron-1.7b.yaml", "tp=1,dp=8,mbs=16,gbs=512,zero=2");
  const std::vector<std::string> lines = dry_run_lines(w, 1);
  // header 3, kernels, count, the DP reduce-scatter and all-gather
  REQUIRE(lines.size() == 3 + w.kernels.size() + 1 + 2);
  CHECK(lines[3 + w.kernels.size()] == "# 18 kernels, 18 distinct runs (each timed once)");
  CHECK(lines.back().find("# dp_param_allgather: NCCL allgather of ") == 0);
  CHECK(lines.back().find("x 1 per iteration, overlapped with forward") != std::string::npos);
  CHECK(lines.back().find("needs more local GPUs") != std::string::npos);
  RunnerResults r;
  r.device = "GPU";
  r.kernels_s = std::vector<double>(w.kernels.size(), 1e-3);
  const nlohmann::json j = nlohmann::json::parse(results_json(r));
  CHECK(j["collectives_s"].is_null());
  CHECK(!j.contains("collectives_exposed_s"));
  CHECK(j["dp_s"].is_null());
  const ModelSpec m = io::load_model(PLANNER_SOURCE_DIR "/configs/models/megatron-1.7b.yaml");
  const Workload planner_side =
      build_workload(m, h200(), parse_plan("tp=1,dp=8,mbs=16,gbs=512,zero=2", "--plan"));
  const Measured measured = parse_measured(j, planner_side, "r.json");
  CHECK(measured.kernel_s.size() == w.kernels.size());
  CHECK(measured.collective_s.empty());
}

TEST_CASE("the runner reads each overlapped TP collective's GEMM and refuses one that is not") {
  nlohmann::json j = workload_json(
      build_workload(io::load_model(PLANNER_SOURCE_DIR "/configs/models/megatron-18.4b.yaml"),
                     h200(), parse_plan("tp=8,dp=8,mbs=1,gbs=64,sp=1,zero=1", "--plan")));
  const RunnerWorkload w = parse_runner_workload(j.dump(), "w.json");
  REQUIRE(w.collectives.size() == 8);
  const std::vector<std::string> lines = dry_run_lines(w, 8);
  const std::string first = lines[3 + w.kernels.size() + 1];
  CHECK(first.find("# tp_allgather: NCCL allgather of ") == 0);
  CHECK(first.find("beside kernel 0 (qkv forward; the estimate charges") != std::string::npos);
  CHECK(first.find("measured on the local GPUs") != std::string::npos);
  nlohmann::json bad = j;
  bad["collectives"][0]["beside"] = 4;  // the flash attention kernel
  CHECK_THROWS_WITH(parse_runner_workload(bad.dump(), "w.json"),
                    "w.json: key 'collectives[0].beside': names kernel 4, which is not a GEMM");
  bad["collectives"][0]["beside"] = 1000;
  CHECK_THROWS_WITH(parse_runner_workload(bad.dump(), "w.json"),
                    "w.json: key 'collectives[0].beside': no kernel 1000 (the workload has 18)");
  RunnerResults r;
  r.kernels_s = std::vector<double>(w.kernels.size(), 1e-3);
  r.collectives_s = r.collectives_exposed_s = std::vector<double>(w.collectives.size(), 1e-4);
  r.dp_s = {0.1, 0.05};
  const nlohmann::json out = nlohmann::json::parse(results_json(r));
  CHECK(out["collectives_exposed_s"].size() == 8);
  CHECK(out["dp_s"].size() == 2);
}

TEST_CASE("the runner reads the stage-boundary all-gathers, lists them and writes their times") {
  nlohmann::json j = workload_json(
      build_workload(io::load_model(PLANNER_SOURCE_DIR "/configs/models/megatron-18.4b.yaml"),
                     h200(), parse_plan("tp=8,pp=4,dp=2,mbs=1,gbs=32", "--plan")));
  const RunnerWorkload w = parse_runner_workload(j.dump(), "w.json");
  REQUIRE(!w.boundary.empty());
  CHECK(w.stage == j["stage"].get<int>());
  for (const calibrate::WorkCollective& c : w.boundary) {
    CHECK(c.name == "pp_boundary_allgather");
    CHECK(c.coll == Collective::allgather);
    CHECK(c.ranks == 8);
    CHECK(c.per_microbatch);
    CHECK(c.bytes == 2.0 * 2048 * 6144);
  }
  const std::vector<std::string> lines = dry_run_lines(w, 8);
  const auto listed = std::find_if(lines.begin(), lines.end(), [](const std::string& l) {
    return l.find("# pp_boundary_allgather: NCCL allgather of 25165824 bytes over 8 GPUs") == 0;
  });
  REQUIRE(listed != lines.end());
  CHECK(listed->find("per micro-batch (16 micro-batches)") != std::string::npos);
  CHECK(listed->find("measured on the local GPUs") != std::string::npos);
  nlohmann::json bad = j;
  bad["boundary"][0]["per"] = "layer";
  CHECK_THROWS_WITH(parse_runner_workload(bad.dump(), "w.json"),
                    doctest::Contains("key 'boundary[0].per': unknown value 'layer'"));
  RunnerResults r;
  r.kernels_s = std::vector<double>(w.kernels.size(), 1e-3);
  r.boundary_s = std::vector<double>(w.boundary.size(), 2e-4);
  const nlohmann::json out = nlohmann::json::parse(results_json(r));
  CHECK(out["boundary_s"].size() == w.boundary.size());
  CHECK(nlohmann::json::parse(results_json(RunnerResults{}))["boundary_s"].is_null());
}

TEST_CASE(
    "head_dim travels with the workload: the runner's attention uses it, not hidden / heads") {
  // Mistral-NeMo: 32 heads of 128 on hidden 5120 (hidden / heads would be 160).
  const ModelSpec m =
      io::load_model(PLANNER_SOURCE_DIR "/tests/data/hf/mistral-nemo-base-2407.json");
  const Workload built = build_workload(m, h200(), parse_plan("tp=8,dp=1,mbs=1,gbs=8", "--plan"));
  const nlohmann::json j = workload_json(built);
  CHECK(j["layer"]["head_dim"] == 128);
  const RunnerWorkload w = parse_runner_workload(j.dump(), "w.json");
  CHECK(w.layer.head_dim() == 128);
  bool seen = false;
  for (size_t i = 0; i < w.kernels.size(); ++i)
    if (w.kernels[i].name == "flash_attention" && w.kernels[i].pass == Pass::forward) {
      CHECK(describe(kernel_run(w, i)) ==
            "flash attention fwd bf16 bh=4 sq=8192 sk=8192 d=128 causal kv_group=4");
      seen = true;
    }
  CHECK(seen);
  // A workload written before head_dim was carried: hidden / heads, as then.
  nlohmann::json old = j;
  old["layer"].erase("head_dim");
  old["layer"]["hidden"] = 4096;
  CHECK(parse_runner_workload(old.dump(), "w.json").layer.head_dim() == 128);
}
