#include <doctest/doctest.h>

#include <string>

#include "planner/error.h"
#include "planner/io/model_io.h"
#include "planner/model.h"

using namespace planner;

namespace {
ModelSpec gpt(int L, int h, int a, int V = 51200, int s = 2048) {
  ModelSpec m;
  m.layers = L, m.hidden = h, m.heads = a, m.kv_heads = a, m.ffn = 4 * h, m.vocab = V,
  m.seq_len = s;
  return m;
}
}  // namespace

TEST_CASE("parameter counts match the published sizes") {
  // GPT-3 175B: 96 x (12 h^2 + 2h) + V h = 96 x 1,811,963,904 + 617,558,016 + h = 174.56e9.
  const ModelSpec g = io::load_model(PLANNER_SOURCE_DIR "/configs/models/gpt3-175b.yaml");
  CHECK(g.layer_params() == doctest::Approx(12.0 * 12288 * 12288 + 2 * 12288));
  CHECK(g.total_params() == doctest::Approx(174.56e9).epsilon(0.001));
  // Llama 2 7B: 6,738,415,616 on the Hugging Face card (biases none, untied output).
  const ModelSpec l = io::load_model(PLANNER_SOURCE_DIR "/configs/models/llama2-7b.yaml");
  CHECK(l.total_params() == doctest::Approx(6.738e9).epsilon(0.001));
  // Llama 3 70B, GQA 8 kv heads: 70.55e9.
  const ModelSpec l3 = io::load_model(PLANNER_SOURCE_DIR "/configs/models/llama3-70b.yaml");
  CHECK(l3.total_params() == doctest::Approx(70.55e9).epsilon(0.002));
  // Narayanan 2021 Table 1: 1008B from P = 12 l h^2 (1 + 13/12h + (V+s)/12lh); ours omits the
  // position embedding (s h) and biases, so agree within 0.1%.
  const ModelSpec t = io::load_model(PLANNER_SOURCE_DIR "/configs/models/megatron-1t.yaml");
  CHECK(t.total_params() == doctest::Approx(1008e9).epsilon(0.001));
}

TEST_CASE("megatron-mfu reduces to 72 B s L h^2 (1 + s/6h + V/12Lh) for a plain GPT") {
  const ModelSpec m = gpt(24, 2304, 24);
  const double B = 512, s = 2048, L = 24, h = 2304, V = 51200;
  const double expect = 72 * B * s * L * h * h * (1 + s / (6 * h) + V / (12 * L * h));
  CHECK(model_flops_per_iteration(m, B) == doctest::Approx(expect));
}

TEST_CASE("megatron-hfu is Narayanan Eq. 3") {
  const ModelSpec m = gpt(128, 25600, 160);
  const double B = 3072, s = 2048, L = 128, h = 25600, V = 51200;
  CHECK(megatron_hfu_flops_per_iteration(m, B) ==
        doctest::Approx(96 * B * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h))));
  // Hardware FLOPs of full recompute are 4/3 of model FLOPs up to the logits term.
  CHECK(megatron_hfu_flops_per_iteration(m, B) / model_flops_per_iteration(m, B) ==
        doctest::Approx(4.0 / 3).epsilon(0.002));
}

TEST_CASE("SwiGLU and GQA enter the model FLOPs") {
  ModelSpec m = gpt(32, 4096, 32);
  m.kv_heads = 8, m.ffn = 14336, m.swiglu = true, m.vocab = 128256, m.seq_len = 8192;
  // 12 B s L h^2 ((1 + 8/32 + 8192/4096) + (14336/4096)(3/2) + V/(2 L h)), per sequence:
  const double h = 4096, s = 8192, L = 32;
  const double expect = 12 * s * L * h * h * ((1 + 0.25 + 2) + 3.5 * 1.5 + 128256 / (2 * L * h));
  CHECK(model_flops_per_iteration(m, 1) == doctest::Approx(expect));
}

TEST_CASE("head_dim: an optional model key that sets the attention width in parameters and FLOPs") {
  const std::string yaml =
      "name: m\nlayers: 2\nhidden: 5120\nheads: 32\nkv_heads: 8\nhead_dim: 128\nffn: 14336\n"
      "swiglu: true\nvocab: 1000\nseq_len: 4096\ntied_embeddings: false\n";
  const ModelSpec m = io::parse_model(yaml, "m.yaml");
  CHECK(m.head_dim() == 128);
  // Q and the output projection 32 x 128 = 4096 wide, K and V 8 x 128 each.
  CHECK(m.layer_params() ==
        5120.0 * (4096 + 2 * 1024) + 4096.0 * 5120 + 3.0 * 5120 * 14336 + 2 * 5120);
  // Megatron-LM's num_floating_point_operations: the attention term scales by
  // heads x head_dim / hidden (its query_projection_to_hidden_size_ratio), 4096 / 5120 = 0.8.
  const double s = 4096, L = 2, h = 5120, r = 0.8;
  const double expect =
      12 * s * L * h * h * ((1 + 0.25 + s / h) * r + (14336 / h) * 1.5 + 1000 / (2 * L * h));
  CHECK(model_flops_per_iteration(m, 1) == doctest::Approx(expect));
  // Without head_dim, 32 heads must divide hidden; with it they need not.
  std::string odd = yaml;
  odd.replace(odd.find("hidden: 5120"), 12, "hidden: 5000");
  CHECK(io::parse_model(odd, "m.yaml").head_dim() == 128);
  odd.replace(odd.find("head_dim: 128\n"), 14, "");
  CHECK_THROWS_WITH_AS(io::parse_model(odd, "m.yaml"),
                       "m.yaml:4: key 'heads': hidden 5000 is not divisible by heads 32 (give "
                       "head_dim where heads x head_dim differs)",
                       InputError);
  odd.replace(odd.find("ffn:"), 4, "head_dim: -1\nffn:");
  CHECK_THROWS_WITH_AS(io::parse_model(odd, "m.yaml"),
                       "m.yaml:6: key 'head_dim': must be a positive integer, got -1", InputError);
}
