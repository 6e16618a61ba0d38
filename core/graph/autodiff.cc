#include "graph/autodiff.h"

#include <map>

namespace sc {
namespace {

class Autodiff {
 public:
  Autodiff(Graph& g, const AutodiffOptions& o) : g_(g), o_(o) {}

  void run() {
    std::vector<int> fwd = g_.order;
    bool has_seed = false;
    for (int id : fwd) {
      for (int t : g_.ops[id].inputs) fwd_readers_[t].push_back(id);
      has_seed |= g_.ops[id].kind == OpKind::kLoss || g_.ops[id].kind == OpKind::kSend;
    }
    // A graph with neither a loss nor a pipeline send is differentiated
    // from its last op's output.
    if (!has_seed && !fwd.empty()) seed_output(g_.ops[fwd.back()].outputs[0], "output.grad");
    for (auto it = fwd.rbegin(); it != fwd.rend(); ++it) {
      const Op& f = g_.ops[*it];
      chunk_ = f.chunk;
      if (f.kind == OpKind::kLoss) seed_loss(f);
      vjp(g_.ops[*it]);
    }
    optimizer();
  }

 private:
  // d(loss) arrives as an input of the backward pass, laid out like the
  // job's inputs ([b, s], batch on dp).
  void seed_loss(const Op& loss_op) { seed_output(loss_op.outputs[0], "loss.grad"); }

  void seed_output(int loss, const std::string& name) {
    int seed = new_grad_like(loss, name);
    g_.tensors[seed].kind = TensorKind::kInput;
    for (const auto& t : g_.tensors)
      if (t.kind == TensorKind::kInput && t.producer < 0 && t.id != seed && t.dims.size() == g_.tensors[seed].dims.size()) {
        g_.tensors[seed].sharding = t.sharding;
        break;
      }
    contrib_[loss].push_back(seed);
  }

  bool in_region(const Op& o) const {
    if (o.phase != Phase::kForward || o.kind == OpKind::kSend || o.kind == OpKind::kRecv) return false;
    if (o_.recompute == RecomputeMode::kSelective) return o.attn_core;
    if (o_.recompute == RecomputeMode::kFull) return o.layer >= 0;
    return false;
  }

  // What a backward op reads in place of forward tensor t: t itself if it
  // is saved, else its recomputed copy (cloning its producer, recursively).
  int saved_or_recomputed(int t) {
    const Tensor& x = g_.tensors[t];
    if (x.producer < 0 || (x.kind != TensorKind::kActivation && x.kind != TensorKind::kMask)) return t;
    const Op& p = g_.ops[x.producer];
    if (!in_region(p)) return t;
    for (int reader : fwd_readers_[t]) {
      const Op& r = g_.ops[reader];
      if (!in_region(r) || r.layer != p.layer) return t;  // a region output: saved
    }
    if (auto it = recomputed_.find(t); it != recomputed_.end()) return it->second;
    Op clone = p;
    clone.id = -1;
    clone.name = p.name + ".recompute";
    clone.phase = Phase::kBackward;
    clone.model_flops = Expr(0);
    clone.recomputed = true;
    clone.chunk = chunk_;
    for (int& in : clone.inputs) in = saved_or_recomputed(in);
    for (int& out : clone.outputs) {
      Tensor c = g_.tensors[out];
      c.name += ".recomputed";
      c.producer = -1;
      int orig = out;
      out = g_.add_tensor(std::move(c));
      recomputed_[orig] = out;
    }
    g_.add_op(std::move(clone));
    return recomputed_.at(t);
  }

  bool requires_grad(int t) const {
    const Tensor& x = g_.tensors[t];
    if (x.kind == TensorKind::kWeight) return true;
    return x.producer >= 0 && x.kind == TensorKind::kActivation;
  }

  int new_grad_like(int t, const std::string& name) {
    const Tensor& x = g_.tensors[t];
    Tensor gt = make_tensor(name, x.dims, x.dtype, TensorKind::kGradient);
    gt.grad_of = t;
    gt.layer = x.layer;
    if (x.kind == TensorKind::kWeight) {
      gt.kind = TensorKind::kWeightGrad;
      gt.dtype = o_.grad_dtype;
      gt.sharding = x.sharding;
      gt.sharding_fixed = true;
    } else if (x.kind == TensorKind::kInput) {
      gt.sharding = x.sharding;
    }
    return g_.add_tensor(std::move(gt));
  }

  // Total gradient of t: sums its contributions with an add op if needed.
  int grad(int t) {
    auto& c = contrib_[t];
    if (c.empty()) return -1;
    if (c.size() == 1) return c[0];
    const Tensor x = g_.tensors[t];  // a copy: new_grad_like grows g_.tensors
    int out = new_grad_like(t, x.name + ".grad");
    Op o = base(x.name + ".grad_accumulate", OpKind::kElementwise, "add", c, {out}, x.layer);
    o.flops = g_.tensors[out].global_numel() * Expr(static_cast<int64_t>(c.size() - 1));
    o.linear = true;
    o.sp_region = x.producer >= 0 && g_.ops[x.producer].sp_region;
    if (x.kind == TensorKind::kWeight) o.wgrad = true;
    g_.add_op(std::move(o));
    c = {out};
    return out;
  }

  Op base(const std::string& name, OpKind k, const std::string& fn, std::vector<int> in, std::vector<int> out,
          int layer) {
    Op o;
    o.name = name;
    o.kind = k;
    o.fn = fn;
    o.phase = Phase::kBackward;
    o.layer = layer;
    o.chunk = chunk_;
    o.inputs = std::move(in);
    o.outputs = std::move(out);
    return o;
  }

  // A backward op `fn` of forward op f reading `in`, producing the gradient
  // of each primal in `wrt`, labelled like the primal is labelled in f.
  Op& emit(const Op& f, const std::string& suffix, OpKind k, const std::string& fn, std::vector<int> in,
           std::vector<std::vector<std::string>> in_labels, const std::vector<std::pair<int, size_t>>& wrt,
           Expr flops) {
    for (int& t : in) t = saved_or_recomputed(t);
    std::vector<int> outs;
    std::vector<std::vector<std::string>> out_labels;
    bool weight = false;
    for (auto [primal, fwd_index] : wrt) {
      int gt = new_grad_like(primal, g_.tensors[primal].name + ".grad");
      contrib_[primal].push_back(gt);
      outs.push_back(gt);
      out_labels.push_back(g_.labels_in(f, fwd_index));
      weight |= g_.tensors[primal].kind == TensorKind::kWeight;
    }
    Op o = base(f.name + suffix, k, fn, std::move(in), std::move(outs), f.layer);
    o.in_labels = std::move(in_labels);
    o.out_labels = std::move(out_labels);
    o.flops = flops;
    o.fwd_op = f.id;
    o.wgrad = weight;
    o.sp_region = f.sp_region;
    o.unshardable = f.unshardable;
    g_.add_op(std::move(o));
    return g_.ops.back();
  }

  void vjp(const Op& fwd) {
    const Op f = fwd;  // g_.ops may reallocate below
    if (f.kind == OpKind::kReduce) return;  // handled by the loss rule
    if (f.kind == OpKind::kSend) {
      // The gradient of what this stage sent comes back from the next one.
      int x = f.inputs[0];
      int seed = new_grad_like(x, g_.tensors[x].name + ".grad");
      Op r = base(f.name + ".grad", OpKind::kRecv, "recv", {}, {seed}, f.layer);
      r.boundary = f.boundary;
      g_.tensors[seed].sharding = f.send_sharding;
      contrib_[x].push_back(seed);
      g_.add_op(std::move(r));
      return;
    }
    if (f.kind == OpKind::kRecv) {
      int gx = grad(f.outputs[0]);
      if (gx < 0) return;
      Op snd = base(f.name + ".grad", OpKind::kSend, "send", {gx}, {}, f.layer);
      snd.boundary = f.boundary;
      snd.send_sharding = g_.tensors[f.outputs[0]].sharding;
      g_.add_op(std::move(snd));
      return;
    }
    std::vector<int> dys;
    for (int out : f.outputs) dys.push_back(grad(out));
    int dy = dys[0];
    if (dy < 0 && f.kind != OpKind::kView) return;
    auto in = [&](size_t i) { return f.inputs[i]; };
    auto lab_in = [&](size_t i) { return g_.labels_in(f, i); };
    auto lab_out = [&](size_t i) { return g_.labels_out(f, i); };
    Expr n_out = g_.tensors[f.outputs[0]].global_numel();
    switch (f.kind) {
      case OpKind::kMatmul: {
        for (size_t i = 0; i < 2; ++i) {
          if (!requires_grad(in(i))) continue;
          size_t other = 1 - i;
          bool w = g_.tensors[in(i)].kind == TensorKind::kWeight;
          std::string suffix = w ? ".wgrad" : (g_.tensors[in(other)].kind == TensorKind::kWeight
                                                   ? ".dgrad"
                                                   : ".d" + g_.tensors[in(i)].name.substr(
                                                                g_.tensors[in(i)].name.rfind('.') + 1));
          Op& o = emit(f, suffix, OpKind::kMatmul, "matmul", {dy, in(other)}, {lab_out(0), lab_in(other)},
                       {{in(i), i}}, f.flops);
          o.model_flops = f.model_flops;
        }
        return;
      }
      case OpKind::kElementwise: {
        if (f.fn == "add") {
          for (int x : f.inputs)
            if (requires_grad(x)) contrib_[x].push_back(dy);
        } else if (f.fn == "concat") {
          // MLA's key: [k_nope | k_rope broadcast over heads]. The nope part
          // is a slice of dy; the shared RoPE part sums dy over the heads.
          if (requires_grad(in(0)))
            emit(f, ".bwd_slice", OpKind::kView, "slice", {dy}, {lab_out(0)}, {{in(0), 0}}, Expr(0));
          if (requires_grad(in(1)))
            emit(f, ".bwd_sum", OpKind::kReduce, "sum_heads", {dy}, {lab_out(0)}, {{in(1), 1}},
                 g_.tensors[in(1)].global_numel() * Expr::sym("a"));
        } else if (f.fn == "topk") {
          // Gradient of the kept probabilities back to the router logits
          // (the routing bias selects only: it gets no gradient).
          emit(f, ".bwd", OpKind::kElementwise, "topk_bwd", {in(0), f.outputs[0], dy},
               {lab_in(0), lab_out(0), lab_out(0)}, {{in(0), 0}}, g_.tensors[in(0)].global_numel() * Expr(4));
        } else if (f.fn == "bias_add") {
          contrib_[in(0)].push_back(dy);
          emit(f, ".bias_grad", OpKind::kReduce, "bias_grad", {dy}, {lab_out(0)}, {{in(1), 1}}, n_out);
        } else {
          // gelu, swiglu, rope: the gradient reads the input (rope: only dy).
          bool reads_x = f.fn != "rope";
          std::vector<int> ins = reads_x ? std::vector<int>{in(0), dy} : std::vector<int>{dy};
          std::vector<std::vector<std::string>> labs =
              reads_x ? std::vector<std::vector<std::string>>{lab_in(0), lab_out(0)}
                      : std::vector<std::vector<std::string>>{lab_out(0)};
          int64_t k = f.fn == "rope" ? 3 : 8;
          emit(f, ".bwd", OpKind::kElementwise, f.fn + "_bwd", ins, labs, {{in(0), 0}}, n_out * Expr(k));
        }
        return;
      }
      case OpKind::kDropout:
        emit(f, ".bwd", OpKind::kElementwise, "dropout_bwd", {f.outputs[1], dy}, {lab_out(1), lab_out(0)},
             {{in(0), 0}}, n_out);
        return;
      case OpKind::kNorm: {
        emit(f, ".bwd", OpKind::kNorm, f.fn + "_bwd", {in(0), in(1), dy}, {lab_in(0), lab_in(1), lab_out(0)},
             {{in(0), 0}}, n_out * Expr(10));
        std::vector<std::pair<int, size_t>> params;
        for (size_t i = 1; i < f.inputs.size(); ++i) params.push_back({in(i), i});
        Op& w = emit(f, ".wgrad", OpKind::kReduce, f.fn + "_wgrad", {in(0), dy}, {lab_in(0), lab_out(0)}, params,
                     n_out * Expr(3));
        w.unshardable.clear();
        return;
      }
      case OpKind::kSoftmax:
        emit(f, ".bwd", OpKind::kSoftmax, "softmax_bwd", {f.outputs[0], dy}, {lab_out(0), lab_out(0)},
             {{in(0), 0}}, n_out * Expr(4));
        return;
      case OpKind::kEmbedding:
        emit(f, ".wgrad", OpKind::kEmbedding, "embedding_bwd", {in(0), dy}, {lab_in(0), lab_out(0)},
             {{in(1), 1}}, n_out);
        return;
      case OpKind::kAttention: {
        // FlashAttention backward recomputes the scores: 5 BMMs of the
        // forward's 2; Megatron's model-FLOP count takes 2x forward (4).
        Expr bmm = f.flops / Expr(2);
        Op& o = emit(f, ".bwd", OpKind::kAttention, "flash_attention_bwd",
                     {in(0), in(1), in(2), f.outputs[0], f.outputs[1], dy},
                     {lab_in(0), lab_in(1), lab_in(2), lab_in(0), lab_out(1), lab_in(0)},
                     {{in(0), 0}, {in(1), 1}, {in(2), 2}}, bmm * Expr(5));
        o.model_flops = bmm * Expr(4);
        o.ring_axis = f.ring_axis;
        return;
      }
      case OpKind::kLoss: {
        // Cross entropy: d logits = softmax(logits) - onehot(labels), read
        // from the saved logits and the (already reduced) statistics.
        const Op& max_op = g_.ops[g_.tensors[in(0)].producer];
        const Op& tgt_op = g_.ops[g_.tensors[in(2)].producer];
        int logits = max_op.inputs[0], labels = tgt_op.inputs[1];
        Op pseudo = max_op;  // labels of logits as seen by the statistics
        pseudo.name = f.name;
        Expr n = g_.tensors[logits].global_numel();
        emit(pseudo, ".bwd", OpKind::kElementwise, "cross_entropy_bwd", {logits, in(0), in(1), labels, dy}, {},
             {{logits, 0}}, n * Expr(4));
        return;
      }
      case OpKind::kRemesh: {
        // The way back between the layouts, by the same routing (indices).
        auto back = [&](const std::string& suffix, const std::string& fn, std::vector<int> ins,
                        std::vector<Sharding> layouts, size_t primal, const Sharding& grad_layout) {
          std::vector<std::vector<std::string>> labs(ins.size());
          Op& o = emit(f, suffix, OpKind::kRemesh, fn, std::move(ins), labs, {{in(primal), primal}}, f.flops);
          o.remesh_in = std::move(layouts);
          o.flops_axes = f.flops_axes;
          o.sp_region = false;
          g_.tensors[o.outputs[0]].sharding = grad_layout;
        };
        const Sharding y_layout = g_.tensors[f.outputs[0]].sharding;  // a copy: emit grows tensors
        if (f.fn == "moe_permute") {
          back(".bwd", "moe_unpermute", {dy, in(1)}, {y_layout, f.remesh_in[1]}, 0, f.remesh_in[0]);
        } else {  // moe_combine: inputs {expert outputs, probs, indices}
          back(".bwd", "moe_combine_bwd", {dy, in(1), in(2)}, {y_layout, f.remesh_in[1], f.remesh_in[2]}, 0,
               f.remesh_in[0]);
          back(".bwd_probs", "moe_combine_probs_bwd", {dy, in(0), in(2)},
               {y_layout, f.remesh_in[0], f.remesh_in[2]}, 1, f.remesh_in[1]);
        }
        return;
      }
      case OpKind::kView: {
        bool any = false;
        for (int d : dys) any |= d >= 0;
        if (!any || !requires_grad(in(0))) return;
        std::vector<std::vector<std::string>> labs;
        for (size_t i = 0; i < f.outputs.size(); ++i) labs.push_back(lab_out(i));
        emit(f, ".bwd", OpKind::kView, f.fn + "_bwd", dys, labs, {{in(0), 0}}, Expr(0));
        return;
      }
      default:
        return;
    }
  }

  void optimizer() {
    std::vector<int> weights;
    for (const auto& t : g_.tensors)
      if (t.kind == TensorKind::kWeight && t.producer < 0) weights.push_back(t.id);
    for (int w : weights) {
      int gw = grad(w);
      if (gw < 0) continue;
      const Tensor wt = g_.tensors[w];  // a copy: add_tensor grows g_.tensors
      Tensor nw = wt;
      nw.name = wt.name + ".updated";
      int out = g_.add_tensor(std::move(nw));
      Op o = base("optimizer." + wt.name, OpKind::kOptimizer, "adam", {w, gw}, {out}, wt.layer);
      o.phase = Phase::kOptimizer;
      o.flops = wt.global_numel() * Expr(o_.optimizer_flops_per_param);
      g_.add_op(std::move(o));
    }
  }

  Graph& g_;
  AutodiffOptions o_;
  std::map<int, std::vector<int>> contrib_;
  std::map<int, std::vector<int>> fwd_readers_;  // tensor -> forward ops reading it
  std::map<int, int> recomputed_;                // forward tensor -> recomputed copy
  int chunk_ = 0;
};

}  // namespace

void append_backward_and_optimizer(Graph& g, const AutodiffOptions& o) { Autodiff(g, o).run(); }

}  // namespace sc
