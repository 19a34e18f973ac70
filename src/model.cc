#include "planner/model.h"

#include "planner/error.h"

namespace planner {

double ModelSpec::layer_params() const {
  const double h = hidden, d = head_dim(), f = ffn;
  const double qkv = h * (heads + 2.0 * kv_heads) * d;
  const double proj = heads * d * h;
  const double mlp = (swiglu ? 3.0 : 2.0) * h * f;
  const double norms = 2.0 * h;
  return qkv + proj + mlp + norms;
}

double ModelSpec::embedding_params() const { return double(vocab) * hidden; }

double ModelSpec::output_params() const { return tied_embeddings ? 0.0 : double(vocab) * hidden; }

double ModelSpec::total_params() const {
  return layers * layer_params() + embedding_params() + output_params() + hidden;
}

void validate_model(const ModelSpec& m, const std::string& file) {
  auto positive = [&](int v, const char* key) {
    if (v <= 0) throw InputError(file, 0, key, "must be a positive integer, got " + std::to_string(v));
  };
  positive(m.layers, "layers");
  positive(m.hidden, "hidden");
  positive(m.heads, "heads");
  positive(m.kv_heads, "kv_heads");
  positive(m.ffn, "ffn");
  positive(m.vocab, "vocab");
  positive(m.seq_len, "seq_len");
  if (m.hidden % m.heads != 0)
    throw InputError(file, 0, "heads",
                     "hidden " + std::to_string(m.hidden) + " is not divisible by heads " +
                         std::to_string(m.heads));
  if (m.heads % m.kv_heads != 0)
    throw InputError(file, 0, "kv_heads",
                     "heads " + std::to_string(m.heads) + " is not divisible by kv_heads " +
                         std::to_string(m.kv_heads));
}

double model_flops_per_iteration(const ModelSpec& m, double B) {
  const double s = m.seq_len, L = m.layers, h = m.hidden, a = m.heads, g = m.kv_heads;
  const double d = h / a, f = m.ffn, V = m.vocab;
  const double attn = (1.0 + g / a + s / h) * (a * d / h);
  const double mlp = (f / h) * (m.swiglu ? 1.5 : 1.0);
  return 12.0 * B * s * L * h * h * (attn + mlp + V / (2.0 * L * h));
}

double megatron_hfu_flops_per_iteration(const ModelSpec& m, double B) {
  const double s = m.seq_len, L = m.layers, h = m.hidden, V = m.vocab;
  return 96.0 * B * s * L * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * L * h));
}

}  // namespace planner
