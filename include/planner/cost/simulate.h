#pragma once
#include <string>
#include <vector>

#include "planner/plan.h"

namespace planner {

/// One model chunk (virtual stage) on one micro-batch. Virtual stage vs = chunk * pp + stage.
struct ChunkCost {
  double fwd_s = 0;
  double bwd_s = 0;         ///< input and weight gradients together
  double bwd_weight_s = 0;  ///< the weight-gradient part, which ZB-H1 schedules separately
  /// Under Megatron-Core's combined 1F1B (SimInput::combined_1f1b) fwd_s and bwd_s are a pass's
  /// cost beside its partner; a pass with none (a warm-up forward, a cool-down backward) takes
  /// this much longer: the EP communication the partner's compute would have hidden.
  double unpaired_s = 0;
};

struct SimInput {
  Schedule schedule = Schedule::one_f_one_b;
  int pp = 1;
  int vpp = 1;
  int microbatches = 1;
  std::vector<ChunkCost> chunks;  ///< pp * vpp entries, indexed by virtual stage
  double p2p_s = 0;               ///< one activation (or gradient) transfer between stages
  bool record_trace = false;
  /// Interleaved: every forward first when microbatches == pp (SoftwareStack's
  /// interleaved_all_warmup, the 2021 stacks' Megatron-LM).
  bool all_warmup_when_m_is_p = false;
  /// Blocking send and receive (SoftwareStack::deepspeed_pipeline_engine): a transfer starts when
  /// the receiver reaches the task that needs it, and the sender is held for one transfer time
  /// right after the task that produced it. DeepSpeed's TrainSchedule sends at the next step,
  /// after that step's receive, so the sender may wait for a busy receiver there; against a
  /// replay of TrainSchedule this placement is short by at most about two transfer times an
  /// iteration (p = 4, m = 8: 48 against 49 time units; p = 8, m = 32: 143.8 against 144.2).
  bool p2p_blocking = false;
  /// Megatron-Core's combined 1F1B (--overlap-moe-expert-parallel-comm): every steady-state
  /// forward runs beside the backward scheduled with it, and one more forward is warmed up so
  /// that the two are independent (schedules.py get_pp_rank_microbatches at core_v0.15.0,
  /// "we schedule one extra micro-batch forward step before the 1f1b stages"; without a pipeline
  /// combined_1f1b_schedule_for_no_pipelining runs the first forward and the last backward
  /// alone). The warm-up forwards and the cool-down backwards run alone (ChunkCost::unpaired_s).
  bool combined_1f1b = false;
};

/// Forwards stage s runs before its first backward (the same number of backwards run after its
/// last forward): under 1F1B and ZB-H1 min(p - 1 - s, m), interleaved min(2 (p - s - 1) +
/// (v - 1) p, m v), each one more under combined 1F1B (not ZB-H1's), GPipe m.
int warmup_forwards(const SimInput& in, int s);

/// Whether `in` pairs its passes (combined 1F1B on 1F1B or the interleaved schedule; check_plan
/// refuses the overlap with the others).
bool pairs_passes(const SimInput& in);

/// Combined 1F1B: what stage s's passes without a partner add over an iteration, its warm-up
/// forwards and as many cool-down backwards, each the unpaired_s of the chunk the schedule runs
/// it on (`chunks` indexed by virtual stage, as SimInput::chunks); 0 when `in` pairs nothing.
double unpaired_passes_s(const SimInput& in, const std::vector<ChunkCost>& chunks, int s);

enum class TaskKind : unsigned char {
  forward,
  backward,
  backward_input,
  backward_weight,
  transfer
};
const char* to_string(TaskKind k);

struct SimTask {
  int stage, chunk, microbatch;
  TaskKind kind;
  double start_s, end_s;
};

struct SimResult {
  std::string error;           ///< non-empty when the schedule cannot run or complete
  double makespan_s = 0;       ///< last task's end
  std::vector<double> end_s;   ///< per stage, when its last task ends
  std::vector<double> busy_s;  ///< per stage
  std::vector<double> idle_s;  ///< per stage: makespan - busy
  /// Per stage, the part of idle_s spent waiting for an input that its neighbour had finished
  /// but that was still being transferred; the rest of idle_s is waiting for work (the bubble).
  std::vector<double> transfer_wait_s;
  std::vector<int> peak_in_flight;  ///< per stage: micro-batches whose activations it holds at once
  std::vector<SimTask> trace;       ///< every task, when record_trace
  bool ok() const { return error.empty(); }
};

/// Storage simulate() reuses from call to call when the caller owns one (the search's workspace).
struct SimScratch {
  struct Op {
    TaskKind kind;
    bool alone = false;  ///< combined 1F1B: a pass without a partner (ChunkCost::unpaired_s)
    int chunk = 0, mb = 0;
  };
  std::vector<Op> ops;            ///< every stage's order, back to back
  std::vector<size_t> begin;      ///< per stage, into ops (size pp + 1)
  std::vector<double> finish[3];  ///< per kind (F, B, W), [vs * m + mb]; -1 = not yet run
};

/// Event-driven simulation of one iteration's pipeline: every stage runs its schedule's task order
/// (GPipe, 1F1B, Megatron's interleaved 1F1B, ZB-H1), each task starting when its stage is free
/// and its input has arrived (the neighbour's task plus one transfer). A schedule that cannot
/// start (too few micro-batches) or complete is refused with a message, never a hang.
SimResult simulate(const SimInput& in, SimScratch* scratch = nullptr);

}  // namespace planner
