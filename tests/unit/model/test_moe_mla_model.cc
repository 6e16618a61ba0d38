// Mixture-of-experts and multi-head latent attention models: presets,
// closed-form total/active parameter counts worked out by hand from the
// published config.json numbers, validation, HF import and the job JSON
// "model" section.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "job/job.h"
#include "model/model_config.h"
#include "../test_jobs.h"

using namespace sc;
using sc::testing::preset;

namespace {


Job must_parse(const std::string& text) {
  Result<Job> job = parse_job(text);
  REQUIRE_MESSAGE(job.ok(), (job.ok() ? "" : job.error().to_string()));
  return *job;
}

Error model_error(const ModelConfig& m) {
  Status s = validate_model(m);
  REQUIRE(!s.ok());
  return s.error();
}

// Mixtral-8x7B config.json (mistralai/Mixtral-8x7B-v0.1).
const char* kMixtral8x7b = R"({
  "architectures": ["MixtralForCausalLM"],
  "attention_dropout": 0.0,
  "bos_token_id": 1,
  "eos_token_id": 2,
  "hidden_act": "silu",
  "hidden_size": 4096,
  "initializer_range": 0.02,
  "intermediate_size": 14336,
  "max_position_embeddings": 32768,
  "model_type": "mixtral",
  "num_attention_heads": 32,
  "num_experts_per_tok": 2,
  "num_hidden_layers": 32,
  "num_key_value_heads": 8,
  "num_local_experts": 8,
  "output_router_logits": false,
  "rms_norm_eps": 1e-05,
  "rope_theta": 1000000.0,
  "router_aux_loss_coef": 0.02,
  "sliding_window": null,
  "tie_word_embeddings": false,
  "torch_dtype": "bfloat16",
  "transformers_version": "4.36.0.dev0",
  "use_cache": true,
  "vocab_size": 32000
})";

// DeepSeek-V3 config.json (deepseek-ai/DeepSeek-V3), auto_map left out.
const char* kDeepSeekV3 = R"({
  "architectures": ["DeepseekV3ForCausalLM"],
  "attention_bias": false,
  "attention_dropout": 0.0,
  "aux_loss_alpha": 0.001,
  "bos_token_id": 0,
  "eos_token_id": 1,
  "ep_size": 1,
  "first_k_dense_replace": 3,
  "hidden_act": "silu",
  "hidden_size": 7168,
  "initializer_range": 0.02,
  "intermediate_size": 18432,
  "kv_lora_rank": 512,
  "max_position_embeddings": 163840,
  "model_type": "deepseek_v3",
  "moe_intermediate_size": 2048,
  "moe_layer_freq": 1,
  "n_group": 8,
  "n_routed_experts": 256,
  "n_shared_experts": 1,
  "norm_topk_prob": true,
  "num_attention_heads": 128,
  "num_experts_per_tok": 8,
  "num_hidden_layers": 61,
  "num_key_value_heads": 128,
  "num_nextn_predict_layers": 1,
  "pretraining_tp": 1,
  "q_lora_rank": 1536,
  "qk_nope_head_dim": 128,
  "qk_rope_head_dim": 64,
  "quantization_config": {"activation_scheme": "dynamic", "fmt": "e4m3",
                          "quant_method": "fp8", "weight_block_size": [128, 128]},
  "rms_norm_eps": 1e-06,
  "rope_scaling": {"beta_fast": 32, "beta_slow": 1, "factor": 40, "mscale": 1.0,
                   "mscale_all_dim": 1.0, "original_max_position_embeddings": 4096,
                   "type": "yarn"},
  "rope_theta": 10000,
  "routed_scaling_factor": 2.5,
  "scoring_func": "sigmoid",
  "seq_aux": true,
  "tie_word_embeddings": false,
  "topk_group": 4,
  "topk_method": "noaux_tc",
  "torch_dtype": "bfloat16",
  "transformers_version": "4.33.1",
  "use_cache": true,
  "v_head_dim": 128,
  "vocab_size": 129280
})";

}  // namespace

TEST_CASE("MoE/MLA presets: published config.json values") {
  ModelConfig m = preset("mixtral-8x7b");
  CHECK(m.hidden == 4096);
  CHECK(m.num_layers == 32);
  CHECK(m.num_heads == 32);
  CHECK(m.num_kv_heads == 8);
  CHECK(m.head_dim == 128);
  CHECK(m.ffn_hidden == 14336);
  CHECK(m.moe_ffn_hidden == 14336);
  CHECK(m.vocab == 32000);
  CHECK(m.max_positions == 32768);
  CHECK(m.num_experts == 8);
  CHECK(m.experts_per_token == 2);
  CHECK(m.shared_experts == 0);
  CHECK(m.first_dense_layers == 0);
  CHECK(!m.router_bias);
  CHECK(m.capacity_factor == 1.0);
  CHECK(m.is_moe());
  CHECK(!m.is_mla());
  CHECK(m.moe_layer(0));
  CHECK(m.norm == NormKind::kRMSNorm);
  CHECK(m.mlp == MlpKind::kSwiGLU);
  CHECK(m.position == PositionKind::kRope);
  CHECK(!m.tied_embeddings);
  CHECK(!m.linear_bias);
  CHECK(!m.dropout);

  m = preset("mixtral-8x22b");
  CHECK(m.hidden == 6144);
  CHECK(m.num_layers == 56);
  CHECK(m.num_heads == 48);
  CHECK(m.num_kv_heads == 8);
  CHECK(m.head_dim == 128);
  CHECK(m.moe_ffn_hidden == 16384);
  CHECK(m.ffn_hidden == 16384);
  CHECK(m.vocab == 32768);
  CHECK(m.max_positions == 65536);
  CHECK(m.num_experts == 8);
  CHECK(m.experts_per_token == 2);

  m = preset("deepseek-v3");
  CHECK(m.hidden == 7168);
  CHECK(m.num_layers == 61);
  CHECK(m.num_heads == 128);
  CHECK(m.num_kv_heads == 128);
  CHECK(m.is_mla());
  CHECK(m.q_lora_rank == 1536);
  CHECK(m.kv_lora_rank == 512);
  CHECK(m.head_dim == 128);
  CHECK(m.qk_rope_head_dim == 64);
  CHECK(m.v_head_dim == 128);
  CHECK(m.qk_head_dim() == 192);
  CHECK(m.value_head_dim() == 128);
  CHECK(m.ffn_hidden == 18432);
  CHECK(m.first_dense_layers == 3);
  CHECK(!m.moe_layer(2));
  CHECK(m.moe_layer(3));
  CHECK(m.moe_ffn_hidden == 2048);
  CHECK(m.num_experts == 256);
  CHECK(m.experts_per_token == 8);
  CHECK(m.shared_experts == 1);
  CHECK(m.router_bias);
  CHECK(m.vocab == 129280);
  CHECK(m.max_positions == 163840);
  CHECK(m.norm == NormKind::kRMSNorm);
  CHECK(m.mlp == MlpKind::kSwiGLU);
  CHECK(m.position == PositionKind::kRope);
  CHECK(!m.tied_embeddings);
  CHECK(!m.linear_bias);
  CHECK(!m.dropout);

  for (const char* n : {"mixtral-8x7b", "mixtral-8x22b", "deepseek-v3"}) {
    CAPTURE(n);
    CHECK(validate_model(preset(n)).ok());
  }
}

TEST_CASE("MoE parameters by hand: Mixtral-8x7B 46,702,792,704 total, 12,879,925,248 active") {
  const int64_t h = 4096, L = 32, a = 32, kv = 8, d = 128, fe = 14336, V = 32000, E = 8, k = 2;
  const int64_t attention = h * a * d + 2 * h * kv * d + a * d * h;  // q, k, v, o
  const int64_t expert = 3 * h * fe;                                  // gate, up, down
  const int64_t router = h * E;
  const int64_t norms = 2 * h;  // two RMSNorm scales per layer
  const int64_t layer = attention + E * expert + router + norms;
  const int64_t total = L * layer + V * h /* embedding */ + V * h /* untied output */ + h;
  const int64_t active = total - L * (E - k) * expert;
  CHECK(total == 46702792704);
  CHECK(active == 12879925248);
  ModelConfig m = preset("mixtral-8x7b");
  CHECK(closed_form_parameters(m) == total);
  CHECK(closed_form_active_parameters(m) == active);
}

TEST_CASE("MoE parameters by hand: Mixtral-8x22B 140,630,071,296 total, 39,161,468,928 active") {
  const int64_t h = 6144, L = 56, a = 48, kv = 8, d = 128, fe = 16384, V = 32768, E = 8, k = 2;
  const int64_t attention = h * a * d + 2 * h * kv * d + a * d * h;
  const int64_t expert = 3 * h * fe;
  const int64_t layer = attention + E * expert + h * E + 2 * h;
  const int64_t total = L * layer + 2 * V * h + h;
  const int64_t active = total - L * (E - k) * expert;
  CHECK(total == 140630071296);
  CHECK(active == 39161468928);
  ModelConfig m = preset("mixtral-8x22b");
  CHECK(closed_form_parameters(m) == total);
  CHECK(closed_form_active_parameters(m) == active);
}

TEST_CASE("MoE+MLA parameters by hand: DeepSeek-V3 671,026,419,200 total, 37,552,297,472 active") {
  const int64_t h = 7168, L = 61, a = 128, qr = 1536, kvr = 512, dn = 128, dr = 64, dv = 128;
  const int64_t f = 18432, dense_layers = 3, fe = 2048, E = 256, k = 8, shared = 1, V = 129280;
  // MLA: q_a_proj, q_a_layernorm, q_b_proj; kv_a_proj_with_mqa,
  // kv_a_layernorm, kv_b_proj; o_proj. No biases.
  const int64_t q = h * qr + qr + qr * a * (dn + dr);
  const int64_t kv = h * (kvr + dr) + kvr + kvr * a * (dn + dv);
  const int64_t o = a * dv * h;
  const int64_t attention = q + kv + o;
  CHECK(attention == 187107328);
  const int64_t norms = 2 * h;
  const int64_t dense_mlp = 3 * h * f;
  const int64_t expert = 3 * h * fe;
  // Routed + shared experts, gate weight (E x h) and e_score_correction_bias (E).
  const int64_t moe_mlp = (E + shared) * expert + h * E + E;
  const int64_t moe_layers = L - dense_layers;
  const int64_t total = L * (attention + norms) + dense_layers * dense_mlp + moe_layers * moe_mlp +
                        V * h /* embed_tokens */ + V * h /* lm_head */ + h /* final norm */;
  const int64_t active = total - moe_layers * (E - k) * expert;
  CHECK(total == 671026419200);
  CHECK(active == 37552297472);
  ModelConfig m = preset("deepseek-v3");
  CHECK(closed_form_parameters(m) == total);
  CHECK(closed_form_active_parameters(m) == active);
}

TEST_CASE("dense presets: active parameters equal the total") {
  for (const std::string& n : preset_names()) {
    CAPTURE(n);
    ModelConfig m = preset(n);
    if (m.is_moe()) {
      CHECK(closed_form_active_parameters(m) < closed_form_parameters(m));
    } else {
      CHECK(closed_form_active_parameters(m) == closed_form_parameters(m));
    }
  }
  // Top-E routing activates every expert.
  ModelConfig m = preset("mixtral-8x7b");
  m.experts_per_token = m.num_experts;
  CHECK(closed_form_active_parameters(m) == closed_form_parameters(m));
}

TEST_CASE("MoE/MLA parameters: LayerNorm, GeLU experts, biases on every linear") {
  // A toy with every switch on: LayerNorm (scale + shift, also on the MLA
  // latents), GeLU experts, linear biases, router bias, learned positions,
  // tied embeddings, one dense layer.
  ModelConfig m;
  m.name = "toy";
  m.num_layers = 3;
  m.hidden = 64;
  m.num_heads = 4;
  m.num_kv_heads = 4;
  m.head_dim = 16;
  m.ffn_hidden = 256;
  m.vocab = 1000;
  m.max_positions = 128;
  m.norm = NormKind::kLayerNorm;
  m.mlp = MlpKind::kGelu;
  m.position = PositionKind::kLearned;
  m.tied_embeddings = true;
  m.linear_bias = true;
  m.num_experts = 4;
  m.experts_per_token = 1;
  m.moe_ffn_hidden = 32;
  m.shared_experts = 2;
  m.first_dense_layers = 1;
  m.router_bias = true;
  m.q_lora_rank = 24;
  m.kv_lora_rank = 16;
  m.qk_rope_head_dim = 8;
  m.v_head_dim = 12;
  REQUIRE(validate_model(m).ok());
  const int64_t h = 64, a = 4, dn = 16, dr = 8, dv = 12, qr = 24, kvr = 16;
  const int64_t q = (h * qr + qr) + 2 * qr + (qr * a * (dn + dr) + a * (dn + dr));
  const int64_t kv = (h * (kvr + dr) + (kvr + dr)) + 2 * kvr + (kvr * a * (dn + dv) + a * (dn + dv));
  const int64_t o = a * dv * h + h;
  const int64_t norms = 2 * (2 * h);
  const int64_t dense_mlp = (h * 256 + 256) + (256 * h + h);
  const int64_t expert = (h * 32 + 32) + (32 * h + h);
  // The 2 shared experts are one MLP of width 2 x 32 (Megatron-Core's
  // SharedExpertMLP): one fc2 bias, not two.
  const int64_t shared = (h * 64 + 64) + (64 * h + h);
  const int64_t moe_mlp = 4 * expert + shared + h * 4 + 4;
  const int64_t total = 3 * (q + kv + o + norms) + dense_mlp + 2 * moe_mlp + 1000 * h + 128 * h + 2 * h;
  CHECK(closed_form_parameters(m) == total);
  CHECK(closed_form_active_parameters(m) == total - 2 * (4 - 1) * expert);

  // Without q_lora_rank the queries come straight from h.
  m.q_lora_rank = 0;
  const int64_t q_direct = h * a * (dn + dr) + a * (dn + dr);
  CHECK(closed_form_parameters(m) == total - 3 * q + 3 * q_direct);

  // All layers dense: the MoE fields no longer count.
  m.first_dense_layers = 3;
  CHECK(closed_form_parameters(m) == total - 3 * q + 3 * q_direct - 2 * moe_mlp + 2 * dense_mlp);
  CHECK(closed_form_active_parameters(m) == closed_form_parameters(m));
}

TEST_CASE("validate_model: MoE fields name the field and the values") {
  ModelConfig m = preset("mixtral-8x7b");
  m.experts_per_token = 9;
  Error e = model_error(m);
  CHECK(e.path == "model.experts_per_token");
  CHECK(e.message == "must be >= 1 and <= num_experts (8) (got 9)");

  m.experts_per_token = 0;
  CHECK(model_error(m).path == "model.experts_per_token");

  m = preset("mixtral-8x7b");
  m.moe_ffn_hidden = 0;
  e = model_error(m);
  CHECK(e.path == "model.moe_ffn_hidden");
  CHECK(e.message.find("got 0") != std::string::npos);

  m = preset("deepseek-v3");
  m.num_layers = 2;
  e = model_error(m);
  CHECK(e.path == "model.first_dense_layers");
  CHECK(e.message == "must be >= 0 and <= num_layers (2) (got 3)");

  m = preset("deepseek-v3");
  m.shared_experts = -1;
  CHECK(model_error(m).path == "model.shared_experts");

  m = preset("mixtral-8x7b");
  m.capacity_factor = 0.5;
  e = model_error(m);
  CHECK(e.path == "model.capacity_factor");
  CHECK(e.message.find("got 0.5") != std::string::npos);
  CHECK(e.message.find("drop tokens") != std::string::npos);
  for (double bad : {65.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    m.capacity_factor = bad;
    CHECK(model_error(m).path == "model.capacity_factor");
  }
  m.capacity_factor = 1.25;
  CHECK(validate_model(m).ok());

  m = preset("mixtral-8x7b");
  m.num_experts = 65537;
  m.experts_per_token = 2;
  e = model_error(m);
  CHECK(e.path == "model.num_experts");
  CHECK(e.message == "must be <= 65536 (got 65537)");

  m = preset("mixtral-8x7b");
  m.num_experts = 65536;
  m.moe_ffn_hidden = 16777216;
  e = model_error(m);
  CHECK(e.message.find("parameter count") != std::string::npos);

  // MoE settings without experts.
  m = preset("llama3-8b");
  m.experts_per_token = 2;
  e = model_error(m);
  CHECK(e.path == "model.experts_per_token");
  CHECK(e.message.find("needs num_experts > 0") != std::string::npos);
  for (auto field : {&ModelConfig::moe_ffn_hidden, &ModelConfig::shared_experts,
                     &ModelConfig::first_dense_layers}) {
    m = preset("llama3-8b");
    m.*field = 1;
    CHECK(model_error(m).message.find("needs num_experts > 0") != std::string::npos);
  }
  m = preset("llama3-8b");
  m.router_bias = true;
  CHECK(model_error(m).path == "model.router_bias");
  m = preset("llama3-8b");
  m.capacity_factor = 2;
  CHECK(model_error(m).path == "model.capacity_factor");
}

TEST_CASE("validate_model: MLA fields name the field and the values") {
  ModelConfig m = preset("deepseek-v3");
  m.num_kv_heads = 8;
  Error e = model_error(m);
  CHECK(e.path == "model.num_kv_heads");
  CHECK(e.message.find("num_kv_heads (8) must equal num_heads (128)") != std::string::npos);

  m = preset("deepseek-v3");
  m.qk_rope_head_dim = 0;
  e = model_error(m);
  CHECK(e.path == "model.qk_rope_head_dim");
  CHECK(e.message.find("kv_lora_rank = 512") != std::string::npos);

  m = preset("deepseek-v3");
  m.v_head_dim = 0;
  CHECK(model_error(m).path == "model.v_head_dim");

  m = preset("deepseek-v3");
  m.q_lora_rank = -1;
  CHECK(model_error(m).path == "model.q_lora_rank");

  m = preset("deepseek-v3");
  m.v_head_dim = 65536;
  e = model_error(m);
  CHECK(e.path == "model.v_head_dim");
  CHECK(e.message.find("exceeds the cap") != std::string::npos);

  // Latent-attention sizes without kv_lora_rank.
  m = preset("llama3-8b");
  m.q_lora_rank = 1536;
  e = model_error(m);
  CHECK(e.path == "model.q_lora_rank");
  CHECK(e.message.find("needs kv_lora_rank > 0") != std::string::npos);
  m = preset("llama3-8b");
  m.qk_rope_head_dim = 64;
  CHECK(model_error(m).path == "model.qk_rope_head_dim");
  m = preset("llama3-8b");
  m.v_head_dim = 128;
  CHECK(model_error(m).path == "model.v_head_dim");
}

TEST_CASE("HF import: Mixtral-8x7B config.json equals the preset") {
  Result<ModelConfig> m = model_from_hf_config(kMixtral8x7b);
  REQUIRE_MESSAGE(m.ok(), (m.ok() ? "" : m.error().to_string()));
  CHECK(m->name == "hf:mixtral");
  CHECK(m->num_experts == 8);
  CHECK(m->experts_per_token == 2);
  CHECK(m->moe_ffn_hidden == 14336);
  CHECK(m->ffn_hidden == 14336);
  CHECK(m->first_dense_layers == 0);
  CHECK(!m->router_bias);
  CHECK(m->max_positions == 32768);
  CHECK(closed_form_parameters(*m) == closed_form_parameters(preset("mixtral-8x7b")));
  CHECK(closed_form_active_parameters(*m) == closed_form_active_parameters(preset("mixtral-8x7b")));
  CHECK(closed_form_parameters(*m) == 46702792704);
}

TEST_CASE("HF import: DeepSeek-V3 config.json equals the preset (MTP module not counted)") {
  Result<ModelConfig> m = model_from_hf_config(kDeepSeekV3);
  REQUIRE_MESSAGE(m.ok(), (m.ok() ? "" : m.error().to_string()));
  CHECK(m->name == "hf:deepseek_v3");
  CHECK(m->is_mla());
  CHECK(m->num_kv_heads == 128);
  CHECK(m->head_dim == 128);
  CHECK(m->q_lora_rank == 1536);
  CHECK(m->kv_lora_rank == 512);
  CHECK(m->qk_rope_head_dim == 64);
  CHECK(m->v_head_dim == 128);
  CHECK(m->ffn_hidden == 18432);
  CHECK(m->first_dense_layers == 3);
  CHECK(m->moe_ffn_hidden == 2048);
  CHECK(m->num_experts == 256);
  CHECK(m->experts_per_token == 8);
  CHECK(m->shared_experts == 1);
  CHECK(m->router_bias);
  CHECK(m->num_layers == 61);  // num_nextn_predict_layers ignored
  CHECK(!m->dropout);
  CHECK(closed_form_parameters(*m) == closed_form_parameters(preset("deepseek-v3")));
  CHECK(closed_form_active_parameters(*m) == closed_form_active_parameters(preset("deepseek-v3")));
  CHECK(closed_form_parameters(*m) == 671026419200);
  CHECK(closed_form_active_parameters(*m) == 37552297472);

  // A head_dim key (newer transformers write qk_rope_head_dim there) does
  // not override qk_nope_head_dim.
  nlohmann::json j = nlohmann::json::parse(kDeepSeekV3);
  j["head_dim"] = 64;
  m = model_from_hf_config(j.dump());
  REQUIRE(m.ok());
  CHECK(m->head_dim == 128);
}

TEST_CASE("HF import: DeepSeek-V2-Lite (no q_lora_rank, greedy routing) has 15.7 B parameters") {
  const char* text = R"({"model_type": "deepseek_v2", "hidden_size": 2048, "num_hidden_layers": 27,
      "num_attention_heads": 16, "num_key_value_heads": 16, "q_lora_rank": null,
      "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128,
      "intermediate_size": 10944, "moe_intermediate_size": 1408, "n_routed_experts": 64,
      "n_shared_experts": 2, "num_experts_per_tok": 6, "first_k_dense_replace": 1,
      "moe_layer_freq": 1, "topk_method": "greedy", "vocab_size": 102400,
      "max_position_embeddings": 163840, "rms_norm_eps": 1e-06, "hidden_act": "silu",
      "tie_word_embeddings": false, "attention_bias": false, "attention_dropout": 0.0})";
  Result<ModelConfig> m = model_from_hf_config(text);
  REQUIRE_MESSAGE(m.ok(), (m.ok() ? "" : m.error().to_string()));
  CHECK(m->q_lora_rank == 0);
  CHECK(!m->router_bias);
  const int64_t h = 2048, L = 27, a = 16, kvr = 512, dn = 128, dr = 64, dv = 128, V = 102400;
  const int64_t attention = h * a * (dn + dr) + h * (kvr + dr) + kvr + kvr * a * (dn + dv) + a * dv * h;
  const int64_t expert = 3 * h * 1408;
  const int64_t total = L * (attention + 2 * h) + 1 * 3 * h * 10944 + 26 * ((64 + 2) * expert + h * 64) +
                        2 * V * h + h;
  CHECK(total == 15706484224);
  CHECK(closed_form_parameters(*m) == total);
  CHECK(closed_form_active_parameters(*m) == total - 26 * (64 - 6) * expert);
}

TEST_CASE("HF import: unsupported MoE layouts are refused, naming the key") {
  nlohmann::json j = nlohmann::json::parse(kDeepSeekV3);
  j["moe_layer_freq"] = 2;
  Result<ModelConfig> m = model_from_hf_config(j.dump());
  REQUIRE(!m.ok());
  CHECK(m.error().code == ErrorCode::kUnsupported);
  CHECK(m.error().path == "model.hf_config.moe_layer_freq");

  j = nlohmann::json::parse(kDeepSeekV3);
  j.erase("kv_lora_rank");
  m = model_from_hf_config(j.dump());
  REQUIRE(!m.ok());
  CHECK(m.error().path == "model.hf_config.kv_lora_rank");

  j = nlohmann::json::parse(kMixtral8x7b);
  j["num_experts_per_tok"] = 9;
  m = model_from_hf_config(j.dump());
  REQUIRE(!m.ok());
  // The config key the user wrote, and the model field it became.
  CHECK(m.error().path == "model.hf_config.num_experts_per_tok");
  CHECK(m.error().message.find("(model.experts_per_token, read from this key)") != std::string::npos);
}

TEST_CASE("job model section: MoE and MLA keys, as explicit fields and as preset overrides") {
  Job job = must_parse(R"({"model": {"preset": "deepseek-v3", "num_layers": 5}})");
  CHECK(job.model.num_layers == 5);
  CHECK(job.model.num_experts == 256);
  CHECK(job.model.first_dense_layers == 3);
  CHECK(job.model.is_mla());

  // A different head count keeps the MLA head sizes (head_dim is not h / a).
  job = must_parse(R"({"model": {"preset": "deepseek-v3", "num_layers": 4, "num_heads": 64,
                                 "num_experts": 64, "experts_per_token": 4, "first_dense_layers": 1,
                                 "capacity_factor": 1.5}})");
  CHECK(job.model.num_heads == 64);
  CHECK(job.model.num_kv_heads == 64);
  CHECK(job.model.head_dim == 128);
  CHECK(job.model.num_experts == 64);
  CHECK(job.model.experts_per_token == 4);
  CHECK(job.model.capacity_factor == 1.5);

  job = must_parse(R"({"model": {"preset": "llama3-8b", "num_layers": 2, "num_experts": 8,
                                 "experts_per_token": 2, "moe_ffn_hidden": 14336}})");
  CHECK(job.model.is_moe());
  CHECK(closed_form_parameters(job.model) > closed_form_active_parameters(job.model));

  job = must_parse(R"({"model": {"num_layers": 2, "hidden": 256, "num_heads": 4, "vocab": 1000,
                                 "head_dim": 32, "kv_lora_rank": 64, "q_lora_rank": 96,
                                 "qk_rope_head_dim": 16, "v_head_dim": 32, "num_experts": 4,
                                 "experts_per_token": 2, "moe_ffn_hidden": 128,
                                 "shared_experts": 1, "first_dense_layers": 1,
                                 "router_bias": true, "mlp": "swiglu", "norm": "rmsnorm",
                                 "position": "rope", "linear_bias": false},
                       "training": {"seq_len": 512}})");
  CHECK(job.model.name == "custom");
  CHECK(job.model.is_mla());
  CHECK(job.model.num_kv_heads == 4);
  CHECK(job.model.router_bias);

  Result<Job> bad = parse_job(R"({"model": {"preset": "llama3-8b", "experts_per_token": 2}})");
  REQUIRE(!bad.ok());
  CHECK(bad.error().path == "model.experts_per_token");
  bad = parse_job(R"({"model": {"preset": "mixtral-8x7b", "num_experts": -1}})");
  REQUIRE(!bad.ok());
  CHECK(bad.error().path == "model.num_experts");
  bad = parse_job(R"({"model": {"preset": "mixtral-8x7b", "capacity_factor": "1.5"}})");
  REQUIRE(!bad.ok());
  CHECK(bad.error().path == "model.capacity_factor");
  bad = parse_job(R"({"model": {"preset": "mixtral-8x7b", "capacity_factor": 0.9}})");
  REQUIRE(!bad.ok());
  CHECK(bad.error().path == "model.capacity_factor");
  bad = parse_job(R"({"model": {"preset": "mixtral-8x7b", "router_bias": 1}})");
  REQUIRE(!bad.ok());
  CHECK(bad.error().path == "model.router_bias");
  bad = parse_job(R"({"model": {"preset": "mixtral-8x7b", "num_expert": 4}})");
  REQUIRE(!bad.ok());
  CHECK(bad.error().code == ErrorCode::kUnknownField);
  CHECK(bad.error().path == "model.num_expert");
}

TEST_CASE("job model section: MoE+MLA hf_config and canonical JSON round trip") {
  nlohmann::json wrapper = {{"model", {{"hf_config", kDeepSeekV3}, {"num_layers", 4}}},
                            {"training", {{"seq_len", 1024}}}};
  Job hf = must_parse(wrapper.dump());
  CHECK(hf.model.name == "hf:deepseek_v3");
  CHECK(hf.model.num_layers == 4);
  CHECK(hf.model.router_bias);

  Job job = must_parse(R"({"model": {"preset": "deepseek-v3", "num_layers": 4,
                                     "capacity_factor": 1.25, "flash_attention": true},
                           "training": {"seq_len": 1024}})");
  std::string c = job_to_canonical_json(job);
  for (const char* key : {"\"num_experts\": 256", "\"experts_per_token\": 8", "\"moe_ffn_hidden\": 2048",
                          "\"shared_experts\": 1", "\"first_dense_layers\": 3",
                          "\"capacity_factor\": 1.25", "\"router_bias\": true", "\"q_lora_rank\": 1536",
                          "\"kv_lora_rank\": 512", "\"qk_rope_head_dim\": 64", "\"v_head_dim\": 128"}) {
    CAPTURE(key);
    CHECK(c.find(key) != std::string::npos);
  }
  Job back = must_parse(c);
  CHECK(job_to_canonical_json(back) == c);
  CHECK(closed_form_parameters(back.model) == closed_form_parameters(job.model));
  CHECK(closed_form_active_parameters(back.model) == closed_form_active_parameters(job.model));
  CHECK(back.model.head_dim == 128);
  CHECK(back.model.capacity_factor == 1.25);

  // A dense model writes the MoE/MLA fields as 0 (capacity 1) and reads them back.
  Job dense = must_parse(R"({"model": "gpt3-1.7b"})");
  std::string d = job_to_canonical_json(dense);
  CHECK(d.find("\"num_experts\": 0") != std::string::npos);
  CHECK(d.find("\"capacity_factor\": 1.0") != std::string::npos);
  CHECK(job_to_canonical_json(must_parse(d)) == d);
}

TEST_CASE("job model section: every MoE/MLA key with every JSON type") {
  const char* values[] = {"null", "true", "-1", "0", "1", "2", "1e400", "18446744073709551616",
                          "2.5", "\"x\"", "[]", "{}"};
  const char* keys[] = {"num_experts", "experts_per_token", "moe_ffn_hidden", "shared_experts",
                        "first_dense_layers", "capacity_factor", "router_bias", "q_lora_rank",
                        "kv_lora_rank", "qk_rope_head_dim", "v_head_dim"};
  for (const char* base : {"mixtral-8x7b", "deepseek-v3", "llama3-8b"}) {
    for (const char* key : keys) {
      for (const char* value : values) {
        std::string text = std::string(R"({"model": {"preset": ")") + base +
                           R"(", "num_layers": 4, ")" + key + "\": " + value + "}}";
        CAPTURE(text);
        Result<Job> job = parse_job(text);
        if (job.ok()) {
          CHECK(validate_job(*job).ok());
          CHECK(job_to_canonical_json(must_parse(job_to_canonical_json(*job))) ==
                job_to_canonical_json(*job));
        } else {
          CHECK(!job.error().message.empty());
          // 1e400 is a JSON parse error of the whole text (no path).
          if (job.error().code != ErrorCode::kParseError) CHECK(job.error().path.rfind("model", 0) == 0);
        }
      }
    }
  }
}
