#include "planner/io/hf_config.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <optional>
#include <string_view>

#include "planner/error.h"
#include "planner/format.h"
#include "planner/io/file.h"
#include "planner/io/json.h"
#include "planner/limits.h"

namespace planner::io {
namespace {

using nlohmann::json;

/// How an architecture's config spells its sizes and what its layers look like.
enum class Family { llama, gpt2, neox };

/// Which layers attend through a sliding window of `sliding_window` keys.
enum class Window {
  none,         ///< every layer global (Llama; a Llama config's sliding_window is ignored)
  all,          ///< every layer local when sliding_window is set (Mistral)
  alternate,    ///< every other layer local, from the first (Gemma 2)
  above_max,    ///< with use_sliding_window, the layers from max_window_layers on (Qwen2, Qwen3)
  layer_types,  ///< the layers `layer_types` names "sliding_attention" (gpt-oss)
};

/// How an architecture's config describes its experts (transformers v4.55 configuration_*.py and
/// modeling_*.py of each).
enum class Experts {
  none,         ///< a dense model: expert keys are refused (refuse_experts)
  mixtral,      ///< num_local_experts of intermediate_size, every layer (Mixtral)
  qwen3_moe,    ///< num_experts of moe_intermediate_size, every decoder_sparse_step-th layer
  gpt_oss,      ///< num_local_experts of intermediate_size with biases, a router bias
  deepseek_v3,  ///< n_routed_experts and n_shared_experts of moe_intermediate_size after
                ///< first_k_dense_replace dense layers, latent attention
  llama4,       ///< num_local_experts and one shared expert of intermediate_size, every
                ///< interleave_moe_layer_step-th layer; dense layers intermediate_size_mlp
};

/// Whether a config key turns some linears' biases on: `attention_bias` (Q, K, V and the output
/// projection) and `mlp_bias` (the MLP's linears).
enum class Bias {
  never,      ///< the modeling code builds them without bias, whatever the key says
  always,     ///< the modeling code always has them (GPT-2)
  key_false,  ///< the key decides, false when absent
  key_true,   ///< the key decides, true when absent (GPT-NeoX's attention_bias)
};

struct Architecture {
  const char* name;
  const char* model_type;  ///< the config's model_type, used when `architectures` is absent
  Family family;
  Bias attention_bias, mlp_bias;
  bool qkv_bias;        ///< Q, K and V always carry biases, the output projection none (Qwen2)
  bool sandwich_norms;  ///< a norm after attention and after the MLP too (Gemma 2)
  bool qk_norm;         ///< per-head RMSNorm of queries and keys (Qwen3)
  bool tied_default;    ///< tie_word_embeddings when the config omits it
  Window window;
  int default_head_dim;  ///< head_dim when the config omits it; 0: hidden / heads
  Experts experts = Experts::none;
};

/// Sources: the transformers library's configuration_*.py and modeling_*.py of each model type
/// (v4.45 for Gemma 2, v4.51 for Qwen3): which linears carry biases, which norms a layer has,
/// which layers slide, what an omitted tie_word_embeddings or head_dim means (Gemma2Config's
/// head_dim defaults to 256, Qwen3Config's to 128).
const Architecture kArchitectures[] = {
    {"LlamaForCausalLM", "llama", Family::llama, Bias::key_false, Bias::key_false, false, false,
     false, false, Window::none, 0},
    {"MistralForCausalLM", "mistral", Family::llama, Bias::never, Bias::never, false, false, false,
     false, Window::all, 0},
    {"Qwen2ForCausalLM", "qwen2", Family::llama, Bias::never, Bias::never, true, false, false,
     false, Window::above_max, 0},
    {"Qwen3ForCausalLM", "qwen3", Family::llama, Bias::key_false, Bias::never, false, false, true,
     false, Window::above_max, 128},
    {"Gemma2ForCausalLM", "gemma2", Family::llama, Bias::key_false, Bias::never, false, true, false,
     true, Window::alternate, 256},
    {"GPT2LMHeadModel", "gpt2", Family::gpt2, Bias::always, Bias::always, false, false, false, true,
     Window::none, 0},
    {"GPTNeoXForCausalLM", "gpt_neox", Family::neox, Bias::key_true, Bias::always, false, false,
     false, false, Window::none, 0},
    {"MixtralForCausalLM", "mixtral", Family::llama, Bias::never, Bias::never, false, false, false,
     false, Window::all, 0, Experts::mixtral},
    {"Qwen3MoeForCausalLM", "qwen3_moe", Family::llama, Bias::key_false, Bias::never, false, false,
     true, false, Window::above_max, 128, Experts::qwen3_moe},
    {"GptOssForCausalLM", "gpt_oss", Family::llama, Bias::key_false, Bias::never, false, false,
     false, false, Window::layer_types, 0, Experts::gpt_oss},
    {"DeepseekV3ForCausalLM", "deepseek_v3", Family::llama, Bias::never, Bias::never, false, false,
     false, false, Window::none, 0, Experts::deepseek_v3},
    // Llama4ForConditionalGeneration's text_config (model_type llama4_text): the language model.
    // Its query and key norm (use_qk_norm) is an L2 norm without weights: nothing to count.
    {"Llama4ForCausalLM", "llama4_text", Family::llama, Bias::key_false, Bias::never, false, false,
     false, false, Window::none, 0, Experts::llama4},
};

/// Architectures whose configs the planner recognises but whose layers it does not model: what a
/// refusal says is missing (the configs in shared/data/hf name them).
struct Unmodelled {
  const char* name;
  const char* missing;
};
const Unmodelled kUnmodelled[] = {
    {"NemotronHForCausalLM",
     "its Mamba-2 state-space layers (the 'M' of hybrid_override_pattern) are not modelled; the "
     "planner costs attention, MLP and expert layers only"},
    {"DeepseekV4ForCausalLM",
     "its attention (compress_ratios with the index_* top-k selection, o_lora_rank) and its "
     "hyper-connections (hc_mult) are not modelled"},
};

const char* const kMoeArchitectures =
    "MixtralForCausalLM, Qwen3MoeForCausalLM, GptOssForCausalLM, DeepseekV3ForCausalLM and "
    "Llama4ForConditionalGeneration configs";

/// A multimodal wrapper whose `text_config` is the language model read in its place.
const char* const kTextConfigWrappers[] = {"Llama4ForConditionalGeneration"};

/// Keys that count a mixture-of-experts layer's experts (Mixtral and gpt-oss num_local_experts,
/// Qwen2/3-MoE num_experts, DeepSeek n_routed_experts); Llama 4 nests them in text_config.
const char* const kExpertKeys[] = {"num_local_experts", "num_experts", "n_routed_experts"};

/// A value non_finite_as_objects() wrote in place of a bare NaN or Infinity.
bool is_non_finite(const json& v) {
  return v.is_object() && v.size() == 1 && v.contains("non-finite");
}

/// Python's json module, which transformers writes configs with, spells a non-finite float as a
/// bare NaN, Infinity or -Infinity, which JSON has not (Nemotron-3-Super's `time_step_limit: [0.0,
/// Infinity]`). Each such value (after a key's colon or inside an array, followed by white space,
/// a comma or a closing bracket) becomes the object {"non-finite": "Infinity"} on the same line:
/// the keys the planner does not read stay ignored, and one it reads is refused as of the wrong
/// type whatever type it wants ("expected a number, got {"non-finite":"Infinity"}"; the readers of
/// an object, rope_scaling and text_config, ask is_non_finite() too). Elsewhere
/// (a key, the whole document, "NaN1") the word is left for the JSON parser to refuse.
std::string non_finite_as_objects(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  std::string open;  // the brackets open at this point, outside strings
  char before = 0;   // the last character outside a string that is not white space
  for (size_t i = 0; i < text.size(); ++i) {
    const char ch = text[i];
    if (ch == '"') {  // copy the string whole, escapes included
      const size_t start = i;
      for (++i; i < text.size() && text[i] != '"'; ++i)
        if (text[i] == '\\') ++i;
      out.append(text, start, std::min(i, text.size() - 1) - start + 1);
      before = '"';
      continue;
    }
    const bool value =
        before == ':' || before == '[' || (before == ',' && !open.empty() && open.back() == '[');
    bool replaced = false;
    for (const char* word : {"NaN", "Infinity", "-Infinity"}) {
      if (!value) break;
      const size_t n = std::char_traits<char>::length(word);
      const char next = i + n < text.size() ? text[i + n] : ' ';
      if (text.compare(i, n, word) == 0 &&
          std::string_view(" \t\r\n,]}").find(next) != std::string_view::npos) {
        out += "{\"non-finite\": \"" + std::string(word) + "\"}";
        i += n - 1;
        before = '}';
        replaced = true;
        break;
      }
    }
    if (replaced) continue;
    if (ch == '[' || ch == '{') open += ch;
    if ((ch == ']' || ch == '}') && !open.empty()) open.pop_back();
    out += ch;
    if (!std::isspace(static_cast<unsigned char>(ch))) before = ch;
  }
  return out;
}

std::string known_list() {
  std::string out;
  for (const Architecture& a : kArchitectures)
    out += (out.empty() ? "" : ", ") + std::string(a.name);
  for (const char* wrapper : kTextConfigWrappers) out += ", " + std::string(wrapper);
  return out;
}

/// The configs are flat objects; the first `"key":` in the text is the key's line.
int line_of(const std::string& text, const std::string& key) {
  const std::string quoted = "\"" + key + "\"";
  for (size_t at = text.find(quoted); at != std::string::npos; at = text.find(quoted, at + 1)) {
    size_t next = at + quoted.size();
    while (next < text.size() && std::isspace(static_cast<unsigned char>(text[next]))) ++next;
    if (next < text.size() && text[next] == ':')
      return 1 + static_cast<int>(std::count(text.begin(), text.begin() + at, '\n'));
  }
  return 0;
}

/// Typed access to the config's keys, failing with file, line and key.
class Config {
 public:
  Config(const json& doc, const std::string& text, std::string file)
      : doc_(doc), text_(text), file_(std::move(file)) {}

  /// `line_key`: the key whose line to name, when `key` is a path ("text_config.num_experts").
  [[noreturn]] void fail(const std::string& key, const std::string& what,
                         const std::string& line_key = "") const {
    const std::string& at = line_key.empty() ? key : line_key;
    throw InputError(file_, at.empty() ? 0 : line_of(text_, at), key, what);
  }
  /// The first of `keys` present and not null, or "" when none is.
  std::string find(const std::vector<std::string>& keys) const {
    for (const std::string& k : keys)
      if (doc_.contains(k) && !doc_[k].is_null()) return k;
    return "";
  }
  int get_int(const std::vector<std::string>& keys) const {
    const std::string k = find(keys);
    if (k.empty()) {
      std::string also;
      for (size_t i = 1; i < keys.size(); ++i) also += (i > 1 ? "' or '" : " (or '") + keys[i];
      fail(keys.front(), "missing required key" + (also.empty() ? "" : also + "')"));
    }
    return int_at(k);
  }
  int int_at(const std::string& k) const {
    const json& v = doc_[k];
    if (!v.is_number_integer()) fail(k, "expected an integer, got " + json_excerpt(v));
    const long long x = v.get<long long>();
    if (x <= 0 || x > 1LL << 30) fail(k, "must be a positive integer, got " + json_excerpt(v));
    return static_cast<int>(x);
  }
  /// A count that may be 0 (first_k_dense_replace, n_shared_experts); `fallback` when absent.
  int count_or(const std::string& k, int fallback) const {
    if (find({k}).empty()) return fallback;
    const json& v = doc_[k];
    if (!v.is_number_integer() || v.get<long long>() < 0 || v.get<long long>() > 1LL << 30)
      fail(k, "expected a count (an integer from 0), got " + json_excerpt(v));
    return static_cast<int>(v.get<long long>());
  }
  bool get_bool(const std::string& k, bool fallback) const {
    if (find({k}).empty()) return fallback;
    if (!doc_[k].is_boolean()) fail(k, "expected true or false, got " + json_excerpt(doc_[k]));
    return doc_[k].get<bool>();
  }
  double get_number(const std::string& k, double fallback) const {
    if (find({k}).empty()) return fallback;
    if (!doc_[k].is_number()) fail(k, "expected a number, got " + json_excerpt(doc_[k]));
    return doc_[k].get<double>();
  }
  std::string get_string(const std::string& k) const {
    if (find({k}).empty()) return "";
    if (!doc_[k].is_string()) fail(k, "expected a string, got " + json_excerpt(doc_[k]));
    return doc_[k].get<std::string>();
  }
  const json& doc() const { return doc_; }
  const std::string& file() const { return file_; }

 private:
  const json& doc_;
  const std::string& text_;
  std::string file_;
};

const Architecture& architecture_of(const Config& c) {
  if (!c.find({"architectures"}).empty()) {
    const json& list = c.doc()["architectures"];
    if (!list.is_array() || list.empty() || !list[0].is_string())
      c.fail("architectures", "expected a list of architecture names, got " + json_excerpt(list));
    const std::string name = list[0].get<std::string>();
    for (const Architecture& a : kArchitectures)
      if (name == a.name) return a;
    for (const Unmodelled& u : kUnmodelled)
      if (name == u.name)
        c.fail("architectures", "architecture '" + name + "' is not supported: " + u.missing +
                                    " (supported: " + known_list() + ")");
    c.fail("architectures", "unknown architecture '" + name + "' (known: " + known_list() + ")");
  }
  const std::string type = c.get_string("model_type");
  if (type.empty()) c.fail("architectures", "missing required key (known: " + known_list() + ")");
  for (const Architecture& a : kArchitectures)
    if (type == a.model_type) return a;
  c.fail("model_type",
         "unknown model type '" + type + "' (known architectures: " + known_list() + ")");
}

std::string model_name(const Config& c) {
  const std::string named = c.get_string("_name_or_path");
  if (!named.empty()) return named;
  const std::filesystem::path p(c.file());
  const std::string stem = p.stem().string();
  if (stem == "config" && p.has_parent_path() && !p.parent_path().filename().empty())
    return p.parent_path().filename().string();  // models/Llama-2-7b-hf/config.json
  return stem;
}

/// validate_model() names the planner's key; re-raise it with the config's key and line.
void validate(const Config& c, const ModelSpec& m) {
  try {
    validate_model(m, c.file());
  } catch (const InputError& e) {
    const std::string& k = e.key();
    const std::string hf_key =
        k == "layers"              ? c.find({"num_hidden_layers", "n_layer"})
        : k == "hidden"            ? c.find({"hidden_size", "n_embd"})
        : k == "heads"             ? c.find({"num_attention_heads", "n_head"})
        : k == "kv_heads"          ? c.find({"num_key_value_heads"})
        : k == "ffn"               ? c.find({"intermediate_size", "n_inner"})
        : k == "vocab"             ? c.find({"vocab_size"})
        : k == "head_dim"          ? c.find({"head_dim"})
        : k == "learned_positions" ? c.find({"max_position_embeddings", "n_positions", "n_ctx"})
        : k == "name"              ? c.find({"_name_or_path"})
        : k == "experts" ? c.find({"num_local_experts", "num_experts", "n_routed_experts"})
        : k == "experts_per_token"  ? c.find({"num_experts_per_tok", "experts_per_token"})
        : k == "expert_ffn"         ? c.find({"moe_intermediate_size", "intermediate_size"})
        : k == "shared_expert_ffn"  ? c.find({"n_shared_experts", "intermediate_size"})
        : k == "first_dense_layers" ? c.find({"first_k_dense_replace"})
        : k == "moe_every"          ? c.find({"decoder_sparse_step", "interleave_moe_layer_step"})
        : k == "mtp_layers"         ? c.find({"num_nextn_predict_layers"})
                                    : k;
    c.fail(hf_key.empty() ? k : hf_key, e.message());
  }
}

/// GPT-2's default MLP width, 4 x n_embd, within the model bound (it is computed before any).
int gpt2_default_ffn(const Config& c, int hidden) {
  const long long ffn = 4LL * hidden;
  if (ffn > limits::kFfn)
    c.fail(c.find({"n_embd", "hidden_size"}),
           "is implausibly large: the default n_inner, 4 x " + std::to_string(hidden) + " = " +
               std::to_string(ffn) + ", exceeds " + std::to_string(limits::kFfn));
  return static_cast<int>(ffn);
}

/// Expert keys in a dense architecture's config (a relabelled Mixtral) are refused: its layers
/// would be costed as dense ones.
void refuse_experts(const Config& c) {
  auto check = [&](const json& obj, const std::string& prefix) {
    for (const char* k : kExpertKeys)
      if (obj.contains(k) && obj[k].is_number() && obj[k].get<double>() > 1)
        c.fail(prefix + k,
               "a mixture-of-experts model (" + json_excerpt(obj[k]) +
                   " experts) under a dense architecture's name; experts are read from " +
                   kMoeArchitectures,
               k);
  };
  check(c.doc(), "");
  if (c.doc().contains("text_config") && c.doc()["text_config"].is_object())
    check(c.doc()["text_config"], "text_config.");
}

bool has_bias(const Config& c, Bias b, const std::string& key) {
  if (b == Bias::never || b == Bias::always) return b == Bias::always;
  return c.get_bool(key, b == Bias::key_true);
}

/// The share of the layers that attend through `sliding_window` keys (null or absent: none).
void read_window(const Config& c, const Architecture& arch, ModelSpec& m) {
  if (arch.window == Window::none || c.find({"sliding_window"}).empty()) return;
  double local = 1.0;
  if (arch.window == Window::alternate) {  // layers 0, 2, 4 ... slide
    local = double((m.layers + 1) / 2) / m.layers;
    m.arch.global_every = 2;
  } else if (arch.window == Window::layer_types) {
    const json& types = c.doc().contains("layer_types") ? c.doc()["layer_types"] : json();
    if (!types.is_array() || types.size() != static_cast<size_t>(m.layers))
      c.fail("layer_types", "expected a list of " + std::to_string(m.layers) +
                                " layer types (one per layer), got " + json_excerpt(types));
    int sliding = 0;
    for (const json& t : types) sliding += t == "sliding_attention";
    local = double(sliding) / m.layers;
    // The pattern Megatron-LM's --window-attn-skip-freq writes, when the list has it: every Nth
    // layer (counting from 1) global, the others local (gpt-oss: N = 2, as Gemma 2). The first
    // global layer fixes N; one pass checks the rest.
    if (sliding > 0 && sliding < m.layers) {
      int n = 1;
      while (types[static_cast<size_t>(n - 1)] == "sliding_attention") ++n;
      bool repeats = n > 1;
      for (int i = 0; i < m.layers && repeats; ++i)
        repeats = (types[static_cast<size_t>(i)] == "sliding_attention") == ((i + 1) % n != 0);
      if (repeats) m.arch.global_every = n;
    }
  } else if (arch.window == Window::above_max) {
    if (!c.get_bool("use_sliding_window", false)) return;
    const std::string k = c.find({"max_window_layers"});
    const int from = k.empty() ? 0 : c.int_at(k);
    local = double(std::max(0, m.layers - from)) / m.layers;
  }
  m.arch.sliding_window = c.int_at("sliding_window");
  m.arch.local_layers = local;
}

/// YaRN's attention factor from `rope_scaling` (rope_type or, in older configs, type "yarn"),
/// as Megatron-Core computes it (LayerArch::rope_mscale); other scalings leave it 1.
void read_rope_scaling(const Config& c, ModelSpec& m) {
  const std::string k = c.find({"rope_scaling"});
  if (k.empty()) return;
  const json& rs = c.doc()[k];
  if (!rs.is_object() || is_non_finite(rs))
    c.fail(k, "expected an object, got " + json_excerpt(rs));
  auto field = [&](const char* name) -> const json* {
    const auto it = rs.find(name);
    return it == rs.end() || it->is_null() ? nullptr : &*it;
  };
  const json* type = field("rope_type") ? field("rope_type") : field("type");
  if (type && !type->is_string())
    c.fail(k, "rope_type: expected a string, got " + json_excerpt(*type));
  if (!type || type->get<std::string>() != "yarn") return;
  auto number = [&](const char* name) -> std::optional<double> {
    const json* v = field(name);
    if (!v) return std::nullopt;
    if (!v->is_number() || !std::isfinite(v->get<double>()) || v->get<double>() < 0 ||
        v->get<double>() > kMaxYarnValue)
      c.fail(k, fmt("{}: expected a number from 0 to {:g}, got {}", name, kMaxYarnValue,
                    json_excerpt(*v)));
    return v->get<double>();
  };
  YarnSpec& y = m.yarn;
  y.factor = number("factor").value_or(1);
  y.mscale = number("mscale"), y.mscale_all_dim = number("mscale_all_dim");
  m.arch.rope_mscale = y.attention_factor();
  if (const json* v = field("original_max_position_embeddings")) {
    if (!v->is_number_integer() || v->get<long long>() <= 0 || v->get<long long>() > 1LL << 30)
      c.fail(k, "original_max_position_embeddings: expected a positive integer, got " +
                    json_excerpt(*v));
    y.original_positions = static_cast<int>(v->get<long long>());
  }
  y.beta_fast = number("beta_fast").value_or(y.beta_fast);
  y.beta_slow = number("beta_slow").value_or(y.beta_slow);
  if (const json* v = field("truncate")) {  // transformers' YaRN: false keeps the range unrounded
    if (!v->is_boolean()) c.fail(k, "truncate: expected true or false, got " + json_excerpt(*v));
    y.round_to_int = v->get<bool>();
  }
}

/// head_dim, biases, norms and window: what a layer has beyond its sizes.
void read_layer_arch(const Config& c, const Architecture& arch, ModelSpec& m) {
  const std::string hd = c.find({"head_dim"});
  m.arch.head_dim = !hd.empty() ? c.int_at(hd) : arch.default_head_dim;
  const bool attn_bias = has_bias(c, arch.attention_bias, "attention_bias");
  m.arch.qkv_bias = arch.qkv_bias || attn_bias;
  m.arch.proj_bias = attn_bias;
  m.arch.mlp_bias = has_bias(c, arch.mlp_bias, "mlp_bias");
  m.arch.norm_bias = arch.family != Family::llama;  // LayerNorm; the Llama family's RMSNorm
  m.arch.sandwich_norms = arch.sandwich_norms;
  m.arch.qk_norm = arch.qk_norm;
  read_window(c, arch, m);
  if (arch.family != Family::gpt2) read_rope_scaling(c, m);  // GPT-2 has no rotary embedding
}

/// The experts and latent attention of an MoE architecture (Experts), from its config's keys.
void read_experts(const Config& c, const Architecture& arch, ModelSpec& m) {
  MoeSpec& e = m.moe;
  const auto optional_int = [&](const char* key, int fallback) {
    return c.find({key}).empty() ? fallback : c.int_at(key);
  };
  switch (arch.experts) {
    case Experts::none:
      return;
    case Experts::mixtral:
      e.experts = c.get_int({"num_local_experts"});
      e.expert_ffn = m.ffn;
      break;
    case Experts::qwen3_moe:
      e.experts = c.get_int({"num_experts"});
      e.expert_ffn = c.get_int({"moe_intermediate_size"});
      e.every = optional_int("decoder_sparse_step", 1);
      if (c.doc().contains("mlp_only_layers") && !c.doc()["mlp_only_layers"].empty())
        c.fail("mlp_only_layers", "dense layers among the MoE layers are not supported, got " +
                                      json_excerpt(c.doc()["mlp_only_layers"]));
      break;
    case Experts::gpt_oss:
      e.experts = c.get_int({"num_local_experts"});
      e.expert_ffn = m.ffn;
      e.expert_bias = e.router_bias = true;  // GptOssExperts' and GptOssTopKRouter's biases
      m.attention_sinks = true;              // GptOssAttention.sinks: one logit per head
      e.activation_clamp = c.get_number("swiglu_limit", 0.0);  // GptOssExperts' clamp (limit)
      if (!(e.activation_clamp >= 0 && e.activation_clamp < 1e6))
        c.fail("swiglu_limit", "must be a number from 0 (no clamp)");
      break;
    case Experts::deepseek_v3:
      e.experts = c.get_int({"n_routed_experts"});
      e.expert_ffn = c.get_int({"moe_intermediate_size"});
      e.shared_ffn = c.count_or("n_shared_experts", 0) * e.expert_ffn;
      e.first_dense = c.count_or("first_k_dense_replace", 0);
      e.router_bias = c.get_string("topk_method") == "noaux_tc";  // e_score_correction_bias
      e.sigmoid_router = c.get_string("scoring_func") == "sigmoid";
      e.router_groups = c.count_or("n_group", 0);
      e.group_topk = c.count_or("topk_group", 0);
      e.topk_scale = c.get_number("routed_scaling_factor", 1.0);
      if (!(e.topk_scale > 0 && e.topk_scale < 1e6))
        c.fail("routed_scaling_factor", "must be a positive number");
      if (optional_int("moe_layer_freq", 1) != 1)
        c.fail("moe_layer_freq", "only 1 (every layer after first_k_dense_replace) is supported");
      {
        const std::string q = c.find({"q_lora_rank"});
        m.mla.q_lora_rank = q.empty() ? 0 : c.int_at(q);
      }
      m.mla.kv_lora_rank = c.get_int({"kv_lora_rank"});
      m.mla.qk_nope_head_dim = c.get_int({"qk_nope_head_dim"});
      m.mla.qk_rope_head_dim = c.get_int({"qk_rope_head_dim"});
      m.mla.v_head_dim = c.get_int({"v_head_dim"});
      break;
    case Experts::llama4:
      e.experts = c.get_int({"num_local_experts"});
      e.expert_ffn = m.ffn;
      e.shared_ffn = m.ffn;  // Llama4TextMoe.shared_expert
      e.every = optional_int("interleave_moe_layer_step", 1);
      m.ffn = c.get_int({"intermediate_size_mlp"});  // the dense layers' MLP
      break;
  }
  e.topk = c.get_int({"num_experts_per_tok", "experts_per_token"});
}

/// `forced`: the architecture a wrapper's text_config has (it names none itself).
ModelSpec read_config(const Config& c, const Architecture* forced = nullptr) {
  const Architecture& arch = forced ? *forced : architecture_of(c);
  if (arch.experts == Experts::none) refuse_experts(c);
  const bool gpt2 = arch.family == Family::gpt2;
  ModelSpec m;
  m.name = model_name(c);
  m.layers = c.get_int({"num_hidden_layers", "n_layer"});
  m.hidden = c.get_int({"hidden_size", "n_embd"});
  m.heads = c.get_int({"num_attention_heads", "n_head"});
  const std::string kv = c.find({"num_key_value_heads"});
  m.kv_heads = kv.empty() ? m.heads : c.int_at(kv);
  const std::string inner = c.find({"intermediate_size", "n_inner"});
  m.ffn = !inner.empty() ? c.int_at(inner)
          : gpt2         ? gpt2_default_ffn(c, m.hidden)
                         : c.get_int({"intermediate_size"});
  m.vocab = c.get_int({"vocab_size"});
  const int positions = c.get_int({"max_position_embeddings", "n_positions", "n_ctx"});
  m.seq_len = std::min(positions, kHfMaxDefaultSeqLen);
  if (positions > kHfMaxDefaultSeqLen)
    spdlog::info(
        "{}: seq_len {} (max_position_embeddings {} is a context limit, not a training "
        "length; --seq-len sets another)",
        c.file(), m.seq_len, positions);
  // Gated MLP, act(x W_gate) * (x W_up) then W_down: SwiGLU, or GeGLU for Gemma 2 (same cost).
  m.swiglu = arch.family == Family::llama;
  const std::string act = c.get_string(gpt2 ? "activation_function" : "hidden_act");
  // Gemma 2's gate is named by hidden_activation (gelu_pytorch_tanh); hidden_act is its fallback.
  const std::string gate = c.get_string("hidden_activation");
  m.arch.gelu_gate = m.swiglu && (gate.empty() ? act : gate).rfind("gelu", 0) == 0;
  m.tied_embeddings = c.get_bool("tie_word_embeddings", arch.tied_default);
  m.learned_positions = gpt2 ? positions : 0;  // GPT-2's wpe; the others are rotary
  read_layer_arch(c, arch, m);
  read_experts(c, arch, m);
  // DeepSeek-V3's multi-token prediction modules (its config's num_nextn_predict_layers).
  m.mtp_layers = c.count_or("num_nextn_predict_layers", 0);
  // LlamaConfig, MistralConfig, Qwen2/3Config and Gemma2Config name RoPE's base rope_theta
  // (default 10000).
  if (arch.family == Family::llama) m.rope_theta = c.get_number("rope_theta", kDefaultRopeTheta);
  validate(c, m);
  spdlog::debug(
      "{}: {} as {} layers, hidden {}, {} heads ({} kv) of {}, ffn {}{}, vocab {}, seq {}, {}{}{}",
      c.file(), arch.name, m.layers, m.hidden, m.heads, m.kv_heads, m.head_dim(), m.ffn,
      m.swiglu ? " gated" : "", m.vocab, m.seq_len, m.tied_embeddings ? "tied" : "untied",
      m.arch.qkv_bias ? ", QKV bias" : "",
      m.arch.sliding_window > 0 ? fmt(", window {} on {:.0f}% of layers", m.arch.sliding_window,
                                      100 * m.arch.local_layers)
                                : std::string());
  return m;
}

}  // namespace

const std::vector<std::string>& hf_architectures() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const Architecture& a : kArchitectures) v.push_back(a.name);
    return v;
  }();
  return names;
}

bool is_hf_config(const std::string& text, const std::string& file) {
  const std::string ext = std::filesystem::path(file).extension().string();
  if (ext == ".json" || ext == ".JSON") return true;
  const size_t first = text.find_first_not_of(" \t\r\n");
  if (first == std::string::npos || text[first] != '{') return false;
  return is_json(text);  // `{name: x}` is a YAML flow mapping, not JSON
}

ModelSpec load_hf_config(const std::string& path) { return parse_hf_config(read_file(path), path); }

ModelSpec parse_hf_config(const std::string& json_text, const std::string& file) {
  const std::string text = non_finite_as_objects(json_text);
  const json doc = parse_json(text, file);
  if (!doc.is_object())
    throw InputError(file, 1, "", "expected a JSON object (a Hugging Face config.json)");
  const Config c(doc, text, file);
  if (c.find({"architectures"}).empty() || !doc["architectures"].is_array() ||
      doc["architectures"].empty() || !doc["architectures"][0].is_string())
    return read_config(c);
  const std::string name = doc["architectures"][0].get<std::string>();
  for (const char* wrapper : kTextConfigWrappers)
    if (name == wrapper) {
      if (!doc.contains("text_config") || !doc["text_config"].is_object() ||
          is_non_finite(doc["text_config"]))
        c.fail("text_config", name + " needs its language model's text_config object");
      const Architecture* text_arch = nullptr;
      for (const Architecture& a : kArchitectures)
        if (a.experts == Experts::llama4) text_arch = &a;
      ModelSpec m = read_config(Config(doc["text_config"], text, file), text_arch);
      m.name = model_name(c);
      return m;
    }
  return read_config(c);
}

}  // namespace planner::io
