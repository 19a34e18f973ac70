#pragma once
// Shared pieces of the emitters (private to src/emit): headers, the NCCL environment block, bash
// argument arrays, and the checks every framework makes.
#include <string>
#include <vector>

#include "planner/emit.h"
#include "planner/format.h"

namespace planner::emit::detail {

/// One command-line argument; an empty value is a store_true flag.
struct Arg {
  std::string flag, value, comment;
};

/// Arguments under a comment line. With no arguments, only the comment (and notes) are written.
struct ArgGroup {
  std::string title;
  std::vector<Arg> args;
  std::vector<std::string> notes;  ///< extra comment lines after the title
};

/// One torchrun per node: the world's size check (tp*pp*dp*cp GPUs on NNODES x GPUS_PER_NODE,
/// NODE_RANK, MASTER_ADDR, MASTER_PORT from the environment, `default_port` unless set) and the
/// TORCHRUN_ARGS array, with `extra` after the rendezvous arguments.
std::string torchrun_world(const Plan& p, const ClusterProfile& c, int default_port,
                           const std::vector<Arg>& extra = {});

/// `NAME=(` ... `)`: one argument per line, each group under its "# title" comment. Values are
/// written as given (callers quote shell expansions themselves).
std::string shell_array(const std::string& name, const std::vector<ArgGroup>& groups);

/// An exported variable with the comment lines that justify it.
struct EnvVar {
  std::string name, value;
  std::vector<std::string> comment;
  bool user_may_override = false;  ///< export NAME=${NAME:-value}
};

/// The NCCL and PyTorch variables every launcher sets (NCCL_DEBUG, async error handling), and
/// NCCL_ALGO=allreduce:tree where the estimate's gradient all-reduce runs on NCCL's tree
/// (Estimate::dp_allreduce).
std::vector<EnvVar> nccl_env(const ClusterProfile& c, const Estimate& e);
/// The commented environment block: interface/HCA placeholders, affinity note, then `vars`.
std::string env_block(const ClusterProfile& c, const std::vector<EnvVar>& vars);

/// The comment lines every emitted file opens with ("# " prefixed, newline terminated): plan,
/// prediction, planner version, inputs and their SHA-256.
std::string header(const EmitRequest& r, const std::string& framework_name);

/// Nodes and GPUs per node the plan runs on (a plan smaller than a node runs on one node).
int nodes_of(const Plan& p, const ClusterProfile& c);
int gpus_per_node_of(const Plan& p, const ClusterProfile& c);

/// Megatron's padded vocabulary: a multiple of make-vocab-size-divisible-by x tp
/// (megatron/training/tokenizer/tokenizer.py, _vocab_size_with_padding).
inline constexpr int kVocabDivisibleBy = 128;  ///< Megatron-LM's default for the flag
int padded_vocab(int vocab, int tp);

/// The model's rope_theta in digits for an integer flag (`flag` names it in the refusal, e.g.
/// "Megatron-LM's --rotary-base at commit d98e8a64"); a fractional base is refused (--plan).
std::string integer_rope_theta(const ModelSpec& m, const std::string& flag);

/// A framework's flags, at its recorded commit, for what a layer has beyond its sizes (head_dim,
/// biases, extra norms, a sliding window); nullptr where it has none, and the file says so.
struct LayerArchFlags {
  std::string framework;              ///< named in the notes: "Megatron-LM at 307dcf37"
  const char* kv_channels = nullptr;  ///< --kv-channels (the head width)
  const char* qkv_bias = nullptr;     ///< --add-qkv-bias
  const char* qk_norm = nullptr;      ///< --qk-layernorm
  /// The sliding-window flags (Megatron-LM's --window-size LEFT,RIGHT and
  /// --window-attn-skip-freq N: every Nth layer global); null where the framework has none.
  const char* window = nullptr;
  const char* window_skip = nullptr;
};

/// Adds to `g` the flags for m.arch that `f` has, and a note for each thing the framework cannot
/// express. `biases_disabled`: the group already has --disable-bias-linear (a Llama-style model).
void add_layer_arch(ArgGroup& g, const ModelSpec& m, bool biases_disabled, const LayerArchFlags& f);

/// Gradient clipping (global L2 norm) in both frameworks: Megatron's default --clip-grad.
inline constexpr double kGradClip = 1.0;

/// The optimizer and learning-rate schedule both frameworks' files start from: not part of the
/// plan, placeholders to set for a run (the model files carry no training recipe). AdamW with
/// GPT-3's betas, epsilon and weight decay (Brown et al. 2020, Appendix B: beta1 0.9, beta2 0.95,
/// eps 1e-8, weight decay 0.1; Llama 2 and 3 use the same betas and decay); peak and final
/// learning rate, warm-up and iterations are short-test values, overridable from the environment
/// in the scripts (LR, MIN_LR, WARMUP_ITERS, TRAIN_ITERS).
inline constexpr double kAdamBeta1 = 0.9;
inline constexpr double kAdamBeta2 = 0.95;
inline constexpr double kAdamEps = 1e-8;
inline constexpr double kWeightDecay = 0.1;
inline constexpr double kLearningRate = 1e-4;
inline constexpr double kMinLearningRate = 1e-5;
inline constexpr int kWarmupIters = 10;
inline constexpr int kTrainIters = 100;

/// The training-schedule arguments that are not part of the plan (iterations, learning rate,
/// logging, evaluation); set from the environment with defaults.
ArgGroup schedule_args();
/// Appends --save/--load/--save-interval when CHECKPOINT_DIR is set (bash, after TRAINING_ARGS).
std::string checkpoint_lines();

/// Slurm: comment lines leaving --time, --partition and --account to sbatch's input environment
/// variables, with commented ##SBATCH placeholders (they belong right after the #SBATCH lines).
std::string site_lines();
/// SRUN_ARGS: pyxis/enroot's --container-image and --container-mounts when CONTAINER_IMAGE is set,
/// mounting MEGATRON_LM_DIR (configs/frameworks/pyxis-srun-args.txt).
std::string container_lines();

/// Throws InputError naming option --plan.
[[noreturn]] void refuse(const std::string& why);

}  // namespace planner::emit::detail
