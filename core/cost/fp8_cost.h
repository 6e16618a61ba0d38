// FP8 training as Transformer Engine runs it (training.fp8_recipe;
// docs/hardware.md, "FP8 training"). Kept apart from the kernel model
// (kernel_cost.h): which GEMMs run at FP8, the quantization kernels TE adds
// around them, and the FP8 weight copies it keeps.
//
//  - FP8 GEMMs: the linear layers' forward (fprop), input-gradient (dgrad)
//    and weight-gradient (wgrad) GEMMs, i.e. every kMatmul whose second
//    operand is a weight, their backward GEMMs and their recomputed
//    clones, except the output layer (LM head), the MoE router and the
//    shared-expert gate (plain BF16 linears in Megatron-Core). Attention
//    (scores and values BMMs, flash attention), softmax, norms, the
//    embedding and every element-wise op stay BF16.
//  - Quantize kernels (memory-bound, one launch each): fprop quantizes its
//    input activation and (once per step, cached across micro-batches as
//    Megatron's is_first_microbatch does; here spread over the step's
//    micro-batches) its weight; dgrad quantizes the output gradient; wgrad
//    reuses the column-wise copies both made. Each quantize reads the BF16
//    tensor (2 B/element) and writes a row-wise and a column-wise
//    (transposed) FP8 copy (1 + 1 B/element) plus its scales.
//  - Sequence parallelism: the tensor a GEMM reads after a tensor-parallel
//    all-gather (fprop's input, the row-parallel dgrad's output gradient,
//    the weight gradient's re-gathered input) is quantized before the
//    gather (its shard) and gathered in FP8, 1 B/element (TE's
//    gather_along_first_dim with the quantizer). Tensor-wise scales
//    (delayed, tensorwise) gather only the row-wise copy
//    (supports_only_rowwise_all_gather): the shard's cast writes 1 B, and
//    the wgrad GEMM transposes the gathered tensor (read 1 B, write 1 B
//    per gathered element; TE 1.x fp8_transpose, 2.x update_usage).
//    blockwise and mxfp8 gather both copies: the shard's quantize as above.
//  - Scales: delayed: the amax is taken inside the cast (the scale comes
//    from the amax history); with a norm feeding the GEMM the cast is fused
//    into the norm kernel (TE LayerNormLinear) and only the transpose
//    remains (read 1 B, write 1 B per element). tensorwise (current
//    scaling): an amax pass (read 2 B/element, its own launch) before each
//    cast. blockwise: one FP32 scale per 1x128 tile (activations and
//    gradients) or 128x128 block (weights), each direction. mxfp8: one
//    E8M0 byte per 32 elements, each direction.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "graph/dtype.h"
#include "graph/graph.h"
#include "hw/hardware.h"

namespace sc {

// The op is a GEMM that runs at FP8 under a recipe (see above).
bool fp8_gemm(const Graph& g, const Op& op);

enum class Fp8GemmRole { kFprop, kDgrad, kWgrad };
Fp8GemmRole fp8_gemm_role(const Op& op);

// One extra kernel TE runs for an FP8 GEMM, on this rank, per micro-batch.
struct Fp8Kernel {
  std::string name;  // "fp8.quantize.input", "fp8.amax.input", ...
  double bytes = 0;  // HBM bytes read + written
  double launches = 1;  // per micro-batch (the weight's: 1 / micro_batches)
};

// What one FP8 GEMM's operands need. elems: local elements of the operand
// quantized per micro-batch (fprop: the input, dgrad: the output gradient;
// 0 for wgrad); weight_elems: the weight's (fprop; quantized once per step
// over micro_batches); from_norm: the input is a norm's output.
// gathered: elems is the shard of a tensor-parallel all-gather the GEMM
// reads (fprop, dgrad). wgrad_gathered: for wgrad, the gathered elements
// of each of its operands that came through such an all-gather (summed).
struct Fp8Operands {
  int64_t elems = 0, weight_elems = 0, micro_batches = 1;
  bool from_norm = false;
  bool gathered = false;
  int64_t wgrad_gathered = 0;
};

// Tensor-wise scales (delayed, tensorwise): a sequence-parallel all-gather
// moves only the row-wise FP8 copy and the transpose follows the gather.
bool fp8_rowwise_gather(Fp8Recipe r);
std::vector<Fp8Kernel> fp8_kernels(Fp8Recipe r, Fp8GemmRole role, const Fp8Operands& x);

// Their time: each memory-bound at hbm_efficiency, each at least the
// launch floor (the per-step weight quantize's floor spread like its bytes).
double fp8_kernels_micros(const HardwareProfile& hw, const std::vector<Fp8Kernel>& k);

// Bytes of the FP8 copies TE keeps of a weight of n elements (row-wise and
// column-wise data and their scales) beside the BF16 weight.
int64_t fp8_weight_copy_bytes(Fp8Recipe r, int64_t n);

// The FP8 copies of one stage graph's FP8 linear weights (each weight once),
// under ZeRO-3 sharded like the weights: over shard_group, a routed
// expert's over expert_group. summary.json's memory_bytes.fp8_weight_copies
// and the planner's memory check both count it here. 0 without a recipe.
Result<int64_t> fp8_weight_copies_bytes(const Graph& g, const Bindings& bind, Fp8Recipe r, int64_t zero,
                                        int64_t shard_group, int64_t expert_group);

// Local elements of one stage graph's FP8 linear weights (each once), dense
// and routed-expert apart: with training.fp8_params these weights are held
// only as their FP8 copies, so summary.json's `weights` (and the plan's
// check) count the high-precision weights of the others only. {0, 0}
// without a recipe.
struct Fp8WeightElems {
  int64_t dense = 0, expert = 0;
};
Result<Fp8WeightElems> fp8_weight_elems(const Graph& g, const Bindings& bind, Fp8Recipe r);

// Saved activations under FP8 training. A Transformer Engine linear keeps,
// for its weight gradient, the FP8 copy of its input it quantized in
// forward, not the BF16 input (transformer_engine/pytorch/module/linear.py:
// the quantized `inputmat`, reduced to the one usage backward needs, is
// `saved_inputmat`; layernorm_linear.py keeps the norm's quantized output,
// grouped_linear.py each expert's quantized input). The BF16 tensor stays
// saved only where another backward op reads it (a norm's input, the
// attention output its kernel's backward reads, an activation function's
// input, a BF16 linear's input). Where both are read (the attention
// output: the attention kernel's backward reads it, the output projection
// quantizes it; the norm output the BF16 router and the shared experts'
// fc1 both read), the delayed recipe keeps the two, and every other recipe
// the BF16 tensor only: Megatron-Core sets TE's save_original_input on
// those two linears for them (megatron/core/transformer/attention.py and
// moe/shared_experts.py at d98e8a6, TE >= 2.6; the weight gradient
// quantizes the tensor again in backward). Per saved buffer
// (saved_storage's representative, indexed by tensor):
struct SavedForm {
  bool high = true;  // the tensor itself: a backward reader other than an FP8 weight-gradient GEMM
  bool fp8 = false;  // its FP8 copy: an FP8 weight-gradient GEMM reads it (directly, or through views
                     // and the tensor-parallel all-gather that re-gathers a sequence-parallel shard)
};
// Per op: a backward op that needs only the FP8 copies of the saved
// activations it reads (as SavedForm::fp8 says). All 0 without a recipe.
std::vector<char> fp8_copy_readers(const Graph& g, Fp8Recipe r);
// {high, no copy} for every tensor without a recipe. copy_readers:
// fp8_copy_readers(g, r).
std::vector<SavedForm> fp8_saved_forms(const Graph& g, Fp8Recipe r, const std::vector<int>& storage,
                                       const std::vector<char>& copy_readers);
// What a backward op reads of a saved buffer kept as `kept`: its FP8 copy
// where the op reads copies (fp8_copy_readers) and one was kept, else the
// tensor (which fp8_saved_forms then keeps).
inline SavedForm read_part(SavedForm kept, bool copy_reader) {
  const bool copy = copy_reader && kept.fp8;
  return {!copy, copy};
}
// The bytes kept of saved buffer t in form f: its local bytes if high, and
// if fp8 one byte per local element plus the recipe's scales (one
// direction: blockwise one FP32 per 1x128 tile, mxfp8 one byte per 32).
Result<int64_t> saved_buffer_bytes(const Graph& g, const Bindings& bind, int t, SavedForm f, Fp8Recipe r);

}  // namespace sc
