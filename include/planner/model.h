#pragma once
#include <optional>
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
  /// YaRN's attention factor, by which its rotary embedding scales the sines and cosines
  /// (Megatron-Core yarn_rotary_pos_embedding.py _yarn_get_concentration_factor at d98e8a64:
  /// 0.1 mscale ln(factor) + 1 over the same with mscale_all_dim, or with mscale 1 alone where
  /// either is unset; gpt-oss 1.35, DeepSeek-V3 1). 1: plain RoPE, or none.
  double rope_mscale = 1;
};
/// The largest attention factor a model may give (YaRN's 0.1 mscale ln(factor) + 1 is 1.35 for
/// gpt-oss's factor 32); bounds the HF reader's ratio and the YAML key.
inline constexpr double kMaxRopeMscale = 1e7;

/// A mixture-of-experts decoder's MLPs (Fedus et al. 2022; Jiang et al. 2024, Mixtral): in an MoE
/// layer a router (a hidden x experts linear) sends each token to `topk` of `experts` routed
/// expert MLPs of `expert_ffn`, beside shared experts every token goes through. `experts` 0: a
/// dense model. Which layers are MoE: after the first `first_dense` (DeepSeek-V3's
/// first_k_dense_replace, kept dense with the model's `ffn`), every `every`th, counting from 1
/// (Llama 4 Maverick's interleave_moe_layer_step 2: layers 2, 4, 6 ... are MoE).
/// The largest routing imbalance accepted (every token copy on one rank of 64).
inline constexpr double kMaxRoutingImbalance = 64;

struct MoeSpec {
  int experts = 0;
  int topk = 0;
  int expert_ffn = 0;        ///< one routed expert's MLP width (moe_intermediate_size)
  int shared_ffn = 0;        ///< all shared experts' MLP width together; 0: none
  int first_dense = 0;       ///< leading dense layers
  int every = 1;             ///< of the other layers, every Nth is MoE
  bool expert_bias = false;  ///< biases on the experts' linears (gpt-oss)
  bool router_bias = false;  ///< a per-expert bias on the router (gpt-oss; DeepSeek-V3's score
                             ///< correction bias)
  /// The experts' gated-unit inputs clamped at this value before the activation (gpt-oss's
  /// swiglu_limit, Megatron-Core's activation_func_clamp_value); 0: none.
  double activation_clamp = 0;
  /// Routing imbalance: the token copies the busiest expert rank receives over the mean (1:
  /// balanced, as the published benchmarks force it). The model file's `routing_imbalance` or
  /// --routing-imbalance; the busiest rank's experts and dispatch set the layer's time.
  double imbalance = 1;
  /// The router as DeepSeek-V3 configures it (launch files only, no cost term): sigmoid scores
  /// (scoring_func), experts in `router_groups` groups of which a token reaches `group_topk`
  /// (n_group, topk_group), the routed weights scaled by `topk_scale` (routed_scaling_factor).
  bool sigmoid_router = false;
  int router_groups = 0, group_topk = 0;
  double topk_scale = 1;
  bool any() const { return experts > 1; }
};

/// Multi-head latent attention (DeepSeek-V2, Liu et al. 2024, section 2.1): queries through a
/// q_lora_rank down- and up-projection (0: one hidden x heads x qk-width projection), keys and
/// values through a kv_lora_rank compression shared by all heads, with qk_rope_head_dim of
/// decoupled RoPE keys; each head's query and key are qk_nope + qk_rope wide, its value v wide.
struct MlaSpec {
  int q_lora_rank = 0, kv_lora_rank = 0, qk_nope_head_dim = 0, qk_rope_head_dim = 0, v_head_dim = 0;
  bool any() const { return kv_lora_rank > 0; }
  int qk_head_dim() const { return qk_nope_head_dim + qk_rope_head_dim; }
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
  /// A mixture-of-experts layer's experts (experts > 1); the MLP of `ffn` is then its shared
  /// experts' (moe.shared_ffn, none when 0). Its first_dense and every are the model's.
  MoeSpec moe;
  /// Multi-head latent attention in place of the Q, K and V projections (DeepSeek-V3).
  MlaSpec mla;
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

/// YaRN's rotary scaling as a Hugging Face config's rope_scaling gives it (type yarn), for the
/// launch files (Megatron-LM's --position-embedding-type yarn and its --rotary-scaling-factor,
/// --yarn-* and --mscale* flags); the cost reads only LayerArch::rope_mscale, derived from it.
struct YarnSpec {
  double factor = 0;  ///< 0: no YaRN
  int original_positions = 0;
  double beta_fast = 32, beta_slow = 1;
  std::optional<double> mscale, mscale_all_dim;
  bool round_to_int = true;  ///< the correction range rounded to integers (HF: not `truncate`)
  bool any() const { return factor > 0; }
  /// The attention factor (LayerArch::rope_mscale), as Megatron-Core's
  /// _yarn_get_concentration_factor computes it.
  double attention_factor() const;
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
  YarnSpec yarn;  ///< YaRN's rotary scaling (launch files; the cost reads arch.rope_mscale)
  std::vector<Component> encoders;  ///< vision encoder, projector: before the decoder, in order
  MoeSpec moe;                      ///< routed experts; none for a dense model
  MlaSpec mla;                      ///< latent attention in place of Q, K and V projections
  bool attention_sinks = false;     ///< a learned sink logit per head and layer (gpt-oss)
  /// Multi-token prediction (DeepSeek-V3, Liu et al. 2024, section 2.2; Megatron-Core's
  /// MultiTokenPredictionLayer at d98e8a64): `mtp_layers` sequential modules after the decoder,
  /// each the norms of the previous depth's hidden state and of the next token's embedding, their
  /// 2h -> h projection (eh_proj), one transformer layer of the last decoder layer's kind, a final
  /// norm, and the shared output head with its own loss. Megatron-Core places them on the last
  /// pipeline stage. Hugging Face's num_nextn_predict_layers, the model file's `mtp_layers`, or
  /// --mtp-layers (0: trained without).
  int mtp_layers = 0;

  int head_dim() const { return arch.head_dim > 0 ? arch.head_dim : hidden / heads; }
  /// The decoder's dense layer as a LayerShape.
  LayerShape decoder_shape() const;
  /// The decoder's mixture-of-experts layer (a model with experts).
  LayerShape moe_shape() const;
  /// Whether decoder layer `i` (from 0) is a mixture-of-experts layer.
  bool is_moe_layer(int i) const {
    return moe.any() && i >= moe.first_dense && (i + 1) % moe.every == 0;
  }
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
  /// Every parameter of the main model: layers, embedding, position embedding, untied output,
  /// final norm (the published counts; the MTP modules are mtp_params()).
  double total_params() const;
  /// The transformer layer of an MTP module: the last decoder layer's shape (an MoE layer when the
  /// last decoder layer is one, as Megatron-LM's FLOP count has it).
  LayerShape mtp_shape() const;
  /// The MTP modules' own parameters: per module its layer, eh_proj (2h x h) and three norms; the
  /// embedding and the output head are the main model's, shared (DeepSeek-V3 section 2.2).
  double mtp_params() const;
  /// Whether a pipelined model keeps the word embedding on its last stage too (tied to the output
  /// layer, or for the MTP modules to embed the next tokens), its gradient all-reduced with the
  /// first stage's (Megatron-LM finalize_model_grads, _get_shared_word_embedding_weight).
  bool embedding_on_last_stage(int pp) const {
    return pp > 1 && (tied_embeddings || mtp_layers > 0);
  }
  /// Layers whose MLP is a mixture of experts (MoeSpec); 0 for a dense model.
  int moe_layers() const;
  /// The parameters one token's forward pass reads: every one but the routed experts it is not
  /// sent to (all `topk` of them counted, the input embedding's table whole, as Mistral and Qwen
  /// count "active" parameters). Equals total_params() for a dense model.
  double active_params() const;
};

/// Throws InputError (naming `file`) when sizes are not positive, heads % kv_heads != 0, or
/// hidden % heads != 0 without an explicit head_dim.
void validate_model(const ModelSpec& m, const std::string& file);

/// Model FLOPs of one iteration (Megatron-LM `num_floating_point_operations`, the
/// `megatron-mfu` formula in shared/data/README.md): no recomputation counted. A model with
/// experts or latent attention takes the formula's current form (Megatron-LM d98e8a64
/// megatron/training/training.py, as Megatron-Bridge's flop_utils.py): routed experts at topk
/// each, shared experts, MLA's projections, and core attention halved for the causal mask.
/// Llama-style models (SwiGLU or GQA): RoPE, RMSNorm, no linear biases, and no dropout; the
/// launch files set Megatron-LM's attention and hidden dropout (0.1 by default) to 0 for them.
bool llama_style(const ModelSpec& m);
double model_flops_per_iteration(const ModelSpec& m, double global_batch);

/// Narayanan et al. 2021 Eq. 3 (`megatron-hfu`): 96 B s L h^2 (1 + s/6h + V/16Lh).
double megatron_hfu_flops_per_iteration(const ModelSpec& m, double global_batch);

}  // namespace planner
