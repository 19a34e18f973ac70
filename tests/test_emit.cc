// Launch-file emitters: SHA-256, goldens, framework name lists, ds_config keys, bash -n, refusals.
//
// Goldens: tests/data/golden/<case>/ holds the exact files emitted for four plans (GPT-3 175B on
// 1,024 A100s and Llama 3 70B on 64 H100s, for Megatron-LM and DeepSpeed), compared byte for byte,
// headers included. The headers carry the cost model's predictions and the inputs' SHA-256, so a
// change to the cost model or to a model/cluster file changes them: after checking the new
// prediction, regenerate with
//     cmake --build build --target update_goldens
// (equivalently: PLANNER_UPDATE_GOLDENS=1 build/tests/planner_tests --test-case='*golden*')
// and review the diff of tests/data/golden/ before committing it.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "planner/emit.h"
#include "planner/error.h"
#include "planner/io/cluster_io.h"
#include "planner/io/file.h"
#include "planner/io/model_io.h"

using namespace planner;
namespace fs = std::filesystem;

namespace {

const std::string kRoot = PLANNER_SOURCE_DIR "/";

std::string read(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  REQUIRE_MESSAGE(in.good(), "cannot read " << p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The request the CLI builds when run from the source directory with these relative paths.
emit::EmitRequest request(emit::Framework f, const std::string& model, const std::string& cluster,
                          const std::string& plan) {
  emit::EmitRequest r =
      emit::prepare(f, kRoot + model, io::read_file(kRoot + model), io::load_model(kRoot + model),
                    kRoot + cluster, io::read_file(kRoot + cluster),
                    io::load_cluster(kRoot + cluster), parse_plan(plan, "--plan"), {});
  r.model_file = model;
  r.cluster_file = cluster;
  return r;
}

struct Case {
  std::string name, model, cluster, plan;
  emit::Framework framework;
};

const std::string kGpt3 = "configs/models/gpt3-175b.yaml", kA100 = "hw_profiles/dgx-a100-80gb.yaml";
const std::string kLlama = "configs/models/llama3-70b.yaml",
                  kH100 = "hw_profiles/dgx-h100-80gb.yaml";
const std::string kGpt3Plan =
    "tp=8,pp=8,dp=16,mbs=1,gbs=1536,vpp=3,zero=1,recompute=selective,sp=1";
const std::string kLlamaPlan = "tp=8,pp=4,dp=2,mbs=1,gbs=128,zero=1,recompute=selective,sp=1";

/// The golden cases. DeepSpeed's pipeline engine has no interleaving, so its GPT-3 plan is the
/// same without vpp.
const std::vector<Case> kGoldens = {
    {"megatron-gpt3-175b-a100x1024", kGpt3, kA100, kGpt3Plan, emit::Framework::megatron},
    {"megatron-llama3-70b-h100x64", kLlama, kH100, kLlamaPlan, emit::Framework::megatron},
    {"deepspeed-gpt3-175b-a100x1024", kGpt3, kA100,
     "tp=8,pp=8,dp=16,mbs=1,gbs=1536,zero=1,recompute=selective,sp=1", emit::Framework::deepspeed},
    {"deepspeed-llama3-70b-h100x64", kLlama, kH100, kLlamaPlan, emit::Framework::deepspeed},
    {"torchtitan-llama3-70b-h100x64", kLlama, kH100,
     "tp=8,pp=4,dp=2,mbs=1,gbs=128,vpp=5,zero=3,recompute=full,sp=1,schedule=interleaved",
     emit::Framework::torchtitan},
};

struct HfEmitCase {
  const char* name;
  const char* model;
  const char* plan;
};
const HfEmitCase kHfEmitCases[] = {
    {"nemo", "tests/data/hf/mistral-nemo-base-2407.json",
     "tp=8,pp=1,dp=1,mbs=1,gbs=8,zero=0,recompute=full,sp=1"},
    {"qwen2.5", "tests/data/hf/qwen2.5-7b.json",
     "tp=4,pp=2,dp=1,mbs=1,gbs=16,zero=0,recompute=full,sp=1"},
    {"gemma2", "tests/data/hf/gemma-2-9b.json",
     "tp=8,pp=1,dp=1,mbs=1,gbs=8,zero=0,recompute=full,sp=1"},
    {"qwen3", "tests/data/hf/qwen3-4b.json",
     "tp=8,pp=1,dp=1,mbs=1,gbs=8,zero=0,recompute=full,sp=1"},
    {"mistral", "tests/data/hf/mistral-7b-v0.1.json",
     "tp=8,pp=1,dp=1,mbs=1,gbs=8,zero=0,recompute=full,sp=1"},
};

const HfEmitCase kMoeEmitCases[] = {
    {"moe-qwen3-30b", "tests/data/hf/Qwen3-30B-A3B/config.json",
     "tp=1,pp=2,dp=8,ep=8,vpp=12,mbs=1,gbs=1024,zero=1,recompute=full,dtype=fp8"},
    {"moe-gpt-oss-120b", "tests/data/hf/gpt-oss-120b/config.json",
     "tp=1,pp=4,dp=16,ep=8,mbs=1,gbs=1280,zero=1,recompute=full"},
    {"moe-mixtral", "tests/data/hf/Mixtral-8x7B-v0.1/config.json",
     "tp=4,pp=2,dp=2,ep=8,sp=1,mbs=1,gbs=64,zero=1"},
    {"moe-llama4-maverick", "tests/data/hf/Llama-4-Maverick-17B-128E-Instruct/config.json",
     "tp=8,pp=8,dp=2,ep=16,sp=1,mbs=1,gbs=64,zero=1,recompute=full"},
    {"moe-deepseek-v3", "tests/data/hf/DeepSeek-V3/config.json",
     "tp=8,pp=1,dp=128,ep=256,sp=1,mbs=1,gbs=1024,zero=1,recompute=full"},
    {"moe-gpt-oss-selective-moe", "tests/data/hf/gpt-oss-120b/config.json",
     "tp=2,sp=1,pp=4,dp=8,ep=8,mbs=1,gbs=1280,zero=1,recompute=selective_moe"},
    {"moe-mixtral-allgather", "tests/data/hf/Mixtral-8x7B-v0.1/config.json",
     "tp=2,pp=2,dp=8,ep=8,sp=1,mbs=1,gbs=64,zero=1,dispatcher=allgather,recompute=full,"
     "capacity_factor=1.25"},
    {"moe-qwen3-padded", "tests/data/hf/Qwen3-30B-A3B/config.json",
     "tp=1,pp=2,dp=8,ep=8,vpp=12,mbs=1,gbs=1024,zero=1,recompute=full,capacity_factor=1.0,"
     "pad_to_capacity=1"},
    {"moe-qwen3-hybridep", "tests/data/hf/Qwen3-30B-A3B/config.json",
     "tp=1,pp=1,dp=16,ep=16,mbs=1,gbs=1024,zero=1,recompute=full,dtype=fp8,"
     "fp8_recipe=tensorwise,dispatcher=hybridep"},
    {"moe-qwen3-cuda-graphs", "tests/data/hf/Qwen3-30B-A3B/config.json",
     "tp=2,sp=1,pp=1,dp=8,ep=16,mbs=1,gbs=1024,zero=1,grad_reduce_bf16=1,dispatcher=hybridep,"
     "ep_comm_overlap=1,cuda_graphs=1"},
};

/// Megatron-DeepSpeed refuses sequence parallelism: the same plan without it.
std::string without_sp(const std::string& plan) {
  const std::string sp = ",sp=1";
  const size_t at = plan.find(sp);
  return at == std::string::npos ? plan : plan.substr(0, at) + plan.substr(at + sp.size());
}

/// Goldens plus variants that exercise every branch: full recompute, fp16/fp8/tf32, cp, ZeRO-0/2/3,
/// one node, a plan smaller than a node, plain DeepSpeed (tp = pp = 1).
std::vector<Case> all_cases() {
  std::vector<Case> v = kGoldens;
  const auto M = emit::Framework::megatron, D = emit::Framework::deepspeed;
  const std::string small = "configs/models/gpt3-1.3b.yaml", l8 = "configs/models/llama3-8b.yaml";
  v.push_back({"fp8-cp", kLlama, kH100,
               "tp=8,pp=2,cp=2,dp=2,mbs=1,gbs=128,zero=1,recompute=full,sp=1,dtype=fp8", M});
  v.push_back(
      {"tf32", kGpt3, kA100, "tp=8,pp=16,dp=8,mbs=1,gbs=1536,recompute=full,sp=1,dtype=tf32", M});
  v.push_back(
      {"fp16-zero0", kGpt3, kA100, "tp=8,pp=16,dp=8,mbs=1,gbs=1536,recompute=full,dtype=fp16", M});
  v.push_back({"one-node", small, kA100, "tp=2,pp=1,dp=4,mbs=4,gbs=64,zero=1", M});
  v.push_back({"half-node", small, kA100, "tp=1,pp=1,dp=4,mbs=4,gbs=64,zero=1", M});
  v.push_back({"megatron-fsdp", kLlama, kH100, "tp=8,pp=1,dp=8,mbs=1,gbs=128,zero=3,sp=1", M});
  v.push_back(
      {"ds-plain-zero3", small, kA100, "tp=1,pp=1,dp=4,mbs=4,gbs=64,zero=3,recompute=full", D});
  v.push_back({"act-offload", l8, kH100,
               "tp=1,pp=1,dp=8,mbs=1,gbs=64,zero=1,recompute=none,offload_activations=30", M});
  v.push_back({"grad-bf16", l8, kH100,
               "tp=1,pp=1,dp=8,mbs=1,gbs=128,zero=3,dtype=fp8,grad_reduce_bf16=1", M});
  v.push_back({"ds-zeropp", small, kA100,
               "tp=1,pp=1,dp=16,mbs=4,gbs=64,zero=3,recompute=full,zeropp=1", D});
  v.push_back(
      {"ds-tp-zero3", kLlama, kH100, "tp=8,pp=1,dp=8,mbs=1,gbs=128,zero=3,recompute=full,sp=1", D});
  v.push_back({"ds-fp16-zero2", l8, kH100,
               "tp=1,pp=1,dp=16,mbs=1,gbs=128,zero=2,recompute=selective,dtype=fp16", D});
  // Offload (issue 17): the source's ZeRO-3 + CPU optimizer example, parameters too, a partial
  // ratio, and Megatron-LM's HybridDeviceOptimizer on one GPU.
  v.push_back({"ds-source-zero3-offload", small, kA100,
               "tp=1,pp=1,dp=8,mbs=4,gbs=32,zero=3,dtype=fp16,offload_optimizer=cpu", D});
  v.push_back({"ds-offload-params", l8, kH100,
               "tp=1,pp=1,dp=8,mbs=1,gbs=64,zero=3,recompute=full,offload_optimizer=cpu,"
               "offload_params=cpu,offload_pct=50",
               D});
  v.push_back({"ds-offload-one-gpu", l8, kH100,
               "tp=1,pp=1,dp=1,mbs=1,gbs=64,zero=2,recompute=full,offload_optimizer=cpu", D});
  v.push_back({"ds-mds-offload", l8, kH100,
               "tp=2,pp=1,dp=4,mbs=1,gbs=64,zero=1,recompute=full,offload_optimizer=cpu", D});
  v.push_back({"megatron-offload-one-gpu", l8, kH100,
               "tp=1,pp=1,dp=1,mbs=1,gbs=64,zero=1,recompute=full,offload_optimizer=cpu", M});
  v.push_back({"megatron-offload-half", l8, kH100,
               "tp=1,pp=1,dp=8,mbs=1,gbs=64,zero=1,recompute=full,offload_optimizer=cpu,"
               "offload_pct=50",
               M});
  v.push_back({"ds-onebit-adam", small, kA100,
               "tp=1,pp=1,dp=64,mbs=4,gbs=256,dtype=fp16,grad_compression=onebit_adam", D});
  v.push_back({"ds-zero-one-adam", small, kA100,
               "tp=1,pp=1,dp=64,mbs=4,gbs=256,dtype=fp16,grad_compression=zero_one_adam", D});
  v.push_back({"ds-tf32", kGpt3, kA100,
               "tp=8,pp=16,dp=8,mbs=1,gbs=1536,recompute=full,sp=1,dtype=tf32", D});
  // Mixture-of-experts models (issue 18): expert parallelism on Megatron-LM only.
  for (const auto& moe : kMoeEmitCases) v.push_back({moe.name, moe.model, kH100, moe.plan, M});
  // Hugging Face configs with head_dim, QKV biases, per-head norms and sliding windows.
  for (auto [name, model, plan] : kHfEmitCases) {
    v.push_back({std::string("hf-") + name, model, kH100, plan, M});
    v.push_back({std::string("hf-ds-") + name, model, kH100, without_sp(plan), D});
  }
  return v;
}

std::vector<emit::EmittedFile> emitted(const Case& c) {
  return emit::emit_files(c.framework, request(c.framework, c.model, c.cluster, c.plan));
}

/// The contents of the emitted file `name` of case `c` (a failed check and "" when absent).
std::string emitted_file(const Case& c, const std::string& name) {
  for (const auto& f : emitted(c))
    if (f.name == name) return f.contents;
  FAIL("no " << name << " for " << c.name);
  return std::string();
}

std::set<std::string> name_list(const std::string& file) {
  std::set<std::string> out;
  std::istringstream in(read(kRoot + "configs/frameworks/" + file));
  for (std::string line; std::getline(in, line);)
    if (!line.empty() && line[0] != '#') out.insert(line);
  return out;
}

/// Every `--flag` of a bash script, keyed by the array it is assigned to ("" outside any array).
/// Comments are dropped; a flag's `=value` suffix (or a closing `)`) is cut.
std::map<std::string, std::set<std::string>> flags_by_array(const std::string& script) {
  std::map<std::string, std::set<std::string>> out;
  const std::regex open(R"(([A-Z_]+)\+?=\()");
  std::istringstream in(script);
  std::string array;  // the array being assigned, or ""
  for (std::string line; std::getline(in, line);) {
    const size_t first = line.find_first_not_of(' ');
    if (first == std::string::npos || line[first] == '#') continue;
    if (const size_t hash = line.find(" #"); hash != std::string::npos) line.resize(hash);
    std::smatch m;
    std::string rest = line;
    if (array.empty() && std::regex_search(line, m, open)) {
      array = m[1];
      rest = m.suffix();
    }
    std::istringstream words(rest);
    for (std::string w; words >> w;)
      if (w.rfind("--", 0) == 0) out[array].insert(w.substr(0, w.find_first_of("=);")));
    // A ')' inside a quoted value ("([0]*3+[1]*58)", --moe-layer-freq) does not close it.
    std::string unquoted;
    bool quoted = false;
    for (char ch : rest)
      if (ch == '"')
        quoted = !quoted;
      else if (!quoted)
        unquoted += ch;
    if (!array.empty() && unquoted.find(')') != std::string::npos) array.clear();
  }
  return out;
}

/// Dotted paths of a JSON document's leaves: {"a": {"b": 1}} -> {"a.b"}.
void leaf_paths(const nlohmann::json& j, const std::string& prefix, std::set<std::string>& out) {
  if (!j.is_object()) {
    out.insert(prefix);
    return;
  }
  for (const auto& [key, value] : j.items())
    leaf_paths(value, prefix.empty() ? key : prefix + "." + key, out);
}

fs::path fresh_dir(const std::string& name) {
  const fs::path d =
      fs::temp_directory_path() / ("planner_test_emit_" + name + "_" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

}  // namespace

TEST_CASE("SHA-256 matches the FIPS 180-2 vectors and hashlib at block boundaries") {
  CHECK(emit::sha256_hex("abc") ==
        "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(emit::sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(emit::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(emit::sha256_hex(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // Padding edges: 55 bytes fit one block with the length, 56 and 63 need a second, 64 is whole.
  CHECK(emit::sha256_hex(std::string(55, 'a')) ==
        "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  CHECK(emit::sha256_hex(std::string(56, 'a')) ==
        "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  CHECK(emit::sha256_hex(std::string(63, 'a')) ==
        "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34");
  CHECK(emit::sha256_hex(std::string(64, 'a')) ==
        "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
  CHECK(emit::sha256_hex(std::string(119, 'a')) ==
        "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb");
  CHECK(emit::sha256_hex(std::string(120, 'a')) ==
        "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c");
}

TEST_CASE("golden launch files, byte for byte (regenerate: update_goldens target)") {
  const bool update = std::getenv("PLANNER_UPDATE_GOLDENS") != nullptr;
  for (const Case& c : kGoldens) {
    CAPTURE(c.name);
    const fs::path dir = fs::path(kRoot) / "tests/data/golden" / c.name;
    const auto files = emitted(c);
    if (update) {
      fs::remove_all(dir);
      io::write_file_set(dir.string(), files);
      MESSAGE("regenerated " << dir);
      continue;
    }
    std::set<std::string> expected, got;
    for (const auto& e : fs::directory_iterator(dir)) expected.insert(e.path().filename().string());
    for (const auto& f : files) {
      got.insert(f.name);
      CAPTURE(f.name);
      CHECK(f.contents == read(dir / f.name));
    }
    CHECK(got == expected);
  }
}

TEST_CASE("the flag scan reads arrays, one-line appends and skips comments") {
  const auto a = flags_by_array(
      "#!/bin/bash\n# --not-this\nX=(\n  # --nor-this\n  --a 1  # --nor-that\n"
      "  --b=2 \"$Y\"\n)\nif true; then X+=(--c \"$Z\"); fi\nZ=(--d)\n");
  CHECK(a.size() == 2);
  CHECK(a.at("X") == std::set<std::string>{"--a", "--b", "--c"});
  CHECK(a.at("Z") == std::set<std::string>{"--d"});
  // The goldens' arrays are found where expected.
  const auto meg = flags_by_array(emitted(kGoldens[0])[0].contents);
  CHECK(meg.at("TORCHRUN_ARGS").count("--nproc_per_node") == 1);
  CHECK(meg.at("MEGATRON_ARGS").count("--num-virtual-stages-per-pipeline-rank") == 1);
  CHECK(meg.at("DATA_ARGS").count("--mock-data") == 1);
  CHECK(meg.at("TRAINING_ARGS").count("--save") == 1);
  const auto ds = flags_by_array(emitted(kGoldens[3])[1].contents);
  CHECK(ds.at("LAUNCHER_ARGS").count("--hostfile") == 1);
  CHECK(ds.at("MEGATRON_DS_ARGS").count("--num-key-value-heads") == 1);
}

TEST_CASE("every emitted flag is in the framework's name list") {
  const auto megatron = name_list("megatron-core-args.txt"),
             mds = name_list("megatron-deepspeed-args.txt"),
             torchrun = name_list("torchrun-args.txt"),
             launcher = name_list("deepspeed-launcher.txt"),
             pyxis = name_list("pyxis-srun-args.txt"),
             torchtitan = name_list("torchtitan-config-fields.txt");
  for (const Case& c : all_cases()) {
    for (const auto& f : emitted(c)) {
      if (f.name.size() < 3 || f.name.substr(f.name.size() - 3) != ".sh") continue;
      CAPTURE(c.name);
      CAPTURE(f.name);
      const auto arrays = flags_by_array(f.contents);
      CHECK(arrays.count("") == 0);       // every flag is passed through a named array
      for (const auto& entry : arrays) {  // not a structured binding: clang < 16 cannot CAPTURE one
        const std::string& array = entry.first;
        const auto& allowed = array == "TORCHRUN_ARGS"                   ? torchrun
                              : array == "LAUNCHER_ARGS"                 ? launcher
                              : array == "SRUN_ARGS"                     ? pyxis
                              : array == "TORCHTITAN_ARGS"               ? torchtitan
                              : c.framework == emit::Framework::megatron ? megatron
                                                                         : mds;
        for (const std::string& flag : entry.second) {
          CAPTURE(array);
          CAPTURE(flag);
          CHECK(allowed.count(flag) == 1);
        }
      }
    }
  }
}

TEST_CASE("ds_config.json: documented keys only, batch arithmetic consistent with dp") {
  const auto keys = name_list("deepspeed-config-keys.txt");
  for (const Case& c : all_cases()) {
    if (c.framework != emit::Framework::deepspeed) continue;
    CAPTURE(c.name);
    const Plan p = request(c.framework, c.model, c.cluster, c.plan).plan;
    for (const auto& f : emitted(c)) {
      if (f.name != "ds_config.json") continue;
      const auto j = nlohmann::json::parse(f.contents);
      std::set<std::string> paths;
      leaf_paths(j, "", paths);
      for (const std::string& path : paths) {
        CAPTURE(path);
        CHECK(keys.count(path) == 1);
      }
      const int micro = j["train_micro_batch_size_per_gpu"],
                accumulation = j["gradient_accumulation_steps"];
      CHECK(j["train_batch_size"] == micro * accumulation * p.dp);
      CHECK(j["train_batch_size"] == p.gbs);
      CHECK(j["zero_optimization"]["stage"] == p.zero);
      if (p.zero == 3) CHECK(j["zero_optimization"]["overlap_comm"] == true);  // as predicted
      CHECK(j.contains("activation_checkpointing") == (p.recompute != Recompute::none));
    }
  }
}

TEST_CASE("emitted shell scripts pass bash -n; headers carry plan, prediction and hashes") {
  const fs::path dir = fresh_dir("bash_n");
  fs::create_directories(dir);
  int n = 0;
  for (const Case& c : all_cases()) {
    const emit::EmitRequest r = request(c.framework, c.model, c.cluster, c.plan);
    for (const auto& f : emit::emit_files(c.framework, r)) {
      CAPTURE(c.name);
      CAPTURE(f.name);
      if (f.name == "ds_config.json" || f.name == ".deepspeed_env") continue;  // no comment syntax
      CHECK(f.contents.find("# plan       --plan \"" + to_plan_string(r.plan) + "\"\n") !=
            std::string::npos);
      CHECK(f.contents.find("sha256:" + emit::sha256_hex(io::read_file(kRoot + c.model))) !=
            std::string::npos);
      CHECK(f.contents.find("sha256:" + emit::sha256_hex(io::read_file(kRoot + c.cluster))) !=
            std::string::npos);
      CHECK(f.contents.find("# predicted  iteration ") != std::string::npos);
      CHECK(f.contents.find("# predicted  memory ") != std::string::npos);
      CHECK(f.contents.find("planner " PLANNER_VERSION) != std::string::npos);
      if (f.name.substr(f.name.size() - 3) == ".py" &&
          std::system("python3 -c '' 2>/dev/null") == 0) {
        const fs::path py = dir / (c.name + "-" + f.name);  // torchtitan's recipe parses
        std::ofstream(py) << f.contents;
        const std::string cmd =
            "python3 -c \"import ast,sys; ast.parse(open(sys.argv[1]).read())\" '" + py.string() +
            "' 2>&1";
        CHECK(std::system(cmd.c_str()) == 0);
      }
      if (f.name.substr(f.name.size() - 3) != ".sh") continue;
      CHECK(f.contents.rfind("#!/usr/bin/env bash\n# Generated by planner", 0) == 0);
      CHECK(f.executable);
      const fs::path path = dir / (c.name + "-" + f.name);
      std::ofstream(path) << f.contents;
      const std::string cmd = "bash -n '" + path.string() + "' 2>&1";
      CHECK(std::system(cmd.c_str()) == 0);
      ++n;
    }
  }
  // Two scripts per Megatron case, one launcher per DeepSpeed and torchtitan case.
  CHECK(n == 2 * 27 + 18 + 1);
  fs::remove_all(dir);
}

TEST_CASE("Megatron scripts: world size and batch agree with the plan") {
  const auto files = emitted(kGoldens[0]);
  const std::string& s = files[0].contents;  // megatron_torchrun.sh: 128 nodes x 8 = 1024
  CHECK(s.find("GPUS_PER_NODE=8\nNNODES=${NNODES:-128}\n") != std::string::npos);
  CHECK(s.find("if (( GPUS_PER_NODE * NNODES != 1024 )); then") != std::string::npos);
  CHECK(s.find("--global-batch-size 1536") != std::string::npos);                   // 1 x 16 x 96
  CHECK(s.find("--num-virtual-stages-per-pipeline-rank 3 ") != std::string::npos);  // vpp=3
  CHECK(s.find("export CUDA_DEVICE_MAX_CONNECTIONS=1\n") != std::string::npos);
  CHECK(files[1].contents.find("#SBATCH --nodes=128\n") != std::string::npos);
}

TEST_CASE("plans a framework cannot express are refused with the reason") {
  const ModelSpec gpt = io::load_model(kRoot + kGpt3);
  const ClusterProfile a100 = io::load_cluster(kRoot + kA100);
  auto refusal = [&](emit::Framework f, const std::string& plan) {
    try {
      emit::check_expressible(f, gpt, a100, parse_plan(plan, "--plan"));
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  const auto M = emit::Framework::megatron, D = emit::Framework::deepspeed;
  CHECK(refusal(M, "tp=8,pp=1,dp=128,gbs=1536,zero=2") == "accepted");  // Megatron FSDP
  // Megatron-LM at d98e8a64 interleaves at pp=2 (validate_args 1000-1010), not at pp=1.
  CHECK(refusal(M, "tp=8,pp=2,dp=64,gbs=1536,vpp=2") == "accepted");
  CHECK(refusal(M, "tp=8,pp=1,dp=128,gbs=1536,vpp=2") ==
        "option --plan: Megatron-LM runs the interleaved schedule (vpp=2) only with pp > 1, got "
        "pp=1");
  CHECK(refusal(M, "tp=8,pp=8,dp=16,gbs=1536,schedule=gpipe") ==
        "option --plan: Megatron-LM has no GPipe schedule (its pipelines run 1F1B); use "
        "schedule=1f1b");
  CHECK(refusal(M, "tp=8,pp=8,dp=16,gbs=1540,vpp=3") ==
        "option --plan: gbs=1540 is not mbs x dp x gradient-accumulation steps: mbs*dp = 16 does "
        "not divide it");
  CHECK(refusal(M, "tp=8,pp=8,dp=16,gbs=1520,vpp=3") ==  // 95 micro-batches
        "option --plan: Megatron-LM's interleaved schedule needs the micro-batches (95) to be a "
        "multiple of pp=8");
  CHECK(refusal(M, "tp=4,pp=1,dp=3,gbs=96") ==
        "option --plan: tp*pp*dp*cp = 12 GPUs is not a whole number of 8-GPU hosts");
  CHECK(refusal(M, "tp=8,pp=5,dp=2,gbs=96") ==
        "option --plan: pp=5 does not divide layers=96 (split=short_ends or embed_loss cut them "
        "unevenly)");
  CHECK(
      refusal(D, "tp=8,pp=8,dp=16,gbs=1536,zero=2") ==
      "option --plan: DeepSpeed's pipeline engine refuses zero=2 with pp=8 (ZeRO-2 and ZeRO-3 are "
      "incompatible with pipeline parallelism); use zero<=1 or pp=1");
  CHECK(refusal(D, kGpt3Plan) ==
        "option --plan: DeepSpeed's pipeline engine has no interleaved schedule; use vpp=1 "
        "(schedule=1f1b)");
  CHECK(refusal(D, "tp=8,pp=8,cp=2,dp=8,gbs=1536,zero=1")
            .rfind("option --plan: Megatron-DeepSpeed has no context parallelism", 0) == 0);
  CHECK(refusal(D, "tp=8,pp=8,dp=16,gbs=1536,dtype=fp8") ==
        "option --plan: the DeepSpeed config has no fp8 mode; use dtype=bf16");
  CHECK(refusal(M, "tp=8,pp=8,dp=16,gbs=1536,zero=1") == "accepted");
  CHECK(refusal(D, "tp=8,pp=1,dp=128,gbs=1536,zero=3") == "accepted");
}

TEST_CASE("Megatron-LM's zero=2 and 3 are Megatron FSDP, written with its sharding strategy") {
  for (const auto& z :  // no structured binding: clang refuses it in CAPTURE's lambda
       std::vector<std::pair<int, std::string>>{{2, "optim_grads"}, {3, "optim_grads_params"}}) {
    const int zero = z.first;
    const std::string& strategy = z.second;
    CAPTURE(zero);
    const Case c{"fsdp", kLlama, kH100,
                 "tp=8,pp=1,dp=8,mbs=1,gbs=128,zero=" + std::to_string(zero) + ",sp=1",
                 emit::Framework::megatron};
    const std::string s = emitted(c)[0].contents;
    CHECK(s.find("\n  --use-megatron-fsdp ") != std::string::npos);
    const std::string flag = "\n  --data-parallel-sharding-strategy " + strategy;
    const size_t at = s.find(flag);
    REQUIRE(at != std::string::npos);
    CHECK((s[at + flag.size()] == ' ' || s[at + flag.size()] == '\n'));  // the whole value
    CHECK(s.find("\n  --use-distributed-optimizer ") != std::string::npos);
  }
}

TEST_CASE("write_file_set is atomic: all files or none, no temporary left behind") {
  const fs::path dir = fresh_dir("atomic") / "nested" / "out";
  const auto written =
      io::write_file_set(dir.string(), {{"a.sh", "echo a\n", true}, {"b.json", "{}\n", false}});
  CHECK(written == std::vector<std::string>{(dir / "a.sh").string(), (dir / "b.json").string()});
  CHECK(read(dir / "a.sh") == "echo a\n");
  CHECK((fs::status(dir / "a.sh").permissions() & fs::perms::owner_exec) != fs::perms::none);
  CHECK((fs::status(dir / "b.json").permissions() & fs::perms::owner_exec) == fs::perms::none);
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 2);

  // A file that cannot be written: nothing is left, not even the directory the call created.
  const fs::path failed = fresh_dir("atomic_fail");
  CHECK_THROWS_AS(
      io::write_file_set(failed.string(), {{"a.sh", "x", false}, {"no/such/b.sh", "y", false}}),
      InputError);
  CHECK(!fs::exists(failed));
  // In an existing directory, the earlier files' temporaries are removed and nothing replaced.
  CHECK_THROWS_AS(
      io::write_file_set(dir.string(), {{"a.sh", "new\n", false}, {"no/such/b.sh", "y", false}}),
      InputError);
  CHECK(read(dir / "a.sh") == "echo a\n");
  CHECK(std::distance(fs::directory_iterator(dir), fs::directory_iterator()) == 2);
  fs::remove_all(fresh_dir("atomic"));
}

TEST_CASE(
    "TP communication overlap: Megatron-LM gets --tp-comm-overlap, DeepSpeed a prediction without "
    "it") {
  const std::string plan = "tp=8,pp=4,dp=2,mbs=1,gbs=128,zero=1,recompute=selective,sp=1";
  const emit::EmitRequest mg = request(emit::Framework::megatron, kLlama, kH100, plan);
  const emit::EmitRequest ds = request(emit::Framework::deepspeed, kLlama, kH100, plan);
  CHECK(mg.cluster.software.overlap_tp_comm);
  CHECK(mg.stack_note.empty());
  CHECK_FALSE(ds.cluster.software.overlap_tp_comm);
  CHECK(ds.stack_note.empty());  // DeepSpeed's own stack: nothing of the profile's to take off
  CHECK_FALSE(ds.cluster.software.overlap_param_gather);  // DeepSpeed gathers inside the step
  CHECK(ds.estimate.breakdown.tp_comm_s > 1.5 * mg.estimate.breakdown.tp_comm_s);
  const auto mg_files = emit::emit_files(emit::Framework::megatron, mg);
  CHECK(mg_files.front().contents.find("\n  --tp-comm-overlap ") != std::string::npos);
  for (const auto& f : emit::emit_files(emit::Framework::deepspeed, ds))
    if (f.name == "deepspeed_launch.sh") CHECK(f.contents.find("# stack") == std::string::npos);
  // Megatron refuses --tp-comm-overlap without sequence parallelism: a note instead of the flag.
  const emit::EmitRequest no_sp =
      request(emit::Framework::megatron, kLlama, kH100,
              "tp=8,pp=4,dp=2,mbs=1,gbs=128,zero=1,recompute=full,sp=0");
  const std::string text = emit::emit_files(emit::Framework::megatron, no_sp).front().contents;
  CHECK(text.find("\n  --tp-comm-overlap ") == std::string::npos);
  CHECK(text.find("sp=0: no --tp-comm-overlap") != std::string::npos);
}

TEST_CASE("head_dim, QKV biases and per-head norms reach the flags; what has none is said") {
  const auto M = emit::Framework::megatron, D = emit::Framework::deepspeed;
  auto script = [&](emit::Framework f, const HfEmitCase& c) {
    for (const auto& file :
         emitted({c.name, c.model, kH100, f == M ? c.plan : without_sp(c.plan), f}))
      if (file.name == (f == M ? "megatron_torchrun.sh" : "deepspeed_launch.sh"))
        return file.contents;
    FAIL("no launch script for " << c.name);
    return std::string();
  };
  const std::string nemo = script(M, kHfEmitCases[0]), qwen = script(M, kHfEmitCases[1]);
  const std::string gemma = script(M, kHfEmitCases[2]), qwen3 = script(M, kHfEmitCases[3]);
  // heads x head_dim differs from hidden: Megatron-LM's --kv-channels.
  CHECK(nemo.find("--kv-channels 128") != std::string::npos);
  CHECK(qwen.find("--kv-channels") == std::string::npos);  // 28 x 128 = 3584
  // Qwen2.5's Q, K and V biases beside --disable-bias-linear.
  CHECK(qwen.find("--disable-bias-linear") != std::string::npos);
  CHECK(qwen.find("--add-qkv-bias") != std::string::npos);
  CHECK(nemo.find("--add-qkv-bias") == std::string::npos);
  // Qwen3: its query and key norms, its 128-wide heads on hidden 2560.
  CHECK(qwen3.find("--qk-layernorm") != std::string::npos);
  CHECK(qwen3.find("--kv-channels 128") != std::string::npos);
  // Sliding windows as Megatron-LM's (left, right) = (W - 1, 0): Gemma 2's on layers 1, 3, 5 ...
  // (every 2nd layer global), Mistral's on every layer; none for Qwen2.5 (use_sliding_window
  // false). Megatron-DeepSpeed has no flag and says so.
  CHECK(gemma.find("\n  --window-size 4095,0 ") != std::string::npos);
  CHECK(gemma.find("\n  --window-attn-skip-freq 2 ") != std::string::npos);
  const std::string mistral = script(M, kHfEmitCases[4]);
  CHECK(mistral.find("\n  --window-size 4095,0 ") != std::string::npos);
  CHECK(mistral.find("--window-attn-skip-freq") == std::string::npos);
  CHECK(qwen.find("--window-size") == std::string::npos);
  CHECK(script(D, kHfEmitCases[2])
            .find("# a sliding window of 4096 keys on 50% of the layers: Megatron-DeepSpeed at ") !=
        std::string::npos);
  // No flag for Gemma 2's sandwich norms.
  CHECK(gemma.find("norms after attention and after the MLP (Gemma 2)") != std::string::npos);
  CHECK(gemma.find("# a GELU-gated MLP (GeGLU): Megatron-LM at d98e8a64 has no flag for this; "
                   "--swiglu trains a SiLU gate instead") != std::string::npos);
  CHECK(qwen.find("GeGLU") == std::string::npos);
  CHECK(gemma.find("--kv-channels 256") != std::string::npos);
  // Megatron-DeepSpeed has --kv-channels but no --add-qkv-bias.
  const std::string ds_qwen = script(D, kHfEmitCases[1]);
  CHECK(ds_qwen.find("--add-qkv-bias") == std::string::npos);
  CHECK(ds_qwen.find("# the model's Q, K and V biases: Megatron-DeepSpeed at ") !=
        std::string::npos);
  CHECK(script(D, kHfEmitCases[0]).find("--kv-channels 128") != std::string::npos);
}

TEST_CASE("Megatron-LM at d98e8a64: RoPE base, no dropout, tokenizer, attention backend") {
  const auto llama = emitted(kGoldens[1]);  // Llama 3 70B: rope_theta 500000, vocab 128256
  const std::string& l = llama[0].contents;
  CHECK(l.find("\n  --rotary-base 500000 ") != std::string::npos);
  CHECK(l.find("\n  --attention-dropout 0 ") != std::string::npos);
  CHECK(l.find("\n  --hidden-dropout 0\n") != std::string::npos);
  CHECK(l.find("--tokenizer-type HuggingFaceTokenizer\n") != std::string::npos);
  CHECK(l.find("--tokenizer-model \"${TOKENIZER_MODEL:?") != std::string::npos);
  // The NullTokenizer of mock data takes the whole vocabulary (EOD is its last id).
  CHECK(l.find("--mock-data --tokenizer-type NullTokenizer --vocab-size 128256)") !=
        std::string::npos);
  CHECK(l.find("--use-mcore-models") == std::string::npos);  // deprecated and ignored
  const std::string g = emitted(kGoldens[0])[0].contents;    // GPT-3: learned positions, dropout
  CHECK(g.find("--rotary-base") == std::string::npos);
  CHECK(g.find("--attention-dropout") == std::string::npos);
  CHECK(g.find("--tokenizer-type GPT2BPETokenizer") != std::string::npos);
  // Unfused attention is the backend flag; the NVTE_* variables would trip the model's check.
  const std::string unfused =
      emitted({"", kGpt3, kA100,
               "tp=8,pp=8,dp=16,mbs=1,gbs=1536,recompute=selective,sp=1,attn=unfused",
               emit::Framework::megatron})[0]
          .contents;
  CHECK(unfused.find("\n  --attention-backend unfused ") != std::string::npos);
  CHECK(unfused.find("NVTE_") == std::string::npos);
  CHECK(g.find("\n  --attention-backend") == std::string::npos);  // flash: the default, auto
  // CUDA_DEVICE_MAX_CONNECTIONS=1 only where validate_args asks for it: tp > 1 or cp > 1.
  const std::string dp_only =
      emitted({"", "configs/models/gpt3-1.3b.yaml", kA100, "tp=1,pp=1,dp=8,mbs=4,gbs=64,zero=1",
               emit::Framework::megatron})[0]
          .contents;
  CHECK(dp_only.find("CUDA_DEVICE_MAX_CONNECTIONS") == std::string::npos);
  // A RoPE base with a fraction cannot be written as Megatron-LM's integer --rotary-base.
  emit::EmitRequest r = request(emit::Framework::megatron, kLlama, kH100, kLlamaPlan);
  r.model.rope_theta = 12345.5;
  CHECK_THROWS_WITH(emit::emit_megatron(r),
                    "option --plan: Megatron-LM's --rotary-base at commit d98e8a64 is an integer "
                    "(type=int); the model's rope_theta 12345.5 is not");
  // Megatron-DeepSpeed has the same flag under another name.
  const std::string ds = emitted(kGoldens[3])[1].contents;  // deepspeed_launch.sh
  CHECK(ds.find("\n  --rotary-position-embeddings-theta 500000 ") != std::string::npos);
  CHECK(ds.find("\n  --attention-dropout 0 ") != std::string::npos);
}

TEST_CASE("Megatron-LM interleaves at pp=2, P2P overlapped by default") {
  const std::string s =
      emitted({"", kLlama, kH100, "tp=8,pp=2,dp=4,vpp=2,mbs=1,gbs=128,zero=1,sp=1",
               emit::Framework::megatron})[0]
          .contents;
  CHECK(s.find("\n  --num-virtual-stages-per-pipeline-rank 2 ") != std::string::npos);
  CHECK(s.find("# P2P sends and receives overlap the chunks' compute") != std::string::npos);
  CHECK(s.find("\n  --overlap-p2p-communication") == std::string::npos);  // no such flag to set
  const std::string plain = emitted(kGoldens[1])[0].contents;             // pp=4, no interleaving
  CHECK(plain.find("# 1F1B without interleaving") != std::string::npos);
}

TEST_CASE("megatron_split_args: Megatron-LM's uneven-stage flags, checked and in order") {
  const ModelSpec m = io::load_model(kRoot + kLlama);  // 80 layers
  const Plan p = parse_plan("tp=8,pp=4,dp=2,mbs=1,gbs=128", "--plan");
  CHECK(emit::megatron_split_args(m, p, {}).empty());
  using FV = emit::FlagValue;
  CHECK(emit::megatron_split_args(m, p, {18, 18, false, false}) ==
        std::vector<FV>{{"--decoder-first-pipeline-num-layers", "18"},
                        {"--decoder-last-pipeline-num-layers", "18"}});
  CHECK(emit::megatron_split_args(m, p, {0, 20, false, false}) ==
        std::vector<FV>{{"--decoder-last-pipeline-num-layers", "20"}});
  const Plan pp2 = parse_plan("tp=8,pp=2,dp=4,mbs=1,gbs=128", "--plan");  // 82 = 2 x 41
  CHECK(emit::megatron_split_args(m, pp2, {0, 0, true, true}) ==
        std::vector<FV>{{"--account-for-embedding-in-pipeline-split", ""},
                        {"--account-for-loss-in-pipeline-split", ""}});
  CHECK_THROWS_WITH(emit::megatron_split_args(m, p, {18, 18, true, false}),
                    "option --plan: Megatron-LM takes the first and last stages' layer counts or "
                    "the account-for-embedding/loss split, not both");
  // The emitter writes the request's split beside the virtual pipeline, as listed flags; DeepSpeed
  // refuses one.
  emit::EmitRequest r = request(emit::Framework::megatron, kLlama, kH100,
                                "tp=8,pp=4,dp=2,vpp=2,mbs=1,gbs=128,zero=1,sp=1");
  r.split = {18, 18, false, false};
  const std::string s = emit::emit_megatron(r)[0].contents;
  CHECK(s.find("\n  --decoder-first-pipeline-num-layers 18 ") != std::string::npos);
  CHECK(s.find("\n  --decoder-last-pipeline-num-layers 18 ") != std::string::npos);
  CHECK(s.find("\n  --num-virtual-stages-per-pipeline-rank 2 ") != std::string::npos);
  const auto megatron = name_list("megatron-core-args.txt");
  const auto arrays = flags_by_array(s);
  for (const std::string& flag : arrays.at("MEGATRON_ARGS")) {
    CAPTURE(flag);
    CHECK(megatron.count(flag) == 1);
  }
  emit::EmitRequest d = request(emit::Framework::deepspeed, kLlama, kH100, kLlamaPlan);
  d.split = {18, 18, false, false};
  CHECK_THROWS_WITH(emit::emit_deepspeed(d),
                    "option --plan: DeepSpeed splits the layers evenly over the pipeline stages "
                    "only");
}

TEST_CASE("the sbatch script leaves time, partition, account and container to the site") {
  const std::string s = emitted(kGoldens[1])[1].contents;  // megatron_sbatch.sh
  for (const char* line : {"\n##SBATCH --time=<HH:MM:SS>\n", "\n##SBATCH --partition=<partition>\n",
                           "\n##SBATCH --account=<account>\n"}) {
    CAPTURE(line);
    CHECK(s.find(line) != std::string::npos);
  }
  for (const char* var : {"SBATCH_TIMELIMIT", "SBATCH_PARTITION", "SBATCH_ACCOUNT"}) {
    CAPTURE(var);
    CHECK(s.find(var) != std::string::npos);
  }
  // sbatch reads #SBATCH lines only before the first command: the placeholders come before it.
  CHECK(s.find("##SBATCH --account") < s.find("\nset -euo pipefail\n"));
  CHECK(s.find("  SRUN_ARGS+=(--container-image \"$CONTAINER_IMAGE\"\n") != std::string::npos);
  CHECK(s.find("\nsrun \"${SRUN_ARGS[@]}\" torchrun ") != std::string::npos);
}

TEST_CASE("ds_config.json: an optimizer and scheduler where DeepSpeed builds them") {
  const auto keys = name_list("deepspeed-config-keys.txt");
  const auto plain = emitted({"", "configs/models/gpt3-1.3b.yaml", kA100,
                              "tp=1,pp=1,dp=4,mbs=4,gbs=64,zero=1", emit::Framework::deepspeed});
  const auto j = nlohmann::json::parse(plain[0].contents);  // tp = pp = 1: DeepSpeed's own engine
  CHECK(j["optimizer"]["type"] == "AdamW");
  CHECK(j["optimizer"]["params"]["betas"] == nlohmann::json::array({0.9, 0.95}));
  CHECK(j["optimizer"]["params"]["weight_decay"] == 0.1);
  CHECK(j["scheduler"]["type"] == "WarmupDecayLR");
  CHECK(j["scheduler"]["params"]["warmup_max_lr"] == j["optimizer"]["params"]["lr"]);
  CHECK(j["scheduler"]["params"]["warmup_type"] == "linear");
  CHECK(j["scheduler"]["params"]["total_num_steps"] > j["scheduler"]["params"]["warmup_num_steps"]);
  std::set<std::string> paths;
  leaf_paths(j, "", paths);
  for (const std::string& path : paths) {
    CAPTURE(path);
    CHECK(keys.count(path) == 1);
  }
  CHECK(plain[1].contents.find("# ds_config.json's optimizer (AdamW") != std::string::npos);
  // Megatron-DeepSpeed passes its own optimizer and scheduler: the config has neither.
  const auto mds = emitted(kGoldens[3]);
  const auto k = nlohmann::json::parse(mds[0].contents);
  CHECK(!k.contains("optimizer"));
  CHECK(!k.contains("scheduler"));
  CHECK(mds[1].contents.find("# It has no optimizer or scheduler") != std::string::npos);
}

TEST_CASE("ds_config.json under the pipeline engine: BF16_Optimizer, the reduction after it") {
  // pp > 1, bf16, ZeRO-1: fp32 accumulation selects BF16_Optimizer, and overlap_comm is off
  // (the engine reduces after the last backward, as the prediction prices it).
  const auto k = nlohmann::json::parse(emitted(kGoldens[3])[0].contents);
  CHECK(k["data_types"]["grad_accum_dtype"] == "fp32");
  CHECK(k["zero_optimization"]["stage"] == 1);
  CHECK(k["zero_optimization"]["overlap_comm"] == false);
  // DeepSpeed's own engine (pp = 1): neither, and the reduction beside the backward.
  const auto plain = nlohmann::json::parse(
      emitted({"", "configs/models/gpt3-1.3b.yaml", kA100, "tp=1,pp=1,dp=4,mbs=4,gbs=64,zero=1",
               emit::Framework::deepspeed})[0]
          .contents);
  CHECK(!plain.contains("data_types"));
  CHECK(plain["zero_optimization"]["overlap_comm"] == true);
  // fp16 keeps DeepSpeedZeroOptimizer: no fp32 accumulation key.
  const auto f16 = nlohmann::json::parse(
      emitted({"", "configs/models/gpt3-1.3b.yaml", kA100,
               "tp=1,pp=2,dp=4,mbs=4,gbs=64,zero=1,dtype=fp16", emit::Framework::deepspeed})[0]
          .contents);
  CHECK(!f16.contains("data_types"));
  CHECK(f16["zero_optimization"]["overlap_comm"] == false);
}

TEST_CASE("Megatron-DeepSpeed with the optimizer offloaded builds DeepSpeedCPUAdam") {
  // A client optimizer other than DeepSpeedCPUAdam is refused by ZeRO-Offload
  // (zero_force_ds_cpu_optimizer): --cpu-optimizer makes Megatron-DeepSpeed build that one.
  const Case c{"ds-mds-offload", "configs/models/llama3-8b.yaml", kH100,
               "tp=2,pp=1,dp=4,mbs=1,gbs=64,zero=1,recompute=full,offload_optimizer=cpu",
               emit::Framework::deepspeed};
  bool seen = false;
  for (const auto& f : emitted(c))
    if (f.name == "deepspeed_launch.sh")
      seen = f.contents.find("--cpu-optimizer") != std::string::npos;
  CHECK(seen);
}

TEST_CASE("NCCL_ALGO pins the all-reduce to the tree only where the prediction used it") {
  // GPT-3 1.3B, tp=8 on 1,024 H100s: two ~330 MB buckets over 128 nodes, where the tree's 14
  // network steps beat the ring's 254 (estimate's DP line says "NCCL tree across 128 nodes").
  const std::string model = "configs/models/gpt3-1.3b.yaml";
  const Case tree{"tree", model, kH100, "tp=8,pp=1,dp=128,mbs=4,gbs=4096,zero=0,sp=1",
                  emit::Framework::megatron};
  const emit::EmitRequest r = request(tree.framework, tree.model, tree.cluster, tree.plan);
  REQUIRE(r.estimate.dp_allreduce == AllreduceAlgorithm::tree);
  CHECK(r.estimate.dp_bucket_bytes * 2 ==
        doctest::Approx(1.3e9 / 8 * 4).epsilon(0.05));  // 2 buckets
  for (emit::Framework f : {emit::Framework::megatron, emit::Framework::deepspeed}) {
    const Case c{"tree", model, kH100, tree.plan, f};
    bool seen = false;
    for (const auto& file : emitted(c))
      seen = seen || file.contents.find("export NCCL_ALGO=${NCCL_ALGO:-allreduce:tree}\n") !=
                         std::string::npos;
    CHECK(seen);
  }
  // On 2 nodes the ring's 2 steps are the tree's: no pin; nor under ZeRO-1 (reduce-scatter);
  // nor where TP all-reduces inside the node (sp=0) would be pinned to the tree too.
  for (const char* plan :
       {"tp=8,pp=1,dp=2,mbs=4,gbs=64,zero=0,sp=1", "tp=8,pp=1,dp=128,mbs=4,gbs=4096,zero=1,sp=1",
        "tp=8,pp=1,dp=128,mbs=4,gbs=4096,zero=0,sp=0"}) {
    const Case c{"ring", model, kH100, plan, emit::Framework::megatron};
    for (const auto& file : emitted(c)) CHECK(file.contents.find("NCCL_ALGO") == std::string::npos);
  }
}

TEST_CASE("order=tp-pp-dp is written as Megatron-LM's --use-tp-pp-dp-mapping, a listed flag") {
  const Case c{"order", "configs/models/llama3-8b.yaml", kH100,
               "tp=2,pp=4,dp=8,mbs=1,gbs=128,zero=1,order=tp-pp-dp", emit::Framework::megatron};
  const std::set<std::string> listed = name_list("megatron-core-args.txt");
  REQUIRE(listed.count("--use-tp-pp-dp-mapping") == 1);
  bool seen = false;
  for (const auto& f : emitted(c))
    seen = seen || f.contents.find("--use-tp-pp-dp-mapping") != std::string::npos;
  CHECK(seen);
  const Case plain{"order", c.model, kH100, "tp=2,pp=4,dp=8,mbs=1,gbs=128,zero=1",
                   emit::Framework::megatron};
  for (const auto& f : emitted(plain))
    CHECK(f.contents.find("--use-tp-pp-dp-mapping") == std::string::npos);
  // DeepSpeed's topology has the pipeline outermost: refused, with the reason.
  CHECK_THROWS_WITH_AS(emitted({"order", c.model, kH100, c.plan, emit::Framework::deepspeed}),
                       doctest::Contains("PipeModelDataParallelTopology"), InputError);
}

TEST_CASE("torchtitan: the recipe sets only names read from its source, and refuses the rest") {
  const std::set<std::string> names = name_list("torchtitan-config-fields.txt");
  const std::string l8 = "configs/models/llama3-8b.yaml";
  const Case fp8{"tt-fp8", l8, kH100,
                 "tp=2,pp=4,dp=8,cp=1,mbs=1,gbs=256,zero=3,recompute=full,sp=1,dtype=fp8,"
                 "tp_comm_overlap=1",
                 emit::Framework::torchtitan};
  const Case ddp{"tt-ddp", l8, kH100, "tp=8,pp=1,dp=2,cp=1,mbs=1,gbs=16,zero=0,recompute=full,sp=1",
                 emit::Framework::torchtitan};
  const Case cp{"tt-cp", l8, kH100, "tp=2,pp=1,dp=2,cp=2,mbs=1,gbs=16,zero=3,sp=1",
                emit::Framework::torchtitan};
  for (const Case& c : {fp8, ddp, cp, kGoldens.back()}) {
    CAPTURE(c.plan);
    const auto files = emitted(c);
    REQUIRE(files.size() == 2);
    CHECK(files[0].name == "planner_recipe.py");
    const std::string& py = files[0].contents;
    // Every `config.a.b = ` assignment: a Trainer.Config field, or a field of its training,
    // parallelism or compile section.
    const std::regex assign(R"(\n    config\.([a-z_]+)(?:\.([a-z_]+))? = )");
    int seen = 0;
    for (auto it = std::sregex_iterator(py.begin(), py.end(), assign); it != std::sregex_iterator();
         ++it, ++seen) {
      const std::string section = (*it)[1], field = (*it)[2];
      CAPTURE(section);
      CAPTURE(field);
      CHECK(names.count("config." + section) == 1);
      if (!field.empty()) CHECK(names.count(section + "." + field) == 1);
    }
    CHECK(seen >= 10);
    // The classes imported and the recipe derived from, the flavour and the converter's fields.
    const std::regex import(R"(\nfrom torchtitan\.[a-z_.0-9]+ import ([A-Za-z_0-9]+)\n)");
    for (auto it = std::sregex_iterator(py.begin(), py.end(), import); it != std::sregex_iterator();
         ++it) {
      const std::string name = (*it)[1];
      CAPTURE(name);
      CHECK((names.count("class " + name) == 1 || names.count("def " + name) == 1 ||
             name == "model_registry" || name == "Trainer"));
    }
    std::smatch flavour;
    REQUIRE(std::regex_search(py, flavour,
                              std::regex(R"re(model_registry\(\n?\s*"([0-9A-Za-z]+)")re")));
    CHECK(names.count("llama3 " + flavour[1].str()) == 1);
  }
  const std::string py = emitted(fp8)[0].contents;
  CHECK(names.count("Float8LinearConverter.Config.filter_fqns") == 1);
  CHECK(names.count("QuantizationConverter.Config.model_compile_enabled") == 1);
  CHECK(py.find("config.compile.enable_async_tensor_parallel = True") != std::string::npos);
  CHECK(py.find("config.parallelism.data_parallel_shard_degree = 8") != std::string::npos);
  CHECK(py.find("config.parallelism.num_pp_microbatches = 32") != std::string::npos);
  CHECK(py.find("config.training.num_tokens_per_train_step = 2097152") != std::string::npos);
  const std::string ddp_py = emitted(ddp)[0].contents;
  CHECK(ddp_py.find("config.parallelism.data_parallel_replicate_degree = 2") != std::string::npos);
  CHECK(ddp_py.find("config.activation_checkpoint = FullAC.Config()") != std::string::npos);
  CHECK(emitted(kGoldens.back())[0].contents.find("config.activation_checkpoint = FullAC") !=
        std::string::npos);
  CHECK(ddp_py.find("config.model_spec = model_registry(\"8B\")") != std::string::npos);
  CHECK(emitted(cp)[0].contents.find("context_parallel_load_balancer = \"ptrr\"") !=
        std::string::npos);
  // Refused: what torchtitan has no knob for, and models outside its registry.
  for (const std::string& plan : {std::string("tp=2,pp=1,dp=4,mbs=1,gbs=64,zero=1"),
                                  std::string("tp=2,pp=1,dp=4,mbs=1,gbs=64,recompute=selective"),
                                  std::string("tp=2,pp=1,dp=4,mbs=1,gbs=64,dtype=fp16"),
                                  std::string("tp=2,pp=1,dp=2,cp=2,mbs=1,gbs=16,zero=0")}) {
    CAPTURE(plan);
    CHECK_THROWS_AS(emitted({"tt-no", l8, kH100, plan, emit::Framework::torchtitan}), InputError);
  }
  CHECK_THROWS_WITH_AS(emitted({"tt-gpt", kGpt3, kA100, "tp=8,pp=8,dp=16,mbs=1,gbs=1536",
                                emit::Framework::torchtitan}),
                       doctest::Contains("Llama 3 flavours at b5bcd76c are 8B, 70B and 405B"),
                       InputError);
}

TEST_CASE("ZeRO++ is written as DeepSpeed's three keys, with hpZ over the node's ranks") {
  const Case c{"ds-zeropp", "configs/models/gpt3-1.3b.yaml", kA100,
               "tp=1,pp=1,dp=16,mbs=4,gbs=64,zero=3,recompute=full,zeropp=1",
               emit::Framework::deepspeed};
  for (const auto& f : emitted(c)) {
    if (f.name != "ds_config.json") continue;
    const auto z = nlohmann::json::parse(f.contents)["zero_optimization"];
    CHECK(z["zero_quantized_weights"] == true);
    CHECK(z["zero_quantized_gradients"] == true);
    CHECK(z["zero_hpz_partition_size"] == 8);  // 16 ranks on 2 nodes: 8 per node
  }
  const Case plain{"ds-zero3", c.model, kA100, "tp=1,pp=1,dp=16,mbs=4,gbs=64,zero=3,recompute=full",
                   emit::Framework::deepspeed};
  for (const auto& f : emitted(plain))
    CHECK(f.contents.find("zero_quantized") == std::string::npos);
}

TEST_CASE("grad_reduce_bf16 is Megatron-LM's --grad-reduce-in-bf16, written only when planned") {
  // Megatron-Bridge's Llama 3 8B H100 FP8 recipe: Megatron FSDP on one node, bf16 gradients.
  const std::string base = "tp=1,pp=1,dp=8,mbs=1,gbs=128,zero=3,dtype=fp8";
  auto script = [&](const std::string& plan) {
    return emitted_file(
        {"grad-bf16", "configs/models/llama3-8b.yaml", kH100, plan, emit::Framework::megatron},
        "megatron_torchrun.sh");
  };
  // Megatron FSDP (zero=3) reads its own dtype flag, whose default is the parameters' bf16.
  const std::string fsdp16 = script(base + ",grad_reduce_bf16=1"), fsdp32 = script(base);
  CHECK(fsdp16.find("--megatron-fsdp-main-grads-dtype bf16") != std::string::npos);
  CHECK(fsdp32.find("--megatron-fsdp-main-grads-dtype fp32") != std::string::npos);
  for (const std::string* s : {&fsdp16, &fsdp32})
    CHECK(s->find("--grad-reduce-in-bf16") == std::string::npos);
  // The distributed optimizer (zero=1): --grad-reduce-in-bf16.
  const std::string zero1 = "tp=2,pp=1,dp=4,mbs=1,gbs=128,zero=1,sp=1,recompute=full,dtype=fp8";
  CHECK(script(zero1 + ",grad_reduce_bf16=1").find("--grad-reduce-in-bf16") != std::string::npos);
  CHECK(script(zero1).find("--grad-reduce-in-bf16") == std::string::npos);
  CHECK(script(zero1).find("--megatron-fsdp-main-grads-dtype") == std::string::npos);
  for (auto f : {emit::Framework::deepspeed, emit::Framework::torchtitan})
    CHECK_THROWS_WITH_AS(emitted({"grad-bf16", "configs/models/llama3-8b.yaml", kH100,
                                  base + ",grad_reduce_bf16=1", f}),
                         doctest::Contains("grad_reduce_bf16=1 is Megatron-LM's"), InputError);
}

TEST_CASE("loss_fusion=native is Megatron-LM's --cross-entropy-loss-fusion, impl native") {
  const std::string base = "tp=2,pp=1,dp=4,mbs=1,gbs=128,zero=1,sp=1,recompute=full";
  auto script = [&](const std::string& plan) {
    return emitted_file(
        {"ce-fusion", "configs/models/llama3-8b.yaml", kH100, plan, emit::Framework::megatron},
        "megatron_torchrun.sh");
  };
  const std::string fused = script(base + ",loss_fusion=native"), plain = script(base);
  CHECK(fused.find("--cross-entropy-loss-fusion") != std::string::npos);
  CHECK(fused.find("--cross-entropy-fusion-impl native") != std::string::npos);
  CHECK(plain.find("--cross-entropy-loss-fusion") == std::string::npos);
  CHECK_THROWS_WITH_AS(emitted({"ce-fusion", "configs/models/llama3-8b.yaml", kH100,
                                base + ",loss_fusion=te", emit::Framework::megatron}),
                       doctest::Contains("disabled due to stability issues"), InputError);
}

TEST_CASE("fp8_recipe=tensorwise is Megatron-LM's --fp8-recipe tensorwise; delayed its default") {
  const std::string base = "tp=2,pp=1,dp=4,mbs=1,gbs=128,zero=1,sp=1,recompute=full,dtype=fp8";
  auto script = [&](const std::string& plan) {
    return emitted_file(
        {"fp8-recipe", "configs/models/llama3-8b.yaml", kH100, plan, emit::Framework::megatron},
        "megatron_torchrun.sh");
  };
  const std::string current = script(base + ",fp8_recipe=tensorwise"), delayed = script(base);
  CHECK(current.find("--fp8-recipe tensorwise") != std::string::npos);
  CHECK(delayed.find("--fp8-recipe") == std::string::npos);
  CHECK(delayed.find("--fp8-format hybrid") != std::string::npos);
  CHECK_THROWS_WITH_AS(emitted({"fp8-recipe", "configs/models/llama3-8b.yaml", kH100,
                                base + ",fp8_recipe=tensorwise", emit::Framework::torchtitan}),
                       doctest::Contains("torchao"), InputError);
}

TEST_CASE("torchtitan's FSDP2 reshard policy as priced: always without a pipeline, never with") {
  auto recipe = [&](const std::string& plan) {
    return emitted_file(
        {"tt-reshard", "configs/models/llama3-8b.yaml", kH100, plan, emit::Framework::torchtitan},
        "planner_recipe.py");
  };
  CHECK(recipe("tp=1,pp=1,dp=8,mbs=1,gbs=64,zero=3,recompute=full")
            .find("fsdp_reshard_after_forward = \"always\"") != std::string::npos);
  CHECK(recipe("tp=1,pp=2,dp=4,mbs=1,gbs=64,zero=3,recompute=full")
            .find("fsdp_reshard_after_forward = \"never\"") != std::string::npos);
}

TEST_CASE("a model with experts: Megatron-LM's MoE flags, the layer pattern in its list form") {
  auto script = [&](const HfEmitCase& c) {
    return emitted_file({c.name, c.model, kH100, c.plan, emit::Framework::megatron},
                        "megatron_torchrun.sh");
  };
  const std::string qwen = script(kMoeEmitCases[0]), maverick = script(kMoeEmitCases[3]);
  for (const char* flag :
       {"--num-experts 128 ", "--moe-router-topk 8 ", "--moe-ffn-hidden-size 768 ",
        "--expert-model-parallel-size 8 ", "--expert-tensor-parallel-size 1 ",
        "--moe-grouped-gemm ", "--moe-router-fusion ", "--moe-permute-fusion ",
        "--moe-token-dispatcher-type alltoall "}) {
    CAPTURE(flag);
    CHECK(qwen.find(std::string("\n  ") + flag) != std::string::npos);
  }
  CHECK(qwen.find("--moe-layer-freq") == std::string::npos);  // every layer has experts
  const std::string capped = script(kMoeEmitCases[6]);
  for (const char* flag :
       {"--moe-token-dispatcher-type allgather ", "--moe-expert-capacity-factor 1.25 ",
        "--moe-token-drop-policy probs "}) {
    CAPTURE(flag);
    CHECK(capped.find(std::string("\n  ") + flag) != std::string::npos);
  }
  CHECK(capped.find("--moe-pad-expert-input-to-capacity") == std::string::npos);
  // gpt-oss's YaRN (rope_scaling: factor 32, 4096 original positions, truncate false).
  const std::string oss = script(kMoeEmitCases[1]);
  for (const char* flag :
       {"--position-embedding-type yarn ", "--rotary-scaling-factor 32 ",
        "--yarn-original-max-position-embeddings 4096\n", "--yarn-beta-fast 32\n",
        "--yarn-beta-slow 1\n", "--no-yarn-correction-range-round-to-int "}) {
    CAPTURE(flag);
    CHECK(oss.find(std::string("\n  ") + flag) != std::string::npos);
  }
  CHECK(oss.find("--mscale ") == std::string::npos);  // Megatron's defaults give its 1.35
  // gpt-oss's layer_types alternate sliding and full attention from a sliding first layer: the
  // 128-key window on layers 1, 3, 5 ... (every 2nd layer global), as Gemma 2's.
  CHECK(oss.find("\n  --window-size 127,0 ") != std::string::npos);
  CHECK(oss.find("\n  --window-attn-skip-freq 2 ") != std::string::npos);
  CHECK(oss.find("do not repeat") == std::string::npos);
  CHECK(qwen.find("\n  --position-embedding-type rope ") != std::string::npos);
  const std::string hybrid = script(kMoeEmitCases[8]);
  for (const char* flag :
       {"--moe-token-dispatcher-type flex ", "--moe-flex-dispatcher-backend hybridep "}) {
    CAPTURE(flag);
    CHECK(hybrid.find(std::string("\n  ") + flag) != std::string::npos);
  }
  CHECK(hybrid.find("--moe-permute-fusion") == std::string::npos);  // HybridEP permutes itself
  CHECK(hybrid.find("--cuda-graph") == std::string::npos);          // eager, Megatron-LM's default
  // cuda_graphs=1: Transformer Engine's scoped graphs of the modules Megatron-Bridge's MoE
  // recipes capture, with the RNG tracker they need.
  const std::string graphed = script(kMoeEmitCases[9]);
  for (const char* flag :
       {"--cuda-graph-impl transformer_engine ",
        "--cuda-graph-modules attn moe_router moe_preprocess ", "--te-rng-tracker "}) {
    CAPTURE(flag);
    CHECK(graphed.find(std::string("\n  ") + flag) != std::string::npos);
  }
  CHECK(script(kMoeEmitCases[7]).find("\n  --moe-pad-expert-input-to-capacity ") !=
        std::string::npos);
  // Llama 4 Maverick: layers 2, 4, 6 ... (counting from 1) have experts, beside a shared expert.
  // Megatron-LM's integer form would put them on layers 1, 3, 5 ...: the list form is written.
  CHECK(maverick.find("\n  --moe-layer-freq \"([0,1]*24)\" ") != std::string::npos);
  CHECK(maverick.find("\n  --moe-shared-expert-intermediate-size 8192 ") != std::string::npos);
  // DeepSeek-V3: three dense layers first, latent attention with Megatron-LM's head-dim names.
  const std::string ds = script(kMoeEmitCases[4]);
  for (const char* flag :
       {"--moe-layer-freq \"([0]*3+[1]*58)\" ", "--multi-latent-attention ", "--q-lora-rank 1536\n",
        "--kv-lora-rank 512\n", "--qk-head-dim 128 ", "--qk-pos-emb-head-dim 64 ",
        "--v-head-dim 128\n", "--qk-layernorm ", "--expert-model-parallel-size 256 ",
        "--moe-router-score-function sigmoid ", "--moe-router-enable-expert-bias ",
        "--moe-router-num-groups 8 ", "--moe-router-group-topk 4 ",
        "--moe-router-topk-scaling-factor 2.5 ", "--mtp-num-layers 1 ",
        // latent attention's YaRN (rope_scaling: factor 40, mscale and mscale_all_dim 1)
        "--rotary-scaling-factor 40 ", "--mscale 1\n", "--mscale-all-dim 1\n",
        "--position-embedding-type rope "}) {
    CAPTURE(flag);
    CHECK(ds.find(std::string("\n  ") + flag) != std::string::npos);
  }
  CHECK(ds.find("--yarn-") == std::string::npos);  // MLATransformerConfig's own YaRN fields
  CHECK(ds.find("has no flag for latent attention's") == std::string::npos);  // 4096, 32, 1
  // recompute=selective_moe: Megatron-LM's recompute modules.
  CHECK(script(kMoeEmitCases[5]).find("\n  --recompute-modules moe_act layernorm ") !=
        std::string::npos);
  // DeepSpeed and torchtitan are not planned for experts: refused with the reason.
  for (auto f : {emit::Framework::deepspeed, emit::Framework::torchtitan})
    CHECK_THROWS_WITH_AS(emitted({"moe", kMoeEmitCases[2].model, kH100,
                                  "tp=1,pp=1,dp=16,ep=8,mbs=1,gbs=64,zero=1", f}),
                         doctest::Contains("not planned for a model with experts"), InputError);
}

TEST_CASE("mxfp8: Megatron-LM's MXFP8 recipe flags and torchtitan's MXFP8 converter") {
  const std::string l8 = "configs/models/llama3-8b.yaml", b200 = "hw_profiles/dgx-b200.yaml";
  const std::string plan = "tp=1,pp=1,dp=8,mbs=1,gbs=128,zero=3,dtype=mxfp8";
  const std::string meg =
      emitted_file({"mx", l8, b200, plan, emit::Framework::megatron}, "megatron_torchrun.sh");
  const auto megatron = name_list("megatron-core-args.txt");
  for (const std::string flag : {"--bf16", "--fp8-format e4m3", "--fp8-recipe mxfp8"}) {
    CAPTURE(flag);
    CHECK(meg.find(flag) != std::string::npos);
    CHECK(megatron.count(flag.substr(0, flag.find(' '))) == 1);
  }
  CHECK(meg.find("--fp8-output-proj") == std::string::npos);  // the LM head stays bf16
  const std::string py = emitted({"mx", l8, b200, plan, emit::Framework::torchtitan})[0].contents;
  const auto names = name_list("torchtitan-config-fields.txt");
  CHECK(py.find("import MXFP8LinearConverter") != std::string::npos);
  CHECK(py.find("MXFP8LinearConverter.Config(\n                fqns=[\"layers\"]") !=
        std::string::npos);
  CHECK(py.find("Float8LinearConverter") == std::string::npos);
  CHECK(names.count("class MXFP8LinearConverter") == 1);
  CHECK(names.count("MXFP8LinearConverter.Config.fqns") == 1);
  CHECK_THROWS_WITH_AS(emitted({"mx", l8, b200, "tp=1,pp=1,dp=8,mbs=1,gbs=128,zero=1,dtype=mxfp8",
                                emit::Framework::deepspeed}),
                       doctest::Contains("no mxfp8 mode"), InputError);
  CHECK_THROWS_WITH_AS(emitted({"mx", l8, kH100, plan, emit::Framework::megatron}),
                       doctest::Contains("no mxfp8 tensor-core peak"), InputError);
}

TEST_CASE("recompute_layers is Megatron-LM's --recompute-method block; the others refuse it") {
  const std::string base = "tp=2,pp=1,dp=4,mbs=1,gbs=128,zero=1,sp=1,recompute=full";
  auto script = [&](const std::string& plan) {
    return emitted_file(
        {"rc-block", "configs/models/llama3-8b.yaml", kH100, plan, emit::Framework::megatron},
        "megatron_torchrun.sh");
  };
  const std::string block = script(base + ",recompute_layers=5"), every = script(base);
  CHECK(block.find("--recompute-granularity full") != std::string::npos);
  CHECK(block.find("--recompute-method block") != std::string::npos);
  CHECK(block.find("uniform") == std::string::npos);
  CHECK(block.find("--recompute-num-layers 5") != std::string::npos);
  CHECK(every.find("--recompute-method uniform") != std::string::npos);
  CHECK(every.find("--recompute-num-layers 1") != std::string::npos);
  for (auto f : {emit::Framework::deepspeed, emit::Framework::torchtitan})
    CHECK_THROWS_WITH_AS(emitted({"rc-block", "configs/models/llama3-8b.yaml", kH100,
                                  base + ",recompute_layers=5", f}),
                         doctest::Contains("--recompute-method block"), InputError);
}
