// Model validation: internal consistency of a ModelConfig, every error
// naming the field.
#include "model/model_config.h"

#include <cstdio>
#include <utility>

#include "base/json_fields.h"
#include "model/model_internal.h"

namespace sc {
namespace {

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


// Hybrid layer pattern and the Mamba-2 / Mamba-1 mixers' sizes.
Status validate_hybrid(const ModelConfig& m, const std::string& path) {
  using std::to_string;
  auto at = [&](const char* f) { return jsonf::join(path, f); };
  const std::pair<const char*, int64_t> mamba2_fields[] = {
      {"mamba_heads", m.mamba_heads}, {"mamba_head_dim", m.mamba_head_dim}, {"mamba_groups", m.mamba_groups}};
  const std::pair<const char*, int64_t> shared_fields[] = {{"mamba_state", m.mamba_state},
                                                           {"mamba_conv_kernel", m.mamba_conv_kernel}};
  const std::pair<const char*, int64_t> mamba1_fields[] = {{"mamba1_inner", m.mamba1_inner},
                                                           {"mamba1_dt_rank", m.mamba1_dt_rank}};
  auto unused = [&](const char* field, int64_t v, const char* what) -> Status {
    if (v == 0) return ok_status();
    return make_error(ErrorCode::kInvalidArgument,
                      std::string(field) + " (" + to_string(v) + ") is " + what + " (got \"" + m.hybrid_pattern +
                          "\"); leave it 0",
                      at(field));
  };
  if (!m.has_mamba())
    for (const auto& [field, v] : mamba2_fields)
      SC_RETURN_IF_ERROR(unused(field, v, "a Mamba-2 size and needs 'M' layers in hybrid_pattern"));
  if (!m.has_ssm())
    for (const auto& [field, v] : shared_fields)
      SC_RETURN_IF_ERROR(unused(field, v, "a Mamba size and needs 'M' or 'S' layers in hybrid_pattern"));
  if (!m.has_mamba1()) {
    for (const auto& [field, v] : mamba1_fields)
      SC_RETURN_IF_ERROR(unused(field, v, "a Mamba-1 size and needs 'S' layers in hybrid_pattern"));
    if (m.mamba1_dt_bc_norms)
      return make_error(ErrorCode::kInvalidArgument,
                        "is a Mamba-1 option and needs 'S' layers in hybrid_pattern (got \"" + m.hybrid_pattern +
                            "\")",
                        at("mamba1_dt_bc_norms"));
  }
  if (!m.is_hybrid()) return ok_status();
  if (m.hybrid_pattern.size() > static_cast<size_t>(limits::kMaxLayers))
    return make_error(ErrorCode::kInvalidArgument,
                      "is " + to_string(m.hybrid_pattern.size()) + " characters long (at most " +
                          to_string(limits::kMaxLayers) + ", one per layer)", at("hybrid_pattern"));
  for (size_t i = 0; i < m.hybrid_pattern.size(); ++i) {
    const char c = m.hybrid_pattern[i];
    if (c != 'M' && c != 'S' && c != '*' && c != '-' && c != 'E')
      return make_error(ErrorCode::kInvalidArgument,
                        std::string("unknown layer kind '") + c + "' at position " + to_string(i) +
                            " (known: M = Mamba-2, S = Mamba-1, * = attention, - = MLP, E = MoE MLP)",
                        at("hybrid_pattern"));
    if (c == 'E' && !m.is_moe())
      return make_error(ErrorCode::kInvalidArgument,
                        "has an MoE layer 'E' at position " + to_string(i) + " but num_experts is 0",
                        at("hybrid_pattern"));
  }
  if (m.first_dense_layers != 0)
    return make_error(ErrorCode::kInvalidArgument,
                      "must be 0 with a hybrid_pattern (the pattern says which layers are MoE, 'E') (got " +
                          to_string(m.first_dense_layers) + ")", at("first_dense_layers"));
  if (m.has_ssm())
    for (const auto& [field, v] : shared_fields) SC_RETURN_IF_ERROR(in_range(v, 1, limits::kMaxHidden, at(field)));
  if (m.has_mamba1()) {
    for (const auto& [field, v] : mamba1_fields) SC_RETURN_IF_ERROR(in_range(v, 1, limits::kMaxHidden, at(field)));
    if (2 * m.mamba1_inner > limits::kMaxFfn || m.mamba1_x_proj_dim() > limits::kMaxFfn)
      return make_error(ErrorCode::kInvalidArgument,
                        jsonf::cap_message("Mamba-1 in_proj width 2 x mamba1_inner",
                                           double(2 * m.mamba1_inner), double(limits::kMaxFfn)),
                        at("mamba1_inner"));
  }
  if (!m.has_mamba()) return ok_status();
  for (const auto& [field, v] : mamba2_fields)
    SC_RETURN_IF_ERROR(in_range(v, 1, limits::kMaxHidden, at(field)));
  if (m.mamba_heads % m.mamba_groups != 0)
    return make_error(ErrorCode::kNotDivisible,
                      "mamba_heads (" + to_string(m.mamba_heads) + ") is not divisible by mamba_groups (" +
                          to_string(m.mamba_groups) + ")", at("mamba_groups"));
  if (m.mamba_in_proj_dim() > limits::kMaxFfn)
    return make_error(ErrorCode::kInvalidArgument,
                      jsonf::cap_message("Mamba in_proj width 2 x heads x head_dim + 2 x groups x state + heads",
                                         double(m.mamba_in_proj_dim()), double(limits::kMaxFfn)),
                      at("mamba_heads"));
  return ok_status();
}

}  // namespace

Status validate_model_parallel(const ModelConfig& m, int64_t tp, int64_t cp) {
  using std::to_string;
  if (m.sliding_window > 0 && cp > 1)
    return make_error(ErrorCode::kUnsupported,
                      "context parallelism (cp = " + to_string(cp) +
                          ") with sliding-window attention (sliding_window = " + to_string(m.sliding_window) +
                          ") is not modelled: which keys each cp chunk needs depends on the window; use cp = 1",
                      "parallel.cp");
  if (m.attn_softcap > 0 && cp > 1)
    return make_error(ErrorCode::kUnsupported,
                      "context parallelism (cp = " + to_string(cp) +
                          ") with attention soft-capping is not modelled (ring attention is fused); use cp = 1",
                      "parallel.cp");
  if (!m.has_ssm()) return ok_status();
  if (cp > 1)
    return make_error(ErrorCode::kUnsupported,
                      "context parallelism (cp = " + to_string(cp) + ") is not supported for models with " +
                          (m.has_mamba() ? "Mamba-2" : "Mamba-1") +
                          " layers: the selective scan carries its "
                          "state through the whole sequence, and passing it between cp ranks is not modelled; "
                          "use cp = 1 (tp, sp, dp, pp and ep work)", "parallel.cp");
  if (m.has_mamba1() && m.mamba1_inner % tp != 0)
    return make_error(ErrorCode::kNotDivisible,
                      "mamba1_inner (" + to_string(m.mamba1_inner) + ") is not divisible by tp (" + to_string(tp) +
                          "): Mamba-1 layers split their d_inner channels over tp", "parallel.tp");
  if (!m.has_mamba()) return ok_status();
  if (m.mamba_heads % tp != 0)
    return make_error(ErrorCode::kNotDivisible,
                      "mamba_heads (" + to_string(m.mamba_heads) + ") is not divisible by tp (" + to_string(tp) +
                          "): Mamba-2 layers split their heads over tp", "parallel.tp");
  if (m.mamba_groups % tp != 0)
    return make_error(ErrorCode::kNotDivisible,
                      "mamba_groups (" + to_string(m.mamba_groups) + ") is not divisible by tp (" + to_string(tp) +
                          "): Mamba-2 layers split the B/C groups over tp with their heads", "parallel.tp");
  return ok_status();
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
  SC_RETURN_IF_ERROR(in_range(m.sliding_window, 0, kMaxPositions, at("sliding_window")));
  SC_RETURN_IF_ERROR(in_range(m.window_pattern, 0, kMaxLayers, at("window_pattern")));
  SC_RETURN_IF_ERROR(in_range(m.mtp_num_layers, 0, kMaxLayers, at("mtp_num_layers")));
  if (m.mtp_num_layers > 0 && m.is_hybrid())
    return make_error(ErrorCode::kUnsupported,
                      "multi-token prediction on a hybrid (hybrid_pattern) model is not modelled; set it to 0",
                      at("mtp_num_layers"));
  if (m.mtp_num_layers > 0 && m.position == PositionKind::kLearned)
    return make_error(ErrorCode::kUnsupported,
                      "multi-token prediction with learned positions (position: learned) is not modelled; set it "
                      "to 0",
                      at("mtp_num_layers"));
  for (auto [v, f] : {std::pair{m.embedding_multiplier, "embedding_multiplier"},
                      std::pair{m.residual_multiplier, "residual_multiplier"},
                      std::pair{m.logit_multiplier, "logit_multiplier"}}) {
    if (!(v > 0 && v <= 1e9))
    {
      char got[48];
      std::snprintf(got, sizeof got, "%.10g", v);
      return make_error(ErrorCode::kInvalidArgument, std::string("must be in (0, 1e9] (1: none; got ") + got + ")", at(f));
    }
  }
  for (auto [v, f] : {std::pair{m.attn_softcap, "attn_softcap"}, std::pair{m.final_softcap, "final_softcap"}}) {
    if (!(v >= 0 && v <= 1e9)) {
      return make_error(ErrorCode::kInvalidArgument, "must be in [0, 1e9] (0: off)", at(f));
    }
  }
  if (m.attn_softcap > 0 && m.flash_attention) {
    return make_error(ErrorCode::kUnsupported,
                      "attention soft-capping (attn_softcap) inside fused attention is not modelled; "
                      "use flash_attention false (the scores are then capped element-wise)",
                      at("flash_attention"));
  }
  SC_RETURN_IF_ERROR(in_range(m.window_first_layer, 0, kMaxLayers, at("window_first_layer")));
  if (m.window_first_layer > 0 && m.sliding_window == 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "window_first_layer (" + to_string(m.window_first_layer) +
                          ") needs sliding_window > 0 (got 0); leave it 0", at("window_first_layer"));
  }
  if (m.post_norms && m.sandwich_norms) {
    return make_error(ErrorCode::kInvalidArgument,
                      "post_norms (norms after each sublayer only) and sandwich_norms (before and after) "
                      "exclude each other", at("post_norms"));
  }
  if (m.qk_norm_across_heads && !m.qk_norm) {
    return make_error(ErrorCode::kInvalidArgument, "needs qk_norm true (it says how q and k are normalized)",
                      at("qk_norm_across_heads"));
  }
  SC_RETURN_IF_ERROR(in_range(m.rotary_dim, 0, m.head_dim, at("rotary_dim")));
  if (m.rotary_dim % 2 != 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "must be even (RoPE rotates pairs of features) (got " + to_string(m.rotary_dim) + ")",
                      at("rotary_dim"));
  }
  if (m.rotary_dim > 0 && (m.position != PositionKind::kRope || m.is_mla())) {
    return make_error(ErrorCode::kInvalidArgument,
                      "partial rotary needs position \"rope\" and standard attention (MLA has its own "
                      "qk_rope_head_dim)", at("rotary_dim"));
  }
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
    if (m.moe_layer_step != 0 || !m.dense_layers.empty()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "is a mixture-of-experts setting and needs num_experts > 0 (got num_experts = 0)",
                        at(m.moe_layer_step != 0 ? "moe_layer_step" : "dense_layers"));
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
    SC_RETURN_IF_ERROR(in_range(m.moe_layer_step, 0, kMaxLayers, at("moe_layer_step")));
    for (size_t i = 0; i < m.dense_layers.size(); ++i) {
      const std::string p = at("dense_layers") + "[" + to_string(i) + "]";
      SC_RETURN_IF_ERROR(in_range(m.dense_layers[i], 0, kMaxLayers - 1, p));
      if (m.dense_layers[i] >= m.num_layers)  // as first_dense_layers: nothing follows a cut
        return make_error(ErrorCode::kInvalidArgument,
                          "must be a layer index below num_layers (" + to_string(m.num_layers) + ") (got " +
                              to_string(m.dense_layers[i]) + ")",
                          p);
      if (i > 0 && m.dense_layers[i] <= m.dense_layers[i - 1]) {
        return make_error(ErrorCode::kInvalidArgument,
                          "layer indices must be strictly increasing (got " + to_string(m.dense_layers[i - 1]) +
                              " then " + to_string(m.dense_layers[i]) + ")", p);
      }
    }
    if (m.is_hybrid() && (m.moe_layer_step != 0 || !m.dense_layers.empty())) {
      return make_error(ErrorCode::kInvalidArgument,
                        "must be unset with a hybrid_pattern (the pattern says which layers are MoE, 'E')",
                        at(m.moe_layer_step != 0 ? "moe_layer_step" : "dense_layers"));
    }
    if (!(m.capacity_factor >= 1 && m.capacity_factor <= kMaxCapacityFactor)) {
      return make_error(ErrorCode::kInvalidArgument,
                        "must be finite, >= 1 and <= " + fmt(kMaxCapacityFactor) + " (got " +
                        fmt(m.capacity_factor) + "); routing is modelled as uniform, so the "
                        "factor only pads expert buffers and a value below 1 would drop tokens",
                        at("capacity_factor"));
    }
  }

  SC_RETURN_IF_ERROR(validate_hybrid(m, path));

  double params = static_cast<double>(model_internal::parameters_wide(m).total);
  if (params > kMaxParameters) {
    return make_error(ErrorCode::kInvalidArgument,
                      jsonf::cap_message("closed-form parameter count", params, kMaxParameters), path);
  }
  return ok_status();
}


}  // namespace sc
