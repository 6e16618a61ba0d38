// Hugging Face config.json import (gpt2, llama-style, mixtral, DeepSeek).
#include "model/model_config.h"

#include <string>

#include "base/json_fields.h"

namespace sc {
namespace {

using jsonf::Json;


struct HfReader {
  const Json& obj;
  std::string path;

  Result<int64_t> required(const char* key, int64_t hi) const {
    const Json* v = jsonf::find(obj, key);
    if (!v) {
      return make_error(ErrorCode::kInvalidArgument, "required key is missing",
                        jsonf::join(path, key));
    }
    return jsonf::get_int(*v, jsonf::join(path, key), 1, hi);
  }
  Result<int64_t> optional(const char* key, int64_t fallback, int64_t hi, int64_t lo = 1) const {
    const Json* v = jsonf::find(obj, key);
    if (!v) return fallback;
    return jsonf::get_int(*v, jsonf::join(path, key), lo, hi);
  }
  Result<std::string> text(const char* key, const std::string& fallback) const {
    const Json* v = jsonf::find(obj, key);
    if (!v) return fallback;
    return jsonf::get_string(*v, jsonf::join(path, key));
  }
  Result<bool> flag(const char* key, bool fallback) const {
    const Json* v = jsonf::find(obj, key);
    if (!v) return fallback;
    return jsonf::get_bool(*v, jsonf::join(path, key));
  }
  // Any of the dropout probabilities present and > 0.
  Result<bool> any_positive(std::initializer_list<const char*> keys, bool fallback) const {
    bool seen = false, positive = false;
    for (const char* k : keys) {
      const Json* v = jsonf::find(obj, k);
      if (!v) continue;
      SC_ASSIGN_OR_RETURN(double p, jsonf::get_number_in(*v, jsonf::join(path, k), 0, 1));
      seen = true;
      positive = positive || p > 0;
    }
    return seen ? positive : fallback;
  }
};

Result<ModelConfig> from_gpt2(const HfReader& r) {
  using namespace limits;
  ModelConfig m;
  m.name = "hf:gpt2";
  SC_ASSIGN_OR_RETURN(m.hidden, r.required("n_embd", kMaxHidden));
  SC_ASSIGN_OR_RETURN(m.num_layers, r.required("n_layer", kMaxLayers));
  SC_ASSIGN_OR_RETURN(m.num_heads, r.required("n_head", kMaxHeads));
  SC_ASSIGN_OR_RETURN(m.vocab, r.required("vocab_size", kMaxVocab));
  SC_ASSIGN_OR_RETURN(m.max_positions, r.optional("n_positions", 1024, kMaxPositions));
  SC_ASSIGN_OR_RETURN(m.ffn_hidden, r.optional("n_inner", 4 * m.hidden, kMaxFfn));
  if (m.hidden % m.num_heads != 0) {
    return make_error(ErrorCode::kNotDivisible,
                      "n_embd (" + std::to_string(m.hidden) + ") is not divisible by n_head (" +
                      std::to_string(m.num_heads) + ")", jsonf::join(r.path, "n_head"));
  }
  m.num_kv_heads = m.num_heads;
  m.head_dim = m.hidden / m.num_heads;
  m.norm = NormKind::kLayerNorm;
  m.mlp = MlpKind::kGelu;
  m.position = PositionKind::kLearned;
  SC_ASSIGN_OR_RETURN(m.tied_embeddings, r.flag("tie_word_embeddings", true));
  m.linear_bias = true;
  SC_ASSIGN_OR_RETURN(m.dropout, r.any_positive({"resid_pdrop", "embd_pdrop", "attn_pdrop"}, true));
  return m;
}

// mla: DeepSeek's latent attention, whose head sizes come from their own
// keys (from_deepseek); head_dim and num_key_value_heads are then not read.
Result<ModelConfig> from_llama_style(const HfReader& r, const std::string& model_type,
                                     bool mla = false) {
  using namespace limits;
  ModelConfig m;
  m.name = "hf:" + (model_type.empty() ? std::string("llama") : model_type);
  SC_ASSIGN_OR_RETURN(m.hidden, r.required("hidden_size", kMaxHidden));
  SC_ASSIGN_OR_RETURN(m.num_layers, r.required("num_hidden_layers", kMaxLayers));
  SC_ASSIGN_OR_RETURN(m.num_heads, r.required("num_attention_heads", kMaxHeads));
  SC_ASSIGN_OR_RETURN(m.ffn_hidden, r.required("intermediate_size", kMaxFfn));
  SC_ASSIGN_OR_RETURN(m.vocab, r.required("vocab_size", kMaxVocab));
  SC_ASSIGN_OR_RETURN(m.max_positions, r.optional("max_position_embeddings", 2048, kMaxPositions));
  if (mla) {
    m.num_kv_heads = m.num_heads;  // head sizes: from_deepseek
  } else {
    SC_ASSIGN_OR_RETURN(m.num_kv_heads, r.optional("num_key_value_heads", m.num_heads, kMaxHeads));
    if (!jsonf::find(r.obj, "head_dim") && m.hidden % m.num_heads != 0) {
      return make_error(ErrorCode::kNotDivisible,
                        "hidden_size (" + std::to_string(m.hidden) +
                        ") is not divisible by num_attention_heads (" + std::to_string(m.num_heads) +
                        ") and head_dim is not given", jsonf::join(r.path, "num_attention_heads"));
    }
    SC_ASSIGN_OR_RETURN(m.head_dim, r.optional("head_dim", m.hidden / m.num_heads, kMaxHeadDim));
  }
  if (const Json* act = jsonf::find(r.obj, "hidden_act")) {
    SC_ASSIGN_OR_RETURN(std::string a, jsonf::get_string(*act, jsonf::join(r.path, "hidden_act")));
    if (a != "silu" && a != "swish") {
      return make_error(ErrorCode::kUnsupported,
                        "gated MLP with activation \"" + a + "\" is not supported (only silu, i.e. SwiGLU)",
                        jsonf::join(r.path, "hidden_act"));
    }
  }
  m.mlp = MlpKind::kSwiGLU;
  bool layer_norm = !jsonf::find(r.obj, "rms_norm_eps") &&
                    (jsonf::find(r.obj, "layer_norm_eps") || jsonf::find(r.obj, "layer_norm_epsilon"));
  m.norm = layer_norm ? NormKind::kLayerNorm : NormKind::kRMSNorm;
  m.position = PositionKind::kRope;
  SC_ASSIGN_OR_RETURN(m.tied_embeddings, r.flag("tie_word_embeddings", false));
  // One bias switch for all linears: attention_bias or mlp_bias turns it on
  // (qwen2's q/k/v-only biases are not represented: docs/job-format.md).
  SC_ASSIGN_OR_RETURN(bool attn_bias, r.flag("attention_bias", false));
  SC_ASSIGN_OR_RETURN(bool mlp_bias, r.flag("mlp_bias", false));
  m.linear_bias = attn_bias || mlp_bias;
  SC_ASSIGN_OR_RETURN(m.dropout, r.any_positive({"attention_dropout", "hidden_dropout"}, false));
  return m;
}

// Mixtral: a llama-style config whose every MLP is a top-k mixture of
// num_local_experts experts of width intermediate_size (HF defaults 8, 2).
Status add_mixtral_moe(const HfReader& r, ModelConfig* m) {
  SC_ASSIGN_OR_RETURN(m->num_experts, r.optional("num_local_experts", 8, limits::kMaxExperts));
  SC_ASSIGN_OR_RETURN(m->experts_per_token, r.optional("num_experts_per_tok", 2, limits::kMaxExperts));
  m->moe_ffn_hidden = m->ffn_hidden;
  m->shared_experts = 0;
  m->first_dense_layers = 0;
  m->router_bias = false;
  return ok_status();
}

// DeepSeek-V2/V3: multi-head latent attention, and (when n_routed_experts
// is given) an MoE MLP in every layer from first_k_dense_replace on. The
// multi-token-prediction module (num_nextn_predict_layers) is not part of
// the model and is ignored.
Result<ModelConfig> from_deepseek(const HfReader& r, const std::string& model_type) {
  using namespace limits;
  SC_ASSIGN_OR_RETURN(ModelConfig m, from_llama_style(r, model_type, /*mla=*/true));
  SC_ASSIGN_OR_RETURN(m.kv_lora_rank, r.required("kv_lora_rank", kMaxHidden));
  SC_ASSIGN_OR_RETURN(m.q_lora_rank, r.optional("q_lora_rank", 0, kMaxHidden, /*lo=*/0));  // null: 0
  SC_ASSIGN_OR_RETURN(m.head_dim, r.required("qk_nope_head_dim", kMaxHeadDim));
  SC_ASSIGN_OR_RETURN(m.qk_rope_head_dim, r.required("qk_rope_head_dim", kMaxHeadDim));
  SC_ASSIGN_OR_RETURN(m.v_head_dim, r.required("v_head_dim", kMaxHeadDim));
  if (!jsonf::find(r.obj, "n_routed_experts")) return m;  // dense MLP in every layer
  SC_ASSIGN_OR_RETURN(m.num_experts, r.required("n_routed_experts", limits::kMaxExperts));
  SC_ASSIGN_OR_RETURN(m.experts_per_token, r.required("num_experts_per_tok", limits::kMaxExperts));
  SC_ASSIGN_OR_RETURN(m.moe_ffn_hidden, r.required("moe_intermediate_size", kMaxFfn));
  SC_ASSIGN_OR_RETURN(m.shared_experts, r.optional("n_shared_experts", 0, limits::kMaxExperts, /*lo=*/0));
  SC_ASSIGN_OR_RETURN(m.first_dense_layers,
                      r.optional("first_k_dense_replace", 0, kMaxLayers, /*lo=*/0));
  SC_ASSIGN_OR_RETURN(int64_t freq, r.optional("moe_layer_freq", 1, kMaxLayers));
  if (freq != 1) {
    return make_error(ErrorCode::kUnsupported,
                      "MoE in every moe_layer_freq-th layer only is not supported (got " +
                      std::to_string(freq) + "; only 1: every layer after first_k_dense_replace)",
                      jsonf::join(r.path, "moe_layer_freq"));
  }
  // noaux_tc routing (V3) adds the per-expert e_score_correction_bias.
  SC_ASSIGN_OR_RETURN(std::string topk, r.text("topk_method", ""));
  m.router_bias = topk == "noaux_tc";
  return m;
}

}  // namespace

Result<ModelConfig> model_from_hf_config(const std::string& json_text, const std::string& path) {
  SC_ASSIGN_OR_RETURN(Json j, jsonf::parse_text(json_text, path));
  SC_RETURN_IF_ERROR(jsonf::expect_object(j, path));
  HfReader r{j, path};
  std::string model_type;
  if (const Json* t = jsonf::find(j, "model_type")) {
    SC_ASSIGN_OR_RETURN(model_type, jsonf::get_string(*t, jsonf::join(path, "model_type")));
  }
  const bool mixtral = model_type == "mixtral";
  const bool deepseek = model_type == "deepseek_v2" || model_type == "deepseek_v3";
  if (!mixtral && !deepseek) {
    for (const char* moe : {"num_local_experts", "n_routed_experts", "num_experts"}) {
      const Json* v = jsonf::find(j, moe);
      if (v && !(v->is_number_integer() && v->get<int64_t>() <= 1)) {
        return make_error(ErrorCode::kUnsupported,
                          "mixture-of-experts configs are supported for model_type mixtral, "
                          "deepseek_v2 and deepseek_v3 only (model_type " +
                          (model_type.empty() ? std::string("not given") : "\"" + model_type + "\"") +
                          ", " + std::string(moe) + " = " + jsonf::brief(*v) + ")",
                          jsonf::join(path, moe));
      }
    }
  }
  bool gpt2 = model_type == "gpt2" || (model_type.empty() && jsonf::find(j, "n_embd"));
  Result<ModelConfig> m = gpt2       ? from_gpt2(r)
                          : deepseek ? from_deepseek(r, model_type)
                                     : from_llama_style(r, model_type);
  if (!m.ok()) return m.error();
  if (mixtral) SC_RETURN_IF_ERROR(add_mixtral_moe(r, &*m));
  SC_RETURN_IF_ERROR(validate_model(*m, "model"));
  return m;
}


}  // namespace sc
