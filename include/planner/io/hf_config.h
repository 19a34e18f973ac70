#pragma once
/// Hugging Face `config.json` files as model descriptions (`--model path/to/config.json`).
#include <string>
#include <vector>

#include "planner/model.h"

namespace planner::io {

/// The `architectures` a config may name, in the order error messages list them.
const std::vector<std::string>& hf_architectures();

/// A config's max_position_embeddings is the longest context the model supports, not the length
/// it is usually trained at; seq_len takes it up to this many tokens (the longest pre-training
/// context of the supported families: Mistral 7B's 8,192) and --seq-len chooses another.
inline constexpr int kHfMaxDefaultSeqLen = 8192;
/// The largest YaRN factor or mscale a config may give (published configs: factor 16-40, mscale
/// 0.707-1): far beyond any, and keeps the attention factor finite.
inline constexpr double kMaxYarnValue = 1e6;

/// True when `text`, read from `file`, is a Hugging Face config: the name ends in ".json", or the
/// text is a JSON object (a YAML flow mapping that is not valid JSON stays YAML).
bool is_hf_config(const std::string& text, const std::string& file);

/// Reads a config.json; errors (unknown architecture, missing key, wrong type, sizes that do not
/// divide) throw InputError naming the file, the line of the key and the key.
ModelSpec load_hf_config(const std::string& path);

/// Parses config.json text; `file` names it in errors and, without `_name_or_path`, the model.
/// Mapping: num_hidden_layers|n_layer -> layers, hidden_size|n_embd -> hidden,
/// num_attention_heads|n_head -> heads, num_key_value_heads -> kv_heads (default heads),
/// intermediate_size|n_inner -> ffn (GPT-2 default 4 x hidden), vocab_size -> vocab,
/// max_position_embeddings|n_positions|n_ctx -> seq_len (at most kHfMaxDefaultSeqLen),
/// tie_word_embeddings -> tied_embeddings (default: tied for GPT-2 and Gemma 2, untied otherwise),
/// head_dim -> arch.head_dim (default hidden / heads; Gemma 2 256, Qwen3 128), attention_bias and
/// mlp_bias where the architecture reads them (Llama; attention_bias for Qwen3, Gemma 2, NeoX),
/// Qwen2's Q, K and V biases, GPT-2's and NeoX's biases and LayerNorms, GPT-2's learned position
/// embedding, Gemma 2's sandwich norms and Qwen3's per-head query and key norms, and
/// sliding_window: every layer (Mistral), every other (Gemma 2), the layers from
/// max_window_layers on with use_sliding_window (Qwen2, Qwen3).
/// Llama, Mistral, Qwen2, Qwen3 and Gemma 2 have gated MLPs (swiglu: three ffn-wide matrices)
/// whatever their hidden_act (a gelu hidden_activation or hidden_act sets arch.gelu_gate: GeGLU,
/// the same cost); GPT-2 and GPT-NeoX a plain two-matrix MLP.
/// Mixture-of-experts architectures (Mixtral, Qwen3-MoE, gpt-oss, DeepSeek-V3 with its latent
/// attention, Llama 4's text_config) fill ModelSpec::moe and ::mla. Expert keys in a dense
/// architecture's config (a relabelled Mixtral) are refused, never read as a dense model.
/// The text is JSON as Python's json module writes it: a bare NaN, Infinity or -Infinity value
/// (which strict JSON has not) reads as the object {"non-finite": "Infinity"}, ignored where the
/// key is not read and refused as of the wrong type where it is.
ModelSpec parse_hf_config(const std::string& json_text, const std::string& file);

}  // namespace planner::io
