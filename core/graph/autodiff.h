// Reverse-mode differentiation of a forward graph, op by op, in reverse
// program order. Each forward op kind has one VJP rule here; the rules only
// say which tensors a gradient reads (that is what decides which forward
// activations are saved for backward) and how much work it does. Sharding
// is not decided here: propagation runs on the whole graph afterwards.
//
// Weight gradients are the fp32 "main grads" (Megatron/DDP mixed
// precision); weight-gradient GEMMs are separate ops from
// activation-gradient GEMMs. An optimizer op per weight closes the graph.
#pragma once

#include "graph/graph.h"

namespace sc {

struct AutodiffOptions {
  DType grad_dtype = DType::kFP32;   // main-grad dtype
  int64_t optimizer_flops_per_param = 12;  // Adam(W) update, approximate
};

void append_backward_and_optimizer(Graph& g, const AutodiffOptions& o);

}  // namespace sc
