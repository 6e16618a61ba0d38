// The symbolic tensor graph. Tensors have named dimensions whose sizes are
// Exprs over model symbols; each dimension also carries a *factor label*
// used by sharding propagation (two dims with the same label in one op must
// be sharded alike; a label on inputs but not outputs is contracted).
//
// Shapes are global (unsharded). A tensor's Sharding maps dims to mesh axes
// ("tp", "dp") and lists axes over which it holds a partial sum; its local
// shape is derived (size / axis). Ops keep program order in Graph::order.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "graph/collective.h"
#include "graph/dtype.h"
#include "symbolic/expr.h"

namespace sc {

struct Dim {
  std::string label;  // factor label: "b", "s", "h", "qkv", "V", ...
  Expr size;          // global size, e.g. b*dp, s, h
};

struct Sharding {
  std::vector<std::string> dim_axis;  // per dim: mesh axis or "" (replicated)
  std::vector<std::string> partial;   // sorted axes with a pending sum

  bool operator==(const Sharding& o) const {
    return dim_axis == o.dim_axis && partial == o.partial;
  }
  bool operator<(const Sharding& o) const {
    return dim_axis != o.dim_axis ? dim_axis < o.dim_axis : partial < o.partial;
  }
};

// kCache: an inference job's KV cache (persistent state the attention reads;
// neither a parameter nor a transient activation).
enum class TensorKind { kInput, kWeight, kActivation, kMask, kGradient, kWeightGrad, kCache };
const char* tensor_kind_name(TensorKind k);

struct Tensor {
  int id = -1;
  std::string name;
  std::vector<Dim> dims;
  DType dtype = DType::kBF16;
  TensorKind kind = TensorKind::kActivation;
  Sharding sharding;           // set by the model plan (weights) or propagation
  bool sharding_fixed = false; // weights and weight grads: never resharded
  int producer = -1;           // op id, -1 for inputs/weights
  int grad_of = -1;            // kWeightGrad / kGradient: primal tensor id
  int layer = -1;
  bool tied_copy = false;      // a second copy of a tied weight (not counted twice)
  std::string sync_axis;       // weight whose gradient is also summed over this axis ("embd")
  bool expert = false;         // a routed expert's weight: data-parallel over "edp", not dp

  Expr global_numel() const;
  Expr local_numel() const;    // divided by the degrees of sharded dims
  // This rank's bytes at `b`: local_numel x dtype_bytes; a 4-bit format
  // packs two values a byte and adds its block scales (dtype_storage_bytes).
  // `what` names the quantity in an error.
  Result<int64_t> local_bytes(const Bindings& b, const std::string& what) const;
};

enum class OpKind {
  kMatmul,       // einsum-like contraction (GEMMs, attention BMMs)
  kElementwise,  // pointwise (bias add, activation, residual add, rope)
  kNorm,         // LayerNorm / RMSNorm (reduction over the hidden dim)
  kSoftmax,
  kDropout,
  kEmbedding,    // table lookup
  kReduce,       // reductions over a dim (cross-entropy statistics)
  kLoss,         // cross-entropy combine
  kAttention,    // fused flash attention
  kView,         // reshape/split/concat/slice: no work, no node
  kCollective,   // inserted by sharding propagation
  kOptimizer,
  kSend,         // pipeline boundary: the input goes to another stage
  kRecv,         // pipeline boundary: the output comes from another stage
  kRemesh,       // MoE token permutation between the attention layout (tokens
                 // on dp/cp/tp) and the expert layout (sources on edp/etp/ep):
                 // local work, inputs laid out as remesh_in, outputs as built
};
const char* op_kind_name(OpKind k);

enum class Phase { kForward, kBackward, kOptimizer };
const char* phase_name(Phase p);

struct OpDef;  // the operator table's entry (graph/ops.h)

// Why a collective (or a slice) exists, recorded by the pass that made it
// (propagation, DDP buckets, ZeRO) where it made it; the explanations
// (api/explain.cc) read this record instead of guessing from names.
enum class CauseKind {
  kNone,
  kPartialSum,         // the producer left a partial sum its reader cannot take
  kGather,             // the reader needs whole a dim that is sharded
  kRedistribute,       // the reader needs another dim sharded on the axis
  kSlice,              // the reader needs sharded a dim that is replicated (local)
  kMoeDispatch,        // tokens to the ranks that hold their experts (an expert GEMM's layout)
  kMoeCombine,         // expert outputs back to the ranks the tokens came from (a remesh's layout)
  kGradBucket,         // DDP: weight gradients summed over the data-parallel group
  kExpertGradBucket,   // routed experts' weight gradients summed over edp
  kWeightSync,         // a weight's copies summed over another group (tied embeddings: embd)
  kZeroGradShard,      // ZeRO: a gradient bucket reduce-scattered to the owner shards
  kZeroParamGatherAfterStep,  // ZeRO-1/2: updated shards all-gathered after the step
  kZeroParamGather,    // ZeRO-3/FSDP: a unit's parameters gathered before use
  kHsdpReplicaReduce,  // HSDP: a gradient shard summed over the replicas
};
const char* cause_kind_name(CauseKind k);

struct CollectiveCause {
  CauseKind kind = CauseKind::kNone;
  // The parallel feature that asked: the mesh axis ("tp", "dp", "cp",
  // "ep", "etp", "edp", "dp+cp", "embd", ...), or "sp" when sequence
  // parallelism's rule chose the layout.
  std::string feature;
  int tensor = -1;    // the tensor whose layout did not match (before any earlier step of the chain)
  int consumer = -1;  // the op whose layout asked for it (-1: made by a pass for the optimizer step)
  Sharding from, to;  // the tensor's layout and the layout required
};

struct Op {
  int id = -1;
  std::string name;
  OpKind kind = OpKind::kElementwise;
  Phase phase = Phase::kForward;
  int layer = -1;  // transformer layer, -1 for embedding/head/optimizer
  int chunk = 0;   // model chunk (virtual pipeline stage) of this rank's program
  std::vector<int> inputs, outputs;
  // Factor labels per operand dim; empty = the tensor's own dim labels.
  std::vector<std::vector<std::string>> in_labels, out_labels;
  std::set<std::string> unshardable;  // factors that must stay whole
  const OpDef* def = nullptr;  // its operator-table entry (graph/ops.h)
  std::string fn;          // what it computes, as printed: the entry's fn ("gelu", "layernorm", ...)
  Expr flops;              // global FLOPs executed (all shards together)
  Expr model_flops;        // the part Megatron's model-FLOP count includes (GEMMs/BMMs)
  bool linear = false;     // sum of inputs: partial inputs may stay partial
  bool sp_region = false;  // Megatron sequence-parallel region (norms, dropout, residual)
  int fwd_op = -1;         // backward ops: the forward op they differentiate
  bool wgrad = false;      // weight-gradient GEMM (accumulates into main grad)
  bool recomputed = false; // a forward op re-run in the backward pass

  // Filled by sharding propagation.
  std::map<std::string, std::string> factor_axis;  // factor -> mesh axis
  Expr local_flops;

  // kCollective
  CollectiveType coll = CollectiveType::kAllReduce;
  std::string axis;  // mesh axis the collective runs over
  CollectiveCause cause;  // kCollective and reshard slices: why it is there

  // ZeRO: the op works on this rank's 1/degree shard of the flat buffer of
  // its tensors (rounded up), e.g. "dp" for a sharded optimizer step or a
  // parameter all-gather whose comm_size is the per-rank shard.
  std::string flat_shard_axis;
  // Issue no earlier than the node of this op in the same micro-batch
  // (FSDP prefetches one layer ahead, not all layers at once).
  int after_op = -1;
  bool grad_bucket = false;  // a data-parallel gradient bucket (issued as soon as its grads are final)
  // Ring attention over this axis (context parallelism): K/V stay sharded;
  // lowering runs the op in `degree` steps, passing K/V blocks (and, in
  // backward, dK/dV) around the ring with send/recv while computing.
  std::string ring_axis;

  // kSend / kRecv: the boundary between virtual stages `boundary` and
  // `boundary + 1` (in pipeline order); kSend also fixes the sharding the
  // peer expects.
  int64_t boundary = -1;
  Sharding send_sharding;

  // kRemesh: the layout each input must have (propagation reshards to it);
  // the outputs keep the sharding they were built with. flops are global;
  // a rank does flops / (product of flops_axes).
  std::vector<Sharding> remesh_in;
  std::vector<std::string> flops_axes;
};

Tensor make_tensor(std::string name, std::vector<Dim> dims, DType dt, TensorKind kind);

struct Graph {
  std::vector<Tensor> tensors;
  std::vector<Op> ops;
  std::vector<int> order;  // program order of op ids

  int add_tensor(Tensor t);
  // Appends op to program order and sets producer of its outputs.
  int add_op(Op op);

  std::vector<std::string> labels_in(const Op& op, size_t i) const;
  std::vector<std::string> labels_out(const Op& op, size_t i) const;
};

// A forward activation or mask: what a backward op reading it keeps alive
// from forward to backward (saved for backward).
bool is_saved_activation(const Graph& g, int tensor);

// For each tensor, the saved activation whose buffer holds it when it is
// saved: a view (split, merge, slice) shares its input's memory, so a saved
// view of an activation that is itself saved (flash attention's output and
// its merged-heads view, read by the output projection's weight gradient)
// is one buffer, counted once, as the topmost saved tensor of its view
// chain. Every other tensor maps to itself. (Korthikanti et al. 2022 count
// the attention output once, as the projection's input.)
std::vector<int> saved_storage(const Graph& g);

// Appends a collective op over `axis` (sum-linear, producer of its outputs)
// to g.ops without placing it in program order; returns its id.
int add_collective_op(Graph& g, std::string name, CollectiveType coll, std::string axis, Phase phase,
                      std::vector<int> inputs, std::vector<int> outputs);

// Canonical text: one line per tensor definition and per op, program order,
// symbolic local shapes ("[b, s/tp, h]") and shardings. Stable.
std::string graph_to_text(const Graph& g, const std::string& header);

// The same content keyed by stable names instead of running ids: tensors
// by name (a repeated name gets "#2", "#3" in order of definition), ops by
// name with their table entry and, for collectives, their recorded cause.
// Per-pass goldens use it so that one change shows where it acts.
std::string graph_to_named_text(const Graph& g, const std::string& header);

std::string sharding_to_string(const Tensor& t);   // "{b:dp, s:tp} partial(tp)"
std::string local_shape_string(const Tensor& t);   // "[b, s/tp, h]"

}  // namespace sc
