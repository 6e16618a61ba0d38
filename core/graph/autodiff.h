// Reverse-mode differentiation of a forward graph, op by op, in reverse
// program order. Each forward op kind has one VJP rule here; the rules only
// say which tensors a gradient reads (that is what decides which forward
// activations are saved for backward) and how much work it does. Sharding
// is not decided here: propagation runs on the whole graph afterwards.
//
// Pipeline stages: a forward send of a boundary activation gets a backward
// recv of its gradient (the seed), a forward recv a backward send of the
// gradient of what it received.
//
// Weight gradients are the fp32 "main grads" (Megatron/DDP mixed
// precision); weight-gradient GEMMs are separate ops from
// activation-gradient GEMMs. An optimizer op per weight closes the graph.
#pragma once

#include "graph/graph.h"

namespace sc {

enum class RecomputeMode { kNone, kSelective, kFull };

struct AutodiffOptions {
  DType grad_dtype = DType::kFP32;   // main-grad dtype
  int64_t optimizer_flops_per_param = 12;  // Adam(W) update, approximate
  // Recomputation: a forward tensor that a backward op reads is re-computed
  // in the backward pass instead of saved when its producer is in the
  // recompute region (selective: the attention core; full: the whole
  // transformer layer) and every forward reader is in the same region of
  // the same layer. Region outputs stay saved, as with Megatron's
  // checkpointing. Recomputed ops count as executed, not model, FLOPs.
  RecomputeMode recompute = RecomputeMode::kNone;
};

void append_backward_and_optimizer(Graph& g, const AutodiffOptions& o);

}  // namespace sc
