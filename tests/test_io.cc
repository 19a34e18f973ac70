#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "planner/error.h"
#include "planner/framework.h"
#include "planner/io/cluster_io.h"
#include "planner/io/knobs.h"
#include "planner/io/model_io.h"
#include "planner/plan.h"

using namespace planner;

namespace {
const char* kGood =
    "name: m\nlayers: 4\nhidden: 128\nheads: 4\nkv_heads: 2\nffn: 512\nswiglu: true\n"
    "vocab: 1000\nseq_len: 64\ntied_embeddings: false\n";

std::string model_error(const std::string& text) {
  try {
    io::parse_model(text, "m.yaml");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

std::string replace(std::string s, const std::string& from, const std::string& to) {
  return s.replace(s.find(from), from.size(), to);
}
/// The shipped A100 profile's text, for tests that edit it.
std::string a100_profile_text() {
  std::ifstream in(PLANNER_SOURCE_DIR "/hw_profiles/dgx-a100-80gb.yaml");
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// The message parse_cluster gives for `text`, or "no error".
std::string profile_error(const std::string& text) {
  try {
    io::parse_cluster(text, "c.yaml");
  } catch (const InputError& e) {
    return std::string(e.what());
  }
  return "no error";
}

}  // namespace

TEST_CASE("a valid model parses") {
  const ModelSpec m = io::parse_model(kGood, "m.yaml");
  CHECK(m.kv_heads == 2);
  CHECK(m.swiglu);
  CHECK(!m.tied_embeddings);
  CHECK(m.rope_theta == kDefaultRopeTheta);  // rope_theta absent: RoFormer's 10000
  CHECK(io::parse_model(std::string(kGood) + "rope_theta: 500000\n", "m.yaml").rope_theta ==
        500000);
  CHECK(m.arch.rope_mscale == 1);  // plain RoPE
  CHECK(io::parse_model(std::string(kGood) + "rope_mscale: 1.35\n", "m.yaml").arch.rope_mscale ==
        1.35);
}

TEST_CASE("bad model files name file, line and key") {
  CHECK(model_error(replace(kGood, "hidden:", "hiden:")) ==
        "m.yaml:3: key 'hiden': unknown key, did you mean 'hidden'?");
  CHECK(model_error(replace(kGood, "seq_len: 64\n", "")) ==
        "m.yaml:1: key 'seq_len': missing required key");
  CHECK(model_error(replace(kGood, "layers: 4", "layers: four")) ==
        "m.yaml:2: key 'layers': expected an integer, got 'four'");
  CHECK(model_error(replace(kGood, "swiglu: true", "swiglu: maybe")) ==
        "m.yaml:7: key 'swiglu': expected true or false, got 'maybe'");
  CHECK(model_error(replace(kGood, "layers: 4", "layers: 0")) ==
        "m.yaml:2: key 'layers': must be a positive integer, got 0");
  CHECK(model_error(replace(kGood, "ffn: 512", "ffn: -5")) ==
        "m.yaml:6: key 'ffn': must be a positive integer, got -5");
  CHECK(model_error(replace(kGood, "kv_heads: 2", "kv_heads: 3")) ==
        "m.yaml:5: key 'kv_heads': heads 4 is not divisible by kv_heads 3");
  CHECK(model_error(std::string(kGood) + "rope_theta: 1\n") ==
        "m.yaml:11: key 'rope_theta': must be a number from 2 to 2147483647, got 1");
  CHECK(model_error(std::string(kGood) + "rope_mscale: 0\n") ==
        "m.yaml:11: key 'rope_mscale': must be above 0 and at most 1e+07, got 0");
  CHECK(model_error(std::string(kGood) + "rope_theta: high\n") ==
        "m.yaml:11: key 'rope_theta': expected a number, got 'high'");
  CHECK(model_error("name: m\nlayers: [4\n") ==
        "m.yaml:3: YAML syntax error: end of sequence flow not found");
  CHECK(model_error("") == "m.yaml: the file is empty");
  CHECK(model_error("- 1\n- 2\n") == "m.yaml:1: expected a mapping of keys");
}

TEST_CASE("a missing file is named") {
  CHECK_THROWS_WITH(io::load_model("/no/such/model.yaml"),
                    "/no/such/model.yaml: cannot open file: No such file or directory");
}

TEST_CASE("every shipped model and cluster profile loads") {
  int models = 0, clusters = 0;
  for (const auto& f : std::filesystem::directory_iterator(PLANNER_SOURCE_DIR "/configs/models")) {
    CHECK_NOTHROW(io::load_model(f.path().string()));
    ++models;
  }
  for (const auto& f : std::filesystem::directory_iterator(PLANNER_SOURCE_DIR "/hw_profiles")) {
    CHECK_NOTHROW(io::load_cluster(f.path().string()));
    ++clusters;
  }
  CHECK(models >= 24);
  CHECK(clusters >= 4);
}

TEST_CASE("bad cluster profiles name the key") {
  const std::string text = a100_profile_text();
  CHECK(profile_error(replace(text, "gpus_per_node: 8", "gpus_per_nod: 8")) ==
        "c.yaml:5: key 'gpus_per_nod': unknown key, did you mean 'gpus_per_node'?");
  CHECK(profile_error(replace(text, "hbm_GiB: 80", "hbm_GiB: -80")) ==
        "c.yaml:11: key 'gpu.hbm_GiB': must be in [0.1, 16384], got -80");
  CHECK(profile_error(replace(text, "sms: 108", "sms: 0")) ==
        "c.yaml:9: key 'gpu.sms': must be an integer from 1 to 100000, got 0");
  CHECK(profile_error(
            replace(text, "overlap_compute_slowdown: 0.189", "overlap_compute_slowdown: 1.5")) ==
        "c.yaml:17: key 'gpu.overlap_compute_slowdown': must be in [0, 1], got 1.5");
  CHECK(profile_error(replace(text, "  flash_efficiency: 0.6\n", "")) ==
        "c.yaml:8: key 'gpu.flash_efficiency': missing required key");
  // The optional kernel keys take the documented defaults.
  const std::string bare = replace(replace(text, "  flash_backward_efficiency: 0.46\n", ""),
                                   "  overlap_compute_slowdown: 0.189\n", "");
  const ClusterProfile c = io::parse_cluster(bare, "c.yaml");
  CHECK(c.gpu.flash_backward_efficiency == doctest::Approx(0.6 * kFlashBackwardOverForward));
  CHECK(c.gpu.overlap_compute_slowdown == kOverlapComputeSlowdown);
  // A profile describes hardware: the stack is Megatron-LM's until a framework is chosen.
  CHECK(!c.legacy_software);
  CHECK(c.software == info(Framework::megatron).stack);
  CHECK(profile_error(replace(text, "network:\n", "software:\n  attention: flash\nnetwork:\n")) ==
        "c.yaml:31: key 'software.overlap_grad_reduce': missing required key");
}

TEST_CASE("a profile's legacy software block: the default execution choices, kernel rates kept") {
  const std::string text = a100_profile_text();
  // The A100 profile as written before the hardware/software split.
  const std::string kernel =
      "  flash_efficiency: 0.6\n  flash_backward_efficiency: 0.46\n  overlap_compute_slowdown: "
      "0.189\n";
  const std::string legacy =
      replace(replace(text, kernel, ""), "network:\n",
              "software:\n  attention: unfused\n" + kernel +
                  "  overlap_grad_reduce: false\n  overlap_param_gather: false\n"
                  "  causal_attention_skip: true\n  zero3_collective_nics: 1\nnetwork:\n");
  const ClusterProfile c = io::parse_cluster(legacy, "c.yaml");
  REQUIRE(c.legacy_software);
  CHECK(c.software == *c.legacy_software);
  // What the block said is what megatron-2021 now says, but for its schedule's warm-up (the
  // framework's code, not a profile key: execution_stack takes it from the framework).
  SoftwareStack block = kStack2021;
  block.interleaved_all_warmup = false;
  CHECK(c.software == block);
  CHECK(c.gpu.flash_efficiency == 0.6);
  CHECK(c.gpu.flash_backward_efficiency == 0.46);
  // The block wins, but for what the framework's code decides (Transformer Engine's FP8 linears and
  // their weight cache, the host time of an eager layer with experts).
  SoftwareStack megatron_block = block;
  megatron_block.fp8_weight_cache = true;
  megatron_block.transformer_engine = true;
  megatron_block.moe_layer_host_s = kEagerMoeLayerHostS;
  CHECK(execution_stack(Framework::megatron, c) == megatron_block);
  CHECK(execution_stack(Framework::megatron_2021, c).interleaved_all_warmup);
  std::string note;
  const SoftwareStack with_tp = [&] {
    ClusterProfile t = c;
    t.legacy_software->overlap_tp_comm = true;
    return execution_stack(Framework::deepspeed, t, &note);
  }();
  CHECK(!with_tp.overlap_tp_comm);
  CHECK(note ==
        "DeepSpeed runs without the profile's software.overlap_tp_comm: predicted without it");
  CHECK(profile_error(replace(legacy, "attention: unfused", "attention: fast")) ==
        "c.yaml:28: key 'software.attention': expected flash or unfused, got 'fast'");
  CHECK(profile_error(replace(legacy, "zero3_collective_nics: 1", "zero3_collective_nics: maybe"))
            .find("key 'software.zero3_collective_nics'") != std::string::npos);
  // A kernel rate in both blocks is refused: one value per key.
  CHECK(profile_error(replace(legacy, "  gemm:", "  flash_efficiency: 0.5\n  gemm:")) ==
        "c.yaml:30: key 'software.flash_efficiency': given twice, also as gpu.flash_efficiency; "
        "keep the gpu one");
}

TEST_CASE("--plan strings parse, round-trip, and reject unknown knobs") {
  const Plan p =
      parse_plan("tp=8,pp=8,dp=16,mbs=1,gbs=1536,vpp=3,zero=1,recompute=selective,sp=1", "--plan");
  CHECK(p.schedule == Schedule::interleaved);
  CHECK(to_plan_string(p) ==
        "tp=8,pp=8,dp=16,cp=1,vpp=3,mbs=1,gbs=1536,zero=1,recompute=selective,sp=1,"
        "schedule=interleaved,dtype=bf16");
  CHECK(to_plan_string(parse_plan(to_plan_string(p), "--plan")) == to_plan_string(p));
  CHECK_THROWS_WITH(parse_plan("tp=8,pipe=4", "--plan"),
                    "--plan: key 'pipe': unknown plan knob, did you mean 'pp'?");
  CHECK_THROWS_WITH(parse_plan("tp=x", "--plan"), "--plan: key 'tp': expected an integer, got 'x'");
  CHECK_THROWS_WITH(parse_plan("tp=0", "--plan"),
                    "--plan: key 'tp': must be a positive integer, got 0");
  CHECK_THROWS_WITH(parse_plan("zero=4", "--plan"),
                    "--plan: key 'zero': must be 0, 1, 2 or 3, got 4");
  CHECK_THROWS_WITH(parse_plan("recompute=some", "--plan"),
                    "--plan: key 'recompute': unknown value 'some' (expected one of none, "
                    "selective, full, selective_moe)");
  CHECK_THROWS_WITH(parse_plan("vpp=2,schedule=1f1b", "--plan"),
                    "--plan: key 'vpp': vpp > 1 needs schedule=interleaved");
}

TEST_CASE("knob sets") {
  CHECK(io::parse_int_set("1,2,4-6", "--pp") == std::vector<int>{1, 2, 4, 5, 6});
  CHECK(io::parse_int_set("8", "--tp") == std::vector<int>{8});
  CHECK_THROWS_WITH(io::parse_int_set("4-2", "--pp"),
                    "option --pp: expected non-negative values and ranges lo-hi, got '4-2'");
  CHECK_THROWS_WITH(io::parse_int_set("x", "--pp"),
                    "option --pp: expected an integer, a range a-b or a list, got 'x'");
  CHECK(io::parse_count("300B", "--train-tokens") == 300e9);
  CHECK(io::parse_count("1.5e12", "--train-tokens") == 1.5e12);
  CHECK_THROWS(io::parse_count("-3", "--train-tokens"));
}
