// FP8 as Transformer Engine runs it (issue 16, item 1), and the attention kernel's rate against
// the keys per call (item 2): each mechanism against its closed form.
#include <doctest/doctest.h>

#include <string>

#include "fixtures.h"
#include "planner/cost/communication.h"
#include "planner/cost/compute.h"
#include "planner/cost/memory.h"
#include "planner/cost/stages.h"
#include "planner/error.h"
#include "planner/estimate.h"
#include "planner/framework.h"
#include "planner/io/cluster_io.h"
#include "planner/io/model_io.h"
#include "planner/validate.h"

using namespace planner;

namespace {
const ClusterProfile& h100() { return fixtures::cluster("dgx-h100-80gb"); }
const ModelSpec& llama70() { return fixtures::model("llama3-70b"); }
double sum(const std::vector<Kernel>& ks, const std::string& name, Pass pass) {
  double t = 0;
  for (const Kernel& k : ks)
    if (k.name == name && k.pass == pass) t += k.time_s;
  return t;
}
}  // namespace

TEST_CASE("fp8: linears at the FP8 peak times the calibrated FP8/bf16 efficiency ratio") {
  const Gpu& g = h100().gpu;
  const GemmShape big{8192, 8192, 8192};  // compute-bound in both precisions
  const double bf16 = gemm_time_s(g, Dtype::bf16, big) - g.gemm.launch_s;
  const double fp8 = gemm_time_s(g, Dtype::fp8, big) - g.gemm.launch_s;
  const double peaks = g.peak_flops[int(Dtype::fp8)] / g.peak_flops[int(Dtype::bf16)];
  CHECK(bf16 / fp8 == doctest::Approx(peaks * kFp8GemmRelativeEfficiency));
  CHECK(kFp8GemmRelativeEfficiency == doctest::Approx(1.78 / 2).epsilon(0.01));  // the H200's
}

TEST_CASE("fp8: attention and the output layer stay bf16; each linear casts in and out") {
  const ModelSpec& m = llama70();
  LayerConfig bf16{4, 1, 1, true, Dtype::bf16, AttentionKernel::flash};
  LayerConfig fp8 = bf16;
  fp8.dtype = Dtype::fp8;
  const LayerShape l = m.decoder_shape();
  const std::vector<Kernel> kb = layer_kernels(l, h100(), bf16), kf = layer_kernels(l, h100(), fp8);
  for (Pass p : {Pass::forward, Pass::backward_data})
    CHECK(sum(kf, "flash_attention", p) == doctest::Approx(sum(kb, "flash_attention", p)));
  const HeadCompute hb = head_compute(m, h100(), bf16), hf = head_compute(m, h100(), fp8);
  CHECK(hf.logits_fwd_s == doctest::Approx(hb.logits_fwd_s));
  CHECK(hf.logits_bwd_s == doctest::Approx(hb.logits_bwd_s));
  // Delayed scaling (the default), tp=4 with SP: the norms fused into QKV and fc1 write FP8
  // row-wise on this rank's rows, which are gathered and transposed in the backward (2 bytes an
  // element of the gathered rows); the projection's and fc2's gradients are cast row-wise on this
  // rank's rows before their gather (3 bytes) and transposed after it; the other tensors (the
  // projection's and fc2's inputs, QKV's and fc1's gradients) take a cast-transpose, 4 bytes.
  // Nothing of the kind under bf16.
  auto bytes = [](const std::vector<Kernel>& ks, const char* name, Pass p) {
    double b = 0;
    for (const Kernel& k : ks)
      if (std::string(k.name) == name && k.pass == p) b += k.bytes;
    return b;
  };
  int casts = 0;
  for (const Kernel& k : kb)
    CHECK((std::string(k.name) != "fp8_cast" && std::string(k.name) != "fp8_transpose"));
  for (const Kernel& k : kf) casts += std::string(k.name) == "fp8_cast";
  CHECK(casts == 6);
  const double t = 4, s = m.seq_len, h = m.hidden, f = m.ffn, d = m.head_dim();
  const double qkv = (m.heads + 2.0 * m.kv_heads) * d / t, q = m.heads * d / t;
  const double norm_fed_local = s * (h / t + h / t), fwd_other = s * (q + f / t);
  const double bwd_other = s * (qkv + 2 * f / t), grads_local = s * (h / t + h / t);
  const double gathered = s * 4 * h;  // QKV's and fc1's inputs, the projection's and fc2's grads
  CHECK(bytes(kf, "fp8_transpose", Pass::forward) == 0);
  CHECK(bytes(kf, "fp8_transpose", Pass::backward_data) ==
        doctest::Approx(kFp8TransposeBytes * gathered));
  CHECK(bytes(kf, "fp8_cast", Pass::forward) ==
        doctest::Approx(kFp8CastTransposeBytes * fwd_other));
  CHECK(bytes(kf, "fp8_cast", Pass::backward_data) ==
        doctest::Approx(kFp8CastTransposeBytes * bwd_other + kFp8CastRowwiseBytes * grads_local));
  // ... and the two norms write 1 byte an element fewer than under bf16 in the forward; their
  // backward reads the 16-bit input and gradient as before.
  CHECK(bytes(kb, "norm_residual", Pass::forward) - bytes(kf, "norm_residual", Pass::forward) ==
        doctest::Approx(kFp8NormFusedSavedBytes * norm_fed_local));
  CHECK(bytes(kf, "norm_residual", Pass::backward_data) ==
        doctest::Approx(bytes(kb, "norm_residual", Pass::backward_data)));
  // Current scaling (tensorwise): the norms write 16 bits with the amax and the row-wise cast
  // follows; every other tensor is read once more for its amax first.
  LayerConfig cs = fp8;
  cs.fp8_recipe = Fp8Recipe::tensorwise;
  const std::vector<Kernel> kc = layer_kernels(l, h100(), cs);
  CHECK(bytes(kc, "fp8_transpose", Pass::forward) == 0);
  CHECK(bytes(kc, "fp8_transpose", Pass::backward_data) ==
        doctest::Approx(kFp8TransposeBytes * gathered));
  CHECK(bytes(kc, "fp8_cast", Pass::forward) ==
        doctest::Approx(kFp8CastRowwiseBytes * norm_fed_local +
                        (kFp8AmaxBytes + kFp8CastTransposeBytes) * fwd_other));
  CHECK(bytes(kc, "fp8_cast", Pass::backward_data) ==
        doctest::Approx((kFp8AmaxBytes + kFp8CastTransposeBytes) * bwd_other +
                        (kFp8AmaxBytes + kFp8CastRowwiseBytes) * grads_local));
  CHECK(bytes(kc, "norm_residual", Pass::forward) ==
        doctest::Approx(bytes(kb, "norm_residual", Pass::forward)));
  // Without SP nothing is gathered in FP8: the delayed norms' transposes are forward, on every
  // row, and every other tensor takes the cast-transpose.
  LayerConfig no_sp = fp8;
  no_sp.sp = false;
  const std::vector<Kernel> kn = layer_kernels(l, h100(), no_sp);
  CHECK(bytes(kn, "fp8_transpose", Pass::forward) ==
        doctest::Approx(kFp8TransposeBytes * s * 2 * h));
  CHECK(bytes(kn, "fp8_transpose", Pass::backward_data) == 0);
  CHECK(bytes(kn, "fp8_cast", Pass::backward_data) ==
        doctest::Approx(kFp8CastTransposeBytes * (bwd_other + s * 2 * h)));
}

TEST_CASE("fp8: which linears have their norm inside (Transformer Engine's LayerNormLinear)") {
  auto fused = [](const BlockModel& bm, int linear) {
    const Module* x = bm.linear(linear);
    REQUIRE(x != nullptr);
    return x->norm_fused;
  };
  const BlockConfig bc{4, 1, 1, true};
  const BlockModel dense = block_model(llama70().decoder_shape(), bc);
  CHECK(fused(dense, kQkv));
  CHECK(fused(dense, kFc1));
  CHECK_FALSE(fused(dense, kProj));
  CHECK_FALSE(fused(dense, kFc2));
  // Latent attention: the up-projections after their own norms; without q_lora_rank the query
  // projection is a plain column-parallel linear after the separate input norm.
  const ModelSpec ds = io::load_model(PLANNER_SOURCE_DIR "/configs/models/deepseek-v3.json");
  LayerShape mla = ds.moe_shape();
  const BlockModel with_q_lora = block_model(mla, bc);
  CHECK(fused(with_q_lora, kQUp));
  CHECK(fused(with_q_lora, kKvUp));
  CHECK_FALSE(fused(with_q_lora, kQDown));
  // The shared experts' fc1 reads the MoE layer's separate pre-MLP norm.
  CHECK_FALSE(fused(with_q_lora, kFc1));
  mla.mla.q_lora_rank = 0;
  const BlockModel no_q_lora = block_model(mla, bc);
  CHECK_FALSE(fused(no_q_lora, kQUp));
  CHECK(fused(no_q_lora, kKvUp));
  // So under delayed scaling the query projection's input takes the full cast-transpose, and only
  // the key-value norm writes FP8 (with SP its rows are gathered; no tp here).
  LayerConfig cfg{1, 1, 1, false, Dtype::fp8, AttentionKernel::flash};
  LayerConfig bf = cfg;
  bf.dtype = Dtype::bf16;
  const std::vector<Kernel> k8 = layer_kernels(mla, h100(), cfg),
                            kb = layer_kernels(mla, h100(), bf);
  double saved = 0;
  for (const Kernel& k : kb)
    if (std::string(k.name) == "norm_residual" && k.pass == Pass::forward) saved += k.bytes;
  for (const Kernel& k : k8)
    if (std::string(k.name) == "norm_residual" && k.pass == Pass::forward) saved -= k.bytes;
  CHECK(saved == doctest::Approx(kFp8NormFusedSavedBytes * mla.seq * mla.sequences *
                                 double(ds.mla.kv_lora_rank)));
}

TEST_CASE("fp8: torchtitan's float8 linears are torchao's dynamic per-tensor scaling") {
  // No fused norm: every linear's input is read for its amax, then cast; priced as Transformer
  // Engine's tensorwise recipe without the norms' fused amax, and with its TP amax all-reduces.
  const ModelSpec& m = fixtures::model("llama3-8b");
  ClusterProfile te = h100(), ao = h100();
  ao.software = info(Framework::torchtitan).stack;
  CHECK(te.software.transformer_engine);
  CHECK_FALSE(ao.software.transformer_engine);
  CHECK(fp8_current_scaling(Fp8Recipe::delayed, ao.software));
  CHECK_FALSE(fp8_current_scaling(Fp8Recipe::delayed, te.software));
  LayerConfig cfg{1, 1, 1, false, Dtype::fp8, AttentionKernel::flash};
  LayerConfig cs = cfg;
  cs.fp8_recipe = Fp8Recipe::tensorwise;
  const LayerShape l = m.decoder_shape();
  auto cast_bytes = [&](const ClusterProfile& c, const LayerConfig& x) {
    double b = 0;
    for (const Kernel& k : layer_kernels(l, c, x))
      if (std::string(k.name) == "fp8_cast" || std::string(k.name) == "fp8_transpose") b += k.bytes;
    return b;
  };
  const double h = m.hidden, s = m.seq_len;
  // Against TE's tensorwise, the two norm-fed inputs (QKV's, fc1's) are read once more for their
  // amax.
  CHECK(cast_bytes(ao, cfg) - cast_bytes(te, cs) == doctest::Approx(kFp8AmaxBytes * s * 2 * h));
}

TEST_CASE("fp8_recipe=tensorwise: the amax all-reduce over TP, the flag, and who takes it") {
  const ModelSpec& m = fixtures::model("llama3-8b");
  Plan p = parse_plan("tp=4,pp=1,dp=2,gbs=16,sp=1,zero=1,dtype=fp8", "--plan");
  Plan cs = p;
  cs.fp8_recipe = Fp8Recipe::tensorwise;
  const Estimate a = estimate(m, h100(), p), b = estimate(m, h100(), cs);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  // Slower by the amax passes (compute) and the amax all-reduces (TP communication): QKV's and
  // fc1's gathered inputs forward, the projection's and fc2's gathered gradients backward.
  CHECK(b.iteration_time_s > a.iteration_time_s);
  CHECK(b.breakdown.tp_comm_s > a.breakdown.tp_comm_s);
  CHECK(b.breakdown.compute_s > a.breakdown.compute_s);
  CHECK(to_plan_string(cs).find("fp8_recipe=tensorwise") != std::string::npos);
  CHECK(parse_plan(to_plan_string(cs), "--plan").fp8_recipe == Fp8Recipe::tensorwise);
  // Only dtype=fp8 takes a recipe.
  Plan bf = cs;
  bf.dtype = Dtype::bf16;
  CHECK_FALSE(estimate(m, h100(), bf).ok());
  // torchtitan's float8 is torchao's: refused with the reason.
  std::string why = why_not(Framework::torchtitan, m, h100(), cs).value_or("");
  CHECK(why.find("fp8_recipe") != std::string::npos);
  CHECK_FALSE(why_not(Framework::megatron, m, h100(), cs).has_value());
}

TEST_CASE("fp8: linear inputs are kept in FP8, 1 byte an element; gradients reduce in fp32") {
  const ModelSpec& m = llama70();
  const double t = 4, s = m.seq_len, h = m.hidden, f = m.ffn, qw = m.heads * m.head_dim();
  for (Recompute r : {Recompute::none, Recompute::selective}) {
    const double bf16 =
        activation_bytes_per_layer(m, 1, 4, 1, true, r, AttentionKernel::flash, Dtype::bf16);
    const double fp8 =
        activation_bytes_per_layer(m, 1, 4, 1, true, r, AttentionKernel::flash, Dtype::fp8);
    // qkv's and fc1's inputs (sbh / t each with SP), proj's (s qw / t), fc2's (s f / t): 1 byte
    // fewer an element.
    CHECK(bf16 - fp8 == doctest::Approx(s * (2 * h / t + qw / t + f / t)));
  }
  // Full recompute keeps the block's 16-bit input either way.
  CHECK(activation_bytes_per_layer(m, 1, 4, 1, true, Recompute::full, AttentionKernel::flash,
                                   Dtype::fp8) ==
        activation_bytes_per_layer(m, 1, 4, 1, true, Recompute::full, AttentionKernel::flash,
                                   Dtype::bf16));
  Plan p;
  p.dtype = Dtype::fp8;
  CHECK(grad_wire_bytes(p) == 4);  // bf16 with FP8 linears: grad_reduce_in_fp32
  p.grad_reduce_bf16 = true;
  CHECK(grad_wire_bytes(p) == 2);  // --grad-reduce-in-bf16
  p.grad_reduce_bf16 = false, p.dtype = Dtype::fp16;
  CHECK(grad_wire_bytes(p) == 2);
}

TEST_CASE("mxfp8: Blackwell's block-scaled FP8 at its own peak, scales in casts and memory") {
  const ClusterProfile& b200 = fixtures::cluster("dgx-b200");
  const Gpu& g = b200.gpu;
  REQUIRE(g.peak_flops[int(Dtype::mxfp8)] > 0);
  // Linears at the MXFP8 peak x the FP8/bf16 ratio: halve the peak and a compute-bound GEMM
  // takes twice as long, the per-tensor FP8 one not at all.
  ClusterProfile half = b200;
  half.gpu.peak_flops[int(Dtype::mxfp8)] /= 2;
  const GemmShape big{8192, 8192, 8192};
  auto t = [&](const Gpu& x, Dtype d) { return gemm_time_s(x, d, big) - x.gemm.launch_s; };
  CHECK(t(half.gpu, Dtype::mxfp8) == doctest::Approx(2 * t(g, Dtype::mxfp8)));
  CHECK(t(half.gpu, Dtype::fp8) == doctest::Approx(t(g, Dtype::fp8)));
  CHECK(t(g, Dtype::mxfp8) ==
        doctest::Approx(big.flops() / (g.peak_flops[int(Dtype::mxfp8)] *
                                       kFp8GemmRelativeEfficiency * gemm_efficiency(g, big))));
  // One quantization per linear and pass, writing both scaled copies and their E8M0 scales:
  // 2 + 2 x (1 + 1/32) bytes an element (per-tensor FP8: 4 with its transpose on Hopper).
  const ModelSpec& m = llama70();
  LayerConfig fp8{4, 1, 1, true, Dtype::fp8, AttentionKernel::flash};
  LayerConfig mx = fp8;
  mx.dtype = Dtype::mxfp8;
  const LayerShape l = m.decoder_shape();
  const std::vector<Kernel> kf = layer_kernels(l, b200, fp8), km = layer_kernels(l, b200, mx);
  double fp8_bytes = 0, mx_bytes = 0;
  for (const Kernel& k : kf)
    if (std::string(k.name) == "fp8_cast") fp8_bytes += k.bytes;
  for (const Kernel& k : kf) CHECK(std::string(k.name) != "fp8_transpose");
  for (const Kernel& k : km)
    if (std::string(k.name) == "fp8_cast") mx_bytes += k.bytes;
  CHECK(kMxfp8QuantizeBytes == doctest::Approx(4.0625));
  // On Blackwell FP8 GEMMs take any layout: per-tensor FP8 writes no transpose (3 bytes), and
  // under delayed scaling the norm-fed inputs (QKV's, fc1's) need no kernel at all; MXFP8
  // quantizes every linear's input and output gradient.
  CHECK(b200.gpu.fp8_any_layout());
  CHECK_FALSE(h100().gpu.fp8_any_layout());
  {
    const double tp = 4, s = m.seq_len, h = m.hidden, f = m.ffn, d = m.head_dim();
    const double qkv = (m.heads + 2.0 * m.kv_heads) * d / tp, q = m.heads * d / tp;
    // The projection's and fc2's gradients are cast on this rank's rows before their gather.
    const double other = s * (q + f / tp) + s * (qkv + 2 * f / tp) + s * 2 * h / tp;
    CHECK(fp8_bytes == doctest::Approx(kFp8CastRowwiseBytes * other));
    CHECK(mx_bytes == doctest::Approx(kMxfp8QuantizeBytes * (other + s * 2 * h / tp)));
  }
  // Attention and the LM head stay bf16 (Megatron's --fp8-output-proj is off by default).
  for (Pass p : {Pass::forward, Pass::backward_data})
    CHECK(sum(km, "flash_attention", p) == doctest::Approx(sum(kf, "flash_attention", p)));
  CHECK(head_compute(m, b200, mx).logits_fwd_s ==
        doctest::Approx(head_compute(m, b200, fp8).logits_fwd_s));
  // Saved linear inputs: the column-wise copy with its scales, 1 + 1/32 bytes an element.
  CHECK(linear_input_bytes(Dtype::mxfp8) == doctest::Approx(1 + 1.0 / 32));
  const double th = 4, s = m.seq_len, h = m.hidden, f = m.ffn, qw = m.heads * m.head_dim();
  const double a8 = activation_bytes_per_layer(m, 1, 4, 1, true, Recompute::none,
                                               AttentionKernel::flash, Dtype::fp8);
  const double amx = activation_bytes_per_layer(m, 1, 4, 1, true, Recompute::none,
                                                AttentionKernel::flash, Dtype::mxfp8);
  CHECK(amx - a8 == doctest::Approx(s * (2 * h / th + qw / th + f / th) / 32));
  Plan p;
  p.dtype = Dtype::mxfp8;
  CHECK(grad_wire_bytes(p) == 4);
  CHECK(bf16_gradients_possible(Dtype::mxfp8));
}

TEST_CASE("mxfp8: refused where the GPU has no MXFP8 rate and by stacks without it") {
  Plan p = parse_plan("tp=1,pp=1,dp=8,mbs=1,gbs=64,zero=1,dtype=mxfp8", "--plan");
  const ModelSpec& m = fixtures::model("llama3-8b");
  std::string why;
  CHECK(check_layout(m, h100(), p, {}, &why) == Rejection::dtype_unsupported);
  CHECK(why.find("no mxfp8 tensor-core peak") != std::string::npos);
  CHECK(why.find("Blackwell; use dtype=fp8") != std::string::npos);
  why.clear();  // A100 has no FP8 either: no such hint
  CHECK(check_layout(m, fixtures::cluster("dgx-a100-80gb"), p, {}, &why) ==
        Rejection::dtype_unsupported);
  CHECK(why ==
        "A100-SXM4-80GB has no mxfp8 tensor-core peak (block-scaled MXFP8 runs on Blackwell)");
  CHECK(estimate(m, fixtures::cluster("dgx-b200"), p).ok());
  // validate's runner times FP8 through cuBLASLt without block scales: refused, not mistimed.
  CHECK_THROWS_WITH_AS(build_workload(m, fixtures::cluster("dgx-b200"), p),
                       doctest::Contains("no MXFP8 GEMM"), InputError);
  const ClusterProfile& b200 = fixtures::cluster("dgx-b200");
  for (Framework f : {Framework::deepspeed, Framework::megatron_2021, Framework::megatron_2022}) {
    CAPTURE(to_string(f));
    const std::optional<std::string> reason = why_not(f, m, b200, p);
    REQUIRE(reason.has_value());
    CHECK(reason->find("mxfp8") != std::string::npos);
  }
  CHECK_FALSE(why_not(Framework::megatron, m, b200, p).has_value());
  p.zero = 3;  // torchtitan: FSDP2
  CHECK_FALSE(why_not(Framework::torchtitan, m, b200, p).has_value());
}

TEST_CASE("fp8: Transformer Engine's quantized weights are kept between micro-batches") {
  // Llama 3 70B on 64 H100s as Megatron-Bridge ran it: 80 layers over pp=8, tp=4, no embedding
  // or output layer on a middle stage: the cache is its layers' parameters x 2 bytes.
  const ModelSpec& m = llama70();
  const std::string base = "tp=4,pp=8,dp=2,mbs=1,gbs=128,zero=1,recompute=none,sp=1";
  auto memory = [&](const std::string& extra, const ClusterProfile& c) {
    const Estimate e = estimate(m, c, parse_plan(base + extra, "--plan"));
    REQUIRE(e.ok());
    return e.memory;
  };
  const double layer_params = double(m.total_params() - 2.0 * m.vocab * m.hidden) / m.layers;
  const MemoryBreakdown fp8 = memory(",dtype=fp8", h100()), bf16 = memory("", h100());
  CHECK(bf16.weight_cache == 0);
  CHECK(fp8.weight_cache / (10 * layer_params / 4) == doctest::Approx(2).epsilon(0.01));
  CHECK(fp8.weights == doctest::Approx(bf16.weights + fp8.weight_cache));
  // MXFP8 keeps both scaled copies with their scales.
  const ClusterProfile& b200 = fixtures::cluster("dgx-b200");
  // per-tensor FP8 one copy there (any layout): MXFP8 2 x (1 + 1/32) bytes against 1.
  CHECK(memory(",dtype=mxfp8", b200).weight_cache / memory(",dtype=fp8", b200).weight_cache ==
        doctest::Approx(2 * (1 + 1.0 / 32)));
  // Megatron FSDP drops it (zero >= 2); torchtitan's torchao linears quantize each forward.
  const ModelSpec& l8 = fixtures::model("llama3-8b");
  for (int zero : {1, 2, 3}) {
    const Plan p =
        parse_plan("tp=1,pp=1,dp=8,mbs=1,gbs=64,recompute=full,grad_reduce_bf16=1,dtype=fp8,zero=" +
                       std::to_string(zero),
                   "--plan");
    const Estimate e = estimate(l8, h100(), p);
    REQUIRE(e.ok());
    CHECK((e.memory.weight_cache > 0) == (zero == 1));
  }
  // Multi-token prediction: the module's layer and eh_proj (2h x h) are TE linears too.
  {
    ModelSpec mtp = l8;
    mtp.mtp_layers = 1;
    const Plan p = parse_plan(
        "tp=1,pp=1,dp=8,mbs=1,gbs=64,recompute=full,grad_reduce_bf16=1,dtype=fp8,zero=1", "--plan");
    const Estimate with = estimate(mtp, h100(), p), without = estimate(l8, h100(), p);
    REQUIRE(with.ok());
    REQUIRE(without.ok());
    const double layer =
        (with.memory.weight_cache - without.memory.weight_cache) / 2 - 2.0 * l8.hidden * l8.hidden;
    CHECK(layer == doctest::Approx(without.memory.weight_cache / 2 / l8.layers));
  }
  ClusterProfile tt = h100();
  tt.software = execution_stack(Framework::torchtitan, tt);
  CHECK_FALSE(tt.software.fp8_weight_cache);
  CHECK(memory(",dtype=fp8", tt).weight_cache == 0);
}

TEST_CASE("flash attention's rate grows with the keys per call, as cuDNN's measured curve") {
  CHECK(flash_length_factor(kFlashReferenceSeq) == doctest::Approx(1.0));
  // The chart it was fitted on: cuDNN causal forward, head dim 128, H100 (FlashAttention-3,
  // Shah et al. 2024): 410, 484, 518, 529, 539 TFLOP/s at 1k-16k; within 4.5% at each.
  const double measured[][2] = {{1024, 410}, {4096, 518}, {8192, 529}, {16384, 539}};
  for (const auto& [keys, tflops] : measured)
    CHECK(flash_length_factor(keys) == doctest::Approx(tflops / 484).epsilon(0.045));
  // A layer's forward attention time at 8,192 tokens, against the same at 2,048 scaled by the
  // work (16x the query-key pairs, causal) and the factor.
  ModelSpec m = llama70();
  LayerConfig cfg{8, 1, 1, true, Dtype::bf16, AttentionKernel::flash};
  auto fwd = [&](int seq) {
    m.seq_len = seq;
    const double launch = h100().gpu.gemm.launch_s / h100().gpu.sustained_efficiency;
    return sum(layer_kernels(m.decoder_shape(), h100(), cfg), "flash_attention", Pass::forward) -
           launch;
  };
  const double pairs = (8192.0 * 8193 / 2) / (2048.0 * 2049 / 2);
  CHECK(fwd(8192) == doctest::Approx(fwd(2048) * pairs / flash_length_factor(8192)));
  // Context parallelism: each call runs over one of ring attention's s / cp blocks.
  const double full = fwd(8192);
  cfg.cp = 4;
  m.seq_len = 8192;
  const double launch = h100().gpu.gemm.launch_s / h100().gpu.sustained_efficiency;
  const double cp4 =
      sum(layer_kernels(m.decoder_shape(), h100(), cfg), "flash_attention", Pass::forward) - launch;
  CHECK(cp4 == doctest::Approx(full / 4 * flash_length_factor(8192) / flash_length_factor(2048)));
}

TEST_CASE("fp8 with sp: the TP all-gathers carry FP8, the reduce-scatters 16 bits") {
  // Transformer Engine casts a column-parallel input and a row-parallel output gradient on this
  // rank's rows and all-gathers the 1-byte copy (distributed.py _all_gather_fp8).
  const ModelSpec& m = llama70();
  const BlockLayout layout = block_layout(m);
  for (Dtype d : {Dtype::bf16, Dtype::fp8}) {
    CAPTURE(to_string(d));
    Plan p = parse_plan("tp=4,pp=1,dp=2,mbs=1,gbs=16,sp=1,zero=1", "--plan");
    p.dtype = d;
    const CellCosts cell = cell_costs(m, h100(), p, layout);
    const double act = 2.0 * m.seq_len * m.hidden;  // one micro-batch's 16-bit activation
    const GroupLayout g = tp_group(p, h100());
    CHECK(tp_gather_bytes(act, d, h100().software) == (d == Dtype::fp8 ? act / 2 : act));
    // torchtitan's float8 (torchao) communicates in high precision.
    CHECK(tp_gather_bytes(act, d, info(Framework::torchtitan).stack) == act);
    CHECK(
        cell.shape[0].tp_allgather_s ==
        doctest::Approx(collective_time_s(h100(), Collective::allgather,
                                          d == Dtype::fp8 ? act * kFp8GatheredBytes / 2 : act, g)));
    CHECK(cell.shape[0].tp_reduce_scatter_s ==
          doctest::Approx(collective_time_s(h100(), Collective::reduce_scatter, act, g)));
  }
}

TEST_CASE("fp8 current scaling where GEMMs take any layout: no transposes, amax before each cast") {
  // Blackwell (Gpu::fp8_any_layout): every cast writes the row-wise copy only (3 bytes); under
  // tensorwise each tensor not written by a norm is read once more for its amax, and the norms'
  // casts follow their fused amax. No transpose kernel at all.
  const ClusterProfile& b200 = fixtures::cluster("dgx-b200");
  const ModelSpec& m = llama70();
  LayerConfig cs{4, 1, 1, true, Dtype::fp8, AttentionKernel::flash};
  cs.fp8_recipe = Fp8Recipe::tensorwise;
  const std::vector<Kernel> k = layer_kernels(m.decoder_shape(), b200, cs);
  double cast = 0;
  for (const Kernel& x : k) {
    CHECK(std::string(x.name) != "fp8_transpose");
    if (std::string(x.name) == "fp8_cast") cast += x.bytes;
  }
  const double t = 4, s = m.seq_len, h = m.hidden, f = m.ffn, d = m.head_dim();
  const double qkv = (m.heads + 2.0 * m.kv_heads) * d / t, q = m.heads * d / t;
  const double from_norms = s * 2 * h / t;  // QKV's and fc1's inputs, this rank's rows
  const double others = s * (q + f / t) + s * (qkv + 2 * f / t) + s * 2 * h / t;
  CHECK(cast == doctest::Approx(kFp8CastRowwiseBytes * from_norms +
                                (kFp8AmaxBytes + kFp8CastRowwiseBytes) * others));
}

TEST_CASE("fp8 with sp on latent attention: q_up's gathered input, q_down's local one") {
  // DeepSeek-V3's dense layer. q_norm is inside q_up (LayerNormLinear): under delayed scaling it
  // writes FP8 on this rank's rows, gathered and transposed in the backward; q_down runs
  // replicated on this rank's sequence share and takes a cast-transpose there.
  const ModelSpec ds = io::load_model(PLANNER_SOURCE_DIR "/configs/models/deepseek-v3.json");
  const LayerShape l = ds.decoder_shape();
  REQUIRE_FALSE(l.moe.any());
  const double t = 4, s = double(l.seq) * l.sequences, h = l.hidden, f = l.ffn;
  const double ql = ds.mla.q_lora_rank, kvl = ds.mla.kv_lora_rank;
  LayerConfig cfg{4, 1, 1, true, Dtype::fp8, AttentionKernel::flash};
  const std::vector<Kernel> ks = layer_kernels(l, h100(), cfg);
  auto bytes = [&](const char* name, Pass p) {
    double b = 0;
    for (const Kernel& k : ks)
      if (std::string(k.name) == name && k.pass == p) b += k.bytes;
    return b;
  };
  // No forward transposes (every norm-fed input is gathered); in the backward, from the gathered
  // rows: q_up's, kv_up's and fc1's inputs, the projection's and fc2's gradients.
  CHECK(bytes("fp8_transpose", Pass::forward) == 0);
  CHECK(bytes("fp8_transpose", Pass::backward_data) ==
        doctest::Approx(kFp8TransposeBytes * s * (ql + kvl + 3 * h)));
  // Forward casts with their transposes: q_down's and kv_down's input (this rank's s / t rows),
  // the projection's and fc2's inputs.
  const double proj_in = s * ds.heads * ds.mla.v_head_dim / t;
  CHECK(bytes("fp8_cast", Pass::forward) ==
        doctest::Approx(kFp8CastTransposeBytes * (2 * s / t * h + proj_in + s * f / t)));
}
