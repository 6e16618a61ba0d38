// Sharding propagation and collective insertion.
//
// State: every tensor has a Sharding (dims -> mesh axes, plus axes with a
// pending partial sum). Weights, and weight gradients, are fixed by the
// model plan; inputs have the batch on dp; everything else is derived here.
//
// Per op, in program order (no switch on op kind; only the op's factor
// labels and flags are read):
//  1. Factor assignment. Factors held by fixed operands (weights) take their
//     axes first. Then each activation input offers its dims' axes for their
//     factors, first come first served; an axis already taken by another
//     factor of the op, or an `unshardable` factor, is refused.
//     Sequence parallelism is one preference: an op in the SP region that
//     must resolve a partial sum over tp takes factor s on tp.
//  2. Each input whose sharding differs from the one the assignment implies
//     is resharded, one mesh axis at a time (outer axes first):
//       partial X -> dim sharded on X : reduce_scatter(X)
//       partial X -> not partial      : all_reduce(X)
//       dim on X  -> replicated       : all_gather(X)
//       dim d on X -> dim e on X      : all_to_all(X)
//       replicated -> dim on X        : local slice (a view, no traffic)
//     A sum pending over both dp and cp (weight gradients under context
//     parallelism) is all-reduced once over the combined "dp+cp" group, as
//     Megatron reduces over its data-parallel-with-cp group.
//     Views (split, merge, concat) follow the same rule: a concat of partial
//     and non-partial pieces resolves the partial ones (with cp: the K/V
//     gradients are reduce-scattered back to the sequence shards).
//     Reshards are memoised per (tensor, target): a reduced value is reused
//     in every phase, and so is an all-to-all's output (same size, kept);
//     a gathered copy only within its phase (Megatron does not keep gathered
//     activations for the backward pass, it re-gathers) unless its axis is
//     one of `kept_gather_axes`.
//  3. Outputs: dims take their factor's axis; factors contracted away
//     (in inputs, not in outputs) that are sharded make the output partial
//     on that axis. `linear` ops pass a common input partial through.
//
// Worked example (Megatron MLP, tp=2, SP on): x [b, s/tp, h] --ln2-->
// [b, s/tp, h]; fc1's weight [h, f/tp] takes f:tp, so x's s:tp is refused
// and x is all-gathered to [b, s, h]; fc1 -> [b, s, f/tp]; fc2's weight
// [f/tp, h] makes f a sharded contraction: [b, s, h] partial(tp); the
// bias/dropout/residual ops (SP region) take s:tp: reduce_scatter to
// [b, s/tp, h]. Without SP the same partial is all_reduced instead.
#pragma once

#include <string>
#include <vector>

#include "graph/graph.h"

namespace sc {

struct PropagationOptions {
  bool sequence_parallel = false;
  std::vector<std::string> axes_outer_first;  // e.g. {"dp", "cp", "tp"}: reshard order
  // Axes whose all-gathered activations are kept for the backward pass
  // rather than gathered again (the MoE dispatcher's tokens over etp: the
  // expert GEMMs save their input). Every other gather is redone in backward.
  std::vector<std::string> kept_gather_axes;
};

void propagate_shardings(Graph& g, const PropagationOptions& o);

}  // namespace sc
