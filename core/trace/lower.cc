#include "trace/lower.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace sc {
namespace {

class Lowerer {
 public:
  Lowerer(const Graph& g, const Bindings& bind, const HardwareProfile& hw, const LowerOptions& o)
      : g_(g), bind_(bind), hw_(hw), o_(o) {}

  Result<RoleProgram> run() {
    std::vector<int> steps, opt;
    for (int id : g_.order) (g_.ops[id].phase == Phase::kOptimizer ? opt : steps).push_back(id);
    // DP gradient buckets: issued inside the last backward pass.
    std::vector<int> pending;
    for (int id : opt)
      if (is_dp_bucket(g_.ops[id])) pending.push_back(id);
    for (int64_t mb = 0; mb < o_.micro_batches; ++mb) {
      act_.clear();
      written_.clear();
      for (int id : steps) {
        SC_RETURN_IF_ERROR(emit(id, mb));
        if (mb + 1 < o_.micro_batches) continue;
        for (auto it = pending.begin(); it != pending.end();) {
          if (ready(g_.ops[*it])) {
            SC_RETURN_IF_ERROR(emit(*it, -1));
            it = pending.erase(it);
          } else {
            ++it;
          }
        }
      }
    }
    for (int id : opt)
      if (!done_.count(id)) SC_RETURN_IF_ERROR(emit(id, -1));
    return std::move(p_);
  }

 private:
  static bool is_dp_bucket(const Op& o) {
    return o.kind == OpKind::kCollective && o.axis == "dp" && !o.inputs.empty();
  }

  bool ready(const Op& o) const {
    for (int t : o.inputs)
      if (!written_.count(t)) return false;
    return true;
  }

  bool persistent(int t) const { return g_.tensors[t].kind == TensorKind::kWeightGrad; }

  const std::vector<uint64_t>* nodes_of(int t) const {
    const auto& m = persistent(t) ? grad_ : act_;
    auto it = m.find(t);
    return it == m.end() ? nullptr : &it->second;
  }

  Result<int64_t> eval(const Expr& e, const std::string& what) const { return e.eval(bind_, what); }

  Status emit(int id, int64_t mb) {
    const Op& op = g_.ops[id];
    done_.insert(id);
    std::set<uint64_t> deps;
    for (int t : op.inputs)
      if (auto* n = nodes_of(t)) deps.insert(n->begin(), n->end());
    if (op.kind == OpKind::kView) {
      std::vector<uint64_t> v(deps.begin(), deps.end());
      for (int t : op.outputs) {
        (persistent(t) ? grad_ : act_)[t] = v;
        written_.insert(t);
      }
      return ok_status();
    }
    // Accumulation into the persistent main grad of the previous micro-batch.
    for (int t : op.outputs)
      if (persistent(t) && op.phase != Phase::kOptimizer)
        if (auto* n = nodes_of(t)) deps.insert(n->begin(), n->end());

    TraceNode node;
    node.id = p_.nodes.size();
    node.name = (mb >= 0 ? "mb" + std::to_string(mb) + "." : std::string()) + phase_name(op.phase) + "." + op.name;
    std::string axis;
    if (op.kind == OpKind::kCollective) {
      node.kind = TraceNodeKind::kCollective;
      node.coll = op.coll;
      axis = op.axis;
      int64_t bytes = 0;
      for (int t : op.inputs) {
        SC_ASSIGN_OR_RETURN(int64_t b, eval(g_.tensors[t].local_bytes(), g_.tensors[t].name + " bytes"));
        bytes += b;
      }
      node.comm_size = bytes;
      if (auto it = last_coll_.find(axis); it != last_coll_.end()) deps.insert(it->second);
      last_coll_[axis] = node.id;
    } else {
      node.kind = TraceNodeKind::kCompute;
      SC_ASSIGN_OR_RETURN(node.num_ops, eval(op.local_flops, op.name + " flops"));
      int64_t bytes = 0;
      // A lookup (or its scatter-add backward) touches the rows it gathers,
      // not the whole table: count the activation side twice instead.
      const bool lookup = op.kind == OpKind::kEmbedding;
      for (const auto* list : {&op.inputs, &op.outputs})
        for (int t : *list) {
          TensorKind k = g_.tensors[t].kind;
          if (lookup && (k == TensorKind::kWeight || k == TensorKind::kWeightGrad)) continue;
          SC_ASSIGN_OR_RETURN(int64_t b, eval(g_.tensors[t].local_bytes(), g_.tensors[t].name + " bytes"));
          bytes += lookup ? 2 * b : b;
        }
      if (op.kind == OpKind::kOptimizer) {
        // Adam state (master weight + moments): read and written once.
        SC_ASSIGN_OR_RETURN(int64_t n, eval(g_.tensors[op.inputs[0]].local_numel(), op.name + " params"));
        bytes += 2 * n * o_.optimizer_bytes_per_param;
      }
      node.tensor_size = static_cast<uint64_t>(std::max<int64_t>(bytes, 1));
      DType dt = op.kind == OpKind::kMatmul ? o_.compute_dtype : g_.tensors[op.outputs[0]].dtype;
      double us = roofline_micros(hw_, dt, static_cast<double>(node.num_ops), static_cast<double>(bytes));
      node.duration_micros = static_cast<uint64_t>(std::max<double>(1.0, std::llround(us)));
      if (last_compute_ >= 0) deps.insert(static_cast<uint64_t>(last_compute_));
      last_compute_ = static_cast<int64_t>(node.id);
    }
    node.deps.assign(deps.begin(), deps.end());
    for (int t : op.outputs) {
      (persistent(t) ? grad_ : act_)[t] = {node.id};
      written_.insert(t);
    }
    p_.nodes.push_back(std::move(node));
    p_.node_axis.push_back(axis);
    return ok_status();
  }

  const Graph& g_;
  const Bindings& bind_;
  const HardwareProfile& hw_;
  LowerOptions o_;
  RoleProgram p_;
  std::map<int, std::vector<uint64_t>> act_, grad_;
  std::set<int> written_, done_;
  std::map<std::string, uint64_t> last_coll_;
  int64_t last_compute_ = -1;
};

}  // namespace

Result<RoleProgram> lower_program(const Graph& g, const Bindings& bind, const HardwareProfile& hw,
                                  const LowerOptions& o) {
  return Lowerer(g, bind, hw, o).run();
}

RankTrace instantiate_rank(const RoleProgram& p, const RankLayout& layout, int64_t rank) {
  RankTrace t;
  t.rank = rank;
  t.nodes = p.nodes;
  for (size_t i = 0; i < t.nodes.size(); ++i)
    if (t.nodes[i].kind == TraceNodeKind::kCollective) t.nodes[i].group = layout.group_id(rank, p.node_axis[i]);
  return t;
}

}  // namespace sc
