// The operator table: one entry (OpDef) per operator kind, in one place.
// An entry says what the rest of the compiler needs to know about an op:
//  - its OpKind and the name graph text prints (fn),
//  - its shape rule and FLOP rule (what the builder and the cost model read;
//    bytes are the operands' local sizes, read by lowering),
//  - its sharding-propagation rule (parallel/propagate.cc),
//  - its gradient: the VJP rule that creates its backward ops
//    (graph/autodiff.cc runs the mechanism: reverse order, accumulation,
//    recomputation, the optimizer),
//  - what its backward reads (saved for backward) and whether selective
//    recomputation redoes it instead of saving it,
//  - its kernel-fusion class (what a kernel cost model groups).
// Ops carry a pointer to their entry (Op::def); nothing downstream compares
// fn strings. Adding an operator = adding an entry here (ops.cc) and using
// it in a builder (docs/architecture.md, "How to add an operator").
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"

namespace sc {

// Kernel-fusion class: which kind of kernel runs the op (GEMM, a pointwise
// epilogue, a reduction, ...). For a kernel cost model.
enum class FusionClass {
  kGemm,           // dense contraction (tensor cores)
  kAttention,      // fused attention kernel (flash / ring blocks)
  kPointwise,      // elementwise, fusable into a neighbour
  kNormalization,  // row reduction + pointwise (norms, softmax)
  kReduction,      // reductions over a dim (bias/norm weight grads, loss statistics)
  kEmbedding,      // gather / scatter-add of rows
  kScan,           // sequential scan over the sequence (SSM state)
  kConvolution,    // short depthwise convolution
  kLayout,         // views and token permutations (no math or index-only)
  kCommunication,  // collectives, pipeline send/recv
  kOptimizer,      // parameter update
};
const char* fusion_class_name(FusionClass c);

// How sharding propagation (parallel/propagate.cc) treats the op.
enum class PropagationRule {
  kFactors,        // factor labels: claim axes, reshard inputs, derive outputs
  kFactorsLinear,  // the same, and a partial sum common to all inputs passes through (views)
  kRecv,           // pipeline receive: arrives laid out as the sender sent it
  kSend,           // pipeline send: input brought to Op::send_sharding
  kRemesh,         // inputs brought to Op::remesh_in; outputs keep their built layout
  kInserted,       // made by propagation/ZeRO/buckets themselves: never propagated
};

// Shape rule: how the builder derives the output shape.
enum class ShapeRule {
  kSameAsInput,   // pointwise: output dims = first input's dims
  kContraction,   // output = the inputs' dims minus the contracted labels (einsum)
  kGiven,         // the builder states the outputs (views, fused kernels, MoE remesh)
};

// Forward FLOP rule (executed FLOPs, global). GEMM-like ops also count as
// model FLOPs (Megatron's formula) where the builder says so.
enum class FlopsRule {
  kPerOutputElement,  // flops_per_element x elements of output 0
  kPerInputElement,   // flops_per_element x elements of input 0
  kContraction,       // 2 x output elements x contracted size
  kGiven,             // a formula the builder states (attention, scan, ...)
};

// What the op's backward reads from the forward pass (saved for backward,
// unless recomputed): documentation of the VJP rule, checked by a test.
enum class Saves {
  kNothing,           // no backward, or the backward needs only dy
  kInputs,            // forward inputs
  kOutputs,           // forward outputs (softmax probs, dropout mask)
  kInputsAndOutputs,  // both (flash attention: q, k, v, o, lse)
};

class VjpContext;  // graph/autodiff.h
using VjpRule = void (*)(VjpContext& c, const Op& f);

struct OpDef {
  const char* name;  // unique key in the table, e.g. "attention.scores"
  const char* fn;    // Op::fn as printed in graph text and JSON, e.g. "matmul"
  OpKind kind;
  FusionClass fusion;
  PropagationRule propagation = PropagationRule::kFactors;
  ShapeRule shape = ShapeRule::kGiven;
  FlopsRule flops = FlopsRule::kGiven;
  int64_t flops_per_element = 0;  // for kPerOutputElement / kPerInputElement
  Saves saves = Saves::kNothing;
  bool selective_recompute = false;  // selective recomputation redoes it (the attention core)
  bool linear = false;               // sum of inputs: partial inputs may stay partial
  VjpRule vjp = nullptr;             // its gradient; nullptr: none (backward ops, reductions the loss rule covers)
  const char* gradient = "";         // what the VJP creates, for docs and explanations
};

// Every entry, in table order (forward ops, then backward ops, then the
// ops the later passes insert).
const std::vector<const OpDef*>& op_table();

// The op's entry; ops made without one (older callers) resolve by OpKind.
const OpDef& op_def(const Op& op);
// An entry by name, nullptr if unknown.
const OpDef* find_op_def(const std::string& name);

// Forward FLOPs of `op` (its inputs/outputs already in g) by its entry's
// rule; kGiven returns `given`.
Expr rule_flops(const Graph& g, const Op& op, const Expr& given = Expr(0));

// The entries. Forward ops first.
namespace ops {
extern const OpDef kMatmul;            // GEMM: activations x weights
extern const OpDef kAttentionScores;   // Q K^T (attention core)
extern const OpDef kAttentionValues;   // P V (attention core)
extern const OpDef kSoftmax;           // attention softmax (attention core)
extern const OpDef kAttentionDropout;  // dropout on the probabilities (attention core)
extern const OpDef kFlashAttention;
extern const OpDef kRingAttention;
extern const OpDef kSplit, kMerge, kConcat;  // views / MLA key concat
extern const OpDef kConcatHidden;            // [a | b] along the last dim (MTP's eh_proj input)
extern const OpDef kGatherToStream, kGatherToStreamBwd;  // MTP's eh_proj output to the residual stream's layout
extern const OpDef kRope, kGelu, kSwiGLU, kBiasAdd, kAdd;
extern const OpDef kRopePartial;  // RoPE on the first rotary_dim features of each head (partial rotary)
extern const OpDef kGeGLU;  // gated GeLU MLP activation (Gemma)
extern const OpDef kAttentionSoftcap, kSoftcap;
extern const OpDef kScale;  // y = c x (embedding/residual/logit multipliers)
extern const OpDef kSigmoidGate;  // x sigmoid(g), one gate per token (Qwen2-MoE's shared expert)  // c tanh(x / c) on scores / logits (Gemma-2)
extern const OpDef kDropout;
extern const OpDef kLayerNorm, kRMSNorm;
extern const OpDef kEmbedding;
extern const OpDef kLossMax, kLossSum;  // vocab-parallel cross-entropy statistics
extern const OpDef kCast;  // a copy in another dtype (the unfused loss's fp32 logits)
extern const OpDef kLossShift, kLossExp, kLossSoftmax;  // the unfused loss's passes over them
extern const OpDef kCrossEntropy;
extern const OpDef kTopK;
extern const OpDef kMoePermute, kMoeCombine;
extern const OpDef kSend, kRecv;
// Mamba-2 (SSD) mixer and the squared-ReLU MLP (Nemotron-H).
extern const OpDef kReLU2;
extern const OpDef kCausalConv1d;  // depthwise causal conv over [x, B, C] + SiLU
extern const OpDef kSsdScan;       // the selective scan (state-space dual), with its state
extern const OpDef kGatedRMSNorm;  // RMSNorm(y * silu(z)) per group
// Mamba-1 (S6) mixer (Jamba); its conv is kCausalConv1d.
extern const OpDef kSelectiveScan;  // the selective scan per channel, gated by silu(z)
extern const OpDef kSplitReduced;   // a split whose input's partial sum is resolved first (x_proj -> dt, B, C)
// Backward ops (made by the VJP rules).
extern const OpDef kSliceBwd, kSumHeadsBwd, kTopKBwd, kBiasGrad, kGeluBwd, kSwiGLUBwd, kRopeBwd;
extern const OpDef kDropoutBwd, kLayerNormBwd, kRMSNormBwd, kLayerNormWgrad, kRMSNormWgrad;
extern const OpDef kSoftmaxBwd, kEmbeddingBwd, kFlashAttentionBwd, kCrossEntropyBwd;
extern const OpDef kMoeUnpermute, kMoeCombineBwd, kMoeCombineProbsBwd;
extern const OpDef kSplitBwd, kMergeBwd;
extern const OpDef kGradAccumulate, kAdam;
extern const OpDef kGeGLUBwd, kSoftcapBwd, kScaleBwd, kSigmoidGateBwd;
extern const OpDef kReLU2Bwd, kCausalConv1dBwd, kCausalConv1dWgrad, kSsdScanBwd, kSsdScanWgrad;
extern const OpDef kGatedRMSNormBwd, kGatedRMSNormWgrad;
extern const OpDef kSelectiveScanBwd, kSelectiveScanBwdBC, kSelectiveScanWgrad;
// Inserted by the later passes.
extern const OpDef kCollective;  // any CollectiveType (Op::coll)
extern const OpDef kSlice;       // a local slice to a sharded layout (no traffic)
// Inference (serving): forward only.
extern const OpDef kKvCacheWrite;    // new K/V (MLA: latent + RoPE key) into the paged cache
extern const OpDef kPagedAttention;  // queries over the cached keys/values (decode, prefill, chunks)
extern const OpDef kTokenSelect;     // the rows whose next token is sampled (a view)
}  // namespace ops

}  // namespace sc
