// Data-parallel gradient buckets (PyTorch DDP / Megatron DDP): the
// per-weight all-reduces over dp that propagation inserted before the
// optimizer are coalesced into buckets of about `bucket_bytes`, filled in
// the order the backward pass finishes the gradients, so that a bucket's
// all-reduce can start while the rest of the backward pass still runs.
#pragma once

#include "base/status.h"
#include "graph/graph.h"

namespace sc {

// `axis`: the data-parallel reduction group ("dp", "cp", "dp+cp", or "edp"
// for the routed experts' gradients); `name` prefixes the bucket ops.
Status bucket_dp_gradients(Graph& g, const Bindings& bind, double bucket_bytes, const std::string& axis,
                           const std::string& name = "dp_grad_bucket");

// Weights whose gradient is also summed over another group (Tensor::
// sync_axis: a tied embedding's two copies on the first and last pipeline
// stage) get that all-reduce right before their optimizer step, after the
// data-parallel reduction, as Megatron's finalize_model_grads does.
void insert_weight_syncs(Graph& g);

}  // namespace sc
