// End-to-end: Hugging Face configs and --seq-len, compare, completion, logging and progress.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "cli_run.h"

using cli_run::planner;
using cli_run::Run;

namespace {

const std::string kA100 = "--cluster hw_profiles/dgx-a100-80gb.yaml";
const std::string kH100 = "--cluster hw_profiles/dgx-h100-80gb.yaml";
const std::string kGpt = "--model configs/models/gpt3-175b.yaml";
const std::string kPlan =
    "--plan \"tp=8,pp=8,dp=16,mbs=1,gbs=1536,vpp=3,zero=1,recompute=selective,sp=1\"";
const std::string kSmall =
    "--model configs/models/gpt3-1.3b.yaml " + kA100 + " --gpus 8 --global-batch 64 --top 1";

using cli_run::check_error;

}  // namespace

TEST_CASE("--model takes a Hugging Face config.json; --seq-len overrides its length") {
  const Run s = planner("suggest --model tests/data/hf/llama-2-7b.json " + kA100 +
                        " --gpus 64 --global-batch 512 --top 2");
  REQUIRE(s.rc == 0);
  CHECK(s.out.find(
            "# model   meta-llama/Llama-2-7b-hf (tests/data/hf/llama-2-7b.json): 6.74B parameters, "
            "32 "
            "layers, hidden 4096, 32 heads (32 kv), ffn 11008 swiglu, vocab 32000, seq 4096") !=
        std::string::npos);
  const std::string est =
      "estimate --model tests/data/hf/mistral-7b-v0.1.json " + kH100 +
      " --plan \"tp=2,pp=1,dp=32,mbs=1,gbs=512,recompute=selective,sp=1,zero=1\" --format json";
  const auto capped = nlohmann::json::parse(planner(est).out);
  CHECK(capped["context"]["seq_len"] == 8192);  // max_position_embeddings 32768, capped
  CHECK(capped["model_params"].get<double>() == doctest::Approx(7.24e9).epsilon(0.01));
  const Run shorter = planner(est + " --seq-len 2048");
  REQUIRE(shorter.rc == 0);
  CHECK(nlohmann::json::parse(shorter.out)["context"]["seq_len"] == 2048);
  check_error("estimate --model tests/data/hf/gpt2.json " + kA100 +
                  " --plan \"tp=1,pp=1,dp=8,gbs=64\" --seq-len -4",
              "option --seq-len: must be from 1 to 16777216, got -4");
}

TEST_CASE("a config of an unknown architecture is refused with the known ones") {
  const std::string dir = cli_run::scratch("hf");
  cli_run::shell("printf '{\"architectures\": [\"FalconForCausalLM\"], \"hidden_size\": 64}' > " +
                 dir + "/config.json");
  check_error(
      "suggest --model " + dir + "/config.json " + kA100 + " --global-batch 8",
      dir +
          "/config.json:1: key 'architectures': unknown architecture 'FalconForCausalLM' (known: "
          "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, "
          "Gemma2ForCausalLM, GPT2LMHeadModel, GPTNeoXForCausalLM, MixtralForCausalLM, "
          "Qwen3MoeForCausalLM, GptOssForCausalLM, DeepseekV3ForCausalLM, Llama4ForCausalLM, "
          "Llama4ForConditionalGeneration)");
}

TEST_CASE("compare: clusters side by side, and changed knobs against a baseline") {
  const Run two = planner("compare " + kGpt + " " + kA100 + " " + kH100 + " " + kPlan);
  REQUIRE(two.rc == 0);
  CHECK(two.out.find("# [2] dgx-h100-80gb: dgx-h100-80gb (hw_profiles/dgx-h100-80gb.yaml), H100") !=
        std::string::npos);
  CHECK(two.out.find("iteration time s  ") != std::string::npos);
  CHECK(two.out.find("%)") != std::string::npos);
  const Run vary = planner(
      "compare " + kGpt + " " + kA100 + " " + kPlan +
      " --vary \"ib_busbw*2\" --vary zero=0 --vary \"cluster=hw_profiles/dgx-h100-80gb.yaml\""
      " --vary \"tp=4,vpp=1\" --vary zero=3 --format json");
  REQUIRE(vary.rc == 0);
  const auto j = nlohmann::json::parse(vary.out);
  REQUIRE(j["columns"].size() == 6);
  const auto& base = j["columns"][0];
  CHECK(base["label"] == "dgx-a100-80gb");
  for (const char* k :
       {"iteration_time_s", "tflops_per_gpu", "mfu", "memory_bytes_per_gpu", "breakdown"})
    CHECK(base.contains(k));
  const auto& ib = j["columns"][1];
  CHECK(ib["label"] == "ib_busbw*2");
  CHECK(ib["breakdown"]["dp_comm_s"].get<double>() < base["breakdown"]["dp_comm_s"].get<double>());
  CHECK(ib["diff_pct"]["iteration_time_s"].get<double>() < 0);
  CHECK(j["columns"][2]["plan"]["zero"] == 0);
  CHECK(j["columns"][2]["memory_bytes_per_gpu"].get<double>() >
        base["memory_bytes_per_gpu"].get<double>());
  CHECK(j["columns"][3]["cluster"]["name"] == "dgx-h100-80gb");
  CHECK(j["columns"][4]["plan"]["tp"] == 4);
  CHECK(j["columns"][4]["plan"]["dp"] == 32);  // the GPU count is kept
  CHECK(j["columns"][4]["plan"]["vpp"] == 1);
  CHECK(j["columns"][4]["plan"]["schedule"] == "1f1b");  // vpp=1 without a schedule: 1f1b
  const auto& zero3 = j["columns"][5];  // ZeRO-3 with pp > 1: Megatron-LM refuses, says why
  CHECK(zero3["feasible"] == false);
  CHECK(zero3["plan"]["zero"] == 3);
  CHECK(zero3["reason"].get<std::string>().rfind(
            "Megatron-LM runs zero=3 as Megatron FSDP, planned here only without pipeline", 0) ==
        0);
}

TEST_CASE("compare: bad --vary text and too few columns") {
  const std::string c = "compare " + kGpt + " " + kA100 + " " + kPlan;
  check_error(
      c, "option --vary: compare needs two columns or more: --cluster twice or more, or --vary");
  check_error(
      c + " --vary \"ib_busbv*2\"",
      "option --vary: 'ib_busbv*2': unknown profile number 'ib_busbv', did you mean 'ib_busbw'? "
      "(scalable: ib_busbw, "
      "ib_latency, nvlink_busbw, nvlink_latency, hbm_bw, hbm_size, peak_flops)");
  check_error(c + " --vary \"ib_busbw*0\"",
              "option --vary: 'ib_busbw*0': expected a positive factor after '*', got '0'");
  check_error(c + " --vary zeros=3",
              "--vary: key 'zeros': unknown plan knob, did you mean 'zero'?");
  check_error(c + " --vary tp=3",
              "option --vary: tp*pp*cp = 24 does not divide the baseline's 1024 GPUs");
  check_error(c + " --vary fast",
              "option --vary: 'fast': expected NAME*FACTOR, cluster=FILE, framework=NAME or "
              "KNOB=VALUE");
  check_error(c + " --vary framework=jax",
              "option --vary: unknown framework 'jax' (expected megatron, deepspeed, torchtitan, "
              "megatron-2021, deepspeed-2021 or megatron-2022)");
  // A column for another framework: the same plan on its stack, its refusals its own.
  const Run fw = planner(
      "compare --model configs/models/llama3-70b.yaml --cluster "
      "hw_profiles/dgx-h100-80gb.yaml --plan "
      "tp=8,pp=4,dp=2,mbs=1,gbs=128,zero=1,recompute=selective,sp=1 "
      "--vary framework=deepspeed --vary schedule=gpipe "
      "--vary framework=deepspeed,zero=2,pp=1,dp=8 --format json");
  REQUIRE(fw.rc == 0);
  const nlohmann::json cols = nlohmann::json::parse(fw.out)["columns"];
  CHECK(cols[0]["framework"] == "megatron");
  CHECK(cols[1]["framework"] == "deepspeed");
  // DeepSpeed runs without TP-communication overlap: the same plan's TP time is exposed.
  CHECK(cols[1]["breakdown"]["tp_comm_s"].get<double>() >
        2 * cols[0]["breakdown"]["tp_comm_s"].get<double>());
  CHECK(cols[2]["feasible"] == false);  // GPipe under Megatron-LM (the default)
  CHECK(cols[2]["reason"].get<std::string>().rfind("Megatron-LM has no GPipe schedule", 0) == 0);
  CHECK(cols[3]["feasible"] == true);
  const Run oom = planner(c + " --vary \"hbm_size*0.25\"");
  CHECK(oom.rc == 0);
  CHECK(oom.out.find("# [2] infeasible: out of memory") != std::string::npos);
}

TEST_CASE("bash completion: the committed script is the command's output, and it completes") {
  const Run r = planner("completion bash");
  REQUIRE(r.rc == 0);
  CHECK_MESSAGE(
      r.out == cli_run::slurp(PLANNER_SOURCE_DIR "/configs/completion/planner.bash"),
      "the command line changed: `cmake --build build --target update_completion` rewrites "
      "configs/completion/planner.bash");
  CHECK(planner("completion zsh").rc == 2);
  if (!cli_run::have("bash")) return;
  const std::string dir = cli_run::scratch("completion");
  cli_run::shell(PLANNER_BINARY " completion bash > " + dir + "/planner.bash");
  // COMP_WORDS as bash fills them when TAB is pressed; prints what would be offered.
  auto complete = [&](const std::string& words) {
    return cli_run::shell(
               "bash -c 'source " + dir + "/planner.bash; COMP_WORDS=(" + words +
               "); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _planner; echo \"${COMPREPLY[*]}\"'")
        .out;
  };
  CHECK(complete("planner sug") == "suggest\n");
  CHECK(complete("planner comp") == "compare completion\n");
  CHECK(complete("planner suggest --form") == "--format\n");
  CHECK(complete("planner suggest --format \"\"") == "table json csv\n");
  CHECK(complete("planner estimate --format \"\"") == "text json\n");
  CHECK(complete("planner emit --framework d") == "deepspeed\n");
  CHECK(complete("planner suggest --schedule \"\"") == "gpipe 1f1b interleaved zb-h1\n");
  // The knob table's execution knobs are options, completed from it.
  CHECK(complete("planner suggest --tp-comm-overlap \"\"") == "0 1\n");
  CHECK(complete("planner estimate --framework \"\"") ==
        "megatron deepspeed torchtitan megatron-2021 deepspeed-2021 megatron-2022\n");
  CHECK(complete("planner suggest --framework \"\"") ==
        "megatron deepspeed torchtitan megatron-2021 deepspeed-2021 megatron-2022 all\n");
  CHECK(complete("planner suggest --model configs/models/gpt3-17") ==
        "configs/models/gpt3-175b.yaml\n");
  CHECK(complete("planner compare --model tests/data/hf/gpt2") ==
        "tests/data/hf/gpt2-xl.json tests/data/hf/gpt2.json\n");
  CHECK(complete("planner compare --vary ib_") == "ib_busbw* ib_latency*\n");
}

TEST_CASE("--quiet and --verbose set what is logged, before or after the subcommand") {
  CHECK(planner("suggest " + kSmall).out.find("[info]") == std::string::npos);
  CHECK(planner("-v suggest " + kSmall).out.find("[info] 77,997 plans") != std::string::npos);
  CHECK(planner("suggest " + kSmall + " --verbose").out.find("[info] 77,997 plans") !=
        std::string::npos);
  const Run q = planner("suggest " + kSmall + " -q");
  CHECK(q.rc == 0);
  CHECK(q.out.find("[info]") == std::string::npos);
  CHECK(
      planner("-v estimate --model tests/data/hf/qwen2-7b.json " + kA100 +
              " --plan \"tp=4,pp=1,dp=2,gbs=64\"")
          .out.find(
              "[info] tests/data/hf/qwen2-7b.json: seq_len 8192 (max_position_embeddings 131072") !=
      std::string::npos);
}

TEST_CASE("progress on stderr only when it is a terminal") {
  const std::string env = "PLANNER_PROGRESS_DELAY_S=0 ";
  CHECK(cli_run::shell(env + PLANNER_BINARY " suggest " + kSmall).out.find("searching [") ==
        std::string::npos);
  if (!cli_run::have("script")) {
    MESSAGE("script (bsdutils) is not installed: progress on a terminal is not checked");
    return;
  }
  // script(1) runs the command on a pseudo-terminal.
  const Run tty =
      cli_run::shell("script -qec '" + env + PLANNER_BINARY " suggest " + kSmall + "' /dev/null");
  CHECK(tty.rc == 0);
  CHECK(tty.out.find("planner: searching [") != std::string::npos);
  CHECK(tty.out.find("# rank") != std::string::npos);
  const Run quiet = cli_run::shell("script -qec '" + env + PLANNER_BINARY " -q suggest " + kSmall +
                                   "' /dev/null");
  CHECK(quiet.out.find("searching [") == std::string::npos);
}

TEST_CASE("the model line names a head width that is not hidden / heads and the layer's extras") {
  const Run s = planner("suggest --model tests/data/hf/gemma-2-9b.json " + kH100 +
                        " --gpus 8 --global-batch 8 --top 1");
  REQUIRE(s.rc == 0);
  CHECK(s.out.find("layers, hidden 3584, 16 heads of 256 (8 kv), ffn 14336 swiglu, vocab 256000, "
                   "seq 8192; post-norms; window 4096 on 50% of the layers\n") !=
        std::string::npos);
  const Run q = planner("suggest --model tests/data/hf/qwen2.5-7b.json " + kH100 +
                        " --gpus 8 --global-batch 8 --top 1");
  REQUIRE(q.rc == 0);
  CHECK(q.out.find("28 heads (4 kv), ffn 18944 swiglu, vocab 152064, seq 8192; QKV bias\n") !=
        std::string::npos);
}

TEST_CASE("a precision the GPU has no tensor-core rate for: the peaks it has, where it runs") {
  const Run r = planner("suggest --model configs/models/llama3-8b.yaml " + kH100 +
                        " --gpus 8 --global-batch 64 --dtype mxfp8");
  CHECK(r.rc == 2);
  CHECK(r.out.find("0 ranked") != std::string::npos);
  CHECK(r.out.find(" precision unsupported\nH100-SXM5-80GB has tensor-core peaks for fp16, bf16, "
                   "fp8, tf32 only (the profile's gpu.peak_tflops): fp8 runs on Hopper and "
                   "later, block-scaled mxfp8 on Blackwell\n") != std::string::npos);
  check_error("estimate --model configs/models/llama3-8b.yaml " + kH100 +
                  " --plan \"tp=1,pp=1,dp=8,mbs=1,gbs=64,dtype=mxfp8\"",
              "option --plan: H100-SXM5-80GB has no mxfp8 tensor-core peak (block-scaled MXFP8 "
              "runs on Blackwell; use dtype=fp8) (model configs/models/llama3-8b.yaml, cluster "
              "hw_profiles/dgx-h100-80gb.yaml)");
}
