#include "graph/autodiff.h"

#include "base/cancel.h"

#include <map>
#include <set>
#include <string_view>

namespace sc {
namespace {

class Autodiff final : public VjpContext {
 public:
  Autodiff(Graph& g, const AutodiffOptions& o) : g_(g), o_(o) {}

  void run() {
    std::vector<int> fwd = g_.order;
    bool has_seed = false;
    for (int id : fwd) {
      for (int t : g_.ops[id].inputs) fwd_readers_[t].push_back(id);
      if (g_.ops[id].layer >= 0 && g_.ops[id].phase == Phase::kForward) layer_fwd_[g_.ops[id].layer].push_back(id);
      has_seed |= g_.ops[id].kind == OpKind::kLoss || g_.ops[id].kind == OpKind::kSend;
    }
    module_bits_.assign(g_.ops.size(), 0);
    if (o_.recompute == RecomputeMode::kSelective)
      for (int id : fwd) module_bits_[static_cast<size_t>(id)] = op_module_bits(g_.ops[id]);
    // A graph with neither a loss nor a pipeline send is differentiated
    // from its last op's output.
    if (!has_seed && !fwd.empty()) seed_output(g_.ops[fwd.back()].outputs[0], "output.grad");
    size_t seen = 0;
    for (auto it = fwd.rbegin(); it != fwd.rend(); ++it) {
      // A stop (interrupt, time limit) ends the pass early: the caller
      // (Generator::create) checks it next and drops the partial graph;
      // a stage of thousands of layers takes seconds here.
      if ((++seen & 4095) == 0 && cancel_requested()) return;
      const Op& f = g_.ops[*it];
      chunk_ = f.chunk;
      if (f.kind == OpKind::kLoss) seed_loss(f);
      vjp(g_.ops[*it]);
    }
    optimizer();
  }

  // VjpContext.
  Graph& graph() override { return g_; }
  void contribute(int primal, int g) override { contrib_[primal].push_back(g); }
  Op backward_op(const std::string& name, const OpDef& def, std::vector<int> in, std::vector<int> out,
                 int layer) override {
    return base(name, def, std::move(in), std::move(out), layer);
  }
  int add(Op o) override { return g_.add_op(std::move(o)); }

 private:
  // d(loss) arrives as an input of the backward pass, laid out like the
  // job's inputs ([b, s], batch on dp).
  // "loss.grad"; MTP's losses: "mtp<k>.loss.grad".
  void seed_loss(const Op& loss_op) { seed_output(loss_op.outputs[0], loss_op.name + ".grad"); }

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

  // The recompute_modules bits (AutodiffOptions) a forward op of a layer
  // belongs to, by its name after its layer's prefix (computed once
  // per op in run(), module_bits_): the attention core (the ops selective
  // recomputation has always redone); the routed experts' activation; the
  // pre-norms Transformer Engine's layer specs keep as modules of their own
  // (Megatron-Core's gpt_layer_specs / hybrid_layer_specs fuse the others
  // into the next linear, TELayerNormColumnParallelLinear, leaving an
  // IdentityOp that transformer_layer.py does not recompute): a norm whose
  // output feeds the MoE router or MLA's down projections; MLA's up
  // projections and RoPE; the dense MLP's linears and activation (not its
  // residual or scaling); the MoE block (router, permutation, all-to-alls,
  // experts, shared experts); the shared experts.
  // A layer's op names carry its prefix: "L<n>." for a decoder layer,
  // "mtp<k>." for an MTP module's (model/transformer.cc).
  static std::string_view in_layer_name(const Op& o) {
    std::string_view n = o.name;
    if (const size_t dot = n.find('.'); o.layer >= 0 && dot != std::string_view::npos) n.remove_prefix(dot + 1);
    return n;
  }
  uint32_t op_module_bits(const Op& o) const {
    uint32_t bits = op_def(o).selective_recompute ? kRecomputeCoreAttn : 0u;
    if (o.layer < 0) return bits;
    const std::string_view n = in_layer_name(o);
    const auto starts = [&](std::string_view p) { return n.substr(0, p.size()) == p; };
    if (n == "moe.experts.swiglu" || n == "moe.experts.geglu" || n == "moe.experts.gelu" || n == "moe.experts.relu2")
      bits |= kRecomputeMoeAct;
    if ((n == "ln1" || n == "ln2") && !o.outputs.empty()) {  // layernorm: the norms TE does not fuse
      auto it = fwd_readers_.find(o.outputs[0]);
      if (it != fwd_readers_.end())
        for (int r : it->second) {
          const std::string_view rn = in_layer_name(g_.ops[r]);
          if (rn == "moe.router" || rn == "attn.q_down" || rn == "attn.kv_down" || rn == "attn.k_rope") bits |= kRecomputeLayernorm;
        }
    }
    if (n == "attn.q_up" || n == "attn.kv_up" || n == "attn.split" || n == "attn.rope_q" || n == "attn.rope_k" ||
        n == "attn.k_concat")
      bits |= kRecomputeMlaUpProj;  // validated: MLA models only
    if (starts("mlp.") && n != "mlp.residual" && n != "mlp.scale" && n != "mlp.dropout") bits |= kRecomputeMlp;
    if (starts("moe.") && n != "moe.add_shared") bits |= kRecomputeMoe;
    if (starts("moe.shared") && n != "moe.add_shared") bits |= kRecomputeSharedExperts;
    return bits;
  }
  uint32_t module_bits(const Op& o) const {
    return o.id >= 0 && static_cast<size_t>(o.id) < module_bits_.size() ? module_bits_[static_cast<size_t>(o.id)] : 0;
  }
  static constexpr uint32_t kDiscardOutputs = kRecomputeMoeAct | kRecomputeLayernorm | kRecomputeMlaUpProj;
  static constexpr uint32_t kCheckpointModules = kRecomputeMlp | kRecomputeMoe | kRecomputeSharedExperts;

  bool in_region(const Op& o) const {
    if (o.phase != Phase::kForward || o.kind == OpKind::kSend || o.kind == OpKind::kRecv) return false;
    if (o_.recompute == RecomputeMode::kSelective) return (module_bits(o) & o_.recompute_modules) != 0;
    if (o_.recompute == RecomputeMode::kFull) return o.layer >= 0;
    return false;
  }
  // Its output is discarded and recomputed (output-discarding modules).
  bool discards_output(const Op& o) const {
    return o_.recompute == RecomputeMode::kSelective && (module_bits(o) & o_.recompute_modules & kDiscardOutputs) != 0;
  }

  // What a backward op reads in place of forward tensor t: t itself if it
  // is saved, else its recomputed copy (cloning its producer, recursively).
  int saved_or_recomputed(int t) {
    const Tensor& x = g_.tensors[t];
    if (x.producer < 0 || (x.kind != TensorKind::kActivation && x.kind != TensorKind::kMask)) return t;
    const Op& p = g_.ops[x.producer];
    if (!in_region(p)) return t;
    if (!discards_output(p))
      for (int reader : fwd_readers_[t]) {
        const Op& r = g_.ops[reader];
        if (!in_region(r) || r.layer != p.layer) return t;  // a region output: saved
      }
    if (auto it = recomputed_.find(t); it != recomputed_.end()) return it->second;
    const int pid = x.producer;
    ++depth_;
    clone_op(pid);
    queue_rerun(pid);
    --depth_;
    if (depth_ == 0) flush_reruns();
    return recomputed_.at(t);
  }

  // A copy of forward op pid in the backward pass, reading saved or
  // recomputed inputs; its outputs become the recomputed copies.
  void clone_op(int pid) {
    Op clone = g_.ops[pid];
    clone.id = -1;
    clone.name += ".recompute";
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
  }

  // A checkpointed module (mlp, moe, shared_experts) re-runs its whole
  // forward once its backward needs anything from it, as Megatron's
  // checkpoint re-runs the function: the ops whose outputs no backward op
  // reads (the module's last linear, the MoE combine) too, once per layer.
  // Queued while a clone is still resolving its inputs (its outputs are
  // not recorded yet) and run when the outermost one is done, so that no
  // op is cloned twice.
  // Full recomputation checkpoints the whole layer the same way
  // (Megatron's CheckpointFunction re-runs the layer's forward), so a
  // layer's first recomputed op re-runs every forward op of the layer,
  // the last linear (fc2) too, whose output no backward op reads when
  // there is no dropout after it.
  static constexpr uint32_t kWholeLayer = 1u << 31;
  void queue_rerun(int pid) {
    const uint32_t region = o_.recompute == RecomputeMode::kFull
                                ? kWholeLayer
                                : module_bits(g_.ops[pid]) & o_.recompute_modules & kCheckpointModules;
    if (region == 0) return;
    const std::pair<int, uint32_t> key{g_.ops[pid].layer, region};
    if (rerun_.insert(key).second) pending_.push_back(key);
  }
  void flush_reruns() {
    ++depth_;
    for (size_t i = 0; i < pending_.size(); ++i) {
      const auto [layer, region] = pending_[i];
      for (int q : layer_fwd_[layer]) {
        const Op& o = g_.ops[q];
        if ((region != kWholeLayer && !(module_bits(o) & region)) || !in_region(o) || o.outputs.empty() ||
            recomputed_.count(o.outputs[0]))
          continue;
        clone_op(q);
      }
    }
    pending_.clear();
    --depth_;
  }

  bool requires_grad(int t) const override {
    const Tensor& x = g_.tensors[t];
    if (x.kind == TensorKind::kWeight) return true;
    return x.producer >= 0 && x.kind == TensorKind::kActivation;
  }

  int new_grad_like(int t, const std::string& name) override {
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
  int grad(int t) override {
    auto& c = contrib_[t];
    if (c.empty()) return -1;
    if (c.size() == 1) return c[0];
    const Tensor x = g_.tensors[t];  // a copy: new_grad_like grows g_.tensors
    int out = new_grad_like(t, x.name + ".grad");
    Op o = base(x.name + ".grad_accumulate", ops::kGradAccumulate, c, {out}, x.layer);
    o.flops = g_.tensors[out].global_numel() * Expr(static_cast<int64_t>(c.size() - 1));
    o.linear = true;
    o.sp_region = x.producer >= 0 && g_.ops[x.producer].sp_region;
    if (x.kind == TensorKind::kWeight) o.wgrad = true;
    g_.add_op(std::move(o));
    c = {out};
    return out;
  }

  Op base(const std::string& name, const OpDef& def, std::vector<int> in, std::vector<int> out, int layer) {
    Op o;
    o.name = name;
    o.def = &def;
    o.kind = def.kind;
    o.fn = def.fn;
    o.phase = Phase::kBackward;
    o.layer = layer;
    o.chunk = chunk_;
    o.inputs = std::move(in);
    o.outputs = std::move(out);
    return o;
  }

  Op& emit(const Op& f, const std::string& suffix, const OpDef& def, std::vector<int> in,
           std::vector<std::vector<std::string>> in_labels, const std::vector<std::pair<int, size_t>>& wrt,
           Expr flops) override {
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
    Op o = base(f.name + suffix, def, std::move(in), std::move(outs), f.layer);
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

  // The forward op's VJP rule (its operator-table entry) makes its backward ops.
  void vjp(const Op& fwd) {
    const Op f = fwd;  // g_.ops may reallocate below
    const OpDef& d = op_def(f);
    if (d.vjp) d.vjp(*this, f);
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
      Op o = base("optimizer." + wt.name, ops::kAdam, {w, gw}, {out}, wt.layer);
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
  std::map<int, std::vector<int>> layer_fwd_;    // layer -> its forward ops, in order
  std::set<std::pair<int, uint32_t>> rerun_;     // (layer, checkpointed modules) re-run
  std::vector<std::pair<int, uint32_t>> pending_;  // of those, not yet run (flush_reruns)
  int depth_ = 0;                                // clones in progress (saved_or_recomputed)
  std::vector<uint32_t> module_bits_;            // per op: op_module_bits (forward ops, selective)
  int chunk_ = 0;
};

}  // namespace

void append_backward_and_optimizer(Graph& g, const AutodiffOptions& o) { Autodiff(g, o).run(); }

}  // namespace sc
