#pragma once
#include <string>

namespace planner {

/// A decoder-only transformer, as the model YAML describes it. All sizes are counts.
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

  int head_dim() const { return hidden / heads; }
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
