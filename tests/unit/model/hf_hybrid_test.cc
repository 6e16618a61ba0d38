// Hugging Face readers for the hybrid families (core/model/hf_hybrid.cc):
// the real nemotron_h and jamba configs import as the presets built from
// the same published values, with the counts of the fixtures
// (expected_counts.json); unmodelled keys are refused naming the key, or
// listed as warnings with strict: false; the imported graphs build, replay
// and validate.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "../test_jobs.h"

using namespace sc;
namespace fs = std::filesystem;

namespace {

fs::path hf(const char* file) { return fs::path(STAGECRAFT_SOURCE_DIR) / "tests" / "fixtures" / "hf" / file; }

nlohmann::json fixture(const char* file) { return nlohmann::json::parse(testing::slurp(hf(file))); }

Result<ModelConfig> import(const nlohmann::json& cfg, bool strict = true) {
  return model_from_hf_config(cfg.dump(), "model.hf_config", strict);
}

// Every architecture field the builder reads.
void check_same_architecture(const ModelConfig& a, const ModelConfig& b) {
  CHECK(a.hybrid_pattern == b.hybrid_pattern);
  CHECK(a.num_layers == b.num_layers);
  CHECK(a.hidden == b.hidden);
  CHECK(a.num_heads == b.num_heads);
  CHECK(a.num_kv_heads == b.num_kv_heads);
  CHECK(a.head_dim == b.head_dim);
  CHECK(a.ffn_hidden == b.ffn_hidden);
  CHECK(a.vocab == b.vocab);
  CHECK(a.max_positions == b.max_positions);
  CHECK(a.norm == b.norm);
  CHECK(a.mlp == b.mlp);
  CHECK(a.position == b.position);
  CHECK(a.tied_embeddings == b.tied_embeddings);
  CHECK(a.linear_bias == b.linear_bias);
  CHECK(a.dropout == b.dropout);
  CHECK(a.num_experts == b.num_experts);
  CHECK(a.experts_per_token == b.experts_per_token);
  CHECK(a.moe_ffn_hidden == b.moe_ffn_hidden);
  CHECK(a.mamba_heads == b.mamba_heads);
  CHECK(a.mamba_head_dim == b.mamba_head_dim);
  CHECK(a.mamba_groups == b.mamba_groups);
  CHECK(a.mamba_state == b.mamba_state);
  CHECK(a.mamba_conv_kernel == b.mamba_conv_kernel);
  CHECK(a.mamba1_inner == b.mamba1_inner);
  CHECK(a.mamba1_dt_rank == b.mamba1_dt_rank);
  CHECK(a.mamba1_dt_bc_norms == b.mamba1_dt_bc_norms);
}

}  // namespace

TEST_CASE("HF hybrid: Jamba-v0.1's config.json imports as the jamba-v0.1 preset, exactly 51,570,323,328 / 12,110,311,296") {
  Result<ModelConfig> m = import(fixture("jamba-v0.1.config.json"));
  REQUIRE_MESSAGE(m.ok(), m.error().to_string());
  CHECK(m->hf_family == "jamba");
  CHECK(m->hf_warnings.empty());
  check_same_architecture(*m, testing::preset("jamba-v0.1"));
  CHECK(closed_form_parameters(*m) == 51570323328);
  CHECK(closed_form_active_parameters(*m) == 12110311296);
  bool mamba1 = false;
  for (const std::string& f : m->hf_features) mamba1 |= f.rfind("Mamba-1 mixer (d_inner 8192, dt_rank 256", 0) == 0;
  CHECK(mamba1);
}

TEST_CASE("HF hybrid: Nemotron-H configs import exactly (8B = the nemotron-h-8b preset; 56B = the reference counter)") {
  Result<ModelConfig> m8 = import(fixture("nemotron-h-8b-base-8k.config.json"));
  REQUIRE_MESSAGE(m8.ok(), m8.error().to_string());
  check_same_architecture(*m8, testing::preset("nemotron-h-8b"));
  CHECK(closed_form_parameters(*m8) == 8100852736);
  // The 56B file as published (with its Infinity): 118 blocks, 256 heads of 64, state 256.
  Result<ModelConfig> m56 = model_from_hf_config(testing::slurp(hf("nemotron-h-56b-base-8k.config.json")));
  REQUIRE_MESSAGE(m56.ok(), m56.error().to_string());
  CHECK(m56->num_layers == 118);
  CHECK(m56->mamba_heads == 256);
  CHECK(m56->mamba_state == 256);
  CHECK(closed_form_parameters(*m56) == 56324350464);  // param_count.py
  bool infinity = false;
  for (const std::string& f : m56->hf_features) infinity |= f.find("Infinity/NaN") != std::string::npos;
  CHECK(infinity);
  // transformers v5's spelling: layers_block_type instead of the pattern string.
  nlohmann::json v5 = fixture("nemotron-h-8b-base-8k.config.json");
  nlohmann::json types = nlohmann::json::array();
  for (char c : v5["hybrid_override_pattern"].get<std::string>())
    types.push_back(c == 'M' ? "mamba" : c == '*' ? "attention" : "mlp");
  v5.erase("hybrid_override_pattern");
  v5["layers_block_type"] = types;
  v5["mamba_n_groups"] = v5["n_groups"];
  v5.erase("n_groups");
  Result<ModelConfig> mv5 = import(v5);
  REQUIRE_MESSAGE(mv5.ok(), mv5.error().to_string());
  check_same_architecture(*mv5, *m8);
}

TEST_CASE("HF hybrid: unmodelled keys are refused naming the key, or listed with strict: false") {
  struct Case { const char* file; const char* key; nlohmann::json value; bool field; };
  const Case cases[] = {
      {"jamba-v0.1.config.json", "mamba_proj_bias", true, true},
      {"jamba-v0.1.config.json", "mamba_conv_bias", false, true},
      {"jamba-v0.1.config.json", "attention_dropout", 0.1, true},
      {"jamba-v0.1.config.json", "sliding_window", 4096, true},
      {"jamba-v0.1.config.json", "hidden_act", "gelu", false},
      {"nemotron-h-8b-base-8k.config.json", "use_bias", true, true},
      {"nemotron-h-8b-base-8k.config.json", "residual_in_fp32", true, true},
      {"nemotron-h-8b-base-8k.config.json", "hidden_dropout", 0.1, true},
      {"nemotron-h-8b-base-8k.config.json", "mlp_hidden_act", "silu", false},
  };
  for (const Case& c : cases) {
    CAPTURE(c.file);
    CAPTURE(c.key);
    nlohmann::json cfg = fixture(c.file);
    cfg[c.key] = c.value;
    Result<ModelConfig> m = import(cfg);
    REQUIRE_FALSE(m.ok());
    CHECK(m.error().code == ErrorCode::kUnsupported);
    CHECK(m.error().path == std::string("model.hf_config.") + c.key);
    Result<ModelConfig> lax = import(cfg, /*strict=*/false);
    if (!c.field) {  // an activation we do not build: refused either way
      CHECK_FALSE(lax.ok());
      continue;
    }
    REQUIRE(lax.ok());
    REQUIRE(lax->hf_warnings.size() == 1);
    CHECK(lax->hf_warnings[0].rfind(std::string(c.key) + " = ", 0) == 0);
  }
  // Structure errors name the key.
  nlohmann::json short_pattern = fixture("nemotron-h-8b-base-8k.config.json");
  short_pattern["num_hidden_layers"] = 50;
  Result<ModelConfig> m = import(short_pattern);
  REQUIRE_FALSE(m.ok());
  CHECK(m.error().path == "model.hf_config.num_hidden_layers");
  nlohmann::json offset = fixture("jamba-v0.1.config.json");
  offset["attn_layer_offset"] = 8;
  m = import(offset);
  REQUIRE_FALSE(m.ok());
  CHECK(m.error().path == "model.hf_config.attn_layer_offset");
  // A model-field error names the config key it was read from, as the
  // plain transformers' imports do (it named model.num_kv_heads).
  for (const char* file : {"jamba-v0.1.config.json", "nemotron-h-8b-base-8k.config.json"}) {
    CAPTURE(file);
    nlohmann::json kv = fixture(file);
    kv["num_key_value_heads"] = 5;
    m = import(kv);
    REQUIRE_FALSE(m.ok());
    CHECK(m.error().path == "model.hf_config.num_key_value_heads");
    CHECK(m.error().message.find("(model.num_kv_heads, read from this key)") != std::string::npos);
  }
}

TEST_CASE("HF hybrid: Jamba's defaults (dt_rank \"auto\" = ceil(h / 16), one expert = dense) and layer periods") {
  nlohmann::json cfg = fixture("jamba-v0.1.config.json");
  cfg["hidden_size"] = 1000;  // ceil(1000 / 16) = 63
  cfg["num_attention_heads"] = 8;
  cfg["num_key_value_heads"] = 8;
  cfg["mamba_dt_rank"] = "auto";
  cfg["num_hidden_layers"] = 4;
  cfg["attn_layer_period"] = 2;
  cfg["attn_layer_offset"] = 1;
  cfg["num_experts"] = 1;
  Result<ModelConfig> m = import(cfg);
  REQUIRE_MESSAGE(m.ok(), m.error().to_string());
  CHECK(m->mamba1_dt_rank == 63);
  CHECK(m->mamba1_inner == 2000);
  CHECK(m->hybrid_pattern == "S-*-S-*-");
  CHECK(m->num_experts == 0);
}

TEST_CASE("HF hybrid: imported graphs hold the closed-form parameters, replay and validate") {
  // Jamba: the first two Jamba layers (Mamba-1 + MLP, Mamba-1 + MoE) under tp 2 + sp, dp 2, ep 2.
  nlohmann::json jamba = {{"model", {{"hf_config", fixture("jamba-v0.1.config.json")}, {"num_layers", 4}}},
                          {"parallel", {{"tp", 2}, {"dp", 2}, {"ep", 2}, {"sequence_parallel", true}}},
                          {"training", {{"seq_len", 64}, {"micro_batch_size", 1}, {"global_batch_size", 2}}}};
  // Nemotron-H-8B: the first four blocks (M-M-) under pp 2, tp 2.
  nlohmann::json nemo = {{"model", {{"hf_config", fixture("nemotron-h-8b-base-8k.config.json")}, {"num_layers", 4}}},
                         {"parallel", {{"tp", 2}, {"pp", 2}}},
                         {"training", {{"seq_len", 64}, {"micro_batch_size", 1}, {"global_batch_size", 4}}}};
  for (const nlohmann::json& text : {jamba, nemo}) {
    auto j = parse_job(text.dump());
    REQUIRE_MESSAGE(j.ok(), j.error().to_string());
    Generator g = testing::make(*j);
    auto s = testing::summary(g);
    CHECK(s["parameters"]["total"].get<int64_t>() == closed_form_parameters(j->model));
    testing::check_complete_balanced_and_summed(g, s);
    CHECK(testing::validate_generated(g).ok());
  }
}
