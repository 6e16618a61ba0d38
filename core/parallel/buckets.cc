#include "parallel/buckets.h"

#include <algorithm>
#include <map>
#include <set>

namespace sc {

Status bucket_dp_gradients(Graph& g, const Bindings& bind, double bucket_bytes, const std::string& axis,
                           const std::string& name) {
  // Position in program order of the op that last writes each tensor.
  std::map<int, size_t> pos;
  for (size_t i = 0; i < g.order.size(); ++i) pos[g.order[i]] = i;
  struct Item { size_t ready; int op; double bytes; };
  std::vector<Item> items;
  for (int id : g.order) {
    const Op& o = g.ops[id];
    if (o.kind != OpKind::kCollective || o.phase != Phase::kOptimizer || o.axis != axis ||
        o.coll != CollectiveType::kAllReduce)
      continue;
    const Tensor& in = g.tensors[o.inputs[0]];
    if (in.kind != TensorKind::kWeightGrad || in.producer < 0) continue;
    SC_ASSIGN_OR_RETURN(int64_t bytes, in.local_bytes(bind, in.name + " bytes"));
    items.push_back({pos[in.producer], id, static_cast<double>(bytes)});
  }
  if (items.empty()) return ok_status();
  std::stable_sort(items.begin(), items.end(), [](const Item& a, const Item& b) { return a.ready < b.ready; });
  std::vector<std::vector<int>> buckets(1);
  double fill = 0;
  for (const auto& it : items) {
    if (fill >= bucket_bytes && !buckets.back().empty()) {
      buckets.emplace_back();
      fill = 0;
    }
    buckets.back().push_back(it.op);
    fill += it.bytes;
  }
  std::set<int> members;
  std::vector<int> bucket_ops;
  for (size_t b = 0; b < buckets.size(); ++b) {
    std::vector<int> in, out;
    for (int m : buckets[b]) {
      in.push_back(g.ops[m].inputs[0]);
      out.push_back(g.ops[m].outputs[0]);
      members.insert(m);
    }
    int id = add_collective_op(g, name + std::to_string(b) + ".all_reduce(" + axis + ")",
                               CollectiveType::kAllReduce, axis, Phase::kOptimizer, in, out);
    g.ops[id].grad_bucket = true;
    // Routed experts' gradients are summed over their own group (edp).
    const Tensor& first = g.tensors[in.front()];
    g.ops[id].cause = g.ops[buckets[b].front()].cause;
    g.ops[id].cause.kind = first.grad_of >= 0 && g.tensors[first.grad_of].expert ? CauseKind::kExpertGradBucket
                                                                                   : CauseKind::kGradBucket;
    g.ops[id].cause.feature = axis;
    bucket_ops.push_back(id);
  }
  // The buckets, in the order they fill, replace their members where the
  // first member stood.
  std::vector<int> order;
  for (int id : g.order) {
    if (!members.count(id)) order.push_back(id);
    else if (!bucket_ops.empty()) {
      order.insert(order.end(), bucket_ops.begin(), bucket_ops.end());
      bucket_ops.clear();
    }
  }
  g.order = std::move(order);
  return ok_status();
}

void insert_weight_syncs(Graph& g) {
  std::vector<int> order;
  for (int id : g.order) {
    const Op op = g.ops[id];  // a copy: ops grows below
    if (op.kind == OpKind::kOptimizer && !g.tensors[op.inputs[0]].sync_axis.empty()) {
      const std::string axis = g.tensors[op.inputs[0]].sync_axis;
      int grad = op.inputs[1];
      Tensor t = g.tensors[grad];
      t.name = g.tensors[op.inputs[0]].name + ".grad.all_reduce(" + axis + ")";
      int out = g.add_tensor(std::move(t));
      const int ar = add_collective_op(g, g.tensors[out].name, CollectiveType::kAllReduce, axis, Phase::kOptimizer,
                                       {grad}, {out});
      g.ops[ar].cause.kind = CauseKind::kWeightSync;
      g.ops[ar].cause.feature = axis;
      g.ops[ar].cause.tensor = grad;
      g.ops[ar].cause.consumer = id;
      order.push_back(ar);
      g.ops[id].inputs[1] = out;
    }
    order.push_back(id);
  }
  g.order = std::move(order);
}

}  // namespace sc
