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

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  if (auto at = s.find(from); at != std::string::npos) s.replace(at, from.size(), to);
}

// The axis a weight's state is sharded over ("" = not sharded).
std::string shard_axis_of(const Tensor& w, const ZeroAxes& a) { return w.expert ? a.expert : a.dense; }

// Stage 1/2: reduce-scatter buckets (HSDP: then an all-reduce of the shard
// over the replicas), sharded step, parameter all-gathers.
void shard_optimizer(Graph& g, bool gather_params, const ZeroAxes& axes) {
  std::vector<int> order;
  std::map<int, int> replica_copy;  // gradient tensor -> its replica-reduced copy
  for (int id : g.order) {
    order.push_back(id);
    Op& o = g.ops[id];
    if (o.kind == OpKind::kOptimizer) {
      o.flat_shard_axis = shard_axis_of(g.tensors[o.inputs[0]], axes);
      continue;
    }
    if (!o.grad_bucket || o.coll != CollectiveType::kAllReduce) continue;
    const bool expert = o.axis == axes.expert && !axes.expert.empty();
    const std::string shard = expert ? axes.expert : axes.dense;
    if (shard.empty()) continue;  // nothing sharded: the bucket stays an all-reduce
    o.coll = CollectiveType::kReduceScatter;
    o.fn = collective_name(o.coll);
    o.cause.kind = CauseKind::kZeroGradShard;
    o.cause.feature = shard;
    replace_all(o.name, "all_reduce(" + o.axis + ")", "reduce_scatter(" + shard + ")");
    o.axis = shard;
    if (expert || axes.replica.empty()) continue;
    // HSDP: the shard each rank now holds is summed over the replicas.
    const Op b = o;  // a copy: ops grows below
    std::vector<int> out;
    for (int t : b.outputs) out.push_back(replica_copy[t] = copy_tensor(g, t, ".all_reduce(" + axes.replica + ")",
                                                                       TensorKind::kWeightGrad));
    std::string name = b.name;
    replace_all(name, "reduce_scatter(" + shard + ")", "replica_all_reduce(" + axes.replica + ")");
    int ar = add_collective(g, name, CollectiveType::kAllReduce, axes.replica, Phase::kOptimizer, 0, b.outputs, out);
    g.ops[ar].flat_shard_axis = shard;
    g.ops[ar].cause.kind = CauseKind::kHsdpReplicaReduce;
    g.ops[ar].cause.feature = axes.replica;
    order.push_back(ar);
  }
  g.order = std::move(order);
  for (int id : g.order)
    if (g.ops[id].kind == OpKind::kOptimizer)
      if (auto it = replica_copy.find(g.ops[id].inputs[1]); it != replica_copy.end()) g.ops[id].inputs[1] = it->second;
  if (!gather_params) return;
  // One all-gather per gradient bucket, of the parameters it updated.
  order = g.order;
  for (int id : g.order) {
    const Op b = g.ops[id];
    if (!b.grad_bucket || b.coll != CollectiveType::kReduceScatter) continue;  // unsharded: nothing to gather
    std::set<int> weights;
    for (int t : b.outputs) weights.insert(g.tensors[t].grad_of);
    std::vector<int> in, out;
    for (int oid : g.order) {
      const Op& o = g.ops[oid];
      if (o.kind == OpKind::kOptimizer && weights.count(o.inputs[0])) {
        in.push_back(o.outputs[0]);
        out.push_back(copy_tensor(g, o.outputs[0], ".all_gather(" + b.axis + ")", TensorKind::kWeight));
      }
    }
    if (in.empty()) continue;
    std::string name = b.name;
    replace_all(name, "reduce_scatter", "param_all_gather");
    const int ag = add_collective(g, name, CollectiveType::kAllGather, b.axis, Phase::kOptimizer, 0, in, out);
    g.ops[ag].cause.kind = CauseKind::kZeroParamGatherAfterStep;
    g.ops[ag].cause.feature = b.axis;
    order.push_back(ag);
  }
  g.order = std::move(order);
}

// Stage 3: a parameter all-gather per (unit, phase, chunk) before first use;
// a unit with routed experts gathers their weights separately over edp.
void gather_per_unit(Graph& g, const ZeroAxes& axes) {
  using Key = std::tuple<int, int, int>;  // layer, phase, chunk
  // A unit's parameters are what its forward reads; backward gathers the
  // whole unit again (FSDP gathers the flat parameter, not what a kernel reads).
  std::map<std::pair<int, int>, std::vector<int>> unit_weights;  // (layer, chunk)
  for (int id : g.order) {
    const Op& o = g.ops[id];
    if (o.phase != Phase::kForward) continue;
    for (int t : o.inputs)
      if (g.tensors[t].kind == TensorKind::kWeight && g.tensors[t].producer < 0 &&
          !shard_axis_of(g.tensors[t], axes).empty()) {
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
      for (int t : o.inputs)
        reads_weight |= g.tensors[t].kind == TensorKind::kWeight && g.tensors[t].producer < 0 &&
                        !shard_axis_of(g.tensors[t], axes).empty();
      if (reads_weight && !gathered.count(k)) {
        auto& map = gathered[k];
        const int p = o.phase == Phase::kForward ? 0 : 1;
        std::string unit = o.layer >= 0 ? "L" + std::to_string(o.layer) : "chunk" + std::to_string(o.chunk);
        for (bool expert : {false, true}) {
          const std::string axis = expert ? axes.expert : axes.dense;
          std::vector<int> in, out;
          for (int w : unit_weights[{o.layer, o.chunk}])
            if (g.tensors[w].expert == expert) in.push_back(w);
          if (in.empty()) continue;
          for (int w : in) map[w] = out.emplace_back(copy_tensor(g, w, ".gathered", TensorKind::kActivation));
          int ag = add_collective(g, unit + (expert ? ".experts" : "") + ".params.all_gather(" + axis + ")",
                                  CollectiveType::kAllGather, axis, o.phase, o.chunk, in, out);
          g.ops[ag].after_op = prev_first_user[p];
          g.ops[ag].cause.kind = CauseKind::kZeroParamGather;
          g.ops[ag].cause.feature = axis;
          g.ops[ag].cause.consumer = id;
          g.ops[ag].layer = o.layer;
          order.push_back(ag);
        }
        prev_first_user[p] = id;
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

void apply_zero(Graph& g, int zero_stage, const ZeroAxes& axes) {
  if (zero_stage <= 0) return;
  shard_optimizer(g, /*gather_params=*/zero_stage < 3, axes);
  if (zero_stage == 3) gather_per_unit(g, axes);
}

}  // namespace sc
