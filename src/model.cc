#include "planner/model.h"

#include <cmath>
#include <string_view>

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

double YarnSpec::attention_factor() const {
  auto get_mscale = [&](double ms) { return factor <= 1 ? 1.0 : 0.1 * ms * std::log(factor) + 1; };
  return mscale && mscale_all_dim ? get_mscale(*mscale) / get_mscale(*mscale_all_dim)
                                  : get_mscale(1.0);
}

LayerShape ModelSpec::decoder_shape() const {
  LayerShape s;
  s.hidden = hidden, s.heads = heads, s.kv_heads = kv_heads, s.ffn = ffn, s.swiglu = swiglu;
  s.seq = seq_len, s.sequences = 1, s.causal = true;
  s.arch = arch;
  s.mla = mla;
  return s;
}

LayerShape ModelSpec::moe_shape() const {
  LayerShape s = decoder_shape();
  s.moe = moe;
  s.ffn = moe.shared_ffn;
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

namespace {

/// All decoder layers' parameters, as their block models have them, the MoE layers' with
/// `routed` of their experts; gpt-oss's sink logits (one per head) beside.
double decoder_params(const ModelSpec& m, double routed) {
  const double sinks = m.attention_sinks ? m.heads : 0.0;
  const double dense = block_model(m.decoder_shape()).params() + sinks;
  const int moe = m.moe_layers();
  if (moe == 0) return m.layers * dense;
  const BlockModel b = block_model(m.moe_shape());
  double experts = 0;
  for (const Module& mod : b)
    if (mod.shard == Module::Shard::experts) experts += mod.params;
  const double moe_layer = b.params() - experts * (1.0 - routed / m.moe.experts) + sinks;
  return (m.layers - moe) * dense + moe * moe_layer;
}

double non_decoder_params(const ModelSpec& m) {
  return m.embedding_params() + m.position_params() + m.output_params() + m.final_norm_params() +
         m.encoder_params();
}

}  // namespace

LayerShape ModelSpec::mtp_shape() const {
  return is_moe_layer(layers - 1) ? moe_shape() : decoder_shape();
}

double ModelSpec::mtp_params() const {
  if (mtp_layers == 0) return 0;
  const double sinks = attention_sinks ? heads : 0.0;
  const double norm = (arch.norm_bias ? 2.0 : 1.0) * hidden;  // enorm, hnorm, final_layernorm
  return mtp_layers * (mtp_shape().params() + sinks + 2.0 * hidden * double(hidden) + 3.0 * norm);
}

int ModelSpec::moe_layers() const {
  if (!moe.any()) return 0;
  int n = 0;
  for (int i = 0; i < layers; ++i) n += is_moe_layer(i);
  return n;
}

double ModelSpec::total_params() const {
  if (!moe.any() && !mla.any() && !attention_sinks)  // the dense layer as the block model has it
    return layers * layer_params() + non_decoder_params(*this);
  return decoder_params(*this, moe.experts) + non_decoder_params(*this);
}

double ModelSpec::active_params() const {
  if (!moe.any()) return total_params();
  return decoder_params(*this, moe.topk) + non_decoder_params(*this);
}

namespace {

void check_count(long long v, const std::string& key, long long cap, const std::string& file,
                 bool zero_ok = false) {
  if (v < 0 || (v == 0 && !zero_ok))
    throw InputError(
        file, 0, key,
        std::string(zero_ok ? "must be a count (0 or more)" : "must be a positive integer") +
            ", got " + std::to_string(v));
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
  check_count(m.mtp_layers, "mtp_layers", limits::kMtpLayers, file, true);
  if (m.arch.sliding_window != 0)
    check_count(m.arch.sliding_window, "sliding_window", limits::kSeqLen, file);
  if (!(m.arch.local_layers >= 0 && m.arch.local_layers <= 1))
    throw InputError(file, 0, "sliding_window", "the share of local layers must be in [0, 1]");
  if (!(m.arch.rope_mscale > 0 && m.arch.rope_mscale <= kMaxRopeMscale))
    throw InputError(
        file, 0, "rope_mscale",
        fmt("must be above 0 and at most {:g}, got {:g}", kMaxRopeMscale, m.arch.rope_mscale));
  if (m.heads % m.kv_heads != 0)
    throw InputError(file, 0, "kv_heads",
                     "heads " + std::to_string(m.heads) + " is not divisible by kv_heads " +
                         std::to_string(m.kv_heads));
  if (m.moe.experts != 0) {
    const MoeSpec& e = m.moe;
    check_count(e.experts, "experts", limits::kExperts, file);
    check_count(e.topk, "experts_per_token", e.experts, file);
    check_count(e.expert_ffn, "expert_ffn", limits::kFfn, file);
    check_count(e.shared_ffn, "shared_expert_ffn", limits::kFfn, file, true);
    check_count(e.first_dense, "first_dense_layers", m.layers, file, true);
    check_count(e.every, "moe_every", m.layers, file);
  }
  if (m.mla.any()) {
    const MlaSpec& a = m.mla;
    check_count(a.q_lora_rank, "q_lora_rank", limits::kHidden, file, true);
    check_count(a.kv_lora_rank, "kv_lora_rank", limits::kHidden, file);
    check_count(a.qk_nope_head_dim, "qk_nope_head_dim", limits::kHidden, file);
    check_count(a.qk_rope_head_dim, "qk_rope_head_dim", limits::kHidden, file);
    check_count(a.v_head_dim, "v_head_dim", limits::kHidden, file);
  }
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

namespace {

/// Megatron-LM's num_floating_point_operations for a model with experts or latent attention
/// (d98e8a64 training.py transformer_flops, no latent MoE): per token 6 FLOPs per weight of the
/// MLPs (routed experts topk times), the attention projections and the logits; per token pair the
/// core attention, causal-halved. Each MTP module counts as one more layer of the last layer's
/// kind, its three norms and eh_proj (6 x (3h + 2h^2) per token) and one more logits.
double moe_mla_flops(const ModelSpec& m, double B) {
  const double s = m.seq_len, h = m.hidden, H = m.heads, V = m.vocab;
  const double gated = m.swiglu ? 3.0 : 2.0;
  const int mtp = m.mtp_layers, last_moe = m.is_moe_layer(m.layers - 1) ? 1 : 0;
  const int moe = m.moe_layers() + last_moe * mtp, dense = m.layers + mtp - moe;
  const double layers = double(m.layers) + mtp;
  const double mlp = 6.0 * h *
                     (double(m.ffn) * gated * dense +
                      (double(m.moe.expert_ffn) * m.moe.topk + m.moe.shared_ffn) * gated * moe);
  double attn = 0, core = 0;
  if (m.mla.any()) {
    const MlaSpec& a = m.mla;
    const double q =
        a.q_lora_rank > 0 ? a.q_lora_rank * (h + H * a.qk_head_dim() + 1) : h * H * a.qk_head_dim();
    attn = 6.0 * (q + a.kv_lora_rank * (h + H * (a.qk_nope_head_dim + a.v_head_dim) + 1) +
                  h * a.qk_rope_head_dim + H * a.v_head_dim * h);
    core = 6.0 * (H * a.qk_head_dim() / 2 + H * a.v_head_dim / 2);
  } else {
    const double q = H * m.head_dim(), kv = double(m.kv_heads) * m.head_dim();
    attn = 6.0 * (h * (q + 2 * kv) + q * h);
    core = 6.0 * q;
  }
  const double mtp_extra = 6.0 * mtp * (3.0 * h + 2.0 * h * h);
  return B * s * (mlp + attn * layers + mtp_extra + 6.0 * h * V * (1.0 + mtp)) +
         B * s * s * core * layers;
}

}  // namespace

double model_flops_per_iteration(const ModelSpec& m, double B) {
  if (m.moe.any() || m.mla.any()) return moe_mla_flops(m, B);
  const double s = m.seq_len, L = m.layers, h = m.hidden, a = m.heads, g = m.kv_heads;
  const double d = m.head_dim(), f = m.ffn, V = m.vocab, mtp = m.mtp_layers;
  const double attn = (1.0 + g / a + s / h) * (a * d / h);
  const double mlp = (f / h) * (m.swiglu ? 1.5 : 1.0);
  double encoders = 0;  // multimodal: the encoders' own model FLOPs per sample
  for (const Component& c : m.encoders) encoders += c.layers * c.shape.flops_per_sample();
  // MTP modules as moe_mla_flops counts them: a layer, the norms and eh_proj, a logits each.
  const double mtp_flops = 12.0 * B * s * h * h * mtp * (attn + mlp + V / (2.0 * h)) +
                           6.0 * B * s * mtp * (3.0 * h + 2.0 * h * h);
  return 12.0 * B * s * L * h * h * (attn + mlp + V / (2.0 * L * h)) + B * encoders + mtp_flops;
}

double megatron_hfu_flops_per_iteration(const ModelSpec& m, double B) {
  const double s = m.seq_len, L = m.layers, h = m.hidden, V = m.vocab;
  return 96.0 * B * s * L * h * h * (1.0 + s / (6.0 * h) + V / (16.0 * L * h));
}

bool llama_style(const ModelSpec& m) { return m.swiglu || m.kv_heads < m.heads; }

}  // namespace planner
