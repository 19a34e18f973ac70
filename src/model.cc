#include "planner/model.h"

#include <tuple>

#include "planner/error.h"

namespace planner {

const char* to_string(ComponentType t) {
  switch (t) {
    case ComponentType::decoder: return "decoder";
    case ComponentType::vit: return "vit";
    case ComponentType::projector: return "projector";
  }
  return "?";
}

double LayerShape::params() const {
  const double h = hidden, f = ffn;
  if (!attention) return double(in_features) * f + f * h;
  const double d = head_dim();
  const double qkv = h * (heads + 2.0 * kv_heads) * d;
  const double proj = heads * d * h;
  const double mlp = (swiglu ? 3.0 : 2.0) * h * f;
  const double norms = 2.0 * h;
  return qkv + proj + mlp + norms;
}

double LayerShape::flops_per_sample() const {
  // 2 FLOPs per weight and token forward, twice that backward; attention scores and context
  // 2 x 2 x seq^2 x hidden per sequence forward (full, not causal-halved: model FLOPs).
  const double matmul = 6.0 * params() * tokens_per_sample();
  const double attn = attention ? 3.0 * 4.0 * double(seq) * seq * hidden * sequences : 0.0;
  return matmul + attn;
}

LayerShape ModelSpec::decoder_shape() const {
  LayerShape s;
  s.hidden = hidden, s.heads = heads, s.kv_heads = kv_heads, s.ffn = ffn, s.swiglu = swiglu;
  s.seq = seq_len, s.sequences = 1, s.causal = true;
  return s;
}

int ModelSpec::blocks() const {
  int n = layers;
  for (const Component& c : encoders) n += c.layers;
  return n;
}

double ModelSpec::encoder_params() const {
  double p = 0;
  for (const Component& c : encoders) p += c.layers * c.shape.params();
  return p;
}

double ModelSpec::layer_params() const { return decoder_shape().params(); }

double ModelSpec::embedding_params() const { return double(vocab) * hidden; }

double ModelSpec::output_params() const { return tied_embeddings ? 0.0 : double(vocab) * hidden; }

double ModelSpec::total_params() const {
  return layers * layer_params() + embedding_params() + output_params() + hidden + encoder_params();
}

void validate_model(const ModelSpec& m, const std::string& file) {
  for (char ch : m.name)
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f)
      throw InputError(file, 0, "name", "must not contain control characters (newlines, tabs)");
  // Far beyond any trained model; bounds keep every derived size finite and allocatable.
  for (auto [v, key, cap] : {std::tuple{m.layers, "layers", 100000}, {m.hidden, "hidden", 1 << 20},
                             {m.heads, "heads", 1 << 16}, {m.kv_heads, "kv_heads", 1 << 16},
                             {m.ffn, "ffn", 1 << 22}, {m.vocab, "vocab", 1 << 24},
                             {m.seq_len, "seq_len", 1 << 24}})
    if (v > cap) throw InputError(file, 0, key, "is implausibly large (" + std::to_string(v) + " > " + std::to_string(cap) + ")");
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
  double encoders = 0;  // multimodal: the encoders' own model FLOPs per sample
  for (const Component& c : m.encoders) encoders += c.layers * c.shape.flops_per_sample();
  return 12.0 * B * s * L * h * h * (attn + mlp + V / (2.0 * L * h)) + B * encoders;
}

double megatron_hfu_flops_per_iteration(const ModelSpec& m, double B) {
  const double s = m.seq_len, L = m.layers, h = m.hidden, V = m.vocab;
  return 96.0 * B * s * L * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * L * h));
}

}  // namespace planner
