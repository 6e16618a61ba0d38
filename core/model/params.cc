// Closed-form parameter count: embedding, layers, final norm and output
// layer when untied, by the published formulas (independent of the graph
// so tests can hold the graph's count against it).
#include <algorithm>

#include "model/model_config.h"
#include "model/model_internal.h"

namespace sc::model_internal {
namespace {

// Everything in 128-bit so unvalidated input cannot overflow (UB in int64).

__int128 linear(__int128 in, __int128 out, bool bias) { return in * out + (bias ? out : 0); }

__int128 norm_params(const ModelConfig& m, __int128 width) {
  return m.norm == NormKind::kLayerNorm ? 2 * width : width;  // scale (+ shift)
}

// One MLP of width f (a dense MLP, or one expert).
__int128 mlp_params(const ModelConfig& m, __int128 f) {
  const __int128 h = m.hidden;
  const bool b = m.linear_bias;
  __int128 in = linear(h, f, b) * (m.gated_mlp() ? 2 : 1);  // (gate,) up
  return in + linear(f, h, b);                                           // down
}

__int128 attention_params(const ModelConfig& m) {
  const __int128 h = m.hidden, a = m.num_heads;
  const bool b = m.linear_bias;
  if (!m.is_mla()) {
    const __int128 ad = a * m.head_dim, kvd = __int128(m.num_kv_heads) * m.head_dim;
    const bool qb = b || m.qkv_bias;
    __int128 qk_norms = 0;
    if (m.qk_norm)  // q_norm, k_norm: per head (d each), or over all heads (OLMo-2: a d and kv d)
      qk_norms = m.qk_norm_across_heads ? norm_params(m, ad) + norm_params(m, kvd) : 2 * norm_params(m, m.head_dim);
    return linear(h, ad, qb) + 2 * linear(h, kvd, qb) + linear(ad, h, b) + qk_norms;  // q, k, v, o
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

// Mamba-2 mixer (Megatron-Core / HF NemotronH): in_proj h -> [z, x, B, C,
// dt] without bias, depthwise conv1d over [x, B, C] with bias, A_log, D
// and dt_bias per head, the gated norm's weight (d_inner), out_proj d_inner -> h.
__int128 mamba_params(const ModelConfig& m) {
  const __int128 h = m.hidden, heads = m.mamba_heads, inner = __int128(m.mamba_heads) * m.mamba_head_dim;
  const __int128 bc = 2 * __int128(m.mamba_groups) * m.mamba_state;
  const __int128 conv = inner + bc;
  return h * (2 * inner + bc + heads) + conv * m.mamba_conv_kernel + conv + 3 * heads + inner + inner * h;
}

// Mamba-1 mixer (HF JambaMambaMixer with mamba_proj_bias false): in_proj
// h -> 2 d_inner, depthwise conv1d (weight d_inner x K, bias d_inner),
// x_proj d_inner -> dt_rank + 2 N, dt_proj dt_rank -> d_inner with bias,
// A_log d_inner x N, D d_inner, out_proj d_inner -> h, and Jamba's dt/B/C
// norms (RMSNorm: weights of dt_rank + 2 N).
__int128 mamba1_params(const ModelConfig& m) {
  const __int128 h = m.hidden, inner = m.mamba1_inner, n = m.mamba_state, r = m.mamba1_dt_rank;
  return h * 2 * inner + inner * m.mamba_conv_kernel + inner + inner * (r + 2 * n) + r * inner + inner +
         inner * n + inner + inner * h + (m.mamba1_dt_bc_norms ? norm_params(m, r) + 2 * norm_params(m, n) : 0);
}

}  // namespace

WideCount parameters_wide(const ModelConfig& m) {
  const __int128 h = m.hidden, L = m.num_layers;
  if (m.is_hybrid()) {  // one pre-norm block per layer, by the pattern
    const __int128 E = m.num_experts;
    const __int128 expert = m.is_moe() ? mlp_params(m, m.moe_ffn_hidden) : 0;
    const __int128 shared = m.shared_experts > 0 ? mlp_params(m, __int128(m.shared_experts) * m.moe_ffn_hidden) : 0;
    WideCount c;
    for (int64_t l = 0; l < m.num_layers; ++l) {
      c.total += norm_params(m, h);
      switch (m.block(l)) {
        case 'M': c.total += mamba_params(m); break;
        case 'S': c.total += mamba1_params(m); break;
        case '*': c.total += attention_params(m); break;
        case 'E':
          c.total += E * expert + shared + h * E + (m.router_bias ? E : 0);
          c.inactive += (E - m.experts_per_token) * expert;
          break;
        default: c.total += mlp_params(m, m.ffn_hidden); break;
      }
    }
    c.total += __int128(m.vocab) * h + norm_params(m, h);
    if (m.position == PositionKind::kLearned) c.total += __int128(m.max_positions) * h;
    if (!m.tied_embeddings) c.total += __int128(m.vocab) * h;
    return c;
  }
  __int128 moe_layers = 0;  // by the layer rule (first_dense_layers, moe_layer_step, dense_layers)
  if (m.is_moe())
    for (int64_t l = 0; l < m.num_layers; ++l) moe_layers += m.moe_layer(l) ? 1 : 0;
  const __int128 dense_layers = L - moe_layers;
  const __int128 E = m.num_experts;
  const __int128 expert = mlp_params(m, m.moe_ffn_hidden);
  // Routed experts, the shared experts (one MLP of width shared x fe, as
  // Megatron-Core's SharedExpertMLP: with biases, one output bias), router
  // weight h x E (+ per-expert bias).
  const __int128 shared = m.shared_experts > 0 ? mlp_params(m, __int128(m.shared_experts) * m.moe_ffn_hidden) : 0;
  const __int128 moe_mlp = m.is_moe() ? E * expert + shared + h * E + (m.router_bias ? E : 0) +
                                            (m.shared_expert_gate && m.shared_experts > 0 ? h : 0)
                                      : 0;
  const __int128 layer = attention_params(m) + (m.sandwich_norms ? 4 : 2) * norm_params(m, h);
  WideCount c;
  c.total = layer * L + dense_layers * mlp_params(m, m.ffn_hidden) + moe_layers * moe_mlp +
            __int128(m.vocab) * h + norm_params(m, h);
  if (m.position == PositionKind::kLearned) c.total += __int128(m.max_positions) * h;
  if (!m.tied_embeddings) c.total += __int128(m.vocab) * h;
  if (m.is_moe()) c.inactive = moe_layers * (E - m.experts_per_token) * expert;
  if (m.mtp_num_layers > 0) {  // per MTP module: enorm, hnorm, eh_proj (2h -> h, no bias), a layer, its final norm
    const bool moe_mtp = m.mtp_layer_moe();
    const __int128 mtp = 3 * norm_params(m, h) + linear(2 * h, h, false) + layer +
                         (moe_mtp ? moe_mlp : mlp_params(m, m.ffn_hidden));
    c.total += __int128(m.mtp_num_layers) * mtp;
    if (moe_mtp) c.inactive += __int128(m.mtp_num_layers) * (E - m.experts_per_token) * expert;
  }
  return c;
}

}  // namespace sc::model_internal

namespace sc {
namespace {

int64_t clamp_to_int64(__int128 p) {
  constexpr __int128 kMax = INT64_MAX;
  return static_cast<int64_t>(std::clamp<__int128>(p, 0, kMax));
}

}  // namespace

int64_t closed_form_parameters(const ModelConfig& m) {
  return clamp_to_int64(model_internal::parameters_wide(m).total);
}

int64_t closed_form_active_parameters(const ModelConfig& m) {
  model_internal::WideCount c = model_internal::parameters_wide(m);
  return clamp_to_int64(c.total - c.inactive);
}


}  // namespace sc
