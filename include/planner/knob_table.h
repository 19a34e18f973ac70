#pragma once
/// One definition per plan knob: its name, its values, its help text and its column. The plan
/// string (parse_plan, to_plan_string), the command line's knob options (suggest's value sets,
/// --vary, completion), the search's enumeration of the inner knobs and every report's columns
/// read this table. A new knob with no cost term is a new row here and nothing else.
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "planner/plan.h"

namespace planner {

/// Rows of the table, in the order of the plan string.
enum class KnobId {
  tp,
  pp,
  dp,
  cp,
  ep,
  etp,
  vpp,
  mbs,
  gbs,
  zero,
  recompute,
  recompute_layers,
  sp,
  schedule,
  split,
  order,
  dtype,
  attn,
  overlap_grad_reduce,
  overlap_param_gather,
  tp_comm_overlap,
  ep_comm_overlap,
  dispatcher,
  capacity_factor,
  pad_to_capacity,
  cuda_graphs,
  grad_compression,
  zeropp,
  grad_reduce_bf16,
  loss_fusion,
  fp8_recipe,
  offload_activations,
  offload_optimizer,  // the offload knobs last: the search's odometer turns them fastest
  offload_params,
  offload_pct,
  count_
};
inline constexpr int kNumKnobs = static_cast<int>(KnobId::count_);

/// A knob's value as an integer: the number itself, or the index of its word (enum order).
/// kUnset: an optional knob left to the execution stack's default.
inline constexpr int kUnset = -1;

struct KnobDef {
  KnobId id;
  const char* name;  ///< the plan-string key; the command-line option is --name, '_' as '-'
  const char* help;
  std::vector<std::string> words;  ///< the values by name (empty: an integer from lo to hi)
  int lo = 0, hi = 0;              ///< integers: the accepted range
  bool optional = false;           ///< may be left unset (the stack's default)
  /// A search range: suggest's --name takes a set of values (list, range or words).
  bool searched = false;
  const char* column = "";  ///< the text table's header; "" where a search holds it constant
  int width = 0;            ///< the text table's width
  int (*get)(const Plan&) = nullptr;
  void (*set)(Plan&, int) = nullptr;

  bool is_integer() const { return words.empty(); }
  /// "8", "selective", "1f1b"; "" for kUnset.
  std::string text(int value) const;
  /// The option name: "--tp", "--tp-comm-overlap".
  std::string option() const;
};

const std::array<KnobDef, kNumKnobs>& knob_table();
inline const KnobDef& knob(KnobId id) { return knob_table()[static_cast<int>(id)]; }
/// The knob named `name` (plan-string key), or nullptr.
const KnobDef* find_knob(std::string_view name);
/// Every plan-string key, in the table's order (for "did you mean").
std::vector<std::string> knob_names();

/// Parses one value of `k`; InputError naming `origin` and the key on a bad or out-of-range one.
int parse_knob_value(const KnobDef& k, const std::string& text, const std::string& origin);

}  // namespace planner
