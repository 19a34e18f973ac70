#pragma once
#include <string>
#include <vector>

namespace planner {

/// One block as the cost model sees it: a transformer layer, or an MLP (a projector).
struct LayerShape {
  int hidden = 0, heads = 0, kv_heads = 0, ffn = 0;
  bool swiglu = false;
  bool attention = true;  ///< false: an MLP in_features -> ffn -> hidden (a projector)
  int in_features = 0;
  int seq = 0;         ///< tokens per sequence that attention spans
  int sequences = 1;   ///< sequences per training sample (image tiles for a ViT)
  bool causal = true;  ///< causal decoder: context parallelism and causal skipping apply
  int head_dim() const { return hidden / heads; }
  double tokens_per_sample() const { return double(seq) * sequences; }
  /// Weights: QKV, projection, MLP, two norms; or the projector's two matrices.
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
  /// RoPE base (Hugging Face rope_theta; Llama 3: 500000). Launch files only: no cost term.
  double rope_theta = kDefaultRopeTheta;
  std::vector<Component> encoders;  ///< vision encoder, projector: before the decoder, in order

  int head_dim() const { return hidden / heads; }
  /// The decoder's layer as a LayerShape.
  LayerShape decoder_shape() const;
  /// Pipeline-partitionable blocks: every encoder layer, then every decoder layer.
  int blocks() const;
  /// Encoder parameters (zero for a plain decoder).
  double encoder_params() const;
  /// Weights of one transformer layer: QKV, output projection, MLP, two norms (no biases).
  double layer_params() const;
  /// Input embedding (vocab x hidden).
  double embedding_params() const;
  /// Output projection when untied; zero when tied to the input embedding.
  double output_params() const;
  /// Every parameter: layers, embedding, untied output, final norm.
  double total_params() const;
};

/// Throws InputError (naming `file`) when sizes are not positive or heads % kv_heads != 0.
void validate_model(const ModelSpec& m, const std::string& file);

/// Model FLOPs of one iteration (Megatron-LM `num_floating_point_operations`, the
/// `megatron-mfu` formula in shared/data/README.md): no recomputation counted.
double model_flops_per_iteration(const ModelSpec& m, double global_batch);

/// Narayanan et al. 2021 Eq. 3 (`megatron-hfu`): 96 B s L h^2 (1 + s/6h + V/16Lh).
double megatron_hfu_flops_per_iteration(const ModelSpec& m, double global_batch);

}  // namespace planner
