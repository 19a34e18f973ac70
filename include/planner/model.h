#pragma once
#include <string>
#include <vector>

namespace planner {

/// What a decoder layer has beyond its sizes, as Hugging Face configs describe it. Each default
/// is the plain pre-norm transformer with RMS/scale-only norms and no biases that the YAML models
/// describe, so a model that sets none of these is costed as before.
struct LayerArch {
  int head_dim = 0;             ///< width of one head; 0: hidden / heads (`head_dim` key)
  bool qkv_bias = false;        ///< biases on Q, K and V (Qwen2; Llama's attention_bias)
  bool proj_bias = false;       ///< a bias on the attention output (attention_bias, GPT-2, NeoX)
  bool mlp_bias = false;        ///< biases on the MLP's linears (mlp_bias, GPT-2, NeoX)
  bool norm_bias = false;       ///< LayerNorm with a bias beside its scale (GPT-2, NeoX)
  bool sandwich_norms = false;  ///< a norm after attention and after the MLP too (Gemma 2)
  bool qk_norm = false;         ///< an RMSNorm of head_dim on each query and key head (Qwen3)
  bool gelu_gate = false;  ///< the gated MLP's gate is a GELU (GeGLU, Gemma 2), not SiLU: same cost
  int sliding_window = 0;  ///< keys a local layer's query sees; 0: every layer global
  double local_layers = 0;  ///< share of the layers that are local (Mistral 1, Gemma 2 0.5)
  /// The local layers' pattern when it repeats: every Nth layer (counting from 1) global, the
  /// others local (Gemma 2: 2, layers 1, 3, 5 ... local). 0: every layer local when local_layers
  /// is 1, else a pattern that does not repeat (Qwen2's layers from max_window_layers on).
  int global_every = 0;
};

/// One block as the cost model sees it: a transformer layer, or an MLP (a projector).
struct LayerShape {
  int hidden = 0, heads = 0, kv_heads = 0, ffn = 0;
  bool swiglu = false;
  bool attention = true;  ///< false: an MLP in_features -> ffn -> hidden (a projector)
  int in_features = 0;
  int seq = 0;         ///< tokens per sequence that attention spans
  int sequences = 1;   ///< sequences per training sample (image tiles for a ViT)
  bool causal = true;  ///< causal decoder: context parallelism and causal skipping apply
  LayerArch arch;      ///< head width, biases, extra norms, sliding window (decoder layers)
  int head_dim() const { return arch.head_dim > 0 ? arch.head_dim : hidden / heads; }
  /// Width of all query heads, heads x head_dim (the hidden size unless head_dim says otherwise).
  double q_width() const { return double(heads) * head_dim(); }
  double tokens_per_sample() const { return double(seq) * sequences; }
  /// Weights and biases: QKV, projection, MLP, norms; or the projector's two matrices.
  double params() const;
  /// Model FLOPs of forward + backward for one sample (6 x params x tokens, plus attention).
  double flops_per_sample() const;
};

enum class ComponentType { decoder, vit, projector };
const char* to_string(ComponentType t);

/// An encoder stage of a multimodal model (vision transformer, projector), run before the decoder.
struct Component {
  ComponentType type = ComponentType::vit;
  std::string name;
  int layers = 0;
  LayerShape shape;
};

/// RoPE's base when a model does not name one: Su et al. 2021 (RoFormer) Eq. 15's 10000, the
/// default rope_theta of Hugging Face's LlamaConfig and of Megatron-LM's --rotary-base.
inline constexpr double kDefaultRopeTheta = 10000;

/// A decoder-only transformer, as the model YAML describes it, optionally preceded by encoder
/// components (multimodal models). All sizes are counts.
struct ModelSpec {
  std::string name;
  int layers = 0;
  int hidden = 0;
  int heads = 0;
  int kv_heads = 0;  ///< query groups (GQA); equals heads without GQA
  int ffn = 0;       ///< MLP width; with swiglu each of the three matrices is ffn wide
  bool swiglu = false;
  int vocab = 0;
  int seq_len = 0;
  bool tied_embeddings = true;
  int learned_positions = 0;  ///< rows of a learned position embedding (GPT-2); 0: rotary
  LayerArch arch;             ///< the decoder layers' head width, biases, norms, window
  /// RoPE base (Hugging Face rope_theta; Llama 3: 500000). Launch files only: no cost term.
  double rope_theta = kDefaultRopeTheta;
  std::vector<Component> encoders;  ///< vision encoder, projector: before the decoder, in order

  int head_dim() const { return arch.head_dim > 0 ? arch.head_dim : hidden / heads; }
  /// The decoder's layer as a LayerShape.
  LayerShape decoder_shape() const;
  /// Pipeline-partitionable blocks: every encoder layer, then every decoder layer.
  int blocks() const;
  /// Encoder parameters (zero for a plain decoder).
  double encoder_params() const;
  /// Weights of one transformer layer: QKV, output projection, MLP, norms, and the biases
  /// `arch` gives it.
  double layer_params() const;
  /// Input embedding (vocab x hidden).
  double embedding_params() const;
  /// A learned position embedding (learned_positions x hidden), replicated across TP ranks.
  double position_params() const;
  /// The final norm: its scale, and its bias with LayerNorm.
  double final_norm_params() const;
  /// Output projection when untied; zero when tied to the input embedding.
  double output_params() const;
  /// Every parameter: layers, embedding, position embedding, untied output, final norm.
  double total_params() const;
};

/// Throws InputError (naming `file`) when sizes are not positive, heads % kv_heads != 0, or
/// hidden % heads != 0 without an explicit head_dim.
void validate_model(const ModelSpec& m, const std::string& file);

/// Model FLOPs of one iteration (Megatron-LM `num_floating_point_operations`, the
/// `megatron-mfu` formula in shared/data/README.md): no recomputation counted.
double model_flops_per_iteration(const ModelSpec& m, double global_batch);

/// Narayanan et al. 2021 Eq. 3 (`megatron-hfu`): 96 B s L h^2 (1 + s/6h + V/16Lh).
double megatron_hfu_flops_per_iteration(const ModelSpec& m, double global_batch);

}  // namespace planner
