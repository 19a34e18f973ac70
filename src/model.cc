#include "planner/model.h"

#include "planner/block.h"
#include "planner/error.h"
#include "planner/format.h"
#include "planner/limits.h"

namespace planner {

const char* to_string(ComponentType t) {
  switch (t) {
    case ComponentType::decoder:
      return "decoder";
    case ComponentType::vit:
      return "vit";
    case ComponentType::projector:
      return "projector";
  }
  return "?";
}

double LayerShape::params() const { return block_model(*this).params(); }

double LayerShape::flops_per_sample() const {
  // 2 FLOPs per weight and token forward, twice that backward; attention scores and context
  // 2 x 2 x seq^2 x hidden per sequence forward (full, not causal-halved: model FLOPs).
  const double matmul = 6.0 * params() * tokens_per_sample();
  const double attn = attention ? 3.0 * 4.0 * double(seq) * seq * q_width() * sequences : 0.0;
  return matmul + attn;
}

LayerShape ModelSpec::decoder_shape() const {
  LayerShape s;
  s.hidden = hidden, s.heads = heads, s.kv_heads = kv_heads, s.ffn = ffn, s.swiglu = swiglu;
  s.seq = seq_len, s.sequences = 1, s.causal = true;
  s.arch = arch;
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

double ModelSpec::position_params() const { return double(learned_positions) * hidden; }

double ModelSpec::final_norm_params() const { return (arch.norm_bias ? 2.0 : 1.0) * hidden; }

double ModelSpec::output_params() const { return tied_embeddings ? 0.0 : double(vocab) * hidden; }

double ModelSpec::total_params() const {
  return layers * layer_params() + embedding_params() + position_params() + output_params() +
         final_norm_params() + encoder_params();
}

namespace {

void check_count(long long v, const std::string& key, long long cap, const std::string& file,
                 bool zero_ok = false) {
  if (v < 0 || (v == 0 && !zero_ok))
    throw InputError(file, 0, key, "must be a positive integer, got " + std::to_string(v));
  if (v > cap)
    throw InputError(
        file, 0, key,
        "is implausibly large (" + std::to_string(v) + " > " + std::to_string(cap) + ")");
}

/// An encoder's sizes, as read_encoder leaves them (its `key`s are the model file's).
void validate_encoder(const Component& c, const std::string& at, const std::string& file) {
  const LayerShape& s = c.shape;
  check_count(c.layers, at + "layers", limits::kLayers, file);
  check_count(s.hidden, at + "hidden", limits::kHidden, file);
  check_count(s.ffn, at + "ffn", limits::kFfn, file);
  check_count(s.seq, at + "tokens", limits::kSeqLen, file);
  check_count(s.sequences, at + "images", limits::kImages, file);
  if (s.attention) {
    check_count(s.heads, at + "heads", limits::kHeads, file);
    if (s.hidden % s.heads != 0)
      throw InputError(file, 0, at + "heads",
                       "hidden " + std::to_string(s.hidden) + " is not divisible by heads " +
                           std::to_string(s.heads));
  } else {
    check_count(s.in_features, at + "in_features", limits::kHidden, file);
  }
}

}  // namespace

void validate_model(const ModelSpec& m, const std::string& file) {
  for (char ch : m.name)
    if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f)
      throw InputError(file, 0, "name", "must not contain control characters (newlines, tabs)");
  // Far beyond any trained model; bounds keep every derived size finite and allocatable.
  check_count(m.layers, "layers", limits::kLayers, file);
  check_count(m.hidden, "hidden", limits::kHidden, file);
  check_count(m.heads, "heads", limits::kHeads, file);
  check_count(m.kv_heads, "kv_heads", limits::kHeads, file);
  check_count(m.ffn, "ffn", limits::kFfn, file);
  check_count(m.vocab, "vocab", limits::kVocab, file);
  check_count(m.seq_len, "seq_len", limits::kSeqLen, file);
  if (!limits::kRopeTheta.contains(m.rope_theta))
    throw InputError(file, 0, "rope_theta",
                     fmt("must be a number from {:.0f} to {:.0f}, got {:g}", limits::kRopeTheta.lo,
                         limits::kRopeTheta.hi, m.rope_theta));
  if (m.arch.head_dim != 0)
    check_count(m.arch.head_dim, "head_dim", limits::kHidden, file);
  else if (m.hidden % m.heads != 0)
    throw InputError(file, 0, "heads",
                     "hidden " + std::to_string(m.hidden) + " is not divisible by heads " +
                         std::to_string(m.heads) +
                         " (give head_dim where heads x head_dim differs)");
  if (double(m.heads) * m.head_dim() > limits::kHidden)
    throw InputError(file, 0, "head_dim",
                     "heads x head_dim = " + std::to_string(m.heads) + " x " +
                         std::to_string(m.head_dim()) + " is implausibly large (> " +
                         std::to_string(limits::kHidden) + ")");
  check_count(m.learned_positions, "learned_positions", limits::kSeqLen, file, true);
  if (m.arch.sliding_window != 0)
    check_count(m.arch.sliding_window, "sliding_window", limits::kSeqLen, file);
  if (!(m.arch.local_layers >= 0 && m.arch.local_layers <= 1))
    throw InputError(file, 0, "sliding_window", "the share of local layers must be in [0, 1]");
  if (m.heads % m.kv_heads != 0)
    throw InputError(file, 0, "kv_heads",
                     "heads " + std::to_string(m.heads) + " is not divisible by kv_heads " +
                         std::to_string(m.kv_heads));
  long long blocks = m.layers;
  for (size_t i = 0; i < m.encoders.size(); ++i) {
    validate_encoder(m.encoders[i], "components[" + std::to_string(i) + "].", file);
    blocks += m.encoders[i].layers;
  }
  if (blocks > limits::kLayers)
    throw InputError(file, 0, "components",
                     "the encoders' and the decoder's layers add up to " + std::to_string(blocks) +
                         ", over the limit of " + std::to_string(limits::kLayers));
}

double model_flops_per_iteration(const ModelSpec& m, double B) {
  const double s = m.seq_len, L = m.layers, h = m.hidden, a = m.heads, g = m.kv_heads;
  const double d = m.head_dim(), f = m.ffn, V = m.vocab;
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
