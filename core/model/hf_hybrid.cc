// Hugging Face readers for the hybrid Mamba / attention families
// (docs/hf-import.md): nemotron_h (Mamba-2, attention and squared-ReLU MLP
// blocks by hybrid_override_pattern) and jamba (Mamba-1 and attention
// mixers, dense or MoE FFNs by their layer periods). Exact or refused, like
// hf_config.cc's readers: a key that would change compute or memory and is
// not modelled is an error naming it (strict) or a listed warning.
#include "model/hf_hybrid.h"

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

namespace sc::model_internal {
namespace {

using jsonf::Json;

struct Reader {
  const Json& obj;
  std::string path;
  bool strict;
  std::vector<std::string> features, warnings;

  std::string at(const char* key) const { return jsonf::join(path, key); }
  bool has(const char* key) const {
    const Json* v = jsonf::find(obj, key);
    return v && !v->is_null();
  }
  Result<int64_t> required(const char* key, int64_t hi) const {
    if (!has(key)) return make_error(ErrorCode::kInvalidArgument, "required key is missing", at(key));
    return jsonf::get_int(*jsonf::find(obj, key), at(key), 1, hi);
  }
  Result<int64_t> optional(const char* key, int64_t fallback, int64_t hi, int64_t lo = 1) const {
    if (!has(key)) return fallback;
    return jsonf::get_int(*jsonf::find(obj, key), at(key), lo, hi);
  }
  // The first of `keys` present (newer transformers spell some keys anew).
  Result<int64_t> either(std::initializer_list<const char*> keys, int64_t fallback, int64_t hi) const {
    for (const char* k : keys)
      if (has(k)) return jsonf::get_int(*jsonf::find(obj, k), at(k), 1, hi);
    return fallback;
  }
  Result<bool> flag(const char* key, bool fallback) const {
    if (!has(key)) return fallback;
    return jsonf::get_bool(*jsonf::find(obj, key), at(key));
  }
  Result<std::string> text(const char* key, const std::string& fallback) const {
    if (!has(key)) return fallback;
    return jsonf::get_string(*jsonf::find(obj, key), at(key));
  }
  Result<double> probability(const char* key) const {
    if (!has(key)) return 0.0;
    return jsonf::get_number_in(*jsonf::find(obj, key), at(key), 0, 1);
  }

  // A key whose value would change compute or memory and is not modelled.
  Status unmodelled(const char* key, const std::string& what) {
    const Json* v = jsonf::find(obj, key);
    const std::string shown = std::string(key) + " = " + (v ? jsonf::brief(*v) : std::string("(default)"));
    if (strict) {
      return make_error(ErrorCode::kUnsupported,
                        what + " is not modelled (" + shown +
                            "); the model section's \"strict\": false imports it anyway with a warning",
                        at(key));
    }
    warnings.push_back(shown + ": " + what + " is not modelled");
    return ok_status();
  }
  // A boolean key that must have the value the model builds.
  Status must_be(const char* key, bool fallback, bool modelled, const std::string& what) {
    SC_ASSIGN_OR_RETURN(bool v, flag(key, fallback));
    return v == modelled ? ok_status() : unmodelled(key, what);
  }
  Status activation(const char* key, const std::string& fallback, const char* modelled) {
    SC_ASSIGN_OR_RETURN(std::string a, text(key, fallback));
    if (a == modelled) return ok_status();
    return make_error(ErrorCode::kUnsupported,
                      "activation \"" + echo_text(a) + "\" is not supported (only " + modelled + ")", at(key));
  }
  Status no_dropout(std::initializer_list<const char*> keys) {
    for (const char* k : keys) {
      SC_ASSIGN_OR_RETURN(double p, probability(k));
      if (p > 0) SC_RETURN_IF_ERROR(unmodelled(k, "dropout in a hybrid model"));
    }
    return ok_status();
  }
  Status no_window() {
    return has("sliding_window") ? unmodelled("sliding_window", "sliding-window attention in a hybrid model")
                                 : ok_status();
  }
};

// Attention sizes shared by both families (no rotary embedding: NoPE).
Status read_attention(Reader& r, ModelConfig* m, std::initializer_list<const char*> head_dim_keys) {
  using namespace limits;
  SC_ASSIGN_OR_RETURN(m->hidden, r.required("hidden_size", kMaxHidden));
  SC_ASSIGN_OR_RETURN(m->num_heads, r.required("num_attention_heads", kMaxHeads));
  SC_ASSIGN_OR_RETURN(m->num_kv_heads, r.optional("num_key_value_heads", m->num_heads, kMaxHeads));
  bool given = false;
  for (const char* k : head_dim_keys) given = given || r.has(k);
  if (!given && m->hidden % m->num_heads != 0)
    return make_error(ErrorCode::kNotDivisible,
                      "hidden_size (" + std::to_string(m->hidden) + ") is not divisible by num_attention_heads (" +
                          std::to_string(m->num_heads) + ") and no head dim is given",
                      r.at("num_attention_heads"));
  SC_ASSIGN_OR_RETURN(m->head_dim, r.either(head_dim_keys, m->hidden / std::max<int64_t>(m->num_heads, 1), kMaxHeadDim));
  SC_ASSIGN_OR_RETURN(m->ffn_hidden, r.required("intermediate_size", kMaxFfn));
  SC_ASSIGN_OR_RETURN(m->vocab, r.required("vocab_size", kMaxVocab));
  m->norm = NormKind::kRMSNorm;
  m->position = PositionKind::kNone;
  m->linear_bias = false;
  m->dropout = false;
  m->flash_attention = true;  // Nemotron-H and Jamba train with fused attention
  SC_ASSIGN_OR_RETURN(m->tied_embeddings, r.flag("tie_word_embeddings", false));
  return ok_status();
}

// NemotronH (transformers' nemotron_h; NVIDIA's remote code for the 8B/56B
// files): one block per character of hybrid_override_pattern, 'M' Mamba-2,
// '*' attention, '-' squared-ReLU MLP; newer files spell the layout as
// layers_block_type ("mamba", "attention", "mlp"). MoE blocks ('E',
// "moe": Nemotron-3) are refused.
Result<ModelConfig> from_nemotron_h(Reader& r) {
  using namespace limits;
  ModelConfig m;
  m.name = "hf:nemotron_h";
  SC_RETURN_IF_ERROR(read_attention(r, &m, {"attention_head_dim", "head_dim"}));
  SC_ASSIGN_OR_RETURN(m.max_positions, r.optional("max_position_embeddings", 4096, kMaxPositions));
  std::string pattern;
  const char* pattern_key = "hybrid_override_pattern";
  if (r.has("hybrid_override_pattern")) {
    SC_ASSIGN_OR_RETURN(pattern, r.text("hybrid_override_pattern", ""));
  } else if (const Json* v = jsonf::find(r.obj, "layers_block_type"); v && v->is_array()) {
    pattern_key = "layers_block_type";
    for (const Json& e : *v) {
      const std::string t = e.is_string() ? e.get<std::string>() : "";
      pattern += t == "mamba" ? 'M' : t == "attention" ? '*' : t == "mlp" ? '-' : t == "moe" ? 'E' : '?';
    }
  } else {
    return make_error(ErrorCode::kInvalidArgument,
                      "required key is missing (or layers_block_type, the per-layer list)",
                      r.at("hybrid_override_pattern"));
  }
  for (size_t i = 0; i < pattern.size(); ++i) {
    const char c = pattern[i];
    if (c == 'E')
      return make_error(ErrorCode::kUnsupported,
                        "MoE blocks ('E' / \"moe\", at layer " + std::to_string(i) +
                            ") in a nemotron_h model are not modelled (Nemotron-3's latent MoE)",
                        r.at(pattern_key));
    if (c != 'M' && c != '*' && c != '-')
      return make_error(ErrorCode::kInvalidArgument,
                        std::string("unknown block kind at layer ") + std::to_string(i) +
                            " (known: M Mamba-2, * attention, - MLP)",
                        r.at(pattern_key));
  }
  SC_ASSIGN_OR_RETURN(int64_t layers, r.optional("num_hidden_layers", static_cast<int64_t>(pattern.size()), kMaxLayers));
  if (layers != static_cast<int64_t>(pattern.size()))
    return make_error(ErrorCode::kInvalidArgument,
                      "is " + std::to_string(layers) + " but " + pattern_key + " has " +
                          std::to_string(pattern.size()) + " blocks (one per layer)",
                      r.at("num_hidden_layers"));
  m.hybrid_pattern = pattern;
  m.num_layers = layers;
  m.mlp = MlpKind::kReLU2;
  SC_RETURN_IF_ERROR(r.activation("mlp_hidden_act", "relu2", "relu2"));
  SC_RETURN_IF_ERROR(r.activation("mamba_hidden_act", "silu", "silu"));
  if (m.has_mamba()) {
    SC_ASSIGN_OR_RETURN(m.mamba_heads, r.required("mamba_num_heads", kMaxHidden));
    SC_ASSIGN_OR_RETURN(m.mamba_head_dim, r.required("mamba_head_dim", kMaxHidden));
    SC_ASSIGN_OR_RETURN(m.mamba_state, r.required("ssm_state_size", kMaxHidden));
    SC_ASSIGN_OR_RETURN(m.mamba_groups, r.either({"n_groups", "mamba_n_groups"}, 8, kMaxHidden));
    SC_ASSIGN_OR_RETURN(m.mamba_conv_kernel, r.either({"conv_kernel", "mamba_d_conv"}, 4, kMaxHidden));
    SC_RETURN_IF_ERROR(r.must_be("use_conv_bias", true, true, "a Mamba conv1d without bias"));
    SC_RETURN_IF_ERROR(r.must_be("mamba_conv_bias", true, true, "a Mamba conv1d without bias"));
    SC_RETURN_IF_ERROR(r.must_be("use_bias", false, false, "biases on the Mamba in_proj/out_proj"));
    SC_RETURN_IF_ERROR(r.must_be("mamba_proj_bias", false, false, "biases on the Mamba in_proj/out_proj"));
  }
  SC_RETURN_IF_ERROR(r.must_be("attention_bias", false, false, "attention biases in a hybrid model"));
  SC_RETURN_IF_ERROR(r.must_be("mlp_bias", false, false, "MLP biases in a hybrid model"));
  SC_RETURN_IF_ERROR(r.must_be("residual_in_fp32", false, false, "an fp32 residual stream"));
  SC_RETURN_IF_ERROR(r.no_dropout({"attention_dropout", "hidden_dropout"}));
  SC_RETURN_IF_ERROR(r.no_window());
  int M = 0, A = 0, F = 0;
  for (char c : pattern) (c == 'M' ? M : c == '*' ? A : F)++;
  r.features.push_back("hybrid layer pattern (" + std::to_string(M) + " Mamba-2, " + std::to_string(A) +
                       " attention, " + std::to_string(F) + " MLP blocks)");
  r.features.push_back("Mamba-2 mixer (" + std::to_string(m.mamba_heads) + " heads x " +
                       std::to_string(m.mamba_head_dim) + ", " + std::to_string(m.mamba_groups) + " groups, state " +
                       std::to_string(m.mamba_state) + ")");
  r.features.push_back("squared-ReLU MLP");
  r.features.push_back("no position embedding");
  return m;
}

// Jamba (transformers' JambaForCausalLM): Jamba layer l's mixer is attention
// iff l % attn_layer_period == attn_layer_offset, else Mamba-1; its FFN is
// an MoE of num_experts SwiGLU experts iff num_experts > 1 and l %
// expert_layer_period == expert_layer_offset, else a dense SwiGLU MLP. Two
// blocks per Jamba layer here (mixer, FFN), each with its pre-norm: the
// same parameters as the layer's input_layernorm and pre_ff_layernorm.
Result<ModelConfig> from_jamba(Reader& r) {
  using namespace limits;
  ModelConfig m;
  m.name = "hf:jamba";
  SC_RETURN_IF_ERROR(read_attention(r, &m, {}));
  SC_ASSIGN_OR_RETURN(m.max_positions, r.optional("max_position_embeddings", 262144, kMaxPositions));
  SC_ASSIGN_OR_RETURN(int64_t layers, r.optional("num_hidden_layers", 32, kMaxLayers / 2));
  SC_ASSIGN_OR_RETURN(int64_t ap, r.optional("attn_layer_period", 8, kMaxLayers));
  SC_ASSIGN_OR_RETURN(int64_t ao, r.optional("attn_layer_offset", 4, kMaxLayers, 0));
  SC_ASSIGN_OR_RETURN(int64_t ep, r.optional("expert_layer_period", 2, kMaxLayers));
  SC_ASSIGN_OR_RETURN(int64_t eo, r.optional("expert_layer_offset", 1, kMaxLayers, 0));
  for (auto [key, off, per] : {std::tuple{"attn_layer_offset", ao, ap}, std::tuple{"expert_layer_offset", eo, ep}})
    if (off >= per)
      return make_error(ErrorCode::kInvalidArgument,
                        "must be below its period (" + std::to_string(off) + " >= " + std::to_string(per) + ")",
                        r.at(key));
  SC_ASSIGN_OR_RETURN(int64_t E, r.optional("num_experts", 16, kMaxExperts));
  SC_ASSIGN_OR_RETURN(int64_t k, r.optional("num_experts_per_tok", 2, kMaxExperts));
  std::string pattern;
  for (int64_t l = 0; l < layers; ++l) {
    pattern += l % ap == ao ? '*' : 'S';
    pattern += E > 1 && l % ep == eo ? 'E' : '-';
  }
  m.hybrid_pattern = pattern;
  m.num_layers = 2 * layers;
  m.mlp = MlpKind::kSwiGLU;
  SC_RETURN_IF_ERROR(r.activation("hidden_act", "silu", "silu"));
  if (pattern.find('E') != std::string::npos) {
    m.num_experts = E;
    m.experts_per_token = k;
    m.moe_ffn_hidden = m.ffn_hidden;
  }
  if (m.has_mamba1()) {
    SC_ASSIGN_OR_RETURN(m.mamba_state, r.optional("mamba_d_state", 16, kMaxHidden));
    SC_ASSIGN_OR_RETURN(m.mamba_conv_kernel, r.optional("mamba_d_conv", 4, kMaxHidden));
    SC_ASSIGN_OR_RETURN(int64_t expand, r.optional("mamba_expand", 2, kMaxHidden));
    m.mamba1_inner = expand * m.hidden;
    // mamba_dt_rank: an integer, or "auto" = ceil(hidden / 16) (the default).
    m.mamba1_dt_rank = (m.hidden + 15) / 16;
    if (const Json* v = jsonf::find(r.obj, "mamba_dt_rank"); v && !(v->is_string() && v->get<std::string>() == "auto")) {
      SC_ASSIGN_OR_RETURN(m.mamba1_dt_rank, jsonf::get_int(*v, r.at("mamba_dt_rank"), 1, kMaxHidden));
    }
    m.mamba1_dt_bc_norms = true;  // JambaMambaMixer's dt/B/C RMSNorms (always built)
    SC_RETURN_IF_ERROR(r.must_be("mamba_conv_bias", true, true, "a Mamba conv1d without bias"));
    SC_RETURN_IF_ERROR(r.must_be("mamba_proj_bias", false, false, "biases on the Mamba in_proj/out_proj"));
  }
  SC_RETURN_IF_ERROR(r.no_dropout({"attention_dropout"}));
  SC_RETURN_IF_ERROR(r.no_window());
  int S = 0, A = 0, moe = 0;
  for (char c : pattern) {
    S += c == 'S';
    A += c == '*';
    moe += c == 'E';
  }
  r.features.push_back("Jamba layers: " + std::to_string(A) + " attention, " + std::to_string(S) +
                       " Mamba-1 mixers; " + std::to_string(moe) + " MoE and " + std::to_string(layers - moe) +
                       " dense FFNs (" + std::to_string(2 * layers) + " blocks)");
  if (S > 0)
    r.features.push_back("Mamba-1 mixer (d_inner " + std::to_string(m.mamba1_inner) + ", dt_rank " +
                         std::to_string(m.mamba1_dt_rank) + ", state " + std::to_string(m.mamba_state) +
                         ", dt/B/C RMSNorms)");
  if (moe > 0)
    r.features.push_back("MoE (" + std::to_string(m.num_experts) + " experts, top-" +
                         std::to_string(m.experts_per_token) + ")");
  r.features.push_back("no position embedding");
  return m;
}

}  // namespace

bool is_hybrid_hf_family(const std::string& model_type) {
  return model_type == "nemotron_h" || model_type == "jamba";
}

Result<ModelConfig> hybrid_from_hf_config(const jsonf::Json& obj, const std::string& path,
                                          const std::string& model_type, bool strict, int nonstandard_numbers) {
  Reader r{obj, path, strict, {}, {}};
  ModelConfig m;
  if (model_type == "nemotron_h") {
    SC_ASSIGN_OR_RETURN(m, from_nemotron_h(r));
  } else {
    SC_ASSIGN_OR_RETURN(m, from_jamba(r));
  }
  m.hf_family = model_type;
  if (m.num_kv_heads != m.num_heads) r.features.push_back(m.num_kv_heads == 1 ? "MQA" : "GQA");
  if (m.tied_embeddings) r.features.push_back("tied embeddings");
  if (nonstandard_numbers > 0)
    r.features.push_back(std::to_string(nonstandard_numbers) +
                         " non-standard JSON number(s) (Infinity/NaN) read as null");
  m.hf_features = std::move(r.features);
  m.hf_warnings = std::move(r.warnings);
  if (Status st = validate_model(m, "model"); !st.ok()) return hf_error(st.error(), obj, path);
  return m;
}

}  // namespace sc::model_internal
