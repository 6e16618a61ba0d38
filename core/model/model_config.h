// Architecture of a decoder-only transformer, as published numbers.
// Pure data: the builder (model/transformer.h) turns it into a graph.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"

namespace sc {

enum class NormKind { kLayerNorm, kRMSNorm };
// kReLU2: squared ReLU, not gated (Nemotron-H); kGeGLU: gated like SwiGLU
// with the tanh GeLU in place of SiLU (Gemma).
enum class MlpKind { kGelu, kSwiGLU, kReLU2, kGeGLU };
enum class PositionKind { kLearned, kRope, kNone };  // kNone: no positional encoding (NoPE hybrids)

struct ModelConfig {
  std::string name;            // preset name or "custom"/"hf:<model_type>"
  int64_t num_layers = 0;      // L
  int64_t hidden = 0;          // h
  int64_t num_heads = 0;       // a
  int64_t num_kv_heads = 0;    // kv (== a: MHA, 1: MQA, else GQA)
  int64_t head_dim = 0;        // d (usually h / a)
  int64_t ffn_hidden = 0;      // f (4h for GPT, SwiGLU width for Llama)
  int64_t vocab = 0;           // V
  int64_t max_positions = 0;   // learned position table rows (GPT)
  NormKind norm = NormKind::kLayerNorm;
  MlpKind mlp = MlpKind::kGelu;
  PositionKind position = PositionKind::kLearned;
  bool tied_embeddings = true;  // output layer reuses the token embedding
  bool linear_bias = true;      // biases on the linear layers (GPT: yes)
  bool dropout = true;          // hidden + attention dropout (GPT: 0.1)
  bool flash_attention = false; // fused attention: no s^2 activations saved
  // Biases on the q, k and v projections only (Qwen2), whatever linear_bias
  // says of the other linears: a bias add on the column-parallel qkv output.
  bool qkv_bias = false;
  // Per-head RMSNorm of q and k over head_dim before RoPE (Qwen3, Gemma-3):
  // two weights of head_dim per layer, replicated over tp.
  bool qk_norm = false;
  // Sliding-window attention (Mistral-7B-v0.1, Phi-3): a windowed layer's
  // queries attend to the last sliding_window keys only; 0 = full attention.
  // Its kernel visits the causal band (query i: min(i + 1, w) keys; score
  // and value FLOPs over those keys, fused or not), and non-fused attention
  // stores s x min(s, w) scores instead of s x s (docs/hf-import.md).
  int64_t sliding_window = 0;
  // Local/global alternation of a windowed model (Gemma-2/3): 0 or 1, every
  // layer windowed; p >= 2, layer l is global (full attention) iff
  // (l + 1) % p == 0 (Gemma-2: p = 2, even layers local; Gemma-3: 6).
  int64_t window_pattern = 0;
  // Pre- and post-sublayer norms (Gemma-2/3's four per layer): each
  // sublayer's output is normalized before the residual add.
  bool sandwich_norms = false;
  // Post-sublayer norms only (OLMo-2): no norm before attention or the
  // MLP; each sublayer's output is normalized before the residual add.
  // Two norms per layer, like the pre-norm layout.
  bool post_norms = false;
  // With qk_norm: one RMSNorm over all heads' features of q (a x d) and
  // one over k (kv x d) (OLMo-2), instead of per head over d (Qwen3).
  bool qk_norm_across_heads = false;
  // Partial rotary embedding (Phi-4-mini's partial_rotary_factor 0.75):
  // RoPE rotates the first rotary_dim features of each q/k head only;
  // 0 = the whole head_dim. No parameters; the rope ops' FLOPs scale.
  int64_t rotary_dim = 0;
  // With sliding_window: layers below window_first_layer use full
  // attention (Qwen2's max_window_layers); 0 = every layer may be windowed.
  int64_t window_first_layer = 0;
  // Logit soft-capping c tanh(x / c) (Gemma-2): on the attention scores
  // (attn_softcap = c; non-fused attention only) and on the output logits
  // (final_softcap = c); 0 = off. An element-wise op each.
  double attn_softcap = 0;
  double final_softcap = 0;
  // Constant multipliers, 1 = none (an element-wise op each when not 1):
  // the embedding output (Granite's embedding_multiplier, Gemma's
  // sqrt(hidden)), each sublayer's output before its residual add (Granite's
  // residual_multiplier), and the logits (Granite divides by logits_scaling:
  // logit_multiplier = 1 / logits_scaling).
  double embedding_multiplier = 1;
  double residual_multiplier = 1;
  double logit_multiplier = 1;

  // What a Hugging Face import recognised (empty for presets and custom
  // models): the family (model_type), the features it turned on, and, for
  // a non-strict import, the fields it could not model.
  std::string hf_family;
  std::vector<std::string> hf_features;
  std::vector<std::string> hf_warnings;

  // Mixture of experts (num_experts == 0: every MLP is dense). An MoE
  // layer's MLP is a router over num_experts routed experts, each token
  // going to experts_per_token of them, plus shared_experts always-active
  // experts; every expert is an MLP (kind `mlp`) of width moe_ffn_hidden.
  // The first first_dense_layers layers keep a dense MLP of width ffn_hidden
  // (DeepSeek's first_k_dense_replace).
  int64_t num_experts = 0;         // E
  int64_t experts_per_token = 0;   // k (top-k)
  int64_t moe_ffn_hidden = 0;      // fe
  int64_t shared_experts = 0;      // always-active experts (DeepSeek: 1)
  int64_t first_dense_layers = 0;
  // Tokens one expert takes from one source rank: ceil(capacity_factor *
  // T * k / E) for T local tokens (routing is uniform; > 1 pads buffers).
  double capacity_factor = 1.0;
  bool router_bias = false;        // per-expert routing bias (DeepSeek-V3's e_score_correction_bias)
  // The shared experts' output is scaled by sigmoid(x . w_g), w_g of h
  // (Qwen2-MoE's shared_expert_gate).
  bool shared_expert_gate = false;
  // Qwen-MoE layer rule (decoder_sparse_step / mlp_only_layers): with
  // moe_layer_step p >= 2 only layers l with (l + 1) % p == 0 are MoE;
  // layers in dense_layers keep a dense MLP of width ffn_hidden (as do the
  // first first_dense_layers). 0 or 1 and empty: every layer from
  // first_dense_layers on is MoE.
  int64_t moe_layer_step = 0;
  std::vector<int64_t> dense_layers;

  // Multi-head latent attention (DeepSeek; on when kv_lora_rank > 0).
  // head_dim is then the no-RoPE part of a query/key head
  // (qk_nope_head_dim); num_kv_heads equals num_heads.
  int64_t q_lora_rank = 0;         // 0: queries projected directly from h
  int64_t kv_lora_rank = 0;        // compressed K/V latent width
  int64_t qk_rope_head_dim = 0;    // RoPE part of a query/key head (key part shared by all heads)
  int64_t v_head_dim = 0;          // value head width

  // Hybrid models (Nemotron-H, Jamba): one character per layer (block),
  // each a pre-norm block with a residual: 'M' a Mamba-2 mixer, 'S' a
  // Mamba-1 (S6) mixer, '*' attention, '-' a dense MLP, 'E' an MoE MLP. Empty: every layer is
  // attention + MLP (the transformer above). A pattern shorter than
  // num_layers repeats; a longer one is cut (layer overrides in tests).
  std::string hybrid_pattern;
  // Mamba-2 (SSD) mixer (Dao & Gu 2024; Megatron-Core's MambaMixer):
  // in_proj h -> [z, x, B, C, dt], depthwise causal conv1d over [x, B, C],
  // the selective scan with state, gated RMSNorm, out_proj d_inner -> h.
  int64_t mamba_heads = 0;        // nheads (split over tp)
  int64_t mamba_head_dim = 0;     // head dim p; d_inner = nheads x p
  int64_t mamba_groups = 0;       // n_groups of B and C (split over tp)
  int64_t mamba_state = 0;        // d_state N (Mamba-1 and Mamba-2)
  int64_t mamba_conv_kernel = 0;  // causal conv1d width (Mamba-1 and Mamba-2)
  // Mamba-1 (S6, Gu & Dao 2023; HF Jamba's JambaMambaMixer): in_proj
  // h -> [x, z] (2 d_inner), depthwise causal conv1d over x, x_proj d_inner
  // -> [dt, B, C] (dt_rank + 2 d_state), dt_proj dt_rank -> d_inner (its
  // bias enters the scan), A_log d_inner x d_state, D, the selective scan
  // gated by silu(z), out_proj d_inner -> h. No biases on in/x/out_proj,
  // a conv bias. Channels (d_inner) split over tp.
  int64_t mamba1_inner = 0;         // d_inner (Jamba: mamba_expand x h)
  int64_t mamba1_dt_rank = 0;       // dt_rank
  bool mamba1_dt_bc_norms = false;  // RMSNorms on dt, B and C after x_proj (Jamba)

  // Multi-token prediction (DeepSeek-V3; Megatron-Core's --mtp-num-layers):
  // training only. Each of the mtp_num_layers modules runs on the last
  // pipeline stage after the decoder: RMSNorms of the previous depth's
  // hidden states and of the embedding of the tokens one step further
  // (enorm, hnorm), their concatenation projected 2h -> h (eh_proj,
  // column-parallel, gathered over tp), one transformer layer (dense or MoE
  // as the last decoder layer, windowed as Megatron-Core decides for a
  // layer numbered k + 1), a final norm, and the shared output layer with a
  // cross entropy of its own. 0: none.
  int64_t mtp_num_layers = 0;
  // Not a job key: the planner's cut-down proxy models keep the full
  // model's MTP layer kind here (1 MoE, 0 dense); -1: the last layer's.
  int mtp_moe_kind = -1;

  bool is_moe() const { return num_experts > 0; }
  // Whether a pipelined training job keeps a copy of the word embedding on
  // the last stage, its gradient summed with the first stage's over the
  // embedding group: a tied output layer, or MTP's embedding.
  bool last_stage_embeds() const { return tied_embeddings || mtp_num_layers > 0; }
  // Whether the MTP modules' layers are MoE layers: Megatron-Core builds
  // them from the last decoder layer's spec (gpt_layer_specs.py,
  // get_gpt_mtp_block_spec).
  bool mtp_layer_moe() const { return mtp_moe_kind >= 0 ? mtp_moe_kind == 1 : moe_layer(num_layers - 1); }
  // Layer l's MLP kind and attention window; l >= num_layers is MTP module
  // l - num_layers (its window as Megatron-Core's is_layer_window_attention
  // decides for layer number l - num_layers + 1).
  bool layer_moe(int64_t l) const { return l < num_layers ? moe_layer(l) : mtp_layer_moe(); }
  bool layer_windowed(int64_t l) const { return windowed_layer(l < num_layers ? l : l - num_layers); }
  // Whether layer `layer`'s attention is windowed.
  bool windowed_layer(int64_t layer) const {
    return sliding_window > 0 && layer >= window_first_layer &&
           (window_pattern < 2 || (layer + 1) % window_pattern != 0);
  }
  // Key positions layer `layer` attends to (and keeps in a KV cache) for
  // a query at the end of a context of `context` tokens: the window on a
  // windowed layer, else the whole context.
  int64_t kv_positions(int64_t layer, int64_t context) const {
    return windowed_layer(layer) && sliding_window < context ? sliding_window : context;
  }
  // The RoPE width of a q/k head (partial rotary: rotary_dim).
  int64_t rope_dim() const { return rotary_dim > 0 ? rotary_dim : head_dim; }
  bool gated_mlp() const { return mlp == MlpKind::kSwiGLU || mlp == MlpKind::kGeGLU; }
  bool is_mla() const { return kv_lora_rank > 0; }
  bool is_hybrid() const { return !hybrid_pattern.empty(); }
  // The block kind of layer `layer`: 'M', 'S', '*', '-', 'E' (hybrid models).
  char block(int64_t layer) const {
    return hybrid_pattern[static_cast<size_t>(layer) % hybrid_pattern.size()];
  }
  bool has_mamba() const { return is_hybrid() && hybrid_pattern.find('M') != std::string::npos; }  // Mamba-2
  bool has_mamba1() const { return is_hybrid() && hybrid_pattern.find('S') != std::string::npos; }
  bool has_ssm() const { return has_mamba() || has_mamba1(); }  // any state-space mixer
  bool moe_layer(int64_t layer) const {
    if (is_hybrid()) return block(layer) == 'E';
    if (!is_moe() || layer < first_dense_layers) return false;
    if (moe_layer_step >= 2 && (layer + 1) % moe_layer_step != 0) return false;
    return !std::binary_search(dense_layers.begin(), dense_layers.end(), layer);  // sorted (validate_model)
  }
  int64_t mamba_inner() const { return mamba_heads * mamba_head_dim; }                 // d_inner
  int64_t mamba_conv_dim() const { return mamba_inner() + 2 * mamba_groups * mamba_state; }  // [x, B, C]
  int64_t mamba_in_proj_dim() const { return 2 * mamba_inner() + 2 * mamba_groups * mamba_state + mamba_heads; }
  int64_t mamba1_x_proj_dim() const { return mamba1_dt_rank + 2 * mamba_state; }  // [dt, B, C]
  int64_t qk_head_dim() const { return head_dim + (is_mla() ? qk_rope_head_dim : 0); }
  int64_t value_head_dim() const { return is_mla() ? v_head_dim : head_dim; }
};

// Names of all presets, sorted.
std::vector<std::string> preset_names();

// Published architecture for a preset name (exact match), or an error that
// lists the known names. path is used for the error ("model.preset").
Result<ModelConfig> model_preset(const std::string& name,
                                 const std::string& path = "model.preset");

// Parses a Hugging Face config.json text by its model_type, with that
// family's defaults (docs/hf-import.md lists the families and features).
// Exact or refused: an unknown model_type, or a key of a known family that
// would change compute or memory and is not modelled, is an error naming
// the key (kUnsupported). strict = false turns the latter into
// hf_warnings instead. Keys without effect on compute are ignored; missing
// required keys and bad values are errors that name the key.
Result<ModelConfig> model_from_hf_config(const std::string& json_text,
                                         const std::string& path = "model.hf_config",
                                         bool strict = true);

// Checks internal consistency (positive sizes, heads * head_dim relation,
// kv divides heads, absurd sizes). path prefixes field names ("model").
Status validate_model(const ModelConfig& m, const std::string& path = "model");

// What the model needs of the parallel layout beyond the transformer's
// rules: a Mamba-2 mixer splits its heads and groups over tp (as
// Megatron-Core does), a Mamba-1 mixer its d_inner channels, and context
// parallelism is refused for either (the scan
// carries its state along the whole sequence; not modelled). Errors name
// parallel.tp / parallel.cp.
Status validate_model_parallel(const ModelConfig& m, int64_t tp, int64_t cp);

// Exact parameter count by closed form (embedding, layers, final norm, and
// output layer when untied). Independent of the graph so tests can compare
// the graph's count against it.
int64_t closed_form_parameters(const ModelConfig& m);

// Parameters one token uses: the total less the routed experts it is not
// sent to ((E - k) experts of every MoE layer). Equals the total for a
// dense model.
int64_t closed_form_active_parameters(const ModelConfig& m);

}  // namespace sc
