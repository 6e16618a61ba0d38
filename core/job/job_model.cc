// The job's "model" section: base (preset | hf_config | explicit) + overrides.
#include "job/job_internal.h"

namespace sc::job_internal {
namespace {

using jsonf::Json;
using jsonf::join;

// A string naming one of `known` (name, value) pairs; otherwise an error
// listing them in order.
template <typename E>
Result<E> parse_enum(const Json& v, const std::string& path, std::initializer_list<std::pair<const char*, E>> known) {
  SC_ASSIGN_OR_RETURN(std::string s, jsonf::get_string(v, path));
  std::string names;
  for (const auto& [name, value] : known) {
    if (s == name) return value;
    names += (names.empty() ? "" : ", ") + std::string(name);
  }
  return make_error(ErrorCode::kInvalidArgument, "unknown value \"" + echo_text(s) + "\" (known: " + names + ")", path);
}

// Which derived fields an override must carry along (see docs/job-format.md).
struct Given {
  bool hidden = false, heads = false, kv = false, head_dim = false, ffn = false;
};

Status apply_fields(const Json& obj, const std::string& path, ModelConfig* m, Given* given) {
  using namespace limits;
  auto get = [&](const char* key, int64_t hi, int64_t* out, bool* seen, int64_t lo = 1) -> Status {
    const Json* v = jsonf::find(obj, key);
    if (!v) return ok_status();
    SC_ASSIGN_OR_RETURN(*out, jsonf::get_int(*v, join(path, key), lo, hi));
    if (seen) *seen = true;
    return ok_status();
  };
  auto flag = [&](const char* key, bool* out) -> Status {
    const Json* v = jsonf::find(obj, key);
    if (!v) return ok_status();
    SC_ASSIGN_OR_RETURN(*out, jsonf::get_bool(*v, join(path, key)));
    return ok_status();
  };
  if (const Json* v = jsonf::find(obj, "name")) {
    SC_ASSIGN_OR_RETURN(m->name, jsonf::get_string(*v, join(path, "name")));
  }
  SC_RETURN_IF_ERROR(get("num_layers", kMaxLayers, &m->num_layers, nullptr));
  SC_RETURN_IF_ERROR(get("hidden", kMaxHidden, &m->hidden, &given->hidden));
  SC_RETURN_IF_ERROR(get("num_heads", kMaxHeads, &m->num_heads, &given->heads));
  SC_RETURN_IF_ERROR(get("num_kv_heads", kMaxHeads, &m->num_kv_heads, &given->kv));
  SC_RETURN_IF_ERROR(get("head_dim", kMaxHeadDim, &m->head_dim, &given->head_dim));
  SC_RETURN_IF_ERROR(get("ffn_hidden", kMaxFfn, &m->ffn_hidden, &given->ffn));
  SC_RETURN_IF_ERROR(get("vocab", kMaxVocab, &m->vocab, nullptr));
  SC_RETURN_IF_ERROR(get("max_positions", kMaxPositions, &m->max_positions, nullptr));
  if (const Json* v = jsonf::find(obj, "norm")) {
    SC_ASSIGN_OR_RETURN(m->norm, parse_enum<NormKind>(*v, join(path, "norm"),
                                                      {{"layernorm", NormKind::kLayerNorm}, {"rmsnorm", NormKind::kRMSNorm}}));
  }
  if (const Json* v = jsonf::find(obj, "mlp")) {
    SC_ASSIGN_OR_RETURN(m->mlp, parse_enum<MlpKind>(*v, join(path, "mlp"),
                                                    {{"gelu", MlpKind::kGelu}, {"swiglu", MlpKind::kSwiGLU},
                                                     {"geglu", MlpKind::kGeGLU}, {"relu2", MlpKind::kReLU2}}));
  }
  if (const Json* v = jsonf::find(obj, "position")) {
    SC_ASSIGN_OR_RETURN(m->position, parse_enum<PositionKind>(*v, join(path, "position"),
                                                              {{"learned", PositionKind::kLearned},
                                                               {"rope", PositionKind::kRope},
                                                               {"none", PositionKind::kNone}}));
  }
  SC_RETURN_IF_ERROR(flag("tied_embeddings", &m->tied_embeddings));
  SC_RETURN_IF_ERROR(flag("linear_bias", &m->linear_bias));
  SC_RETURN_IF_ERROR(flag("dropout", &m->dropout));
  SC_RETURN_IF_ERROR(flag("flash_attention", &m->flash_attention));
  SC_RETURN_IF_ERROR(flag("qkv_bias", &m->qkv_bias));
  SC_RETURN_IF_ERROR(flag("qk_norm", &m->qk_norm));
  SC_RETURN_IF_ERROR(get("sliding_window", kMaxPositions, &m->sliding_window, nullptr, 0));
  SC_RETURN_IF_ERROR(get("window_pattern", kMaxLayers, &m->window_pattern, nullptr, 0));
  SC_RETURN_IF_ERROR(flag("sandwich_norms", &m->sandwich_norms));
  SC_RETURN_IF_ERROR(flag("shared_expert_gate", &m->shared_expert_gate));
  SC_RETURN_IF_ERROR(flag("post_norms", &m->post_norms));
  SC_RETURN_IF_ERROR(flag("qk_norm_across_heads", &m->qk_norm_across_heads));
  SC_RETURN_IF_ERROR(get("rotary_dim", kMaxHeadDim, &m->rotary_dim, nullptr, 0));
  SC_RETURN_IF_ERROR(get("window_first_layer", kMaxLayers, &m->window_first_layer, nullptr, 0));
  SC_RETURN_IF_ERROR(get("moe_layer_step", kMaxLayers, &m->moe_layer_step, nullptr, 0));
  if (const Json* v = jsonf::find(obj, "dense_layers")) {  // order and range: validate_model
    if (!v->is_array()) {
      return make_error(ErrorCode::kInvalidArgument, "must be an array of layer indices", join(path, "dense_layers"));
    }
    m->dense_layers.clear();
    for (size_t i = 0; i < v->size(); ++i) {
      SC_ASSIGN_OR_RETURN(int64_t l, jsonf::get_int((*v)[i], join(path, "dense_layers") + "[" + std::to_string(i) + "]",
                                                    0, kMaxLayers - 1));
      m->dense_layers.push_back(l);
    }
  }
  for (auto [key, out] : {std::pair{"attn_softcap", &m->attn_softcap}, std::pair{"final_softcap", &m->final_softcap},
                          std::pair{"embedding_multiplier", &m->embedding_multiplier},
                          std::pair{"residual_multiplier", &m->residual_multiplier},
                          std::pair{"logit_multiplier", &m->logit_multiplier}}) {
    if (const Json* v = jsonf::find(obj, key)) {
      // A softcap may be 0 (off); a multiplier must be above 0 (1: none).
      const bool softcap = std::string(key).find("softcap") != std::string::npos;
      SC_ASSIGN_OR_RETURN(*out, jsonf::get_number_in(*v, join(path, key), 0, 1e9, /*lo_inclusive=*/softcap));
    }
  }
  // Mixture of experts and latent attention: 0 = off; relations between
  // the fields (k <= E, MLA head sizes, ...) are checked by validate_model.
  SC_RETURN_IF_ERROR(get("num_experts", kMaxExperts, &m->num_experts, nullptr, 0));
  SC_RETURN_IF_ERROR(get("experts_per_token", kMaxExperts, &m->experts_per_token, nullptr, 0));
  SC_RETURN_IF_ERROR(get("moe_ffn_hidden", kMaxFfn, &m->moe_ffn_hidden, nullptr, 0));
  SC_RETURN_IF_ERROR(get("shared_experts", kMaxExperts, &m->shared_experts, nullptr, 0));
  SC_RETURN_IF_ERROR(get("first_dense_layers", kMaxLayers, &m->first_dense_layers, nullptr, 0));
  SC_RETURN_IF_ERROR(get("mtp_num_layers", kMaxLayers, &m->mtp_num_layers, nullptr, 0));
  if (const Json* v = jsonf::find(obj, "capacity_factor")) {
    SC_ASSIGN_OR_RETURN(m->capacity_factor, jsonf::get_number(*v, join(path, "capacity_factor")));
  }
  SC_RETURN_IF_ERROR(flag("router_bias", &m->router_bias));
  SC_RETURN_IF_ERROR(get("q_lora_rank", kMaxHidden, &m->q_lora_rank, nullptr, 0));
  SC_RETURN_IF_ERROR(get("kv_lora_rank", kMaxHidden, &m->kv_lora_rank, nullptr, 0));
  SC_RETURN_IF_ERROR(get("qk_rope_head_dim", kMaxHeadDim, &m->qk_rope_head_dim, nullptr, 0));
  SC_RETURN_IF_ERROR(get("v_head_dim", kMaxHeadDim, &m->v_head_dim, nullptr, 0));
  // Hybrid (Mamba-2) models: checked by validate_model.
  if (const Json* v = jsonf::find(obj, "hybrid_pattern")) {
    SC_ASSIGN_OR_RETURN(m->hybrid_pattern, jsonf::get_string(*v, join(path, "hybrid_pattern")));
  }
  SC_RETURN_IF_ERROR(get("mamba_heads", kMaxHidden, &m->mamba_heads, nullptr, 0));
  SC_RETURN_IF_ERROR(get("mamba_head_dim", kMaxHidden, &m->mamba_head_dim, nullptr, 0));
  SC_RETURN_IF_ERROR(get("mamba_groups", kMaxHidden, &m->mamba_groups, nullptr, 0));
  SC_RETURN_IF_ERROR(get("mamba_state", kMaxHidden, &m->mamba_state, nullptr, 0));
  SC_RETURN_IF_ERROR(get("mamba_conv_kernel", kMaxHidden, &m->mamba_conv_kernel, nullptr, 0));
  SC_RETURN_IF_ERROR(get("mamba1_inner", kMaxHidden, &m->mamba1_inner, nullptr, 0));
  SC_RETURN_IF_ERROR(get("mamba1_dt_rank", kMaxHidden, &m->mamba1_dt_rank, nullptr, 0));
  SC_RETURN_IF_ERROR(flag("mamba1_dt_bc_norms", &m->mamba1_dt_bc_norms));
  return ok_status();
}

Status head_dim_from_hidden(ModelConfig* m, const std::string& path) {
  if (m->hidden % m->num_heads != 0) {
    return make_error(ErrorCode::kNotDivisible,
                      "hidden (" + std::to_string(m->hidden) + ") is not divisible by num_heads (" +
                      std::to_string(m->num_heads) + "); give head_dim explicitly",
                      join(path, "num_heads"));
  }
  m->head_dim = m->hidden / m->num_heads;
  return ok_status();
}

}  // namespace

Result<ModelConfig> parse_model_section(const Json& v, const std::string& path) {
  if (v.is_string()) return model_preset(v.get<std::string>(), path);
  SC_RETURN_IF_ERROR(jsonf::expect_object(v, path));
  SC_RETURN_IF_ERROR(jsonf::check_keys(
      v, {"preset", "hf_config", "name", "num_layers", "hidden", "num_heads", "num_kv_heads",
          "head_dim", "ffn_hidden", "vocab", "max_positions", "norm", "mlp", "position",
          "tied_embeddings", "linear_bias", "dropout", "flash_attention", "num_experts",
          "experts_per_token", "moe_ffn_hidden", "shared_experts", "first_dense_layers",
          "capacity_factor", "router_bias", "q_lora_rank", "kv_lora_rank", "qk_rope_head_dim",
          "v_head_dim", "hybrid_pattern", "mamba_heads", "mamba_head_dim", "mamba_groups", "mamba_state",
          "mamba_conv_kernel", "mamba1_inner", "mamba1_dt_rank", "mamba1_dt_bc_norms", "qkv_bias", "qk_norm", "sliding_window", "window_pattern", "sandwich_norms", "attn_softcap", "final_softcap", "embedding_multiplier", "residual_multiplier",
          "logit_multiplier", "shared_expert_gate", "post_norms", "qk_norm_across_heads", "rotary_dim",
          "window_first_layer", "moe_layer_step", "dense_layers", "mtp_num_layers", "strict"},
      path));
  const Json* preset = jsonf::find(v, "preset");
  const Json* hf = jsonf::find(v, "hf_config");
  if (preset && hf) {
    return make_error(ErrorCode::kInvalidArgument,
                      "give either preset or hf_config, not both", path);
  }
  ModelConfig m;
  bool custom = !preset && !hf;
  if (!hf && jsonf::find(v, "strict")) {
    return make_error(ErrorCode::kInvalidArgument, "applies to hf_config imports only", join(path, "strict"));
  }
  if (preset) {
    SC_ASSIGN_OR_RETURN(std::string name, jsonf::get_string(*preset, join(path, "preset")));
    SC_ASSIGN_OR_RETURN(m, model_preset(name, join(path, "preset")));
  } else if (hf) {
    std::string hf_path = join(path, "hf_config");
    if (!hf->is_string() && !hf->is_object()) {
      return make_error(ErrorCode::kInvalidArgument,
                        std::string("must be an object or a string holding config.json text (got ") +
                        jsonf::type_name(*hf) + ")", hf_path);
    }
    std::string text = hf->is_string() ? hf->get<std::string>() : hf->dump();
    bool strict = true;  // false: unmodelled HF keys become warnings (docs/hf-import.md)
    if (const Json* st = jsonf::find(v, "strict")) {
      SC_ASSIGN_OR_RETURN(strict, jsonf::get_bool(*st, join(path, "strict")));
    }
    SC_ASSIGN_OR_RETURN(m, model_from_hf_config(text, hf_path, strict));
  } else {
    for (const char* key : {"num_layers", "hidden", "num_heads", "vocab"}) {
      if (!jsonf::find(v, key)) {
        return make_error(ErrorCode::kInvalidArgument,
                          "required when the model has neither preset nor hf_config",
                          join(path, key));
      }
    }
    m.name = "custom";
  }
  ModelConfig base = m;
  Given given;
  SC_RETURN_IF_ERROR(apply_fields(v, path, &m, &given));
  if (custom) {
    if (!given.kv) m.num_kv_heads = m.num_heads;
    if (!given.head_dim) SC_RETURN_IF_ERROR(head_dim_from_hidden(&m, path));
    if (!given.ffn) m.ffn_hidden = 4 * m.hidden;
    if (!jsonf::find(v, "max_positions")) m.max_positions = 0;  // -> seq_len
    return m;
  }
  // Overrides on a preset/HF base: derived sizes follow unless given. With
  // latent attention head_dim is its own size (qk_nope_head_dim), not h / a.
  if ((given.hidden || given.heads) && !given.head_dim && !m.is_mla()) {
    SC_RETURN_IF_ERROR(head_dim_from_hidden(&m, path));
  }
  if (given.heads && !given.kv && base.num_kv_heads == base.num_heads) m.num_kv_heads = m.num_heads;
  if (given.hidden && !given.ffn && base.ffn_hidden == 4 * base.hidden) m.ffn_hidden = 4 * m.hidden;
  return m;
}

}  // namespace sc::job_internal
