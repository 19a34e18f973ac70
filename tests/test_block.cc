// The block model: one description of a layer that the parameter count, the GEMMs, the
// activation memory, the TP collectives and ZeRO-3 read (Korthikanti et al. 2022 Table 2 is the
// memory oracle, in test_memory.cc).
#include <doctest/doctest.h>

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
