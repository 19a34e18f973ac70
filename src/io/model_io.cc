#include "planner/io/model_io.h"

#include "planner/error.h"
#include "planner/format.h"
#include "planner/io/file.h"
#include "planner/io/hf_config.h"
#include "planner/io/yaml_util.h"

namespace planner::io {
namespace {

const std::vector<std::string> kModelKeys = {
    "name", "layers", "hidden", "heads", "kv_heads", "ffn", "swiglu", "vocab", "seq_len",
    "tied_embeddings", "head_dim", "rope_theta", "rope_mscale",
    // mixture of experts (MoeSpec) and latent attention (MlaSpec)
    "experts", "experts_per_token", "expert_ffn", "shared_expert_ffn", "first_dense_layers",
    "moe_every", "q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim",
    "v_head_dim", "routing_imbalance", "mtp_layers"};

/// The experts and latent attention keys: all of a group or none (validate_model bounds them).
void read_experts(const YamlReader& r, ModelSpec& m) {
  if (r.has("experts")) {
    MoeSpec& e = m.moe;
    e.experts = r.get_int("experts");
    e.topk = r.get_int("experts_per_token");
    e.expert_ffn = r.get_int("expert_ffn");
    e.shared_ffn = r.has("shared_expert_ffn") ? r.get_int("shared_expert_ffn") : 0;
    e.first_dense = r.has("first_dense_layers") ? r.get_int("first_dense_layers") : 0;
    e.every = r.has("moe_every") ? r.get_int("moe_every") : 1;
    if (r.has("routing_imbalance")) {
      e.imbalance = r.get_double("routing_imbalance");
      if (!(e.imbalance >= 1 && e.imbalance <= kMaxRoutingImbalance))
        r.fail("routing_imbalance", fmt("must be from 1 (balanced) to {:g}, got {:g}",
                                        kMaxRoutingImbalance, e.imbalance));
    }
  } else {
    for (const char* k : {"experts_per_token", "expert_ffn", "shared_expert_ffn",
                          "first_dense_layers", "moe_every", "routing_imbalance"})
      if (r.has(k)) r.fail(k, "needs 'experts'");
  }
  if (r.has("kv_lora_rank")) {
    MlaSpec& a = m.mla;
    a.q_lora_rank = r.has("q_lora_rank") ? r.get_int("q_lora_rank") : 0;
    a.kv_lora_rank = r.get_int("kv_lora_rank");
    a.qk_nope_head_dim = r.get_int("qk_nope_head_dim");
    a.qk_rope_head_dim = r.get_int("qk_rope_head_dim");
    a.v_head_dim = r.get_int("v_head_dim");
  } else {
    for (const char* k : {"q_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"})
      if (r.has(k)) r.fail(k, "needs 'kv_lora_rank' (latent attention)");
  }
}

int positive_int(const YamlReader& r, const std::string& key) {
  const int v = r.get_int(key);
  if (v <= 0) r.fail(key, "must be a positive integer, got " + std::to_string(v));
  return v;
}

/// The decoder's keys; in a `components:` list they sit beside `type: decoder`.
ModelSpec read_decoder(const YamlReader& r, bool in_list) {
  std::vector<std::string> keys = kModelKeys;
  if (in_list) keys.push_back("type");
  r.check_keys(keys);
  ModelSpec m;
  m.name = r.get_string("name");
  m.layers = r.get_int("layers");
  m.hidden = r.get_int("hidden");
  m.heads = r.get_int("heads");
  m.kv_heads = r.has("kv_heads") ? r.get_int("kv_heads") : m.heads;
  m.ffn = r.get_int("ffn");
  m.swiglu = r.get_bool("swiglu");
  m.vocab = r.get_int("vocab");
  m.seq_len = r.get_int("seq_len");
  m.tied_embeddings = r.has("tied_embeddings") ? r.get_bool("tied_embeddings") : true;
  if (r.has("head_dim")) m.arch.head_dim = positive_int(r, "head_dim");  // default hidden / heads
  if (r.has("rope_theta")) m.rope_theta = r.get_double("rope_theta");
  if (r.has("rope_mscale")) m.arch.rope_mscale = r.get_double("rope_mscale");  // validate_model
  if (r.has("mtp_layers")) m.mtp_layers = r.get_int("mtp_layers");  // validate_model bounds it
  read_experts(r, m);
  try {
    validate_model(m, r.file());
  } catch (const InputError& e) {  // re-raise with the line of the offending key
    r.fail(e.key(), e.message());
  }
  return m;
}

/// A vision transformer (bidirectional attention over `tokens` per image, `images` per sample)
/// or a projector MLP (in_features -> ffn -> hidden on `tokens` per sample).
Component read_encoder(const YamlReader& r, ComponentType type) {
  Component c;
  c.type = type;
  LayerShape& s = c.shape;
  s.causal = false;
  if (type == ComponentType::vit) {
    r.check_keys(
        {"type", "name", "layers", "hidden", "heads", "ffn", "tokens", "images", "swiglu"});
    s.heads = positive_int(r, "heads");
    s.kv_heads = s.heads;
    s.swiglu = r.has("swiglu") && r.get_bool("swiglu");
  } else {
    r.check_keys({"type", "name", "layers", "in_features", "hidden", "ffn", "tokens", "images"});
    s.attention = false;
    s.in_features = positive_int(r, "in_features");
  }
  c.name = r.get_string("name");
  c.layers = positive_int(r, "layers");
  s.hidden = positive_int(r, "hidden");
  s.ffn = positive_int(r, "ffn");
  s.seq = positive_int(r, "tokens");
  s.sequences = r.has("images") ? positive_int(r, "images") : 1;
  if (s.attention && s.hidden % s.heads != 0)
    r.fail("heads", "hidden " + std::to_string(s.hidden) + " is not divisible by heads " +
                        std::to_string(s.heads));
  return c;
}

/// The encoders' bounds and the blocks in all (validate_model), failing at the offending line.
void validate_components(const YamlReader& r, const YAML::Node& list, const ModelSpec& m) {
  try {
    validate_model(m, r.file());
  } catch (const InputError& e) {
    const std::string& what = e.message();
    const std::string& key = e.key();  // "components[1].layers" or "components"
    const size_t open = key.find('['), close = key.find("].");
    if (open == std::string::npos || close == std::string::npos) r.fail(key, what);
    const size_t i = std::stoul(key.substr(open + 1, close - open - 1));
    YamlReader(list[i], r.file(), key.substr(0, close + 1)).fail(key.substr(close + 2), what);
  }
}

/// `components:` — encoders in order, then exactly one decoder, last.
ModelSpec read_components(const YamlReader& r) {
  r.check_keys({"name", "components"});
  const YAML::Node list = r.node("components");
  if (!list.IsSequence() || list.size() == 0) r.fail("components", "expected a list of components");
  std::vector<Component> encoders;
  for (size_t i = 0; i < list.size(); ++i) {
    const YamlReader c(list[i], r.file(), "components[" + std::to_string(i) + "]");
    const std::string type = c.get_string("type");
    const bool last = i + 1 == list.size();
    if (type == "decoder") {
      if (!last) c.fail("type", "the decoder must be the last component");
      ModelSpec m = read_decoder(c, true);
      m.name = r.get_string("name");
      m.encoders = std::move(encoders);
      validate_components(r, list, m);
      return m;
    }
    if (type != "vit" && type != "projector")
      c.fail("type", "unknown component type '" + type + "' (expected vit, projector or decoder)");
    encoders.push_back(
        read_encoder(c, type == "vit" ? ComponentType::vit : ComponentType::projector));
  }
  r.fail("components", "no decoder component (it must be the last one)");
}

ModelSpec read_model(const YamlReader& r) {
  return r.has("components") ? read_components(r) : read_decoder(r, false);
}

}  // namespace

ModelSpec load_model(const std::string& path) { return parse_model_file(read_file(path), path); }

ModelSpec parse_model_file(const std::string& text, const std::string& file) {
  if (is_hf_config(text, file))  // a Hugging Face config.json
    return parse_hf_config(text, file);
  return parse_model(text, file);
}

ModelSpec parse_model(const std::string& text, const std::string& file) {
  return read_model(YamlReader(parse_yaml_text(text, file), file));
}

}  // namespace planner::io
