// Hugging Face config.json as --model: the mapping, the published parameter counts, the errors.
#include <doctest/doctest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "planner/error.h"
#include "planner/estimate.h"
#include "planner/io/cluster_io.h"
#include "planner/io/file.h"
#include "planner/io/hf_config.h"
#include "planner/io/model_io.h"
#include "planner/plan.h"

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

/// kLlama with `keys` ("\"k\": v, ...") added after vocab_size, on its line 8.
std::string llama_with(const std::string& keys) {
  return replace(kLlama, "\"vocab_size\": 1000", "\"vocab_size\": 1000, " + keys);
}

}  // namespace

TEST_CASE("model_params matches the published parameter counts within 0.5%") {
  // Published: transformers' model.num_parameters() for each checkpoint, or the model card's
  // rounded figure. The planner counts weights, norms (LayerNorm scale and bias), the biases the
  // architecture has, and GPT-2's learned position embedding; tests/data/hf/README.md itemises
  // each. By hand, Llama 2 7B: 32 x (4 x 4096^2 + 3 x 4096 x 11008 + 2 x 4096) + 2 x 32000 x 4096
  // + 4096 = 6,738,415,616; Mistral-NeMo 12B (head_dim 128, so Q and the output are 4096 wide,
  // not 5120): 40 x (5120 x (4096 + 2 x 1024) + 4096 x 5120 + 3 x 5120 x 14336 + 2 x 5120)
  // + 2 x 131072 x 5120 + 5120 = 12,247,782,400; Gemma 2 9B (head_dim 256, four norms a layer,
  // tied): 42 x (3584 x (4096 + 2 x 2048) + 4096 x 3584 + 3 x 3584 x 14336 + 4 x 3584)
  // + 256000 x 3584 + 3584 = 9,241,705,984; Qwen3 4B (head_dim 128 where hidden / heads is 80,
  // q_norm and k_norm of 128, tied): 36 x (2560 x (4096 + 2 x 1024) + 4096 x 2560
  // + 3 x 2560 x 9728 + 2 x 2560 + 2 x 128) + 151936 x 2560 + 2560 = 4,022,468,096.
  struct Case {
    const char* file;
    double published;
    double exact;
  };
  const Case cases[] = {
      {"llama-2-7b.json", 6738415616, 6738415616},
      {"llama-3-8b.json", 8030261248, 8030261248},
      {"mistral-7b-v0.1.json", 7241732096, 7241732096},
      {"qwen2-7b.json", 7615616512, 7615616512},        // QKV biases 28 x 4,608 included
      {"qwen2-0.5b.json", 494032768, 494032768},        // QKV biases 24 x 1,152; tied
      {"gpt2.json", 124439808, 124439808},              // wpe 1024 x 768, biases 102,144
      {"gpt2-xl.json", 1557611200, 1557611200},         // wpe 1024 x 1600, biases 846,400
      {"gpt-neox-20b.json", 20554567680, 20554567680},  // biases 2,979,840
      {"pythia-160m.json", 162322944, 162322944},       // biases 102,144
      {"mistral-nemo-base-2407.json", 12.25e9, 12247782400},
      {"qwen2.5-7b.json", 7.62e9, 7615616512},  // Qwen2 7B's shape: the same count
      {"gemma-2-9b.json", 9.24e9, 9241705984},
      {"qwen3-4b.json", 4.02e9, 4022468096},
  };
  for (const Case& c : cases) {
    CAPTURE(c.file);
    const ModelSpec m = io::load_model(kDir + c.file);
    CHECK(m.total_params() == c.exact);
    CHECK(std::abs(m.total_params() / c.published - 1) < 0.005);
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
  CHECK(gpt2.learned_positions == 1024);
  CHECK(gpt2.arch.qkv_bias);
  CHECK(gpt2.arch.mlp_bias);
  CHECK(gpt2.arch.norm_bias);
  CHECK(neox.arch.proj_bias);          // attention_bias: true when absent
  CHECK(neox.learned_positions == 0);  // rotary
  CHECK(!llama.arch.qkv_bias);
  CHECK(!llama.arch.norm_bias);
  CHECK(llama.arch.sliding_window == 0);
}

TEST_CASE("head_dim, biases, norms and sliding windows are read as each architecture has them") {
  // Mistral-NeMo: head_dim 128 where hidden / heads = 160; sliding_window null.
  const ModelSpec nemo = io::load_model(kDir + "mistral-nemo-base-2407.json");
  CHECK(nemo.head_dim() == 128);
  CHECK(nemo.hidden / nemo.heads == 160);
  CHECK(nemo.arch.sliding_window == 0);
  CHECK(!nemo.tied_embeddings);
  // Mistral 7B v0.1: every layer slides over 4,096 keys.
  const ModelSpec mistral = io::load_model(kDir + "mistral-7b-v0.1.json");
  CHECK(mistral.arch.sliding_window == 4096);
  CHECK(mistral.arch.local_layers == 1.0);
  // Qwen2.5: Q, K and V biases, none on the output projection or the MLP; use_sliding_window
  // false, so its sliding_window (131,072) does not apply.
  const ModelSpec qwen = io::load_model(kDir + "qwen2.5-7b.json");
  CHECK(qwen.arch.qkv_bias);
  CHECK(!qwen.arch.proj_bias);
  CHECK(!qwen.arch.mlp_bias);
  CHECK(qwen.arch.sliding_window == 0);
  // 3584 x (3584 + 2 x 512) + 3584^2 + 3 x 3584 x 18944 + 2 x 3584, plus the biases 3584 + 2 x 512
  CHECK(qwen.layer_params() == 3584.0 * (3584 + 2 * 512) + 3584.0 * 3584 + 3.0 * 3584 * 18944 +
                                   2 * 3584 + (3584 + 2 * 512));
  // Gemma 2: head_dim 256, layers 0, 2, ... 40 local (21 of 42), four norms a layer, tied.
  const ModelSpec gemma = io::load_model(kDir + "gemma-2-9b.json");
  CHECK(gemma.head_dim() == 256);
  CHECK(gemma.arch.sliding_window == 4096);
  CHECK(gemma.arch.local_layers == 0.5);
  CHECK(gemma.arch.sandwich_norms);
  CHECK(gemma.swiglu);  // GeGLU: gated like SwiGLU
  CHECK(gemma.arch.gelu_gate);
  CHECK(!qwen.arch.gelu_gate);   // silu
  CHECK(gemma.tied_embeddings);  // Gemma2Config's default
  // Qwen3: per-head query and key norms, no QKV bias, head_dim 128 (hidden / heads = 80).
  const ModelSpec qwen3 = io::load_model(kDir + "qwen3-4b.json");
  CHECK(qwen3.arch.qk_norm);
  CHECK(!qwen3.arch.qkv_bias);
  CHECK(qwen3.head_dim() == 128);
  CHECK(qwen3.hidden / qwen3.heads == 80);
  // The keys each architecture reads: Llama's attention_bias and mlp_bias; Gemma 2's and Qwen3's
  // head_dim defaults (256, 128) when absent; Qwen2's window only above max_window_layers.
  const ModelSpec biased = io::parse_hf_config(
      llama_with("\"attention_bias\": true, \"mlp_bias\": true"), "config.json");
  CHECK(biased.arch.qkv_bias);
  CHECK(biased.arch.proj_bias);
  CHECK(biased.arch.mlp_bias);
  // 2 x (4 x 256^2 + 3 x 256 x 688 + 2 x 256 + biases 3 x 256 + 256 + 2 x 688 + 256)
  // + 2 x 1000 x 256 + 256
  CHECK(biased.total_params() ==
        2.0 * (4 * 256 * 256 + 3 * 256 * 688 + 2 * 256 + 3 * 256 + 256 + 2 * 688 + 256) +
            2.0 * 1000 * 256 + 256);
  const std::string gemma_tiny = replace(kLlama, "LlamaForCausalLM", "Gemma2ForCausalLM");
  CHECK(io::parse_hf_config(gemma_tiny, "config.json").head_dim() == 256);
  const std::string qwen2_window =
      replace(replace(kLlama, "LlamaForCausalLM", "Qwen2ForCausalLM"), "\"vocab_size\": 1000",
              "\"vocab_size\": 1000, \"use_sliding_window\": true, \"sliding_window\": 512, "
              "\"max_window_layers\": 1");
  const ModelSpec q2 = io::parse_hf_config(qwen2_window, "config.json");
  CHECK(q2.arch.sliding_window == 512);
  CHECK(q2.arch.local_layers == 0.5);  // layer 1 of layers 0 and 1
  // A Llama config's sliding_window is not read: LlamaAttention has none.
  CHECK(io::parse_hf_config(llama_with("\"sliding_window\": 512"), "config.json")
            .arch.sliding_window == 0);
}

TEST_CASE("mixture-of-experts and latent-attention configs are read for planning") {
  CHECK(io::load_model(kDir + "mixtral-8x7b-v0.1.json").moe.experts == 8);
  // Relabelled as a dense Mistral: still its 8 experts, not a 7.24B dense model.
  const std::string mixtral = io::read_file(kDir + "mixtral-8x7b-v0.1.json");
  const std::string dense_name =
      " key 'num_local_experts': a mixture-of-experts model (8 experts) under a dense "
      "architecture's name; experts are read from MixtralForCausalLM, Qwen3MoeForCausalLM, "
      "GptOssForCausalLM, DeepseekV3ForCausalLM and Llama4ForConditionalGeneration configs";
  CHECK(hf_error(replace(mixtral, "MixtralForCausalLM", "MistralForCausalLM")) ==
        "config.json:18:" + dense_name);
  CHECK(io::parse_hf_config(mixtral, "config.json").moe.experts == 8);
  CHECK(io::load_model(kDir + "deepseek-v3.json").mla.kv_lora_rank == 512);
  // Llama 4 keeps its sizes under text_config; a dense architecture with experts there is
  // refused as well.
  CHECK(hf_error("{\"architectures\": [\"Llama4ForConditionalGeneration\"],\n"
                 " \"text_config\": {\"num_local_experts\": 16}}") ==
        "config.json: key 'num_hidden_layers': missing required key (or 'n_layer')");
  CHECK(hf_error("{\"architectures\": [\"LlamaForCausalLM\"],\n"
                 " \"text_config\": {\"num_local_experts\": 16}}") ==
        "config.json:2: key 'text_config.num_local_experts': a mixture-of-experts model (16 "
        "experts) under a dense architecture's name; experts are read from MixtralForCausalLM, "
        "Qwen3MoeForCausalLM, GptOssForCausalLM, DeepseekV3ForCausalLM and "
        "Llama4ForConditionalGeneration configs");
  // One expert is a dense MLP.
  CHECK(hf_error(llama_with("\"num_local_experts\": 1")) == "no error");
}

TEST_CASE("a JSON document without the .json extension is detected; YAML stays YAML") {
  const auto dir =
      std::filesystem::temp_directory_path() / ("planner_hf_detect_" + std::to_string(::getpid()));
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

TEST_CASE("a config as Python's json writes it: NaN and Infinity values read as objects") {
  // transformers writes configs with Python's json module, which spells non-finite floats as bare
  // words (Nemotron-3-Super-120B-A12B-FP8's "time_step_limit": [0.0, Infinity]).
  CHECK(hf_error(llama_with("\"time_step_limit\": [0.0, Infinity], \"a\": -Infinity, "
                            "\"b\": NaN, \"c\": \"NaN, Infinity\", \"d\": [NaN,\n-Infinity], "
                            "\"e\": {\"f\": NaN}, \"g\": \"a\\\\\", \"h\": [[NaN],NaN]")) ==
        "no error");
  // A key the planner reads is refused as of the wrong type, on the key's line, whatever the
  // type it wants.
  CHECK(hf_error(replace(kLlama, "\"vocab_size\": 1000", "\"vocab_size\": Infinity")) ==
        "config.json:8: key 'vocab_size': expected an integer, got {\"non-finite\":\"Infinity\"}");
  CHECK(hf_error(llama_with("\"hidden_act\": NaN")) ==
        "config.json:8: key 'hidden_act': expected a string, got {\"non-finite\":\"NaN\"}");
  CHECK(hf_error(replace(kLlama, "[\"LlamaForCausalLM\"]", "[NaN]"))
            .find("expected a list of architecture names") != std::string::npos);
  // An object's readers refuse it too, rather than read it as an object without keys.
  CHECK(hf_error(llama_with("\"rope_scaling\": NaN")) ==
        "config.json:8: key 'rope_scaling': expected an object, got {\"non-finite\":\"NaN\"}");
  CHECK(hf_error("{\"architectures\": [\"Llama4ForConditionalGeneration\"], \"text_config\": "
                 "Infinity}")
            .find("needs its language model's text_config object") != std::string::npos);
  // Only values: a key, the whole document, or a word that merely starts like one stays invalid.
  for (const std::string bad :
       {llama_with("NaN: 1"), llama_with("Infinity: 3, -Infinity: 4"), std::string("NaN"),
        llama_with("\"a\": Infinityx"), llama_with("\"a\": NaN1"), llama_with("\"a\": NaN.5"),
        llama_with("\"a\": - Infinity")}) {
    CAPTURE(bad);
    CHECK(hf_error(bad).find("invalid JSON") != std::string::npos);
  }
}

TEST_CASE("gpt-oss's layer_types: the share of sliding layers, and their pattern when it repeats") {
  const std::string text = io::read_file(kDir + "gpt-oss-20b/config.json");
  const ModelSpec alternate = io::parse_hf_config(text, "config.json");
  CHECK(alternate.arch.sliding_window == 128);
  CHECK(alternate.arch.local_layers == doctest::Approx(0.5));
  CHECK(alternate.arch.global_every == 2);  // sliding, full, sliding, full ...
  // The first two layers sliding: the same share is not a pattern of one global layer in N.
  std::string shifted = text;
  const std::string first = "\"sliding_attention\",\n    \"full_attention\"";
  const size_t at = shifted.find(first);
  REQUIRE(at != std::string::npos);
  shifted.replace(at, first.size(), "\"sliding_attention\",\n    \"sliding_attention\"");
  const size_t full = shifted.find("\"sliding_attention\"", at + 40);
  REQUIRE(full != std::string::npos);
  shifted.replace(full, 19, "\"full_attention\"");
  const ModelSpec irregular = io::parse_hf_config(shifted, "config.json");
  CHECK(irregular.arch.local_layers == doctest::Approx(0.5));
  CHECK(irregular.arch.global_every == 0);
  // The largest model the limits allow, every layer sliding but the last two: one pass over the
  // list (a search over every N took minutes here), and no pattern.
  std::string big = replace(text, "\"num_hidden_layers\": 24", "\"num_hidden_layers\": 100000");
  const size_t from = big.find("\"layer_types\": [") + 15, to = big.find(']', from);
  std::string list = "[";
  for (int i = 0; i < 99998; ++i) list += "\"sliding_attention\",";
  big.replace(from, to + 1 - from, list + "\"full_attention\",\"full_attention\"]");
  const ModelSpec last = io::parse_hf_config(big, "config.json");
  CHECK(last.layers == 100000);
  CHECK(last.arch.global_every == 0);
  CHECK(last.arch.local_layers == doctest::Approx(0.99998));
}

TEST_CASE("an architecture recognised but not modelled says what is missing") {
  CHECK(hf_error(replace(kLlama, "LlamaForCausalLM", "NemotronHForCausalLM"))
            .rfind("config.json:2: key 'architectures': architecture 'NemotronHForCausalLM' is not "
                   "supported: its Mamba-2 state-space layers (the 'M' of "
                   "hybrid_override_pattern) are not modelled; the planner costs attention, MLP "
                   "and expert layers only (supported: LlamaForCausalLM, ",
                   0) == 0);
  CHECK(hf_error(replace(kLlama, "LlamaForCausalLM", "DeepseekV4ForCausalLM"))
            .find("hyper-connections (hc_mult) are not modelled") != std::string::npos);
}

TEST_CASE("bad configs name file, line and key") {
  CHECK(hf_error(replace(kLlama, "LlamaForCausalLM", "FalconForCausalLM")) ==
        "config.json:2: key 'architectures': unknown architecture 'FalconForCausalLM' (known: "
        "LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, "
        "Gemma2ForCausalLM, GPT2LMHeadModel, GPTNeoXForCausalLM, MixtralForCausalLM, "
        "Qwen3MoeForCausalLM, GptOssForCausalLM, DeepseekV3ForCausalLM, Llama4ForCausalLM, "
        "Llama4ForConditionalGeneration)");
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
        "config.json:6: key 'num_attention_heads': hidden 256 is not divisible by heads 7 "
        "(give head_dim where heads x head_dim differs)");
  // With head_dim, heads need not divide hidden (Qwen3 4B: 32 heads of 128 on hidden 2560).
  CHECK(hf_error(replace(kLlama, "\"num_attention_heads\": 8",
                         "\"num_attention_heads\": 7, \"head_dim\": 64")) == "no error");
  CHECK(hf_error(replace(kLlama, "\"num_attention_heads\": 8",
                         "\"num_attention_heads\": 8, \"head_dim\": 0")) ==
        "config.json:6: key 'head_dim': must be a positive integer, got 0");
  CHECK(hf_error(llama_with("\"attention_bias\": \"no\"")) ==
        "config.json:8: key 'attention_bias': expected true or false, got \"no\"");
  CHECK(hf_error(llama_with("\"num_key_value_heads\": 3")) ==
        "config.json:8: key 'num_key_value_heads': heads 8 is not divisible by kv_heads 3");
  CHECK(hf_error(llama_with("\"tie_word_embeddings\": 1")) ==
        "config.json:8: key 'tie_word_embeddings': expected true or false, got 1");
  CHECK(hf_error(replace(kLlama, "[\"LlamaForCausalLM\"]", "\"LlamaForCausalLM\"")) ==
        "config.json:2: key 'architectures': expected a list of architecture names, got "
        "\"LlamaForCausalLM\"");
  CHECK(hf_error(replace(kLlama, "\"architectures\": [\"LlamaForCausalLM\"],", "")) ==
        "config.json: key 'architectures': missing required key (known: LlamaForCausalLM, "
        "MistralForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Gemma2ForCausalLM, "
        "GPT2LMHeadModel, GPTNeoXForCausalLM, MixtralForCausalLM, Qwen3MoeForCausalLM, "
        "GptOssForCausalLM, DeepseekV3ForCausalLM, Llama4ForCausalLM, "
        "Llama4ForConditionalGeneration)");
  CHECK(hf_error(replace(kLlama, "\"architectures\": [\"LlamaForCausalLM\"],",
                         "\"model_type\": \"mistral\",")) == "no error");
  CHECK(hf_error(replace(kLlama, "\"num_hidden_layers\": 2,", "\"num_hidden_layers\": 2"))
            .rfind("config.json:8: invalid JSON: syntax error while parsing object", 0) == 0);
  CHECK(hf_error("[1, 2]") == "config.json:1: expected a JSON object (a Hugging Face config.json)");
  // gpt-oss's clamp: a number from 0 (none).
  std::ifstream oss_file(PLANNER_SOURCE_DIR "/tests/data/hf/gpt-oss-120b/config.json");
  const std::string oss((std::istreambuf_iterator<char>(oss_file)), {});
  REQUIRE(oss.find("\"swiglu_limit\": 7.0") != std::string::npos);
  CHECK(hf_error(replace(oss, "\"swiglu_limit\": 7.0", "\"swiglu_limit\": -1")) ==
        "config.json:83: key 'swiglu_limit': must be a number from 0 (no clamp)");
  CHECK(hf_error(replace(oss, "\"swiglu_limit\": 7.0", "\"swiglu_limit\": \"7\"")) ==
        "config.json:83: key 'swiglu_limit': expected a number, got \"7\"");
  // YaRN's attention factor (rope_scaling): 0.1 ln(32) + 1 for gpt-oss; a bad value names the key.
  CHECK(io::parse_hf_config(oss, "config.json").arch.rope_mscale ==
        doctest::Approx(0.1 * std::log(32.0) + 1));
  const YarnSpec y = io::parse_hf_config(oss, "config.json").yarn;
  CHECK((y.factor == 32 && y.original_positions == 4096 && y.beta_fast == 32 && y.beta_slow == 1 &&
         !y.round_to_int && !y.mscale && !y.mscale_all_dim));
  CHECK(hf_error(replace(oss, "\"truncate\": false", "\"truncate\": 0")) ==
        "config.json:72: key 'rope_scaling': truncate: expected true or false, got 0");
  CHECK(
      hf_error(replace(oss, "\"factor\": 32.0", "\"factor\": \"32\"")) ==
      "config.json:72: key 'rope_scaling': factor: expected a number from 0 to 1e+06, got \"32\"");
  CHECK(hf_error(replace(oss, "\"factor\": 32.0", "\"factor\": 1e300"))
            .rfind("config.json:72: key 'rope_scaling': factor: expected a number", 0) == 0);
  CHECK(hf_error(replace(oss, "\"rope_type\": \"yarn\"", "\"rope_type\": 5")) ==
        "config.json:72: key 'rope_scaling': rope_type: expected a string, got 5");
  CHECK(hf_error(replace(oss,
                         "\"rope_scaling\": {\n    \"beta_fast\": 32.0,\n    \"beta_slow\": 1.0,\n"
                         "    \"factor\": 32.0,\n    \"original_max_position_embeddings\": 4096,\n"
                         "    \"rope_type\": \"yarn\",\n    \"truncate\": false\n  }",
                         "\"rope_scaling\": [1]")) ==
        "config.json:72: key 'rope_scaling': expected an object, got [1]");
  // Another scaling (Llama 3's) or none leaves it 1; so does DeepSeek-V3's mscale = mscale_all_dim.
  CHECK(hf_error(replace(oss, "\"rope_type\": \"yarn\"", "\"rope_type\": \"llama3\"")) ==
        "no error");
  CHECK(io::parse_hf_config(replace(oss, "\"rope_type\": \"yarn\"", "\"rope_type\": \"llama3\""),
                            "config.json")
            .arch.rope_mscale == 1);
  CHECK(io::load_model(PLANNER_SOURCE_DIR "/tests/data/hf/DeepSeek-V3/config.json")
            .arch.rope_mscale == 1);
  CHECK(io::load_model(PLANNER_SOURCE_DIR "/tests/data/hf/Qwen3-30B-A3B/config.json")
            .arch.rope_mscale == 1);
  CHECK_THROWS_WITH_AS(io::load_model("/no/such/config.json"),
                       "/no/such/config.json: cannot open file: No such file or directory",
                       InputError);
}

TEST_CASE("head_dim, biases and the window reach the estimate") {
  const ClusterProfile c = io::load_cluster(PLANNER_SOURCE_DIR "/hw_profiles/dgx-h100-80gb.yaml");
  const Plan p = parse_plan("tp=8,pp=1,dp=1,mbs=1,gbs=8,zero=0,recompute=none,sp=1", "--plan");
  // Mistral-NeMo as read (heads of 128, 4,096 wide) against the same sizes read without head_dim
  // (heads of 160, 5,120 wide, the 12.77B model the planner used to plan).
  const ModelSpec nemo = io::load_model(kDir + "mistral-nemo-base-2407.json");
  ModelSpec wide = nemo;
  wide.arch.head_dim = 0;
  CHECK(wide.total_params() == doctest::Approx(12.77e9).epsilon(0.001));
  const Estimate narrow_e = estimate(nemo, c, p), wide_e = estimate(wide, c, p);
  REQUIRE((narrow_e.ok() && wide_e.ok()));
  CHECK(narrow_e.iteration_time_s < wide_e.iteration_time_s);
  CHECK(narrow_e.memory_bytes < wide_e.memory_bytes);
  CHECK(narrow_e.layer_compute.fwd_flops < wide_e.layer_compute.fwd_flops);
  // Qwen2.5's QKV biases: more parameters and FLOPs than without them.
  const ModelSpec qwen = io::load_model(kDir + "qwen2.5-7b.json");
  ModelSpec unbiased = qwen;
  unbiased.arch.qkv_bias = false;
  const Plan q = parse_plan("tp=4,pp=1,dp=2,mbs=1,gbs=8,zero=1,recompute=none,sp=1", "--plan");
  const Estimate qe = estimate(qwen, c, q), ue = estimate(unbiased, c, q);
  REQUIRE((qe.ok() && ue.ok()));
  CHECK(qe.memory_bytes > ue.memory_bytes);
  CHECK(qe.layer_compute.fwd_flops > ue.layer_compute.fwd_flops);
  // Gemma 2's window on half its layers: faster than the same model all global.
  const ModelSpec gemma = io::load_model(kDir + "gemma-2-9b.json");
  ModelSpec global = gemma;
  global.arch.sliding_window = 0;
  const Estimate ge = estimate(gemma, c, p), gg = estimate(global, c, p);
  REQUIRE((ge.ok() && gg.ok()));
  CHECK(ge.layer_compute.fwd_attn_s < gg.layer_compute.fwd_attn_s);
  CHECK(ge.iteration_time_s < gg.iteration_time_s);
}
