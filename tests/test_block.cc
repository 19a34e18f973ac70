// The block model: one description of a layer that the parameter count, the GEMMs, the
// activation memory, the TP collectives and ZeRO-3 read (Korthikanti et al. 2022 Table 2 is the
// memory oracle, in test_memory.cc).
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "planner/block.h"
#include "planner/cost/compute.h"
#include "planner/cost/zero3.h"
#include "planner/io/cluster_io.h"
#include "planner/io/model_io.h"

using namespace planner;

namespace {
std::string names(const BlockModel& bm) {
  std::string out;
  for (const Module& m : bm) out += std::string(out.empty() ? "" : " ") + m.name;
  return out;
}
}  // namespace

TEST_CASE("a decoder layer's modules, their weights and their TP split") {
  const ModelSpec llama = io::load_model(PLANNER_SOURCE_DIR "/configs/models/llama3-70b.yaml");
  const LayerShape l = llama.decoder_shape();
  const BlockModel bm = block_model(l, {8, 1, 1, true, AttentionKernel::flash});
  CHECK(names(bm) == "norm1 qkv attention proj norm2 fc1 activation fc2");
  const double h = l.hidden, f = l.ffn, d = l.head_dim();
  // Grouped-query attention: Q for 64 heads, K and V for 8; SwiGLU: fc1 is two matrices.
  CHECK(bm.linear(kQkv)->params == h * (64 + 2 * 8) * d);
  CHECK(bm.linear(kFc1)->params == h * 2 * f);
  CHECK(bm.linear(kFc1)->out == 2 * f / 8);  // column-parallel: its output sharded
  CHECK(bm.linear(kFc2)->in == f / 8);       // row-parallel: its input sharded
  CHECK(bm.params() == doctest::Approx(h * 80 * d + 64 * d * h + 3 * h * f + 2 * h));
  CHECK(l.params() == bm.params());
  CHECK(bm.tp_collectives() == 2);
  CHECK(bm.linear(kQkv)->column_parallel);
  CHECK(!bm.linear(kProj)->column_parallel);
  CHECK(bm.linear(kProj)->tp_collectives == 1);
  // With SP, the column-parallel linears gather their input, the row-parallel ones their output
  // gradient; a norm gathers nothing.
  CHECK(bm.linear(kQkv)->sp_gathers_input());
  CHECK(!bm.linear(kQkv)->sp_gathers_output_grad());
  CHECK(bm.linear(kFc2)->sp_gathers_output_grad());
  CHECK(!bm.linear(kFc2)->sp_gathers_input());
  for (const Module& m : bm)
    if (m.kind == ModuleKind::norm) CHECK(!(m.sp_gathers_input() || m.sp_gathers_output_grad()));
  // Full recompute keeps only the block's input.
  CHECK(bm.stored_bytes(Recompute::full) == doctest::Approx(2.0 * l.seq * h / 8));
}

TEST_CASE("the compute model's GEMMs and ZeRO-3's gathers are the block model's linears") {
  const ModelSpec gpt = io::load_model(PLANNER_SOURCE_DIR "/configs/models/gpt3-13b.yaml");
  const ClusterProfile c = io::load_cluster(PLANNER_SOURCE_DIR "/hw_profiles/dgx-a100-80gb.yaml");
  const LayerShape l = gpt.decoder_shape();
  const LayerConfig cfg{4, 1, 2, true, Dtype::bf16, AttentionKernel::flash};
  const BlockModel bm = block_model(l, {4, 1, 2, true, AttentionKernel::flash});
  int linears = 0;
  for (const Kernel& k : layer_kernels(l, c, cfg)) {
    if (k.cls != KernelClass::gemm || k.pass != Pass::forward) continue;
    const Module* m = nullptr;
    for (const Module& x : bm)
      if (std::string(x.name) == k.name) m = &x;
    REQUIRE(m != nullptr);
    CHECK(k.gemm.m == bm.tokens);  // y[tokens x out] = x[tokens x in] W[in x out]
    CHECK(k.gemm.n == m->out);
    CHECK(k.gemm.k == m->in);
    ++linears;
  }
  CHECK(linears == 4);
  const LayerCompute lc = layer_compute(l, c, cfg);
  double gathered = 0;
  for (const Zero3Step& s : zero3_block_steps(l, lc, 4, Recompute::none, false))
    gathered += s.params;
  CHECK(gathered == doctest::Approx((bm.params() - 2.0 * l.hidden) / 4));  // all but the norms
}

TEST_CASE("a projector MLP is two linears with one TP collective") {
  LayerShape p;
  p.attention = false, p.in_features = 1024, p.hidden = 4096, p.ffn = 4096, p.seq = 576;
  const BlockModel bm = block_model(p, {2, 1, 1, false, AttentionKernel::flash});
  CHECK(names(bm) == "fc1 activation fc2");
  CHECK(bm.tp_collectives() == 1);
  CHECK(bm.params() == 1024.0 * 4096 + 4096.0 * 4096);
  // Full recompute still keeps its input.
  CHECK(bm.stored_bytes(Recompute::full) == doctest::Approx(2.0 * 576 * 1024));
}

TEST_CASE("head_dim sets the attention widths where heads x head_dim is not hidden") {
  // Mistral-NeMo 12B: hidden 5120, 32 heads of 128 (4096 wide), 8 kv heads.
  const ModelSpec nemo =
      io::load_model(PLANNER_SOURCE_DIR "/tests/data/hf/mistral-nemo-base-2407.json");
  const LayerShape l = nemo.decoder_shape();
  const BlockModel bm = block_model(l, {4, 1, 1, false, AttentionKernel::flash});
  CHECK(bm.linear(kQkv)->in == 5120);
  CHECK(bm.linear(kQkv)->out == (32 + 2 * 8) * 128 / 4);  // 6144 / tp
  CHECK(bm.linear(kProj)->in == 32 * 128 / 4);            // 4096 / tp, not 5120 / tp
  CHECK(bm.linear(kProj)->out == 5120);
  CHECK(bm.linear(kQkv)->params == 5120.0 * 6144);
  CHECK(bm.linear(kProj)->params == 4096.0 * 5120);
  // Activations: Q and the projection's input are 4096 wide, K and V 1024 each (Korthikanti's
  // 2sbh terms with h the attention width where they hold attention values).
  const double s = 8192, h = 5120, q = 4096, kv = 1024, t = 4;
  const Module* attn = nullptr;
  for (const Module& m : bm)
    if (m.kind == ModuleKind::attention_core) attn = &m;
  REQUIRE(attn != nullptr);
  CHECK(attn->stored[0] == doctest::Approx((2 * s * q + 2 * 2 * s * kv + 4 * 32 * s) / t));
  CHECK(bm.linear(kProj)->stored[0] == doctest::Approx(2 * s * q / t + s * h));
}

TEST_CASE("biases and extra norms are modules' parameters") {
  LayerShape l;
  l.hidden = 64, l.heads = 4, l.kv_heads = 2, l.ffn = 128, l.swiglu = true, l.seq = 16;
  const double plain = block_model(l).params();
  CHECK(plain == 64.0 * (64 + 2 * 32) + 64.0 * 64 + 3.0 * 64 * 128 + 2 * 64);
  l.arch.qkv_bias = true;  // Qwen2: Q, K and V, (4 + 2 x 2) x 16 = 128
  CHECK(block_model(l).params() == plain + 128);
  CHECK(block_model(l, {2, 1, 1, false, AttentionKernel::flash}).linear(kQkv)->bias == 64);
  l.arch.proj_bias = l.arch.mlp_bias = true;  // + 64, + 2 x 128 + 64
  CHECK(block_model(l).params() == plain + 128 + 64 + 256 + 64);
  l.arch = {};
  l.arch.sandwich_norms = true;  // Gemma 2: two more norms of hidden
  const BlockModel gemma = block_model(l);
  CHECK(names(gemma) ==
        "norm1 qkv attention proj post_attention_norm norm2 fc1 activation fc2 post_mlp_norm");
  CHECK(gemma.params() == plain + 2 * 64);
  l.arch = {};
  l.arch.qk_norm = true, l.arch.head_dim = 32;  // Qwen3: one norm of head_dim on Q, one on K
  const BlockModel qwen3 = block_model(l);
  CHECK(names(qwen3) == "norm1 qkv qk_norm attention proj norm2 fc1 activation fc2");
  CHECK(qwen3.params() == 64.0 * (4 + 4) * 32 + 4.0 * 32 * 64 + 3.0 * 64 * 128 + 2 * 64 + 2 * 32);
  l.arch = {};
  l.arch.norm_bias = true;  // LayerNorm: scale and bias
  CHECK(block_model(l).params() == plain + 2 * 64);
}

TEST_CASE("sliding-window attention: each query sees min(i + 1, w) keys") {
  for (int s : {1, 7, 64, 1000})
    for (int w : {1, 3, 64, 999, 4096}) {
      double brute = 0;
      for (int i = 0; i < s; ++i) brute += std::min(i + 1, w);
      CAPTURE(s);
      CAPTURE(w);
      CHECK(causal_window_pairs(s, w) == brute);
    }
  CHECK(causal_window_pairs(8192, 8192) == 8192.0 * 8193 / 2);  // plain causal
  CHECK(causal_window_pairs(8192, 4096) == 4096.0 * 8192 - 4096.0 * 4095 / 2);
  // Gemma 2: half the layers local, the others global; the block charges their mean.
  LayerShape l;
  l.hidden = 64, l.heads = 4, l.kv_heads = 4, l.ffn = 128, l.seq = 8192;
  CHECK(causal_attended_pairs(l) == causal_window_pairs(8192, 8192));
  l.arch.sliding_window = 4096, l.arch.local_layers = 0.5;
  CHECK(causal_attended_pairs(l) ==
        0.5 * causal_window_pairs(8192, 4096) + 0.5 * causal_window_pairs(8192, 8192));
  l.arch.local_layers = 1;
  l.seq = 2048;  // a window wider than the sequence changes nothing
  CHECK(causal_attended_pairs(l) == causal_window_pairs(2048, 2048));
}
