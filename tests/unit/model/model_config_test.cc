// Presets, closed-form parameter counts against published numbers, and
// Hugging Face config.json import.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "model/model_config.h"
#include "../test_jobs.h"

using namespace sc;
using sc::testing::preset;

namespace {


// Megatron-LM (arXiv 2104.04473) eq.: P = 12 L h^2 (1 + 13/(12h) + (V+s)/(12Lh)),
// i.e. 12Lh^2 + 13Lh + (V+s)h, exactly, in integers.
int64_t megatron_parameters(int64_t L, int64_t h, int64_t V, int64_t s) {
  return 12 * L * h * h + 13 * L * h + (V + s) * h;
}

}  // namespace

TEST_CASE("preset names are the published set, sorted") {
  std::vector<std::string> names = preset_names();
  CHECK(names.size() == 23);  // 11 GPT, 6 Llama, 2 Mixtral, DeepSeek-V3, Nemotron-H-8B, Jamba-v0.1 and its Mamba-2 variant
  CHECK(std::is_sorted(names.begin(), names.end()));
  for (const std::string& n : names) CHECK(validate_model(preset(n)).ok());
}

TEST_CASE("unknown preset lists the known names") {
  Result<ModelConfig> m = model_preset("gpt3-2b");
  REQUIRE(!m.ok());
  CHECK(m.error().code == ErrorCode::kInvalidArgument);
  CHECK(m.error().path == "model.preset");
  CHECK(m.error().message.find("\"gpt3-2b\"") != std::string::npos);
  CHECK(m.error().message.find("llama3-8b") != std::string::npos);
}

TEST_CASE("GPT presets: Megatron formula + final LayerNorm, Table 1 billions") {
  struct Row { const char* name; int64_t h, a, L; double billions; };
  const Row rows[] = {
      {"gpt3-1.7b", 2304, 24, 24, 1.7},    {"gpt3-3.6b", 3072, 32, 30, 3.6},
      {"gpt3-7.5b", 4096, 32, 36, 7.5},    {"gpt3-18b", 6144, 48, 40, 18.4},
      {"gpt3-39b", 8192, 64, 48, 39.1},    {"gpt3-76b", 10240, 80, 60, 76.1},
      {"gpt3-145b", 12288, 96, 80, 145.6}, {"gpt3-310b", 16384, 128, 96, 310.1},
      {"gpt3-530b", 20480, 128, 105, 529.6}, {"gpt3-1t", 25600, 160, 128, 1008.0},
      {"gpt3-175b", 12288, 96, 96, 174.6},
  };
  for (const Row& r : rows) {
    CAPTURE(r.name);
    ModelConfig m = preset(r.name);
    CHECK(m.hidden == r.h);
    CHECK(m.num_heads == r.a);
    CHECK(m.num_layers == r.L);
    CHECK(m.head_dim * m.num_heads == m.hidden);
    CHECK(m.ffn_hidden == 4 * m.hidden);
    CHECK(m.vocab == 51200);
    CHECK(m.max_positions == 2048);
    CHECK(m.tied_embeddings);
    int64_t p = closed_form_parameters(m);
    CHECK(p == megatron_parameters(r.L, r.h, 51200, 2048) + 2 * r.h);
    double billions = std::round(double(p) / 1e8) / 10;  // one decimal
    CHECK(billions == doctest::Approx(r.billions));
  }
}

TEST_CASE("Llama presets match the published HF parameter counts") {
  CHECK(closed_form_parameters(preset("llama2-7b")) == 6738415616);
  CHECK(closed_form_parameters(preset("llama2-13b")) == 13015864320);
  CHECK(closed_form_parameters(preset("llama2-70b")) == 68976648192);
  CHECK(closed_form_parameters(preset("llama3-8b")) == 8030261248);
  CHECK(closed_form_parameters(preset("llama3-70b")) == 70553706496);
  CHECK(closed_form_parameters(preset("llama3-405b")) == 405853388800);
  ModelConfig m = preset("llama2-70b");
  CHECK(m.num_kv_heads == 8);
  CHECK(m.head_dim == 128);
  CHECK(m.norm == NormKind::kRMSNorm);
  CHECK(m.mlp == MlpKind::kSwiGLU);
  CHECK(m.position == PositionKind::kRope);
  CHECK(!m.tied_embeddings);
  CHECK(!m.linear_bias);
  CHECK(!m.dropout);
}

TEST_CASE("validate_model names the field") {
  ModelConfig m = preset("llama3-8b");
  m.num_kv_heads = 6;
  Status s = validate_model(m);
  REQUIRE(!s.ok());
  CHECK(s.error().code == ErrorCode::kNotDivisible);
  CHECK(s.error().path == "model.num_kv_heads");
  CHECK(s.error().message == "num_heads (32) is not divisible by num_kv_heads (6)");

  m = preset("llama3-8b");
  m.num_layers = 0;
  s = validate_model(m);
  REQUIRE(!s.ok());
  CHECK(s.error().path == "model.num_layers");
  CHECK(s.error().message == "must be >= 1 (got 0)");

  m = preset("gpt3-1t");
  m.hidden = 1048576;
  m.num_layers = 10000;
  s = validate_model(m);
  REQUIRE(!s.ok());
  CHECK(s.error().message.find("parameter count") != std::string::npos);
}

TEST_CASE("HF import: Llama-2-7B config.json") {
  const char* text = R"({
  "_name_or_path": "meta-llama/Llama-2-7b-hf",
  "architectures": ["LlamaForCausalLM"],
  "bos_token_id": 1,
  "eos_token_id": 2,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 11008,
  "max_position_embeddings": 4096,
  "model_type": "llama",
  "num_attention_heads": 32,
  "num_hidden_layers": 32,
  "num_key_value_heads": 32,
  "pretraining_tp": 1,
  "rms_norm_eps": 1e-05,
  "rope_scaling": null,
  "tie_word_embeddings": false,
  "torch_dtype": "float16",
  "transformers_version": "4.31.0.dev0",
  "use_cache": true,
  "vocab_size": 32000
})";
  Result<ModelConfig> m = model_from_hf_config(text);
  REQUIRE(m.ok());
  CHECK(m->name == "hf:llama");
  CHECK(m->norm == NormKind::kRMSNorm);
  CHECK(m->mlp == MlpKind::kSwiGLU);
  CHECK(m->position == PositionKind::kRope);
  CHECK(m->max_positions == 4096);
  CHECK(closed_form_parameters(*m) == closed_form_parameters(preset("llama2-7b")));
  CHECK(closed_form_parameters(*m) == 6738415616);
}

TEST_CASE("HF import: GQA default, head_dim, tied, mistral") {
  Result<ModelConfig> m = model_from_hf_config(
      R"({"model_type":"mistral","hidden_size":4096,"num_hidden_layers":32,
          "num_attention_heads":32,"num_key_value_heads":8,"intermediate_size":14336,
          "vocab_size":32000,"head_dim":null,"rms_norm_eps":1e-5,"sliding_window":null})");
  REQUIRE(m.ok());
  CHECK(m->name == "hf:mistral");
  CHECK(m->num_kv_heads == 8);
  CHECK(m->head_dim == 128);
  CHECK(!m->tied_embeddings);
  CHECK(closed_form_parameters(*m) == 7241732096);  // Mistral-7B-v0.1

  m = model_from_hf_config(
      R"({"hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,
          "intermediate_size":128,"vocab_size":100,"tie_word_embeddings":true})");
  REQUIRE(m.ok());
  CHECK(m->num_kv_heads == 4);
  CHECK(m->tied_embeddings);
}

TEST_CASE("HF import: GPT-2 small has 124,439,808 parameters") {
  const char* text = R"({
  "activation_function": "gelu_new", "architectures": ["GPT2LMHeadModel"],
  "attn_pdrop": 0.1, "bos_token_id": 50256, "embd_pdrop": 0.1, "eos_token_id": 50256,
  "initializer_range": 0.02, "layer_norm_epsilon": 1e-05, "model_type": "gpt2",
  "n_ctx": 1024, "n_embd": 768, "n_head": 12, "n_layer": 12, "n_positions": 1024,
  "resid_pdrop": 0.1, "summary_type": "cls_index", "task_specific_params": {
    "text-generation": {"do_sample": true, "max_length": 50}}, "vocab_size": 50257
})";
  Result<ModelConfig> m = model_from_hf_config(text);
  REQUIRE(m.ok());
  CHECK(m->name == "hf:gpt2");
  CHECK(m->ffn_hidden == 3072);
  CHECK(m->norm == NormKind::kLayerNorm);
  CHECK(m->mlp == MlpKind::kGelu);
  CHECK(m->position == PositionKind::kLearned);
  CHECK(m->tied_embeddings);
  CHECK(m->linear_bias);
  CHECK(m->dropout);
  CHECK(closed_form_parameters(*m) == 124439808);
}

TEST_CASE("HF import errors name the key") {
  Result<ModelConfig> m = model_from_hf_config(
      R"({"num_hidden_layers":2,"num_attention_heads":4,"intermediate_size":128,"vocab_size":100})");
  REQUIRE(!m.ok());
  CHECK(m.error().path == "model.hf_config.hidden_size");
  CHECK(m.error().message.find("missing") != std::string::npos);

  m = model_from_hf_config(R"({"hidden_size":"4096"})");
  REQUIRE(!m.ok());
  CHECK(m.error().path == "model.hf_config.hidden_size");
  CHECK(m.error().message.find("must be an integer") != std::string::npos);

  m = model_from_hf_config("{\n  \"hidden_size\": 4096,\n  oops\n}");
  REQUIRE(!m.ok());
  CHECK(m.error().code == ErrorCode::kParseError);
  CHECK(m.error().path == "model.hf_config");
  CHECK(m.error().message.rfind("line 3, column 3:", 0) == 0);

  m = model_from_hf_config(
      R"({"hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"intermediate_size":128,
          "vocab_size":100,"num_local_experts":8})");
  REQUIRE(!m.ok());
  CHECK(m.error().code == ErrorCode::kUnsupported);

  m = model_from_hf_config(
      R"({"hidden_size":64,"num_hidden_layers":2,"num_attention_heads":4,"intermediate_size":128,
          "vocab_size":100,"hidden_act":"gelu"})");
  REQUIRE(!m.ok());
  CHECK(m.error().path == "model.hf_config.hidden_act");
}
