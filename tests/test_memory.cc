#include <doctest/doctest.h>
#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <utility>

#include "fixtures.h"
#include "planner/cost/memory.h"
#include "planner/cost/stages.h"
#include "planner/estimate.h"
#include "planner/framework.h"
#include "planner/io/cluster_io.h"
#include "planner/io/model_io.h"
#include "planner/units.h"

using namespace planner;

namespace {
// GPT-3 175B shape: s = 2048, h = 12288, a = 96 (5as/h = 80, Korthikanti section 4.1).
ModelSpec gpt3() {
  ModelSpec m;
  m.name = "gpt3";
  m.layers = 96, m.hidden = 12288, m.heads = 96, m.kv_heads = 96, m.ffn = 4 * 12288;
  m.vocab = 51200, m.seq_len = 2048;
  return m;
}
constexpr double s = 2048, b = 1, h = 12288, a = 96, t = 8, sbh = s * b * h;
/// The estimate's bytes on the most loaded stage (memory limit out of the way) and
/// memory_per_gpu's worst stage on the same plan: they must agree.
std::pair<double, double> estimated_and_reference(const ModelSpec& m, const ClusterProfile& c,
                                                  const Plan& p) {
  EstimateOptions o;
  o.memory_limit_bytes = 1e15;  // only the bytes matter here
  const Estimate e = estimate(m, c, p, o);
  double worst = 0;
  for (int s = 0; s < p.pp; ++s)
    worst = std::max(worst, memory_per_gpu(m, p, c.gpu, c.software.attention, s).total());
  return {e.memory_bytes, worst};
}
}  // namespace

TEST_CASE("activation memory per layer follows Korthikanti et al. 2022 Table 2") {
  const ModelSpec m = gpt3();
  const auto unfused = AttentionKernel::unfused;
  SUBCASE("no parallelism: sbh(34 + 5as/h)") {
    CHECK(activation_bytes_per_layer(m, 1, 1, 1, false, Recompute::none, unfused) ==
          doctest::Approx(sbh * (34 + 5 * a * s / h)));
  }
  SUBCASE("tensor parallel: sbh(10 + 24/t + 5as/(ht))") {
    CHECK(activation_bytes_per_layer(m, 1, 8, 1, false, Recompute::none, unfused) ==
          doctest::Approx(sbh * (10 + 24 / t + 5 * a * s / (h * t))));
  }
  SUBCASE("tensor + sequence parallel: sbh/t (34 + 5as/h)") {
    CHECK(activation_bytes_per_layer(m, 1, 8, 1, true, Recompute::none, unfused) ==
          doctest::Approx(sbh / t * (34 + 5 * a * s / h)));
  }
  SUBCASE("tensor parallel + selective recompute: sbh(10 + 24/t)") {
    CHECK(activation_bytes_per_layer(m, 1, 8, 1, false, Recompute::selective, unfused) ==
          doctest::Approx(sbh * (10 + 24 / t)));
  }
  SUBCASE("TP + SP + selective: 34 sbh / t") {
    CHECK(activation_bytes_per_layer(m, 1, 8, 1, true, Recompute::selective, unfused) ==
          doctest::Approx(34 * sbh / t));
  }
  SUBCASE("full recompute keeps the layer input: 2 sbh") {
    CHECK(activation_bytes_per_layer(m, 1, 8, 1, false, Recompute::full, unfused) ==
          doctest::Approx(2 * sbh));
  }
  SUBCASE("flash attention keeps no s^2 tensor, only fp32 softmax statistics 4as b / t") {
    CHECK(activation_bytes_per_layer(m, 1, 8, 1, true, Recompute::none, AttentionKernel::flash) ==
          doctest::Approx(34 * sbh / t + 4 * a * s * b / t));
  }
}

TEST_CASE("selective recompute saves 70% (GPT-3) and 65% (MT-NLG), as Korthikanti reports") {
  const ModelSpec g = gpt3();
  const auto unfused = AttentionKernel::unfused;
  const double none = activation_bytes_per_layer(g, 1, 8, 1, true, Recompute::none, unfused);
  const double sel = activation_bytes_per_layer(g, 1, 8, 1, true, Recompute::selective, unfused);
  CHECK(1 - sel / none == doctest::Approx(0.70).epsilon(0.01));  // 1 - 34/114
  ModelSpec mt = g;  // MT-NLG 530B: h = 20480, a = 128 -> 5as/h = 64
  mt.hidden = 20480, mt.heads = 128, mt.kv_heads = 128, mt.ffn = 4 * 20480;
  const double none2 = activation_bytes_per_layer(mt, 1, 8, 1, true, Recompute::none, unfused);
  const double sel2 = activation_bytes_per_layer(mt, 1, 8, 1, true, Recompute::selective, unfused);
  CHECK(1 - sel2 / none2 == doctest::Approx(0.65).epsilon(0.01));  // 1 - 34/98
}

TEST_CASE(
    "model states follow Megatron's theoretical memory: 18 bytes/param, 6 + 12/dp with ZeRO-1") {
  const ModelSpec m = gpt3();
  Plan p;
  p.tp = 8, p.pp = 8, p.dp = 16, p.mbs = 1, p.gbs = 1536;
  const double params = stage_params_per_rank(m, p, 3);  // a middle stage: 12 layers / 8
  CHECK(params == doctest::Approx(12 * m.layer_params() / 8));
  MemoryBreakdown mem = memory_per_gpu(m, p, Gpu{}, AttentionKernel::unfused, 3);
  CHECK(mem.weights + mem.grads + mem.optimizer == doctest::Approx(18 * params));
  p.zero = 1;
  mem = memory_per_gpu(m, p, Gpu{}, AttentionKernel::unfused, 3);
  CHECK(mem.weights + mem.grads + mem.optimizer == doctest::Approx((6 + 12.0 / 16) * params));
  p.zero = 3, p.pp = 1;  // ZeRO-3 shards all 18 bytes, plus two gathered h x 4h matrices
  mem = memory_per_gpu(m, p, Gpu{}, AttentionKernel::unfused, 0);
  const double p1 = stage_params_per_rank(m, p, 0);
  CHECK(mem.weights + mem.grads + mem.optimizer ==
        doctest::Approx(18 * p1 / 16 + 2 * 2 * (4.0 * 12288 * 12288) / 8));
}

TEST_CASE("the first 1F1B stage holds pp micro-batches; interleaving adds (p-1)/v") {
  Plan p;
  p.tp = 8, p.pp = 8, p.dp = 16, p.mbs = 1, p.gbs = 1536;  // 96 micro-batches
  CHECK(microbatches_in_flight(p) == 8);
  p.schedule = Schedule::interleaved, p.vpp = 3;
  CHECK(microbatches_in_flight(p) == doctest::Approx(8 + 7.0 / 3));  // 8 (1 + 7/24)
  p.schedule = Schedule::gpipe, p.vpp = 1;
  CHECK(microbatches_in_flight(p) == 96);
  p.schedule = Schedule::one_f_one_b, p.gbs = 16 * 4;  // 4 micro-batches < 8 stages
  CHECK(microbatches_in_flight(p) == 4);
  // Later stages under interleaving: Megatron-LM's warm-up, 2 chunk forwards fewer a stage
  // (2/v of a micro-batch), capped at the micro-batches; the 2021 code ran every forward first
  // when m = pp.
  p.schedule = Schedule::interleaved, p.vpp = 3, p.gbs = 1536;
  const InFlight f(p);
  CHECK(f.on(0) == doctest::Approx(microbatches_in_flight(p)));
  for (int s = 0; s < p.pp; ++s)
    CHECK(f.on(s) == doctest::Approx((2.0 * (p.pp - s - 1) + 2.0 * p.pp + 1) / 3));
  p.gbs = 16 * 8;  // 8 micro-batches = 8 stages
  CHECK(InFlight(p).on(7) == doctest::Approx((2.0 * 8 + 1) / 3));
  CHECK(InFlight(p, true).on(7) == 8);
  CHECK(InFlight(p, true).on(0) == 8);
}

TEST_CASE("the first stage stores L layers of activations under 1F1B (Korthikanti section 4.2)") {
  const ModelSpec m = gpt3();
  Plan p;
  p.tp = 8, p.pp = 8, p.dp = 16, p.mbs = 1, p.gbs = 1536, p.sp = true,
  p.recompute = Recompute::selective;
  const MemoryBreakdown mem = memory_per_gpu(m, p, Gpu{}, AttentionKernel::unfused, 0);
  // (34 sbh / t) x L, plus the embedding dropout mask sbh p / t, plus the backward working set of
  // one layer without recompute, (sbh / t)(34 + 5as/h) = 114 sbh / t.
  CHECK(mem.activations == doctest::Approx(34 * sbh / t * 96 + sbh * 8 / t + 114 * sbh / t));
  // Korthikanti's part alone: 34 x 2048 x 12288 / 8 x 96 = 10.27e9 bytes
  CHECK((mem.activations - 114 * sbh / t - sbh * 8 / t) / 1e9 ==
        doctest::Approx(10.27).epsilon(0.01));
}

TEST_CASE("the estimate's per-stage memory is this file's formula for an evenly split decoder") {
  // memory_per_gpu() spells out Korthikanti's terms for a plain decoder; the planner's own path
  // (plan_costs + build_stages + stage_memory) must give the same bytes on the same plan.
  const ClusterProfile c = io::load_cluster(PLANNER_SOURCE_DIR "/hw_profiles/dgx-a100-80gb.yaml");
  const ModelSpec m = gpt3();
  for (Recompute r : {Recompute::none, Recompute::selective, Recompute::full}) {
    Plan p;
    p.tp = 8, p.pp = 8, p.dp = 16, p.mbs = 1, p.gbs = 1536, p.sp = true, p.recompute = r,
    p.zero = 1;
    const auto [estimated, reference] = estimated_and_reference(m, c, p);
    CHECK(estimated == doctest::Approx(reference));
  }
}

TEST_CASE("tf32 keeps fp32 tensors: 4-byte weights and activations, fp32 weights as the master") {
  const ModelSpec m = gpt3();
  const auto unfused = AttentionKernel::unfused;
  // Korthikanti's 34 sbh + 5as^2b is 32 sbh of 2-byte tensors and 2 sbh of 1-byte dropout masks,
  // 4 as^2b of 2-byte scores and softmax and as^2b of mask: (16e + 2) sbh + (2e + 1) as^2b for
  // e-byte elements, so 66 sbh + 9 as^2b with e = 4.
  const double per_layer = sbh * (66 + 9 * a * s / h);
  CHECK(activation_bytes_per_layer(m, 1, 1, 1, false, Recompute::none, unfused, Dtype::tf32) ==
        doctest::Approx(per_layer));
  CHECK(activation_bytes_per_layer(m, 1, 1, 1, false, Recompute::full, unfused, Dtype::tf32) ==
        doctest::Approx(4 * sbh));
  // One GPU, no parallelism: the whole model on the stage, one micro-batch in flight.
  Plan p;
  p.tp = 1, p.pp = 1, p.dp = 1, p.mbs = 1, p.gbs = 1, p.dtype = Dtype::tf32;
  const MemoryBreakdown mem = memory_per_gpu(m, p, Gpu{}, unfused, 0);
  const double params = stage_params_per_rank(m, p, 0);
  CHECK(mem.weights == doctest::Approx(4 * params));    // fp32 weights
  CHECK(mem.grads == doctest::Approx(4 * params));      // fp32 gradients
  CHECK(mem.optimizer == doctest::Approx(8 * params));  // Adam's m and v; no separate master
  // 96 layers, the embedding's mask sbh, one layer's working set, the last stage's fp32 norm and
  // output-GEMM inputs 8 sbh and fp32 logits 4 sbv (no 16-bit copy to cast).
  CHECK(mem.activations ==
        doctest::Approx(96 * per_layer + sbh + per_layer + 8 * sbh + 4 * s * b * m.vocab));
  // bf16 on the same plan: Megatron's 2 + 4 + 12 bytes a parameter, 2-byte activations.
  p.dtype = Dtype::bf16;
  const MemoryBreakdown half = memory_per_gpu(m, p, Gpu{}, unfused, 0);
  CHECK(half.weights + half.grads + half.optimizer == doctest::Approx(18 * params));
  const double half_layer = sbh * (34 + 5 * a * s / h);
  CHECK(half.activations ==
        doctest::Approx(96 * half_layer + sbh + half_layer + 4 * sbh + 6 * s * b * m.vocab));
}

TEST_CASE("tf32: the estimate's memory is the same closed form") {
  const ClusterProfile c = io::load_cluster(PLANNER_SOURCE_DIR "/hw_profiles/dgx-a100-80gb.yaml");
  const ModelSpec m = gpt3();
  Plan p;
  p.tp = 8, p.pp = 8, p.dp = 16, p.mbs = 1, p.gbs = 1536, p.sp = true, p.zero = 1,
  p.dtype = Dtype::tf32;
  const auto [estimated, reference] = estimated_and_reference(m, c, p);
  CHECK(estimated == doctest::Approx(reference));
  Plan half = p;
  half.dtype = Dtype::bf16;
  CHECK(estimated > estimated_and_reference(m, c, half).first);
}

TEST_CASE("grad_reduce_bf16: 2-byte gradients and DP traffic, an fp32 copy at the step") {
  // Megatron-LM's --grad-reduce-in-bf16: the DDP buffers take the bf16 parameters' dtype (2 bytes
  // a parameter, not 4) and the reduction moves them; the optimizer step then copies the
  // gradients it steps to fp32 (all of this rank's at zero=0, its 1/dp shard under the
  // distributed optimizer), after the activations are freed. GPT-3 175B at tp=8, dp=16 on A100s.
  const ClusterProfile c = io::load_cluster(PLANNER_SOURCE_DIR "/hw_profiles/dgx-a100-80gb.yaml");
  const ModelSpec m = gpt3();
  for (int zero : {0, 1, 2}) {
    CAPTURE(zero);
    Plan p;
    // pp=1 but at zero=1: where the step's copy outgrows the activations (zero=0) the most
    // loaded of several stages could change, and zero=2 runs without a pipeline.
    p.tp = 8, p.pp = zero == 1 ? 8 : 1, p.dp = 16, p.mbs = 1, p.gbs = 1536, p.sp = true;
    p.zero = zero, p.recompute = Recompute::selective;
    EstimateOptions o;
    o.memory_limit_bytes = 1e15;
    const Estimate fp32 = estimate(m, c, p, o);
    p.grad_reduce_bf16 = true;
    const Estimate bf16 = estimate(m, c, p, o);
    REQUIRE(fp32.rejection == Rejection::none);
    REQUIRE(bf16.rejection == Rejection::none);
    const MemoryBreakdown &a = fp32.memory, &b = bf16.memory;
    const double params = a.weights / kWeightBytesPerParam;  // this rank's (zero < 3)
    const double shards = zero >= 2 ? p.dp : 1;
    CHECK(a.grads == doctest::Approx(params * 4 / shards));
    CHECK(b.grads == doctest::Approx(params * 2 / shards));
    CHECK(a.step_grads == 0);
    CHECK(b.step_grads == doctest::Approx(params * 4 / (zero >= 1 ? p.dp : 1)));
    CHECK(b.weights == a.weights);
    CHECK(b.optimizer == a.optimizer);
    CHECK(b.activations == a.activations);
    CHECK(b.total() == doctest::Approx(b.weights + b.grads + b.optimizer +
                                       std::max(b.activations, b.step_grads) + b.reserve));
    // The traffic: zero=0 all-reduces the gradients (4 or 2 bytes a parameter: half, a little
    // more as the halved buckets sit lower on NCCL's bandwidth curve); ZeRO-1/2 reduce-scatter
    // them and all-gather the bf16 parameters (2 bytes), 6 against 4 units.
    const double ratio = bf16.dp_comm_total_s / fp32.dp_comm_total_s;
    if (zero == 0) {
      CHECK(ratio >= 0.5);
      CHECK(ratio < 0.55);
    } else {
      CHECK(ratio == doctest::Approx(4.0 / 6).epsilon(0.02));
    }
  }
  // fp16 and tf32 plans refuse it (fp16 gradients are 16-bit already; tf32 keeps fp32).
  for (Dtype d : {Dtype::fp16, Dtype::tf32}) {
    Plan p;
    p.tp = 8, p.pp = 8, p.dp = 16, p.mbs = 1, p.gbs = 1536, p.dtype = d, p.grad_reduce_bf16 = true;
    EstimateOptions o;
    o.memory_limit_bytes = 1e15;
    CHECK(estimate(m, c, p, o).rejection == Rejection::dtype_unsupported);
  }
}

TEST_CASE("torchtitan's published peak memory (H100, end of 2024): the full-AC rows within 25%") {
  // pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md, Tables 2 and 4-6: Llama 3.1
  // on Grand Teton H100 96 GB with FSDP2 (+ TP, PP, CP), torch.compile, Float8, full activation
  // checkpointing; "Memory(GiB)" the peak reserved memory across GPUs (train.py's memory
  // monitor). A pipeline's micro-batches are its degree there (pipelining_utils.py at 9dec370):
  // 8 of 4 sequences (1F1B and interleaved), 8 of 1 at a local batch of 8. Those runs' loss is
  // 9dec370's, on an fp32 copy of all the logits (LossKernel::pytorch_fp32), not b5bcd76c's
  // chunked one the torchtitan stack prices. Tables 1 and 3 use selective checkpointing, which
  // the planner does not price for torchtitan.
  struct Row {
    const char* model;
    int tp, pp, dp, cp, mbs, gbs, seq, vpp;
    bool async_tp;
    double published_GiB;
  };
  const Row rows[] = {
      {"llama3-8b", 1, 1, 8, 1, 1, 8, 32768, 1, false, 83.9},
      {"llama3-8b", 1, 1, 4, 2, 1, 4, 65536, 1, false, 84.2},
      {"llama3-8b", 1, 1, 2, 4, 1, 2, 131072, 1, false, 84.0},
      {"llama3-8b", 1, 1, 1, 8, 1, 1, 262144, 1, false, 84.5},
      {"llama3-70b", 8, 1, 32, 1, 16, 512, 8192, 1, false, 71.9},
      {"llama3-70b", 8, 1, 32, 1, 16, 512, 8192, 1, true, 67.6},
      {"llama3-405b", 8, 8, 8, 1, 4, 256, 8192, 1, true, 82.5},
      {"llama3-405b", 8, 8, 8, 1, 4, 256, 8192, 2, true, 72.7},
      {"llama3-405b", 8, 8, 8, 1, 1, 64, 32768, 1, true, 75.3},
      {"llama3-405b", 8, 8, 4, 2, 1, 32, 65536, 1, true, 75.9},
      {"llama3-405b", 8, 8, 2, 4, 1, 16, 131072, 1, true, 77.1},
      {"llama3-405b", 8, 8, 1, 8, 1, 8, 262144, 1, true, 84.9},
  };
  ClusterProfile c = fixtures::cluster("dgx-h100-80gb");
  c.software = execution_stack(Framework::torchtitan, c);
  c.software.loss = LossKernel::pytorch_fp32;
  double sum = 0;
  for (const Row& r : rows) {
    CAPTURE(r.model);
    CAPTURE(r.seq);
    ModelSpec m = fixtures::model(r.model);
    m.seq_len = r.seq;
    Plan p;
    p.tp = r.tp, p.pp = r.pp, p.dp = r.dp, p.cp = r.cp, p.mbs = r.mbs, p.gbs = r.gbs;
    p.vpp = r.vpp, p.zero = 3, p.recompute = Recompute::full, p.sp = r.tp > 1;
    p.dtype = Dtype::fp8, p.tp_comm_overlap = r.async_tp;
    if (r.pp > 1) p.split = PipelineSplit::embed_loss;  // 126 + 2 layers on 8 stages
    p.schedule = r.vpp > 1 ? Schedule::interleaved : Schedule::one_f_one_b;
    EstimateOptions o;
    o.framework = Framework::torchtitan;
    o.memory_limit_bytes = 1e15;
    const Estimate e = refine(m, c, p, o);
    REQUIRE(e.ok());
    const double err = e.memory_bytes / (r.published_GiB * 1024 * 1024 * 1024) - 1;
    CAPTURE(err);
    CHECK(std::abs(err) < 0.25);
    sum += std::abs(err);
  }
  const double mean = sum / std::size(rows);
  CAPTURE(mean);
  CHECK(mean < 0.12);  // 8.3% (README, Measured accuracy)
}

TEST_CASE("the loss's logits: Megatron's in place, torchtitan's fp32 copies, whole or chunked") {
  // Llama 3 8B, one sequence of 8192 tokens: sbh = 8192 x 4096, sbv = 8192 x 128256 (/ tp).
  const ModelSpec& m = fixtures::model("llama3-8b");
  const double sbh = 8192.0 * 4096, sbv = 8192.0 * 128256;
  for (int tp : {1, 4}) {
    CAPTURE(tp);
    Plan p;
    p.tp = tp, p.mbs = 1;
    const double head = 2 * 2 * sbh / tp;  // the final norm's and the output GEMM's inputs
    CHECK(logits_bytes(m, p) == doctest::Approx(head + (4 + 2) * sbv / tp));
    const double copies = tp > 1 ? 4 : 3;  // the backward's fp32 tensors (memory.h)
    CHECK(logits_bytes(m, p, LossKernel::pytorch_fp32) ==
          doctest::Approx(head + 4 * copies * sbv / tp));
    // One of eight chunks at a time, with its 16-bit logits, plus the fp32 gradient
    // accumulator of the (TP-replicated) hidden states and their 16-bit chunk copies.
    CHECK(logits_bytes(m, p, LossKernel::chunked_fp32) ==
          doctest::Approx(head + (4 * copies + 2) * sbv / tp / 8 + (4 + 2) * sbh));
    // The fused kernels: Megatron-Core's native one keeps the unfused one's tensors; Transformer
    // Engine's writes the gradient over the 16-bit logits and keeps nothing else.
    p.loss_fusion = LossFusion::native;
    CHECK(logits_bytes(m, p) == doctest::Approx(head + (4 + 2) * sbv / tp));
    p.loss_fusion = LossFusion::te;
    CHECK(logits_bytes(m, p) == doctest::Approx(head + 2 * sbv / tp));
  }
  // Both fused kernels take bf16 logits: fp16 and tf32 plans refuse them.
  for (Dtype d : {Dtype::fp16, Dtype::tf32}) {
    Plan p;
    p.tp = 8, p.dp = 8, p.mbs = 1, p.gbs = 64, p.dtype = d, p.loss_fusion = LossFusion::native;
    EstimateOptions o;
    o.memory_limit_bytes = 1e15;
    CHECK(estimate(m, fixtures::cluster("dgx-h100-80gb"), p, o).rejection ==
          Rejection::dtype_unsupported);
  }
  // The torchtitan stack prices the chunked loss its recipes run, Megatron's its own.
  const ClusterProfile& c = fixtures::cluster("dgx-h100-80gb");
  CHECK(execution_stack(Framework::torchtitan, c).loss == LossKernel::chunked_fp32);
  CHECK(execution_stack(Framework::megatron, c).loss == LossKernel::vocab_parallel_in_place);
  CHECK(execution_stack(Framework::deepspeed, c).loss == LossKernel::vocab_parallel_in_place);
}

TEST_CASE("torchtitan's FSDP2 under a pipeline: the stage gathered, gradients unsharded, once") {
  // Llama 3 70B, tp=4, pp=4, dp=4, zero=3 on 64 H100s (torchtitan): the stage's weights stay
  // gathered (2 bytes a parameter beside the sharded copy) and its gradients accumulate
  // unsharded in fp32 (4 bytes) until the last micro-batch; the DP traffic is one forward's
  // gathers and one reduce-scatter a step, whatever the micro-batch count.
  const ModelSpec& m = fixtures::model("llama3-70b");
  ClusterProfile c = fixtures::cluster("dgx-h100-80gb");
  c.software = execution_stack(Framework::torchtitan, c);
  auto run = [&](int gbs) {
    Plan p;
    p.tp = 4, p.pp = 4, p.dp = 4, p.mbs = 1, p.gbs = gbs, p.zero = 3, p.sp = true;
    p.recompute = Recompute::full;
    EstimateOptions o;
    o.framework = Framework::torchtitan;
    o.memory_limit_bytes = 1e15;
    const Estimate e = estimate(m, c, p, o);
    REQUIRE(e.ok());
    return e;
  };
  const Estimate a = run(64), b = run(256);
  const double params = a.memory.grads / 4;  // this rank's stage, unsharded
  CHECK(a.memory.weights == doctest::Approx(params * 2 / 4 + params * 2));
  CHECK(a.memory.optimizer == doctest::Approx(params * 12 / 4));
  CHECK(b.dp_comm_total_s == doctest::Approx(a.dp_comm_total_s));  // 16 or 64 micro-batches
  CHECK(b.breakdown.dp_comm_s == doctest::Approx(a.breakdown.dp_comm_s));
  CHECK(a.breakdown.dp_comm_s > 0);  // the final reduce-scatter, after the last backward
  // Without a pipeline ZeRO-3 gathers and reduce-scatters every micro-batch.
  Plan q;
  q.tp = 8, q.pp = 1, q.dp = 8, q.mbs = 1, q.zero = 3, q.sp = true, q.recompute = Recompute::full;
  EstimateOptions o;
  o.framework = Framework::torchtitan;
  o.memory_limit_bytes = 1e15;
  q.gbs = 16;
  const Estimate two = estimate(m, c, q, o);
  q.gbs = 32;
  const Estimate four = estimate(m, c, q, o);
  CHECK(four.dp_comm_total_s == doctest::Approx(2 * two.dp_comm_total_s).epsilon(0.01));
}

TEST_CASE("Megatron-LM's own memory tests at d98e8a64: max allocated against the model") {
  // tests/functional_tests/test_cases/gpt/gpt3_7b_tp{4_pp1,1_pp4}_memory_speed: 8 H100s, bf16,
  // the distributed optimizer, no recomputation; golden_values_dev_dgx_h100.json's
  // mem-max-allocated-bytes over steps 2-25 (torch.cuda.max_memory_allocated on the last rank,
  // TensorBoard's writer). PyTorch's allocated bytes hold no CUDA context, NCCL buffers or
  // fragmentation: the planner's total less its reserve for them.
  const ModelSpec m =
      io::load_model(PLANNER_SOURCE_DIR "/tests/data/megatron-ci/gpt3-7b-memory.yaml");
  const ClusterProfile& c = fixtures::cluster("dgx-h100-80gb");
  struct Row {
    const char* plan;
    double measured_bytes;
  };
  for (const Row& r :
       {Row{"tp=4,pp=1,dp=2,mbs=2,gbs=8,zero=1,recompute=none,sp=0", 57143791616.0},
        Row{"tp=1,pp=4,dp=2,vpp=8,mbs=1,gbs=8,zero=1,recompute=none,sp=0", 60720852992.0}}) {
    CAPTURE(r.plan);
    const Plan p = parse_plan(r.plan, "--plan");
    const Estimate e = estimate(m, c, p);
    REQUIRE(e.ok());
    // The last pipeline stage, as measured (the estimate reports the most loaded one).
    const BlockLayout layout = block_layout(m);
    const PlanCosts pc = plan_costs(m, c, p, layout, nullptr);
    Partition part;
    even_partition(layout.count(), p.pp * p.vpp, part);
    const Stages st = build_stages(layout, pc, p, part);
    const MemoryBreakdown last = stage_memory(st.load[p.pp - 1], p, InFlight(p).on(p.pp - 1));
    const double predicted = last.total() - last.reserve;
    const double err = predicted / r.measured_bytes - 1;
    MESSAGE(
        fmt::format("{}: predicted {:.2f} GiB allocated on the last stage, measured {:.2f} "
                    "GiB, {:+.1f}%",
                    r.plan, predicted / kGiB, r.measured_bytes / kGiB, 100 * err));
    CHECK(std::fabs(err) < 0.05);
  }
}

TEST_CASE("recompute_layers: the estimate's memory is this file's formula, between none and full") {
  const ClusterProfile c = io::load_cluster(PLANNER_SOURCE_DIR "/hw_profiles/dgx-a100-80gb.yaml");
  const ModelSpec m = gpt3();
  for (int vpp : {1, 2})
    for (int n : {1, 3, 12}) {
      CAPTURE(vpp);
      CAPTURE(n);
      Plan p;
      p.tp = 8, p.pp = 8, p.dp = 16, p.mbs = 1, p.gbs = 1536, p.sp = true, p.zero = 1;
      p.vpp = vpp, p.recompute = Recompute::full, p.recompute_layers = n;
      if (vpp > 1) p.schedule = Schedule::interleaved;
      // 96 layers over pp=8: n of each of the vpp chunks of 12 / vpp layers.
      CHECK(p.recomputed_share(12) == doctest::Approx(std::min(1.0, n * vpp / 12.0)));
      const auto [estimated, reference] = estimated_and_reference(m, c, p);
      CHECK(estimated == doctest::Approx(reference));
      Plan none = p, every = p;
      none.recompute = Recompute::none, none.recompute_layers = 0, every.recompute_layers = 0;
      CHECK(every.recomputed_share(12) == 1.0);  // recompute_layers 0: every layer
      // 12 layers a stage, 12 / vpp a chunk: n at least that recomputes every layer.
      const double all = estimated_and_reference(m, c, every).first;
      if (n >= 12 / vpp)
        CHECK(estimated == doctest::Approx(all));
      else
        CHECK(estimated > all);
      CHECK(estimated < estimated_and_reference(m, c, none).first);
    }
}
