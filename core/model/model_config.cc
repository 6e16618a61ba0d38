// Model validation, closed-form parameter count and Hugging Face
// config.json import. Presets live in presets.cc.
#include "model/model_config.h"

#include <algorithm>
#include <cstdio>
#include <utility>

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

// The capacity factor's cap (the other caps, limits::kMaxExperts included, are in
// base/json_fields.h, "far above any real model").
constexpr double kMaxCapacityFactor = 64;

std::string fmt(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

// ---- closed-form parameter count ------------------------------------------
// Everything in 128-bit so unvalidated input cannot overflow (UB in int64).

__int128 linear(__int128 in, __int128 out, bool bias) { return in * out + (bias ? out : 0); }

__int128 norm_params(const ModelConfig& m, __int128 width) {
  return m.norm == NormKind::kLayerNorm ? 2 * width : width;  // scale (+ shift)
}

// One MLP of width f (a dense MLP, or one expert).
__int128 mlp_params(const ModelConfig& m, __int128 f) {
  const __int128 h = m.hidden;
  const bool b = m.linear_bias;
  __int128 in = linear(h, f, b) * (m.mlp == MlpKind::kSwiGLU ? 2 : 1);  // (gate,) up
  return in + linear(f, h, b);                                           // down
}

__int128 attention_params(const ModelConfig& m) {
  const __int128 h = m.hidden, a = m.num_heads;
  const bool b = m.linear_bias;
  if (!m.is_mla()) {
    const __int128 ad = a * m.head_dim, kvd = __int128(m.num_kv_heads) * m.head_dim;
    return linear(h, ad, b) + 2 * linear(h, kvd, b) + linear(ad, h, b);  // q, k, v, o
  }
  // DeepSeek MLA: q = W_qb norm(W_qa x) (or W_q x); [c_kv, k_rope] = W_kva x;
  // [k_nope, v] = W_kvb norm(c_kv); o = W_o attn.
  const __int128 dn = m.head_dim, dr = m.qk_rope_head_dim, dv = m.v_head_dim;
  const __int128 qr = m.q_lora_rank, kvr = m.kv_lora_rank;
  __int128 q = qr > 0 ? linear(h, qr, b) + norm_params(m, qr) + linear(qr, a * (dn + dr), b)
                      : linear(h, a * (dn + dr), b);
  __int128 kv = linear(h, kvr + dr, b) + norm_params(m, kvr) + linear(kvr, a * (dn + dv), b);
  return q + kv + linear(a * dv, h, b);
}

struct WideCount {
  __int128 total = 0;
  __int128 inactive = 0;  // routed experts a token is not sent to
};

WideCount parameters_wide(const ModelConfig& m) {
  const __int128 h = m.hidden, L = m.num_layers;
  const __int128 dense_layers =
      m.is_moe() ? std::clamp<__int128>(m.first_dense_layers, 0, std::max<__int128>(L, 0)) : L;
  const __int128 moe_layers = L - dense_layers;
  const __int128 E = m.num_experts;
  const __int128 expert = mlp_params(m, m.moe_ffn_hidden);
  // Routed experts, the shared experts (one MLP of width shared x fe, as
  // Megatron-Core's SharedExpertMLP: with biases, one output bias), router
  // weight h x E (+ per-expert bias).
  const __int128 shared = m.shared_experts > 0 ? mlp_params(m, __int128(m.shared_experts) * m.moe_ffn_hidden) : 0;
  const __int128 moe_mlp = m.is_moe() ? E * expert + shared + h * E + (m.router_bias ? E : 0) : 0;
  const __int128 layer = attention_params(m) + 2 * norm_params(m, h);
  WideCount c;
  c.total = layer * L + dense_layers * mlp_params(m, m.ffn_hidden) + moe_layers * moe_mlp +
            __int128(m.vocab) * h + norm_params(m, h);
  if (m.position == PositionKind::kLearned) c.total += __int128(m.max_positions) * h;
  if (!m.tied_embeddings) c.total += __int128(m.vocab) * h;
  if (m.is_moe()) c.inactive = moe_layers * (E - m.experts_per_token) * expert;
  return c;
}

int64_t clamp_to_int64(__int128 p) {
  constexpr __int128 kMax = INT64_MAX;
  return static_cast<int64_t>(std::clamp<__int128>(p, 0, kMax));
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

int64_t closed_form_parameters(const ModelConfig& m) {
  return clamp_to_int64(parameters_wide(m).total);
}

int64_t closed_form_active_parameters(const ModelConfig& m) {
  WideCount c = parameters_wide(m);
  return clamp_to_int64(c.total - c.inactive);
}

Status validate_model(const ModelConfig& m, const std::string& path) {
  using namespace limits;
  using std::to_string;
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
                      "num_heads (" + to_string(m.num_heads) +
                      ") is not divisible by num_kv_heads (" + to_string(m.num_kv_heads) + ")",
                      at("num_kv_heads"));
  }

  // Multi-head latent attention.
  SC_RETURN_IF_ERROR(in_range(m.kv_lora_rank, 0, kMaxHidden, at("kv_lora_rank")));
  SC_RETURN_IF_ERROR(in_range(m.q_lora_rank, 0, kMaxHidden, at("q_lora_rank")));
  SC_RETURN_IF_ERROR(in_range(m.qk_rope_head_dim, 0, kMaxHeadDim, at("qk_rope_head_dim")));
  SC_RETURN_IF_ERROR(in_range(m.v_head_dim, 0, kMaxHeadDim, at("v_head_dim")));
  if (!m.is_mla()) {
    const std::pair<const char*, int64_t> mla_fields[] = {
        {"q_lora_rank", m.q_lora_rank}, {"qk_rope_head_dim", m.qk_rope_head_dim},
        {"v_head_dim", m.v_head_dim}};
    for (const auto& [field, v] : mla_fields) {
      if (v != 0) {
        return make_error(ErrorCode::kInvalidArgument,
                          std::string(field) + " (" + to_string(v) +
                          ") is a multi-head latent attention size and needs kv_lora_rank > 0 "
                          "(got kv_lora_rank = 0); leave it 0 for standard attention",
                          at(field));
      }
    }
  } else {
    if (m.qk_rope_head_dim < 1) {
      return make_error(ErrorCode::kInvalidArgument,
                        "must be >= 1 with multi-head latent attention (kv_lora_rank = " +
                        to_string(m.kv_lora_rank) + ") (got " + to_string(m.qk_rope_head_dim) + ")",
                        at("qk_rope_head_dim"));
    }
    if (m.v_head_dim < 1) {
      return make_error(ErrorCode::kInvalidArgument,
                        "must be >= 1 with multi-head latent attention (kv_lora_rank = " +
                        to_string(m.kv_lora_rank) + ") (got " + to_string(m.v_head_dim) + ")",
                        at("v_head_dim"));
    }
    if (m.num_kv_heads != m.num_heads) {
      return make_error(ErrorCode::kInvalidArgument,
                        "multi-head latent attention has one key/value head per query head: "
                        "num_kv_heads (" + to_string(m.num_kv_heads) + ") must equal num_heads (" +
                        to_string(m.num_heads) + ")", at("num_kv_heads"));
    }
  }
  // Both factors are capped at 2^16..2^20 above: the products fit int64.
  if (m.num_heads * m.qk_head_dim() > kMaxHidden) {
    return make_error(ErrorCode::kInvalidArgument,
                      jsonf::cap_message(m.is_mla() ? "num_heads x (head_dim + qk_rope_head_dim)"
                                                    : "num_heads x head_dim",
                                         double(m.num_heads * m.qk_head_dim()), double(kMaxHidden)),
                      at("head_dim"));
  }
  if (m.num_heads * m.value_head_dim() > kMaxHidden) {
    return make_error(ErrorCode::kInvalidArgument,
                      jsonf::cap_message("num_heads x v_head_dim", double(m.num_heads * m.value_head_dim()),
                                         double(kMaxHidden)), at("v_head_dim"));
  }

  // Mixture of experts.
  SC_RETURN_IF_ERROR(in_range(m.num_experts, 0, limits::kMaxExperts, at("num_experts")));
  if (!m.is_moe()) {
    const std::pair<const char*, int64_t> moe_fields[] = {
        {"experts_per_token", m.experts_per_token}, {"moe_ffn_hidden", m.moe_ffn_hidden},
        {"shared_experts", m.shared_experts}, {"first_dense_layers", m.first_dense_layers}};
    for (const auto& [field, v] : moe_fields) {
      if (v != 0) {
        return make_error(ErrorCode::kInvalidArgument,
                          std::string(field) + " (" + to_string(v) +
                          ") is a mixture-of-experts setting and needs num_experts > 0 "
                          "(got num_experts = 0)", at(field));
      }
    }
    if (m.router_bias) {
      return make_error(ErrorCode::kInvalidArgument,
                        "router_bias is a mixture-of-experts setting and needs num_experts > 0 "
                        "(got num_experts = 0)", at("router_bias"));
    }
    if (m.capacity_factor != 1.0) {
      return make_error(ErrorCode::kInvalidArgument,
                        "capacity_factor (" + fmt(m.capacity_factor) +
                        ") is a mixture-of-experts setting and needs num_experts > 0 "
                        "(got num_experts = 0); leave it 1", at("capacity_factor"));
    }
  } else {
    if (m.experts_per_token < 1 || m.experts_per_token > m.num_experts) {
      return make_error(ErrorCode::kInvalidArgument,
                        "must be >= 1 and <= num_experts (" + to_string(m.num_experts) + ") (got " +
                        to_string(m.experts_per_token) + ")", at("experts_per_token"));
    }
    if (m.moe_ffn_hidden < 1) {
      return make_error(ErrorCode::kInvalidArgument,
                        "must be >= 1 when num_experts > 0 (got " + to_string(m.moe_ffn_hidden) +
                        "): it is the width of every expert's MLP", at("moe_ffn_hidden"));
    }
    SC_RETURN_IF_ERROR(in_range(m.moe_ffn_hidden, 1, kMaxFfn, at("moe_ffn_hidden")));
    SC_RETURN_IF_ERROR(in_range(m.shared_experts, 0, limits::kMaxExperts, at("shared_experts")));
    if (m.first_dense_layers < 0 || m.first_dense_layers > m.num_layers) {
      return make_error(ErrorCode::kInvalidArgument,
                        "must be >= 0 and <= num_layers (" + to_string(m.num_layers) + ") (got " +
                        to_string(m.first_dense_layers) + ")", at("first_dense_layers"));
    }
    if (!(m.capacity_factor >= 1 && m.capacity_factor <= kMaxCapacityFactor)) {
      return make_error(ErrorCode::kInvalidArgument,
                        "must be finite, >= 1 and <= " + fmt(kMaxCapacityFactor) + " (got " +
                        fmt(m.capacity_factor) + "); routing is modelled as uniform, so the "
                        "factor only pads expert buffers and a value below 1 would drop tokens",
                        at("capacity_factor"));
    }
  }

  double params = static_cast<double>(parameters_wide(m).total);
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
