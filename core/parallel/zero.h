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
// Shards are of flat buffers, rounded up, as DeepSpeed and FSDP pad them.
#pragma once

#include "graph/graph.h"

namespace sc {

// `axis`: the data-parallel group the state is sharded over ("dp", "dp+cp").
void apply_zero(Graph& g, int zero_stage, const std::string& axis);

}  // namespace sc
