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

struct BuildOptions {
  bool has_tp = false;  // tp degree > 1: shard weights over "tp"
  bool has_dp = false;  // dp degree > 1: shard the batch over "dp"
  DType dtype = DType::kBF16;
};

Graph build_transformer_forward(const ModelConfig& m, const BuildOptions& o);

// Bindings for the model symbols above (not the mesh axes).
Bindings model_bindings(const ModelConfig& m, int64_t micro_batch, int64_t seq_len);

}  // namespace sc
