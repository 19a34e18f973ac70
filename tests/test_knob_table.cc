// The knob table: one definition per plan knob, read by the plan string, the options, the search
// and the reports; one name table per enum.
#include <doctest/doctest.h>

#include "planner/estimate.h"
#include "planner/framework.h"
#include "planner/io/cluster_io.h"
#include "planner/io/model_io.h"
#include "planner/knob_table.h"
#include "planner/names.h"

using namespace planner;

namespace {
template <typename E>
void round_trips() {
  for (const EnumName<E>& n : names_of(E{})) {
    CHECK(std::string(name_of(n.value)) == n.name);
    CHECK(named<E>(n.name) == n.value);
  }
  CHECK(!named<E>("no-such-name"));
}
}  // namespace

TEST_CASE("every enum has one name table, read both ways") {
  round_trips<Dtype>();
  round_trips<AttentionKernel>();
  round_trips<Recompute>();
  round_trips<Schedule>();
  // The word index is the enum value, as the knob table encodes it.
  for (size_t i = 0; i < kScheduleNames.size(); ++i) CHECK(int(kScheduleNames[i].value) == int(i));
  for (size_t i = 0; i < kRecomputeNames.size(); ++i)
    CHECK(int(kRecomputeNames[i].value) == int(i));
  CHECK(names_list<Recompute>() == "none, selective, full or selective_moe");
}

TEST_CASE("every knob round-trips through the plan string, in the table's order") {
  int row = 0;
  for (const KnobDef& k : knob_table()) {
    CAPTURE(k.name);
    CHECK(int(k.id) == row++);  // rows in KnobId order
    CHECK(find_knob(k.name) == &k);
    std::vector<int> values;
    if (k.is_integer())
      values = {k.lo == 0 ? 1 : k.lo, k.hi};  // dp=0 and gbs=0 mean "derive"
    else
      for (size_t i = 0; i < k.words.size(); ++i) values.push_back(int(i));
    if (k.optional) values.push_back(kUnset);
    for (int v : values) {
      Plan p = parse_plan("tp=2,pp=2,dp=2,gbs=64", "--plan");
      if (k.id == KnobId::schedule && v == int(Schedule::interleaved)) p.vpp = 2;
      if (k.id == KnobId::vpp && v > 1) p.schedule = Schedule::interleaved;
      if (k.id == KnobId::offload_pct) p.offload_optimizer = OffloadDevice::cpu;
      k.set(p, v);
      const Plan q = parse_plan(to_plan_string(p), "--plan");
      // split=even is the default split, order=tp-cp-dp-pp the default order, loss_fusion=none
      // the default loss, fp8_recipe=delayed the default recipe, no offload and offload_pct=100 the
      // default offload, each left out of the string as unset.
      const bool even = (k.id == KnobId::split && v == int(PipelineSplit::even)) ||
                        (k.id == KnobId::order && v == int(RankOrder::tp_cp_dp_pp)) ||
                        ((k.id == KnobId::zeropp || k.id == KnobId::grad_reduce_bf16) && v == 0) ||
                        ((k.id == KnobId::ep || k.id == KnobId::etp) && v == 1) ||
                        (k.id == KnobId::dispatcher && v == int(Dispatcher::alltoall)) ||
                        (k.id == KnobId::loss_fusion && v == int(LossFusion::none)) ||
                        (k.id == KnobId::fp8_recipe && v == int(Fp8Recipe::delayed)) ||
                        ((k.id == KnobId::offload_optimizer || k.id == KnobId::offload_params) &&
                         v == int(OffloadDevice::none)) ||
                        (k.id == KnobId::offload_pct && v == 100) ||
                        (k.id == KnobId::grad_compression && v == int(GradCompression::none));
      CHECK(k.get(q) == (even ? kUnset : v));
      CHECK(to_plan_string(q) == to_plan_string(p));
    }
  }
  // An unset execution knob stays out of the string (strings from before it existed still
  // parse to the same plan); a set one is written after the others.
  Plan p = parse_plan("tp=8,pp=1,dp=8,gbs=64", "--plan");
  CHECK(to_plan_string(p).find("overlap") == std::string::npos);
  p.tp_comm_overlap = false;
  CHECK(to_plan_string(p) ==
        "tp=8,pp=1,dp=8,cp=1,vpp=1,mbs=1,gbs=64,zero=0,recompute=none,sp=0,schedule=1f1b,"
        "dtype=bf16,tp_comm_overlap=0");
  CHECK_THROWS_WITH(parse_plan("tp_comm_overlap=2", "--plan"),
                    "--plan: key 'tp_comm_overlap': unknown value '2' (expected one of 0, 1)");
  CHECK_THROWS_WITH(parse_plan("tp_comm_overlp=1", "--plan"),
                    "--plan: key 'tp_comm_overlp': unknown plan knob, did you mean "
                    "'tp_comm_overlap'?");
}

TEST_CASE("the execution knobs override the profile's stack, within what the framework offers") {
  const ModelSpec m = io::load_model(PLANNER_SOURCE_DIR "/configs/models/llama3-70b.yaml");
  const ClusterProfile h100 =
      io::load_cluster(PLANNER_SOURCE_DIR "/hw_profiles/dgx-h100-80gb.yaml");
  Plan p = parse_plan("tp=8,pp=4,dp=2,mbs=1,gbs=128,zero=1,recompute=selective,sp=1", "--plan");
  EstimateOptions o;
  o.framework = Framework::megatron;
  const Estimate base = estimate(m, h100, p, o);  // the profile overlaps TP communication
  p.tp_comm_overlap = false;
  const Estimate off = estimate(m, h100, p, o);
  REQUIRE(base.ok());
  REQUIRE(off.ok());
  CHECK(off.breakdown.tp_comm_s > 2 * base.breakdown.tp_comm_s);
  CHECK(off.iteration_time_s > base.iteration_time_s);
  p.tp_comm_overlap.reset();
  p.overlap_grad_reduce = false;
  const Estimate no_ddp_overlap = estimate(m, h100, p, o);
  CHECK(no_ddp_overlap.breakdown.dp_comm_s > base.breakdown.dp_comm_s);
  // Asking for what the framework lacks is refused with its reason.
  p.overlap_grad_reduce.reset();
  p.tp_comm_overlap = true;
  CHECK(why_not(Framework::deepspeed, m, h100, p) ==
        "Megatron-DeepSpeed has no --tp-comm-overlap; use tp_comm_overlap=0 or --framework "
        "megatron");
  p.sp = false;
  CHECK(why_not(Framework::megatron, m, h100, p) ==
        "Megatron-LM's --tp-comm-overlap requires --sequence-parallel (sp=1, tp > 1); use "
        "tp_comm_overlap=0");
}
