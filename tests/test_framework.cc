// The framework as an input: one refusal function that the search prunes with and emit checks
// with, one execution stack per framework, and the results of several frameworks side by side.
#include <doctest/doctest.h>

#include <cmath>

#include "fixtures.h"
#include "planner/cost/communication.h"
#include "planner/cost/data_parallel.h"
#include "planner/framework.h"
#include "planner/io/cluster_io.h"
#include "planner/io/model_io.h"
#include "planner/search.h"

using namespace planner;

namespace {
const ClusterProfile& h100() { return fixtures::cluster("dgx-h100-80gb"); }
const ModelSpec& llama70() { return fixtures::model("llama3-70b"); }
Plan plan(const std::string& text) { return parse_plan(text, "--plan"); }
/// Llama 3 70B's shape as the 2021 and 2022 model code could build it: multi-head attention and
/// a GeLU MLP (they had neither grouped-query attention nor SwiGLU).
const ModelSpec& mha70() {
  static const ModelSpec m = [] {
    ModelSpec x = llama70();
    x.kv_heads = x.heads, x.swiglu = false;
    return x;
  }();
  return m;
}
/// The model a framework's checks below use: Llama 3 70B, or its 2021-buildable shape.
const ModelSpec& model_for(Framework f) {
  return is_2021(f) || f == Framework::megatron_2022 ? mha70() : llama70();
}

/// The search of issue 14: Llama 3 70B on 64 H100s, global batch 128, for framework `f` (the
/// legacy stacks on mha70).
SearchResult search_for(Framework f, int top = 10) {
  SearchOptions o;
  o.gpus = {64};
  o.global_batch = 128;
  o.top_k = top;
  o.estimate.framework = f;
  ClusterProfile c = h100();
  c.software = execution_stack(f, c);
  return search(model_for(f), c, default_knobs(model_for(f), c, 64), o);
}
}  // namespace

TEST_CASE("each framework's refusals, with the reason it gives") {
  const ModelSpec& m = llama70();
  const ClusterProfile& c = h100();
  // zero=2 and 3 are Megatron FSDP at d98e8a64 (optim_grads, optim_grads_params), without a
  // pipeline; the 2021 stack has no distributed optimizer at all.
  CHECK(!why_not(Framework::megatron, m, c, plan("tp=8,pp=1,dp=8,gbs=128,zero=2")));
  CHECK(why_not(Framework::megatron, m, c, plan("tp=8,pp=2,dp=4,gbs=128,zero=3")) ==
        "Megatron-LM runs zero=3 as Megatron FSDP, planned here only without pipeline "
        "parallelism (its documentation at d98e8a64 names no pipeline support); use zero<=1 or "
        "pp=1");
  CHECK(why_not(Framework::megatron_2021, m, c,
                plan("tp=8,pp=1,dp=8,gbs=128,zero=2,recompute=full,attn=unfused"))
            ->find("has no distributed optimizer (ZeRO-1)") != std::string::npos);
  CHECK(!why_not(Framework::deepspeed, m, c, plan("tp=8,pp=1,dp=8,gbs=128,zero=2")));
  CHECK(why_not(Framework::deepspeed, m, c, plan("tp=8,pp=2,dp=4,gbs=128,zero=2")) ==
        "DeepSpeed's pipeline engine refuses zero=2 with pp=2 (ZeRO-2 and ZeRO-3 are "
        "incompatible with pipeline parallelism); use zero<=1 or pp=1");
  // Megatron-LM's validate_args at d98e8a64 (1000-1010): interleaving needs pp > 1 with P2P
  // overlap, Megatron's default (at 307dcf37 it needed pp > 2).
  CHECK(!why_not(Framework::megatron, m, c,
                 plan("tp=8,pp=2,dp=4,vpp=2,gbs=128,schedule=interleaved")));
  // ... in whole groups of pp micro-batches (schedules.py 1160-1179): 12 micro-batches, pp=8.
  CHECK(why_not(Framework::megatron, m, c,
                plan("tp=8,pp=8,dp=1,vpp=2,gbs=12,schedule=interleaved")) ==
        "Megatron-LM's interleaved schedule needs the micro-batches (12) to be a multiple of pp=8");
  CHECK(!why_not(Framework::megatron, m, c,
                 plan("tp=8,pp=4,dp=2,vpp=2,gbs=128,schedule=interleaved")));
  CHECK(why_not(Framework::deepspeed, m, c, plan("tp=8,cp=2,dp=4,gbs=128"))
            ->find("no context parallelism") != std::string::npos);
  CHECK(why_not(Framework::megatron, m, c, plan("tp=8,pp=8,dp=1,gbs=128,schedule=zb-h1")) ==
        "Megatron-LM at commit d98e8a64 has no 'zb-h1' schedule");
  // bf16 gradient buffers (--grad-reduce-in-bf16) are Megatron-LM's; the others keep fp32
  // gradients, the 2021 stacks too.
  const Plan g16 = plan("tp=8,pp=1,dp=8,gbs=128,zero=1,grad_reduce_bf16=1");
  CHECK(!why_not(Framework::megatron, m, c, g16));
  for (Framework f : {Framework::deepspeed, Framework::torchtitan})
    CHECK(why_not(f, m, c, g16)->find("grad_reduce_bf16=1 is Megatron-LM's") != std::string::npos);
  CHECK(why_not(Framework::megatron_2021, m, c,
                plan("tp=8,pp=1,dp=8,gbs=128,recompute=full,attn=unfused,grad_reduce_bf16=1"))
            ->find("reduced fp32 gradients") != std::string::npos);
  // The fused loss: Megatron-LM's native one everywhere Megatron-LM runs; Transformer Engine's
  // refused at the pinned version (validate_args); the others have no flag for either.
  const Plan native = plan("tp=8,pp=1,dp=8,gbs=128,loss_fusion=native");
  CHECK(!why_not(Framework::megatron, m, c, native));
  CHECK(why_not(Framework::megatron, m, c, plan("tp=8,pp=1,dp=8,gbs=128,loss_fusion=te"))
            ->find("disabled due to stability issues") != std::string::npos);
  for (Framework f : {Framework::deepspeed, Framework::torchtitan})
    CHECK(why_not(f, m, c, native)->find("--cross-entropy-loss-fusion") != std::string::npos);
  CHECK(why_not(Framework::megatron_2021, m, c,
                plan("tp=8,pp=1,dp=8,gbs=128,recompute=full,attn=unfused,loss_fusion=native"))
            ->find("ran the unfused loss") != std::string::npos);
  // The reason is built only when asked for; the answer is the same.
  for (Framework f : kFrameworks)  // torchtitan runs FSDP2 (zero=3) with a pipeline
    CHECK(refuses(f, m, c, plan("tp=8,pp=2,dp=4,gbs=128,zero=3"), nullptr) ==
          (f != Framework::torchtitan));
}

TEST_CASE("uneven stage splits: Megatron-LM's TransformerConfig rules, nobody else's") {
  const ModelSpec& m = llama70();  // 80 layers
  auto why = [&](Framework f, const std::string& p, StageSplit s) {
    return why_not_split(f, m, plan(p), s).value_or("accepted");
  };
  const std::string pp4 = "tp=8,pp=4,dp=2,gbs=128", vpp2 = "tp=8,pp=4,dp=2,vpp=2,gbs=128",
                    pp2 = "tp=8,pp=2,dp=4,gbs=128";
  CHECK(why(Framework::megatron, pp4, {}) == "accepted");  // the even split, for everyone
  CHECK(why(Framework::deepspeed, pp4, {}) == "accepted");
  CHECK(why(Framework::megatron, pp4, {18, 18, false, false}) == "accepted");   // 18 + 2 x 22 + 18
  CHECK(why(Framework::megatron, pp4, {20, 0, false, false}) == "accepted");    // 20 + 3 x 20
  CHECK(why(Framework::megatron, vpp2, {18, 18, false, false}) == "accepted");  // 22 per middle
  CHECK(why(Framework::megatron, vpp2, {19, 19, false, false}) ==
        "Megatron-LM needs an edge stage's 19 layers to be a multiple of vpp=2");
  CHECK(why(Framework::megatron, vpp2, {16, 16, false, false}) == "accepted");  // 24 per middle
  CHECK(why(Framework::megatron, pp4, {17, 18, false, false}) ==
        "Megatron-LM needs the 45 middle layers to divide into 2 stages of a multiple of vpp=1");
  CHECK(why(Framework::megatron, pp2, {30, 40, false, false}) ==
        "10 middle layers remain for 0 middle stages (first 30, last 40, 80 layers)");
  CHECK(why(Framework::megatron, pp4, {50, 40, false, false}) ==
        "-10 middle layers remain for 2 middle stages (first 50, last 40, 80 layers)");
  // Embedding and loss as one layer each: 80 + 1 + 1 = 82 is not 4 stages but is 2 of 41;
  // 80 + 1 = 81 is not 2.
  CHECK(why(Framework::megatron, pp4, {0, 0, true, true}) ==
        "Megatron-LM's account-for-embedding/loss split needs the 82 layers it counts to divide "
        "into pp=4 stages of a multiple of vpp=1");
  CHECK(why(Framework::megatron, pp2, {0, 0, true, true}) == "accepted");
  CHECK(why(Framework::megatron, pp2, {0, 0, true, false}) ==
        "Megatron-LM's account-for-embedding/loss split needs the 81 layers it counts to divide "
        "into pp=2 stages of a multiple of vpp=1");
  CHECK(why(Framework::megatron, pp4, {18, 18, true, false}) ==
        "Megatron-LM takes the first and last stages' layer counts or the account-for-embedding/"
        "loss split, not both");
  CHECK(why(Framework::megatron, "tp=8,pp=1,dp=8,gbs=128", {10, 0, false, false}) ==
        "pp=1: one pipeline stage, nothing to split unevenly");
  CHECK(why(Framework::deepspeed, pp4, {18, 18, false, false}) ==
        "DeepSpeed splits the layers evenly over the pipeline stages only");
  CHECK(why(Framework::megatron_2021, pp4, {0, 0, true, false}) ==
        "Megatron-LM 2021 splits the layers evenly over the pipeline stages only");
}

TEST_CASE("names both ways, and the stack each framework runs") {
  for (Framework f : kFrameworks) CHECK(framework_named(to_string(f)) == f);
  CHECK(!framework_named("jax"));
  CHECK(!framework_named("megatron_2021"));
  std::string note = "unset";
  const SoftwareStack mg = execution_stack(Framework::megatron, h100(), &note);
  CHECK(note.empty());
  CHECK(mg == kMegatronStack);
  CHECK(mg.overlap_tp_comm);
  CHECK(mg.overlap_param_gather);
  const SoftwareStack ds = execution_stack(Framework::deepspeed, h100(), &note);
  CHECK(note.empty());
  CHECK(!ds.overlap_tp_comm);
  CHECK(!ds.overlap_param_gather);
  CHECK(ds.overlap_grad_reduce);
  // The A100 runs of 2021: unfused attention, no overlaps, ZeRO-3 over one NIC per node.
  for (Framework f : {Framework::megatron_2021, Framework::deepspeed_2021}) {
    const SoftwareStack s = execution_stack(f, h100());
    CHECK(s.attention == AttentionKernel::unfused);
    CHECK(!s.overlap_grad_reduce);
    CHECK(s.zero3_collective_nics == 1);
  }
  // A legacy block whose overlaps the framework lacks: masked, with the note.
  ClusterProfile legacy = h100();
  legacy.legacy_software = kMegatronStack;
  const SoftwareStack masked = execution_stack(Framework::deepspeed, legacy, &note);
  CHECK(!masked.overlap_tp_comm);
  CHECK(!masked.overlap_param_gather);
  CHECK(note ==
        "DeepSpeed runs without the profile's software.overlap_tp_comm and overlap_param_gather: "
        "predicted without them");
}

TEST_CASE("the 2021 stacks refuse what did not exist yet, and write no launch files") {
  const ModelSpec& m = mha70();
  const ClusterProfile& c = h100();
  CHECK(why_not(Framework::megatron_2021, m, c, plan("tp=8,pp=4,dp=2,gbs=128,sp=1")) ==
        "Megatron-LM 2021 has no sequence parallelism; use sp=0");
  CHECK(why_not(Framework::megatron_2021, m, c, plan("tp=8,pp=4,dp=2,gbs=128,zero=1")) ==
        "Megatron-LM 2021 has no distributed optimizer (ZeRO-1); use zero=0 or --framework "
        "deepspeed-2021");
  CHECK(
      why_not(Framework::megatron_2021, m, c, plan("tp=8,pp=4,dp=2,gbs=128,recompute=selective")) ==
      "Megatron-LM 2021 recomputes whole layers only (no selective recomputation); use "
      "recompute=full or none");
  CHECK(why_not(Framework::deepspeed_2021, m, c, plan("tp=8,pp=1,dp=8,gbs=128,attn=flash")) ==
        "DeepSpeed 2021 has no fused flash attention; use attn=unfused");
  CHECK(why_not(Framework::deepspeed_2021, m, c, plan("tp=8,cp=2,dp=4,gbs=128")) ==
        "DeepSpeed 2021 has no context parallelism; use cp=1");
  // What they could run: PTD-P with full recomputation; ZeRO-3 without model parallelism.
  CHECK(!why_not(Framework::megatron_2021, m, c,
                 plan("tp=8,pp=4,dp=2,vpp=2,gbs=128,recompute=full,schedule=interleaved")));
  CHECK(!why_not(Framework::deepspeed_2021, m, c, plan("tp=1,pp=1,dp=64,gbs=128,zero=3")));
  // Megatron-LM interleaved only with pp > 2 from 2021-03-20 (182841f7df, before the SC21 runs)
  // until Megatron-Core relaxed it.
  CHECK(why_not(Framework::megatron_2021, m, c,
                plan("tp=8,pp=2,dp=4,vpp=2,gbs=128,recompute=full,schedule=interleaved")) ==
        "Megatron-LM 2021 runs the interleaved schedule (vpp=2) only with pp > 2, got pp=2");
  CHECK(parse_framework("megatron-2021", "--framework") == Framework::megatron_2021);
  CHECK_THROWS_WITH(
      parse_framework("megatron-2021", "--emit", true),
      "option --emit: no launch files for Megatron-LM 2021: they are written for megatron, "
      "deepspeed or torchtitan");
  CHECK_THROWS_WITH(parse_framework("jax", "--framework"),
                    "option --framework: unknown framework 'jax' (expected megatron, deepspeed, "
                    "torchtitan, megatron-2021, deepspeed-2021 or megatron-2022)");
}

TEST_CASE("the 2021 and 2022 stacks refuse grouped-query attention and SwiGLU models") {
  const Plan p = plan("tp=8,pp=4,dp=2,gbs=128,recompute=full,attn=unfused");
  for (Framework f :
       {Framework::megatron_2021, Framework::deepspeed_2021, Framework::megatron_2022}) {
    CAPTURE(to_string(f));
    CHECK(why_not(f, llama70(), h100(), p) ==
          std::string(info(f).title) +
              " has no grouped-query attention (8 query groups for 64 heads; Megatron-LM added it "
              "in 2023): plan the model with --framework megatron");
    ModelSpec swiglu = mha70();
    swiglu.swiglu = true;
    CHECK(why_not(f, swiglu, h100(), p) ==
          std::string(info(f).title) +
              " has no SwiGLU MLP (Megatron-LM added --swiglu in 2023): plan the model with "
              "--framework megatron");
    // The same shape with multi-head attention and GeLU runs (DeepSpeed 2021: as ZeRO-3).
    CHECK(!why_not(f, mha70(), h100(),
                   f == Framework::deepspeed_2021
                       ? plan("tp=1,pp=1,dp=64,gbs=128,zero=3,recompute=full,attn=unfused")
                       : p));
  }
  CHECK(!why_not(Framework::megatron, llama70(), h100(), p));
}

TEST_CASE("the search ranks only plans the framework runs, on the plan's own split") {
  for (Framework f : kFrameworks) {  // the 2021 stacks too: zero=0 PTD-P plans, full recompute
    CAPTURE(to_string(f));
    const SearchResult r = search_for(f);
    REQUIRE(!r.top.empty());
    CHECK(r.rejections[int(Rejection::framework_refuses)] > 0);
    CHECK(r.frameworks == std::vector<Framework>{f});
    for (const Estimate& e : r.top) {
      CAPTURE(to_plan_string(e.plan));
      CHECK(e.framework == f);
      CHECK(!why_not(f, model_for(f), h100(), e.plan));
      CHECK(!e.balanced);  // no pinned version takes a balanced partition
      // The stages hold what the plan's split gives them (Megatron-LM's uneven splits, e.g.
      // short_last's shorter last stage; the others split evenly).
      REQUIRE(e.partition.size() == size_t(e.plan.pp));
      for (int s = 0; s < e.plan.pp; ++s)
        CHECK(e.partition[s] == split_stage_layers(80, e.plan, s));
      if (f != Framework::megatron) CHECK(e.plan.split == PipelineSplit::even);
    }
  }
}

TEST_CASE("--framework all: the frameworks' plans ranked together, each naming its own") {
  SearchOptions o;
  o.top_k = 6;
  const SearchResult mg = search_for(Framework::megatron, 6);
  const SearchResult ds = search_for(Framework::deepspeed, 6);
  const SearchResult all = merge_results({mg, ds}, o);
  CHECK(all.evaluated == mg.evaluated + ds.evaluated);
  CHECK(all.frameworks == std::vector<Framework>{Framework::megatron, Framework::deepspeed});
  REQUIRE(all.top.size() == 6);
  for (size_t i = 1; i < all.top.size(); ++i)
    CHECK(all.top[i - 1].iteration_time_s <= all.top[i].iteration_time_s);
  CHECK(all.top.front().iteration_time_s ==
        std::min(mg.top.front().iteration_time_s, ds.top.front().iteration_time_s));
  // DeepSpeed's best (zero=2, no TP overlap) is slower than Megatron-LM's on this job.
  CHECK(ds.top.front().iteration_time_s > mg.top.front().iteration_time_s);
}

TEST_CASE("rank order tp-pp-dp: Megatron-LM's --use-tp-pp-dp-mapping, without CP or FSDP") {
  const ModelSpec& m = llama70();
  const ClusterProfile& c = h100();
  CHECK(!why_not(Framework::megatron, m, c, plan("tp=2,pp=4,dp=8,gbs=128,zero=1,order=tp-pp-dp")));
  CHECK(why_not(Framework::megatron, m, c, plan("tp=2,pp=4,cp=2,dp=4,gbs=128,order=tp-pp-dp"))
            ->find("without context parallelism") != std::string::npos);
  CHECK(why_not(Framework::megatron, m, c, plan("tp=8,pp=1,dp=8,gbs=128,zero=3,order=tp-pp-dp"))
            ->find("not supported with Megatron FSDP") != std::string::npos);
  CHECK(why_not(Framework::deepspeed, m, c, plan("tp=2,pp=4,dp=8,gbs=128,zero=1,order=tp-pp-dp"))
            ->find("PipeModelDataParallelTopology") != std::string::npos);
  CHECK(why_not(Framework::megatron_2021, m, c,
                plan("tp=2,pp=4,dp=8,gbs=128,recompute=full,attn=unfused,order=tp-pp-dp"))
            ->find("order=tp-cp-dp-pp") != std::string::npos);
}

TEST_CASE("the search tries the pipeline inside a node where TP leaves room for it") {
  // Llama 3 8B on 64 H100s: plans with tp < 8 and pp > 1 are tried in both orders, each where
  // the order moves a group; the ranked plans name the order they were predicted in.
  SearchOptions o;
  o.gpus = {64};
  o.global_batch = 512;
  o.top_k = 2000;
  o.simulate_candidates = 0;
  o.estimate.framework = Framework::megatron;
  ClusterProfile c = h100();
  c.software = execution_stack(Framework::megatron, c);
  const ModelSpec m = fixtures::model("llama3-8b");
  KnobSpace k = default_knobs(m, c, 64);
  k[KnobId::pp] = {4};
  k[KnobId::tp] = {1, 2, 8};
  const SearchResult r = search(m, c, k, o);
  int mapped = 0;
  for (const Estimate& e : r.top) {
    if (e.plan.order != RankOrder::tp_pp_dp) continue;
    ++mapped;
    CHECK(e.plan.tp < 8);  // tp=8 fills the node: both orders are the same plan
    CHECK(e.plan.cp == 1);
    CHECK(e.plan.zero <= 1);
    CHECK(to_plan_string(e.plan).find("order=tp-pp-dp") != std::string::npos);
  }
  CHECK(mapped > 0);
}

TEST_CASE(
    "Megatron-LM 2022: sequence parallelism, selective recompute and ZeRO-1 on the 2021 kernels") {
  const ModelSpec& m = mha70();
  const ClusterProfile& c = h100();
  const Framework f = Framework::megatron_2022;
  CHECK(framework_named("megatron-2022") == f);
  CHECK(!info(f).emits);
  // What it gained over 2021 (Korthikanti et al. 2022's runs; the distributed optimizer).
  CHECK(!why_not(f, m, c, plan("tp=8,pp=4,dp=2,gbs=128,sp=1,recompute=selective,zero=1")));
  CHECK(!why_not(f, m, c, plan("tp=8,pp=4,dp=2,vpp=5,gbs=128,sp=1,schedule=interleaved")));
  // What it still lacked, each with its reason.
  CHECK(why_not(f, m, c, plan("tp=8,pp=1,dp=8,gbs=128,zero=2")) ==
        "Megatron-LM 2022 shards the optimizer states only (the distributed optimizer, zero=1); "
        "use zero<=1");
  CHECK(why_not(f, m, c, plan("tp=8,pp=4,dp=2,gbs=128,attn=flash")) ==
        "Megatron-LM 2022 has no fused flash attention; use attn=unfused");
  CHECK(why_not(f, m, c, plan("tp=8,pp=4,dp=2,gbs=128,overlap_grad_reduce=1")) ==
        "Megatron-LM 2022 reduces the gradients after the backward; use overlap_grad_reduce=0");
  CHECK(why_not(f, m, c, plan("tp=8,pp=4,dp=2,gbs=128,sp=1,tp_comm_overlap=1")) ==
        "Megatron-LM 2022 has neither Transformer Engine's TP-communication overlap nor the "
        "parameter gather's; use tp_comm_overlap=0 and overlap_param_gather=0");
  CHECK(why_not(f, m, c, plan("tp=8,cp=2,dp=4,gbs=128")) ==
        "Megatron-LM 2022 has no context parallelism; use cp=1");
  CHECK(why_not(f, m, c, plan("tp=8,pp=2,dp=4,vpp=2,gbs=128,schedule=interleaved")) ==
        "Megatron-LM 2022 runs the interleaved schedule (vpp=2) only with pp > 2, got pp=2");
  // Its stack: the 2021 kernels and no overlap, whatever a profile's own block says.
  const SoftwareStack s = execution_stack(f, c);
  CHECK(s == kStack2022);
  CHECK(s.attention == AttentionKernel::unfused);
  CHECK(!s.overlap_grad_reduce);
  CHECK(!s.overlap_param_gather);
  CHECK(!s.overlap_tp_comm);
  CHECK(s.interleaved_all_warmup);
  CHECK(!s.deepspeed_pipeline_engine);
  // The search plans with what it has: its best uses sequence parallelism or selective
  // recomputation somewhere in the top ten, which the 2021 stack cannot.
  const SearchResult r = search_for(f);
  REQUIRE(!r.top.empty());
  bool uses_2022 = false;
  for (const Estimate& e : r.top) {
    CHECK(!why_not(f, m, c, e.plan));
    uses_2022 = uses_2022 || e.plan.sp || e.plan.recompute == Recompute::selective;
  }
  CHECK(uses_2022);
}

TEST_CASE(
    "DeepSpeed's pipeline engine: reduction after the pipeline, blocking transfers, "
    "BF16_Optimizer") {
  const ModelSpec& m = llama70();
  ClusterProfile ds = h100();
  ds.software = execution_stack(Framework::deepspeed, ds);
  ClusterProfile mg = ds;
  mg.software.deepspeed_pipeline_engine = false;  // the same stack on Megatron-LM's engine
  EstimateOptions o;
  o.framework = Framework::deepspeed;
  // bf16 without ZeRO over DP ranks is BF16_Optimizer's ZeRO-1 anyway: refused with the reason.
  CHECK(why_not(Framework::deepspeed, m, ds, plan("tp=8,pp=4,dp=2,gbs=128")) ==
        "DeepSpeed's pipeline engine trains bf16 with its BF16_Optimizer, which shards the "
        "optimizer states over the DP ranks as ZeRO-1 does whatever zero_optimization.stage "
        "says; use zero=1");
  CHECK(!why_not(Framework::deepspeed, m, ds, plan("tp=8,pp=8,dp=1,gbs=128")));  // one DP rank
  // There DeepSpeed accumulates in bf16 (no fp32 key without ZeRO): nothing added to memory.
  CHECK(!deepspeed_bf16_optimizer(ds, plan("tp=8,pp=8,dp=1,gbs=128")));
  CHECK(!why_not(Framework::deepspeed, m, ds, plan("tp=8,pp=1,dp=8,gbs=128")));  // no pipeline
  const Plan p = plan("tp=8,pp=4,dp=2,mbs=1,gbs=128,zero=1,recompute=full");
  const Estimate a = estimate(m, ds, p, o), b = estimate(m, mg, p, o);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  // The DP reduction: BF16_Optimizer's bf16 all-reduce of the whole gradient, then ZeRO-1's
  // parameter all-gather, both after the last backward, nothing hidden.
  const double params = a.dp_params_rank;
  CHECK(params == doctest::Approx(2.27e9).epsilon(0.01));  // 20 layers and the embedding
  const GroupLayout g = dp_group(p, ds);
  const int buckets = int(std::ceil(params / 5e8));  // MEMORY_OPT_ALLREDUCE_SIZE elements each
  CHECK(buckets == 5);
  const double reduce =
      buckets * collective_time_s(ds, Collective::allreduce, params * 2 / buckets, g);
  const double gather = collective_time_s(ds, Collective::allgather, params * 2, g);
  CHECK(a.dp_comm_total_s == doctest::Approx(reduce + gather));
  CHECK(a.breakdown.dp_comm_s == doctest::Approx(reduce + gather));
  CHECK(b.breakdown.dp_comm_s < a.breakdown.dp_comm_s);  // Megatron's engine hides the reduction
  // Blocking transfers: the pipeline takes longer by at least the stages' own sends.
  CHECK(a.breakdown.pp_comm_s > b.breakdown.pp_comm_s);
  CHECK(a.iteration_time_s > b.iteration_time_s);
  // BF16_Optimizer keeps the bf16 gradients beside its fp32 ones: 2 bytes per parameter more.
  CHECK(a.memory.grads - b.memory.grads == doctest::Approx(2 * (b.memory.grads / 4)).epsilon(1e-9));
  // After the backward its ReduceGrads holds one 5e8-element bucket in fp32 and in bf16.
  CHECK(a.memory.step_grads == doctest::Approx(5e8 * (4 + 2)));
  CHECK(b.memory.step_grads == 0);
  // fp16 ZeRO-1 (DeepSpeedZeroOptimizer) reduces each rank's partition instead.
  Plan h = p;
  h.dtype = Dtype::fp16;
  const Estimate f16 = estimate(m, ds, h, o);
  REQUIRE(f16.ok());
  CHECK(
      f16.dp_comm_total_s ==
      doctest::Approx(collective_time_s(ds, Collective::reduce_scatter, f16.dp_params_rank * 2, g) +
                      collective_time_s(ds, Collective::allgather, f16.dp_params_rank * 2, g)));
  CHECK(f16.memory.grads == doctest::Approx(b.memory.grads));  // no BF16_Optimizer
}
