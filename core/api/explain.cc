// The sharded graph and the rank layout as JSON for the browser app's
// teaching views (docs/wasm-bridge.md, docs/web-app.md): graph_json(stage),
// rank_info_json(), rank_at(). Read-only over GeneratorState; coded against
// the graph's structures (op kinds, phases, shardings, factor labels) and
// the cause each pass recorded where it made a collective (Op::cause), not
// against op or axis names, so new ops, layers and parallel axes show up
// unchanged.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "api/api.h"
#include "api/state.h"
#include "base/json_fields.h"
#include "graph/ops.h"
#include "model/transformer.h"

namespace sc {
namespace {

using ojson = nlohmann::ordered_json;

bool contains(const std::vector<std::string>& v, const std::string& x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

// Index of the dim sharded on `axis`, -1 if none.
int dim_on(const Sharding& s, const std::string& axis) {
  for (size_t d = 0; d < s.dim_axis.size(); ++d)
    if (s.dim_axis[d] == axis) return static_cast<int>(d);
  return -1;
}

std::string dim_label(const Tensor& t, int d) {
  return d >= 0 && d < static_cast<int>(t.dims.size()) ? t.dims[d].label : std::string("?");
}

// Consumers of tensor t in program order (ops whose inputs name it).
using Readers = std::map<int, std::vector<int>>;

Readers readers_of(const Graph& g) {
  Readers r;
  for (int id : g.order)
    for (int t : g.ops[id].inputs) r[t].push_back(id);
  return r;
}

// A step of a reshard chain: a collective, or the local slice propagation inserts.
bool reshard_step(const Op& o) { return o.kind == OpKind::kCollective || &op_def(o) == &ops::kSlice; }

// The op that first made this value, skipping the collectives/slices of a
// reshard chain (dp then tp): the op the sharding mismatch comes from.
int origin_op(const Graph& g, int tensor) {
  int p = g.tensors[tensor].producer;
  int guard = 0;
  while (p >= 0 && guard++ < 16 && g.ops[p].inputs.size() == 1 && reshard_step(g.ops[p])) {
    tensor = g.ops[p].inputs[0];
    p = g.tensors[tensor].producer;
  }
  return p;
}

// Follows a reshard chain forward from tensor t (the collective's output)
// to the tensor the real consumers read; returns it and those consumers.
std::pair<int, std::vector<int>> final_readers(const Graph& g, const Readers& rd, int t) {
  int guard = 0;
  while (guard++ < 16) {
    auto it = rd.find(t);
    if (it == rd.end()) return {t, {}};
    const auto& ops = it->second;
    if (ops.size() == 1 && reshard_step(g.ops[ops[0]]) && g.ops[ops[0]].outputs.size() == 1 &&
        g.ops[ops[0]].inputs.size() == 1) {
      t = g.ops[ops[0]].outputs[0];
      continue;
    }
    return {t, ops};
  }
  return {t, {}};
}

// Factors the op contracts (on inputs, on no output) that run on `axis`.
std::vector<std::string> contracted_on(const Graph& g, const Op& op, const std::string& axis) {
  std::set<std::string> out;
  for (size_t j = 0; j < op.outputs.size(); ++j)
    for (const auto& l : g.labels_out(op, j)) out.insert(l);
  std::vector<std::string> res;
  for (size_t i = 0; i < op.inputs.size(); ++i)
    for (const auto& l : g.labels_in(op, i)) {
      auto it = op.factor_axis.find(l);
      if (!out.count(l) && it != op.factor_axis.end() && it->second == axis && !contains(res, l)) res.push_back(l);
    }
  return res;
}

std::string pretty_factor(const std::string& l) {
  if (l == "qkv") return "q·k·v";
  if (l == "ad") return "a·d";
  return l;
}

std::string factors_text(const std::vector<std::string>& fs) {
  std::vector<std::string> p;
  for (const auto& f : fs) p.push_back(pretty_factor(f));
  return join(p, ", ");
}

// Why the consumer cannot take the dim `label` sharded on `axis`.
std::string gather_reason(const Op& c, const std::string& label, const std::string& axis) {
  if (c.unshardable.count(label))
    return "its factor " + label + " must stay whole (" + c.fn + " reduces or mixes along it)";
  for (const auto& [f, a] : c.factor_axis)
    if (a == axis && f != label)
      return axis + " already splits its factor " + pretty_factor(f) + " (an axis can split only one factor of an op)";
  if (c.wgrad) return "the weight-gradient GEMM needs the full " + label + " it contracts (Megatron re-gathers it rather than keeping the gathered copy from the forward pass)";
  // Context parallelism splits the sequence into cp chunks (the dim c):
  // every query attends to the keys and values of all of them.
  if (axis == "cp" && label == "c")
    return "each query attends to the keys and values of the whole sequence, and cp splits the sequence into " + label +
           " chunks, one per rank";
  return "";  // no reason beyond the need itself: the sentence says only that
}

// g: the graph of the stage being explained (op, rd belong to it).
ojson why_json(const Graph& g, const Readers& rd, const Op& op) {
  const std::string& X = op.axis;
  const Tensor& in = g.tensors[op.inputs.at(0)];
  const Tensor& out = g.tensors[op.outputs.at(0)];
  int producer = origin_op(g, op.inputs[0]);
  auto [final_t, consumers] = final_readers(g, rd, op.outputs[0]);
  const Tensor& target = g.tensors[final_t];
  const std::string coll = collective_name(op.coll);

  ojson w;
  w["axis"] = X;
  w["collective"] = coll;
  w["tensor"] = in.name;
  w["from"] = sharding_to_string(in);
  w["to"] = sharding_to_string(out);
  w["required"] = sharding_to_string(target);
  w["producer"] = producer >= 0 ? g.ops[producer].name : std::string();
  w["producer_id"] = producer;
  ojson cons = ojson::array();
  for (int c : consumers) cons.push_back(g.ops[c].name);
  w["consumers"] = cons;
  const Op* first = consumers.empty() ? nullptr : &g.ops[consumers[0]];
  const std::string pname = producer >= 0 ? g.ops[producer].name : in.name;
  const std::string cname = first ? first->name : std::string("its reader");

  std::string reason, text;
  const bool was_partial = contains(in.sharding.partial, X);
  const int in_dim = dim_on(in.sharding, X), out_dim = dim_on(out.sharding, X);

  // The cause the pass that made this collective recorded (Op::cause).
  const CauseKind cause = op.cause.kind;
  if (cause == CauseKind::kZeroParamGatherAfterStep) {  // ZeRO 1/2: after the sharded step
    reason = "zero";
    text = "ZeRO: each " + X + " rank updated only its 1/" + X + " shard of these parameters (its shard of the "
           "optimizer state), so the updated parameters are all-gathered over " + X +
           " for the next forward pass (comm size: the per-rank shard).";
  } else if (cause == CauseKind::kZeroParamGather) {  // ZeRO 3 / FSDP, per unit, before use
    reason = "zero";
    text = "ZeRO-3 / FSDP: this unit's parameters are sharded over " + X + " (each rank stores 1/" + X +
           "); they are all-gathered right before the unit runs, in forward and again in backward, and freed "
           "after; the gather is issued one unit ahead (prefetch).";
  } else if (cause == CauseKind::kHsdpReplicaReduce) {
    reason = "zero";
    text = "HSDP: the gradient shard this rank owns was reduce-scattered inside its sharding group; the other " +
           X + " replicas of that group hold the same shard of other data, so the shard is all-reduced over " + X +
           ".";
  } else if (cause == CauseKind::kZeroGradShard) {
    reason = "zero";
    text = std::to_string(op.inputs.size()) + " weight gradient(s) are partial sums over " + X +
           " (each rank saw its own slice of the batch). ZeRO: every rank updates only its 1/" + X +
           " shard of the parameters, so it needs only that shard of the summed gradient: the bucket is "
           "reduce-scattered instead of all-reduced (half the traffic of an all-reduce).";
  } else if (cause == CauseKind::kExpertGradBucket) {  // routed experts' gradient bucket
    reason = "partial_sum";
    text = std::to_string(op.inputs.size()) + " expert weight gradient(s) are partial sums over " + X + ": the ranks of an "
           "expert-data-parallel group hold the same experts but were sent different tokens, so each has the "
           "gradient of its own tokens. They are summed over " + X + " only (not over dp: the other dp ranks hold "
           "other experts), coalesced into one bucket.";
  } else if (cause == CauseKind::kGradBucket && op.inputs.size() > 1) {  // a coalesced bucket of gradient reductions
    reason = "partial_sum";
    text = std::to_string(op.inputs.size()) + " weight gradients are partial sums over " + X +
           ": each weight-gradient GEMM contracts the batch (b), which is sharded on " + X +
           ", so every " + X + " rank holds the gradient of its own slice of the batch. "
           "The optimizer step needs the full gradient on every rank, so they are all-reduced over " + X +
           ", coalesced into one bucket (DDP) that starts as soon as its last gradient is final.";
  } else if (was_partial) {
    reason = "partial_sum";
    std::string how;
    if (producer >= 0) {
      auto fs = contracted_on(g, g.ops[producer], X);
      if (!fs.empty())
        how = " (it contracts " + factors_text(fs) + ", which is sharded on " + X + ")";
      else if (g.ops[producer].linear)
        how = " (it adds values that are still partial over " + X + " and keeps them partial)";
      else if (g.ops[producer].def == &ops::kMoeCombine)  // inference, experts over tp (docs/inference.md)
        how = " (each rank sums a token's expert outputs over its own experts and its slice of their width: the "
              "experts are split over the " + X + " ranks, which all hold the same tokens)";
    }
    std::string need;
    if (op.coll == CollectiveType::kReduceScatter) {
      std::string label = dim_label(out, out_dim);
      bool sp = first && first->sp_region && label == "s";
      need = cname + " needs it " + (label == "s" ? std::string("sequence") : label) + "-sharded on " + X +
             (sp ? " (sequence parallelism)" : "") + ", so the sum is reduce-scattered: each rank receives the summed slice it owns";
    } else {
      need = cname + " needs the full sum on every rank, so it is all-reduced";
    }
    text = pname + " leaves a partial sum over " + X + how + "; " + need + ".";
  } else if (in_dim >= 0 && out_dim < 0) {
    reason = "gather";
    std::string label = dim_label(in, in_dim);
    std::string why = first ? gather_reason(*first, label, X) : "";
    text = in.name + " is sharded on " + X + " along " + label + " (local " + local_shape_string(in) + "); " + cname +
           " needs " + label + " whole" + (why.empty() ? "" : " because " + why) + ", so the shards are all-gathered (local " +
           local_shape_string(out) + ").";
  } else if (in_dim >= 0 && out_dim >= 0 && in_dim != out_dim) {
    reason = "redistribute";
    if (cause == CauseKind::kMoeDispatch)
      text = "MoE token dispatch: " + in.name + " holds this rank's tokens in one buffer per expert (one slot per "
             "source rank, rp, on " + X + "); " + cname + " runs the experts, which are split over " + X +
             " (E), so an all-to-all sends each buffer to the rank holding its expert and receives, from every " + X +
             " rank, the tokens routed to its own experts.";
    else if (cause == CauseKind::kMoeCombine)
      text = "MoE token combine: the experts' outputs sit on the ranks holding the experts (E on " + X + "); " + cname +
             " needs them back on the ranks the tokens came from (rp), so an all-to-all returns every token to its "
             "source rank.";
    else
      text = in.name + " is sharded on " + X + " along " + dim_label(in, in_dim) + "; " + cname + " needs it sharded along " +
           dim_label(out, out_dim) + " instead, so an all-to-all swaps the split dimension.";
  } else {
    reason = "reshard";
    text = in.name + " changes sharding from " + sharding_to_string(in) + " to " + sharding_to_string(out) + " over " + X + ".";
  }
  w["reason"] = reason;
  w["text"] = text;
  return w;
}

// Which part of the model pipeline stage `stage` holds: its layers (and
// which of them are MoE layers), its chunks (one per virtual stage: layers [first_layer, last_layer], -1 when
// none) and whether it runs the embedding (virtual stage 0) and the output
// layer + loss (the last virtual stage). Same split as Generator::create.
ojson stage_part(const GeneratorState& s, int64_t stage) {
  const ParallelConfig& p = s.job.parallel;
  const int64_t num_virtual = p.pp * p.virtual_stages;
  const std::vector<Chunk> chunks =
      stage_chunks(s.job.model.num_layers, p.pp, p.virtual_stages, p.pipeline_layout, stage);
  ojson jc = ojson::array();
  std::vector<int64_t> layers, moe_layers;
  bool embedding = false, loss = false;
  for (const Chunk& c : chunks) {
    const bool first = c.virtual_stage == 0, last = c.virtual_stage == num_virtual - 1;
    embedding |= first;
    loss |= last;
    const bool any = c.end_layer > c.first_layer;
    jc.push_back({{"virtual_stage", c.virtual_stage},
                  {"first_layer", any ? c.first_layer : -1},
                  {"last_layer", any ? c.end_layer - 1 : -1},
                  {"has_embedding", first},
                  {"has_loss", last}});
    for (int64_t l = c.first_layer; l < c.end_layer; ++l) {
      layers.push_back(l);
      if (s.job.model.moe_layer(l)) moe_layers.push_back(l);
    }
  }
  ojson out;
  out["stage"] = stage;
  out["first_layer"] = layers.empty() ? -1 : layers.front();
  out["last_layer"] = layers.empty() ? -1 : layers.back();
  out["layers"] = layers;
  out["moe_layers"] = moe_layers;  // those with experts (router, all-to-alls)
  out["has_embedding"] = embedding;
  out["has_loss"] = loss;
  out["chunks"] = std::move(jc);
  return out;
}

}  // namespace

Result<std::string> Generator::graph_json(int64_t stage) const {
  const GeneratorState& s = GeneratorAccess::state(*this);
  if (stage < 0 || stage >= s.num_stages())
    return make_error(ErrorCode::kInvalidArgument,
                      "stage must be an integer in [0, " + std::to_string(s.num_stages()) +
                          ") (the job's pipeline stages, pp = " + std::to_string(s.num_stages()) + ")",
                      "stage");
  const Graph& g = s.graph_of(stage);
  Readers rd = readers_of(g);
  ojson root = stage_part(s, stage);
  root["num_stages"] = s.num_stages();
  root["virtual_stages"] = s.job.parallel.virtual_stages;
  root["ranks_per_stage"] = s.layout.world_size() / s.num_stages();
  ojson all = ojson::array();  // every stage's part, to label a stage picker
  for (int64_t st = 0; st < s.num_stages(); ++st) all.push_back(stage_part(s, st));
  root["stages"] = std::move(all);
  ojson axes = ojson::array();
  for (const auto& a : s.layout.axes()) axes.push_back({{"name", a.name}, {"degree", a.degree}});
  for (const auto& a : s.layout.derived_axes())
    axes.push_back({{"name", a.name}, {"degree", a.degree}, {"derived", true}});
  root["axes"] = axes;
  ojson bind = ojson::object();
  for (const auto& [k, v] : s.bind) bind[k] = v;
  root["bindings"] = bind;
  root["num_layers"] = s.job.model.num_layers;

  ojson tensors = ojson::array();
  for (const Tensor& t : g.tensors) {
    ojson dims = ojson::array();
    for (const Dim& d : t.dims) dims.push_back({{"label", d.label}, {"size", d.size.to_string()}});
    ojson jt;
    jt["id"] = t.id;
    jt["name"] = t.name;
    jt["kind"] = tensor_kind_name(t.kind);
    jt["dtype"] = dtype_name(t.dtype);
    jt["shape"] = local_shape_string(t);
    jt["dims"] = dims;
    jt["sharding"] = sharding_to_string(t);
    jt["partial"] = t.sharding.partial;
    jt["layer"] = t.layer;
    jt["producer"] = t.producer;
    auto bytes = t.local_bytes(s.bind, t.name);
    jt["bytes"] = bytes.ok() ? bytes.value() : -1;
    tensors.push_back(std::move(jt));
  }
  root["tensors"] = std::move(tensors);

  ojson ops = ojson::array();
  for (int id : g.order) {
    const Op& o = g.ops[id];
    ojson jo;
    jo["id"] = o.id;
    jo["name"] = o.name;
    jo["kind"] = op_kind_name(o.kind);
    jo["fn"] = o.fn;
    jo["phase"] = phase_name(o.phase);
    jo["layer"] = o.layer;
    jo["inputs"] = o.inputs;
    jo["outputs"] = o.outputs;
    jo["flops"] = o.local_flops.to_string();
    ojson fa = ojson::object();
    for (const auto& [f, a] : o.factor_axis) fa[f] = a;
    jo["factor_axis"] = fa;
    if (o.sp_region) jo["sp_region"] = true;
    if (o.wgrad) jo["wgrad"] = true;
    if (o.kind == OpKind::kCollective) {
      jo["collective"] = collective_name(o.coll);
      jo["axis"] = o.axis;
      if (!o.inputs.empty() && !o.outputs.empty()) jo["why"] = why_json(g, rd, o);
    }
    ops.push_back(std::move(jo));
  }
  root["ops"] = std::move(ops);
  return root.dump();
}

Result<std::string> Generator::rank_info_json(int64_t rank) const {
  const GeneratorState& s = GeneratorAccess::state(*this);
  const RankLayout& L = s.layout;
  if (rank < 0 || rank >= L.world_size())
    return make_error(ErrorCode::kInvalidArgument,
                      "rank must be an integer in [0, " + std::to_string(L.world_size()) + ")", "rank");
  ojson root;
  root["rank"] = rank;
  root["world_size"] = L.world_size();
  ojson coords = ojson::object(), axes = ojson::array(), groups = ojson::array();
  for (const auto& a : L.axes()) {
    int64_t c = L.coord(rank, a.name);
    coords[a.name] = c;
    axes.push_back({{"name", a.name}, {"degree", a.degree}, {"coord", c}});
    if (a.degree > 1)
      groups.push_back({{"axis", a.name}, {"key", L.group_id(rank, a.name)}, {"members", L.group_members(rank, a.name)}});
  }
  // Axes that re-divide the same ranks (MoE's etp/ep/edp, HSDP's
  // dp_shard/dp_replicate): coordinates and groups, marked derived.
  ojson derived = ojson::array();
  for (const auto& a : L.derived_axes()) {
    int64_t c = L.coord(rank, a.name);
    derived.push_back({{"name", a.name}, {"degree", a.degree}, {"coord", c}});
    if (a.degree > 1)
      groups.push_back({{"axis", a.name}, {"key", L.group_id(rank, a.name)}, {"members", L.group_members(rank, a.name)},
                        {"derived", true}});
  }
  root["coords"] = coords;
  root["axes"] = axes;
  root["derived_axes"] = derived;
  root["groups"] = groups;
  return root.dump();
}

Result<int64_t> Generator::rank_at(const std::string& coords_json) const {
  const RankLayout& L = GeneratorAccess::state(*this).layout;
  Result<nlohmann::json> parsed = jsonf::parse_text(coords_json);  // 64 levels at most, as a job
  const nlohmann::json j = parsed.ok() ? std::move(parsed).value() : nlohmann::json(nlohmann::json::value_t::discarded);
  if (j.is_discarded() || !j.is_object())
    return make_error(ErrorCode::kParseError, "coordinates must be a JSON object such as {\"tp\": 1, \"dp\": 3}", "coords");
  std::vector<std::string> names;
  for (const auto& a : L.axes()) names.push_back(a.name);
  for (auto it = j.begin(); it != j.end(); ++it)
    if (!contains(names, it.key()))
      return make_error(ErrorCode::kUnknownField, "unknown axis (known: " + join(names, ", ") + ")", "coords." + it.key());
  int64_t rank = 0, stride = 1;
  for (const auto& a : L.axes()) {
    int64_t c = 0;
    auto it = j.find(a.name);
    if (it != j.end()) {
      if (!it->is_number_integer())
        return make_error(ErrorCode::kInvalidArgument, "must be an integer", "coords." + a.name);
      c = it->get<int64_t>();
      if (c < 0 || c >= a.degree)
        return make_error(ErrorCode::kInvalidArgument,
                          "must be in [0, " + std::to_string(a.degree) + ") (got " + std::to_string(c) + ")",
                          "coords." + a.name);
    }
    rank += c * stride;
    stride *= a.degree;
  }
  return rank;
}

}  // namespace sc
