// ZeRO / FSDP over the data-parallel group (Rajbhandari et al. 2020;
// PyTorch FSDP), applied after sharding propagation and DP bucketing:
//
//  stage 1, 2  gradient buckets are reduce-scattered instead of all-reduced;
//              each rank updates its 1/dp shard of every bucket; the updated
//              parameters are all-gathered bucket by bucket (comm_size: the
//              per-rank shard). Stage 2 differs from 1 only in memory (the
//              gradients are kept sharded).
//  stage 3     also parameters are sharded: before each layer's forward and
//              again before its backward the layer's parameters are
//              all-gathered (FSDP's unit is one transformer layer; the
//              embedding and the head are units too), each gather issued
//              no earlier than the previous unit starts computing (one unit
//              of prefetch); no parameter all-gather after the step.
// The graph holds one reduce-scatter per bucket; with stage 2 or 3 and
// several micro-batches, lowering repeats it after every micro-batch's
// backward (LowerOptions::grad_reduce_every_micro_batch): sharded gradients
// cannot accumulate unreduced.
// Shards are of flat buffers, rounded up, as DeepSpeed and FSDP pad them.
//
// HSDP (a sharding group smaller than the data-parallel group): state is
// sharded over `dense` (the inner dp_shard ranks) and replicated over
// `replica`; each reduce-scattered gradient shard is then all-reduced over
// the replicas. Routed experts' weights shard over their own data-parallel
// group (`expert`, "edp"), whole.
#pragma once

#include "graph/graph.h"

namespace sc {

struct ZeroAxes {
  std::string grad;     // the axis the dense gradient buckets reduce over ("dp", "cp", "dp+cp")
  std::string dense;    // the axis dense state is sharded over (grad, or "dp_shard" for HSDP)
  std::string replica;  // HSDP: "dp_replicate"; "" otherwise
  std::string expert;   // "edp" when the experts have data parallelism; "" otherwise
};
// Bytes of per-parameter state (bytes_per_param each) of `dense` and
// `expert` (routed-expert) parameters under ZeRO stage `zero`: whole below
// `stage` (1: optimizer state, 2: gradients, 3: parameters), else the dense
// part over the sharding group and the experts' over the expert
// data-parallel group, each rounded up (flat, padded shards). summary.json's
// memory figures and the plan's memory check both use it.
inline int64_t zero_state_bytes(int64_t dense, int64_t expert, int64_t bytes_per_param, int64_t zero, int64_t stage,
                                int64_t group, int64_t expert_group) {
  if (zero < stage) return (dense + expert) * bytes_per_param;
  return (dense * bytes_per_param + group - 1) / group + (expert * bytes_per_param + expert_group - 1) / expert_group;
}

void apply_zero(Graph& g, int zero_stage, const ZeroAxes& axes);

}  // namespace sc
