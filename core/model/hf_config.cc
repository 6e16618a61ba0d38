// Hugging Face config.json import, one reader per model_type (docs/hf-import.md):
// exact or refused.
#include "model/model_config.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>

#include "base/json_fields.h"
#include "model/hf_hybrid.h"

namespace sc {
namespace {

using jsonf::Json;


struct HfReader {
  const Json& obj;
  std::string path;

  Result<int64_t> required(const char* key, int64_t hi) const {
    const Json* v = jsonf::find(obj, key);
    if (!v) {
      // null (JSON's, or Python's Infinity / NaN, which the import reads as null) is a value, not a missing key.
      return make_error(ErrorCode::kInvalidArgument,
                        obj.contains(key) ? "must be an integer (got null; Infinity and NaN read as null)"
                                          : "required key is missing",
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
  Result<double> number(const char* key, double fallback) const {
    const Json* v = jsonf::find(obj, key);
    if (!v) return fallback;
    return jsonf::get_number_in(*v, jsonf::join(path, key), 1e-9, 1e9);
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

// The import's bookkeeping: strict mode and what was recognised.
struct Import {
  bool strict = true;
  std::vector<std::string> features, warnings;

  // A key whose value would change compute or memory and is not modelled:
  // an error naming it (strict), or a listed warning.
  Status unmodelled(const HfReader& r, const char* key, const std::string& what) {
    const Json* v = jsonf::find(r.obj, key);
    const std::string shown = std::string(key) + " = " + (v ? jsonf::brief(*v) : std::string("(default)"));
    if (strict) {
      return make_error(ErrorCode::kUnsupported,
                        what + " is not modelled (" + shown +
                        "); the model section's \"strict\": false imports it anyway with a warning",
                        jsonf::join(r.path, key));
    }
    warnings.push_back(shown + ": " + what + " is not modelled");
    return ok_status();
  }
};

bool present(const HfReader& r, const char* key) {
  const Json* v = jsonf::find(r.obj, key);
  return v && !v->is_null();
}

// mla: DeepSeek's latent attention, whose head sizes come from their own
// keys (from_deepseek); head_dim and num_key_value_heads are then not read.
// geglu: the family's gated MLP uses the tanh GeLU (Gemma) instead of SiLU.
Result<ModelConfig> from_llama_style(const HfReader& r, const std::string& model_type,
                                     bool mla = false, bool tied_default = false, bool geglu = false) {
  using namespace limits;
  ModelConfig m;
  m.name = "hf:" + (model_type.empty() ? std::string("llama") : model_type);
  SC_ASSIGN_OR_RETURN(m.hidden, r.required("hidden_size", kMaxHidden));
  SC_ASSIGN_OR_RETURN(m.num_layers, r.required("num_hidden_layers", kMaxLayers));
  SC_ASSIGN_OR_RETURN(m.num_heads, r.required("num_attention_heads", kMaxHeads));
  SC_ASSIGN_OR_RETURN(m.ffn_hidden, r.required("intermediate_size", kMaxFfn));
  SC_ASSIGN_OR_RETURN(m.vocab, r.required("vocab_size", kMaxVocab));
  // transformers' defaults when the key is absent: LlamaConfig 2048,
  // MistralConfig 4096 x 32.
  SC_ASSIGN_OR_RETURN(m.max_positions,
                      r.optional("max_position_embeddings", model_type == "mistral" ? 131072 : 2048, kMaxPositions));
  if (mla) {
    m.num_kv_heads = m.num_heads;  // head sizes: from_deepseek
  } else {
    SC_ASSIGN_OR_RETURN(m.num_kv_heads, r.optional("num_key_value_heads", m.num_heads, kMaxHeads));
    if (!present(r, "head_dim") && m.hidden % m.num_heads != 0) {
      return make_error(ErrorCode::kNotDivisible,
                        "hidden_size (" + std::to_string(m.hidden) +
                        ") is not divisible by num_attention_heads (" + std::to_string(m.num_heads) +
                        ") and head_dim is not given", jsonf::join(r.path, "num_attention_heads"));
    }
    SC_ASSIGN_OR_RETURN(m.head_dim, r.optional("head_dim", m.hidden / m.num_heads, kMaxHeadDim));
  }
  // Gemma names it hidden_activation (newer files) or hidden_act.
  for (const char* key : {"hidden_act", "hidden_activation"}) {
    const Json* act = jsonf::find(r.obj, key);
    if (!act || act->is_null()) continue;
    SC_ASSIGN_OR_RETURN(std::string a, jsonf::get_string(*act, jsonf::join(r.path, key)));
    const bool ok = geglu ? (a == "gelu" || a == "gelu_pytorch_tanh" || a == "gelu_new")
                          : (a == "silu" || a == "swish");
    if (!ok) {
      return make_error(ErrorCode::kUnsupported,
                        "gated MLP with activation \"" + echo_text(a) + "\" is not supported (only " +
                            (geglu ? "gelu / gelu_pytorch_tanh, i.e. GeGLU" : "silu, i.e. SwiGLU") + ")",
                        jsonf::join(r.path, key));
    }
  }
  m.mlp = geglu ? MlpKind::kGeGLU : MlpKind::kSwiGLU;
  bool layer_norm = !jsonf::find(r.obj, "rms_norm_eps") &&
                    (jsonf::find(r.obj, "layer_norm_eps") || jsonf::find(r.obj, "layer_norm_epsilon"));
  m.norm = layer_norm ? NormKind::kLayerNorm : NormKind::kRMSNorm;
  m.position = PositionKind::kRope;
  SC_ASSIGN_OR_RETURN(m.tied_embeddings, r.flag("tie_word_embeddings", tied_default));
  // One bias switch for all linears (llama: attention_bias on q,k,v,o and
  // mlp_bias on the MLP); a config with only one of them is refused by
  // check_llama_biases.
  SC_ASSIGN_OR_RETURN(bool attn_bias, r.flag("attention_bias", false));
  SC_ASSIGN_OR_RETURN(bool mlp_bias, r.flag("mlp_bias", false));
  m.linear_bias = attn_bias || mlp_bias;
  SC_ASSIGN_OR_RETURN(m.dropout, r.any_positive({"attention_dropout", "hidden_dropout", "resid_pdrop",
                                                 "embd_pdrop"}, false));
  // Every family read here is trained with fused attention (FlashAttention /
  // cuDNN / SDPA); Gemma-2's score soft-capping turns it off again below.
  m.flash_attention = true;
  return m;
}

// attention_bias without mlp_bias (or the reverse) is not one switch.
Status check_llama_biases(const HfReader& r, Import& im) {
  SC_ASSIGN_OR_RETURN(bool attn_bias, r.flag("attention_bias", false));
  SC_ASSIGN_OR_RETURN(bool mlp_bias, r.flag("mlp_bias", false));
  if (attn_bias == mlp_bias) return ok_status();
  return im.unmodelled(r, attn_bias ? "attention_bias" : "mlp_bias",
                       "biases on the attention linears only or on the MLP only (the model has one switch)");
}

// Phi-3's partial_rotary_factor (Phi-4-mini: 0.75): RoPE on the first
// int(head_dim x factor) features of each head (transformers' rotary_ndims).
Status read_partial_rotary(const HfReader& r, Import& im, ModelConfig* m) {
  const char* key = "partial_rotary_factor";
  SC_ASSIGN_OR_RETURN(double f, jsonf::get_number_in(*jsonf::find(r.obj, key), jsonf::join(r.path, key), 1e-9, 1));
  const int64_t dim = static_cast<int64_t>(static_cast<double>(m->head_dim) * f);
  if (dim < 2 || dim % 2 != 0) {
    return im.unmodelled(r, key, "partial rotary over an odd or empty number of features (" +
                                     std::to_string(dim) + " of head_dim " + std::to_string(m->head_dim) + ")");
  }
  if (dim != m->head_dim) {
    m->rotary_dim = dim;
    im.features.push_back("partial rotary (" + std::to_string(dim) + " of " + std::to_string(m->head_dim) +
                          " features per head)");
  }
  return ok_status();
}

// Keys of the llama-like families that change compute or memory and have
// no model option yet: refused (strict) or listed.
// windowed_family: sliding_window (when not null) windows every layer
// (mistral, mixtral, phi3), modelled as ModelConfig::sliding_window.
// pattern_family: layer_types and soft-capping are read by the family (gemma2/3).
Status check_common(const HfReader& r, Import& im, bool windowed_family, ModelConfig* m,
                    bool pattern_family = false, bool partial_rotary_family = false) {
  if (windowed_family && present(r, "sliding_window")) {
    SC_ASSIGN_OR_RETURN(int64_t w, r.optional("sliding_window", 0, limits::kMaxPositions));
    if (w < m->max_positions) {
      m->sliding_window = w;
      im.features.push_back("sliding-window attention (" + std::to_string(w) + ")");
    } else {  // Phi-4-mini: 262144 over 131072 positions; no query ever reaches past it
      im.features.push_back("sliding_window " + std::to_string(w) + " >= max_position_embeddings: full attention");
    }
  }
  // One dropout switch covers the attention and the hidden dropouts.
  SC_ASSIGN_OR_RETURN(bool attn_drop, r.any_positive({"attention_dropout"}, false));
  SC_ASSIGN_OR_RETURN(bool hidden_drop, r.any_positive({"hidden_dropout", "resid_pdrop", "embd_pdrop"}, false));
  if (attn_drop != hidden_drop) {
    SC_RETURN_IF_ERROR(im.unmodelled(r, attn_drop ? "attention_dropout" : "hidden_dropout",
                                     std::string(attn_drop ? "attention" : "hidden") +
                                         "-only dropout (the model's dropout switch covers both; dropout is on)"));
  }
  if (!pattern_family) {
    for (const char* key : {"attn_logit_softcapping", "final_logit_softcapping"}) {
      if (present(r, key)) SC_RETURN_IF_ERROR(im.unmodelled(r, key, "logit soft-capping (tanh)"));
    }
  }
  if (const Json* v = jsonf::find(r.obj, "partial_rotary_factor")) {
    if (!(v->is_number() && v->get<double>() == 1.0)) {
      if (partial_rotary_family) {
        SC_RETURN_IF_ERROR(read_partial_rotary(r, im, m));
      } else {
        SC_RETURN_IF_ERROR(im.unmodelled(r, "partial_rotary_factor", "partial rotary embedding"));
      }
    }
  }
  if (const Json* v = jsonf::find(r.obj, "layer_types"); v && !pattern_family) {
    // Must spell the layout read from the other keys (full everywhere, or
    // the windowed layers of sliding_window / max_window_layers).
    // One entry per layer, as transformers checks (layer_type_validation).
    if (v->is_array() && static_cast<int64_t>(v->size()) != m->num_layers)
      return make_error(ErrorCode::kInvalidArgument,
                        "has " + std::to_string(v->size()) + " entries for num_hidden_layers " +
                            std::to_string(m->num_layers) + " (one per layer)",
                        jsonf::join(r.path, "layer_types"));
    bool same = v->is_array();
    for (size_t l = 0; same && l < v->size(); ++l) {
      const Json& e = (*v)[l];
      same = e.is_string() && e.get<std::string>() == (m->windowed_layer(static_cast<int64_t>(l))
                                                           ? "sliding_attention" : "full_attention");
    }
    if (!same) {
      SC_RETURN_IF_ERROR(im.unmodelled(r, "layer_types", "per-layer attention types other than the layout "
                                                         "sliding_window (and max_window_layers) give"));
    }
  }
  if (present(r, "quantization_config")) {
    im.features.push_back("quantization_config ignored: the job's dtype sets the bytes per parameter");
  }
  return ok_status();
}

// Qwen2/Qwen3's windowing is on only with use_sliding_window: then layers
// l >= max_window_layers attend to the last sliding_window keys
// (transformers' layer_types rule); Qwen2Config's defaults 4096 and 28.
Status read_qwen_window(const HfReader& r, Import& im, ModelConfig* m) {
  SC_ASSIGN_OR_RETURN(bool on, r.flag("use_sliding_window", false));
  if (!on) return ok_status();
  SC_ASSIGN_OR_RETURN(int64_t w, r.optional("sliding_window", 4096, limits::kMaxPositions));
  SC_ASSIGN_OR_RETURN(int64_t first, r.optional("max_window_layers", 28, limits::kMaxLayers, /*lo=*/0));
  if (first >= m->num_layers) {
    im.features.push_back("use_sliding_window with max_window_layers " + std::to_string(first) + " >= " +
                          std::to_string(m->num_layers) + " layers: no layer windowed");
    return ok_status();
  }
  m->sliding_window = w;
  m->window_first_layer = first;
  im.features.push_back("sliding-window attention (" + std::to_string(w) + ") on layers " + std::to_string(first) +
                        ".." + std::to_string(m->num_layers - 1));
  return ok_status();
}

// Qwen MoE layer rule: layer i is MoE iff i is not in mlp_only_layers and
// (i + 1) % decoder_sparse_step == 0; other layers keep a dense MLP of
// intermediate_size. A leading run 0..k-1 is first_dense_layers = k, other
// indices dense_layers, the step moe_layer_step.
Status qwen_moe_layers(const HfReader& r, Import& im, ModelConfig* m) {
  SC_ASSIGN_OR_RETURN(int64_t step, r.optional("decoder_sparse_step", 1, limits::kMaxLayers));
  m->moe_layer_step = step >= 2 ? step : 0;
  if (step >= 2) im.features.push_back("MoE on layers l with (l + 1) % " + std::to_string(step) + " = 0 (decoder_sparse_step)");
  m->first_dense_layers = 0;
  if (const Json* v = jsonf::find(r.obj, "mlp_only_layers")) {
    const std::string key = jsonf::join(r.path, "mlp_only_layers");
    if (!v->is_array()) return make_error(ErrorCode::kInvalidArgument, "must be an array of layer indices", key);
    std::vector<int64_t> layers;
    for (size_t i = 0; i < v->size(); ++i) {
      SC_ASSIGN_OR_RETURN(int64_t l, jsonf::get_int((*v)[i], key + "[" + std::to_string(i) + "]", 0,
                                                    limits::kMaxLayers - 1));
      layers.push_back(l);
    }
    std::sort(layers.begin(), layers.end());
    layers.erase(std::unique(layers.begin(), layers.end()), layers.end());
    // transformers reads the list per existing layer: an index past
    // num_hidden_layers names no layer and changes nothing.
    if (m->num_layers > 0 && !layers.empty() && layers.back() >= m->num_layers) {
      const auto past = std::lower_bound(layers.begin(), layers.end(), m->num_layers);
      im.features.push_back(std::to_string(layers.end() - past) + " mlp_only_layers index(es) from " +
                            std::to_string(*past) + " on: past num_hidden_layers (" + std::to_string(m->num_layers) +
                            "), no such layer");
      layers.erase(past, layers.end());
    }
    size_t k = 0;
    while (k < layers.size() && layers[k] == static_cast<int64_t>(k)) ++k;
    m->first_dense_layers = static_cast<int64_t>(k);
    m->dense_layers.assign(layers.begin() + static_cast<std::ptrdiff_t>(k), layers.end());
    if (!layers.empty()) {
      std::string list;
      for (int64_t l : layers) list += (list.empty() ? "" : ", ") + std::to_string(l);
      im.features.push_back("dense MLP on layers " + list + " (mlp_only_layers)");
    }
  }
  return ok_status();
}

// OLMo-2: llama shapes, a norm after each sublayer and none before
// (post_attention_layernorm, post_feedforward_layernorm), and q/k RMSNorms
// over all heads' features (a x d and kv x d), untied.
void read_olmo2(Import& im, ModelConfig* m) {
  m->post_norms = true;
  m->qk_norm = true;
  m->qk_norm_across_heads = true;
  im.features.push_back("post-sublayer norms (no pre-norm)");
  im.features.push_back("q/k RMSNorm over all heads");
}

// Gemma3TextConfig's defaults (transformers), for the keys a multimodal
// gemma3 config's text_config leaves out (gemma-3-4b-it names six).
nlohmann::json gemma3_text_config(const Json& text) {
  nlohmann::json t = text;
  const std::pair<const char*, nlohmann::json> defaults[] = {
      {"vocab_size", 262208}, {"hidden_size", 2304}, {"intermediate_size", 9216}, {"num_hidden_layers", 26},
      {"num_attention_heads", 8}, {"num_key_value_heads", 4}, {"head_dim", 256},
      {"max_position_embeddings", 131072}, {"sliding_window", 4096}, {"rms_norm_eps", 1e-6},
      {"hidden_activation", "gelu_pytorch_tanh"}};
  for (const auto& [key, value] : defaults)
    if (!t.contains(key)) t[key] = value;
  t["model_type"] = "gemma3_text";
  return t;
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

// Python's json module writes float('inf') / nan as the bare words
// Infinity, -Infinity and NaN, which standard JSON (and our parser) rejects;
// real configs carry them (Nemotron-H's time_step_limit). Outside strings
// they are read as null; `replaced` counts them.
std::string tolerate_nonstandard_numbers(const std::string& text, int* replaced) {
  std::string out;
  out.reserve(text.size());
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      out += c;
      if (c == '\\' && i + 1 < text.size()) out += text[++i];
      else if (c == '"') in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    for (const char* word : {"-Infinity", "Infinity", "NaN"}) {
      const size_t n = std::char_traits<char>::length(word);
      if (text.compare(i, n, word) == 0) {
        out += "null";
        i += n - 1;
        ++*replaced;
        goto next;
      }
    }
    out += c;
  next:;
  }
  return out;
}

// Gemma-3 (text): GeGLU, tied, per-head q/k norms, four norms per layer,
// and local (sliding_window) layers with a global one every
// sliding_window_pattern-th (default 6); layer_types, when given, must
// spell that same pattern.
// Gemma-2 the same without q/k norms, with local/global alternating
// (even layers local: pattern 2) and soft-capping of the attention scores
// (attn_logit_softcapping, default 50) and logits (final_logit_softcapping,
// default 30); null turns either off.
Status read_gemma23_layers(const HfReader& r, Import& im, bool gemma2, ModelConfig* m) {
  m->qk_norm = !gemma2;
  m->sandwich_norms = true;
  SC_ASSIGN_OR_RETURN(m->sliding_window, r.optional("sliding_window", 4096, limits::kMaxPositions));
  if (gemma2) {
    m->window_pattern = 2;
  } else {
    SC_ASSIGN_OR_RETURN(m->window_pattern, r.optional("sliding_window_pattern", 6, limits::kMaxLayers));
  }
  for (auto [key, fallback, out] : {std::tuple{"attn_logit_softcapping", 50.0, &m->attn_softcap},
                                    std::tuple{"final_logit_softcapping", 30.0, &m->final_softcap}}) {
    const Json* v = jsonf::find(r.obj, key);  // nullptr for null too
    if (!v && (r.obj.contains(key) || !gemma2)) continue;  // null: off; Gemma-3: off unless given
    double c = fallback;
    if (v) {
      SC_ASSIGN_OR_RETURN(c, jsonf::get_number_in(*v, jsonf::join(r.path, key), 1e-6, 1e9));
    }
    *out = c;
  }
  if (const Json* v = jsonf::find(r.obj, "layer_types"); v && !v->is_null()) {
    bool ok = v->is_array() && static_cast<int64_t>(v->size()) == m->num_layers;
    for (int64_t l = 0; ok && l < m->num_layers; ++l) {
      const Json& e = (*v)[static_cast<size_t>(l)];
      ok = e.is_string() &&
           e.get<std::string>() == (m->windowed_layer(l) ? "sliding_attention" : "full_attention");
    }
    if (!ok) {
      SC_RETURN_IF_ERROR(im.unmodelled(r, "layer_types",
                                       "a local/global layout other than one global layer every "
                                       "sliding_window_pattern-th"));
    }
  }
  im.features.push_back("GeGLU MLP");
  if (m->qk_norm) im.features.push_back("per-head q/k RMSNorm");
  im.features.push_back("pre- and post-sublayer norms (4 per layer)");
  if (m->attn_softcap > 0) im.features.push_back("attention score soft-capping");
  if (m->final_softcap > 0) im.features.push_back("final logit soft-capping");
  im.features.push_back("sliding-window attention (" + std::to_string(m->sliding_window) +
                        ") with one global layer in " + std::to_string(m->window_pattern));
  m->embedding_multiplier = std::sqrt(static_cast<double>(m->hidden));
  im.features.push_back("embedding scaled by sqrt(hidden)");
  // The cap sits between the scores and the softmax: modelled unfused.
  if (m->attn_softcap > 0) m->flash_attention = false;
  return ok_status();
}

// Which top-level keys an import reads, and which it leaves out on purpose
// (docs/hf-import.md, "Keys the import does not read"). A key in neither
// list is reported in hf_warnings: it may change the model and the import
// cannot tell (a multimodal config's vision_config under a text
// model_type, a misspelt key, a key of a newer transformers). Null values
// are never reported (nothing to read).

// Keys without effect on training compute or memory, in every family:
// names and versions, token ids, dtype (the job's dtype sets bytes per
// element), initialisation, norm epsilons, rotary frequencies and scaling
// (no FLOPs or bytes change with the angles), inference-only switches, MoE
// loss coefficients and router output flags, generation defaults.
constexpr const char* kIgnoredKeys =
    " _name_or_path architectures auto_map transformers_version torch_dtype dtype model_type"
    " bos_token_id eos_token_id pad_token_id sep_token_id unk_token_id decoder_start_token_id"
    " boi_token_index eoi_token_index image_token_index"
    " initializer_range initializer_factor rms_norm_eps layer_norm_eps layer_norm_epsilon"
    " rope_theta rope_scaling rope_parameters rope_local_base_freq original_max_position_embeddings"
    " use_cache cache_implementation num_logits_to_keep use_mamba_kernels pretraining_tp"
    " router_aux_loss_coef router_z_loss_coef output_router_logits"
    " return_dict output_attentions output_hidden_states torchscript use_bfloat16"
    " id2label label2id problem_type finetuning_task tokenizer_class prefix task_specific_params"
    " max_length min_length do_sample num_beams temperature top_k top_p repetition_penalty ";

// The keys each family's reader reads (or checks and refuses), beside the
// ignored ones. "llama-style" is every family built by from_llama_style.
struct FamilyKeys {
  const char* families;  // space-separated model_types
  const char* keys;      // space-separated keys
};
constexpr FamilyKeys kFamilyKeys[] = {
    {" llama mistral mixtral qwen2 qwen2_moe qwen3 qwen3_moe gemma gemma2 gemma3_text olmo2 phi3 granite"
     " deepseek_v2 deepseek_v3 ",
     " hidden_size num_hidden_layers num_attention_heads intermediate_size vocab_size max_position_embeddings"
     " num_key_value_heads head_dim hidden_act hidden_activation tie_word_embeddings attention_bias mlp_bias"
     " attention_dropout hidden_dropout resid_pdrop embd_pdrop attn_logit_softcapping final_logit_softcapping"
     " partial_rotary_factor layer_types quantization_config num_local_experts n_routed_experts num_experts "},
    {" mistral mixtral phi3 gemma2 gemma3_text qwen2 qwen2_moe qwen3 qwen3_moe ", " sliding_window "},
    {" mixtral qwen2_moe qwen3_moe deepseek_v2 deepseek_v3 ", " num_experts_per_tok norm_topk_prob "},
    // use_mrope: Qwen2-VL's multimodal rotary sections (angles only).
    {" qwen2 qwen2_moe qwen3 qwen3_moe ", " use_sliding_window max_window_layers use_mrope "},
    {" qwen2_moe qwen3_moe ", " moe_intermediate_size decoder_sparse_step mlp_only_layers "},
    {" qwen2_moe ", " shared_expert_intermediate_size "},
    // query_pre_attn_scalar replaces 1/sqrt(d) (no op); sliding_window_size:
    // Gemma-2's older spelling of sliding_window.
    {" gemma2 gemma3_text ", " query_pre_attn_scalar sliding_window_size "},
    {" gemma3_text ", " sliding_window_pattern "},
    // phi3: interpolate_factor scales the rotary angles; full_attn_mod and
    // lm_head_bias are checked by kNeutralKeys.
    {" phi3 ", " interpolate_factor full_attn_mod lm_head_bias "},
    {" granite ", " embedding_multiplier residual_multiplier logits_scaling attention_multiplier "},
    // The routing rules below change which experts, not how many (no cost);
    // ep_size is the checkpoint's own layout; num_nextn_predict_layers: the
    // MTP module, not part of the model (above).
    {" deepseek_v2 deepseek_v3 ",
     " kv_lora_rank q_lora_rank qk_nope_head_dim qk_rope_head_dim v_head_dim moe_intermediate_size n_shared_experts"
     " first_k_dense_replace moe_layer_freq topk_method n_group topk_group routed_scaling_factor scoring_func"
     " aux_loss_alpha seq_aux ep_size num_nextn_predict_layers "},
    // GPT-2: the sequence-summary head (summary_*) belongs to the
    // double-heads model, not the language model built here.
    {" gpt2 ",
     " n_embd n_layer n_head vocab_size n_positions n_ctx n_inner tie_word_embeddings resid_pdrop embd_pdrop"
     " attn_pdrop activation_function scale_attn_weights scale_attn_by_inverse_layer_idx reorder_and_upcast_attn"
     " summary_type summary_use_proj summary_activation summary_proj_to_labels summary_first_dropout "},
    {" gemma3 ", " text_config vision_config mm_tokens_per_image "},
    // Hybrids (hf_hybrid.cc); time_step_* and rescale_prenorm_residual are
    // initialisation, chunk_size the SSD kernel's block, expand and
    // time_step_rank follow from the Mamba sizes read.
    {" nemotron_h jamba ",
     " hidden_size num_hidden_layers num_attention_heads num_key_value_heads intermediate_size vocab_size"
     " max_position_embeddings tie_word_embeddings attention_dropout sliding_window mamba_proj_bias "},
    {" nemotron_h ",
     " attention_head_dim head_dim hybrid_override_pattern layers_block_type mlp_hidden_act mamba_hidden_act"
     " mamba_num_heads mamba_head_dim ssm_state_size n_groups mamba_n_groups conv_kernel mamba_d_conv"
     " use_conv_bias use_bias attention_bias mlp_bias hidden_dropout residual_in_fp32 time_step_limit"
     " time_step_min time_step_max time_step_floor time_step_rank rescale_prenorm_residual chunk_size expand "},
    {" jamba ",
     " attn_layer_period attn_layer_offset expert_layer_period expert_layer_offset num_experts num_experts_per_tok"
     " hidden_act mamba_d_state mamba_d_conv mamba_expand mamba_dt_rank mamba_conv_bias "},
};

// Keys read as known only at the value the model builds; another value is
// reported (the reader does not model it).
struct NeutralKey {
  const char* family;
  const char* key;
  nlohmann::json value;
};
const NeutralKey kNeutralKeys[] = {
    {"phi3", "lm_head_bias", false},  // a bias on the vocab projection
    {"phi3", "full_attn_mod", 1},     // Phi-4-mini: every layer full attention
};

bool has_word(const char* words, std::string_view w) {
  const std::string_view all(words);
  if (w.empty() || w.find(' ') != std::string_view::npos) return false;
  for (size_t at = all.find(w); at != std::string_view::npos; at = all.find(w, at + 1)) {
    if (at > 0 && all[at - 1] == ' ' && at + w.size() < all.size() && all[at + w.size()] == ' ') return true;
  }
  return false;
}

// The keys of obj (a config of model_type family) no reader of that family
// reads and that are not ignored on purpose, as warnings ("prefix" names a
// nested object: "text_config."); at most 8, then a count of the rest.
void warn_unknown_keys(const Json& obj, const std::string& family, const std::string& prefix,
                       std::vector<std::string>* warnings) {
  constexpr size_t kMaxListed = 8;
  size_t unknown = 0;
  for (const auto& [key, value] : obj.items()) {
    if (value.is_null() || has_word(kIgnoredKeys, key)) continue;
    bool known = false;
    for (const FamilyKeys& f : kFamilyKeys) known = known || (has_word(f.families, family) && has_word(f.keys, key));
    for (const NeutralKey& n : kNeutralKeys) {
      if (family == n.family && key == n.key && value != n.value) known = false;
    }
    if (known) continue;
    if (++unknown > kMaxListed) continue;
    warnings->push_back(echo_text(prefix + key) + " = " + jsonf::brief(value) + ": not read by the " + family +
                        " import (an unknown key, ignored; if it changes the model, the counts and times "
                        "here leave it out)");
  }
  if (unknown > kMaxListed) {
    warnings->push_back(std::to_string(unknown - kMaxListed) + " more unknown keys, ignored as well");
  }
}

Result<ModelConfig> import_hf_text(const std::string& json_text, const std::string& path, bool strict,
                                   const std::string& key_prefix);

// Families read here (docs/hf-import.md); others are refused by name.
const char* const kSupported =
    "llama, mistral, mixtral, granite, qwen2, qwen2_moe, qwen3, qwen3_moe, gemma, gemma2, gemma3_text, gemma3 (text model), olmo2, phi3, deepseek_v2, deepseek_v3, gpt2, nemotron_h, jamba";

// Gemma-3 multimodal (Gemma3ForConditionalGeneration): the text model of
// text_config (Gemma3TextConfig's defaults for the keys it leaves out) is
// imported; the vision tower (vision_config, SigLIP) and the projector are
// not modelled: refused (strict), or imported as the text model with a
// warning (strict: false).
Result<ModelConfig> gemma3_multimodal(const HfReader& r, bool strict) {
  Import im;
  im.strict = strict;
  if (present(r, "vision_config")) {
    std::string what = "the vision tower";
    if (const Json* v = jsonf::find(r.obj, "vision_config"); v->is_object()) {
      const Json* layers = jsonf::find(*v, "num_hidden_layers");
      const Json* type = jsonf::find(*v, "model_type");
      what += " (" + (type && type->is_string() ? type->get<std::string>() : std::string("vision model")) +
              (layers && layers->is_number_integer() ? ", " + std::to_string(layers->get<int64_t>()) + " layers" : "") + ")";
    }
    what += " and the multimodal projector (the text model alone is what a strict: false import builds)";
    SC_RETURN_IF_ERROR(im.unmodelled(r, "vision_config", what));
  }
  const std::string text_path = jsonf::join(r.path, "text_config");
  const Json* text = jsonf::find(r.obj, "text_config");
  if (!text) return make_error(ErrorCode::kInvalidArgument, "required key is missing (the text model)", text_path);
  SC_RETURN_IF_ERROR(jsonf::expect_object(*text, text_path));
  SC_ASSIGN_OR_RETURN(ModelConfig m, import_hf_text(gemma3_text_config(*text).dump(), text_path, strict,
                                                     "text_config."));
  m.name = "hf:gemma3";
  m.hf_family = "gemma3";
  std::vector<std::string> features{"text model of a multimodal config (text_config, gemma3_text)"};
  features.insert(features.end(), m.hf_features.begin(), m.hf_features.end());
  m.hf_features = std::move(features);
  im.warnings.insert(im.warnings.end(), m.hf_warnings.begin(), m.hf_warnings.end());
  m.hf_warnings = std::move(im.warnings);
  return m;
}

}  // namespace

// A model-field error of an imported config names the config key the
// field came from (model.num_kv_heads -> model.hf_config.num_key_value_heads):
// the user wrote the config, not the model fields. A field no key maps to
// keeps its path. (Declared in hf_hybrid.h: the hybrid readers use it too.)
Error model_internal::hf_error(Error e, const Json& obj, const std::string& path) {
  static const std::pair<const char*, std::vector<const char*>> kKeys[] = {
      {"num_layers", {"num_hidden_layers", "n_layer"}},
      {"hidden", {"hidden_size", "n_embd"}},
      {"num_heads", {"num_attention_heads", "n_head"}},
      {"num_kv_heads", {"num_key_value_heads"}},
      {"head_dim", {"head_dim", "qk_nope_head_dim"}},
      {"ffn_hidden", {"intermediate_size", "n_inner"}},
      {"vocab", {"vocab_size"}},
      {"max_positions", {"max_position_embeddings", "n_positions"}},
      {"num_experts", {"num_local_experts", "num_experts", "n_routed_experts"}},
      {"experts_per_token", {"num_experts_per_tok"}},
      {"moe_ffn_hidden", {"moe_intermediate_size"}},
      {"shared_experts", {"n_shared_experts"}},
      {"first_dense_layers", {"first_k_dense_replace"}},
      {"dense_layers", {"mlp_only_layers"}},
      {"sliding_window", {"sliding_window"}},
      {"kv_lora_rank", {"kv_lora_rank"}},
      {"q_lora_rank", {"q_lora_rank"}},
  };
  if (e.path.rfind("model.", 0) != 0) return e;
  std::string field = e.path.substr(6);
  field = field.substr(0, field.find_first_of(".["));
  for (const auto& [name, keys] : kKeys) {
    if (field != name) continue;
    for (const char* k : keys)
      if (obj.contains(k)) {
        e.message += " (model." + field + ", read from this key)";
        e.path = jsonf::join(path, k);
        return e;
      }
  }
  return e;
}

namespace {

// The model of a parsed config (model_from_hf_config's work before the
// unknown keys are listed).
Result<ModelConfig> import_parsed(const Json& j, const std::string& path, bool strict, int nonstandard) {
  HfReader r{j, path};
  std::string model_type;
  if (const Json* t = jsonf::find(j, "model_type")) {
    SC_ASSIGN_OR_RETURN(model_type, jsonf::get_string(*t, jsonf::join(path, "model_type")));
  }
  const std::string type_path = jsonf::join(path, "model_type");
  if (model_internal::is_hybrid_hf_family(model_type))  // hf_hybrid.cc
    return model_internal::hybrid_from_hf_config(j, path, model_type, strict, nonstandard);
  if (model_type == "gemma3") return gemma3_multimodal(r, strict);
  const bool gpt2 = model_type == "gpt2" || (model_type.empty() && jsonf::find(j, "n_embd"));
  const bool mixtral = model_type == "mixtral";
  const bool deepseek = model_type == "deepseek_v2" || model_type == "deepseek_v3";
  const bool qwen3_moe = model_type == "qwen3_moe";
  const bool qwen2_moe = model_type == "qwen2_moe";
  const bool llama_like = model_type.empty() || model_type == "llama" || model_type == "granite" || model_type == "mistral" || model_type == "olmo2" ||
                          mixtral || model_type == "qwen2" || qwen2_moe || model_type == "qwen3" || qwen3_moe ||
                          model_type == "gemma" || model_type == "gemma2" || model_type == "gemma3_text" || model_type == "phi3" || deepseek;
  if (!gpt2 && !llama_like) {
    return make_error(ErrorCode::kUnsupported,
                      "architecture \"" + echo_text(model_type) + "\" is not supported (supported: " + kSupported + ")",
                      type_path);
  }
  if (!mixtral && !deepseek && !qwen3_moe && !qwen2_moe) {
    for (const char* moe : {"num_local_experts", "n_routed_experts", "num_experts"}) {
      const Json* v = jsonf::find(j, moe);
      if (v && !(v->is_number_integer() && v->get<int64_t>() <= 1)) {
        return make_error(ErrorCode::kUnsupported,
                          "mixture-of-experts configs are supported for model_type mixtral, qwen2_moe, qwen3_moe, "
                          "deepseek_v2 and deepseek_v3 only (model_type " +
                          (model_type.empty() ? std::string("not given") : "\"" + echo_text(model_type) + "\"") +
                          ", " + std::string(moe) + " = " + jsonf::brief(*v) + ")",
                          jsonf::join(path, moe));
      }
    }
  }
  Import im;
  im.strict = strict;
  ModelConfig m;
  if (gpt2) {
    SC_ASSIGN_OR_RETURN(m, from_gpt2(r));
  } else if (deepseek) {
    SC_ASSIGN_OR_RETURN(m, from_deepseek(r, model_type));
    im.features.push_back("multi-head latent attention");
    // transformers makes layer i MoE when i >= first_k_dense_replace: a value
    // past the layers leaves every layer dense.
    if (m.num_experts > 0 && m.first_dense_layers > m.num_layers) {
      im.features.push_back("first_k_dense_replace " + std::to_string(m.first_dense_layers) +
                            " past num_hidden_layers (" + std::to_string(m.num_layers) + "): every layer dense");
      m.first_dense_layers = m.num_layers;
    }
    SC_RETURN_IF_ERROR(check_common(r, im, false, &m));
  } else if (model_type == "gemma") {
    // Gemma: GeGLU, tied (tie_word_embeddings defaults to true), head_dim given.
    SC_ASSIGN_OR_RETURN(m, from_llama_style(r, model_type, false, /*tied_default=*/true, /*geglu=*/true));
    im.features.push_back("GeGLU MLP");
    m.embedding_multiplier = std::sqrt(static_cast<double>(m.hidden));
    im.features.push_back("embedding scaled by sqrt(hidden)");
    SC_RETURN_IF_ERROR(check_common(r, im, false, &m));
  } else if (model_type == "gemma3_text" || model_type == "gemma2") {
    SC_ASSIGN_OR_RETURN(m, from_llama_style(r, model_type, false, /*tied_default=*/true, /*geglu=*/true));
    SC_RETURN_IF_ERROR(read_gemma23_layers(r, im, model_type == "gemma2", &m));
    SC_RETURN_IF_ERROR(check_common(r, im, false, &m, /*pattern_family=*/true));
  } else if (model_type == "qwen2" || qwen2_moe || model_type == "qwen3" || qwen3_moe) {
    SC_ASSIGN_OR_RETURN(m, from_llama_style(r, model_type));
    if (model_type == "qwen2" || qwen2_moe) {
      // Qwen2: biases on q, k and v always, none elsewhere.
      m.linear_bias = false;
      m.qkv_bias = true;
      im.features.push_back("q/k/v biases");
    } else {
      SC_RETURN_IF_ERROR(check_llama_biases(r, im));
      m.qk_norm = true;
      im.features.push_back("per-head q/k RMSNorm");
    }
    SC_RETURN_IF_ERROR(read_qwen_window(r, im, &m));
    SC_RETURN_IF_ERROR(check_common(r, im, false, &m));
    if (qwen3_moe || qwen2_moe) {
      using namespace limits;
      SC_ASSIGN_OR_RETURN(m.num_experts, r.required("num_experts", kMaxExperts));
      SC_ASSIGN_OR_RETURN(m.experts_per_token, r.required("num_experts_per_tok", kMaxExperts));
      SC_ASSIGN_OR_RETURN(m.moe_ffn_hidden, r.required("moe_intermediate_size", kMaxFfn));
      SC_RETURN_IF_ERROR(qwen_moe_layers(r, im, &m));
      if (qwen2_moe) {
        // One shared expert of shared_expert_intermediate_size, sigmoid-gated:
        // modelled as shared_experts = that width / moe_intermediate_size.
        SC_ASSIGN_OR_RETURN(int64_t fs, r.optional("shared_expert_intermediate_size", 0, kMaxFfn, /*lo=*/0));
        if (fs % m.moe_ffn_hidden != 0) {
          SC_RETURN_IF_ERROR(im.unmodelled(r, "shared_expert_intermediate_size",
                                           "a shared expert whose width is not a multiple of moe_intermediate_size"));
        }
        m.shared_experts = fs / m.moe_ffn_hidden;
        m.shared_expert_gate = m.shared_experts > 0;
        if (m.shared_experts > 0) im.features.push_back("sigmoid-gated shared expert");
      }
      im.features.push_back("MoE (" + std::to_string(m.num_experts) + " experts, top-" +
                            std::to_string(m.experts_per_token) + ")");
    }
  } else {
    // llama, mistral, mixtral, phi3 (fused qkv/gate_up: the same elements
    // and FLOPs as split projections), or no model_type (llama style).
    SC_ASSIGN_OR_RETURN(m, from_llama_style(r, model_type));
    SC_RETURN_IF_ERROR(check_llama_biases(r, im));
    if (model_type == "olmo2") read_olmo2(im, &m);
    const bool windowed = model_type != "llama" && model_type != "olmo2" && !model_type.empty();
    SC_RETURN_IF_ERROR(check_common(r, im, windowed, &m, false, /*partial_rotary_family=*/model_type == "phi3"));
    // transformers' MistralConfig defaults sliding_window to 4096 (Mixtral's
    // and Phi-3's to None): a mistral config without the key is windowed;
    // an explicit null (Mistral v0.2 on) is not.
    if (model_type == "mistral" && !r.obj.contains("sliding_window") && m.max_positions > 4096) {
      m.sliding_window = 4096;
      im.features.push_back("sliding-window attention (4096: transformers' MistralConfig default; the config has no "
                            "sliding_window)");
    }
    if (model_type == "granite") {
      // Scalars without parameters; attention_multiplier replaces 1/sqrt(d) (no op).
      SC_ASSIGN_OR_RETURN(m.embedding_multiplier, r.number("embedding_multiplier", 1.0));
      SC_ASSIGN_OR_RETURN(m.residual_multiplier, r.number("residual_multiplier", 1.0));
      SC_ASSIGN_OR_RETURN(double logits_scaling, r.number("logits_scaling", 1.0));
      m.logit_multiplier = 1.0 / logits_scaling;
      im.features.push_back("embedding, residual and logit multipliers");
    }
    if (mixtral) {
      SC_RETURN_IF_ERROR(add_mixtral_moe(r, &m));
      im.features.push_back("MoE (" + std::to_string(m.num_experts) + " experts, top-" +
                            std::to_string(m.experts_per_token) + ")");
    }
  }
  m.hf_family = model_type.empty() ? (gpt2 ? "gpt2" : "llama") + std::string(" (model_type not given)") : model_type;
  if (!gpt2) {
    if (m.num_kv_heads != m.num_heads) im.features.push_back(m.num_kv_heads == 1 ? "MQA" : "GQA");
    if (m.tied_embeddings) im.features.push_back("tied embeddings");
    if (m.linear_bias) im.features.push_back("linear biases");
  }
  if (nonstandard > 0) {
    im.features.push_back(std::to_string(nonstandard) + " non-standard JSON number(s) (Infinity/NaN) read as null");
  }
  m.hf_features = std::move(im.features);
  m.hf_warnings = std::move(im.warnings);
  if (Status st = validate_model(m, "model"); !st.ok()) return model_internal::hf_error(st.error(), r.obj, r.path);
  return m;
}

Result<ModelConfig> import_hf_text(const std::string& json_text, const std::string& path, bool strict,
                                   const std::string& key_prefix) {
  int nonstandard = 0;
  const std::string text = tolerate_nonstandard_numbers(json_text, &nonstandard);
  SC_ASSIGN_OR_RETURN(Json j, jsonf::parse_text(text, path));
  SC_RETURN_IF_ERROR(jsonf::expect_object(j, path));
  SC_ASSIGN_OR_RETURN(ModelConfig m, import_parsed(j, path, strict, nonstandard));
  // The family whose readers ran (no model_type: llama, or gpt2 by n_embd).
  std::string family = m.hf_family;
  if (const size_t cut = family.find(' '); cut != std::string::npos) family.resize(cut);
  warn_unknown_keys(j, family, key_prefix, &m.hf_warnings);
  return m;
}

}  // namespace

Result<ModelConfig> model_from_hf_config(const std::string& json_text, const std::string& path,
                                         bool strict) {
  return import_hf_text(json_text, path, strict, "");
}

}  // namespace sc
