// Model validation, closed-form parameter count and Hugging Face
// config.json import. Presets live in presets.cc.
#include "model/model_config.h"

#include <algorithm>

#include "base/json_fields.h"

namespace sc {
namespace {

using jsonf::Json;

Status in_range(int64_t v, int64_t lo, int64_t hi, const std::string& path) {
  if (v < lo) {
    return make_error(ErrorCode::kInvalidArgument,
                      "must be >= " + std::to_string(lo) + " (got " + std::to_string(v) + ")", path);
  }
  if (v > hi) {
    return make_error(ErrorCode::kInvalidArgument,
                      "must be <= " + std::to_string(hi) + " (got " + std::to_string(v) + ")", path);
  }
  return ok_status();
}

// Parameters in 128-bit so unvalidated input cannot overflow (UB in int64).
__int128 parameters_wide(const ModelConfig& m) {
  __int128 h = m.hidden, f = m.ffn_hidden, ad = __int128(m.num_heads) * m.head_dim;
  __int128 kvd = __int128(m.num_kv_heads) * m.head_dim;
  bool bias = m.linear_bias;
  __int128 attn = h * ad + 2 * h * kvd + ad * h;   // q, k, v, o
  if (bias) attn += ad + 2 * kvd + h;
  __int128 mlp = m.mlp == MlpKind::kSwiGLU ? 3 * h * f : 2 * h * f;
  if (bias) mlp += (m.mlp == MlpKind::kSwiGLU ? 2 * f : f) + h;
  __int128 norm = m.norm == NormKind::kLayerNorm ? 2 * h : h;  // scale (+ shift)
  __int128 layer = attn + mlp + 2 * norm;
  __int128 total = layer * m.num_layers + __int128(m.vocab) * h + norm;
  if (m.position == PositionKind::kLearned) total += __int128(m.max_positions) * h;
  if (!m.tied_embeddings) total += __int128(m.vocab) * h;
  return total;
}

// ---- Hugging Face import --------------------------------------------------

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
  Result<int64_t> optional(const char* key, int64_t fallback, int64_t hi) const {
    const Json* v = jsonf::find(obj, key);
    if (!v) return fallback;
    return jsonf::get_int(*v, jsonf::join(path, key), 1, hi);
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

Result<ModelConfig> from_llama_style(const HfReader& r, const std::string& model_type) {
  using namespace limits;
  ModelConfig m;
  m.name = "hf:" + (model_type.empty() ? std::string("llama") : model_type);
  SC_ASSIGN_OR_RETURN(m.hidden, r.required("hidden_size", kMaxHidden));
  SC_ASSIGN_OR_RETURN(m.num_layers, r.required("num_hidden_layers", kMaxLayers));
  SC_ASSIGN_OR_RETURN(m.num_heads, r.required("num_attention_heads", kMaxHeads));
  SC_ASSIGN_OR_RETURN(m.ffn_hidden, r.required("intermediate_size", kMaxFfn));
  SC_ASSIGN_OR_RETURN(m.vocab, r.required("vocab_size", kMaxVocab));
  SC_ASSIGN_OR_RETURN(m.num_kv_heads, r.optional("num_key_value_heads", m.num_heads, kMaxHeads));
  SC_ASSIGN_OR_RETURN(m.max_positions, r.optional("max_position_embeddings", 2048, kMaxPositions));
  if (!jsonf::find(r.obj, "head_dim") && m.hidden % m.num_heads != 0) {
    return make_error(ErrorCode::kNotDivisible,
                      "hidden_size (" + std::to_string(m.hidden) +
                      ") is not divisible by num_attention_heads (" + std::to_string(m.num_heads) +
                      ") and head_dim is not given", jsonf::join(r.path, "num_attention_heads"));
  }
  SC_ASSIGN_OR_RETURN(m.head_dim, r.optional("head_dim", m.hidden / m.num_heads, kMaxHeadDim));
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

}  // namespace

int64_t closed_form_parameters(const ModelConfig& m) {
  __int128 p = parameters_wide(m);
  constexpr __int128 kMax = INT64_MAX;
  return static_cast<int64_t>(std::clamp<__int128>(p, 0, kMax));
}

Status validate_model(const ModelConfig& m, const std::string& path) {
  using namespace limits;
  auto at = [&](const char* f) { return jsonf::join(path, f); };
  SC_RETURN_IF_ERROR(in_range(m.num_layers, 1, kMaxLayers, at("num_layers")));
  SC_RETURN_IF_ERROR(in_range(m.hidden, 1, kMaxHidden, at("hidden")));
  SC_RETURN_IF_ERROR(in_range(m.num_heads, 1, kMaxHeads, at("num_heads")));
  SC_RETURN_IF_ERROR(in_range(m.num_kv_heads, 1, m.num_heads, at("num_kv_heads")));
  SC_RETURN_IF_ERROR(in_range(m.head_dim, 1, kMaxHeadDim, at("head_dim")));
  SC_RETURN_IF_ERROR(in_range(m.ffn_hidden, 1, kMaxFfn, at("ffn_hidden")));
  SC_RETURN_IF_ERROR(in_range(m.vocab, 1, kMaxVocab, at("vocab")));
  SC_RETURN_IF_ERROR(in_range(m.max_positions, 1, kMaxPositions, at("max_positions")));
  if (m.num_heads % m.num_kv_heads != 0) {
    return make_error(ErrorCode::kNotDivisible,
                      "num_heads (" + std::to_string(m.num_heads) +
                      ") is not divisible by num_kv_heads (" + std::to_string(m.num_kv_heads) + ")",
                      at("num_kv_heads"));
  }
  if (m.num_heads * m.head_dim > kMaxHidden) {
    return make_error(ErrorCode::kInvalidArgument,
                      jsonf::cap_message("num_heads x head_dim", double(m.num_heads * m.head_dim),
                                         double(kMaxHidden)), at("head_dim"));
  }
  double params = static_cast<double>(parameters_wide(m));
  if (params > kMaxParameters) {
    return make_error(ErrorCode::kInvalidArgument,
                      jsonf::cap_message("closed-form parameter count", params, kMaxParameters), path);
  }
  return ok_status();
}

Result<ModelConfig> model_from_hf_config(const std::string& json_text, const std::string& path) {
  SC_ASSIGN_OR_RETURN(Json j, jsonf::parse_text(json_text, path));
  SC_RETURN_IF_ERROR(jsonf::expect_object(j, path));
  HfReader r{j, path};
  std::string model_type;
  if (const Json* t = jsonf::find(j, "model_type")) {
    SC_ASSIGN_OR_RETURN(model_type, jsonf::get_string(*t, jsonf::join(path, "model_type")));
  }
  for (const char* moe : {"num_local_experts", "n_routed_experts", "num_experts"}) {
    const Json* v = jsonf::find(j, moe);
    if (v && !(v->is_number_integer() && v->get<int64_t>() <= 1)) {
      return make_error(ErrorCode::kUnsupported,
                        "mixture-of-experts configs are not supported (" + std::string(moe) + " = " +
                        jsonf::brief(*v) + ")", jsonf::join(path, moe));
    }
  }
  bool gpt2 = model_type == "gpt2" || (model_type.empty() && jsonf::find(j, "n_embd"));
  Result<ModelConfig> m = gpt2 ? from_gpt2(r) : from_llama_style(r, model_type);
  if (!m.ok()) return m.error();
  SC_RETURN_IF_ERROR(validate_model(*m, "model"));
  return m;
}

}  // namespace sc
