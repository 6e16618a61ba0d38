#include "parallel/propagate.h"

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "graph/ops.h"

namespace sc {
namespace {

int find_axis(const std::vector<std::string>& dims, const std::string& axis) {
  for (size_t i = 0; i < dims.size(); ++i)
    if (dims[i] == axis) return static_cast<int>(i);
  return -1;
}

bool has(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

class Propagator {
 public:
  Propagator(Graph& g, const PropagationOptions& o) : g_(g), o_(o) {}

  void run() {
    std::vector<int> old = g_.order;
    g_.order.clear();
    for (int id : old) {
      chunk_ = g_.ops[id].chunk;
      switch (op_def(g_.ops[id]).propagation) {
        case PropagationRule::kFactorsLinear: g_.ops[id].linear = true; op(id); break;
        case PropagationRule::kRecv: g_.ops[id].local_flops = Expr(0); break;  // arrives as the sender laid it out
        case PropagationRule::kSend: send(id); break;
        case PropagationRule::kRemesh: remesh(id); break;
        case PropagationRule::kFactors: op(id); break;
        case PropagationRule::kInserted: break;
      }
      g_.order.push_back(id);
    }
  }

 private:
  struct Memo {
    int tensor;
    bool gathered;
    Phase phase;
  };

  // The op whose layout a reshard serves, and what chose that layout.
  struct Asker {
    int op = -1;
    bool remesh = false;                   // a remesh op's stated input layout (MoE combine)
    bool sp = false;                       // sequence parallelism's rule took s on tp
    std::set<std::string> fixed_factors;   // factors a fixed operand (weight) placed
    std::vector<std::string> labels;       // factor labels of the input being resharded

    Asker(int op_id, bool remesh_layout) : op(op_id), remesh(remesh_layout) {}
  };

  // A stage boundary: the peer expects the layout the model plan fixed.
  void send(int id) {
    int t = g_.ops[id].inputs[0];
    const Sharding want = g_.ops[id].send_sharding;
    if (!(g_.tensors[t].sharding == want)) {
      int r = reshard(t, want, g_.ops[id].phase, Asker(id, false));
      g_.ops[id].inputs[0] = r;
    }
    g_.ops[id].local_flops = Expr(0);
  }

  // MoE token permutation: inputs brought to the layouts the op names; its
  // outputs keep the layout they were built with.
  void remesh(int id) {
    for (size_t i = 0; i < g_.ops[id].inputs.size(); ++i) {
      const int t = g_.ops[id].inputs[i];
      const Sharding want = g_.ops[id].remesh_in[i];
      if (!(g_.tensors[t].sharding == want)) {
        const int r = reshard(t, want, g_.ops[id].phase, Asker(id, true));
        g_.ops[id].inputs[i] = r;
      }
    }
    Op& o = g_.ops[id];
    Expr div = 1;
    for (const auto& axis : o.flops_axes) div *= Expr::sym(axis);
    o.local_flops = o.flops / div;
  }

  void op(int id) {
    std::map<std::string, std::string> fa;  // factor -> axis
    std::set<std::string> used;
    Asker asker(id, false);
    const Op& o0 = g_.ops[id];
    auto claim = [&](const std::string& f, const std::string& axis) {
      if (axis.empty() || fa.count(f) || used.count(axis) || o0.unshardable.count(f)) return false;
      fa[f] = axis;
      used.insert(axis);
      return true;
    };
    // 1a. Fixed operands (weights, weight grads) first.
    auto claim_fixed = [&](int t, const std::vector<std::string>& labels) {
      const Tensor& x = g_.tensors[t];
      if (!x.sharding_fixed) return;
      for (size_t d = 0; d < labels.size(); ++d)
        if (claim(labels[d], x.sharding.dim_axis[d])) asker.fixed_factors.insert(labels[d]);
    };
    for (size_t i = 0; i < o0.inputs.size(); ++i) claim_fixed(o0.inputs[i], g_.labels_in(o0, i));
    for (size_t j = 0; j < o0.outputs.size(); ++j) claim_fixed(o0.outputs[j], g_.labels_out(o0, j));

    // Partial sums kept by linear ops: only when every input carries the same.
    std::vector<std::string> keep;
    if (o0.linear) {
      keep = g_.tensors[o0.inputs[0]].sharding.partial;
      for (int t : o0.inputs)
        if (g_.tensors[t].sharding.partial != keep) keep.clear();
    }
    // 1b. Sequence parallelism: the SP region resolves a tp partial onto s.
    if (o_.sequence_parallel && o0.sp_region) {
      bool tp_partial = false, has_s = false;
      for (size_t i = 0; i < o0.inputs.size(); ++i) {
        tp_partial |= has(g_.tensors[o0.inputs[i]].sharding.partial, "tp") && !has(keep, "tp");
        has_s |= has(g_.labels_in(o0, i), "s");
      }
      if (tp_partial && has_s && claim("s", "tp")) asker.sp = true;
    }
    // 1c. A gradient that must resolve a partial sum takes the layout of the
    // tensor it is the gradient of (dK back to K's sequence shard under
    // context parallelism, an input gradient back to the SP shard).
    for (size_t i = 0; i < o0.inputs.size(); ++i) {
      const Tensor& x = g_.tensors[o0.inputs[i]];
      if (x.grad_of < 0 || x.sharding.partial.empty()) continue;
      const Tensor& primal = g_.tensors[x.grad_of];
      auto labels = g_.labels_in(o0, i);
      for (size_t d = 0; d < labels.size() && d < primal.sharding.dim_axis.size(); ++d) {
        const std::string& axis = primal.sharding.dim_axis[d];
        if (!axis.empty() && has(x.sharding.partial, axis) && !has(keep, axis)) claim(labels[d], axis);
      }
    }
    // 1d. Activation inputs offer their axes.
    for (size_t i = 0; i < o0.inputs.size(); ++i) {
      const Tensor& x = g_.tensors[o0.inputs[i]];
      auto labels = g_.labels_in(o0, i);
      for (size_t d = 0; d < labels.size(); ++d) claim(labels[d], x.sharding.dim_axis[d]);
    }
    // 2. Reshard inputs to what the assignment implies.
    for (size_t i = 0; i < g_.ops[id].inputs.size(); ++i) {
      int t = g_.ops[id].inputs[i];
      auto labels = g_.labels_in(g_.ops[id], i);
      Sharding req;
      for (const auto& l : labels) {
        auto it = fa.find(l);
        req.dim_axis.push_back(it == fa.end() ? "" : it->second);
      }
      req.partial = keep;
      if (g_.tensors[t].sharding == req) continue;
      asker.labels = labels;
      int r = reshard(t, req, g_.ops[id].phase, asker);
      g_.ops[id].inputs[i] = r;
    }
    // 3. Outputs.
    Op& o = g_.ops[id];
    std::set<std::string> in_labels, out_labels;
    for (size_t i = 0; i < o.inputs.size(); ++i)
      for (auto& l : g_.labels_in(o, i)) in_labels.insert(l);
    for (size_t j = 0; j < o.outputs.size(); ++j)
      for (auto& l : g_.labels_out(o, j)) out_labels.insert(l);
    std::set<std::string> partial(keep.begin(), keep.end());
    for (const auto& l : in_labels)
      if (!out_labels.count(l) && fa.count(l)) partial.insert(fa[l]);
    for (size_t j = 0; j < o.outputs.size(); ++j) {
      Tensor& t = g_.tensors[o.outputs[j]];
      auto labels = g_.labels_out(o, j);
      if (!t.sharding_fixed)
        for (size_t d = 0; d < labels.size(); ++d) {
          auto it = fa.find(labels[d]);
          t.sharding.dim_axis[d] = it == fa.end() ? "" : it->second;
        }
      t.sharding.partial.assign(partial.begin(), partial.end());
    }
    o.factor_axis = fa;
    Expr div = 1;
    for (const auto& axis : used) div *= Expr::sym(axis);
    o.local_flops = o.flops / div;
  }

  // Emits the collectives (and slices) that turn t's sharding into req.
  int reshard(int t, const Sharding& req, Phase phase, const Asker& asker) {
    auto key = std::make_pair(t, req);
    if (auto it = memo_.find(key); it != memo_.end())
      if (!it->second.gathered || it->second.phase == phase) return it->second.tensor;
    int cur = t;
    bool gathered = false;
    {
      const Sharding& a = g_.tensors[cur].sharding;
      auto reduce_whole = [&](const std::string& x) {
        return has(a.partial, x) && !has(req.partial, x) && find_axis(req.dim_axis, x) < 0;
      };
      if (reduce_whole("dp") && reduce_whole("cp"))
        cur = add_reshard(t, cur, "dp+cp", CollectiveType::kAllReduce, OpKind::kCollective, -1, -1, phase,
                          cause(CauseKind::kPartialSum, "dp+cp", t, req, asker));
    }
    // Reduce-scatters first (they shrink the data), then the rest, each
    // pass outer axis first.
    for (int pass = 0; pass < 2; ++pass)
    for (const auto& axis : o_.axes_outer_first) {
      const Sharding a = g_.tensors[cur].sharding;
      int a_dim = find_axis(a.dim_axis, axis), r_dim = find_axis(req.dim_axis, axis);
      bool a_part = has(a.partial, axis), r_part = has(req.partial, axis);
      if ((pass == 0) != (a_part && !r_part && r_dim >= 0)) continue;
      OpKind kind = OpKind::kCollective;
      CollectiveType coll = CollectiveType::kAllReduce;
      CauseKind why = CauseKind::kPartialSum;
      if (a_part && !r_part) {
        coll = r_dim >= 0 ? CollectiveType::kReduceScatter : CollectiveType::kAllReduce;
      } else if (a_dim >= 0 && r_dim < 0) {
        coll = CollectiveType::kAllGather;
        why = CauseKind::kGather;
        gathered |= !has(o_.kept_gather_axes, axis);
      } else if (a_dim < 0 && r_dim >= 0) {
        kind = OpKind::kView;
        why = CauseKind::kSlice;
      } else if (a_dim >= 0 && r_dim >= 0 && a_dim != r_dim) {
        coll = CollectiveType::kAllToAll;  // same size: its output is kept
        // Tokens moved to where a weight (the experts) placed its factor,
        // or back to the layout a remesh op (the MoE combine) states.
        why = asker.remesh ? CauseKind::kMoeCombine
              : asker.fixed_factors.count((r_dim < static_cast<int>(asker.labels.size()) ? asker.labels[r_dim] : std::string())) ? CauseKind::kMoeDispatch
                                                                  : CauseKind::kRedistribute;
      } else {
        continue;
      }
      std::string feature = axis;
      if (asker.sp && axis == "tp" && why == CauseKind::kPartialSum && r_dim >= 0) feature = "sp";
      cur = add_reshard(t, cur, axis, coll, kind, a_dim, r_dim, phase, cause(why, feature, t, req, asker));
    }
    memo_[key] = Memo{cur, gathered, phase};
    return cur;
  }

  // One reshard step on `axis` ("dp+cp": both at once): a collective (or a
  // slice view) from cur to a new tensor with the axis moved/removed.
  CollectiveCause cause(CauseKind kind, const std::string& feature, int t, const Sharding& req,
                        const Asker& asker) const {
    CollectiveCause c;
    c.kind = kind;
    c.feature = feature;
    c.tensor = t;
    c.consumer = asker.op;
    c.from = g_.tensors[t].sharding;
    c.to = req;
    return c;
  }

  int add_reshard(int t, int cur, const std::string& axis, CollectiveType coll, OpKind kind, int a_dim, int r_dim,
                  Phase phase, CollectiveCause why) {
    std::string what = kind == OpKind::kView ? "slice" : collective_name(coll);
    Sharding s = g_.tensors[cur].sharding;
    if (a_dim >= 0) s.dim_axis[a_dim] = "";
    if (r_dim >= 0) s.dim_axis[r_dim] = axis;
    size_t start = 0;
    while (start <= axis.size()) {  // "dp+cp" clears both partials
      size_t plus = axis.find('+', start);
      if (plus == std::string::npos) plus = axis.size();
      const std::string one = axis.substr(start, plus - start);
      s.partial.erase(std::remove(s.partial.begin(), s.partial.end(), one), s.partial.end());
      start = plus + 1;
    }
    Tensor nt = g_.tensors[cur];
    nt.name = g_.tensors[t].name + "." + what + "(" + axis + ")";
    nt.sharding = s;
    nt.producer = -1;
    int out = g_.add_tensor(std::move(nt));
    Op op;
    op.name = g_.tensors[out].name;
    op.kind = kind;
    op.def = kind == OpKind::kView ? &ops::kSlice : &ops::kCollective;
    op.fn = what;
    op.cause = std::move(why);
    op.phase = phase;
    op.chunk = chunk_;
    op.layer = g_.tensors[t].layer;
    op.inputs = {cur};
    op.outputs = {out};
    op.coll = coll;
    op.axis = axis;
    op.linear = true;
    int id = static_cast<int>(g_.ops.size());
    op.id = id;
    g_.tensors[out].producer = id;
    g_.ops.push_back(std::move(op));
    g_.order.push_back(id);
    return out;
  }

  Graph& g_;
  PropagationOptions o_;
  int chunk_ = 0;  // chunk of the op being processed (reshards join it)
  std::map<std::pair<int, Sharding>, Memo> memo_;
};

}  // namespace

void propagate_shardings(Graph& g, const PropagationOptions& o) { Propagator(g, o).run(); }

}  // namespace sc
