// Reverse-mode differentiation of a forward graph, op by op, in reverse
// program order. Each forward op's VJP rule is in its operator-table entry
// (graph/ops.cc); this file is the mechanism the rules call through
// VjpContext: gradient accumulation, recomputation, pipeline seeds and the
// optimizer. The rules only say which tensors a gradient reads (that is
// what decides which forward activations are saved for backward) and how
// much work it does. Sharding is not decided here: propagation runs on the
// whole graph afterwards.
//
// Pipeline stages: a forward send of a boundary activation gets a backward
// recv of its gradient (the seed), a forward recv a backward send of the
// gradient of what it received.
//
// Weight gradients are the fp32 "main grads" (Megatron/DDP mixed
// precision); weight-gradient GEMMs are separate ops from
// activation-gradient GEMMs. An optimizer op per weight closes the graph.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "graph/ops.h"

namespace sc {

// What a VJP rule (graph/ops.cc) may ask of the autodiff pass.
class VjpContext {
 public:
  virtual Graph& graph() = 0;
  // Total gradient of t (its contributions summed by an add op if needed);
  // -1 when nothing downstream needs it.
  virtual int grad(int t) = 0;
  virtual bool requires_grad(int t) const = 0;
  // g is (a contribution to) the gradient of primal.
  virtual void contribute(int primal, int g) = 0;
  // A backward op of entry `def` for forward op f reading `in` (saved or
  // recomputed forward tensors are substituted), producing the gradient of
  // each primal in wrt, labelled as f labels the primal (its input index).
  virtual Op& emit(const Op& f, const std::string& suffix, const OpDef& def, std::vector<int> in,
                   std::vector<std::vector<std::string>> in_labels, const std::vector<std::pair<int, size_t>>& wrt,
                   Expr flops) = 0;
  virtual int new_grad_like(int t, const std::string& name) = 0;
  // A backward op in the current chunk, not yet added.
  virtual Op backward_op(const std::string& name, const OpDef& def, std::vector<int> in, std::vector<int> out,
                         int layer) = 0;
  virtual int add(Op o) = 0;

 protected:
  ~VjpContext() = default;
};

enum class RecomputeMode { kNone, kSelective, kFull };

// Megatron-Core's recompute_modules (transformer_config.py at d98e8a6), in
// bit order: bit i of AutodiffOptions::recompute_modules (and of the job's
// training.recompute_modules) is kRecomputeModules[i]. moe_act, layernorm
// and mla_up_proj discard their outputs and recompute them in backward
// (CheckpointWithoutOutput); core_attn, mlp, moe and shared_experts are
// checkpoints (docs/parallelism.md, "Recomputation").
inline constexpr const char* kRecomputeModules[] = {"core_attn", "moe_act", "layernorm", "mla_up_proj",
                                                    "mlp",       "moe",     "shared_experts"};
inline constexpr size_t kRecomputeModuleCount = sizeof(kRecomputeModules) / sizeof(kRecomputeModules[0]);
inline constexpr uint32_t kRecomputeCoreAttn = 1u << 0, kRecomputeMoeAct = 1u << 1, kRecomputeLayernorm = 1u << 2,
                          kRecomputeMlaUpProj = 1u << 3, kRecomputeMlp = 1u << 4, kRecomputeMoe = 1u << 5,
                          kRecomputeSharedExperts = 1u << 6;

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
  // Selective: Megatron-Core's recompute_modules, a bit per module in the
  // order of kRecomputeModules; kRecomputeCoreAttn is the default.
  // An op belongs to a module by its name within its layer and, for the
  // norms, by what reads them (op_module_bits in autodiff.cc). moe_act,
  // layernorm and mla_up_proj discard their outputs (Megatron's
  // CheckpointWithoutOutput): a backward op that reads one reads a
  // recomputed copy. The others are checkpoints: their inputs and outputs
  // stay saved, and once the backward needs a tensor from inside one its
  // whole forward is re-run, each op once.
  uint32_t recompute_modules = kRecomputeCoreAttn;
};

// Stops early, the graph partial, when a cancel is requested (base/cancel.h):
// the caller checks check_cancelled() after it.
void append_backward_and_optimizer(Graph& g, const AutodiffOptions& o);

}  // namespace sc
