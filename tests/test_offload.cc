// Offload (issue 17, item 1): the optimizer's states and step, and ZeRO-3 parameters, on the
// host. Each cost term against its closed form, the memory it frees and needs, the refusals, the
// search's use of it (only where a plan does not fit without), and the two plans the issue names:
// the design source's ZeRO-3 + CPU optimizer offload example and Llama 3 8B on one H100.
#include <doctest/doctest.h>

#include <algorithm>
#include <string>

#include "fixtures.h"
#include "planner/cost/compute.h"
#include "planner/cost/data_parallel.h"
#include "planner/cost/memory.h"
#include "planner/cost/offload.h"
#include "planner/estimate.h"
#include "planner/io/cluster_io.h"
#include "planner/io/profile_yaml.h"
#include "planner/search.h"
#include "planner/units.h"

using namespace planner;

namespace {
const ClusterProfile& h100() { return fixtures::cluster("dgx-h100-80gb"); }
const ModelSpec& llama8() { return fixtures::model("llama3-8b"); }

Plan plan(const std::string& s) { return parse_plan(s, "--plan"); }

ClusterProfile stack_for(Framework f, const ClusterProfile& c) {
  ClusterProfile out = c;
  out.software = execution_stack(f, c);
  return out;
}

Estimate estimate_for(Framework f, const ModelSpec& m, const ClusterProfile& c,
                      const std::string& p) {
  EstimateOptions o;
  o.framework = f;
  return estimate(m, stack_for(f, c), plan(p), o);
}
}  // namespace

TEST_CASE("offload: the profiles' host blocks, read and written back") {
  const Host& h = h100().host;
  REQUIRE(h.present());
  CHECK(h.memory_bytes == doctest::Approx(2048 * kGiB));
  CHECK(h.memory_Bps == doctest::Approx(614.4 * kGB));        // 2 sockets x 8 x DDR5-4800
  CHECK(h.achieved_link_Bps() == doctest::Approx(51 * kGB));  // measured, not the datasheet
  ClusterProfile no_measure = h100();
  no_measure.host.measured_Bps = 0;
  CHECK(no_measure.host.achieved_link_Bps() == doctest::Approx(64 * kGB * kHostLinkEfficiency));
  const ClusterProfile back = io::parse_cluster(io::cluster_yaml(h100(), {}), "round-trip");
  CHECK(back.host == h);
  // Blackwell: DGX B200's PCIe Gen5 host; a GB200 tray's two Graces over NVLink-C2C, 225 GB/s
  // a GPU each way, measured 193.
  const Host& b200 = fixtures::cluster("dgx-b200").host;
  CHECK(b200.present());
  CHECK(b200.achieved_link_Bps() == doctest::Approx(64 * kGB * kHostLinkEfficiency));
  const Host& gb200 = fixtures::cluster("gb200-nvl72").host;
  CHECK(gb200.memory_bytes == doctest::Approx(894 * kGiB));
  CHECK(gb200.link_Bps == doctest::Approx(225 * kGB));
  CHECK(gb200.achieved_link_Bps() == doctest::Approx(193 * kGB));
}

TEST_CASE("offload: a bad host block names its key") {
  std::string y = io::cluster_yaml(h100(), {});
  const std::string good = "  measured_link_GBps: 51\n";
  REQUIRE(y.find(good) != std::string::npos);
  std::string faster = y;
  faster.replace(faster.find(good), good.size(), "  measured_link_GBps: 90\n");
  CHECK_THROWS_WITH(io::parse_cluster(faster, "p.yaml"),
                    doctest::Contains("host.measured_link_GBps"));
  std::string typo = y;
  typo.replace(typo.find(good), good.size(), "  measured_link_GBs: 51\n");
  CHECK_THROWS_WITH(io::parse_cluster(typo, "p.yaml"), doctest::Contains("measured_link_GBps"));
}

TEST_CASE("offload: Megatron-LM's step is the slowest of the copies and the CPU Adam") {
  const ClusterProfile& c = h100();
  const Plan p = plan("tp=1,pp=1,dp=8,gbs=64,zero=1,offload_optimizer=cpu,offload_pct=50");
  const double shard = 1e9, gpu_step = 0.01;
  const OffloadCost o = offload_cost(c, p, Framework::megatron, 8e9, shard, 0.1, 0.2, gpu_step);
  const double moved = 0.5 * shard, link = 51 * kGB;
  const double cpu =
      moved * kCpuAdamBytesPerParam / (614.4 * kGB * kCpuAdamBandwidthEfficiency / 8);
  CHECK(o.cpu_step_s == doctest::Approx(cpu));
  CHECK(o.gpu_step_s == doctest::Approx(0.5 * gpu_step));
  CHECK(o.d2h_bytes == doctest::Approx(moved * 4));  // fp32 main gradients
  CHECK(o.h2d_bytes == doctest::Approx(moved * 4));  // fp32 parameters back
  CHECK(o.exposed_s() == doctest::Approx(std::max(cpu, moved * 4 / link)));
  CHECK(o.host_bytes == doctest::Approx(moved * kHostOptimizerBytesPerParam));
  // Nothing offloaded: the GPU's step alone.
  const OffloadCost none = offload_cost(c, plan("tp=1,pp=1,dp=8,gbs=64,zero=1"),
                                        Framework::megatron, 8e9, shard, 0.1, 0.2, gpu_step);
  CHECK(none.exposed_s() == 0);
  CHECK(none.gpu_step_s == gpu_step);
}

TEST_CASE("offload: DeepSpeed moves 16-bit gradients every micro-batch beside its backward") {
  const ClusterProfile& c = h100();
  const Plan p = plan("tp=1,pp=1,dp=8,mbs=1,gbs=64,zero=2,offload_optimizer=cpu");
  REQUIRE(p.microbatches() == 8);
  const double shard = 1e9, link = 51 * kGB;
  const double d2h = shard * 2 / link;  // 39 ms a micro-batch
  for (const double bwd : {0.01, 0.1}) {
    CAPTURE(bwd);
    const OffloadCost o = offload_cost(c, p, Framework::deepspeed, 8e9, shard, 0.05, bwd, 0.0);
    CHECK(o.d2h_bytes == doctest::Approx(8 * shard * 2));
    CHECK(o.h2d_bytes == doctest::Approx(shard * 2));
    CHECK(o.transfer_s == doctest::Approx(8 * std::max(0.0, d2h - bwd) + shard * 2 / link));
  }
  // ZeRO-1 reduces at the accumulation boundary only: one copy, behind the last backward.
  const Plan z1 = plan("tp=1,pp=1,dp=8,mbs=1,gbs=64,zero=1,offload_optimizer=cpu");
  const OffloadCost once = offload_cost(c, z1, Framework::deepspeed, 8e9, shard, 0.05, 0.01, 0.0);
  CHECK(once.d2h_bytes == doctest::Approx(shard * 2));
  CHECK(once.transfer_s == doctest::Approx(std::max(0.0, d2h - 0.01) + shard * 2 / link));
  // tf32 keeps 4-byte weights and gradients: twice the bytes.
  const OffloadCost wide =
      offload_cost(c, plan("tp=1,pp=1,dp=8,mbs=1,gbs=64,zero=2,dtype=tf32,offload_optimizer=cpu"),
                   Framework::deepspeed, 8e9, shard, 0.05, 0.01, 0.0);
  CHECK(wide.d2h_bytes == doctest::Approx(8 * shard * 4));
  // ZeRO-3 parameters on the host: fetched for forward, backward and the recomputation of each
  // micro-batch, hidden behind it when the link keeps up; no copy back after the step.
  const Plan q = plan(
      "tp=1,pp=1,dp=8,mbs=1,gbs=64,zero=3,recompute=full,offload_optimizer=cpu,offload_params=cpu");
  const OffloadCost slow = offload_cost(c, q, Framework::deepspeed, 8e9, shard, 0.01, 0.02, 0.0);
  const double fetch = 3 * (8e9 / 8) * 2 / link;
  CHECK(slow.transfer_s ==
        doctest::Approx(8 * std::max(0.0, d2h - 0.02) + 8 * std::max(0.0, fetch - 0.03)));
  CHECK(slow.host_bytes == doctest::Approx(shard * kHostOptimizerBytesPerParam + 1e9 * 2));
  const OffloadCost hidden = offload_cost(c, q, Framework::deepspeed, 8e9, shard, 1.0, 2.0, 0.0);
  CHECK(hidden.transfer_s == 0);
}

TEST_CASE("offload: the GPU keeps the states not offloaded; ZeRO-3 parameters leave it") {
  const ModelSpec& m = llama8();
  const Estimate base = estimate_for(Framework::deepspeed, m, h100(),
                                     "tp=1,pp=1,dp=8,mbs=1,gbs=64,zero=3,recompute=full");
  const Estimate opt =
      estimate_for(Framework::deepspeed, m, h100(),
                   "tp=1,pp=1,dp=8,mbs=1,gbs=64,zero=3,recompute=full,offload_optimizer=cpu,"
                   "offload_pct=25");
  const Estimate par =
      estimate_for(Framework::deepspeed, m, h100(),
                   "tp=1,pp=1,dp=8,mbs=1,gbs=64,zero=3,recompute=full,offload_optimizer=cpu,"
                   "offload_params=cpu");
  REQUIRE(base.ok());
  REQUIRE(opt.ok());
  REQUIRE(par.ok());
  CHECK(opt.memory.optimizer == doctest::Approx(0.75 * base.memory.optimizer));
  CHECK(par.memory.optimizer == 0);
  CHECK(par.memory.weights < base.memory.weights / 2);  // the gather buffer only
  // DeepSpeed: the offloaded part's gradients go to the host a reduce bucket at a time.
  CHECK(opt.memory.grads ==
        doctest::Approx(0.75 * base.memory.grads + 2 * kDeepSpeedReduceBucketParams));
  // Megatron-LM keeps its fp32 main-gradient buffer on the GPU.
  const Estimate mg = estimate_for(Framework::megatron, m, h100(),
                                   "tp=1,pp=1,dp=8,mbs=1,gbs=64,zero=1,recompute=full");
  const Estimate mg_off =
      estimate_for(Framework::megatron, m, h100(),
                   "tp=1,pp=1,dp=8,mbs=1,gbs=64,zero=1,recompute=full,offload_optimizer=cpu");
  REQUIRE(mg_off.ok());
  CHECK(mg_off.memory.grads == mg.memory.grads);
  CHECK(mg_off.memory.optimizer == 0);
  // Offload only adds time; the host holds what left the GPU, for all 8 ranks of the node.
  CHECK(opt.iteration_time_s > base.iteration_time_s);
  CHECK(par.iteration_time_s > opt.iteration_time_s);
  CHECK(par.breakdown.offload_s > 0);
  const double shard = m.total_params() / 8;
  CHECK(par.host_memory_bytes ==
        doctest::Approx(8 * (shard * kHostOptimizerBytesPerParam + shard * 2)).epsilon(0.02));
}

TEST_CASE("offload: refusals name what is missing") {
  const ModelSpec& m = llama8();
  std::string why;
  EstimateOptions o;
  auto check = [&](const ClusterProfile& c, const std::string& p, Framework f) {
    o.framework = f;
    why.clear();
    return check_plan(m, stack_for(f, c), plan(p), o, &why);
  };
  ClusterProfile no_host = fixtures::cluster("dgx-b200");
  no_host.host = Host{};
  CHECK(check(no_host, "tp=1,pp=1,dp=8,gbs=64,zero=1,offload_optimizer=cpu", Framework::megatron) ==
        Rejection::offload_invalid);
  CHECK(why.find("has no host block") != std::string::npos);
  CHECK(check(h100(), "tp=1,pp=1,dp=8,gbs=64,zero=3,offload_optimizer=nvme",
              Framework::deepspeed) == Rejection::offload_invalid);
  CHECK(why.find("host.nvme_GBps") != std::string::npos);
  CHECK(check(h100(), "tp=1,pp=1,dp=8,gbs=64,offload_optimizer=cpu", Framework::deepspeed) ==
        Rejection::offload_invalid);
  CHECK(why.find("zero>=1") != std::string::npos);
  CHECK(check(h100(), "tp=1,pp=1,dp=8,gbs=64,zero=2,offload_params=cpu", Framework::deepspeed) ==
        Rejection::offload_invalid);
  CHECK(check(h100(), "tp=1,pp=1,dp=8,gbs=64,zero=3,offload_params=cpu", Framework::megatron) ==
        Rejection::framework_refuses);
  CHECK(why.find("--optimizer-cpu-offload") != std::string::npos);
  CHECK(check(h100(), "tp=1,pp=1,dp=8,gbs=64,zero=3,offload_optimizer=cpu", Framework::megatron) ==
        Rejection::framework_refuses);
  CHECK(why.find("zero=1") != std::string::npos);
  CHECK(check(h100(), "tp=1,pp=1,dp=8,gbs=64,zero=2,offload_optimizer=cpu,offload_pct=50",
              Framework::deepspeed) == Rejection::framework_refuses);
  CHECK(why.find("ratio") != std::string::npos);
  CHECK(check(h100(), "tp=1,pp=1,dp=8,gbs=64,zero=1,offload_optimizer=cpu",
              Framework::megatron_2021) == Rejection::framework_refuses);
  // One GPU: ZeRO shards nothing, but its optimizer is what offloads.
  CHECK(check(h100(), "tp=1,pp=1,dp=1,gbs=64,zero=2,offload_optimizer=cpu", Framework::deepspeed) ==
        Rejection::none);
  CHECK(check(h100(), "tp=1,pp=1,dp=1,gbs=64,zero=2", Framework::deepspeed) ==
        Rejection::zero_invalid);
}

TEST_CASE("offload: the host's memory bounds it") {
  const ModelSpec& m = fixtures::model("llama3-405b");
  const Estimate e =
      estimate_for(Framework::deepspeed, m, h100(),
                   "tp=8,pp=1,dp=1,mbs=1,gbs=8,zero=3,recompute=full,offload_optimizer=cpu,"
                   "offload_params=cpu");
  CHECK(e.rejection == Rejection::host_out_of_memory);  // 405e9 x 18 B = 6.6 TiB on one node
  CHECK(rejection_message(e).find("out of host memory") != std::string::npos);
  CHECK(e.host_memory_bytes > e.host_memory_limit_bytes);
  CHECK(e.host_memory_limit_bytes == doctest::Approx(2048 * kGiB * kHostMemoryUsableFraction));
}

TEST_CASE("offload: the search tries it only where the plan does not fit without") {
  // Llama 3 8B, 64 sequences of 8192 tokens, on one H100: nothing fits without offload.
  for (Framework f : {Framework::megatron, Framework::deepspeed}) {
    CAPTURE(to_string(f));
    SearchOptions o;
    o.gpus = {1};
    o.global_batch = 64;
    o.estimate.framework = f;
    const ClusterProfile c = stack_for(f, h100());
    const SearchResult r = search(llama8(), c, default_knobs(llama8(), c, 1), o);
    REQUIRE(!r.top.empty());
    for (const Estimate& e : r.top) {
      CAPTURE(to_plan_string(e.plan));
      CHECK(e.plan.offload_optimizer == OffloadDevice::cpu);
      CHECK(e.memory_bytes <= e.memory_limit_bytes);
      CHECK(e.breakdown.offload_s > 0);
    }
    KnobSpace none = default_knobs(llama8(), c, 1);
    none[KnobId::offload_optimizer] = none[KnobId::offload_params] = {kUnset};
    CHECK(search(llama8(), c, none, o).top.empty());  // as before offload: "no plan fits"
  }
  // Where plans fit without it, their offload twins are skipped, not ranked.
  SearchOptions o;
  o.gpus = {8};
  o.global_batch = 64;
  o.estimate.framework = Framework::deepspeed;
  const ClusterProfile c = stack_for(Framework::deepspeed, h100());
  const SearchResult r = search(llama8(), c, default_knobs(llama8(), c, 8), o);
  REQUIRE(!r.top.empty());
  CHECK(r.offload_dominated > 0);
  CHECK_FALSE(r.top.front().plan.offloads());
}

TEST_CASE("offload: the source's example, GPT-3 XL with ZeRO-3 and the optimizer on the CPU") {
  // deepspeed.initialize(config={"train_batch_size": 32, "fp16": {"enabled": True},
  //   "zero_optimization": {"stage": 3, "offload_optimizer": {"device": "cpu"}}}) on one node.
  const ModelSpec& m = fixtures::model("gpt3-1.3b");
  const Estimate e = estimate_for(Framework::deepspeed, m, fixtures::cluster("dgx-a100-80gb"),
                                  "tp=1,pp=1,dp=8,mbs=4,gbs=32,zero=3,dtype=fp16,"
                                  "offload_optimizer=cpu");
  REQUIRE(e.ok());
  CHECK(e.memory.optimizer == 0);
  CHECK(e.breakdown.offload_s > 0);
  CHECK(e.host_memory_bytes ==
        doctest::Approx(m.total_params() * kHostOptimizerBytesPerParam).epsilon(0.01));
}

TEST_CASE("compression: the source's 8-bit gradient all-reduce, priced as a what-if") {
  // Issue 17, item 2: the same buckets at one byte an element (fp32 gradients: 4 on the wire)
  // and its quantize and dequantize kernels, in place of a zero=0 plan's all-reduce.
  const ModelSpec& m = fixtures::model("gpt3-1.3b");
  const ClusterProfile& c = fixtures::cluster("dgx-a100-80gb");
  const Estimate e =
      estimate_for(Framework::megatron, m, c, "tp=1,pp=1,dp=64,mbs=1,gbs=64,overlap_grad_reduce=0");
  REQUIRE(e.ok());
  const Plan p = e.plan;
  const double params = m.total_params();  // one stage holds them all
  const int buckets = dp_buckets(p, params);
  const double wire =
      buckets * collective_time_s(c, Collective::allreduce,
                                  params * kInt8GradBytesPerParam / buckets, dp_group(p, c));
  CHECK(e.int8_allreduce_total_s == doctest::Approx(wire));  // tied: no second stage to reduce
  const double kernels =
      params * kInt8KernelBytesPerParam / c.gpu.hbm_achieved_Bps() / c.gpu.sustained_efficiency;
  // Not overlapped (overlap_grad_reduce=0): the whole all-reduce, then the kernels, replace it.
  CHECK(e.int8_allreduce_iteration_s ==
        doctest::Approx(e.iteration_time_s - e.breakdown.dp_comm_s + wire + kernels));
  // 1 byte against 4 on the wire; each of the 21 buckets keeps its latency: 0.021 s against 0.059.
  CHECK(e.int8_allreduce_total_s < e.dp_comm_total_s / 2.5);
  // ZeRO shards the gradients instead: nothing to price.
  CHECK(estimate_for(Framework::megatron, m, c, "tp=1,pp=1,dp=64,mbs=1,gbs=64,zero=1")
            .int8_allreduce_iteration_s == 0);
}

TEST_CASE("compression: DeepSpeed's 1-bit optimizers all-reduce signs after the warm-up") {
  // Issue 17, item 2: the compressed round's all-to-all and all-gather of 1 bit an element,
  // in the optimizer step, against the fp32 gradient all-reduce overlapped with the backward.
  const ModelSpec& m = fixtures::model("gpt3-1.3b");
  const ClusterProfile& c = fixtures::cluster("dgx-a100-80gb");
  const std::string base = "tp=1,pp=1,dp=64,mbs=4,gbs=256,dtype=fp16";
  const Estimate plain = estimate_for(Framework::deepspeed, m, c, base);
  const Estimate onebit =
      estimate_for(Framework::deepspeed, m, c, base + ",grad_compression=onebit_adam");
  REQUIRE(plain.ok());
  REQUIRE(onebit.ok());
  CHECK(onebit.dp_comm_total_s < plain.dp_comm_total_s / 8);  // 1 bit against 16 on the wire
  CHECK(onebit.breakdown.compute_s == doctest::Approx(plain.breakdown.compute_s));
  const double params = m.total_params();
  const double kernels = params * kCompressionKernelBytesPerParam / c.gpu.hbm_achieved_Bps() /
                         c.gpu.sustained_efficiency;
  CHECK(onebit.breakdown.dp_comm_s == doctest::Approx(onebit.dp_comm_total_s + kernels));
  std::string why;
  EstimateOptions o;
  o.framework = Framework::deepspeed;
  CHECK(check_plan(m, stack_for(Framework::deepspeed, c),
                   plan(base + ",zero=1,grad_compression=onebit_adam"), o,
                   &why) == Rejection::zero_invalid);
  CHECK(why.find("not compatible with ZeRO") != std::string::npos);
  CHECK(check_plan(m, stack_for(Framework::deepspeed, c),
                   plan("tp=2,pp=1,dp=32,mbs=4,gbs=256,grad_compression=onebit_lamb"), o,
                   &why) == Rejection::framework_refuses);
  o.framework = Framework::megatron;
  CHECK(check_plan(m, stack_for(Framework::megatron, c),
                   plan(base + ",grad_compression=zero_one_adam"), o,
                   &why) == Rejection::framework_refuses);
  CHECK(why.find("DeepSpeed's") != std::string::npos);
}

TEST_CASE("compression: the uncompressed warm-up averaged over the run's steps") {
  // 256 sequences of 2,048 tokens a step. 26.8B tokens are 51,200 steps, all inside the 100,000
  // of the warm-up: the plain all-reduce throughout. 268B tokens are 512,000 steps: 100,000 of
  // them plain, the rest compressed.
  const ModelSpec& m = fixtures::model("gpt3-1.3b");
  const ClusterProfile& c = stack_for(Framework::deepspeed, fixtures::cluster("dgx-a100-80gb"));
  const Plan onebit = plan("tp=1,pp=1,dp=64,mbs=4,gbs=256,dtype=fp16,grad_compression=onebit_adam");
  Plan plain = onebit;
  plain.grad_compression = GradCompression::none;
  EstimateOptions o;
  o.framework = Framework::deepspeed;
  const Estimate after = estimate(m, c, onebit, o), uncompressed = estimate(m, c, plain, o);
  o.train_tokens = 51200.0 * 256 * 2048;
  const Estimate short_run = estimate(m, c, onebit, o);
  o.train_tokens = 512000.0 * 256 * 2048;
  const Estimate long_run = estimate(m, c, onebit, o);
  REQUIRE((after.ok() && uncompressed.ok() && short_run.ok() && long_run.ok()));
  CHECK(short_run.dp_comm_total_s == doctest::Approx(uncompressed.dp_comm_total_s));
  CHECK(short_run.breakdown.dp_comm_s == doctest::Approx(uncompressed.breakdown.dp_comm_s));
  const double f = 100000.0 / 512000;
  CHECK(long_run.dp_comm_total_s ==
        doctest::Approx(f * uncompressed.dp_comm_total_s + (1 - f) * after.dp_comm_total_s));
  CHECK(long_run.breakdown.dp_comm_s == doctest::Approx(f * uncompressed.breakdown.dp_comm_s +
                                                        (1 - f) * after.breakdown.dp_comm_s));
  // The compressed plan names no all-reduce algorithm: it runs none.
  CHECK(after.dp_bucket_bytes == 0);
}

TEST_CASE("activation offload: Megatron-LM's --cpu-offloading-num-layers, priced per layer") {
  const ModelSpec& m = llama8();
  const ClusterProfile c = stack_for(Framework::megatron, h100());
  const std::string base = "tp=1,pp=1,dp=8,mbs=1,gbs=64,zero=1,recompute=none";
  EstimateOptions o;
  o.framework = Framework::megatron;
  o.memory_limit_bytes = 1e15;  // the costs, whether or not they fit
  auto with = [&](int n) {
    return estimate(m, c, plan(base + ",offload_activations=" + std::to_string(n)), o);
  };
  const Estimate none = with(0), e8 = with(8), e24 = with(24);
  REQUIRE((none.ok() && e8.ok() && e24.ok()));
  // The offloaded layers' activations leave the GPU but for the one being reloaded: 7 and 23
  // layers' worth, one micro-batch in flight.
  const double layer = (none.memory.activations - e8.memory.activations) / 7;
  CHECK(layer > 0);
  CHECK(none.memory.activations - e24.memory.activations == doctest::Approx(23 * layer));
  // Each layer's transfer down and up beside a layer's forward and backward: exposed in
  // proportion to the layers, for every micro-batch; its bytes each way per iteration.
  CHECK(e24.breakdown.offload_s == doctest::Approx(3 * e8.breakdown.offload_s));
  CHECK(e8.offload_d2h_bytes == doctest::Approx(8 * 8 * layer));  // 8 micro-batches of 1
  CHECK(e8.offload_h2d_bytes == doctest::Approx(e8.offload_d2h_bytes));
  CHECK(e8.host_memory_bytes == doctest::Approx(8 * layer * 8));  // 8 ranks a node
  // On the 80 GB GPU the plan does not fit without it and fits with 30 of its 32 layers offloaded.
  o.memory_limit_bytes = 0;
  CHECK(estimate(m, c, plan(base), o).rejection == Rejection::out_of_memory);
  CHECK(with(30).ok());
  // Megatron-LM's TransformerConfig: no pipeline, no recomputation, fewer layers than the model.
  std::string why;
  CHECK(check_plan(m, c, plan("tp=1,pp=2,dp=4,mbs=1,gbs=64,zero=1,offload_activations=8"), o,
                   &why) == Rejection::framework_refuses);
  CHECK(why.find("--cpu-offloading-num-layers") != std::string::npos);
  CHECK(check_plan(m, c, plan(base + ",recompute=selective,offload_activations=8"), o, &why) ==
        Rejection::framework_refuses);
  CHECK(check_plan(m, c, plan(base + ",offload_activations=32"), o, &why) ==
        Rejection::offload_invalid);
  EstimateOptions ds = o;
  ds.framework = Framework::deepspeed;
  CHECK(check_plan(m, stack_for(Framework::deepspeed, h100()),
                   plan(base + ",offload_activations=8"), ds,
                   &why) == Rejection::framework_refuses);
  // Without a host block it is not planned.
  ClusterProfile bare = c;
  bare.host = Host{};
  CHECK(check_plan(m, bare, plan(base + ",offload_activations=8"), o, &why) ==
        Rejection::offload_invalid);
}
