#include <doctest/doctest.h>
#include <fmt/core.h>

#include "planner/cost/compute.h"
#include "planner/io/cluster_io.h"
#include "planner/io/model_io.h"

using namespace planner;

namespace {
// A toy GPU: 4 SMs, one 128x128 tile, no main-loop or alignment penalty, 100 TFLOP/s.
Gpu toy() {
  Gpu g;
  g.sms = 4;
  g.peak_flops[int(Dtype::bf16)] = 100e12;
  g.hbm_Bps = 1e15, g.hbm_efficiency = 1;
  g.gemm.max_efficiency = 1, g.gemm.k_half = 0, g.gemm.launch_s = 0;
  g.gemm.tiles = {{128, 128, 1.0}};
  return g;
}
}  // namespace

TEST_CASE("tile and wave quantization") {
  const Gpu g = toy();
  // 256 x 256: 4 tiles on 4 SMs, one full wave.
  CHECK(gemm_efficiency(g, {256, 256, 128}) == doctest::Approx(1.0));
  // 384 x 384: 9 tiles -> 3 waves of 4 = 12 tile slots for 9 tiles of work: 0.75.
  CHECK(gemm_efficiency(g, {384, 384, 128}) == doctest::Approx(0.75));
  // 200 x 256: tiles padded to 256 x 256: 200/256 = 0.78125.
  CHECK(gemm_efficiency(g, {200, 256, 128}) == doctest::Approx(200.0 / 256));
  // 128 x 128 with K = 4096: one tile, split-K 4 fills the 4 SMs (k = 1024 each >= 256).
  CHECK(gemm_efficiency(g, {128, 128, 4096}) == doctest::Approx(1.0));
  // The same with K = 256: no split below 256 per part, 1 of 4 SMs busy.
  CHECK(gemm_efficiency(g, {128, 128, 256}) == doctest::Approx(0.25));
}

TEST_CASE("main-loop and alignment penalties") {
  Gpu g = toy();
  g.gemm.k_half = 64;
  CHECK(gemm_efficiency(g, {256, 256, 64}) == doctest::Approx(0.5));  // 64 / (64 + 64)
  g.gemm.k_half = 0, g.gemm.misaligned_factor = 0.7;
  CHECK(gemm_efficiency(g, {256, 256, 100}) == doctest::Approx(0.7));  // K not a multiple of 8
}

TEST_CASE("GEMM time is the slower of compute and memory, plus launch") {
  Gpu g = toy();
  // 256^3: 2 x 256^3 = 33.55 MFLOP at 100 TFLOP/s = 0.3355 us; memory 3 x 256^2 x 2 B at 1 PB/s.
  CHECK(gemm_time_s(g, Dtype::bf16, {256, 256, 256}) ==
        doctest::Approx(2.0 * 256 * 256 * 256 / 100e12));
  g.hbm_Bps = 1e9;  // now 393,216 bytes / 1 GB/s = 393 us dominates
  CHECK(gemm_time_s(g, Dtype::bf16, {256, 256, 256}) == doctest::Approx(3.0 * 256 * 256 * 2 / 1e9));
}

TEST_CASE("a layer executes 24 s h^2 + 4 s^2 h forward FLOPs per sequence, twice that backward") {
  const ClusterProfile c = io::load_cluster(PLANNER_SOURCE_DIR "/hw_profiles/dgx-a100-80gb.yaml");
  ModelSpec m;
  m.layers = 24, m.hidden = 2304, m.heads = 24, m.kv_heads = 24, m.ffn = 9216, m.vocab = 51200,
  m.seq_len = 2048;
  const double s = 2048, h = 2304;
  for (int tp : {1, 2, 4, 8}) {
    const LayerCompute lc =
        layer_compute(m, c, {tp, 1, 1, false, Dtype::fp16, AttentionKernel::unfused});
    CHECK(lc.fwd_flops == doctest::Approx((24 * s * h * h + 4 * s * s * h) / tp));
    CHECK(lc.bwd_flops == doctest::Approx(2 * lc.fwd_flops));
  }
}

TEST_CASE("GEMM model against the published cuBLASLt table (A100 80GB fp16, Azure guide)") {
  const ClusterProfile c = io::load_cluster(PLANNER_SOURCE_DIR "/hw_profiles/dgx-a100-80gb.yaml");
  struct Row {
    double m, n, k, tflops;
  };
  // hardware-reference.md section 4, measured with random inputs after 10k warm-up iterations.
  const Row rows[] = {{2048, 2048, 2048, 221.8},   {4096, 4096, 4096, 228.0},
                      {8192, 8192, 8192, 253.7},   {16384, 16384, 16384, 256.5},
                      {6144, 12288, 12288, 250.8}, {1024, 1024, 1024, 119.4}};
  for (const Row& r : rows) {
    const GemmShape g{r.m, r.n, r.k};
    const double predicted = g.flops() / gemm_time_s(c.gpu, Dtype::fp16, g) / 1e12;
    fmt::print(
        "  gemm {:>6.0f}x{:>6.0f}x{:>6.0f}  measured {:>6.1f}  model {:>6.1f} TFLOP/s  "
        "({:+.1f}%)\n",
        r.m, r.n, r.k, r.tflops, predicted, 100 * (predicted / r.tflops - 1));
    CHECK(predicted == doctest::Approx(r.tflops).epsilon(0.20));
  }
}

namespace {
double flash_forward_flops(const LayerShape& l, const ClusterProfile& c, const LayerConfig& cfg) {
  for (const Kernel& k : layer_kernels(l, c, cfg))
    if (k.cls == KernelClass::attention && k.pass == Pass::forward) return k.flops;
  return 0;
}
}  // namespace

TEST_CASE("the attention core's FLOPs follow head_dim and the sliding window") {
  ClusterProfile c = io::load_cluster(PLANNER_SOURCE_DIR "/hw_profiles/dgx-h100-80gb.yaml");
  c.software.causal_attention_skip = true;
  // Mistral-NeMo's layer at 4,096 tokens, tp 8: 4 heads of 128 on a rank (not 5120 / 32 = 160).
  LayerShape l = io::load_model(PLANNER_SOURCE_DIR "/tests/data/hf/mistral-nemo-base-2407.json")
                     .decoder_shape();
  l.seq = 4096;
  const LayerConfig cfg{8, 1, 1, false, Dtype::bf16, AttentionKernel::flash};
  // 4 FLOPs per query-key pair and head element (QK^T and PV): 4 x 4 heads x 128 x s (s + 1) / 2.
  CHECK(flash_forward_flops(l, c, cfg) == doctest::Approx(4.0 * 4 * 128 * 4096 * 4097 / 2));
  // A window of 1,024 on every layer: w s - w (w - 1) / 2 pairs.
  LayerShape w = l;
  w.arch.sliding_window = 1024, w.arch.local_layers = 1;
  const double pairs = 1024.0 * 4096 - 1024.0 * 1023 / 2;
  CHECK(flash_forward_flops(w, c, cfg) == doctest::Approx(4.0 * 4 * 128 * pairs));
  CHECK(layer_compute(w, c, cfg).fwd_attn_s < 0.5 * layer_compute(l, c, cfg).fwd_attn_s);
  // Context parallelism splits the pairs evenly.
  const LayerConfig cp2{8, 2, 1, false, Dtype::bf16, AttentionKernel::flash};
  CHECK(flash_forward_flops(w, c, cp2) == doctest::Approx(4.0 * 4 * 128 * pairs / 2));
  // A kernel that does not skip masked tiles computes every pair, window or not.
  c.software.causal_attention_skip = false;
  CHECK(flash_forward_flops(w, c, cfg) == doctest::Approx(4.0 * 4 * 128 * 4096 * 4096));
}

TEST_CASE(
    "fused attention at head dim 64 runs 0.71 forward, 0.85 backward of head dim 128's rate") {
  CHECK(flash_head_dim_factor(128, kFlashHeadDim64Fwd) == 1.0);
  CHECK(flash_head_dim_factor(256, kFlashHeadDim64Fwd) == 1.0);
  CHECK(flash_head_dim_factor(64, kFlashHeadDim64Fwd) == kFlashHeadDim64Fwd);
  CHECK(flash_head_dim_factor(32, kFlashHeadDim64Bwd) == kFlashHeadDim64Bwd);
  CHECK(flash_head_dim_factor(96, 0.71) == doctest::Approx(0.855));
  // The same attention FLOPs as 32 heads of 128 or 64 of 64 (hidden 4096, 4,096 tokens): the
  // kernels' time beyond their launch scales by 1 / factor.
  const ClusterProfile c = io::load_cluster(PLANNER_SOURCE_DIR "/hw_profiles/dgx-h100-80gb.yaml");
  LayerShape l =
      io::load_model(PLANNER_SOURCE_DIR "/configs/models/llama2-7b.yaml").decoder_shape();
  l.seq = 4096;
  LayerShape narrow = l;
  narrow.heads = narrow.kv_heads = 64;  // head dim 64
  REQUIRE(narrow.head_dim() == 64);
  const LayerConfig cfg{1, 1, 1, false, Dtype::bf16, AttentionKernel::flash};
  auto attn = [&](const LayerShape& shape, Pass pass) {
    for (const Kernel& k : layer_kernels(shape, c, cfg))
      if (k.cls == KernelClass::attention && k.pass == pass)
        return std::pair{k.flops, k.time_s * c.gpu.sustained_efficiency - c.gpu.gemm.launch_s};
    return std::pair{0.0, 0.0};
  };
  for (const auto& [pass, factor] : {std::pair{Pass::forward, kFlashHeadDim64Fwd},
                                     std::pair{Pass::backward_data, kFlashHeadDim64Bwd}}) {
    CHECK(attn(narrow, pass).first == doctest::Approx(attn(l, pass).first));
    CHECK(attn(narrow, pass).second == doctest::Approx(attn(l, pass).second / factor));
  }
}

TEST_CASE("bias adds are element-wise FLOPs: one per element forward, one backward") {
  const ClusterProfile c = io::load_cluster(PLANNER_SOURCE_DIR "/hw_profiles/dgx-h100-80gb.yaml");
  // Qwen2.5 7B: Q, K and V biases, (28 + 2 x 4) x 128 = 4,608 per token, 1,152 on each of 4 ranks.
  LayerShape l =
      io::load_model(PLANNER_SOURCE_DIR "/tests/data/hf/qwen2.5-7b.json").decoder_shape();
  l.seq = 1024;
  LayerShape unbiased = l;
  unbiased.arch.qkv_bias = false;
  const LayerConfig cfg{4, 1, 1, false, Dtype::bf16, AttentionKernel::flash};
  const LayerCompute with = layer_compute(l, c, cfg), without = layer_compute(unbiased, c, cfg);
  CHECK(with.fwd_flops - without.fwd_flops == doctest::Approx(1024.0 * 4608 / 4));
  CHECK(with.bwd_flops - without.bwd_flops == doctest::Approx(1024.0 * 4608 / 4));
}

TEST_CASE("the loss kernels' bytes per logit: unfused 38 + 14, native fused 22 + 10, TE 6 + 4") {
  // Llama 3 8B, one sequence of 8192 tokens on one rank: the loss's memory traffic is the only
  // difference between the kernels, in bytes per logit over the achieved HBM bandwidth.
  const ModelSpec m = io::load_model(PLANNER_SOURCE_DIR "/configs/models/llama3-8b.yaml");
  const ClusterProfile c = io::load_cluster(PLANNER_SOURCE_DIR "/hw_profiles/dgx-h100-80gb.yaml");
  LayerConfig cfg{1, 1, 1, false, Dtype::bf16, AttentionKernel::flash};
  const HeadCompute unfused = head_compute(m, c, cfg);
  cfg.loss = LossKernel::fused_native;
  const HeadCompute native = head_compute(m, c, cfg);
  cfg.loss = LossKernel::te_triton;
  const HeadCompute te = head_compute(m, c, cfg);
  const double per_byte = 8192.0 * m.vocab / c.gpu.hbm_achieved_Bps() / c.gpu.sustained_efficiency;
  CHECK(unfused.logits_fwd_s - native.logits_fwd_s == doctest::Approx((38 - 22) * per_byte));
  CHECK(unfused.logits_bwd_s - native.logits_bwd_s == doctest::Approx((14 - 10) * per_byte));
  CHECK(unfused.logits_fwd_s - te.logits_fwd_s == doctest::Approx((38 - 6) * per_byte));
  CHECK(unfused.logits_bwd_s - te.logits_bwd_s == doctest::Approx((14 - 4) * per_byte));
  // The GEMMs are the same: the weight gradient does not move.
  CHECK(te.logits_bwd_weight_s == unfused.logits_bwd_weight_s);
}
