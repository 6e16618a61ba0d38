// summary.json: every number is derived from the sharded graphs and the
// lowered programs of the rank roles (one per pipeline stage), so tests can
// hold it against the published formulas. Fields: docs/summary.md.
#include <algorithm>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "api/api.h"
#include "api/simulate.h"
#include "api/state.h"
#include "check/replay.h"
#include "cost/fp8_cost.h"
#include "parallel/zero.h"

namespace sc {
namespace {

using json = nlohmann::json;
using u128 = unsigned __int128;

// Sums of FLOPs can exceed 2^63 for large jobs: accumulate in 128 bits and
// emit an integer while it fits in uint64, else a double.
json big(u128 v) {
  if (v <= UINT64_MAX) return static_cast<uint64_t>(v);
  return static_cast<double>(v);
}

bool is_weight(const Tensor& t) { return t.kind == TensorKind::kWeight && t.producer < 0; }

// The per-node live-activation curve, at most kPoints points: the maximum
// over each run of `nodes_per_point` consecutive nodes (peaks survive).
json live_timeline(const std::vector<int64_t>& per_node) {
  constexpr size_t kPoints = 512;
  const size_t per = std::max<size_t>(1, (per_node.size() + kPoints - 1) / kPoints);
  json bytes = json::array();
  for (size_t i = 0; i < per_node.size(); i += per) {
    int64_t m = 0;
    for (size_t j = i; j < std::min(per_node.size(), i + per); ++j) m = std::max(m, per_node[j]);
    bytes.push_back(m);
  }
  return {{"nodes_per_point", per}, {"bytes", bytes}};
}

struct StageFigures {
  int64_t params_local = 0;
  int64_t params_local_expert = 0;  // of which routed experts' (ZeRO shards them over edp)
  u128 rank_flops = 0;
  uint64_t compute_us = 0;
  std::map<std::string, int64_t> bytes_by_type, count_by_type, bytes_by_axis;
  int64_t p2p_bytes = 0, n_compute = 0, n_coll = 0, n_p2p = 0;
  json stage;
};

Result<StageFigures> stage_figures(const GeneratorState& s, int64_t st) {
  const Graph& g = s.graph_of(st);
  const RoleProgram& prog = s.program_of(st);
  const auto& tr = s.job.training;
  StageFigures f;
  int first_layer = INT32_MAX, last_layer = -1;
  std::set<int> held;  // the layers the stage holds (interleaved chunks need not be contiguous)
  // Serving's 4-bit weights: their stored bytes (values and block scales,
  // dtype_storage_bytes) instead of parameters x one dtype's bytes.
  int64_t stored_4bit = -1;
  for (const auto& t : g.tensors) {
    if (!is_weight(t)) continue;
    SC_ASSIGN_OR_RETURN(int64_t l, t.local_numel().eval(s.bind, t.name));
    f.params_local += l;
    if (t.expert) f.params_local_expert += l;
    if (dtype_is_4bit(t.dtype)) stored_4bit = 0;
  }
  if (stored_4bit == 0)
    for (const auto& t : g.tensors) {
      if (!is_weight(t)) continue;
      SC_ASSIGN_OR_RETURN(int64_t b, t.local_bytes(s.bind, t.name));
      stored_4bit += b;
    }
  // Activations saved for backward per transformer layer (Korthikanti et
  // al.'s per-layer figure), attributed to the layer of the first reader.
  // A saved view of a saved tensor is that tensor's buffer (saved_storage).
  std::map<int, int> saved_layer;
  const std::vector<int> storage = saved_storage(g);
  for (int id : g.order) {
    const Op& o = g.ops[id];
    if (o.layer >= 0) {
      first_layer = std::min(first_layer, o.layer), last_layer = std::max(last_layer, o.layer);
      held.insert(o.layer);
    }
    if (o.phase != Phase::kBackward) continue;
    for (int t : o.inputs)
      if (is_saved_activation(g, t)) saved_layer.emplace(storage[static_cast<size_t>(t)], o.layer);
  }
  std::map<int, int64_t> act_by_layer;
  int64_t act_per_mb = 0;
  // Under FP8, as Transformer Engine keeps them (cost/fp8_cost.h, SavedForm).
  const std::vector<SavedForm> forms =
      fp8_saved_forms(g, tr.fp8_recipe, storage, fp8_copy_readers(g, tr.fp8_recipe));
  for (auto [t, layer] : saved_layer) {
    SC_ASSIGN_OR_RETURN(int64_t b, saved_buffer_bytes(g, s.bind, t, forms[static_cast<size_t>(t)], tr.fp8_recipe));
    act_by_layer[layer] += b;
    act_per_mb += b;
  }
  // Per axis index first (a map lookup by name per node is costly on
  // millions of nodes), by name after.
  std::vector<int64_t> axis_bytes(prog.axes.size(), 0);
  std::vector<char> axis_used(prog.axes.size(), 0);
  // The same per collective type (indexed by its enum value, small): bytes, count.
  std::vector<std::pair<int64_t, int64_t>> by_type;
  for (size_t i = 0; i < prog.nodes.size(); ++i) {
    const ProgramNode& n = prog.nodes[i];
    if (n.kind == TraceNodeKind::kCompute) {
      f.rank_flops += static_cast<u128>(n.num_ops);
      f.compute_us += n.duration_micros;
      ++f.n_compute;
    } else if (n.kind == TraceNodeKind::kCollective) {
      const size_t type = static_cast<size_t>(n.coll);
      if (type >= by_type.size()) by_type.resize(type + 1);
      by_type[type].first += n.comm_size;
      by_type[type].second += 1;
      axis_bytes[prog.node_axis[i]] += n.comm_size;
      axis_used[prog.node_axis[i]] = 1;
      ++f.n_coll;
    } else {
      if (n.kind == TraceNodeKind::kSend) f.p2p_bytes += n.comm_size;
      ++f.n_p2p;
    }
  }
  for (size_t a = 0; a < prog.axes.size(); ++a)
    if (axis_used[a]) f.bytes_by_axis[prog.axes[a]] += axis_bytes[a];
  for (size_t type = 0; type < by_type.size(); ++type) {
    if (by_type[type].second == 0) continue;  // no collective of this type
    const char* name = collective_name(static_cast<CollectiveType>(type));
    f.bytes_by_type[name] += by_type[type].first;
    f.count_by_type[name] += by_type[type].second;
  }
  // ZeRO shards optimizer state (1), gradients (2) and parameters (3) over
  // the sharding group (dp x cp, or HSDP's shard group); routed experts'
  // state over the expert data-parallel group.
  const auto& par = s.job.parallel;
  const int64_t zero = par.zero, group = par.shard_degree();
  const int64_t expert_group = s.job.model.is_moe() ? par.expert_dp() : 1;
  const int64_t dense = f.params_local - f.params_local_expert;
  auto sharded_of = [&](int64_t d, int64_t e, int64_t bytes_per_param, int64_t stage) {
    return zero_state_bytes(d, e, bytes_per_param, zero, stage, group, expert_group);
  };
  auto sharded = [&](int64_t bytes_per_param, int64_t stage) {
    return sharded_of(dense, f.params_local_expert, bytes_per_param, stage);
  };
  // fp8_params: the FP8 linears' weights are held as their FP8 copies only
  // (fp8_weight_copies below), no high-precision copy beside them.
  Fp8WeightElems fp8_held{};
  if (tr.fp8_params) {
    SC_ASSIGN_OR_RETURN(fp8_held, fp8_weight_elems(g, s.bind, tr.fp8_recipe));
  }
  const int64_t weights = stored_4bit >= 0 ? stored_4bit
                                           : sharded_of(dense - fp8_held.dense, f.params_local_expert - fp8_held.expert,
                                                        dtype_bytes(tr.dtype), 3);
  // FP8 training: the FP8 copies (row- and column-wise, with scales) TE
  // keeps of each FP8 linear's weight, sharded like the weights under ZeRO-3.
  SC_ASSIGN_OR_RETURN(const int64_t fp8_copies,
                      fp8_weight_copies_bytes(g, s.bind, tr.fp8_recipe, zero, group, expert_group));
  const int64_t grads = sharded(dtype_bytes(tr.grad_reduce_dtype), 2);
  const int64_t optim = sharded(tr.optimizer_bytes_per_param, 1);
  json per_layer = json::object();
  for (auto [layer, b] : act_by_layer)
    if (layer >= 0) per_layer[std::to_string(layer)] = b;
  f.stage = {
      {"index", st},
      {"layers", static_cast<int64_t>(held.size())},
      {"first_layer", last_layer >= 0 ? first_layer : -1},
      {"ranks", s.layout.world_size() / s.num_stages()},
      {"parameters_per_rank", f.params_local},
      {"memory_bytes",
       {{"weights", weights},
        {"gradients", grads},
        {"optimizer", optim},
        {"activations_peak", prog.activation_peak},
        {"peak", weights + fp8_copies + grads + optim + prog.activation_peak},
        {"activations_live_peak", prog.live_activation_peak},
        {"peak_live", weights + fp8_copies + grads + optim + prog.live_activation_peak},
        {"capacity", static_cast<int64_t>(s.job.hardware.memory_bytes)}}},
      {"activation_bytes_per_micro_batch", act_per_mb},
      {"activation_bytes_by_layer", per_layer},
      {"activation_timeline_bytes", prog.activation_timeline},
      {"live_activation_timeline", live_timeline(prog.live_activation)},
      {"communication",
       {{"per_rank_bytes", f.bytes_by_type},
        {"per_rank_collectives", f.count_by_type},
        {"per_rank_bytes_by_axis", f.bytes_by_axis},
        {"per_rank_p2p_send_bytes", f.p2p_bytes}}},
      {"flops_executed_per_rank", big(f.rank_flops)},
      {"trace",
       {{"nodes_per_rank", static_cast<int64_t>(prog.nodes.size())},
        {"compute_nodes", f.n_compute},
        {"collective_nodes", f.n_coll},
        {"p2p_nodes", f.n_p2p},
        {"compute_micros_per_rank", f.compute_us}}}};
  if (tr.fp8_recipe != Fp8Recipe::kNone) f.stage["memory_bytes"]["fp8_weight_copies"] = fp8_copies;  // FP8 jobs only
  return f;
}

// The bubble of rank 0's pipeline, measured on the traces' structure: each
// stage's compute replayed with free communication.
json pipeline_figures(const GeneratorState& s) {
  const auto& p = s.job.parallel;
  const int64_t m = s.job.training.num_micro_batches(p);
  json out = {{"stages", p.pp},
              {"virtual_stages", p.virtual_stages},
              {"schedule", schedule_name(s.job.training.schedule)},
              {"micro_batches", m},
              {"bubble_fraction_formula", p.pp == 1 ? 0.0
                                          : static_cast<double>(p.pp - 1) /
                                                static_cast<double>(p.virtual_stages * m)}};
  // The programs are read in place.
  std::vector<const RoleProgram*> stages;
  for (int64_t st = 0; st < p.pp; ++st) stages.push_back(&s.program_of(st));
  PipelineTiming timing = replay_pipeline(stages);
  double makespan = 0, busiest = 0;
  for (size_t i = 0; i < stages.size(); ++i) {
    makespan = std::max(makespan, timing.end_micros[i]);
    busiest = std::max(busiest, timing.busy_micros[i]);
  }
  // Bubble relative to the busiest stage's work, the papers' (p-1)/m form.
  out["bubble_fraction"] = busiest > 0 && timing.completed ? (makespan - busiest) / busiest : 0.0;
  out["makespan_micros_without_communication"] = makespan;
  return out;
}

// The simulated step (api/simulate.h) under the job's network: time.*.
// A network the job does not fit is the user's error; a run that does not
// complete (a bug) leaves the figures null with the reason.
Result<json> time_figures(const GeneratorState& s) {
  Result<SimulateReport> r = simulate_state(s, {});
  if (r.ok()) s.default_simulation = std::make_shared<const SimulateReport>(*r);
  if (!r.ok()) {
    if (r.error().code != ErrorCode::kInternal) return r.error();
    return json{{"step_seconds", nullptr}, {"mfu", nullptr}, {"tokens_per_second", nullptr},
                {"bubble_fraction", nullptr}, {"exposed_comm_seconds", nullptr}, {"error", r.error().message}};
  }
  json full = json::parse(simulate_json(*r), nullptr, false);
  return json{{"step_seconds", full["step_seconds"]},
              {"mfu", full["mfu"]},
              {"tokens_per_second", full["tokens_per_second"]},
              {"bubble_fraction", full["bubble_fraction"]},
              {"exposed_comm_seconds", full["exposed_comm_seconds"]},
              {"network", full["network"]},
              {"symmetry_classes", full["ranks_simulated"]}};
}

}  // namespace

Result<std::string> build_summary(const GeneratorState& s) {
  const Job& job = s.job;
  const int64_t m = job.training.num_micro_batches(job.parallel);
  const int64_t world = s.layout.world_size(), per_stage = world / s.num_stages();

  int64_t params_total = 0, params_inactive = 0;
  u128 model_flops = 0, hardware_flops = 0, executed = 0;
  std::vector<StageFigures> figs;
  json stages = json::array();
  std::map<std::string, u128> total_by_type, total_by_axis;
  for (int64_t st = 0; st < s.num_stages(); ++st) {
    const Graph& g = s.graph_of(st);
    for (const auto& t : g.tensors) {
      if (!is_weight(t) || t.tied_copy) continue;
      SC_ASSIGN_OR_RETURN(int64_t n, t.global_numel().eval(s.bind, t.name));
      params_total += n;
      // A token uses k of a layer's E routed experts.
      if (t.expert) params_inactive += n / job.model.num_experts * (job.model.num_experts - job.model.experts_per_token);
    }
    for (int id : g.order) {
      const Op& o = g.ops[id];
      if (o.phase == Phase::kOptimizer) continue;
      if (!o.model_flops.is_zero()) {
        SC_ASSIGN_OR_RETURN(int64_t f, o.model_flops.eval(s.bind, o.name + " flops"));
        model_flops += static_cast<u128>(f) * static_cast<uint64_t>(m);
      }
      if (o.kind == OpKind::kMatmul || o.kind == OpKind::kAttention) {
        SC_ASSIGN_OR_RETURN(int64_t f, o.flops.eval(s.bind, o.name + " flops"));
        hardware_flops += static_cast<u128>(f) * static_cast<uint64_t>(m);
      }
    }
    SC_ASSIGN_OR_RETURN(StageFigures f, stage_figures(s, st));
    executed += f.rank_flops * static_cast<uint64_t>(per_stage);
    for (auto& [k, v] : f.bytes_by_type) total_by_type[k] += static_cast<u128>(v) * per_stage;
    for (auto& [k, v] : f.bytes_by_axis) total_by_axis[k] += static_cast<u128>(v) * per_stage;
    stages.push_back(f.stage);
    figs.push_back(std::move(f));
  }
  json comm_total = json::object(), comm_axis = json::object();
  for (auto& [k, v] : total_by_type) comm_total[k] = big(v);
  for (auto& [k, v] : total_by_axis) comm_axis[k] = big(v);
  const StageFigures& f0 = figs.front();
  SC_ASSIGN_OR_RETURN(json time, time_figures(s));

  json out = {
      {"stagecraft_version", stagecraft_version()},
      {"config_hash", s.config_hash},
      {"job", json::parse(job_to_canonical_json(job), nullptr, false)},
      {"world_size", world},
      {"micro_batches_per_iteration", m},
      {"layout",
       {{"order_inner_first", job.parallel.order},
        {"tp", job.parallel.tp},
        {"dp", job.parallel.dp},
        {"cp", job.parallel.cp},
        {"pp", job.parallel.pp},
        {"ep", job.parallel.ep},
        {"expert_tp", job.parallel.expert_tp_degree()},
        {"expert_dp", job.model.is_moe() ? job.parallel.expert_dp() : 0},
        {"shard_group", job.parallel.shard_degree()}}},
      {"parameters", {{"total", params_total}, {"active", params_total - params_inactive}, {"per_rank", f0.params_local}}},
      {"flops",
       {{"model_per_iteration", big(model_flops)},
        {"hardware_per_iteration", big(hardware_flops)},
        {"executed_per_rank", big(f0.rank_flops)},
        {"executed_per_iteration", big(executed)}}},
      {"stages", stages},
      {"pipeline", pipeline_figures(s)},
      {"time", time},
      // Rank 0's figures (stage 0); every stage's are under stages[i].
      {"communication",
       {{"per_rank_bytes", f0.bytes_by_type},
        {"per_rank_collectives", f0.count_by_type},
        {"per_rank_bytes_by_axis", f0.bytes_by_axis},
        {"total_bytes", comm_total},
        {"total_bytes_by_axis", comm_axis}}},
      {"trace", f0.stage["trace"]},
  };
  // What the budgets check (api/budget.h, docs/promises.md "Budgets").
  out["estimate"] = {{"nodes_per_rank", s.estimate.nodes_per_rank},
                     {"program_nodes", s.estimate.program_nodes},
                     {"trace_bytes_per_rank", s.estimate.trace_bytes_per_rank},
                     {"trace_bytes", s.estimate.trace_bytes_total},
                     {"engine_bytes", s.estimate.engine_bytes},
                     // generate to a directory, every rank, one worker thread
                     {"generate_bytes", generate_bytes(s.estimate, 1, s.layout.world_size(), false)}};
  // What a Hugging Face import recognised (HF jobs only: other summaries are unchanged).
  if (!job.model.hf_family.empty()) {
    out["hf_import"] = {{"family", job.model.hf_family},
                        {"features", job.model.hf_features},
                        {"warnings", job.model.hf_warnings}};
  }
  return out.dump(2) + "\n";
}

}  // namespace sc
