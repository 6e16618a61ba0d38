// Published architectures. GPT rows: Megatron-LM (Narayanan et al. 2021,
// arXiv 2104.04473) Table 1, plus GPT-3 175B (Brown et al. 2020); all use
// V = 51200, s = 2048, GeLU MLP with f = 4h, LayerNorm, learned positions,
// tied embeddings, biases and dropout. Llama, Mixtral and DeepSeek rows:
// the models' HF config.json files (RMSNorm, SwiGLU, RoPE, untied, no bias,
// no dropout). Hybrid rows (Mamba-2 or Mamba-1 + attention): below.
// Attention: fused (flash_attention true) for every family trained with a
// fused kernel (Llama 2/3, Mixtral, DeepSeek, Nemotron-H, Jamba: their
// training stacks run FlashAttention / cuDNN fused attention); the GPT-3-era
// rows keep the unfused scores + softmax that Narayanan et al. 2021 ran
// (FlashAttention postdates it, Dao et al. 2022).
#include <algorithm>

#include "model/model_config.h"

namespace sc {
namespace {

struct GptRow { const char* name; int64_t h, a, L; };
constexpr GptRow kGpt[] = {
    {"gpt3-1.7b", 2304, 24, 24},    {"gpt3-3.6b", 3072, 32, 30},
    {"gpt3-7.5b", 4096, 32, 36},    {"gpt3-18b", 6144, 48, 40},
    {"gpt3-39b", 8192, 64, 48},     {"gpt3-76b", 10240, 80, 60},
    {"gpt3-145b", 12288, 96, 80},   {"gpt3-175b", 12288, 96, 96},
    {"gpt3-310b", 16384, 128, 96},  {"gpt3-530b", 20480, 128, 105},
    {"gpt3-1t", 25600, 160, 128},
};

struct LlamaRow { const char* name; int64_t h, L, a, kv, f, V, positions; };
constexpr LlamaRow kLlama[] = {
    {"llama2-7b", 4096, 32, 32, 32, 11008, 32000, 4096},
    {"llama2-13b", 5120, 40, 40, 40, 13824, 32000, 4096},
    {"llama2-70b", 8192, 80, 64, 8, 28672, 32000, 4096},
    {"llama3-8b", 4096, 32, 32, 8, 14336, 128256, 8192},
    {"llama3-70b", 8192, 80, 64, 8, 28672, 128256, 8192},
    // Only released as Llama 3.1 (131072-token RoPE context).
    {"llama3-405b", 16384, 126, 128, 8, 53248, 128256, 131072},
};

// Mixtral: Llama-style attention; every layer's MLP is a top-k mixture of
// E SwiGLU experts of width f (no dense layers, so ffn_hidden = f too).
struct MixtralRow { const char* name; int64_t h, L, a, kv, f, V, positions, E, k; };
constexpr MixtralRow kMixtral[] = {
    {"mixtral-8x7b", 4096, 32, 32, 8, 14336, 32000, 32768, 8, 2},
    {"mixtral-8x22b", 6144, 56, 48, 8, 16384, 32768, 65536, 8, 2},
};

// DeepSeek: multi-head latent attention (q_lora_rank qr, kv_lora_rank kvr,
// per-head no-RoPE dn = head_dim, RoPE dr, value dv); the first
// `dense` layers have a dense MLP of width f, the rest E routed experts
// (top-k) plus `shared` shared experts of width fe and a per-expert
// routing bias. The multi-token-prediction module is not part of it.
struct DeepSeekRow {
  const char* name;
  int64_t h, L, a, qr, kvr, dn, dr, dv, f, dense, fe, E, k, shared, V, positions;
};
constexpr DeepSeekRow kDeepSeek[] = {
    {"deepseek-v3", 7168, 61, 128, 1536, 512, 128, 64, 128, 18432, 3, 2048, 256, 8, 1, 129280,
     163840},
};

// Hybrid Mamba / attention models. One pattern character per layer
// (block): 'M' Mamba-2 mixer, 'S' Mamba-1 mixer, '*' attention, '-' MLP,
// 'E' MoE MLP.
//  - nemotron-h-8b: nvidia/Nemotron-H-8B-Base-8K config.json: hidden_size
//    4096, num_hidden_layers 52, hybrid_override_pattern as below,
//    num_attention_heads 32, num_key_value_heads 8, attention_head_dim 128,
//    intermediate_size 21504 (mlp_hidden_act relu2: squared ReLU, not
//    gated), mamba_num_heads 128, mamba_head_dim 64, n_groups 8,
//    ssm_state_size 128, conv_kernel 4, vocab_size 131072, untied, no
//    biases (mamba_proj_bias, mlp_bias, attention_bias false), RMSNorm,
//    no position embedding (NoPE), max_position_embeddings 8192.
//  - jamba-v0.1-mamba2: ai21labs/Jamba-v0.1's layout (config.json:
//    hidden_size 4096, num_hidden_layers 32, attn_layer_period 8 / offset 4,
//    expert_layer_period 2 / offset 1, num_experts 16, num_experts_per_tok
//    2, intermediate_size 14336 SwiGLU, 32 heads / 8 kv heads, vocab 65536,
//    untied, RMSNorm, no position embedding, mamba_expand 2, mamba_d_state
//    16, mamba_d_conv 4) with Mamba-2 mixers in place of Jamba's Mamba-1
//    (d_inner 8192 = 128 heads x 64, 8 groups). Each Jamba layer is two
//    blocks here (mixer, then MLP or MoE): 64 blocks. Jamba-v0.1 itself has
//    51.57B parameters (12.11B active); this variant 51.49B (12.03B): the
//    Mamba-1 mixer's x_proj/dt_proj/A differ (docs/architecture.md). A
//    what-if variant, kept beside the real model.
//  - jamba-v0.1: ai21labs/Jamba-v0.1 itself (the config.json above,
//    tests/fixtures/hf/jamba-v0.1.config.json): the same layout with its
//    Mamba-1 mixers, d_inner = mamba_expand x h = 8192, mamba_dt_rank 256,
//    mamba_d_state 16, mamba_d_conv 4, conv bias, no projection biases, RMSNorms
//    on dt, B and C. 51,570,323,328 parameters, 12,110,311,296 active.
struct HybridRow {
  const char* name;
  const char* pattern;  // nullptr: Jamba-v0.1's layout with mixer `mixer`
  int64_t h, a, kv, d, f, V, positions;
  MlpKind mlp;
  int64_t mamba_heads, mamba_head_dim, groups, state, conv;
  int64_t E, k, fe;
  char mixer = 'M';  // Jamba layout's Mamba blocks: 'M' Mamba-2, 'S' Mamba-1
  int64_t m1_inner = 0, m1_dt_rank = 0;
  bool m1_norms = false;
};

// Jamba-v0.1: layer l < 32 is attention iff l % attn_layer_period (8) ==
// attn_layer_offset (4), else Mamba; its FFN is MoE iff l %
// expert_layer_period (2) == expert_layer_offset (1). Two blocks per layer.
std::string jamba_pattern(char mixer) {
  std::string p;
  for (int l = 0; l < 32; ++l) {
    p += l % 8 == 4 ? '*' : mixer;
    p += l % 2 == 1 ? 'E' : '-';
  }
  return p;
}

const HybridRow kHybrid[] = {
    {"nemotron-h-8b", "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-", 4096, 32, 8, 128, 21504, 131072,
     8192, MlpKind::kReLU2, 128, 64, 8, 128, 4, 0, 0, 0},
    {"jamba-v0.1-mamba2", nullptr, 4096, 32, 8, 128, 14336, 65536, 262144, MlpKind::kSwiGLU, 128, 64, 8, 16, 4, 16, 2,
     14336},
    {"jamba-v0.1", nullptr, 4096, 32, 8, 128, 14336, 65536, 262144, MlpKind::kSwiGLU, 0, 0, 0, 16, 4, 16, 2, 14336,
     'S', 8192, 256, true},
};

ModelConfig hybrid(const HybridRow& r) {
  ModelConfig m;
  m.name = r.name;
  m.hybrid_pattern = r.pattern ? std::string(r.pattern) : jamba_pattern(r.mixer);
  m.num_layers = static_cast<int64_t>(m.hybrid_pattern.size());
  m.hidden = r.h;
  m.num_heads = r.a;
  m.num_kv_heads = r.kv;
  m.head_dim = r.d;
  m.ffn_hidden = r.f;
  m.vocab = r.V;
  m.max_positions = r.positions;
  m.norm = NormKind::kRMSNorm;
  m.mlp = r.mlp;
  m.position = PositionKind::kNone;
  m.tied_embeddings = false;
  m.linear_bias = false;
  m.dropout = false;
  m.mamba_heads = r.mamba_heads;
  m.mamba_head_dim = r.mamba_head_dim;
  m.mamba_groups = r.groups;
  m.mamba_state = r.state;
  m.mamba_conv_kernel = r.conv;
  m.flash_attention = true;
  m.mamba1_inner = r.m1_inner;
  m.mamba1_dt_rank = r.m1_dt_rank;
  m.mamba1_dt_bc_norms = r.m1_norms;
  m.num_experts = r.E;
  m.experts_per_token = r.k;
  m.moe_ffn_hidden = r.fe;
  return m;
}

ModelConfig gpt(const GptRow& r) {
  ModelConfig m;
  m.name = r.name;
  m.num_layers = r.L;
  m.hidden = r.h;
  m.num_heads = r.a;
  m.num_kv_heads = r.a;
  m.head_dim = r.h / r.a;
  m.ffn_hidden = 4 * r.h;
  m.vocab = 51200;
  m.max_positions = 2048;
  m.norm = NormKind::kLayerNorm;
  m.mlp = MlpKind::kGelu;
  m.position = PositionKind::kLearned;
  m.tied_embeddings = true;
  m.linear_bias = true;
  m.dropout = true;
  m.flash_attention = false;  // unfused, as Narayanan et al. 2021 ran it
  return m;
}

ModelConfig llama(const LlamaRow& r) {
  ModelConfig m;
  m.name = r.name;
  m.num_layers = r.L;
  m.hidden = r.h;
  m.num_heads = r.a;
  m.num_kv_heads = r.kv;
  m.head_dim = r.h / r.a;
  m.ffn_hidden = r.f;
  m.vocab = r.V;
  m.max_positions = r.positions;
  m.norm = NormKind::kRMSNorm;
  m.mlp = MlpKind::kSwiGLU;
  m.position = PositionKind::kRope;
  m.tied_embeddings = false;
  m.linear_bias = false;
  m.dropout = false;
  m.flash_attention = true;
  return m;
}

ModelConfig mixtral(const MixtralRow& r) {
  ModelConfig m = llama({r.name, r.h, r.L, r.a, r.kv, r.f, r.V, r.positions});
  m.num_experts = r.E;
  m.experts_per_token = r.k;
  m.moe_ffn_hidden = r.f;
  return m;
}

ModelConfig deepseek(const DeepSeekRow& r) {
  ModelConfig m = llama({r.name, r.h, r.L, r.a, r.a, r.f, r.V, r.positions});
  m.head_dim = r.dn;
  m.q_lora_rank = r.qr;
  m.kv_lora_rank = r.kvr;
  m.qk_rope_head_dim = r.dr;
  m.v_head_dim = r.dv;
  m.num_experts = r.E;
  m.experts_per_token = r.k;
  m.moe_ffn_hidden = r.fe;
  m.shared_experts = r.shared;
  m.first_dense_layers = r.dense;
  m.router_bias = true;  // V3's noaux_tc routing: e_score_correction_bias
  return m;
}

}  // namespace

std::vector<std::string> preset_names() {
  std::vector<std::string> names;
  for (const GptRow& r : kGpt) names.emplace_back(r.name);
  for (const LlamaRow& r : kLlama) names.emplace_back(r.name);
  for (const MixtralRow& r : kMixtral) names.emplace_back(r.name);
  for (const DeepSeekRow& r : kDeepSeek) names.emplace_back(r.name);
  for (const HybridRow& r : kHybrid) names.emplace_back(r.name);
  std::sort(names.begin(), names.end());
  return names;
}

Result<ModelConfig> model_preset(const std::string& name, const std::string& path) {
  for (const GptRow& r : kGpt) {
    if (name == r.name) return gpt(r);
  }
  for (const LlamaRow& r : kLlama) {
    if (name == r.name) return llama(r);
  }
  for (const MixtralRow& r : kMixtral) {
    if (name == r.name) return mixtral(r);
  }
  for (const DeepSeekRow& r : kDeepSeek) {
    if (name == r.name) return deepseek(r);
  }
  for (const HybridRow& r : kHybrid) {
    if (name == r.name) return hybrid(r);
  }
  std::string list;
  for (const std::string& n : preset_names()) list += (list.empty() ? "" : ", ") + n;
  return make_error(ErrorCode::kInvalidArgument,
                    "unknown model preset \"" + echo_text(name) + "\" (known: " + list + ")", path);
}

}  // namespace sc
