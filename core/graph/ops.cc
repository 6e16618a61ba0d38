// The operator table's entries and their gradient (VJP) rules. Each rule
// reads the forward op f and asks the autodiff context for dy and for new
// backward ops; the FLOPs of a backward op are its entry's per-element
// count times the elements it produces or reads (written per rule).
#include "graph/ops.h"

#include <map>
#include <set>
#include <utility>

#include "graph/autodiff.h"

namespace sc {
namespace {

using Labels = std::vector<std::vector<std::string>>;

// The gradients of f's outputs (accumulating contributions first); the
// first is dy, -1 when nothing downstream needs it.
std::vector<int> output_grads(VjpContext& c, const Op& f) {
  std::vector<int> dys;
  for (int out : f.outputs) dys.push_back(c.grad(out));
  return dys;
}

Expr out_numel(VjpContext& c, const Op& f) { return c.graph().tensors[f.outputs[0]].global_numel(); }

// ---- VJP rules --------------------------------------------------------------

// y = x . W: dgrad (dx = dy . W^T) and wgrad (dW = x^T . dy) GEMMs, each
// as many FLOPs as the forward; both count as model FLOPs.
void vjp_matmul(VjpContext& c, const Op& f) {
  const int dy = output_grads(c, f)[0];
  if (dy < 0) return;
  Graph& g = c.graph();
  for (size_t i = 0; i < 2; ++i) {
    const int x = f.inputs[i];
    if (!c.requires_grad(x)) continue;
    const size_t other = 1 - i;
    const bool w = g.tensors[x].kind == TensorKind::kWeight;
    std::string suffix = w ? ".wgrad"
                           : (g.tensors[f.inputs[other]].kind == TensorKind::kWeight
                                  ? ".dgrad"
                                  : ".d" + g.tensors[x].name.substr(g.tensors[x].name.rfind('.') + 1));
    Op& o = c.emit(f, suffix, ops::kMatmul, {dy, f.inputs[other]}, {g.labels_out(f, 0), g.labels_in(f, other)},
                   {{x, i}}, f.flops);
    o.model_flops = f.model_flops;
  }
}

// Sum: dy flows to every addend unchanged (no op).
void vjp_add(VjpContext& c, const Op& f) {
  const int dy = output_grads(c, f)[0];
  if (dy < 0) return;
  for (int x : f.inputs)
    if (c.requires_grad(x)) c.contribute(x, dy);
}

// MLA's key: [k_nope | k_rope broadcast over heads]. The nope part is a
// slice of dy; the shared RoPE part sums dy over the heads.
void vjp_concat(VjpContext& c, const Op& f) {
  const int dy = output_grads(c, f)[0];
  if (dy < 0) return;
  Graph& g = c.graph();
  if (c.requires_grad(f.inputs[0]))
    c.emit(f, ".bwd_slice", ops::kSliceBwd, {dy}, {g.labels_out(f, 0)}, {{f.inputs[0], 0}}, Expr(0));
  if (c.requires_grad(f.inputs[1]))
    c.emit(f, ".bwd_sum", ops::kSumHeadsBwd, {dy}, {g.labels_out(f, 0)}, {{f.inputs[1], 1}},
           g.tensors[f.inputs[1]].global_numel() * Expr::sym("a"));
}

// y = [a | b] along the last dim (MTP's [enorm(e) | hnorm(h)]): each input
// gets its slice of dy.
void vjp_concat_hidden(VjpContext& c, const Op& f) {
  const int dy = output_grads(c, f)[0];
  if (dy < 0) return;
  Graph& g = c.graph();
  for (size_t i = 0; i < 2; ++i)
    if (c.requires_grad(f.inputs[i]))
      c.emit(f, i == 0 ? ".bwd_slice0" : ".bwd_slice1", ops::kSliceBwd, {dy}, {g.labels_out(f, 0)},
             {{f.inputs[i], i}}, Expr(0));
}

// Gradient of the kept probabilities back to the router logits (the
// routing bias selects only: it gets no gradient).
void vjp_topk(VjpContext& c, const Op& f) {
  const int dy = output_grads(c, f)[0];
  if (dy < 0) return;
  Graph& g = c.graph();
  c.emit(f, ".bwd", ops::kTopKBwd, {f.inputs[0], f.outputs[0], dy},
         {g.labels_in(f, 0), g.labels_out(f, 0), g.labels_out(f, 0)}, {{f.inputs[0], 0}},
         g.tensors[f.inputs[0]].global_numel() * Expr(ops::kTopKBwd.flops_per_element));
}

// y = x + b: dy flows to x; db sums dy over the tokens.
void vjp_bias_add(VjpContext& c, const Op& f) {
  const int dy = output_grads(c, f)[0];
  if (dy < 0) return;
  c.contribute(f.inputs[0], dy);
  c.emit(f, ".bias_grad", ops::kBiasGrad, {dy}, {c.graph().labels_out(f, 0)}, {{f.inputs[1], 1}},
         out_numel(c, f) * Expr(ops::kBiasGrad.flops_per_element));
}

// Pointwise y = act(x): dx = act'(x) dy, reading x.
template <const OpDef& Bwd>
void vjp_pointwise_reads_x(VjpContext& c, const Op& f) {
  const int dy = output_grads(c, f)[0];
  if (dy < 0) return;
  Graph& g = c.graph();
  c.emit(f, ".bwd", Bwd, {f.inputs[0], dy}, {g.labels_in(f, 0), g.labels_out(f, 0)}, {{f.inputs[0], 0}},
         out_numel(c, f) * Expr(Bwd.flops_per_element));
}

// Pointwise y = f(x) whose derivative is a function of y: dx = f'(y) dy,
// reading the output (soft-capping: 1 - (y/c)^2).
template <const OpDef& Bwd>
void vjp_pointwise_reads_y(VjpContext& c, const Op& f) {
  const int dy = output_grads(c, f)[0];
  if (dy < 0) return;
  Graph& g = c.graph();
  c.emit(f, ".bwd", Bwd, {f.outputs[0], dy}, {g.labels_out(f, 0), g.labels_out(f, 0)}, {{f.inputs[0], 0}},
         out_numel(c, f) * Expr(Bwd.flops_per_element));
}

// y = x in another dtype: dx = dy cast back to x's dtype, reading only dy.
void vjp_cast(VjpContext& c, const Op& f) {
  const int dy = output_grads(c, f)[0];
  if (dy < 0) return;
  c.emit(f, ".bwd", ops::kCast, {dy}, {c.graph().labels_out(f, 0)}, {{f.inputs[0], 0}}, Expr(0));
}

// y = c x: dx = c dy, reading only dy.
void vjp_scale(VjpContext& c, const Op& f) {
  const int dy = output_grads(c, f)[0];
  if (dy < 0) return;
  c.emit(f, ".bwd", ops::kScaleBwd, {dy}, {c.graph().labels_out(f, 0)}, {{f.inputs[0], 0}},
         out_numel(c, f) * Expr(ops::kScaleBwd.flops_per_element));
}

// y = x sigmoid(g), g one value per token: dx = dy sigmoid(g) and dg =
// sigmoid'(g) sum over h of dy x, one op reading x, g and dy.
void vjp_sigmoid_gate(VjpContext& c, const Op& f) {
  const int dy = output_grads(c, f)[0];
  if (dy < 0) return;
  Graph& g = c.graph();
  c.emit(f, ".bwd", ops::kSigmoidGateBwd, {f.inputs[0], f.inputs[1], dy},
         {g.labels_in(f, 0), g.labels_in(f, 1), g.labels_out(f, 0)}, {{f.inputs[0], 0}, {f.inputs[1], 1}},
         out_numel(c, f) * Expr(ops::kSigmoidGateBwd.flops_per_element));
}

// RoPE is a rotation: dx = R^T dy, reading only dy.
void vjp_rope(VjpContext& c, const Op& f) {
  const int dy = output_grads(c, f)[0];
  if (dy < 0) return;
  c.emit(f, ".bwd", ops::kRopeBwd, {dy}, {c.graph().labels_out(f, 0)}, {{f.inputs[0], 0}},
         out_numel(c, f) * Expr(ops::kRopeBwd.flops_per_element));
}

// Partial rotary: the inverse rotation of the rotated features only, as
// many FLOPs per rotated element as the forward (the rest of dy passes).
void vjp_rope_partial(VjpContext& c, const Op& f) {
  const int dy = output_grads(c, f)[0];
  if (dy < 0) return;
  c.emit(f, ".bwd", ops::kRopeBwd, {dy}, {c.graph().labels_out(f, 0)}, {{f.inputs[0], 0}},
         f.flops / Expr(ops::kRopePartial.flops_per_element) * Expr(ops::kRopeBwd.flops_per_element));
}

// dx = mask * dy / (1 - p), reading the saved mask.
void vjp_dropout(VjpContext& c, const Op& f) {
  const int dy = output_grads(c, f)[0];
  if (dy < 0) return;
  Graph& g = c.graph();
  c.emit(f, ".bwd", ops::kDropoutBwd, {f.outputs[1], dy}, {g.labels_out(f, 1), g.labels_out(f, 0)},
         {{f.inputs[0], 0}}, out_numel(c, f) * Expr(ops::kDropoutBwd.flops_per_element));
}

// Norm: dx from x, the scale and dy; the scale (and shift) gradients are a
// reduction over the tokens.
template <const OpDef& Bwd, const OpDef& Wgrad>
void vjp_norm(VjpContext& c, const Op& f) {
  const int dy = output_grads(c, f)[0];
  if (dy < 0) return;
  Graph& g = c.graph();
  c.emit(f, ".bwd", Bwd, {f.inputs[0], f.inputs[1], dy}, {g.labels_in(f, 0), g.labels_in(f, 1), g.labels_out(f, 0)},
         {{f.inputs[0], 0}}, out_numel(c, f) * Expr(Bwd.flops_per_element));
  std::vector<std::pair<int, size_t>> params;
  for (size_t i = 1; i < f.inputs.size(); ++i) params.push_back({f.inputs[i], i});
  Op& w = c.emit(f, ".wgrad", Wgrad, {f.inputs[0], dy}, {g.labels_in(f, 0), g.labels_out(f, 0)}, params,
                 out_numel(c, f) * Expr(Wgrad.flops_per_element));
  w.unshardable.clear();
}

// dx = p * (dy - sum(p * dy)), reading the saved probabilities.
void vjp_softmax(VjpContext& c, const Op& f) {
  const int dy = output_grads(c, f)[0];
  if (dy < 0) return;
  Graph& g = c.graph();
  c.emit(f, ".bwd", ops::kSoftmaxBwd, {f.outputs[0], dy}, {g.labels_out(f, 0), g.labels_out(f, 0)},
         {{f.inputs[0], 0}}, out_numel(c, f) * Expr(ops::kSoftmaxBwd.flops_per_element));
}

// Scatter-add of dy into the table rows the tokens selected.
void vjp_embedding(VjpContext& c, const Op& f) {
  const int dy = output_grads(c, f)[0];
  if (dy < 0) return;
  Graph& g = c.graph();
  c.emit(f, ".wgrad", ops::kEmbeddingBwd, {f.inputs[0], dy}, {g.labels_in(f, 0), g.labels_out(f, 0)},
         {{f.inputs[1], 1}}, out_numel(c, f) * Expr(ops::kEmbeddingBwd.flops_per_element));
}

// FlashAttention backward recomputes the scores: 5 BMMs of the forward's 2
// executed (the forward's flops: half the square under the causal mask);
// Megatron's model-FLOP count takes 2x the forward's model FLOPs (4 BMMs of
// the full square). Ring attention's backward runs the same blocks around
// the ring (dK/dV travel with K/V).
void vjp_attention(VjpContext& c, const Op& f) {
  const int dy = output_grads(c, f)[0];
  if (dy < 0) return;
  Graph& g = c.graph();
  auto li = [&](size_t i) { return g.labels_in(f, i); };
  Expr bmm = f.flops / Expr(2);
  Op& o = c.emit(f, ".bwd", ops::kFlashAttentionBwd,
                 {f.inputs[0], f.inputs[1], f.inputs[2], f.outputs[0], f.outputs[1], dy},
                 {li(0), li(1), li(2), li(0), g.labels_out(f, 1), li(0)},
                 {{f.inputs[0], 0}, {f.inputs[1], 1}, {f.inputs[2], 2}}, bmm * Expr(5));
  o.model_flops = (f.model_flops.is_zero() ? f.flops : f.model_flops) / Expr(2) * Expr(4);
  o.ring_axis = f.ring_axis;
}

// Cross entropy: d logits = softmax(logits) - onehot(labels), read from
// the saved logits and the (already reduced) statistics.
void vjp_cross_entropy(VjpContext& c, const Op& f) {
  const int dy = output_grads(c, f)[0];
  if (dy < 0) return;
  Graph& g = c.graph();
  const Op& max_op = g.ops[g.tensors[f.inputs[0]].producer];
  const Op& tgt_op = g.ops[g.tensors[f.inputs[2]].producer];
  int logits = max_op.inputs[0], labels = tgt_op.inputs[1];
  // The unfused loss keeps the softmax (built between the sum and the loss,
  // from the sum) for the backward, as Megatron's does; the fused one the
  // logits.
  int read = logits;
  for (int i = g.tensors[f.inputs[1]].producer + 1; i < f.id; ++i)
    if (g.ops[i].def == &ops::kLossSoftmax && g.ops[i].inputs[1] == f.inputs[1]) read = g.ops[i].outputs[0];
  Op pseudo = max_op;  // labels of logits as seen by the statistics
  pseudo.name = f.name;
  Expr n = g.tensors[logits].global_numel();
  c.emit(pseudo, ".bwd", ops::kCrossEntropyBwd, {read, f.inputs[0], f.inputs[1], labels, dy}, {},
         {{logits, 0}}, n * Expr(ops::kCrossEntropyBwd.flops_per_element));
}

// The way back between the MoE layouts, by the same routing (indices).
void remesh_back(VjpContext& c, const Op& f, const std::string& suffix, const OpDef& def, std::vector<int> ins,
                 std::vector<Sharding> layouts, size_t primal, const Sharding& grad_layout) {
  Labels labs(ins.size());
  Op& o = c.emit(f, suffix, def, std::move(ins), labs, {{f.inputs[primal], primal}}, f.flops);
  o.remesh_in = std::move(layouts);
  o.flops_axes = f.flops_axes;
  o.sp_region = false;
  c.graph().tensors[o.outputs[0]].sharding = grad_layout;
}

void vjp_moe_permute(VjpContext& c, const Op& f) {
  const int dy = output_grads(c, f)[0];
  if (dy < 0) return;
  const Sharding y_layout = c.graph().tensors[f.outputs[0]].sharding;  // a copy: emit grows tensors
  remesh_back(c, f, ".bwd", ops::kMoeUnpermute, {dy, f.inputs[1]}, {y_layout, f.remesh_in[1]}, 0, f.remesh_in[0]);
}

// Inputs {expert outputs, probs, indices}: gradients of the expert outputs
// and of the probabilities.
void vjp_moe_combine(VjpContext& c, const Op& f) {
  const int dy = output_grads(c, f)[0];
  if (dy < 0) return;
  const Sharding y_layout = c.graph().tensors[f.outputs[0]].sharding;
  remesh_back(c, f, ".bwd", ops::kMoeCombineBwd, {dy, f.inputs[1], f.inputs[2]},
              {y_layout, f.remesh_in[1], f.remesh_in[2]}, 0, f.remesh_in[0]);
  remesh_back(c, f, ".bwd_probs", ops::kMoeCombineProbsBwd, {dy, f.inputs[0], f.inputs[2]},
              {y_layout, f.remesh_in[0], f.remesh_in[2]}, 1, f.remesh_in[1]);
}

// MTP's eh_proj output brought to the residual stream's layout: the
// gradient goes back to the whole tensor (an all-gather over tp along the
// sequence under sequence parallelism), from which the projection's dgrad
// takes its h slice.
void vjp_gather_to_stream(VjpContext& c, const Op& f) {
  const int dy = output_grads(c, f)[0];
  if (dy < 0) return;
  remesh_back(c, f, ".bwd", ops::kGatherToStreamBwd, {dy}, {f.remesh_in[0]}, 0, f.remesh_in[0]);
}

// Views: the gradient is the inverse view of the output gradients.
template <const OpDef& Bwd>
void vjp_view(VjpContext& c, const Op& f) {
  const std::vector<int> dys = output_grads(c, f);
  bool any = false;
  for (int d : dys) any |= d >= 0;
  if (!any || !c.requires_grad(f.inputs[0])) return;
  Labels labs;
  for (size_t i = 0; i < f.outputs.size(); ++i) labs.push_back(c.graph().labels_out(f, i));
  c.emit(f, ".bwd", Bwd, dys, labs, {{f.inputs[0], 0}}, Expr(0));
}

// The gradient of what this stage sent comes back from the next one.
void vjp_send(VjpContext& c, const Op& f) {
  Graph& g = c.graph();
  int x = f.inputs[0];
  int seed = c.new_grad_like(x, g.tensors[x].name + ".grad");
  Op r = c.backward_op(f.name + ".grad", ops::kRecv, {}, {seed}, f.layer);
  r.boundary = f.boundary;
  c.graph().tensors[seed].sharding = f.send_sharding;
  c.contribute(x, seed);
  c.add(std::move(r));
}

// The gradient of what this stage received goes back to the previous one.
void vjp_recv(VjpContext& c, const Op& f) {
  int gx = c.grad(f.outputs[0]);
  if (gx < 0) return;
  Op snd = c.backward_op(f.name + ".grad", ops::kSend, {gx}, {}, f.layer);
  snd.boundary = f.boundary;
  snd.send_sharding = c.graph().tensors[f.outputs[0]].sharding;
  c.add(std::move(snd));
}

// Depthwise causal conv1d y = silu(conv(x, w) + b): dx by the transposed
// conv (2K FLOPs per element, plus the SiLU's derivative), and dw, db as a
// reduction over the tokens (a separate weight-gradient op).
void vjp_causal_conv1d(VjpContext& c, const Op& f) {
  const int dy = output_grads(c, f)[0];
  if (dy < 0) return;
  Graph& g = c.graph();
  auto li = [&](size_t i) { return g.labels_in(f, i); };
  // f.flops is the forward's 2K+4 per element: the transposed conv costs the same.
  if (c.requires_grad(f.inputs[0]))
    c.emit(f, ".bwd", ops::kCausalConv1dBwd, {f.inputs[0], f.inputs[1], f.inputs[2], dy},
           {li(0), li(1), li(2), g.labels_out(f, 0)}, {{f.inputs[0], 0}}, f.flops);
  std::vector<std::pair<int, size_t>> params;
  for (size_t i = 1; i < f.inputs.size(); ++i) params.push_back({f.inputs[i], i});
  c.emit(f, ".wgrad", ops::kCausalConv1dWgrad, {f.inputs[0], f.inputs[1], f.inputs[2], dy},
         {li(0), li(1), li(2), g.labels_out(f, 0)}, params, f.flops);
}

// A scan's backward (SSD, selective) reads every forward input and dy: the
// operands and their labels, in that order.
std::pair<std::vector<int>, std::vector<std::vector<std::string>>> inputs_and_dy(const Graph& g, const Op& f, int dy) {
  std::vector<int> in(f.inputs.begin(), f.inputs.end());
  in.push_back(dy);
  std::vector<std::vector<std::string>> labs;
  for (size_t i = 0; i < f.inputs.size(); ++i) labs.push_back(g.labels_in(f, i));
  labs.push_back(g.labels_out(f, 0));
  return {std::move(in), std::move(labs)};
}

// The selective scan's backward (Mamba-2's chunked SSD kernels) re-runs the
// chunk states from the saved inputs: dx, ddt, dB, dC cost twice the
// forward (the usual 2x of a contraction, also what Megatron's 3x model-
// FLOP factor assumes); dA, dD and d(dt_bias) are reductions over tokens.
void vjp_ssd_scan(VjpContext& c, const Op& f) {
  const int dy = output_grads(c, f)[0];
  if (dy < 0) return;
  Graph& g = c.graph();
  const auto [in, labs] = inputs_and_dy(g, f, dy);
  std::vector<std::pair<int, size_t>> acts, params;
  for (size_t i = 0; i < f.inputs.size(); ++i) {
    if (!c.requires_grad(f.inputs[i])) continue;
    (g.tensors[f.inputs[i]].kind == TensorKind::kWeight ? params : acts).push_back({f.inputs[i], i});
  }
  if (!acts.empty()) {
    Op& o = c.emit(f, ".bwd", ops::kSsdScanBwd, in, labs, acts, f.flops * Expr(2));
    o.model_flops = f.model_flops * Expr(2);
  }
  if (!params.empty())
    c.emit(f, ".wgrad", ops::kSsdScanWgrad, in, labs, params,
           g.tensors[f.inputs[0]].global_numel() * Expr(ops::kSsdScanWgrad.flops_per_element));
}

// out = rmsnorm(y * silu(z)) * w: dy and dz from y, z, w; dw a reduction.
void vjp_gated_rmsnorm(VjpContext& c, const Op& f) {
  const int dy = output_grads(c, f)[0];
  if (dy < 0) return;
  Graph& g = c.graph();
  auto li = [&](size_t i) { return g.labels_in(f, i); };
  c.emit(f, ".bwd", ops::kGatedRMSNormBwd, {f.inputs[0], f.inputs[1], f.inputs[2], dy},
         {li(0), li(1), li(2), g.labels_out(f, 0)}, {{f.inputs[0], 0}, {f.inputs[1], 1}},
         out_numel(c, f) * Expr(ops::kGatedRMSNormBwd.flops_per_element));
  Op& w = c.emit(f, ".wgrad", ops::kGatedRMSNormWgrad, {f.inputs[0], f.inputs[1], dy},
                 {li(0), li(1), g.labels_out(f, 0)}, {{f.inputs[2], 2}},
                 out_numel(c, f) * Expr(ops::kGatedRMSNormWgrad.flops_per_element));
  w.unshardable.clear();
}

// The Mamba-1 selective scan y = scan(x, dt + dt_bias, A, B, C) + D x,
// gated by silu(z) (selective_scan_fn's fused kernel). Its backward
// kernel re-runs the scan from the saved inputs, 2x the forward in all,
// as the SSD scan's. The per-channel gradients (dx, ddt, dz) are one op;
// dB and dC, [b, s, N] without the channel dim, sum every channel's
// contribution (4 FLOPs per token, channel and state: two products
// accumulated), so they are their own op: with the channels split over tp
// each rank holds a partial sum, which propagation resolves. dA_log, dD
// and d dt_bias are reductions over the tokens (the wgrad op).
// Inputs: {x, dt, B, C, z, A_log, D, dt_bias}.
void vjp_selective_scan(VjpContext& c, const Op& f) {
  const int dy = output_grads(c, f)[0];
  if (dy < 0) return;
  Graph& g = c.graph();
  const auto [in, labs] = inputs_and_dy(g, f, dy);
  std::vector<std::pair<int, size_t>> channel, state, params;
  for (size_t i = 0; i < f.inputs.size(); ++i) {
    const int x = f.inputs[i];
    if (!c.requires_grad(x)) continue;
    if (g.tensors[x].kind == TensorKind::kWeight) params.push_back({x, i});
    else (i == 2 || i == 3 ? state : channel).push_back({x, i});
  }
  // Per (token, channel, state): dB and dC, 2 FLOPs each.
  const Expr bc = g.tensors[f.inputs[2]].global_numel() * g.tensors[f.inputs[0]].dims.back().size * Expr(4);
  if (!channel.empty()) {
    Op& o = c.emit(f, ".bwd", ops::kSelectiveScanBwd, in, labs, channel, f.flops * Expr(2) - bc);
    o.model_flops = f.model_flops * Expr(2) - bc;
  }
  if (!state.empty()) {
    Op& o = c.emit(f, ".bwd_bc", ops::kSelectiveScanBwdBC, in, labs, state, bc);
    o.model_flops = bc;
  }
  if (!params.empty())
    c.emit(f, ".wgrad", ops::kSelectiveScanWgrad, in, labs, params,
           g.tensors[f.inputs[0]].global_numel() * Expr(ops::kSelectiveScanWgrad.flops_per_element));
}

using FC = FusionClass;
using PR = PropagationRule;
using SR = ShapeRule;
using FR = FlopsRule;

}  // namespace

namespace ops {
// name, fn, kind, fusion, propagation, shape, flops rule, flops/elem, saves, selective, linear, vjp, gradient
const OpDef kMatmul{"matmul", "matmul", OpKind::kMatmul, FC::kGemm, PR::kFactors, SR::kContraction,
                    FR::kContraction, 0, Saves::kInputs, false, false, vjp_matmul,
                    "dgrad and wgrad GEMMs (each the forward's FLOPs)"};
const OpDef kAttentionScores{"attention.scores", "matmul", OpKind::kMatmul, FC::kGemm, PR::kFactors,
                             SR::kContraction, FR::kContraction, 0, Saves::kInputs, true, false, vjp_matmul,
                             "dQ and dK BMMs"};
const OpDef kAttentionValues{"attention.values", "matmul", OpKind::kMatmul, FC::kGemm, PR::kFactors,
                             SR::kContraction, FR::kContraction, 0, Saves::kInputs, true, false, vjp_matmul,
                             "dP and dV BMMs"};
const OpDef kSoftmax{"softmax", "softmax", OpKind::kSoftmax, FC::kNormalization, PR::kFactors, SR::kSameAsInput,
                     FR::kPerOutputElement, 5, Saves::kOutputs, true, false, vjp_softmax,
                     "softmax_bwd from the probabilities"};
const OpDef kAttentionDropout{"attention.dropout", "dropout", OpKind::kDropout, FC::kPointwise, PR::kFactors,
                              SR::kSameAsInput, FR::kPerOutputElement, 2, Saves::kOutputs, true, false,
                              vjp_dropout, "dropout_bwd from the mask"};
const OpDef kFlashAttention{"flash_attention", "flash_attention", OpKind::kAttention, FC::kAttention,
                            PR::kFactors, SR::kGiven, FR::kGiven, 0, Saves::kInputsAndOutputs, false, false,
                            vjp_attention, "flash_attention_bwd (recomputes the scores: 5 BMMs)"};
const OpDef kRingAttention{"ring_attention", "ring_attention", OpKind::kAttention, FC::kAttention, PR::kFactors,
                           SR::kGiven, FR::kGiven, 0, Saves::kInputsAndOutputs, false, false, vjp_attention,
                           "flash_attention_bwd run around the ring (dK/dV travel with K/V)"};
const OpDef kSplit{"split", "split", OpKind::kView, FC::kLayout, PR::kFactorsLinear, SR::kGiven, FR::kGiven, 0,
                   Saves::kNothing, false, true, vjp_view<ops::kSplitBwd>, "split_bwd (concatenation of the pieces)"};
const OpDef kMerge{"merge", "merge", OpKind::kView, FC::kLayout, PR::kFactorsLinear, SR::kGiven, FR::kGiven, 0,
                   Saves::kNothing, false, true, vjp_view<ops::kMergeBwd>, "merge_bwd (split back into heads)"};
const OpDef kConcat{"concat", "concat", OpKind::kElementwise, FC::kLayout, PR::kFactors, SR::kGiven, FR::kGiven, 0,
                    Saves::kNothing, false, false, vjp_concat, "a slice of dy and a sum over heads"};
const OpDef kConcatHidden{"concat.hidden", "concat", OpKind::kElementwise, FC::kLayout, PR::kFactors, SR::kGiven,
                          FR::kGiven, 0, Saves::kNothing, false, false, vjp_concat_hidden,
                          "a slice of dy for each input"};
const OpDef kRope{"rope", "rope", OpKind::kElementwise, FC::kPointwise, PR::kFactors, SR::kSameAsInput,
                  FR::kPerOutputElement, 3, Saves::kNothing, false, false, vjp_rope, "rope_bwd (inverse rotation)"};
// Partial rotary (Phi-4-mini's partial_rotary_factor): 3 FLOPs per rotated
// element, the first rotary_dim of each head; the builder states the count.
const OpDef kRopePartial{"rope.partial", "rope", OpKind::kElementwise, FC::kPointwise, PR::kFactors,
                         SR::kSameAsInput, FR::kGiven, 3, Saves::kNothing, false, false, vjp_rope_partial,
                         "rope_bwd on the rotated features (inverse rotation)"};
const OpDef kGelu{"gelu", "gelu", OpKind::kElementwise, FC::kPointwise, PR::kFactors, SR::kSameAsInput,
                  FR::kPerOutputElement, 8, Saves::kInputs, false, false, vjp_pointwise_reads_x<ops::kGeluBwd>,
                  "gelu_bwd from the input"};
const OpDef kSwiGLU{"swiglu", "swiglu", OpKind::kElementwise, FC::kPointwise, PR::kFactors, SR::kGiven,
                    FR::kPerOutputElement, 5, Saves::kInputs, false, false, vjp_pointwise_reads_x<ops::kSwiGLUBwd>,
                    "swiglu_bwd from the input"};
// GeGLU (Gemma): gelu_tanh(gate) * up, [..., 2, f] -> [..., f]. Forward per
// output element: the tanh GeLU of the gate (8, as gelu) and the product (1).
const OpDef kGeGLU{"geglu", "geglu", OpKind::kElementwise, FC::kPointwise, PR::kFactors, SR::kGiven,
                   FR::kPerOutputElement, 9, Saves::kInputs, false, false, vjp_pointwise_reads_x<ops::kGeGLUBwd>,
                   "geglu_bwd from the input"};
// Soft-capping (Gemma-2): y = c tanh(x / c), per element: the scale, tanh,
// the scale back (3). On attention scores it is part of the attention core
// (selective recomputation redoes it); on the logits it is not.
const OpDef kAttentionSoftcap{"attention.softcap", "softcap", OpKind::kElementwise, FC::kPointwise, PR::kFactors,
                              SR::kSameAsInput, FR::kPerOutputElement, 3, Saves::kOutputs, true, false,
                              vjp_pointwise_reads_y<ops::kSoftcapBwd>, "softcap_bwd from the output"};
const OpDef kSoftcap{"softcap", "softcap", OpKind::kElementwise, FC::kPointwise, PR::kFactors, SR::kSameAsInput,
                     FR::kPerOutputElement, 3, Saves::kOutputs, false, false, vjp_pointwise_reads_y<ops::kSoftcapBwd>,
                     "softcap_bwd from the output"};
// A constant multiplier (Granite's embedding/residual/logit multipliers,
// Gemma's sqrt(hidden) embedding scale): 1 FLOP per element.
const OpDef kScale{"scale", "scale", OpKind::kElementwise, FC::kPointwise, PR::kFactors, SR::kSameAsInput,
                   FR::kPerOutputElement, 1, Saves::kNothing, false, false, vjp_scale, "scale_bwd (dy times the constant)"};
// Qwen2-MoE's shared-expert gate: y = x sigmoid(g) with g [b, s, 1] from a
// h -> 1 projection. Per output element the product (1); the sigmoid per
// token (4) is added by the builder's formula.
const OpDef kSigmoidGate{"sigmoid_gate", "sigmoid_gate", OpKind::kElementwise, FC::kPointwise, PR::kFactors,
                         SR::kSameAsInput, FR::kGiven, 1, Saves::kInputs, false, false, vjp_sigmoid_gate,
                         "sigmoid_gate_bwd: dx and the per-token dg from x, g and dy"};
const OpDef kBiasAdd{"bias_add", "bias_add", OpKind::kElementwise, FC::kPointwise, PR::kFactors, SR::kSameAsInput,
                     FR::kPerOutputElement, 1, Saves::kNothing, false, false, vjp_bias_add,
                     "dy to the input; bias_grad sums dy over the tokens"};
const OpDef kAdd{"add", "add", OpKind::kElementwise, FC::kPointwise, PR::kFactors, SR::kSameAsInput,
                 FR::kPerOutputElement, 1, Saves::kNothing, false, false, vjp_add, "dy to each addend (no op)"};
const OpDef kDropout{"dropout", "dropout", OpKind::kDropout, FC::kPointwise, PR::kFactors, SR::kSameAsInput,
                     FR::kPerOutputElement, 2, Saves::kOutputs, false, false, vjp_dropout,
                     "dropout_bwd from the mask"};
const OpDef kLayerNorm{"layernorm", "layernorm", OpKind::kNorm, FC::kNormalization, PR::kFactors, SR::kSameAsInput,
                       FR::kPerOutputElement, 8, Saves::kInputs, false, false,
                       vjp_norm<ops::kLayerNormBwd, ops::kLayerNormWgrad>, "layernorm_bwd and layernorm_wgrad"};
const OpDef kRMSNorm{"rmsnorm", "rmsnorm", OpKind::kNorm, FC::kNormalization, PR::kFactors, SR::kSameAsInput,
                     FR::kPerOutputElement, 5, Saves::kInputs, false, false, vjp_norm<ops::kRMSNormBwd, ops::kRMSNormWgrad>,
                     "rmsnorm_bwd and rmsnorm_wgrad"};
const OpDef kEmbedding{"embedding", "embedding", OpKind::kEmbedding, FC::kEmbedding, PR::kFactors, SR::kGiven,
                       FR::kGiven, 0, Saves::kInputs, false, false, vjp_embedding,
                       "embedding_bwd (scatter-add into the table)"};
const OpDef kLossMax{"loss.max", "max", OpKind::kReduce, FC::kReduction, PR::kFactors, SR::kGiven,
                     FR::kPerInputElement, 1, Saves::kNothing, false, false, nullptr, "(in cross_entropy's rule)"};
const OpDef kLossSum{"loss.sum", "sum", OpKind::kReduce, FC::kReduction, PR::kFactors, SR::kGiven, FR::kGiven, 0,
                     Saves::kNothing, false, false, nullptr, "(in cross_entropy's rule)"};
// Megatron-LM's unfused vocabulary-parallel cross entropy
// (megatron/core/tensor_parallel/cross_entropy.py; the job's
// training.cross_entropy_loss_fusion false): the logits copied to fp32
// (`cast`), then passes over that copy in place: x - max (`loss.shift`), exp
// (`loss.exp`), and the division by the sum that leaves the softmax saved
// for the backward (`loss.softmax`). They are off the gradient's path: the
// logits' gradient is cross_entropy's rule, the copy's a cast back.
const OpDef kCast{"cast", "cast", OpKind::kElementwise, FC::kPointwise, PR::kFactors, SR::kGiven,
                  FR::kPerOutputElement, 0, Saves::kNothing, false, false, vjp_cast, "cast (dy back to x's dtype)"};
const OpDef kLossShift{"loss.shift", "sub", OpKind::kElementwise, FC::kPointwise, PR::kFactors, SR::kSameAsInput,
                       FR::kPerOutputElement, 1, Saves::kNothing, false, false, nullptr, "(in cross_entropy's rule)"};
const OpDef kLossExp{"loss.exp", "exp", OpKind::kElementwise, FC::kPointwise, PR::kFactors, SR::kSameAsInput,
                     FR::kPerOutputElement, 1, Saves::kNothing, false, false, nullptr, "(in cross_entropy's rule)"};
const OpDef kLossSoftmax{"loss.softmax", "div", OpKind::kElementwise, FC::kPointwise, PR::kFactors,
                         SR::kSameAsInput, FR::kPerOutputElement, 1, Saves::kNothing, false, false, nullptr,
                         "(in cross_entropy's rule)"};
const OpDef kCrossEntropy{"cross_entropy", "cross_entropy", OpKind::kLoss, FC::kReduction, PR::kFactors, SR::kGiven,
                          FR::kPerOutputElement, 3, Saves::kInputs, false, false, vjp_cross_entropy,
                          "cross_entropy_bwd from the logits and statistics"};
const OpDef kTopK{"topk", "topk", OpKind::kElementwise, FC::kReduction, PR::kFactors, SR::kGiven,
                  FR::kPerInputElement, 6, Saves::kInputsAndOutputs, false, false, vjp_topk,
                  "topk_bwd to the router logits"};
const OpDef kMoePermute{"moe_permute", "moe_permute", OpKind::kRemesh, FC::kLayout, PR::kRemesh, SR::kGiven,
                        FR::kGiven, 0, Saves::kInputs, false, false, vjp_moe_permute,
                        "moe_unpermute by the same indices"};
const OpDef kMoeCombine{"moe_combine", "moe_combine", OpKind::kRemesh, FC::kLayout, PR::kRemesh, SR::kGiven,
                        FR::kGiven, 0, Saves::kInputs, false, false, vjp_moe_combine,
                        "moe_combine_bwd and moe_combine_probs_bwd"};
const OpDef kGatherToStream{"gather_to_stream", "gather_to_stream", OpKind::kRemesh, FC::kLayout, PR::kRemesh,
                            SR::kSameAsInput, FR::kGiven, 0, Saves::kNothing, false, false, vjp_gather_to_stream,
                            "gather_to_stream_bwd (the gradient gathered whole)"};
const OpDef kSend{"send", "send", OpKind::kSend, FC::kCommunication, PR::kSend, SR::kGiven, FR::kGiven, 0,
                  Saves::kNothing, false, false, vjp_send, "a recv of the gradient from the next stage"};
const OpDef kRecv{"recv", "recv", OpKind::kRecv, FC::kCommunication, PR::kRecv, SR::kGiven, FR::kGiven, 0,
                  Saves::kNothing, false, false, vjp_recv, "a send of the gradient to the previous stage"};

// Mamba-2 (SSD) and squared ReLU. FLOPs: relu2 is max(x,0)^2 (2 per
// element); the conv's and the scan's are formulas the builder states
// (2K per conv output element + 4 for the SiLU; the scan 7 x tokens x
// d_inner x d_state, Megatron-LM's hybrid FLOP count); the gated norm is
// the SiLU gate (4) and the RMSNorm (5) per element.
const OpDef kReLU2{"relu2", "relu2", OpKind::kElementwise, FC::kPointwise, PR::kFactors, SR::kSameAsInput,
                   FR::kPerOutputElement, 2, Saves::kInputs, false, false, vjp_pointwise_reads_x<ops::kReLU2Bwd>,
                   "relu2_bwd from the input"};
const OpDef kCausalConv1d{"causal_conv1d", "causal_conv1d", OpKind::kElementwise, FC::kConvolution, PR::kFactors,
                          SR::kSameAsInput, FR::kGiven, 0, Saves::kInputs, false, false, vjp_causal_conv1d,
                          "causal_conv1d_bwd (dx) and causal_conv1d_wgrad (dw, db)"};
const OpDef kSsdScan{"ssd_scan", "ssd_scan", OpKind::kElementwise, FC::kScan, PR::kFactors, SR::kGiven, FR::kGiven, 0,
                     Saves::kInputs, false, false, vjp_ssd_scan,
                     "ssd_scan_bwd (dx, ddt, dB, dC: 2x forward) and ssd_scan_wgrad (dA, dD, d dt_bias)"};
const OpDef kGatedRMSNorm{"gated_rmsnorm", "gated_rmsnorm", OpKind::kNorm, FC::kNormalization, PR::kFactors,
                          SR::kSameAsInput, FR::kPerOutputElement, 9, Saves::kInputs, false, false,
                          vjp_gated_rmsnorm, "gated_rmsnorm_bwd (dy, dz) and gated_rmsnorm_wgrad"};
// Mamba-1 (S6). The scan's FLOPs are the builder's formula: 9 per token,
// channel and state (discretize, update the state, read it out: mamba_ssm's
// count, state-spaces/mamba issue 110) + 1 for the D skip + 1 for the z gate
// per token and channel. The x_proj split is not linear: the row-parallel
// x_proj's partial sum is resolved once before it (every consumer, the
// dt/B/C norms or dt_proj and the scan, needs the sum), as one all-reduce.
const OpDef kSelectiveScan{"selective_scan", "selective_scan", OpKind::kElementwise, FC::kScan, PR::kFactors,
                           SR::kGiven, FR::kGiven, 0, Saves::kInputs, false, false, vjp_selective_scan,
                           "selective_scan_bwd (dx, ddt, dz), selective_scan_bwd_bc (dB, dC: a sum over "
                           "channels; 2x forward together) and selective_scan_wgrad (dA_log, dD, d dt_bias)"};
const OpDef kSplitReduced{"split_reduced", "split", OpKind::kView, FC::kLayout, PR::kFactors, SR::kGiven, FR::kGiven,
                          0, Saves::kNothing, false, false, vjp_view<ops::kSplitBwd>,
                          "split_bwd (concatenation of the pieces)"};

// Backward ops: no gradient of their own.
const OpDef kSliceBwd{"slice_bwd", "slice", OpKind::kView, FC::kLayout, PR::kFactorsLinear};
const OpDef kSumHeadsBwd{"sum_heads", "sum_heads", OpKind::kReduce, FC::kReduction};
const OpDef kTopKBwd{"topk_bwd", "topk_bwd", OpKind::kElementwise, FC::kPointwise, PR::kFactors, SR::kGiven,
                     FR::kPerInputElement, 4};
const OpDef kBiasGrad{"bias_grad", "bias_grad", OpKind::kReduce, FC::kReduction, PR::kFactors, SR::kGiven,
                      FR::kPerInputElement, 1};
const OpDef kGeluBwd{"gelu_bwd", "gelu_bwd", OpKind::kElementwise, FC::kPointwise, PR::kFactors, SR::kGiven,
                     FR::kPerOutputElement, 8};
const OpDef kSwiGLUBwd{"swiglu_bwd", "swiglu_bwd", OpKind::kElementwise, FC::kPointwise, PR::kFactors, SR::kGiven,
                       FR::kPerOutputElement, 8};
// Per output element of dy: recompute gelu(g) (8), its derivative from the
// same tanh (0.5(1+t) + 0.5 g (1-t^2) sqrt(2/pi)(1 + 3c g^2): 10), d_up =
// dy gelu(g) (1) and d_gate = dy up gelu'(g) (2).
const OpDef kGeGLUBwd{"geglu_bwd", "geglu_bwd", OpKind::kElementwise, FC::kPointwise, PR::kFactors, SR::kGiven,
                      FR::kPerOutputElement, 21};
// dx = dy (1 - (y/c)^2): scale, square, subtract, multiply (4).
const OpDef kSoftcapBwd{"softcap_bwd", "softcap_bwd", OpKind::kElementwise, FC::kPointwise, PR::kFactors, SR::kGiven,
                        FR::kPerOutputElement, 4};
const OpDef kScaleBwd{"scale_bwd", "scale_bwd", OpKind::kElementwise, FC::kPointwise, PR::kFactors, SR::kGiven,
                      FR::kPerOutputElement, 1};
// Per element of x: dx = dy sigmoid(g) (1), dy x and its sum over h (2).
const OpDef kSigmoidGateBwd{"sigmoid_gate_bwd", "sigmoid_gate_bwd", OpKind::kElementwise, FC::kPointwise,
                            PR::kFactors, SR::kGiven, FR::kPerOutputElement, 3};
const OpDef kRopeBwd{"rope_bwd", "rope_bwd", OpKind::kElementwise, FC::kPointwise, PR::kFactors, SR::kGiven,
                     FR::kPerOutputElement, 3};
const OpDef kDropoutBwd{"dropout_bwd", "dropout_bwd", OpKind::kElementwise, FC::kPointwise, PR::kFactors,
                        SR::kGiven, FR::kPerOutputElement, 1};
const OpDef kLayerNormBwd{"layernorm_bwd", "layernorm_bwd", OpKind::kNorm, FC::kNormalization, PR::kFactors,
                          SR::kGiven, FR::kPerOutputElement, 10};
const OpDef kRMSNormBwd{"rmsnorm_bwd", "rmsnorm_bwd", OpKind::kNorm, FC::kNormalization, PR::kFactors, SR::kGiven,
                        FR::kPerOutputElement, 10};
const OpDef kLayerNormWgrad{"layernorm_wgrad", "layernorm_wgrad", OpKind::kReduce, FC::kReduction, PR::kFactors,
                            SR::kGiven, FR::kPerOutputElement, 3};
const OpDef kRMSNormWgrad{"rmsnorm_wgrad", "rmsnorm_wgrad", OpKind::kReduce, FC::kReduction, PR::kFactors,
                          SR::kGiven, FR::kPerOutputElement, 3};
const OpDef kSoftmaxBwd{"softmax_bwd", "softmax_bwd", OpKind::kSoftmax, FC::kNormalization, PR::kFactors,
                        SR::kGiven, FR::kPerOutputElement, 4};
const OpDef kEmbeddingBwd{"embedding_bwd", "embedding_bwd", OpKind::kEmbedding, FC::kEmbedding, PR::kFactors,
                          SR::kGiven, FR::kPerOutputElement, 1};
const OpDef kFlashAttentionBwd{"flash_attention_bwd", "flash_attention_bwd", OpKind::kAttention, FC::kAttention};
const OpDef kCrossEntropyBwd{"cross_entropy_bwd", "cross_entropy_bwd", OpKind::kElementwise, FC::kPointwise,
                             PR::kFactors, SR::kGiven, FR::kPerInputElement, 4};
const OpDef kGatherToStreamBwd{"gather_to_stream_bwd", "gather_to_stream_bwd", OpKind::kRemesh, FC::kLayout,
                               PR::kRemesh};
const OpDef kMoeUnpermute{"moe_unpermute", "moe_unpermute", OpKind::kRemesh, FC::kLayout, PR::kRemesh};
const OpDef kMoeCombineBwd{"moe_combine_bwd", "moe_combine_bwd", OpKind::kRemesh, FC::kLayout, PR::kRemesh};
const OpDef kMoeCombineProbsBwd{"moe_combine_probs_bwd", "moe_combine_probs_bwd", OpKind::kRemesh, FC::kLayout,
                                PR::kRemesh};
const OpDef kSplitBwd{"split_bwd", "split_bwd", OpKind::kView, FC::kLayout, PR::kFactorsLinear};
const OpDef kMergeBwd{"merge_bwd", "merge_bwd", OpKind::kView, FC::kLayout, PR::kFactorsLinear};
const OpDef kGradAccumulate{"grad_accumulate", "add", OpKind::kElementwise, FC::kPointwise, PR::kFactors,
                            SR::kSameAsInput, FR::kGiven, 0, Saves::kNothing, false, true};
const OpDef kAdam{"adam", "adam", OpKind::kOptimizer, FC::kOptimizer, PR::kFactors, SR::kSameAsInput, FR::kGiven};
const OpDef kReLU2Bwd{"relu2_bwd", "relu2_bwd", OpKind::kElementwise, FC::kPointwise, PR::kFactors, SR::kGiven,
                      FR::kPerOutputElement, 3};
const OpDef kCausalConv1dBwd{"causal_conv1d_bwd", "causal_conv1d_bwd", OpKind::kElementwise, FC::kConvolution};
const OpDef kCausalConv1dWgrad{"causal_conv1d_wgrad", "causal_conv1d_wgrad", OpKind::kReduce, FC::kConvolution};
const OpDef kSsdScanBwd{"ssd_scan_bwd", "ssd_scan_bwd", OpKind::kElementwise, FC::kScan};
const OpDef kSsdScanWgrad{"ssd_scan_wgrad", "ssd_scan_wgrad", OpKind::kReduce, FC::kReduction, PR::kFactors,
                          SR::kGiven, FR::kPerInputElement, 3};
const OpDef kGatedRMSNormBwd{"gated_rmsnorm_bwd", "gated_rmsnorm_bwd", OpKind::kNorm, FC::kNormalization,
                             PR::kFactors, SR::kGiven, FR::kPerOutputElement, 14};
const OpDef kGatedRMSNormWgrad{"gated_rmsnorm_wgrad", "gated_rmsnorm_wgrad", OpKind::kReduce, FC::kReduction,
                               PR::kFactors, SR::kGiven, FR::kPerOutputElement, 3};
const OpDef kSelectiveScanBwd{"selective_scan_bwd", "selective_scan_bwd", OpKind::kElementwise, FC::kScan};
const OpDef kSelectiveScanBwdBC{"selective_scan_bwd_bc", "selective_scan_bwd_bc", OpKind::kReduce, FC::kScan};
// Per token and channel: dD (2), d dt_bias (1); dA_log's sum over tokens is
// inside the scan's backward.
const OpDef kSelectiveScanWgrad{"selective_scan_wgrad", "selective_scan_wgrad", OpKind::kReduce, FC::kReduction,
                                PR::kFactors, SR::kGiven, FR::kPerInputElement, 3};

// Inserted by the later passes.
const OpDef kCollective{"collective", "collective", OpKind::kCollective, FC::kCommunication, PR::kInserted,
                        SR::kSameAsInput, FR::kGiven, 0, Saves::kNothing, false, true};
const OpDef kSlice{"slice", "slice", OpKind::kView, FC::kLayout, PR::kInserted, SR::kGiven, FR::kGiven, 0,
                   Saves::kNothing, false, true};
// Inference (serving, docs/inference.md): forward only, no gradient.
// kv_cache_write: the iteration's new K/V (or MLA's latent and RoPE key)
// stored into the paged cache at the cache dtype; bytes = what it reads
// and writes (the new entries only). paged_attention: the iteration's
// queries against the cached keys/values (decode: one query per sequence
// over every cached token; prefill: causal over the prompt; chunked
// prefill: the chunk over the cached prefix and itself); FLOPs given from
// the query-key pairs; bytes = q, the whole K/V cache read, the output, so
// decode is memory-bound by construction. token_select: the rows whose
// next token is sampled (a view: the last prompt token of each prefilled
// sequence, every decode token).
const OpDef kKvCacheWrite{"kv_cache_write", "kv_cache_write", OpKind::kElementwise, FC::kLayout, PR::kFactors,
                          SR::kGiven, FR::kGiven, 0, Saves::kNothing};
const OpDef kPagedAttention{"paged_attention", "paged_attention", OpKind::kAttention, FC::kAttention,
                            PR::kFactors, SR::kGiven, FR::kGiven, 0, Saves::kNothing};
const OpDef kTokenSelect{"token_select", "token_select", OpKind::kView, FC::kLayout, PR::kFactors, SR::kGiven,
                         FR::kGiven, 0, Saves::kNothing};
}  // namespace ops

const char* fusion_class_name(FusionClass c) {
  switch (c) {
    case FusionClass::kGemm: return "gemm";
    case FusionClass::kAttention: return "attention";
    case FusionClass::kPointwise: return "pointwise";
    case FusionClass::kNormalization: return "normalization";
    case FusionClass::kReduction: return "reduction";
    case FusionClass::kEmbedding: return "embedding";
    case FusionClass::kScan: return "scan";
    case FusionClass::kConvolution: return "convolution";
    case FusionClass::kLayout: return "layout";
    case FusionClass::kCommunication: return "communication";
    case FusionClass::kOptimizer: return "optimizer";
  }
  return "?";
}

const std::vector<const OpDef*>& op_table() {
  using namespace ops;
  static const std::vector<const OpDef*> table = {
      &kMatmul, &kAttentionScores, &kAttentionValues, &kSoftmax, &kAttentionDropout, &kFlashAttention,
      &kRingAttention, &kSplit, &kMerge, &kConcat, &kConcatHidden, &kRope, &kRopePartial, &kGelu, &kSwiGLU, &kGeGLU, &kAttentionSoftcap, &kSoftcap, &kScale, &kSigmoidGate, &kBiasAdd, &kAdd, &kDropout,
      &kLayerNorm, &kRMSNorm, &kEmbedding, &kLossMax, &kLossSum, &kCast, &kLossShift, &kLossExp, &kLossSoftmax, &kCrossEntropy, &kTopK, &kMoePermute,
      &kMoeCombine, &kGatherToStream, &kSend, &kRecv, &kReLU2, &kCausalConv1d, &kSsdScan, &kGatedRMSNorm, &kSelectiveScan,
      &kSplitReduced,
      // backward
      &kSliceBwd, &kSumHeadsBwd, &kTopKBwd, &kBiasGrad, &kGeluBwd, &kSwiGLUBwd, &kGeGLUBwd, &kSoftcapBwd, &kScaleBwd, &kSigmoidGateBwd, &kRopeBwd, &kDropoutBwd,
      &kLayerNormBwd, &kRMSNormBwd, &kLayerNormWgrad, &kRMSNormWgrad, &kSoftmaxBwd, &kEmbeddingBwd,
      &kFlashAttentionBwd, &kCrossEntropyBwd, &kGatherToStreamBwd, &kMoeUnpermute, &kMoeCombineBwd, &kMoeCombineProbsBwd, &kSplitBwd,
      &kMergeBwd, &kGradAccumulate, &kAdam, &kReLU2Bwd, &kCausalConv1dBwd, &kCausalConv1dWgrad, &kSsdScanBwd,
      &kSsdScanWgrad, &kGatedRMSNormBwd, &kGatedRMSNormWgrad, &kSelectiveScanBwd, &kSelectiveScanBwdBC,
      &kSelectiveScanWgrad,
      // inserted
      &kCollective, &kSlice,
      // inference (forward only)
      &kKvCacheWrite, &kPagedAttention, &kTokenSelect};
  return table;
}

const OpDef* find_op_def(const std::string& name) {
  for (const OpDef* d : op_table())
    if (name == d->name) return d;
  return nullptr;
}

const OpDef& op_def(const Op& op) {
  if (op.def) return *op.def;
  switch (op.kind) {
    case OpKind::kMatmul: return ops::kMatmul;
    case OpKind::kElementwise: return ops::kAdd;
    case OpKind::kNorm: return ops::kLayerNorm;
    case OpKind::kSoftmax: return ops::kSoftmax;
    case OpKind::kDropout: return ops::kDropout;
    case OpKind::kEmbedding: return ops::kEmbedding;
    case OpKind::kReduce: return ops::kLossSum;
    case OpKind::kLoss: return ops::kCrossEntropy;
    case OpKind::kAttention: return ops::kFlashAttention;
    case OpKind::kView: return ops::kSlice;
    case OpKind::kCollective: return ops::kCollective;
    case OpKind::kOptimizer: return ops::kAdam;
    case OpKind::kSend: return ops::kSend;
    case OpKind::kRecv: return ops::kRecv;
    case OpKind::kRemesh: return ops::kMoePermute;
  }
  return ops::kAdd;
}

Expr rule_flops(const Graph& g, const Op& op, const Expr& given) {
  const OpDef& d = op_def(op);
  switch (d.flops) {
    case FlopsRule::kPerOutputElement:
      return g.tensors[op.outputs[0]].global_numel() * Expr(d.flops_per_element);
    case FlopsRule::kPerInputElement:
      return g.tensors[op.inputs[0]].global_numel() * Expr(d.flops_per_element);
    case FlopsRule::kContraction: {
      // 2 x output elements x the size of every contracted label.
      std::set<std::string> out;
      for (size_t j = 0; j < op.outputs.size(); ++j)
        for (const auto& l : g.labels_out(op, j)) out.insert(l);
      Expr k = 1;
      std::set<std::string> seen;
      for (size_t i = 0; i < op.inputs.size(); ++i) {
        const auto labels = g.labels_in(op, i);
        for (size_t d2 = 0; d2 < labels.size(); ++d2)
          if (!out.count(labels[d2]) && seen.insert(labels[d2]).second) k *= g.tensors[op.inputs[i]].dims[d2].size;
      }
      return Expr(2) * g.tensors[op.outputs[0]].global_numel() * k;
    }
    case FlopsRule::kGiven: return given;
  }
  return given;
}

}  // namespace sc
