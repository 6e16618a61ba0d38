#include "parallel/zero.h"

#include <map>
#include <set>
#include <algorithm>
#include <tuple>

namespace sc {
namespace {

int add_collective(Graph& g, const std::string& name, CollectiveType coll, const std::string& axis, Phase phase,
                   int chunk, std::vector<int> inputs, std::vector<int> outputs) {
  int id = add_collective_op(g, name, coll, axis, phase, std::move(inputs), std::move(outputs));
  g.ops[id].chunk = chunk;
  g.ops[id].flat_shard_axis = coll == CollectiveType::kAllGather ? axis : "";
  return id;
}

int copy_tensor(Graph& g, int t, const std::string& suffix, TensorKind kind) {
  Tensor c = g.tensors[t];
  c.name += suffix;
  c.kind = kind;
  c.producer = -1;
  c.tied_copy = false;
  return g.add_tensor(std::move(c));
}

// Stage 1/2: reduce-scatter buckets, sharded step, parameter all-gathers.
void shard_optimizer(Graph& g, bool gather_params, const std::string& axis) {
  std::map<int, int> updated_of_grad;  // bucket output (a grad) -> updated weight
  for (int id : g.order) {
    Op& o = g.ops[id];
    if (o.grad_bucket && o.coll == CollectiveType::kAllReduce) {
      o.coll = CollectiveType::kReduceScatter;
      o.fn = collective_name(o.coll);
      o.name.replace(o.name.find("all_reduce"), 10, "reduce_scatter");
    }
    if (o.kind == OpKind::kOptimizer) o.flat_shard_axis = axis;
  }
  if (!gather_params) return;
  // One all-gather per gradient bucket, of the parameters it updated.
  std::vector<int> order = g.order;
  for (int id : g.order) {
    const Op b = g.ops[id];
    if (!b.grad_bucket) continue;
    std::set<int> weights;
    for (int t : b.outputs) weights.insert(g.tensors[t].grad_of);
    std::vector<int> in, out;
    for (int oid : g.order) {
      const Op& o = g.ops[oid];
      if (o.kind == OpKind::kOptimizer && weights.count(o.inputs[0])) {
        in.push_back(o.outputs[0]);
        out.push_back(copy_tensor(g, o.outputs[0], ".all_gather(" + axis + ")", TensorKind::kWeight));
      }
    }
    if (in.empty()) continue;
    std::string name = b.name;
    name.replace(name.find("reduce_scatter"), 14, "param_all_gather");
    order.push_back(add_collective(g, name, CollectiveType::kAllGather, axis, Phase::kOptimizer, 0, in, out));
  }
  g.order = std::move(order);
}

// Stage 3: a parameter all-gather per (unit, phase, chunk) before first use.
void gather_per_unit(Graph& g, const std::string& axis) {
  using Key = std::tuple<int, int, int>;  // layer, phase, chunk
  // A unit's parameters are what its forward reads; backward gathers the
  // whole unit again (FSDP gathers the flat parameter, not what a kernel reads).
  std::map<std::pair<int, int>, std::vector<int>> unit_weights;  // (layer, chunk)
  for (int id : g.order) {
    const Op& o = g.ops[id];
    if (o.phase != Phase::kForward) continue;
    for (int t : o.inputs)
      if (g.tensors[t].kind == TensorKind::kWeight && g.tensors[t].producer < 0) {
        auto& w = unit_weights[{o.layer, o.chunk}];
        if (std::find(w.begin(), w.end(), t) == w.end()) w.push_back(t);
      }
  }
  std::map<Key, std::map<int, int>> gathered;  // unit -> weight -> gathered copy
  std::vector<int> order;
  int prev_first_user[2] = {-1, -1};  // per phase: first consumer of the previous gather
  for (int id : g.order) {
    Op o = g.ops[id];
    if (o.phase != Phase::kOptimizer) {
      Key k{o.layer, int(o.phase), o.chunk};
      bool reads_weight = false;
      for (int t : o.inputs) reads_weight |= g.tensors[t].kind == TensorKind::kWeight && g.tensors[t].producer < 0;
      if (reads_weight && !gathered.count(k)) {
        std::vector<int> in = unit_weights[{o.layer, o.chunk}], out;
        auto& map = gathered[k];
        for (int w : in) map[w] = out.emplace_back(copy_tensor(g, w, ".gathered", TensorKind::kActivation));
        std::string unit = o.layer >= 0 ? "L" + std::to_string(o.layer) : "chunk" + std::to_string(o.chunk);
        int ag = add_collective(g, unit + ".params.all_gather(" + axis + ")", CollectiveType::kAllGather, axis,
                                o.phase, o.chunk, in, out);
        int p = o.phase == Phase::kForward ? 0 : 1;
        g.ops[ag].after_op = prev_first_user[p];
        g.ops[ag].layer = o.layer;
        prev_first_user[p] = id;
        order.push_back(ag);
      }
      if (reads_weight)
        for (int& t : g.ops[id].inputs)
          if (auto it = gathered[k].find(t); it != gathered[k].end()) t = it->second;
    }
    order.push_back(id);
  }
  g.order = std::move(order);
}

}  // namespace

void apply_zero(Graph& g, int zero_stage, const std::string& axis) {
  if (zero_stage <= 0) return;
  shard_optimizer(g, /*gather_params=*/zero_stage < 3, axis);
  if (zero_stage == 3) gather_per_unit(g, axis);
}

}  // namespace sc
