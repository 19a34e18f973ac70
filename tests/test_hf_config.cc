// Hugging Face config.json as --model: the mapping, the published parameter counts, the errors.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "planner/error.h"
#include "planner/io/file.h"
#include "planner/io/hf_config.h"
#include "planner/io/model_io.h"

using namespace planner;

namespace {

const std::string kDir = PLANNER_SOURCE_DIR "/tests/data/hf/";

std::string hf_error(const std::string& text) {
  try {
    io::parse_hf_config(text, "config.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

const char* kLlama =
    "{\n  \"architectures\": [\"LlamaForCausalLM\"],\n  \"hidden_size\": 256,\n"
    "  \"intermediate_size\": 688,\n  \"max_position_embeddings\": 1024,\n"
    "  \"num_attention_heads\": 8,\n  \"num_hidden_layers\": 2,\n  \"vocab_size\": 1000\n}\n";

std::string replace(std::string s, const std::string& from, const std::string& to) {
  return s.replace(s.find(from), from.size(), to);
}

}  // namespace

TEST_CASE("model_params matches the published parameter counts within 1%") {
  // Published: transformers' model.num_parameters() for each checkpoint. The planner counts
  // weights and norms (no biases, no learned position embeddings); tests/data/hf/README.md
  // itemises each difference. Llama 2 7B by hand: 32 x (4 x 4096^2 + 3 x 4096 x 11008 + 2 x 4096)
  // + 2 x 32000 x 4096 + 4096 = 6,738,415,616, the published count exactly.
  struct Case {
    const char* file;
    double published;
    double exact;
  };
  const Case cases[] = {
      {"llama-2-7b.json", 6738415616, 6738415616},
      {"llama-3-8b.json", 8030261248, 8030261248},
      {"mistral-7b-v0.1.json", 7241732096, 7241732096},
      {"qwen2-7b.json", 7615616512, 7615487488},        // - QKV biases 28 x 4,608
      {"qwen2-0.5b.json", 494032768, 494005120},        // - QKV biases 24 x 1,152; tied
      {"gpt2.json", 124439808, 123551232},              // - wpe 1024 x 768, - biases 102,144
      {"gpt2-xl.json", 1557611200, 1555126400},         // - wpe 1024 x 1600, - biases 846,400
      {"gpt-neox-20b.json", 20554567680, 20551587840},  // - biases 2,979,840
      {"pythia-160m.json", 162322944, 162220800},       // - biases 102,144
  };
  for (const Case& c : cases) {
    CAPTURE(c.file);
    const ModelSpec m = io::load_model(kDir + c.file);
    CHECK(m.total_params() == c.exact);
    CHECK(std::abs(m.total_params() / c.published - 1) < 0.01);
  }
}

TEST_CASE("the keys of each family map onto the model description") {
  const ModelSpec llama = io::load_model(kDir + "llama-3-8b.json");
  CHECK(llama.name == "meta-llama/Meta-Llama-3-8B");
  CHECK(llama.layers == 32);
  CHECK(llama.kv_heads == 8);
  CHECK(llama.ffn == 14336);
  CHECK(llama.swiglu);
  CHECK(!llama.tied_embeddings);
  CHECK(llama.seq_len == 8192);
  CHECK(llama.rope_theta == 500000);  // "rope_theta": 500000.0
  CHECK(io::load_model(kDir + "qwen2-0.5b.json").rope_theta == 1e6);
  const ModelSpec gpt2 = io::load_model(kDir + "gpt2.json");
  CHECK(gpt2.name == "gpt2");  // no _name_or_path: the file name
  CHECK(gpt2.hidden == 768);
  CHECK(gpt2.heads == 12);
  CHECK(gpt2.kv_heads == 12);
  CHECK(gpt2.ffn == 4 * 768);  // n_inner absent: 4 x n_embd
  CHECK(!gpt2.swiglu);
  CHECK(gpt2.tied_embeddings);  // GPT-2 ties by default
  CHECK(gpt2.seq_len == 1024);
  CHECK(gpt2.rope_theta == kDefaultRopeTheta);  // learned positions: the default, unused
  const ModelSpec neox = io::load_model(kDir + "gpt-neox-20b.json");
  CHECK(!neox.swiglu);
  CHECK(!neox.tied_embeddings);
  CHECK(neox.ffn == 24576);
  // max_position_embeddings 131072 is a context limit, not a training length
  CHECK(io::load_model(kDir + "qwen2-7b.json").seq_len == io::kHfMaxDefaultSeqLen);
  CHECK(io::load_model(kDir + "qwen2-0.5b.json").tied_embeddings);
}

TEST_CASE("a JSON document without the .json extension is detected; YAML stays YAML") {
  const auto dir = std::filesystem::temp_directory_path() / "planner_hf_detect";
  std::filesystem::create_directories(dir / "Llama-tiny");
  std::ofstream(dir / "model.cfg") << kLlama;
  std::ofstream(dir / "Llama-tiny" / "config.json") << kLlama;
  std::ofstream(dir / "flow.yaml")
      << "{name: m, layers: 2, hidden: 64, heads: 4, ffn: 256, swiglu: false, "
         "vocab: 100, seq_len: 32}\n";
  CHECK(io::is_hf_config(kLlama, (dir / "model.cfg").string()));
  CHECK(io::load_model((dir / "model.cfg").string()).name == "model");
  CHECK(io::load_model((dir / "Llama-tiny" / "config.json").string()).name == "Llama-tiny");
  CHECK(!io::is_hf_config(io::read_file((dir / "flow.yaml").string()), "flow.yaml"));
  CHECK(io::load_model((dir / "flow.yaml").string()).layers == 2);
  CHECK(!io::is_hf_config(io::read_file(PLANNER_SOURCE_DIR "/configs/models/llama2-7b.yaml"),
                          "llama2-7b.yaml"));
  std::filesystem::remove_all(dir);
}

TEST_CASE("bad configs name file, line and key") {
  CHECK(hf_error(replace(kLlama, "LlamaForCausalLM", "FalconForCausalLM")) ==
        "config.json:2: key 'architectures': unknown architecture 'FalconForCausalLM' (known: "
        "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, GPT2LMHeadModel, "
        "GPTNeoXForCausalLM)");
  CHECK(hf_error(replace(kLlama, "  \"num_hidden_layers\": 2,\n", "")) ==
        "config.json: key 'num_hidden_layers': missing required key (or 'n_layer')");
  CHECK(hf_error(replace(kLlama, "  \"intermediate_size\": 688,\n", "")) ==
        "config.json: key 'intermediate_size': missing required key");
  CHECK(hf_error(replace(kLlama, "\"hidden_size\": 256", "\"hidden_size\": \"256\"")) ==
        "config.json:3: key 'hidden_size': expected an integer, got \"256\"");
  CHECK(hf_error(replace(kLlama, "\"hidden_size\": 256", "\"hidden_size\": 256.5")) ==
        "config.json:3: key 'hidden_size': expected an integer, got 256.5");
  CHECK(hf_error(replace(kLlama, "\"vocab_size\": 1000", "\"vocab_size\": 0")) ==
        "config.json:8: key 'vocab_size': must be a positive integer, got 0");
  CHECK(hf_error(replace(kLlama, "\"num_attention_heads\": 8", "\"num_attention_heads\": 7")) ==
        "config.json:6: key 'num_attention_heads': hidden 256 is not divisible by heads 7");
  CHECK(hf_error(replace(kLlama, "\"vocab_size\": 1000",
                         "\"vocab_size\": 1000, \"num_key_value_heads\": 3")) ==
        "config.json:8: key 'num_key_value_heads': heads 8 is not divisible by kv_heads 3");
  CHECK(hf_error(replace(kLlama, "\"vocab_size\": 1000",
                         "\"vocab_size\": 1000, \"tie_word_embeddings\": 1")) ==
        "config.json:8: key 'tie_word_embeddings': expected true or false, got 1");
  CHECK(hf_error(replace(kLlama, "[\"LlamaForCausalLM\"]", "\"LlamaForCausalLM\"")) ==
        "config.json:2: key 'architectures': expected a list of architecture names, got "
        "\"LlamaForCausalLM\"");
  CHECK(hf_error(replace(kLlama, "\"architectures\": [\"LlamaForCausalLM\"],", "")) ==
        "config.json: key 'architectures': missing required key (known: LlamaForCausalLM, "
        "MistralForCausalLM, Qwen2ForCausalLM, GPT2LMHeadModel, GPTNeoXForCausalLM)");
  CHECK(hf_error(replace(kLlama, "\"architectures\": [\"LlamaForCausalLM\"],",
                         "\"model_type\": \"mistral\",")) == "no error");
  CHECK(hf_error(replace(kLlama, "\"num_hidden_layers\": 2,", "\"num_hidden_layers\": 2"))
            .rfind("config.json:8: invalid JSON: syntax error while parsing object", 0) == 0);
  CHECK(hf_error("[1, 2]") == "config.json:1: expected a JSON object (a Hugging Face config.json)");
  CHECK_THROWS_WITH_AS(io::load_model("/no/such/config.json"),
                       "/no/such/config.json: cannot open file: No such file or directory",
                       InputError);
}
