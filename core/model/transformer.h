// Builds the forward graph of a decoder-only transformer (one micro-batch)
// with Megatron's tensor-parallel weight shardings: QKV and MLP-in are
// column-parallel (output features on tp), attention-out and MLP-out are
// row-parallel (input features on tp), embedding and output layer are
// vocab-parallel. Activations are left unsharded except the batch dim on
// dp; sharding propagation (parallel/propagate.h) derives the rest.
//
// Symbols used in shapes: b micro-batch per dp rank, s sequence, h hidden,
// a heads, kv kv-heads, d head dim, f ffn hidden, V vocab, P positions,
// qkv = (a + 2 kv) d, and the mesh axes tp, dp.
#pragma once

#include "base/status.h"
#include "graph/graph.h"
#include "model/model_config.h"

namespace sc {

// One model chunk of a rank's program: layers [first_layer, end_layer) of
// virtual pipeline stage `virtual_stage` (of `num_virtual` in all).
struct Chunk {
  int64_t first_layer = 0, end_layer = 0;
  int64_t virtual_stage = 0;
};

struct BuildOptions {
  bool has_tp = false;  // tp degree > 1: shard weights over "tp"
  bool has_dp = false;  // dp degree > 1: shard the batch over "dp"
  bool has_cp = false;  // cp degree > 1: shard the sequence over "cp"
  bool cp_ring = false; // ring attention instead of all-gathering K/V
  bool sequence_parallel = false;  // boundary activations are s-sharded on tp
  // Expert layout of the MoE layers (degree > 1 each): expert parallelism,
  // expert tensor parallelism, expert data parallelism.
  bool has_ep = false, has_etp = false, has_edp = false;
  DType dtype = DType::kBF16;
  // The chunks this rank role runs, in order; empty = the whole model.
  std::vector<Chunk> chunks;
  int64_t num_virtual = 1;  // virtual stages of the whole pipeline (pp * v)
  // Inference (docs/inference.md): forward only over one serving
  // iteration's tokens, flattened per attention-dp rank (b = 1, s = the
  // iteration's tokens). K/V (MLA: the latent and the RoPE key) are written
  // to the paged cache; attention reads Lk cached tokens over `pairs`
  // query-key pairs; the head computes logits of the `n` sampled tokens.
  bool inference = false;
  bool mla_absorbed = false;  // MLA: attention over the cached latent (W_UK into q, W_UV after)
  DType kv_dtype = DType::kBF16;
  // Inference with tp > 1 (docs/inference.md, "MoE with tp > 1"): after
  // attention's all-reduce every tp rank holds the same tokens; the MoE
  // layer's experts are spread over exactly those ranks (ep x etp = tp,
  // etp inner), each rank runs its experts (its fe slice) on the tokens
  // routed to them, and the combine leaves a partial sum over tp.
  bool experts_over_tp = false;
  // The weights' dtype when it differs from the activations' (`dtype`):
  // inference with fp8 weights keeps activations in bf16 (W8A8 engines
  // quantize a GEMM's input on the fly; what moves between ops is bf16).
  bool has_weight_dtype = false;
  DType weight_dtype = DType::kBF16;
  // training.cross_entropy_loss_fusion: false builds Megatron-LM's unfused
  // vocabulary-parallel cross entropy (fp32 copy, shift, exp, softmax).
  bool cross_entropy_fusion = true;
};

// Splits the layers over pp * v virtual stages (even, or `layout`), and
// returns the chunks of pipeline rank `stage`: virtual stages
// stage, stage + pp, ... (Megatron's interleaved assignment).
std::vector<Chunk> stage_chunks(int64_t layers, int64_t pp, int64_t v, const std::vector<int64_t>& layout,
                                int64_t stage);

Graph build_transformer_forward(const ModelConfig& m, const BuildOptions& o);

// Bindings for the model symbols above (not the mesh axes). MoE models
// also use E (experts), k (experts per token), fe (expert width), fs
// (shared experts' width) and cap, the tokens an expert takes from one
// source rank, which depends on the parallelism (moe_capacity). MLA uses
// dq (query/key head), dv (value head), dr (RoPE part), qr and kvr (latents).
Bindings model_bindings(const ModelConfig& m, int64_t micro_batch, int64_t seq_len);

// ceil(capacity_factor * T * k / E) for T tokens on one rank.
int64_t moe_capacity(const ModelConfig& m, int64_t local_tokens);

}  // namespace sc
