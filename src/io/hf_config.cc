#include "planner/io/hf_config.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <nlohmann/json.hpp>

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
  none,       ///< every layer global (Llama; a Llama config's sliding_window is ignored)
  all,        ///< every layer local when sliding_window is set (Mistral)
  alternate,  ///< every other layer local, from the first (Gemma 2)
  above_max,  ///< with use_sliding_window, the layers from max_window_layers on (Qwen2, Qwen3)
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
};

/// Keys that count a mixture-of-experts layer's experts (Mixtral and gpt-oss num_local_experts,
/// Qwen2/3-MoE num_experts, DeepSeek n_routed_experts); Llama 4 nests them in text_config.
const char* const kExpertKeys[] = {"num_local_experts", "num_experts", "n_routed_experts"};

std::string known_list() {
  std::string out;
  for (const Architecture& a : kArchitectures)
    out += (out.empty() ? "" : ", ") + std::string(a.name);
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

/// A mixture-of-experts config is refused, whatever its architecture: the block model is dense.
void refuse_experts(const Config& c) {
  auto check = [&](const json& obj, const std::string& prefix) {
    for (const char* k : kExpertKeys)
      if (obj.contains(k) && obj[k].is_number() && obj[k].get<double>() > 1)
        c.fail(prefix + k,
               "a mixture-of-experts model (" + json_excerpt(obj[k]) +
                   " experts); planner plans dense models only until MoE support lands",
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
  } else if (arch.window == Window::above_max) {
    if (!c.get_bool("use_sliding_window", false)) return;
    const std::string k = c.find({"max_window_layers"});
    const int from = k.empty() ? 0 : c.int_at(k);
    local = double(std::max(0, m.layers - from)) / m.layers;
  }
  m.arch.sliding_window = c.int_at("sliding_window");
  m.arch.local_layers = local;
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
}

ModelSpec read_config(const Config& c) {
  refuse_experts(c);
  const Architecture& arch = architecture_of(c);
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

ModelSpec parse_hf_config(const std::string& text, const std::string& file) {
  const json doc = parse_json(text, file);
  if (!doc.is_object())
    throw InputError(file, 1, "", "expected a JSON object (a Hugging Face config.json)");
  return read_config(Config(doc, text, file));
}

}  // namespace planner::io
