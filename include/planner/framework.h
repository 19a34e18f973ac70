#pragma once
/// The training framework a plan is for, as an input of the planner: which plans it can express
/// (why_not) and the execution stack it runs (execution_stack). One definition, read by the
/// search (pruning), estimate, compare, regress, the report and emit.
#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "planner/cluster.h"
#include "planner/model.h"
#include "planner/plan.h"

namespace planner {

enum class Framework { megatron, deepspeed };
inline constexpr std::array kFrameworks = {Framework::megatron, Framework::deepspeed};

/// What the planner knows of one framework at the version its launch files target.
struct FrameworkInfo {
  Framework id;
  const char* name;     ///< the option value: "megatron", "deepspeed"
  const char* title;    ///< "Megatron-LM", "DeepSpeed"
  const char* version;  ///< the pinned commit the refusals and flags were read from
  /// Layers may be split unevenly over the pipeline stages (neither pinned version can).
  bool uneven_stages;
  /// Transformer Engine's TP-communication overlap (--tp-comm-overlap) exists.
  bool tp_comm_overlap;
  /// ZeRO-1/2's parameter all-gather can run beside the next forward (--overlap-param-gather);
  /// DeepSpeed gathers inside the optimizer step.
  bool param_gather_overlap;
};

inline constexpr std::array<FrameworkInfo, 2> kFrameworkInfo = {{
    {Framework::megatron, "megatron", "Megatron-LM", "307dcf37", false, true, true},
    {Framework::deepspeed, "deepspeed", "DeepSpeed", "f1feb887", false, false, false},
}};
constexpr const FrameworkInfo& info(Framework f) { return kFrameworkInfo[static_cast<int>(f)]; }
const char* to_string(Framework f);
/// "megatron" or "deepspeed"; std::nullopt for anything else.
std::optional<Framework> framework_named(std::string_view name);
/// Likewise, throwing InputError naming `option` for anything else.
Framework parse_framework(const std::string& text, const std::string& option);

/// Why framework `f` cannot run `p` as planned (ZeRO stages, schedules, interleaving, context
/// parallelism, precision, whole nodes, batch arithmetic, layers per stage), or std::nullopt when
/// it can. The message is built only when `reason` is given; the search passes none.
bool refuses(Framework f, const ModelSpec& m, const ClusterProfile& c, const Plan& p,
             std::string* reason);
std::optional<std::string> why_not(Framework f, const ModelSpec& m, const ClusterProfile& c,
                                   const Plan& p);

/// The execution stack `f` runs on this hardware: the profile's default execution choices, less
/// what the framework lacks (DeepSpeed: TP-communication overlap and the parameter gather beside
/// the forward). `note`, when given, receives a line saying what changed ("" when nothing did).
SoftwareStack execution_stack(Framework f, const SoftwareStack& profile,
                              std::string* note = nullptr);

}  // namespace planner
