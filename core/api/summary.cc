// summary.json: every number is derived from the sharded graph and the
// lowered program (nothing is a separate formula), so tests can hold it
// against the published formulas.
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "api/api.h"
#include "api/state.h"

namespace sc {
namespace {

using json = nlohmann::json;

// Sums of FLOPs can exceed 2^63 for large jobs: accumulate in 128 bits and
// emit an integer while it fits in uint64, else a double.
json big(unsigned __int128 v) {
  if (v <= UINT64_MAX) return static_cast<uint64_t>(v);
  return static_cast<double>(v);
}

bool is_weight(const Tensor& t) { return t.kind == TensorKind::kWeight && t.producer < 0; }

}  // namespace

Result<std::string> build_summary(const GeneratorState& s) {
  const Graph& g = s.graph;
  const Job& job = s.job;
  const auto& tr = job.training;
  int64_t m = tr.num_micro_batches(job.parallel);

  int64_t params_total = 0, params_local = 0;
  for (const auto& t : g.tensors) {
    if (!is_weight(t)) continue;
    SC_ASSIGN_OR_RETURN(int64_t n, t.global_numel().eval(s.bind, t.name));
    SC_ASSIGN_OR_RETURN(int64_t l, t.local_numel().eval(s.bind, t.name));
    params_total += n;
    params_local += l;
  }

  // Activations saved for backward: forward tensors read by backward ops,
  // attributed to the layer of their first backward reader.
  std::map<int, int> saved_layer;  // tensor -> layer
  for (int id : g.order) {
    const Op& o = g.ops[id];
    if (o.phase != Phase::kBackward) continue;
    for (int t : o.inputs) {
      const Tensor& x = g.tensors[t];
      bool fwd = x.producer >= 0 && g.ops[x.producer].phase == Phase::kForward;
      if (fwd && (x.kind == TensorKind::kActivation || x.kind == TensorKind::kMask))
        saved_layer.emplace(t, o.layer);
    }
  }
  int64_t act_total = 0;
  std::map<int, int64_t> act_by_layer;
  for (auto [t, layer] : saved_layer) {
    SC_ASSIGN_OR_RETURN(int64_t b, g.tensors[t].local_bytes().eval(s.bind, g.tensors[t].name));
    act_total += b;
    act_by_layer[layer] += b;
  }

  unsigned __int128 model_flops = 0;
  for (int id : g.order) {
    const Op& o = g.ops[id];
    if (o.phase == Phase::kOptimizer || o.model_flops.is_zero()) continue;
    SC_ASSIGN_OR_RETURN(int64_t f, o.model_flops.eval(s.bind, o.name + " flops"));
    model_flops += static_cast<unsigned __int128>(f) * static_cast<uint64_t>(m);
  }

  unsigned __int128 rank_flops = 0;
  uint64_t compute_us = 0;
  std::map<std::string, int64_t> bytes_by_type, count_by_type, bytes_by_axis;
  int64_t n_compute = 0, n_coll = 0;
  for (size_t i = 0; i < s.program.nodes.size(); ++i) {
    const TraceNode& n = s.program.nodes[i];
    if (n.kind == TraceNodeKind::kCompute) {
      rank_flops += static_cast<unsigned __int128>(n.num_ops);
      compute_us += n.duration_micros;
      ++n_compute;
    } else {
      bytes_by_type[collective_name(n.coll)] += n.comm_size;
      count_by_type[collective_name(n.coll)] += 1;
      bytes_by_axis[s.program.node_axis[i]] += n.comm_size;
      ++n_coll;
    }
  }
  int64_t world = s.layout.world_size();

  const int64_t weights = params_local * dtype_bytes(tr.dtype);
  const int64_t grads = params_local * dtype_bytes(tr.grad_reduce_dtype);
  const int64_t optim = params_local * tr.optimizer_bytes_per_param;
  json mem = {{"weights", weights},
              {"gradients", grads},
              {"optimizer", optim},
              {"activations_peak", act_total},
              {"peak", weights + grads + optim + act_total},
              {"capacity", static_cast<int64_t>(job.hardware.memory_bytes)}};
  json per_layer = json::object();
  for (auto [layer, b] : act_by_layer)
    if (layer >= 0) per_layer[std::to_string(layer)] = b;
  json stage = {{"index", 0},
                {"layers", job.model.num_layers},
                {"ranks", world},
                {"memory_bytes", mem},
                {"activation_bytes_per_micro_batch", act_total},
                {"activation_bytes_by_layer", per_layer}};

  json comm_total = json::object();
  for (auto& [k, v] : bytes_by_type) comm_total[k] = big(static_cast<unsigned __int128>(v) * world);

  json out = {
      {"stagecraft_version", stagecraft_version()},
      {"config_hash", s.config_hash},
      {"job", json::parse(job_to_canonical_json(job), nullptr, false)},
      {"world_size", world},
      {"micro_batches_per_iteration", m},
      {"layout", {{"order_inner_first", {"tp", "dp"}}, {"tp", job.parallel.tp}, {"dp", job.parallel.dp}}},
      {"parameters", {{"total", params_total}, {"active", params_total}, {"per_rank", params_local}}},
      {"flops",
       {{"model_per_iteration", big(model_flops)},
        {"executed_per_rank", big(rank_flops)},
        {"executed_per_iteration", big(rank_flops * static_cast<uint64_t>(world))}}},
      {"stages", json::array({stage})},
      {"communication",
       {{"per_rank_bytes", bytes_by_type},
        {"per_rank_collectives", count_by_type},
        {"per_rank_bytes_by_axis", bytes_by_axis},
        {"total_bytes", comm_total}}},
      {"trace",
       {{"nodes_per_rank", static_cast<int64_t>(s.program.nodes.size())},
        {"compute_nodes", n_compute},
        {"collective_nodes", n_coll},
        {"compute_micros_per_rank", compute_us}}},
  };
  return out.dump(2) + "\n";
}

}  // namespace sc
