#pragma once
/// One name table per enum, read both ways: to_string(value) and named<E>(text). The plan
/// string, the command line, the profiles, the case files and every report use these and no
/// other spelling.
#include <array>
#include <optional>
#include <string>
#include <string_view>

#include "planner/plan.h"

namespace planner {

template <typename E>
struct EnumName {
  E value;
  const char* name;
};

inline constexpr std::array<EnumName<Dtype>, kNumDtypes> kDtypeNames = {{{Dtype::fp16, "fp16"},
                                                                         {Dtype::bf16, "bf16"},
                                                                         {Dtype::fp8, "fp8"},
                                                                         {Dtype::tf32, "tf32"},
                                                                         {Dtype::mxfp8, "mxfp8"}}};
inline constexpr std::array<EnumName<AttentionKernel>, 2> kAttentionNames = {
    {{AttentionKernel::flash, "flash"}, {AttentionKernel::unfused, "unfused"}}};
inline constexpr std::array<EnumName<Recompute>, 4> kRecomputeNames = {
    {{Recompute::none, "none"},
     {Recompute::selective, "selective"},
     {Recompute::full, "full"},
     {Recompute::selective_moe, "selective_moe"}}};
inline constexpr std::array<EnumName<Schedule>, 4> kScheduleNames = {
    {{Schedule::gpipe, "gpipe"},
     {Schedule::one_f_one_b, "1f1b"},
     {Schedule::interleaved, "interleaved"},
     {Schedule::zb_h1, "zb-h1"}}};

inline constexpr std::array<EnumName<PipelineSplit>, 4> kSplitNames = {
    {{PipelineSplit::even, "even"},
     {PipelineSplit::short_ends, "short_ends"},
     {PipelineSplit::embed_loss, "embed_loss"},
     {PipelineSplit::short_last, "short_last"}}};

inline constexpr std::array<EnumName<RankOrder>, 2> kRankOrderNames = {
    {{RankOrder::tp_cp_dp_pp, "tp-cp-dp-pp"}, {RankOrder::tp_pp_dp, "tp-pp-dp"}}};

inline constexpr std::array<EnumName<Dispatcher>, 4> kDispatcherNames = {
    {{Dispatcher::alltoall, "alltoall"},
     {Dispatcher::flex, "flex"},
     {Dispatcher::allgather, "allgather"},
     {Dispatcher::hybridep, "hybridep"}}};

inline constexpr std::array<EnumName<OffloadDevice>, 3> kOffloadNames = {
    {{OffloadDevice::none, "none"}, {OffloadDevice::cpu, "cpu"}, {OffloadDevice::nvme, "nvme"}}};

inline constexpr std::array<EnumName<GradCompression>, 4> kCompressionNames = {
    {{GradCompression::none, "none"},
     {GradCompression::onebit_adam, "onebit_adam"},
     {GradCompression::zero_one_adam, "zero_one_adam"},
     {GradCompression::onebit_lamb, "onebit_lamb"}}};

inline constexpr std::array<EnumName<LossFusion>, 3> kLossFusionNames = {
    {{LossFusion::none, "none"}, {LossFusion::native, "native"}, {LossFusion::te, "te"}}};

inline constexpr std::array<EnumName<Fp8Recipe>, 2> kFp8RecipeNames = {
    {{Fp8Recipe::delayed, "delayed"}, {Fp8Recipe::tensorwise, "tensorwise"}}};

constexpr const auto& names_of(Dtype) { return kDtypeNames; }
constexpr const auto& names_of(Fp8Recipe) { return kFp8RecipeNames; }
constexpr const auto& names_of(LossFusion) { return kLossFusionNames; }
constexpr const auto& names_of(Dispatcher) { return kDispatcherNames; }
constexpr const auto& names_of(GradCompression) { return kCompressionNames; }
constexpr const auto& names_of(OffloadDevice) { return kOffloadNames; }
constexpr const auto& names_of(PipelineSplit) { return kSplitNames; }
constexpr const auto& names_of(RankOrder) { return kRankOrderNames; }
constexpr const auto& names_of(AttentionKernel) { return kAttentionNames; }
constexpr const auto& names_of(Recompute) { return kRecomputeNames; }
constexpr const auto& names_of(Schedule) { return kScheduleNames; }

/// The value's name; every value of these enums is in its table (tested).
template <typename E>
constexpr const char* name_of(E value) {
  for (const EnumName<E>& n : names_of(E{}))
    if (n.value == value) return n.name;
  return "?";
}

/// The value named `text`, or std::nullopt.
template <typename E>
constexpr std::optional<E> named(std::string_view text) {
  for (const EnumName<E>& n : names_of(E{}))
    if (text == n.name) return n.value;
  return std::nullopt;
}

/// "fp16, bf16, fp8 or tf32": the names for a message.
template <typename E>
std::string names_list(const char* last_sep = " or ") {
  std::string out;
  const auto& table = names_of(E{});
  for (size_t i = 0; i < table.size(); ++i)
    out += std::string(i == 0 ? "" : i + 1 == table.size() ? last_sep : ", ") + table[i].name;
  return out;
}

}  // namespace planner
