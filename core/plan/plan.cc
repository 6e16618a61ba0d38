#include "plan/plan.h"

#include <algorithm>
#include <array>
#include <chrono>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <set>
#include <thread>
#include <tuple>
#include <type_traits>

#include "base/cancel.h"
#include "base/json_fields.h"
#include "base/workers.h"
#include "cost/fp8_cost.h"
#include "model/model_config.h"
#include "model/transformer.h"
#include "parallel/zero.h"
#include "plan/memory_reserve.h"
#include "sim/network.h"
#include "trace/schedule.h"

namespace sc {
namespace {
std::vector<std::string> order_of(const std::string& name) {
  if (name == "llama3") return {"tp", "cp", "pp", "dp"};
  return {"tp", "cp", "dp", "pp"};  // megatron
}
}  // namespace

std::string order_name(const std::vector<std::string>& o) { return o == order_of("llama3") ? "llama3" : "megatron"; }

namespace {

using json = nlohmann::json;

constexpr int kTp = 0, kPp = 1, kCp = 2, kDp = 3, kEp = 4, kVp = 5, kMbs = 6;

// ---------------------------------------------------------------- helpers

std::vector<int64_t> divisors(int64_t n) {
  std::vector<int64_t> d;
  for (int64_t i = 1; i * i <= n; ++i)
    if (n % i == 0) {
      d.push_back(i);
      if (i != n / i) d.push_back(n / i);
    }
  std::sort(d.begin(), d.end());
  return d;
}


int schedule_index(Schedule s) {
  switch (s) {
    case Schedule::kOneFOneB: return 0;
    case Schedule::kInterleaved: return 1;
    case Schedule::kZeroBubble: return 2;
    case Schedule::kGPipe: return 3;
  }
  return 4;
}

// Runs fn(i) for i in [0, n) on `threads` threads (fn must only write its
// own slot); progress on the calling thread. An fn returning bool says
// whether it did its item (false: skipped after a stop): the progress
// counts only the items done, so a stopped phase does not read finished.
template <typename Fn>
void parallel_for(int64_t n, int threads, Fn fn, const std::function<void(int64_t)>& tick = nullptr) {
  auto run = [&](int64_t i) -> bool {
    if constexpr (std::is_same_v<std::invoke_result_t<Fn&, int64_t>, bool>) return fn(i);
    else {
      fn(i);
      return true;
    }
  };
  if (threads <= 1 || n <= 1) {
    // A tick at most every 50 ms (as the threaded loop): millions of
    // cheap items (validation) would pay for one each.
    int64_t done = 0;
    auto last = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < n; ++i) {
      if (!run(i)) continue;
      ++done;
      if (!tick) continue;
      const auto now = std::chrono::steady_clock::now();
      if (now - last >= std::chrono::milliseconds(50)) {
        tick(done);
        last = now;
      }
    }
    if (tick) tick(done);
    return;
  }
  std::atomic<int64_t> next{0}, done{0}, seen{0};
  // A throw (std::bad_alloc) in any thread stops the rest and comes out of
  // join() here, instead of std::terminate (core/base/workers.h).
  Workers pool([&] { next.store(n); });
  const int t = static_cast<int>(std::min<int64_t>(threads, n));
  for (int k = 0; k < t; ++k)
    pool.spawn([&] {
      for (int64_t i; (i = next.fetch_add(1)) < n;) {
        if (run(i)) done.fetch_add(1);
        seen.fetch_add(1);
      }
    });
  if (tick) {
    while (seen.load() < n && !pool.failed()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      tick(done.load());
    }
  }
  pool.join();
  if (tick) tick(done.load());
}

// ---------------------------------------------------------------- proxy

// Per transformer layer of the proxy (or the embedding side "pre", the
// head side "post"): local parameters, saved activations per micro-batch,
// those read by weight-gradient ops, compute microseconds per micro-batch.
struct Part {
  int64_t params_dense = 0, params_expert = 0, saved = 0, for_w = 0;
  double f_us = 0, fb_us = 0;
  // Of fb_us: the backward ops on the input-gradient chain (neither
  // weight-gradient GEMMs nor recomputed forward ops): each depends on the
  // gradient received from the next stage and feeds the one sent back.
  double bc_us = 0;
  double comm_us = 0;  // tp and cp collectives per micro-batch, on the real network
  double f_comm_us = 0;  // of comm_us: the forward's
  // Of fb_us: recomputed forward ops (they may run before the gradient
  // arrives: nothing they read comes from the next stage).
  double rc_us = 0;
  // For ZeRO-3's per-unit gathers (docs/plan.md, step 7): the compute from
  // the unit's first weight-reading node to the end of its forward
  // (f_post_us) / backward (b_post_us; b_post_nw_us without the
  // weight-gradient ops, which zero-bubble defers to W steps). A gathered
  // unit's first reader waits for its gather, and everything after it in
  // the compute chain follows.
  double f_post_us = 0, b_post_us = 0, b_post_nw_us = 0;
  // Each dense weight gradient of at least a DDP bucket ("big") as (the
  // backward compute of this part up to and including its writer, in the
  // compute chain's order, µs; its bytes), by that time: its bucket's
  // reduction waits for the write.
  std::vector<std::pair<double, int64_t>> big_grad_writes;
  int64_t big_grads() const { return static_cast<int64_t>(big_grad_writes.size()); }
  // Of those, the ones between two consecutive compute nodes A -> B with
  // A feeding the collective and the collective feeding B: the compute
  // stream waits for all of it.
  double serial_us = 0;
};

struct Proxy {
  bool ok = false;
  Error error;
  std::vector<Part> layers;  // proxy layers; model layer l uses layers[layer_of[l]]
  std::vector<int64_t> layer_of;  // per model layer: the proxy layer of its kind (proxy_layer_map)
  Part pre, post;
  int64_t transient = 0;  // live activation peak - saved activation peak (one micro-batch)
  // Whether the backward re-runs any forward op. Selective recomputation
  // that recomputes nothing (fused attention keeps no attention core to
  // recompute) builds the same graph as no recomputation: autodiff is the
  // only reader of training.recompute (graph/autodiff.cc), and every op kind
  // of the job's layers, embedding and head is in the proxy.
  bool recomputes = false;
};

struct ProxyKey {
  int64_t tp, cp, mbs, ep, etp;
  bool sp;
  Recompute rc;
  auto tie() const { return std::tie(tp, cp, mbs, ep, etp, sp, rc); }
  bool operator<(const ProxyKey& o) const { return tie() < o.tie(); }
};

ProxyKey key_of(const PlanLayout& l) { return {l.tp, l.cp, l.mbs, l.ep, l.expert_tp, l.sp, l.recompute}; }

// What sets a layer's cost apart from another's in the proxy: its MLP
// (dense or MoE) and its attention (windowed or global).
int layer_kind(const ModelConfig& m, int64_t l) { return (m.layer_moe(l) ? 2 : 0) | (m.layer_windowed(l) ? 1 : 0); }

// The proxy's layers: a hybrid model's all (their blocks differ); any other
// model's first layers up to the first one of each kind it has (Mixtral: 1;
// DeepSeek-V3: 4, three dense and an MoE one; an MoE layer every other
// layer or a window every sixth layer: both kinds).
int64_t proxy_layers(const ModelConfig& m) {
  if (m.is_hybrid()) return m.num_layers;
  std::array<bool, 4> seen{false, false, false, false};
  int64_t n = 1;
  for (int64_t l = 0; l < m.num_layers; ++l) {
    const int k = layer_kind(m, l);
    if (!seen[static_cast<size_t>(k)]) seen[static_cast<size_t>(k)] = true, n = l + 1;
  }
  return n;
}

// Model layer l -> the proxy layer that prices it: itself when the proxy
// has it, else the last proxy layer of its kind.
std::vector<int64_t> proxy_layer_map(const ModelConfig& m, int64_t proxy_n) {
  std::vector<int64_t> map(static_cast<size_t>(std::max<int64_t>(m.num_layers, 0)), 0);
  std::array<int64_t, 4> last{-1, -1, -1, -1};
  for (int64_t l = 0; l < m.num_layers; ++l) {
    const int k = layer_kind(m, l);
    if (l < proxy_n) last[static_cast<size_t>(k)] = l;
    map[static_cast<size_t>(l)] = l < proxy_n ? l : std::max<int64_t>(last[static_cast<size_t>(k)], 0);
  }
  return map;
}

bool is_weight(const Tensor& t) { return t.kind == TensorKind::kWeight && t.producer < 0; }

// The group of rank 0 along the first `n` indices of an axis whose index
// i sits at rank i * stride: its shape on the network.
GroupShape strided_shape(const NetworkModel& net, int64_t n, int64_t stride) {
  GroupShapeBuilder b;
  for (int64_t i = 0; i < n; ++i) b.add(net, i * stride);
  return b.finish(net);
}

// A lower bound of a collective's time on a group of n ranks whose
// placement the proxy does not know (the expert groups, whose shape
// depends on the rank order and dp): the least time over every shape such
// a group can have on the default network (sim/network.cc times a
// collective from n, whether it spans domains, and the most members in
// one domain, which is at most the domain size and n).
double best_shape_micros(const NetworkModel& net, int64_t n, CollectiveType t, int64_t comm_size) {
  if (n <= 1) return 0;
  double best = std::numeric_limits<double>::infinity();
  for (int64_t m = 1; m <= std::min(n, net.domain_size); ++m) {
    GroupShape g;
    g.n = n;
    g.per_domain = m;
    g.domains = m == n ? 1 : (n + m - 1) / m;
    best = std::min(best, collective_micros(net, g, t, comm_size));
  }
  return best;
}

// Megatron-Core's EP all-to-all overlap (training.overlap_moe_expert_parallel_comm)
// on a layout: kept where Megatron-Core accepts it (an MoE layer over ep > 1;
// with pp > 1 the interleaved schedule; no full recomputation, no
// zero-bubble), dropped with delay_wgrad_compute elsewhere, as a recipe
// turns it off there (job_validate.cc refuses those combinations).
void fit_ep_overlap(Job& j) {
  TrainingConfig& t = j.training;
  const ParallelConfig& p = j.parallel;
  const bool ok = j.model.is_moe() && p.ep > 1 && t.recompute != Recompute::kFull &&
                  t.schedule != Schedule::kZeroBubble && !t.moe_shared_expert_overlap &&
                  p.moe_dispatcher != "allgather" &&
                  (p.pp == 1 || (t.schedule == Schedule::kInterleaved && p.virtual_stages > 1));
  if (!ok || !t.overlap_moe_expert_parallel_comm) t.overlap_moe_expert_parallel_comm = t.delay_wgrad_compute = false;
}
// The schedule's combined steps (trace/schedule.h, ep_overlap), as api.cc lowers them.
bool ep_overlap_of(const Job& j) {
  return j.training.overlap_moe_expert_parallel_comm && j.model.is_moe() && j.parallel.ep > 1;
}

Proxy build_proxy(const Job& base, const ProxyKey& k, const NetworkModel& net, const PlanBackend& backend) {
  Proxy px;
  Job j = base;
  j.model.num_layers = proxy_layers(base.model);
  j.model.first_dense_layers = std::min(j.model.first_dense_layers, j.model.num_layers);  // all-dense: 1 layer
  if (base.model.mtp_num_layers > 0) j.model.mtp_moe_kind = base.model.mtp_layer_moe() ? 1 : 0;  // the full model's
  ParallelConfig& p = j.parallel;
  p = ParallelConfig{};
  p.tp = k.tp;
  p.cp = k.cp;
  p.sequence_parallel = k.sp;
  p.cp_algorithm = base.parallel.cp_algorithm;
  p.moe_dispatcher = base.parallel.moe_dispatcher;
  int64_t dp = 1;
  if (base.model.is_moe()) {
    p.ep = k.ep;
    p.expert_tp = k.etp;
    // The job's router imbalance, at most the candidate's ep (the busiest
    // of ep ranks cannot hold more than ep times the mean).
    p.moe_imbalance = std::min(base.parallel.moe_imbalance, static_cast<double>(k.ep));
    const int64_t need = k.ep * k.etp, have = k.tp * k.cp;
    dp = need / std::gcd(need, have);
  }
  p.dp = dp;
  j.training.micro_batch_size = k.mbs;
  j.training.global_batch_size = dp * k.mbs;
  j.training.recompute = k.rc;
  if (k.rc != Recompute::kSelective) j.training.recompute_modules = 0;  // the job's modules: selective's
  j.training.schedule = Schedule::kOneFOneB;
  fit_ep_overlap(j);
  const bool ep_overlap = ep_overlap_of(j);
  // No summary.json: the proxy reads the graph, the program and the
  // bindings only (the summary's default simulation cost as much again).
  Result<std::unique_ptr<const PlanBuild>> gen = backend.build(j, /*summary=*/false);
  if (!gen.ok()) {
    px.error = gen.error();
    return px;
  }
  const PlanBuild& s = **gen;
  const Bindings& bind = s.bindings();
  const Graph& g = s.graph_of(0);
  const RoleProgram& prog = s.program_of(0);
  px.layers.assign(static_cast<size_t>(j.model.num_layers), Part{});
  px.layer_of = proxy_layer_map(base.model, j.model.num_layers);
  // Position of each op in program order; the first/last layered forward
  // and backward ops split layer -1 into the embedding and head sides.
  std::vector<int> pos(g.ops.size(), -1);
  int first_fwd = INT32_MAX, last_bwd = -1;
  for (size_t i = 0; i < g.order.size(); ++i) {
    const Op& o = g.ops[g.order[i]];
    pos[g.order[i]] = static_cast<int>(i);
    if (o.layer >= 0 && o.phase == Phase::kForward) first_fwd = std::min(first_fwd, static_cast<int>(i));
    if (o.layer >= 0 && o.phase == Phase::kBackward) last_bwd = std::max(last_bwd, static_cast<int>(i));
  }
  auto part_of_op = [&](int id) -> Part* {
    const Op& o = g.ops[id];
    if (o.layer >= 0 && o.layer < static_cast<int>(px.layers.size())) return &px.layers[static_cast<size_t>(o.layer)];
    if (o.phase == Phase::kForward) return pos[id] < first_fwd ? &px.pre : &px.post;
    if (o.phase == Phase::kBackward) return pos[id] > last_bwd ? &px.pre : &px.post;
    return nullptr;
  };
  // Weights: the part of their first forward reader.
  std::vector<Part*> weight_part(g.tensors.size(), nullptr);
  for (int id : g.order) {
    const Op& o = g.ops[id];
    if (o.phase != Phase::kForward) continue;
    for (int t : o.inputs)
      if (is_weight(g.tensors[t]) && !weight_part[t]) weight_part[t] = part_of_op(id);
  }
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    const Tensor& tt = g.tensors[t];
    if (!is_weight(tt)) continue;
    Result<int64_t> n = tt.local_numel().eval(bind, tt.name);
    if (!n.ok()) { px.error = n.error(); return px; }
    Part* part = weight_part[t] ? weight_part[t] : &px.pre;
    (tt.expert ? part->params_expert : part->params_dense) += *n;
  }
  // Dense weight gradients of at least a DDP bucket: each closes a bucket
  // of its own (parallel/buckets.cc closes a bucket once it holds
  // dp_bucket_mb), so a part has at least that many gradient buckets.
  // (counted at dp_bucket_mb; a layout whose gradients are reduced after
  // the backward in one bucket, api.cc, uses none of these counts:
  // TrainingConfig::grad_reduce_overlapped)
  const double bucket_bytes = base.training.dp_bucket_mb * 1024.0 * 1024.0;
  std::set<int> big;  // by weight: a gradient and its reduced copies are one item
  // A big gradient's producer op -> (its weight's part, its bytes).
  std::map<int, std::vector<std::pair<Part*, int64_t>>> big_writer;
  for (size_t t = 0; t < g.tensors.size(); ++t) {
    const Tensor& tt = g.tensors[t];
    if (tt.kind != TensorKind::kWeightGrad || tt.producer < 0 || tt.grad_of < 0) continue;
    const Tensor& w = g.tensors[static_cast<size_t>(tt.grad_of)];
    if (!is_weight(w) || w.expert) continue;
    Result<int64_t> b = tt.local_bytes(bind, tt.name);
    if (!b.ok()) { px.error = b.error(); return px; }
    Part* part = weight_part[static_cast<size_t>(tt.grad_of)] ? weight_part[static_cast<size_t>(tt.grad_of)] : &px.pre;
    if (static_cast<double>(*b) >= bucket_bytes && big.insert(tt.grad_of).second)
      big_writer[tt.producer].push_back({part, *b});
  }
  // Saved activations: the part of their first backward reader (as
  // summary.json's activation_bytes_by_layer), layer -1 by its producer.
  // A saved view of a saved tensor is that tensor's buffer (saved_storage).
  // Under FP8, as Transformer Engine keeps them (cost/fp8_cost.h,
  // SavedForm): the weight-gradient ops hold the parts they read.
  std::set<int> seen;
  std::map<int, std::pair<Part*, SavedForm>> read_w;  // buffer -> (its first wgrad reader's part, the parts wgrad ops read)
  const std::vector<int> storage = saved_storage(g);
  const std::vector<char> copy = fp8_copy_readers(g, j.training.fp8_recipe);
  const std::vector<SavedForm> forms = fp8_saved_forms(g, j.training.fp8_recipe, storage, copy);
  for (int id : g.order) {
    const Op& o = g.ops[id];
    if (o.phase != Phase::kBackward) continue;
    for (int read : o.inputs) {
      if (!is_saved_activation(g, read)) continue;
      const int t = storage[static_cast<size_t>(read)];
      const bool first = seen.insert(t).second;
      if (!first && !o.wgrad) continue;
      Part* part = nullptr;
      if (o.layer >= 0) part = part_of_op(id);
      else {
        const int prod = g.tensors[t].producer;
        part = prod < 0 || pos[prod] < first_fwd ? &px.pre : &px.post;
      }
      if (first) {
        Result<int64_t> b = saved_buffer_bytes(g, bind, t, forms[static_cast<size_t>(t)], j.training.fp8_recipe);
        if (!b.ok()) { px.error = b.error(); return px; }
        part->saved += *b;
      }
      if (o.wgrad) {
        const SavedForm r = read_part(forms[static_cast<size_t>(t)], copy[static_cast<size_t>(id)]);
        SavedForm& f = read_w.try_emplace(t, part, SavedForm{false, false}).first->second.second;
        f.high = f.high || r.high, f.fp8 = f.fp8 || r.fp8;
      }
    }
  }
  for (const auto& [t, w] : read_w) {
    Result<int64_t> b = saved_buffer_bytes(g, bind, t, w.second, j.training.fp8_recipe);
    if (!b.ok()) { px.error = b.error(); return px; }
    w.first->for_w += *b;
  }
  // Compute microseconds: node names are "[mbN.]fwd|bwd|opt.<op>[.suffix]".
  std::map<std::string, int, std::less<>> by_name;
  for (size_t i = 0; i < g.ops.size(); ++i) by_name.emplace(g.ops[i].name, static_cast<int>(i));
  std::vector<char> f_reader(px.layers.size(), 0), b_reader(px.layers.size(), 0);
  std::map<Part*, double> b_run;  // backward compute so far, per part
  std::map<std::pair<Part*, int>, double> big_at;  // (part, writer op) -> b_run at its last node
  // The shared experts' stream (side stream 2, moe_shared_expert_overlap):
  // its compute runs beside the ep all-to-alls and the compute stream, so
  // neither the exchange nor a writer's time may count it in series.
  bool shared_stream = false;
  for (uint8_t sd : prog.side_stream) shared_stream |= sd == 2;
  for (size_t i = 0; i < prog.nodes.size(); ++i) {
    const ProgramNode& n = prog.nodes[i];
    if (n.kind != TraceNodeKind::kCompute) continue;
    std::string_view rest = prog.name_suffix(i);
    const bool fwd = rest.rfind("fwd.", 0) == 0, bwd = rest.rfind("bwd.", 0) == 0;
    if (!fwd && !bwd) continue;  // the optimizer is left out of the bound
    rest.remove_prefix(4);
    int op = -1;
    for (std::string_view r = rest; !r.empty();) {
      if (auto it = by_name.find(r); it != by_name.end()) { op = it->second; break; }
      const size_t dot = r.rfind('.');
      if (dot == std::string_view::npos) break;
      r = r.substr(0, dot);
    }
    if (op < 0) continue;  // unattributed: left out (the bound stays a bound)
    Part* part = part_of_op(op);
    if (!part) continue;
    const double us = static_cast<double>(n.duration_micros);
    part->fb_us += us;
    if (bwd) {
      // A side-stream node need not end before a compute-stream writer.
      const bool side = !prog.side_stream.empty() && prog.side_stream[i] != 0;
      const double at = side ? b_run[part] : (b_run[part] += us);
      if (big_writer.count(op)) big_at[{part, op}] = at;
    }
    if (fwd) part->f_us += us;
    if (bwd && !g.ops[op].wgrad && !g.ops[op].recomputed) part->bc_us += us;
    if (bwd && g.ops[op].recomputed) part->rc_us += us;
    // From the first node (of this part and phase) whose op reads a weight.
    bool reads = false;
    for (int t : g.ops[op].inputs) reads |= is_weight(g.tensors[t]);
    const size_t pi = static_cast<size_t>(g.ops[op].layer);
    if (g.ops[op].layer >= 0 && pi < px.layers.size()) {
      std::vector<char>& seen_reader = fwd ? f_reader : b_reader;
      if (reads) seen_reader[pi] = 1;
      if (seen_reader[pi]) {
        if (fwd) part->f_post_us += us;
        else {
          part->b_post_us += us;
          if (!g.ops[op].wgrad) part->b_post_nw_us += us;
        }
      }
    }
  }
  // tp and cp collectives of the forward and backward: their groups are
  // the innermost axes in every rank order, so their shapes are the real
  // job's (rank 0's tp group: ranks 0..tp-1; cp group: stride tp).
  if (!net.astra && net.algorithm != "hierarchical") {
    const GroupShape tp_shape = strided_shape(net, k.tp, 1), cp_shape = strided_shape(net, k.cp, k.tp);
    std::map<uint64_t, size_t> index;
    for (size_t i = 0; i < prog.nodes.size(); ++i) index[prog.nodes[i].id] = i;
    std::vector<double> coll_us(prog.nodes.size(), -1);  // >= 0: a tp/cp collective of fwd/bwd
    std::vector<Part*> node_part(prog.nodes.size(), nullptr);
    for (size_t i = 0; i < prog.nodes.size(); ++i) {
      const ProgramNode& n = prog.nodes[i];
      std::string_view rest = prog.name_suffix(i);
      if (rest.rfind("fwd.", 0) != 0 && rest.rfind("bwd.", 0) != 0) continue;
      const bool is_fwd = rest.rfind("fwd.", 0) == 0;
      rest.remove_prefix(4);
      int op = -1;
      for (std::string_view r = rest; !r.empty();) {
        if (auto it = by_name.find(r); it != by_name.end()) { op = it->second; break; }
        const size_t dot = r.rfind('.');
        if (dot == std::string_view::npos) break;
        r = r.substr(0, dot);
      }
      node_part[i] = op >= 0 ? part_of_op(op) : nullptr;
      const std::string& axis = prog.axis_of(i);
      if (n.kind != TraceNodeKind::kCollective) continue;
      // A collective on a side stream (Transformer Engine's overlapped tp
      // collectives, the shared experts' stream) does not hold the compute
      // stream: charging it would no longer bound simulate from below.
      if (!prog.side_stream.empty() && prog.side_stream[i] != 0) continue;
      // With the EP all-to-all overlap the steady phase's combined steps
      // run the ep all-to-alls on their own stream; this one-micro-batch
      // program has none, so they are left out for every layout.
      if (axis == "ep" && ep_overlap) continue;
      // With the shared experts on their own stream the exchange overlaps
      // their compute (each at half the GPU while both run), so charging
      // it in series with that compute would exceed simulate.
      if ((axis == "ep" || axis == "etp") && shared_stream) continue;
      if (axis == "tp" || axis == "cp") coll_us[i] = collective_micros(net, axis == "tp" ? tp_shape : cp_shape, n.coll, n.comm_size);
      else if (axis == "ep") coll_us[i] = best_shape_micros(net, k.ep, n.coll, n.comm_size);
      else if (axis == "etp") coll_us[i] = best_shape_micros(net, k.etp, n.coll, n.comm_size);
      else continue;
      if (node_part[i]) node_part[i]->comm_us += coll_us[i];
      if (node_part[i] && is_fwd) node_part[i]->f_comm_us += coll_us[i];
    }
    int64_t prev_compute = -1;
    for (size_t i = 0; i < prog.nodes.size(); ++i) {
      const ProgramNode& b = prog.nodes[i];
      if (b.kind != TraceNodeKind::kCompute) continue;
      if (prev_compute >= 0 && node_part[i]) {
        const uint64_t a = prog.nodes[static_cast<size_t>(prev_compute)].id;
        double wait = 0;
        for (uint64_t d : b.deps) {
          auto it = index.find(d);
          if (it == index.end() || coll_us[it->second] < 0) continue;
          const ProgramNode& c = prog.nodes[it->second];
          if (std::find(c.deps.begin(), c.deps.end(), a) != c.deps.end()) wait += coll_us[it->second];
        }
        node_part[i]->serial_us += wait;
      }
      prev_compute = static_cast<int64_t>(i);
    }
  }
  // A writer found among its weight's part's backward nodes gets its time
  // from the part's start; any other at 0 (no claim).
  for (const auto& [op, grads] : big_writer)
    for (const auto& [part, bytes] : grads) {
      const auto at = big_at.find({part, op});
      part->big_grad_writes.push_back({at == big_at.end() ? 0.0 : at->second, bytes});
    }
  for (Part& q : px.layers) std::sort(q.big_grad_writes.begin(), q.big_grad_writes.end());
  std::sort(px.pre.big_grad_writes.begin(), px.pre.big_grad_writes.end());
  std::sort(px.post.big_grad_writes.begin(), px.post.big_grad_writes.end());
  px.transient = std::max<int64_t>(0, prog.live_activation_peak - prog.activation_peak);
  for (const Op& o : g.ops) px.recomputes |= o.recomputed;
  px.ok = true;
  return px;
}

const Part& layer_part(const Proxy& px, int64_t layer) {
  return px.layers[static_cast<size_t>(px.layer_of[static_cast<size_t>(layer)])];
}

// ---------------------------------------------------------------- estimates

struct Estimate {
  bool ok = false;
  int64_t lower = 0, upper = 0;  // bytes
  double bound_us = 0;
};

// Per chunk of a stage: saved, for_w, f, fb of its layers (+ ends).
struct ChunkSums {
  int64_t saved = 0, for_w = 0, params_dense = 0, params_expert = 0;
  double f_us = 0, fb_us = 0, bc_us = 0, comm_us = 0, serial_us = 0, f_comm_us = 0, rc_us = 0;
  int64_t pre_post_dense = 0;  // of params_dense: the embedding / head units
  int64_t big_grads = 0;
};

ChunkSums chunk_sums(const Proxy& px, const Chunk& c, int64_t num_virtual, bool tied) {
  ChunkSums s;
  auto add = [&](const Part& p) {
    s.saved += p.saved;
    s.for_w += p.for_w;
    s.params_dense += p.params_dense;
    s.params_expert += p.params_expert;
    s.f_us += p.f_us;
    s.fb_us += p.fb_us;
    s.bc_us += p.bc_us;
    s.comm_us += p.comm_us;
    s.serial_us += p.serial_us;
    s.f_comm_us += p.f_comm_us;
    s.big_grads += p.big_grads();
    s.rc_us += p.rc_us;
  };
  for (int64_t l = c.first_layer; l < c.end_layer; ++l) add(layer_part(px, l));
  if (c.virtual_stage == 0) add(px.pre), s.pre_post_dense += px.pre.params_dense;
  if (c.virtual_stage == num_virtual - 1) {
    add(px.post);
    s.pre_post_dense += px.post.params_dense;
    // A tied embedding is a second copy on the last stage when pp > 1.
    if (tied && num_virtual > 1 && c.virtual_stage != 0) s.params_dense += px.pre.params_dense;
  }
  return s;
}

// Rank 0's group over the first n indices of the combined (cp, dp) index
// (cp inner, as the layout derives "dp+cp" and HSDP's dp_shard), in the
// job's rank order: its shape on the network.
// The members are (j % cp) * cp's rank stride + (j / cp) * dp's, j = 0,
// step, ..., (n - 1) step: the shape depends on the network and on
// (cp, those two strides, n, step) alone.
using DpShapeKey = std::array<int64_t, 5>;
DpShapeKey dp_shape_key(const ParallelConfig& p, int64_t n, int64_t step) {
  std::array<int64_t, 4> strides{1, 1, 1, 1};  // tp, cp, dp, pp
  int64_t stride = 1;
  for (const std::string& a : p.order) {
    const int i = a == "tp" ? 0 : a == "cp" ? 1 : a == "dp" ? 2 : 3;
    strides[static_cast<size_t>(i)] = stride;
    stride *= i == 0 ? p.tp : i == 1 ? p.cp : i == 2 ? p.dp : p.pp;
  }
  return {p.cp, strides[1], strides[2], n, step};
}
// Its members' ranks, ascending (rank 0 first).
std::vector<int64_t> dp_group_members(const DpShapeKey& k) {
  const auto [cp, cp_stride, dp_stride, n, step] = k;
  std::vector<int64_t> members;
  members.reserve(static_cast<size_t>(std::max<int64_t>(0, n)));
  for (int64_t j = 0; j < n * step; j += step) members.push_back((j % cp) * cp_stride + (j / cp) * dp_stride);
  std::sort(members.begin(), members.end());
  return members;
}
GroupShape dp_group_shape_of(const NetworkModel& net, const DpShapeKey& k) {
  GroupShapeBuilder b;
  for (int64_t r : dp_group_members(k)) b.add(net, r);
  return b.finish(net);
}

// The plan's memo of those shapes (one network per plan): every layout
// asks for its dp group, shard group and HSDP replica group once per
// pipeline stage in each bound, and layouts that differ in ZeRO stage,
// schedule, virtual stages, micro-batch or recompute (most of a space)
// share them; a group of 4,096 members is a sort and a walk over the
// network's domains. Shared by the estimate threads; a shape is a function
// of its key, so what a thread finds does not depend on which computed it.
class DpShapes {
 public:
  explicit DpShapes(const NetworkModel& net) : net_(net) {}
  // The memo holds the shapes of one network: the one it was made with.
  bool for_network(const NetworkModel& net) const { return &net == &net_; }
  GroupShape get(const DpShapeKey& k) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = memo_.find(k);
      if (it != memo_.end()) return it->second;
    }
    const GroupShape g = dp_group_shape_of(net_, k);
    std::lock_guard<std::mutex> lock(mu_);
    memo_.emplace(k, g);
    return g;
  }

 private:
  const NetworkModel& net_;
  std::mutex mu_;
  std::map<DpShapeKey, GroupShape> memo_;
};

GroupShape dp_group_shape(const NetworkModel& net, const ParallelConfig& p, int64_t n, int64_t step = 1,
                          DpShapes* memo = nullptr) {
  const DpShapeKey k = dp_shape_key(p, n, step);
  return memo && memo->for_network(net) ? memo->get(k) : dp_group_shape_of(net, k);
}

// Rank 0's expert data-parallel group (MoE): api.cc reads a stage's tp,
// cp and dp indices as one index (in the job's rank order, fastest first)
// and splits it again as expert_tp x ep x edp (inner first), so member j
// of the group sits at index j * expert_tp * ep.
GroupShape expert_dp_group_shape(const NetworkModel& net, const ParallelConfig& p) {
  std::vector<std::pair<int64_t, int64_t>> base;  // (degree, rank stride) of tp, cp, dp in rank order
  int64_t stride = 1;
  for (const std::string& a : p.order) {
    const int64_t deg = a == "tp" ? p.tp : a == "cp" ? p.cp : a == "dp" ? p.dp : p.pp;
    if (a == "tp" || a == "cp" || a == "dp") base.push_back({deg, stride});
    stride *= deg;
  }
  const int64_t ne = p.expert_dp(), step = p.expert_tp_degree() * p.ep;
  std::vector<int64_t> members;
  for (int64_t j = 0; j < ne; ++j) {
    int64_t f = j * step, r = 0;
    for (const auto& [deg, st] : base) {
      r += (f % deg) * st;
      f /= deg;
    }
    members.push_back(r);
  }
  std::sort(members.begin(), members.end());
  GroupShapeBuilder b;
  for (int64_t r : members) b.add(net, r);
  return b.finish(net);
}

// ZeRO 1/2's all-gather of `expert` updated routed-expert parameters over
// the expert data-parallel group `edp` of `ne` members (each holds 1/ne).
double expert_param_gather_us(const Job& job, const NetworkModel& net, const GroupShape& edp, int64_t expert, int64_t ne) {
  return collective_micros(net, edp, CollectiveType::kAllGather,
                           (expert * dtype_bytes(job.training.dtype) + ne - 1) / ne);
}

}  // namespace

// A lower bound of k collectives of one kind on one group carrying `bytes`
// in all: with f concave and f(0) >= 0, f(a) + f(b) >= f(a + b) + f(0), so
// k of them take at least one of the total size plus k - 1 fixed parts
// (f(0): the time of 0 bytes, the same under either bound;
// collective_concave_lower_micros, sim/network.h, is f).
double collectives_us(const NetworkModel& net, const GroupShape& g, CollectiveType t, int64_t bytes, int64_t k) {
  return collective_concave_lower_micros(net, g, t, bytes) +
         static_cast<double>(std::max<int64_t>(0, k - 1)) * collective_micros(net, g, t, 0);
}

namespace {

// A lower bound of the data-parallel communication one rank of a stage
// issues (its one communication stream runs it all): the gradient
// reduction and ZeRO's gathers in `buckets` collectives each (at least the
// number of gradients of a whole bucket), dense parameters only.
double dp_comm_bound(const Job& job, const NetworkModel& net, int64_t dense, int64_t buckets,
                     const std::vector<int64_t>& units, int64_t m, DpShapes* shapes) {
  const ParallelConfig& p = job.parallel;
  const int64_t n = p.dp * p.cp;
  if (n <= 1 || dense <= 0) return 0;
  const int64_t gbytes = dense * dtype_bytes(job.training.grad_reduce_dtype);
  const int64_t wbytes = dense * dtype_bytes(job.training.dtype);
  const GroupShape all = dp_group_shape(net, p, n, 1, shapes);
  if (p.zero == 0) return collectives_us(net, all, CollectiveType::kAllReduce, gbytes, buckets);
  if (p.zero < 3)
    return collectives_us(net, all, CollectiveType::kReduceScatter, gbytes, buckets) +
           collectives_us(net, all, CollectiveType::kAllGather, (wbytes + n - 1) / n, buckets);
  const int64_t sg = p.shard_degree();
  if (sg <= 1) return 0;
  const GroupShape shard = sg == n ? all : dp_group_shape(net, p, sg, 1, shapes);
  double t = collectives_us(net, shard, CollectiveType::kReduceScatter, gbytes, buckets);
  // Each FSDP unit is gathered before its forward and its backward, per
  // micro-batch. The layers are units of one size, listed in a row: one
  // collective_micros per run of equal sizes.
  int64_t last_u = -1;
  double last_us = 0;
  for (int64_t u : units) {
    if (u != last_u) {
      const int64_t ub = u * dtype_bytes(job.training.dtype);
      last_u = u;
      last_us = collective_micros(net, shard, CollectiveType::kAllGather, (ub + sg - 1) / sg);
    }
    t += 2.0 * static_cast<double>(m) * last_us;
  }
  return t;
}

// The routed experts' share of the same stream (MoE): their gradients are
// summed over the expert data-parallel group (edp; parallel/buckets.cc),
// their ZeRO state sharded over it (parallel/zero.cc: ZeRO 1/2 gather the
// updated expert weights after the step, ZeRO-3 gathers each unit's
// experts separately, before its forward and its backward, per
// micro-batch), all on the data-parallel stream (sim/simulate.cc: every
// kind but tp, cp and ep), one collective per kind at least (rank 0's edp
// group, expert_dp_group_shape).
double expert_dp_comm_bound(const Job& job, const NetworkModel& net, const GroupShape& g, int64_t expert,
                            const std::vector<int64_t>& expert_units, int64_t m) {
  const ParallelConfig& p = job.parallel;
  const int64_t ne = job.model.is_moe() ? p.expert_dp() : 1;
  if (ne <= 1 || expert <= 0) return 0;
  const int64_t gbytes = expert * dtype_bytes(job.training.grad_reduce_dtype);
  if (p.zero == 0) return collective_concave_lower_micros(net, g, CollectiveType::kAllReduce, gbytes);
  double t = collective_micros(net, g, CollectiveType::kReduceScatter, gbytes);
  if (p.zero < 3) return t + expert_param_gather_us(job, net, g, expert, ne);
  for (int64_t u : expert_units) {
    const int64_t ub = u * dtype_bytes(job.training.dtype);
    t += 2.0 * static_cast<double>(m) * collective_micros(net, g, CollectiveType::kAllGather, (ub + ne - 1) / ne);
  }
  return t;
}

// Per stage, the saved-activation peak over the schedule (bytes). Layouts
// that differ only in ZeRO, the shard group or the rank order share it:
// keyed by the proxy and (pp, vp, schedule, dp), which fix the chunks and
// the micro-batch count.
using PeakKey = std::tuple<int, int64_t, int64_t, int, int64_t>;
using PeakCache = std::map<PeakKey, std::vector<int64_t>>;

// The schedule, and whether the end chunks hold no layers (their layout
// differs from the balanced one): what PeakKey needs beside pp, vp, dp.
int chunk_kind(const Job& job) {
  const std::vector<int64_t>& pl = job.parallel.pipeline_layout;
  return static_cast<int>(job.training.schedule) + (!pl.empty() && pl.front() == 0 ? 100 : 0) +
         (ep_overlap_of(job) ? 1000 : 0);  // the EP overlap's schedule holds one more micro-batch
}
// The same of a layout's job (layout_job gives a layout with empty ends,
// and only those, a pipeline layout that starts with 0).
int chunk_kind_of(const PlanLayout& l) {
  return static_cast<int>(l.schedule) + (l.empty_ends && l.pp * l.vp > 2 ? 100 : 0);
}

Estimate estimate(const Job& job, const Proxy& px, const NetworkModel* net, PeakCache* cache = nullptr,
                  int proxy_index = -1, bool count_buckets = true, bool expert_dp_bound = true,
                  DpShapes* shapes = nullptr) {
  Estimate e;
  if (!px.ok) return e;
  std::vector<int64_t>* peaks = nullptr;
  bool have_peaks = false;
  if (cache) {
    const PeakKey key{proxy_index, job.parallel.pp, job.parallel.virtual_stages, chunk_kind(job), job.parallel.dp};
    auto [it, added] = cache->try_emplace(key);
    peaks = &it->second;
    have_peaks = !added;
  }
  const ParallelConfig& p = job.parallel;
  const TrainingConfig& t = job.training;
  const int64_t L = job.model.num_layers, v = p.virtual_stages, nv = p.pp * v;
  const int64_t m = t.num_micro_batches(p);
  const int64_t group = p.shard_degree(), expert_group = job.model.is_moe() ? p.expert_dp() : 1;
  // fill / drain: the first chunks' forward / input-gradient backward of
  // the stages before this one, one micro-batch each.
  double fill = 0, drain = 0, best = 0, max_comm = 0;
  const bool has_drain = t.schedule != Schedule::kZeroBubble;
  const bool comm_bound = net && !net->astra && net->algorithm != "hierarchical";
  const bool megatron = comm_bound;  // the default simulation's streams (sim/simulate.h SimStreams)
  // Rank 0's edp group (MoE), once per layout: up to thousands of members.
  const GroupShape edp =
      comm_bound && expert_dp_bound && expert_group > 1 ? expert_dp_group_shape(*net, p) : GroupShape{};
  int64_t prev_dense = -1, prev_buckets = -1;
  std::vector<int64_t> prev_units;
  double prev_dp_us = 0, prev_gather_us = 0;
  for (int64_t st = 0; st < p.pp; ++st) {
    const std::vector<Chunk> chunks = stage_chunks(L, p.pp, v, p.pipeline_layout, st);
    std::vector<ChunkSums> cs;
    int64_t dense = 0, expert = 0, buckets = 0;
    double busy = 0, comm = 0, gather = 0, trail = 0;
    std::vector<int64_t> units;  // FSDP units: the layers, the embedding, the head
    std::vector<int64_t> expert_units;  // the layers' routed experts (gathered apart, over edp)
    for (const Chunk& c : chunks) {
      cs.push_back(chunk_sums(px, c, nv, job.model.last_stage_embeds()));
      dense += cs.back().params_dense;
      expert += cs.back().params_expert;
      if (count_buckets && job.training.grad_reduce_overlapped(job.parallel)) buckets += cs.back().big_grads;
      // Megatron-LM's streams (the default simulation): tp/cp collectives
      // run on the compute stream, so all of their time adds to it; under
      // ASTRA-sim's rules (one communication stream) only the waits do, and
      // the communication stream carries them beside the dp reductions.
      const double on_compute = megatron ? cs.back().comm_us : cs.back().serial_us;
      busy += (cs.back().fb_us + on_compute) * static_cast<double>(m);
      if (!megatron) comm += cs.back().comm_us * static_cast<double>(m);
      trail = std::max(trail, cs.back().fb_us - cs.back().f_us - cs.back().bc_us + on_compute);
      if (comm_bound && job.parallel.zero == 3) {
        for (int64_t l = c.first_layer; l < c.end_layer; ++l) units.push_back(layer_part(px, l).params_dense);
        for (int64_t l = c.first_layer; l < c.end_layer; ++l)
          if (layer_part(px, l).params_expert > 0) expert_units.push_back(layer_part(px, l).params_expert);
        if (cs.back().pre_post_dense > 0) units.push_back(cs.back().pre_post_dense);
      }
    }
    if (comm_bound && expert_dp_bound) comm += expert_dp_comm_bound(job, *net, edp, expert, expert_units, m);
    // The middle stages of a pipeline hold the same parameters: their dp
    // terms are the previous stage's (the same function of the same inputs).
    const bool same_dp = st > 0 && dense == prev_dense && buckets == prev_buckets && units == prev_units;
    if (!same_dp) {
      prev_dp_us = comm_bound ? dp_comm_bound(job, *net, dense, buckets, units, m, shapes) : 0;
      prev_gather_us = 0;
      // ZeRO 1/2 all-gather the updated parameters after the optimizer
      // step, which starts after the stage's last compute node.
      const int64_t n = job.parallel.dp * job.parallel.cp;
      if (comm_bound && (job.parallel.zero == 1 || job.parallel.zero == 2) && n > 1 && dense > 0) {
        const int64_t wbytes = dense * dtype_bytes(t.dtype);
        prev_gather_us = collectives_us(*net, dp_group_shape(*net, job.parallel, n, 1, shapes),
                                        CollectiveType::kAllGather, (wbytes + n - 1) / n, buckets);
      }
      prev_dense = dense, prev_buckets = buckets, prev_units = units;
    }
    if (comm_bound) comm += prev_dp_us;
    gather = prev_gather_us;
    // ... and the routed experts' over edp, on the same stream.
    if (comm_bound && expert_dp_bound && (job.parallel.zero == 1 || job.parallel.zero == 2) && expert > 0 &&
        expert_group > 1)
      gather += expert_param_gather_us(job, *net, edp, expert, expert_group);
    max_comm = std::max(max_comm, comm);
    // The stage's compute runs on one stream, after micro-batch 0's forward
    // went through the first chunk of every earlier stage; ZeRO's gather
    // follows its last compute. Without zero-bubble's deferred weight
    // gradients, the gradient of the last micro-batch leaves the stage at
    // most `trail` (the weight-gradient and recompute work of one chunk)
    // before its compute ends and then crosses the input-gradient chain of
    // the first chunk of every earlier stage.
    best = std::max(best, fill + busy + gather);
    if (has_drain && st > 0) best = std::max(best, fill + busy - trail + drain);
    if (!cs.empty()) fill += cs.front().f_us, drain += cs.front().bc_us;
    // summary.json's memory formula (api/summary.cc).
    const int64_t local = dense + expert;
    auto sharded = [&](int64_t bpp, int64_t stage) {
      if (p.zero < stage) return local * bpp;
      return (dense * bpp + group - 1) / group + (expert * bpp + expert_group - 1) / expert_group;
    };
    const int64_t static_bytes = sharded(dtype_bytes(t.dtype), 3) + sharded(dtype_bytes(t.grad_reduce_dtype), 2) +
                                 sharded(t.optimizer_bytes_per_param, 1);
    // Saved activations over the schedule, as lowering counts them.
    int64_t peak = 0;
    if (have_peaks) peak = (*peaks)[static_cast<size_t>(st)];
    else {
      const bool split_w = t.schedule == Schedule::kZeroBubble;
      int64_t alive = 0;
      for (const Step& s : pipeline_schedule(t.schedule, p.pp, v, st, m, ep_overlap_of(job))) {
        const ChunkSums& c = cs[static_cast<size_t>(s.chunk)];
        const int64_t w = split_w ? c.for_w : 0;
        if (s.kind == StepKind::kForward) alive += c.saved;
        if (s.kind == StepKind::kBackward) alive -= c.saved - w;
        if (s.kind == StepKind::kWeight) alive -= w;
        peak = std::max(peak, alive);
      }
      if (peaks) peaks->push_back(peak);
    }
    e.lower = std::max(e.lower, static_bytes + peak);
    e.upper = std::max(e.upper, static_bytes + peak + px.transient);
  }
  // The stream that carries the dp reductions (with ASTRA-sim's rules, all
  // communication) runs its collectives one at a time.
  e.bound_us = std::max(best, max_comm);
  e.ok = true;
  return e;
}

// Rank distance between consecutive pipeline stages under the job's order.
int64_t pp_stride(const ParallelConfig& p) {
  int64_t stride = 1;
  for (const std::string& a : p.order) {
    if (a == "pp") return stride;
    stride *= a == "tp" ? p.tp : a == "cp" ? p.cp : a == "dp" ? p.dp : 1;
  }
  return stride;
}

// A tighter lower bound of the simulated step (µs): every stage's schedule
// (pipeline_schedule, the order lowering emits the steps in) replayed with
// lower bounds of each step's time, the waits between stages included.
// What the replay relies on, per stage (trace/lower.cc, sim/simulate.h):
// compute nodes form one chain in program order (each depends on the
// previous one), so a step ends no earlier than the previous step's end
// plus its compute (and, under Megatron's streams, the tp/cp collectives
// that share the compute stream); a forward step's first node waits for
// the activation of the previous virtual stage (sent after that step's
// last forward op: at least its compute after its own arrival, at least
// its end less its collectives); a backward step's gradient-dependent ops
// (all but recomputed forward ops) wait for the next virtual stage's
// input gradient, which leaves at least `trail` (weight-gradient,
// recompute and collective time) before that step ends and at least its
// input-gradient chain after its own arrival. Point-to-point transfers
// count zero. With ZeRO-3 (FSDP) every layer unit is all-gathered on the
// data-parallel stream before its first weight-reading node, one gather
// at a time, and a unit's gather waits for the first weight-reading node
// of the unit before it in the same phase and micro-batch (zero.cc's
// after_op): gathers slower than a layer's compute show up as waits.
// Every quantity is at most the simulator's; every wait one it imposes.
double replay_bound_us(const Job& job, const Proxy& px, const NetworkModel* net, bool experts = true,
                       DpShapes* shapes = nullptr) {
  const ParallelConfig& p = job.parallel;
  const TrainingConfig& t = job.training;
  const int64_t L = job.model.num_layers, v = p.virtual_stages, nv = p.pp * v;
  const int64_t m = t.num_micro_batches(p);
  if (m <= 0 || m > (int64_t{1} << 22) || nv * m > (int64_t{1} << 24)) return 0;
  const bool megatron = net && !net->astra && net->algorithm != "hierarchical";
  const bool zb = t.schedule == Schedule::kZeroBubble;
  const int64_t sg = p.shard_degree();
  const bool fsdp = megatron && p.zero == 3 && sg > 1;
  const bool every_round = megatron && p.zero >= 2 && m > 1;
  const bool write_times = !zb && !ep_overlap_of(job);  // rounds released at their gradients' writes
  // Gradient buckets of dp_bucket_mb (the proxy's big_grads) only where
  // they are reduced during the backward; otherwise one bucket.
  const bool overlapped = t.grad_reduce_overlapped(p);
  auto buckets_of = [&](int64_t l) { return overlapped ? layer_part(px, l).big_grads() : 0; };
  // ZeRO-3's reductions on the replayed data-parallel stream: only the
  // buckets a layer's gradients of at least dp_bucket_mb close (each closes
  // its bucket when written, within the layer's backward, and the bucket
  // is queued behind the next unit's gathers, as lowering queues it), each
  // at least a reduce-scatter of that gradient: its fixed time plus its
  // bytes at the collective's asymptotic rate (time concave and piecewise
  // affine in the size: the last piece's slope is below every secant).
  // Smaller gradients share buckets that may close a layer later; leaving
  // them out keeps every replayed item at or after its place in the
  // simulator's chain.
  const GroupShape round_shape =
      (every_round || fsdp) && sg > 1 ? dp_group_shape(*net, p, sg, 1, shapes) : GroupShape{};
  // Per proxy layer, each big gradient's (write time from the unit's
  // start, reduce-scatter of that gradient alone: its bucket holds it and
  // maybe more, and the time is nondecreasing in the size), once per kind.
  std::vector<std::vector<std::pair<double, double>>> round_items(px.layers.size());
  std::vector<char> round_done(px.layers.size(), 0);
  auto rounds_of = [&](int64_t l) -> const std::vector<std::pair<double, double>>& {
    const size_t k = static_cast<size_t>(px.layer_of[static_cast<size_t>(l)]);
    if (!round_done[k]) {
      round_done[k] = 1;
      if (round_shape.n > 1)
        for (const auto& [at, b] : px.layers[k].big_grad_writes)
          round_items[k].push_back({at, collective_micros(*net, round_shape, CollectiveType::kReduceScatter, b)});
    }
    return round_items[k];
  };
  // MoE: the routed experts' gradients and ZeRO collectives go over the
  // expert data-parallel group, on the same stream (expert_dp_comm_bound).
  const int64_t ne = experts && megatron && job.model.is_moe() ? p.expert_dp() : 1;
  const GroupShape edp_shape = ne > 1 ? expert_dp_group_shape(*net, p) : GroupShape{};
  std::vector<double> gather_us(px.layers.size(), 0), expert_gather_us(px.layers.size(), 0);
  if (fsdp) {
    const GroupShape shard = dp_group_shape(*net, p, sg, 1, shapes);
    for (size_t k = 0; k < px.layers.size(); ++k) {
      const int64_t ub = px.layers[k].params_dense * dtype_bytes(t.dtype);
      if (ub > 0) gather_us[k] = collective_micros(*net, shard, CollectiveType::kAllGather, (ub + sg - 1) / sg);
      // A unit's experts are gathered right after its dense weights
      // (parallel/zero.cc), before the next unit's gathers.
      const int64_t eb = px.layers[k].params_expert * dtype_bytes(t.dtype);
      if (ne > 1 && eb > 0)
        expert_gather_us[k] = collective_micros(*net, edp_shape, CollectiveType::kAllGather, (eb + ne - 1) / ne);
    }
  }
  auto layer_index = [&](int64_t l) { return static_cast<size_t>(px.layer_of[static_cast<size_t>(l)]); };  // as layer_part
  auto gather_of = [&](int64_t l) { return gather_us[layer_index(l)]; };
  auto expert_gather_of = [&](int64_t l) { return expert_gather_us[layer_index(l)]; };
  struct UnitTimes {
    double c = 0, prefix = 0, post = 0, gather = 0, expert_gather = 0;  // µs
  };
  // Per phase (F, B, W) of a part: stream time, compute before and from
  // the first weight reader.
  auto times = [&](const Part& q, StepKind k, double g) {
    UnitTimes u;
    if (k == StepKind::kForward) {
      u.c = q.f_us + (megatron ? q.f_comm_us : 0);
      u.post = q.f_post_us;
      u.prefix = q.f_us - q.f_post_us;
    } else if (k == StepKind::kBackward && !zb) {
      u.c = q.fb_us - q.f_us + (megatron ? q.comm_us - q.f_comm_us : 0);
      u.post = q.b_post_us;
      u.prefix = q.fb_us - q.f_us - q.b_post_us;
    } else if (k == StepKind::kBackward) {
      u.c = q.bc_us + q.rc_us;
      u.post = q.b_post_nw_us;
      u.prefix = u.c - q.b_post_nw_us;
    } else {
      u.c = q.fb_us - q.f_us - q.bc_us - q.rc_us;
      g = 0;
    }
    u.prefix = std::max(0.0, u.prefix);
    u.gather = g;
    return u;
  };
  auto layer_times = [&](int64_t l, StepKind k) {
    UnitTimes u = times(layer_part(px, l), k, gather_of(l));
    if (k != StepKind::kWeight) u.expert_gather = expert_gather_of(l);
    return u;
  };
  const int64_t n = p.dp * p.cp;
  const double nan = -1;
  std::vector<double> fsend(static_cast<size_t>(nv * m), nan), bsend(fsend);
  struct StageState {
    std::vector<Chunk> chunks;
    std::vector<ChunkSums> sums;
    std::vector<Step> steps;
    size_t next = 0;
    double clock = 0, dp_stream = 0;
    std::vector<double> fu_f, fu_b;  // per (chunk, mb): the first reader of the step's last gathered unit ends
    double gather_after = 0;         // ZeRO 1/2: the parameter all-gather after the optimizer step
    int64_t dense = 0;               // the stage's dense parameters (layers, embedding, head)
    double p2p_up = 0, p2p_down = 0;  // a boundary activation / gradient to the next / previous stage
    StepRange async;  // steps whose sends do not hold the compute stream
    // Per chunk, the stage's last step that computes its weight gradients
    // (B, or W with zero-bubble).
    std::vector<size_t> final_step;
    // What the data-parallel stream must carry, each no earlier than `at`
    // (µs): a layer's gradient reductions (released when its last weight
    // gradients can be final at the earliest: the end of the unit before
    // it in the chain) or a ZeRO-3 gather (no earlier than the first
    // reader of the unit before it).
    struct DpItem {
      double at;
      int64_t params, buckets;  // reductions
      double fixed_us;          // gathers
      int64_t expert_params = 0;  // routed experts' reductions (over edp)
      // ZeRO 2/3's reduce-scatters of an earlier micro-batch's gradients
      // (trace/lower.cc, partial_reduces): over the shard group only, no
      // gather or replica all-reduce of their own.
      int64_t round_params = 0, round_buckets = 0, round_expert_params = 0;
    };
    int64_t expert = 0;  // the stage's routed-expert parameters
    std::vector<DpItem> dp_items;
    // ZeRO-3's rounds (earlier micro-batches' reduce-scatters) waiting for
    // the next gather, as lowering queues them (trace/lower.cc,
    // flush_partials): (release, time) in order, both lower bounds.
    std::vector<std::pair<double, double>> rounds_pending;
    // The replayed data-parallel stream's items as (start, end), in order
    // and disjoint (each starts no earlier than the one before ends).
    std::vector<std::pair<double, double>> dp_busy;
    // Runs `us` on the data-parallel stream from `start` (>= its end).
    void occupy(double start, double us) {
      dp_busy.push_back({start, start + us});
      dp_stream = start + us;
    }
  };
  std::vector<StageState> stages(static_cast<size_t>(p.pp));
  for (int64_t st = 0; st < p.pp; ++st) {
    StageState& S = stages[static_cast<size_t>(st)];
    S.chunks = stage_chunks(L, p.pp, v, p.pipeline_layout, st);
    int64_t dense = 0, buckets = 0;
    for (const Chunk& c : S.chunks) {
      S.sums.push_back(chunk_sums(px, c, nv, job.model.last_stage_embeds()));
      dense += S.sums.back().params_dense;
      if (overlapped) buckets += S.sums.back().big_grads;
    }
    S.dense = dense;
    S.steps = pipeline_schedule(t.schedule, p.pp, v, st, m, ep_overlap_of(job));
    S.final_step.assign(static_cast<size_t>(v), SIZE_MAX);
    for (size_t i = 0; i < S.steps.size(); ++i)
      if (S.steps[i].kind == (zb ? StepKind::kWeight : StepKind::kBackward))
        S.final_step[static_cast<size_t>(S.steps[i].chunk)] = i;
    // Megatron's streams put pipeline sends on the compute stream: each
    // holds it for its transfer time (sim/simulate.cc), here rank 0's
    // pipeline's links and the smallest the message can be: the hidden
    // state of one micro-batch, sharded over cp and at most over tp.
    if (megatron && p.pp > 1) {
      const int64_t bytes = t.micro_batch_size * (t.seq_len / std::max<int64_t>(1, p.cp)) * job.model.hidden *
                            dtype_bytes(t.dtype) / std::max<int64_t>(1, p.tp);
      const int64_t stride = pp_stride(p);
      S.p2p_up = p2p_micros(*net, st * stride, ((st + 1) % p.pp) * stride, bytes);
      S.p2p_down = p2p_micros(*net, st * stride, ((st + p.pp - 1) % p.pp) * stride, bytes);
      // overlap_p2p_comm (interleaved only, as api.cc lowers it): the sends
      // of the steady 1F1B phase run beside the compute stream (trace/lower.cc).
      if (t.overlap_p2p_comm && t.schedule == Schedule::kInterleaved && v > 1) {
        S.async = pipeline_steady_steps(Schedule::kInterleaved, p.pp, v, st, m, ep_overlap_of(job));
      }
    }
    if (fsdp) {
      S.fu_f.assign(static_cast<size_t>(v * m), 0);
      S.fu_b = S.fu_f;
    }
    if (megatron && (p.zero == 1 || p.zero == 2) && n > 1 && dense > 0)
      S.gather_after = collectives_us(*net, dp_group_shape(*net, p, n, 1, shapes), CollectiveType::kAllGather,
                                      (dense * dtype_bytes(t.dtype) + n - 1) / n, buckets);
    // HSDP: each gradient shard is then summed over the replicas, in the
    // optimizer phase (after the stage's last compute node): at least one
    // all-reduce of all of them (a collective's time is affine in its size).
    if (megatron && p.zero >= 1 && sg > 1 && sg < n && dense > 0)
      S.gather_after += collectives_us(*net, dp_group_shape(*net, p, n / sg, sg, shapes), CollectiveType::kAllReduce,
                                       (dense * dtype_bytes(t.grad_reduce_dtype) + sg - 1) / sg, buckets);
    // ZeRO 1/2 gather the updated routed experts over edp too.
    for (const ChunkSums& c : S.sums) S.expert += c.params_expert;
    if ((p.zero == 1 || p.zero == 2) && ne > 1 && S.expert > 0)
      S.gather_after += expert_param_gather_us(job, *net, edp_shape, S.expert, ne);
  }
  // The pending rounds run on the data-parallel stream, each no earlier
  // than its release.
  auto flush_rounds = [](StageState& S) {
    for (const auto& [at, us] : S.rounds_pending) S.occupy(std::max(S.dp_stream, at), us);
    S.rounds_pending.clear();
  };
  // Runs one step of a stage whose arrival (µs, lower bound) is known.
  auto run = [&](StageState& S, const Step& s, double a) {
    const int64_t ci = s.chunk;
    const Chunk& c = S.chunks[static_cast<size_t>(ci)];
    const ChunkSums& cs = S.sums[static_cast<size_t>(ci)];
    const int64_t vs = c.virtual_stage;
    const size_t slot = static_cast<size_t>(vs * m + s.mb);
    const bool fwd = s.kind == StepKind::kForward, wstep = s.kind == StepKind::kWeight;
    const bool final = S.next == S.final_step[static_cast<size_t>(s.chunk)];
    // ZeRO 2/3 with several micro-batches: the weight-gradient steps
    // before the final one reduce-scatter their gradients too.
    const bool round = !final && every_round && s.kind == (zb ? StepKind::kWeight : StepKind::kBackward);
    const bool async_send = S.async.contains(S.next);
    double clock = fwd ? std::max(S.clock, a) : S.clock;
    // Units in the step's order: the embedding side, the layers, the head
    // side (reversed for the backward); only the layers are gathered here.
    const bool has_pre = vs == 0, has_post = vs == nv - 1;
    std::vector<double>* fu = fsdp ? (fwd ? &S.fu_f : &S.fu_b) : nullptr;
    double after = 0;
    if (fu) {
      // The unit before the first gathered one in graph order: the last
      // unit of the previous chunk (forward) / the next chunk (backward).
      const int64_t prev = fwd ? ci - 1 : ci + 1;
      const bool skipped_side = fwd ? has_pre : has_post;
      if (!skipped_side && prev >= 0 && prev < v) after = (*fu)[static_cast<size_t>(prev * m + s.mb)];
    }
    auto unit = [&](const UnitTimes& u, bool gathered, int64_t layer = -1) {
      // A chunk's last weight gradients: their reductions are released
      // no earlier than the end of the unit before (the compute chain).
      if (final && layer >= 0 && n > 1)
        S.dp_items.push_back({clock, layer_part(px, layer).params_dense, buckets_of(layer), 0});
      if (final && layer >= 0 && ne > 1 && layer_part(px, layer).params_expert > 0)
        S.dp_items.push_back({clock, 0, 0, 0, layer_part(px, layer).params_expert});
      if (round && layer >= 0 && sg > 1 && layer_part(px, layer).params_dense > 0)
        S.dp_items.push_back(
            {clock, 0, 0, 0, 0, layer_part(px, layer).params_dense, buckets_of(layer)});
      if (round && layer >= 0 && ne > 1 && layer_part(px, layer).params_expert > 0)
        S.dp_items.push_back({clock, 0, 0, 0, 0, 0, 0, layer_part(px, layer).params_expert});
      // With ZeRO-3 this unit's reductions (an earlier micro-batch's round,
      // or the last micro-batch's buckets) wait on the data-parallel stream
      // for the next gather (pushed after this unit's own gather below).
      // Each is released when its gradient is written: in a backward step
      // (not zero-bubble's, whose W steps write them, nor with the EP
      // overlap, whose combined steps interleave another micro-batch's
      // forward) no earlier than the unit's start plus the unit's backward
      // compute up to its writer (the compute chain runs the unit's nodes
      // in the proxy's order).
      const bool reduces = (round || final) && fu && layer >= 0 && overlapped;  // ZeRO-3 defers the last round's too
      const double released = clock;
      auto queue_rounds = [&] {
        if (!reduces) return;
        for (const auto& [at, us] : rounds_of(layer))
          if (us > 0) S.rounds_pending.push_back({released + (write_times ? at : 0.0), us});
      };
      if (!gathered || !fu || wstep) {
        clock += u.c;
        queue_rounds();
        return;
      }
      if (u.gather + u.expert_gather > 0) S.dp_items.push_back({after, 0, 0, u.gather + u.expert_gather});
      const double ge = std::max(S.dp_stream, after) + u.gather;
      S.occupy(ge - u.gather, u.gather + u.expert_gather);
      flush_rounds(S);
      queue_rounds();
      after = std::max(clock + u.prefix, ge);  // the first reader's start, a lower bound of its end
      // The unit's routed-expert GEMMs read the expert gather's output, and
      // the unit's last node follows them in the compute chain.
      clock = std::max({clock + u.c, ge + u.post, ge + u.expert_gather});
    };
    const StepKind k = s.kind;
    if (fwd) {
      if (has_pre) unit(times(px.pre, k, 0), false);
      for (int64_t l = c.first_layer; l < c.end_layer; ++l) unit(layer_times(l, k), true, -1);
      if (has_post) unit(times(px.post, k, 0), false);
    } else {
      if (has_post) unit(times(px.post, k, 0), false);
      for (int64_t l = c.end_layer - 1; l >= c.first_layer; --l) unit(layer_times(l, k), true, l);
      if (has_pre) unit(times(px.pre, k, 0), false);
    }
    flush_rounds(S);  // the step's last rounds, at its end (as lowering flushes them)
    if (wstep) {
      S.clock = clock;
      return;
    }
    if (fu) (*fu)[static_cast<size_t>(ci * m + s.mb)] = after;
    if (fwd) {
      clock = std::max(clock, a + cs.f_us);
      if (!has_post) {
        const double sent = std::max(a + cs.f_us, clock - (megatron ? cs.f_comm_us : 0));
        fsend[slot] = sent + S.p2p_up;
        if (!async_send) clock += S.p2p_up;  // the send holds the compute stream
      }
    } else {
      const double dep = zb ? cs.bc_us : cs.fb_us - cs.f_us - cs.rc_us;
      const double stream = zb ? cs.bc_us + cs.rc_us : cs.fb_us - cs.f_us + (megatron ? cs.comm_us - cs.f_comm_us : 0);
      clock = std::max(clock, a + dep);
      if (!has_pre) {
        // The gradient is sent when the first layer's input gradient is
        // done: only that layer's other backward work can follow (layers
        // run backward one after the other in the chain).
        double trail = stream - cs.bc_us;
        if (c.end_layer > c.first_layer) {
          const Part& first = layer_part(px, c.first_layer);
          trail = times(first, StepKind::kBackward, 0).c - first.bc_us;
        }
        const double sent = std::max(a + cs.bc_us, clock - trail);
        bsend[slot] = sent + S.p2p_down;
        if (!async_send) clock += S.p2p_down;
      }
    }
    S.clock = clock;
  };
  size_t left = 0;
  for (const StageState& S : stages) left += S.steps.size();
  while (left > 0) {
    bool moved = false;
    for (StageState& S : stages) {
      while (S.next < S.steps.size()) {
        const Step& s = S.steps[S.next];
        const int64_t vs = S.chunks[static_cast<size_t>(s.chunk)].virtual_stage;
        double a = 0;
        if (s.kind == StepKind::kForward && vs > 0) a = fsend[static_cast<size_t>((vs - 1) * m + s.mb)];
        if (s.kind == StepKind::kBackward && vs < nv - 1) a = bsend[static_cast<size_t>((vs + 1) * m + s.mb)];
        if (a < 0) break;  // its input is not replayed yet
        run(S, s, a);
        ++S.next;
        --left;
        moved = true;
      }
    }
    if (!moved) return 0;  // not a schedule the replay understands: no claim
  }
  // A stage's data-parallel stream runs its collectives one at a time, so
  // it ends no earlier than any release time plus everything released then
  // or later (in whatever order it runs them): the gathers, the gradient
  // reductions (a collective's time is affine in its size, so several take
  // at least one of their total size plus the fixed parts of the buckets
  // counted), and after the stage's last compute node HSDP's replica
  // all-reduces and ZeRO 1/2's gathers of those parameters. Dense
  // parameters only, and with ZeRO 2/3 the reduce-scatters of the earlier
  // micro-batches' gradients (rounds: released where their layer's weight
  // gradients can first be done in that micro-batch; no gather of their own).
  double bound = 0;
  for (StageState& S : stages) {
    bound = std::max(bound, S.clock + S.gather_after);
    // ZeRO-3: the data-parallel stream as replayed (gathers, and the
    // reductions lowering queues behind them, in the simulator's order)
    // ends before the optimizer reads the last reduction.
    bound = std::max(bound, S.dp_stream);
    // ... and what of it is left at the stage's last compute node runs on
    // the one stream beside the gathers and all-reduces that wait for that
    // node (gather_after), in whatever order: each replayed item ends no
    // earlier than replayed, so at a time T the stream still has at least
    // sum over items of min(length, end - T) to run (positive parts); T
    // plus that is nondecreasing in T (the items are disjoint), so the
    // replayed last compute end S.clock, a lower bound of the simulator's,
    // gives a lower bound of the stream's end.
    if (S.gather_after > 0 && !S.dp_busy.empty()) {
      double left_us = 0;
      for (auto it = S.dp_busy.rbegin(); it != S.dp_busy.rend() && it->second > S.clock; ++it)
        left_us += std::min(it->second - it->first, it->second - S.clock);
      bound = std::max(bound, S.clock + left_us + S.gather_after);
    }
    if (!megatron || n <= 1) continue;
    const GroupShape all = dp_group_shape(*net, p, n, 1, shapes);
    const GroupShape shard = p.zero >= 1 && sg < n ? dp_group_shape(*net, p, sg, 1, shapes) : all;
    const GroupShape replica =
        p.zero >= 1 && sg > 1 && sg < n ? dp_group_shape(*net, p, n / sg, sg, shapes) : GroupShape{};
    // Without overlap_grad_reduce every dense gradient of the stage (the
    // embedding's and the head's too) is in one bucket (api.cc: an
    // unbounded bucket size; parallel/buckets.cc), whose one reduction
    // reads all of them: it starts no earlier than the latest release of
    // any layer's gradients, and carries all of the stage's.
    // Likewise the routed experts' gradients, in one bucket over edp.
    if (!t.grad_reduce_overlapped(p)) {
      StageState::DpItem one{-1, 0, 0, 0}, experts{-1, 0, 0, 0};
      std::vector<StageState::DpItem> rest;
      for (const StageState::DpItem& it : S.dp_items) {
        if (it.expert_params > 0) {
          experts.at = std::max(experts.at, it.at);
          experts.expert_params += it.expert_params;
          continue;
        }
        if (it.params <= 0) {
          rest.push_back(it);
          continue;
        }
        one.at = std::max(one.at, it.at);
        one.buckets += it.buckets;
      }
      one.params = S.dense;
      if (one.at >= 0 && one.params > 0) rest.push_back(one);
      if (experts.at >= 0) rest.push_back(experts);
      S.dp_items = std::move(rest);
    }
    std::sort(S.dp_items.begin(), S.dp_items.end(),
              [](const StageState::DpItem& a, const StageState::DpItem& b) { return a.at > b.at; });
    int64_t params = 0, b = 0, eparams = 0, rparams = 0, rb = 0;
    double fixed = 0;
    for (const StageState::DpItem& it : S.dp_items) {
      params += it.params;
      b += it.buckets;
      fixed += it.fixed_us;
      eparams += it.expert_params;
      rparams += it.round_params;
      rb += it.round_buckets;
      eparams += it.round_expert_params;
      double tail = fixed;
      if (rparams > 0 && sg > 1)
        tail += collectives_us(*net, shard, CollectiveType::kReduceScatter, rparams * dtype_bytes(t.grad_reduce_dtype),
                               rb);
      // The experts' reductions over edp (at least one collective of all
      // released then or later: time affine in size), and with ZeRO 1/2
      // the gather of the updated experts after the step.
      if (eparams > 0)
        tail += collective_concave_lower_micros(*net, edp_shape,
                                                p.zero == 0 ? CollectiveType::kAllReduce : CollectiveType::kReduceScatter,
                                                eparams * dtype_bytes(t.grad_reduce_dtype));
      if ((p.zero == 1 || p.zero == 2) && ne > 1 && S.expert > 0)
        tail += expert_param_gather_us(job, *net, edp_shape, S.expert, ne);
      if (params > 0) {
        const int64_t g = params * dtype_bytes(t.grad_reduce_dtype), w = params * dtype_bytes(t.dtype);
        if (p.zero == 0) tail += collectives_us(*net, all, CollectiveType::kAllReduce, g, b);
        else {
          const int64_t k = p.shard_degree();
          if (k > 1) tail += collectives_us(*net, shard, CollectiveType::kReduceScatter, g, b);
          if (k > 1 && k < n) tail += collectives_us(*net, replica, CollectiveType::kAllReduce, (g + k - 1) / k, b);
          if (p.zero < 3) tail += collectives_us(*net, all, CollectiveType::kAllGather, (w + n - 1) / n, b);
        }
      }
      bound = std::max(bound, it.at + tail);
    }
  }
  return bound;
}

// Whether two layouts that differ only in rank order simulate alike: the
// simulator's times depend on the shapes of a rank's groups and the link
// classes of its pipeline peers, so when every rank (by its coordinates)
// has equal group shapes on every axis and equal peer links under both
// orders, the two runs are the same up to renaming the ranks.
// Checked against `stop` once per tp x pp position (a 2^20-rank layout
// takes about a second in all): nullopt when it asked to stop.
std::optional<bool> orders_equivalent(const ParallelConfig& a, const ParallelConfig& b, const NetworkModel& net,
                                      bool tied, const std::function<bool()>& stop) {
  if (net.astra) return false;
  const int64_t T = a.tp, C = a.cp, D = a.dp, P = a.pp, W = T * C * D * P;
  if (W > (int64_t{1} << 20)) return false;
  auto strides = [](const ParallelConfig& p) {
    std::vector<int64_t> st(4, 1);
    int64_t s = 1;
    for (const std::string& ax : p.order) {
      const int i = ax == "tp" ? 0 : ax == "cp" ? 1 : ax == "dp" ? 2 : 3;
      st[static_cast<size_t>(i)] = s;
      s *= i == 0 ? p.tp : i == 1 ? p.cp : i == 2 ? p.dp : p.pp;
    }
    return st;
  };
  const std::vector<int64_t> sa = strides(a), sb = strides(b);
  const int64_t sg = a.zero > 0 ? a.shard_degree() : C * D;
  // Coordinates by canonical index: t + T (c + C (d + D p)).
  auto rank = [&](const std::vector<int64_t>& st, int64_t t, int64_t c, int64_t d, int64_t p) {
    return t * st[0] + c * st[1] + d * st[2] + p * st[3];
  };
  // A group: members listed by coordinates; compare shapes under both orders.
  auto same = [&](const std::vector<std::array<int64_t, 4>>& members) {
    std::vector<int64_t> ra, rb;
    for (const auto& m : members) {
      ra.push_back(rank(sa, m[0], m[1], m[2], m[3]));
      rb.push_back(rank(sb, m[0], m[1], m[2], m[3]));
    }
    std::sort(ra.begin(), ra.end());
    std::sort(rb.begin(), rb.end());
    GroupShapeBuilder ga, gb;
    for (int64_t r : ra) ga.add(net, r);
    for (int64_t r : rb) gb.add(net, r);
    return ga.finish(net) == gb.finish(net);
  };
  std::vector<std::array<int64_t, 4>> m;
  for (int64_t t = 0; t < T; ++t)
    for (int64_t p = 0; p < P; ++p) {
      if (stop && stop()) return std::nullopt;
      // The combined (cp, dp) index j = c + C d: dp, cp x dp, HSDP shard and replica groups.
      for (int64_t c = 0; c < C; ++c) {
        m.clear();
        for (int64_t d = 0; d < D; ++d) m.push_back({t, c, d, p});
        if (D > 1 && !same(m)) return false;
      }
      m.clear();
      for (int64_t j = 0; j < C * D; ++j) m.push_back({t, j % C, j / C, p});
      if (C * D > 1 && C > 1 && D > 1 && !same(m)) return false;
      if (sg > 1 && sg < C * D) {
        // C D / sg shard groups of sg consecutive j, and sg replica groups
        // (HSDP) of the j equal modulo sg, C D / sg members each: every
        // member in one group of each kind, so linear in C D.
        for (int64_t g = 0; g < C * D / sg; ++g) {
          m.clear();
          for (int64_t j = g * sg; j < (g + 1) * sg; ++j) m.push_back({t, j % C, j / C, p});
          if (!same(m)) return false;
        }
        if (C * D / sg > 1)
          for (int64_t r = 0; r < sg; ++r) {
            m.clear();
            for (int64_t j = r; j < C * D; j += sg) m.push_back({t, j % C, j / C, p});
            if (!same(m)) return false;
          }
      }
    }
  for (int64_t t = 0; t < T; ++t)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t d = 0; d < D; ++d) {
        if (d == 0 && stop && stop()) return std::nullopt;
        if (P > 1) {
          m.clear();
          for (int64_t p = 0; p < P; ++p) m.push_back({t, c, d, p});
          if (!same(m)) return false;
          if (tied && !same({{t, c, d, 0}, {t, c, d, P - 1}})) return false;
        }
        for (int64_t p = 0; p + 1 < P; ++p)
          if (link_class(net, rank(sa, t, c, d, p), rank(sa, t, c, d, p + 1)) !=
              link_class(net, rank(sb, t, c, d, p), rank(sb, t, c, d, p + 1)))
            return false;
      }
  return true;
}

// ---------------------------------------------------------------- enumeration

bool allowed_deg(const PlanConstraints& c, int d, int64_t v) {
  if (c.fixed[d] && *c.fixed[d] != v) return false;
  if (c.min[d] && v < *c.min[d]) return false;
  if (c.max[d] && v > *c.max[d]) return false;
  return true;
}

template <typename T>
bool in_list(const std::vector<T>& list, const T& v) {
  return list.empty() || std::find(list.begin(), list.end(), v) != list.end();
}

// One layout of the search: its record only. Its job (layout_job of the
// base job) is built where it is needed, not held: 300,000 layouts of a
// 4,096-GPU space would otherwise hold 300,000 jobs (docs/plan.md, "Budget").
struct Cand {
  PlanLayout l;
  // state
  // kUnexamined: the search stopped (interrupt, time limit) before it
  // decided on this layout.
  enum { kNew, kDivisibility, kMemory, kDominated, kBound, kSimulated, kUnexamined } state = kNew;
  std::string reason;
  int64_t short_by = 0;
  Estimate est;
  int proxy = -1;
  bool refined = false;  // est.bound_us includes the schedule replay (replay_bound_us)
};

// Layouts that differ only in recompute (with fused attention "none" and
// "selective" recompute the same nothing): variants of one row when their
// steps are equal.
// What a row stands for apart from the variants that can time alike: the
// recompute mode (with fused attention "none" and "selective" run the same
// ops) and the rank order (the two orders can build groups of the same
// shapes where orders_equivalent does not prove it, e.g. with experts).
// Rows are collapsed only when their step times are equal as well.
std::string variant_key(const PlanLayout& l) {
  PlanLayout k = l;
  k.recompute = Recompute::kNone;
  k.order = order_of("megatron");
  return layout_label(k, true);
}

// The layouts that build the same programs: the same but for a recompute
// mode that recomputes nothing. Not the rank order: two orders place the
// groups differently, so each is simulated (only the rows of those that
// time alike are collapsed, by variant_key).
std::string build_key(const PlanLayout& l) {
  PlanLayout k = l;
  k.recompute = Recompute::kNone;
  return layout_label(k, true);
}

auto tie_key(const PlanLayout& l) {
  return std::make_tuple(l.tp, l.cp, l.pp, l.vp, schedule_index(l.schedule), l.dp, l.zero, l.shard_group, l.ep,
                         l.expert_tp, static_cast<int>(l.recompute), l.mbs, l.sp ? 0 : 1,
                         order_name(l.order) == "megatron" ? 0 : 1,  // a tie's row is the megatron twin the search keeps
                         l.empty_ends ? 1 : 0);
}

Status check_constraints(const Job& base, const PlanOptions& o) {
  const PlanConstraints& c = o.constraints;
  // The search space is training layouts (cp, ZeRO, pipeline schedules,
  // recomputation): a serving job has none of them, and its figures would
  // be a training step of the serving model. Serving layouts are searched
  // by serve-capacity (--tp-list, --replicas-list).
  if (base.inference())
    return make_error(ErrorCode::kInvalidArgument,
                      "plan searches training layouts; for a serving job use serve-capacity with --tp-list and "
                      "--replicas-list (docs/inference.md)",
                      "mode");
  if (o.gpus < 1 || o.gpus > limits::kMaxDegree)  // a layout's world size has the same cap
    return make_error(ErrorCode::kInvalidArgument,
                      "must be an integer in [1, " + std::to_string(limits::kMaxDegree) + "] (got " +
                          std::to_string(o.gpus) + ")",
                      "gpus");
  for (int d = 0; d < kPlanDegrees; ++d) {
    const std::string n = kPlanDegreeNames[d];
    if (c.min[d] && c.max[d] && *c.min[d] > *c.max[d])
      return make_error(ErrorCode::kInvalidArgument,
                        "min_" + n + " " + std::to_string(*c.min[d]) + " is above max_" + n + " " +
                            std::to_string(*c.max[d]) + ": no " + n + " satisfies both",
                        "plan.min_" + n);
    if (c.fixed[d] && c.max[d] && *c.fixed[d] > *c.max[d])
      return make_error(ErrorCode::kInvalidArgument,
                        n + " " + std::to_string(*c.fixed[d]) + " conflicts with max_" + n + " " +
                            std::to_string(*c.max[d]),
                        "plan." + n);
    if (c.fixed[d] && c.min[d] && *c.fixed[d] < *c.min[d])
      return make_error(ErrorCode::kInvalidArgument,
                        n + " " + std::to_string(*c.fixed[d]) + " conflicts with min_" + n + " " +
                            std::to_string(*c.min[d]),
                        "plan." + n);
  }
  // The fixed world degrees must divide the GPUs.
  int64_t prod = 1;
  std::string names;
  for (int d : {kTp, kPp, kCp, kDp})
    if (c.fixed[d]) {
      prod *= *c.fixed[d];
      names += (names.empty() ? "" : " x ") + std::string(kPlanDegreeNames[d]) + " " + std::to_string(*c.fixed[d]);
    }
  if (o.gpus % prod != 0)
    return make_error(ErrorCode::kInvalidArgument,
                      "gpus " + std::to_string(o.gpus) + " is not divisible by the fixed degrees " + names + " = " +
                          std::to_string(prod),
                      "gpus");
  if (c.fixed[kTp] && c.fixed[kPp] && c.fixed[kCp] && c.fixed[kDp] && prod != o.gpus)
    return make_error(ErrorCode::kInvalidArgument,
                      "the fixed degrees " + names + " = " + std::to_string(prod) + " use " + std::to_string(prod) +
                          " GPUs, not gpus " + std::to_string(o.gpus),
                      "gpus");
  if (!base.model.is_moe() && c.fixed[kEp] && *c.fixed[kEp] != 1)
    return make_error(ErrorCode::kInvalidArgument,
                      base.model.name + " has no experts: ep must be 1 (got ep " + std::to_string(*c.fixed[kEp]) + ")",
                      "plan.ep");
  if (!base.model.is_moe() && c.min[kEp] && *c.min[kEp] > 1)
    return make_error(ErrorCode::kInvalidArgument,
                      base.model.name + " has no experts: ep must be 1 (got min_ep " + std::to_string(*c.min[kEp]) + ")",
                      "plan.min_ep");
  if (c.top < 1) return make_error(ErrorCode::kInvalidArgument, "must be >= 1", "plan.top");
  return ok_status();
}

// Stops early (returns what it has, *stopped = true) once stop() says so;
// asked every 4096 layouts.
// With count (not null) only counts the layouts, storing none.
std::vector<Cand> enumerate(const Job& base, const PlanOptions& o, const std::function<bool()>& stop,
                            bool* stopped, int64_t* count = nullptr) {
  const PlanConstraints& c = o.constraints;
  const ModelConfig& m = base.model;
  const int64_t G = o.gpus, B = base.training.global_batch_size, L = m.num_layers;
  const int64_t node = base.hardware.gpus_per_node > 0 ? base.hardware.gpus_per_node : 8;
  std::vector<std::string> orders = c.orders.empty() ? std::vector<std::string>{"megatron", "llama3"} : c.orders;
  std::vector<int64_t> zeros = c.zero.empty() ? std::vector<int64_t>{0, 1, 2, 3} : c.zero;
  const Recompute rcs[] = {Recompute::kNone, Recompute::kSelective, Recompute::kFull};
  std::vector<Cand> out;
  // Default bounds (docs/plan.md): tp within a node, mbs <= 8, cp <= 16 or,
  // for longer sequences, as long as each rank keeps the chunk of the
  // checked all-gather run (kLowConfidenceCpTokensPerRank, Llama 3's 128K
  // over cp 16): a 1M-token sequence needs cp 32 and more to fit (NeMo's
  // long-sequence table runs cp 32 at 1,024K).
  // A lower bound above that ceiling raises it to the bound (min_cp 32
  // without max_cp searches cp 32, not nothing).
  const int64_t cp_cap = std::max<int64_t>({int64_t{16}, base.training.seq_len / kLowConfidenceCpTokensPerRank,
                                            c.min[kCp] ? *c.min[kCp] : 0});
  for (int64_t tp : divisors(G)) {
    if (!c.fixed[kTp] && !c.max[kTp] && tp > node) continue;
    if (!allowed_deg(c, kTp, tp)) continue;
    for (int64_t cp : divisors(G / tp)) {
      if (!c.fixed[kCp] && !c.max[kCp] && cp > cp_cap) continue;
      if (!allowed_deg(c, kCp, cp)) continue;
      for (int64_t pp : divisors(G / tp / cp)) {
        if (pp > L || !allowed_deg(c, kPp, pp)) continue;
        const int64_t dp = G / tp / cp / pp;
        if (!allowed_deg(c, kDp, dp)) continue;
        // (schedule, vp): pp = 1 runs every schedule as plain accumulation.
        // Interleaved also with the first and last virtual stages holding
        // no layers (the embedding alone, the loss alone: Llama 3 405B's
        // 126 layers over 16 x 8 chunks), where the other chunks split the
        // layers evenly.
        // The third: 0 even or balanced, 1 embedding-only and loss-only
        // ends, 2 the embedding and the loss counted in the split.
        std::vector<std::tuple<Schedule, int64_t, int>> sched;
        if (pp == 1) sched.push_back({Schedule::kOneFOneB, 1, 0});
        else {
          for (Schedule s : {Schedule::kOneFOneB, Schedule::kZeroBubble, Schedule::kGPipe}) sched.push_back({s, 1, 0});
          for (int64_t v : divisors(L / std::max<int64_t>(1, pp)))
            if (v >= 2 && L % (pp * v) == 0) sched.push_back({Schedule::kInterleaved, v, 0});
          // ... and with the embedding and the loss each counted as a layer
          // of the split (Megatron's account_for_embedding_in_pipeline_split
          // and account_for_loss_in_pipeline_split): where pp x vp chunks
          // divide L + 2 into e >= 2 each, the end chunks hold e - 1 layers
          // beside the embedding and the loss, the others e (Megatron-Bridge's
          // Llama 3.1 405B: 126 layers over 8 x 8 chunks, 1, 2 x 62, 1).
          // layout_job's balanced split of L over pp x vp is exactly that
          // (L = pp x vp x e - 2: the pp x vp - 2 extra layers on the middle
          // chunks). e = 1 is the embedding-only and loss-only ends below.
          for (int64_t v = 2; pp * v <= (L + 2) / 2; ++v)
            if ((L + 2) % (pp * v) == 0) sched.push_back({Schedule::kInterleaved, v, 2});
          for (int64_t v = 2; pp * v - 2 <= L; ++v)
            if (L % (pp * v - 2) == 0) sched.push_back({Schedule::kInterleaved, v, 1});
        }
        for (auto [s, v, ends] : sched) {
          if (!in_list(c.schedules, std::string(schedule_name(s))) || !allowed_deg(c, kVp, v)) continue;
          for (int64_t mbs = 1; mbs <= std::max<int64_t>(1, B / dp); ++mbs) {
            if (!c.fixed[kMbs] && !c.max[kMbs] && mbs > 8) break;
            if (!allowed_deg(c, kMbs, mbs)) continue;
            if (B % dp == 0 && (B / dp) % mbs != 0) continue;  // not a layout: the batch does not split
            if (B % dp != 0 && mbs > 1) break;
            for (bool sp : {true, false}) {
              if (sp && tp == 1) continue;
              for (Recompute rc : rcs) {
                if (!in_list(c.recompute, std::string(recompute_name(rc)))) continue;
                // Experts: ep divides E and tp*cp*dp / etp; etp in {tp, 1}.
                std::vector<std::pair<int64_t, int64_t>> experts;
                if (!m.is_moe()) experts.push_back({1, tp});
                else
                  for (int64_t etp : tp == 1 ? std::vector<int64_t>{1} : std::vector<int64_t>{tp, 1})
                    for (int64_t ep : divisors(m.num_experts))
                      if ((tp * cp * dp) % (ep * etp) == 0 && allowed_deg(c, kEp, ep)) experts.push_back({ep, etp});
                for (auto [ep, etp] : experts)
                  for (int64_t z : zeros) {
                    // Shard group: all of dp x cp; with ZeRO-3 also HSDP
                    // groups of node x 2^k ranks.
                    std::vector<int64_t> groups = {dp * cp};
                    if (z == 3)
                      for (int64_t g = node; g < dp * cp; g *= 2)
                        if ((dp * cp) % g == 0) groups.push_back(g);
                    if (z > 0 && dp * cp == 1) continue;  // nothing to shard: same as ZeRO 0
                    for (int64_t sg : groups)
                      for (const std::string& on : orders) {
                        if (on == "llama3" && (pp == 1 || dp == 1)) continue;  // same ranks as megatron
                        if (count) {
                          if (++*count % 65536 == 0 && stop()) {
                            *stopped = true;
                            return out;
                          }
                          continue;
                        }
                        Cand cd;
                        cd.l.tp = tp, cd.l.cp = cp, cd.l.pp = pp, cd.l.vp = v, cd.l.dp = dp, cd.l.zero = z;
                        cd.l.shard_group = sg, cd.l.ep = ep, cd.l.expert_tp = etp, cd.l.mbs = mbs, cd.l.sp = sp;
                        cd.l.schedule = s, cd.l.recompute = rc, cd.l.order = order_of(on);
                        cd.l.empty_ends = ends == 1;
                        cd.l.counted_ends = ends == 2;
                        out.push_back(std::move(cd));
                        if (out.size() % 4096 == 0 && stop()) {
                          *stopped = true;
                          return out;
                        }
                      }
                  }
              }
            }
          }
        }
      }
    }
  }
  return out;
}

// ---------------------------------------------------------------- evaluation

struct Eval {
  bool done = false, fits = false, failed = false, cancelled = false;
  Error error;
  PlanCandidate c;
};


// summary.json's rounding of the time figures (9 significant digits), so
// the plan reports the numbers `inspect` / `generate` print.
double sig9(double v) {
  if (v == 0 || !std::isfinite(v)) return 0;
  char b[40];
  std::snprintf(b, sizeof b, "%.9g", v);
  return std::strtod(b, nullptr);
}

// Builds the layout's programs without summary.json (whose bubble replay
// the plan does not read) and simulates them once: the same figures as
// summary.json's stages[].memory_bytes.peak_live and time.*.
Eval evaluate(const Cand& cd, const Job& job, int64_t usable, const PlanBackend& backend) {
  Eval ev;
  ev.done = true;
  Result<std::unique_ptr<const PlanBuild>> gen = backend.build(job, /*summary=*/false);
  if (!gen.ok()) {
    ev.failed = true;
    ev.cancelled = gen.error().code == ErrorCode::kCancelled;
    ev.error = gen.error();
    return ev;
  }
  const PlanBuild& s = **gen;
  const Bindings& bind = s.bindings();
  PlanCandidate& c = ev.c;
  c.layout = cd.l;
  c.job = job;
  const ParallelConfig& par = job.parallel;
  const TrainingConfig& tr = job.training;
  const int64_t group = par.shard_degree(), expert_group = job.model.is_moe() ? par.expert_dp() : 1;
  for (int64_t st = 0; st < s.num_stages(); ++st) {
    int64_t local = 0, expert = 0;
    for (const Tensor& t : s.graph_of(st).tensors) {
      if (!is_weight(t)) continue;
      Result<int64_t> n = t.local_numel().eval(bind, t.name);
      if (!n.ok()) {
        ev.failed = true;
        ev.error = n.error();
        return ev;
      }
      local += *n;
      if (t.expert) expert += *n;
    }
    const int64_t dense = local - expert;
    auto sharded = [&](int64_t bpp, int64_t stage) {
      return zero_state_bytes(dense, expert, bpp, par.zero, stage, group, expert_group);
    };
    // As summary.json's peak_live: FP8 jobs hold their weights' FP8 copies too
    // (with fp8_params, in place of those weights' high-precision copies).
    Result<int64_t> fp8_copies =
        fp8_weight_copies_bytes(s.graph_of(st), bind, tr.fp8_recipe, par.zero, group, expert_group);
    Result<Fp8WeightElems> fp8_held = tr.fp8_params ? fp8_weight_elems(s.graph_of(st), bind, tr.fp8_recipe)
                                                    : Result<Fp8WeightElems>(Fp8WeightElems{});
    if (!fp8_copies.ok() || !fp8_held.ok()) {
      ev.failed = true;
      ev.error = !fp8_copies.ok() ? fp8_copies.error() : fp8_held.error();
      return ev;
    }
    const int64_t held_bytes = zero_state_bytes(dense - fp8_held->dense, expert - fp8_held->expert,
                                                dtype_bytes(tr.dtype), par.zero, 3, group, expert_group);
    const int64_t live = held_bytes + *fp8_copies + sharded(dtype_bytes(tr.grad_reduce_dtype), 2) +
                         sharded(tr.optimizer_bytes_per_param, 1) + s.program_of(st).live_activation_peak;
    c.peak_memory_bytes = std::max(c.peak_memory_bytes, live);
  }
  c.memory_capacity_bytes = static_cast<int64_t>(job.hardware.memory_bytes);
  c.usable_memory_bytes = usable;
  c.bound_seconds = cd.est.bound_us / 1e6;
  ev.fits = c.peak_memory_bytes <= usable;
  // Over the memory: the search rejects it on the peak alone and never
  // reads its step, so it is not simulated.
  if (!ev.fits) return ev;
  Result<PlanTiming> rep = s.simulate();
  if (!rep.ok()) {
    ev.failed = true;
    ev.cancelled = rep.error().code == ErrorCode::kCancelled;
    ev.error = rep.error().code != ErrorCode::kInternal
                   ? rep.error()
                   : make_error(ErrorCode::kInternal, "simulation did not complete: " + rep.error().message);
    return ev;
  }
  c.step_seconds = sig9(rep->step_seconds);
  c.mfu = sig9(rep->mfu);
  c.tokens_per_second = sig9(rep->tokens_per_second);
  c.tokens_per_second_per_gpu = c.tokens_per_second / static_cast<double>(job.parallel.world_size());
  c.bubble_fraction = sig9(rep->bubble_fraction);
  for (int k = 0; k < 5; ++k) c.exposed[k] = sig9(rep->exposed[k]);
  return ev;
}

std::string gib(int64_t b) {
  char buf[32];
  const double g = static_cast<double>(b) / (1024.0 * 1024.0 * 1024.0);
  if (g < 1 && g > -1) std::snprintf(buf, sizeof buf, "%.0f MiB", g * 1024);
  else std::snprintf(buf, sizeof buf, "%.1f GiB", g);
  return buf;
}
std::string pct(double f) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%.0f%%", f * 100);
  return buf;
}

std::string bound_line(const PlanCandidate& c) {
  const char* kinds[] = {"tp", "cp", "ep", "pp", "dp"};
  double exposed = 0;
  int top = 0;
  for (int k = 0; k < 5; ++k) {
    exposed += c.exposed[k];
    if (c.exposed[k] > c.exposed[top]) top = k;
  }
  const double step = c.step_seconds > 0 ? c.step_seconds : 1;
  const double compute = std::max(0.0, 1 - c.bubble_fraction - exposed / step);
  const double mem = c.usable_memory_bytes > 0 ? static_cast<double>(c.peak_memory_bytes) / c.usable_memory_bytes : 0;
  std::string lead;
  if (compute >= 0.5) lead = "compute-bound";
  else if (c.bubble_fraction >= exposed / step) lead = "bubble-bound";
  else lead = std::string(kinds[top]) + "-communication-bound";
  std::string s = lead + ": compute " + pct(compute) + ", bubble " + pct(c.bubble_fraction);
  if (c.exposed[top] > 0) s += ", exposed " + std::string(kinds[top]) + " comm " + pct(c.exposed[top] / step);
  s += "; memory " + gib(c.peak_memory_bytes) + " of " + gib(c.usable_memory_bytes) + " usable";
  if (mem > 0.9) s += " (memory-bound: little headroom)";
  return s;
}

// Where the simulator's figures for a candidate rest on what no checked
// published run covers (docs/plan.md, "Confidence"): the ranking still
// uses them, the plan says so beside the candidate.
std::vector<std::string> low_confidence(const PlanCandidate& c) {
  std::vector<std::string> out;
  const PlanLayout& l = c.layout;
  double exposed = 0;
  for (double e : c.exposed) exposed += e;
  if (c.step_seconds > 0 && exposed >= kLowConfidenceExposedShare * c.step_seconds)
    out.push_back("exposed communication " + pct(exposed / c.step_seconds) +
                  " of the step: the overlap model decides the ranking");
  const int64_t per_rank = l.cp > 1 ? c.job.training.seq_len / l.cp : 0;
  const bool ring = c.job.parallel.cp_algorithm == "ring";
  const int64_t checked = ring ? kLowConfidenceCpRingTokensPerRank : kLowConfidenceCpTokensPerRank;
  if (l.cp > 1 && per_rank < checked)
    out.push_back("cp" + std::to_string(l.cp) + " at " + std::to_string(per_rank) + " tokens per rank: below the " +
                  std::to_string(checked) + (ring ? " of the checked ring (p2p) cp runs" : " of the only checked all-gather cp run"));
  if (l.pp > kLowConfidencePipelineStages)
    out.push_back("pp" + std::to_string(l.pp) + ": more stages than the " +
                  std::to_string(kLowConfidencePipelineStages) + " of the checked pipelines");
  if (l.pp > 1 && l.schedule == Schedule::kZeroBubble) out.push_back("zero-bubble: no checked published run");
  // The shard group (the bound's, dp_group_shape) holds ranks of more than
  // one node when its highest member is past rank 0's node.
  const int64_t node = c.job.hardware.gpus_per_node > 0 ? c.job.hardware.gpus_per_node : 8;
  const bool spans = l.zero == 3 && dp_group_members(dp_shape_key(c.job.parallel, l.shard_group, 1)).back() >= node;
  if (l.zero == 3 && (l.shard_group > kLowConfidenceZero3Group || spans))
    out.push_back("ZeRO-3 over " + std::to_string(l.shard_group) + " ranks" + (spans ? " across nodes" : "") +
                  ": the checked dense runs gather over " + std::to_string(kLowConfidenceZero3Group) +
                  " in one node, across nodes only one MoE run");
  if (c.job.model.is_moe()) {
    // docs/fidelity.md, "Mixture of experts": the checked MoE
    // runs whose step compute sets simulate far too fast (the all-to-all
    // bound ones are close), so a MoE ranking leans toward compute-bound
    // layouts (tests/plan/published_probe_results.md).
    out.push_back("mixture of experts: checked MoE runs whose step is set by compute simulate too fast");
    if (l.zero == 3) out.push_back("ZeRO-3 gathering routed experts: one checked run");
  }
  return out;
}

// What differs between two layouts, "pp 4 vs 8, zero 1 vs 2": only the
// dimensions that mean something in both (no schedule or rank order
// beside a one-stage pipeline, no rank order without dp, no shard group
// without ZeRO, no expert degrees for a dense model).
std::string layout_diff(const PlanLayout& a, const PlanLayout& b, bool moe) {
  std::string d;
  auto add = [&](const char* what, const std::string& x, const std::string& y) {
    if (x != y) d += (d.empty() ? "" : ", ") + std::string(what) + " " + x + " vs " + y;
  };
  add("tp", std::to_string(a.tp), std::to_string(b.tp));
  add("sp", a.sp ? "on" : "off", b.sp ? "on" : "off");
  add("cp", std::to_string(a.cp), std::to_string(b.cp));
  add("pp", std::to_string(a.pp), std::to_string(b.pp));
  add("vp", std::to_string(a.vp), std::to_string(b.vp));
  auto ends = [](const PlanLayout& l) {
    return std::string(l.empty_ends ? "embedding/loss only" : l.counted_ends ? "embedding/loss counted as layers" : "with layers");
  };
  add("end chunks", ends(a), ends(b));
  if (a.pp > 1 && b.pp > 1) add("schedule", schedule_name(a.schedule), schedule_name(b.schedule));
  add("dp", std::to_string(a.dp), std::to_string(b.dp));
  add("zero", std::to_string(a.zero), std::to_string(b.zero));
  if (a.zero > 0 && b.zero > 0) add("shard group", std::to_string(a.shard_group), std::to_string(b.shard_group));
  if (moe) {
    add("ep", std::to_string(a.ep), std::to_string(b.ep));
    add("expert tp", std::to_string(a.expert_tp), std::to_string(b.expert_tp));
  }
  add("recompute", recompute_name(a.recompute), recompute_name(b.recompute));
  add("micro-batch", std::to_string(a.mbs), std::to_string(b.mbs));
  if (a.pp > 1 && b.pp > 1 && a.dp > 1 && b.dp > 1) add("order", order_name(a.order), order_name(b.order));
  return d;
}

// Seconds with three significant digits in s, ms or µs (the browser's
// secondsText, web/src/lib/plan.js): "26.0 ms", "40.0 µs", "1.51 s".
std::string seconds_text(double x) {
  const char* unit = x >= 1 ? "s" : x >= 1e-3 ? "ms" : "µs";
  const double v = x >= 1 ? x : x >= 1e-3 ? x * 1e3 : x * 1e6;
  char b[48];
  std::snprintf(b, sizeof b, "%.3g", v);
  const double r = std::strtod(b, nullptr);  // rounded first: 9.9996 is "10.0", not "10.00"
  std::snprintf(b, sizeof b, "%.*f %s", r >= 100 ? 0 : r >= 10 ? 1 : 2, r, unit);
  return b;
}

// The gap of step b over step a as the browser's gapText says it: the
// relative gap to two significant digits or more (never "0.0%") and the
// time ("1.7 % (26.0 ms)", "0.0040 % (40.0 µs)").
std::string gap_text(double a, double b) {
  const double d = b - a, rel = 100 * std::abs(d) / std::abs(b != 0 ? b : a);
  const int digits = rel > 0 ? std::max(1, 1 - static_cast<int>(std::floor(std::log10(rel)))) : 1;
  char buf[64];
  std::snprintf(buf, sizeof buf, "%s%.*f %%", d >= 0 ? "" : "-", digits, rel);
  return std::string(buf) + " (" + seconds_text(std::abs(d)) + ")";
}

// Why #1 beats the next candidate whose step differs (equal steps are
// ties, broken by the layout key).
std::string why_line(const std::vector<PlanCandidate>& c) {
  const PlanCandidate& a = c[0];
  const bool moe = a.job.model.is_moe();
  size_t k = 1;
  while (k < c.size() && c[k].step_seconds == a.step_seconds) ++k;
  std::string tie;
  if (k > 1)
    tie = "ties #2 (" + layout_diff(a.layout, c[1].layout, moe) + ": the same step; ranked by the layout key); ";
  if (k == c.size()) return tie + "no other candidate has a different step";
  const PlanCandidate& b = c[k];
  const double d = b.step_seconds - a.step_seconds;
  auto comp = [](const PlanCandidate& x) {
    double e = 0;
    for (double v : x.exposed) e += v;
    return std::max(0.0, x.step_seconds * (1 - x.bubble_fraction) - e);
  };
  struct Part { const char* what; double delta; };
  const char* kinds[] = {"exposed tp communication", "exposed cp communication", "exposed ep communication",
                         "exposed pp communication", "exposed dp communication"};
  std::vector<Part> parts = {{"compute", comp(b) - comp(a)},
                             {"bubble", b.bubble_fraction * b.step_seconds - a.bubble_fraction * a.step_seconds}};
  for (int i = 0; i < 5; ++i) parts.push_back({kinds[i], b.exposed[i] - a.exposed[i]});
  const Part* best = &parts[0];
  const Part* worst = &parts[0];
  for (const Part& p : parts) {
    if (p.delta > best->delta) best = &p;
    if (p.delta < worst->delta) worst = &p;
  }
  std::string out = "beats #" + std::to_string(k + 1) + " by " + gap_text(a.step_seconds, b.step_seconds) + " with " +
                    layout_diff(a.layout, b.layout, moe) + ": mostly " + seconds_text(best->delta) + " less " +
                    best->what;
  // The largest part can exceed the whole gap when another part goes the
  // other way: that part is named too (a gap of 0.4 ms "mostly 21 ms less
  // exposed pp communication" read as if the rest were even).
  if (best->delta > 1.5 * d && worst->delta < 0)
    out += ", offset by " + seconds_text(-worst->delta) + " more " + worst->what;
  return tie + out;
}

}  // namespace

// ---------------------------------------------------------------- public

Job layout_job(const Job& base, const PlanLayout& l) {
  Job j = base;
  ParallelConfig& p = j.parallel;
  const std::string cp_alg = base.parallel.cp_algorithm;
  p = ParallelConfig{};
  p.cp_algorithm = cp_alg;
  p.moe_dispatcher = base.parallel.moe_dispatcher;
  p.tp = l.tp, p.cp = l.cp, p.pp = l.pp, p.virtual_stages = l.vp, p.dp = l.dp, p.zero = l.zero;
  p.sequence_parallel = l.sp;
  p.shard_group = l.zero > 0 && l.shard_group != l.dp * l.cp ? l.shard_group : 0;
  if (base.model.is_moe()) {
    p.ep = l.ep;
    p.expert_tp = l.expert_tp == l.tp ? 0 : l.expert_tp;
    p.moe_imbalance = std::min(base.parallel.moe_imbalance, static_cast<double>(l.ep));  // as build_proxy
  }
  p.order = l.order;
  // Layers that do not split evenly over the virtual stages: the extra
  // layers go to the middle stages, the first and last (which also hold
  // the embedding and the head) get fewer, as Llama 3 405B's 7, 8 x 14, 7
  // (and, interleaved, the split with the embedding and the loss counted
  // as layers where it divides: 1, 2 x 62, 1 over 64 chunks).
  const int64_t L = base.model.num_layers, n = l.pp * l.vp;
  if (l.empty_ends && n > 2) {
    p.pipeline_layout.assign(static_cast<size_t>(n), L / (n - 2));
    p.pipeline_layout.front() = 0;
    p.pipeline_layout.back() = 0;
  } else if (n > 1 && L % n != 0 && L >= n) {
    const int64_t each = L / n, extra = L % n;
    p.pipeline_layout.assign(static_cast<size_t>(n), each);
    const int64_t first = (n - extra) / 2;
    for (int64_t i = 0; i < extra; ++i) ++p.pipeline_layout[static_cast<size_t>(first + i)];
  }
  j.training.micro_batch_size = l.mbs;
  j.training.schedule = l.schedule;
  j.training.recompute = l.recompute;
  if (l.recompute != Recompute::kSelective) j.training.recompute_modules = 0;  // the job's modules: selective's
  fit_ep_overlap(j);
  return j;
}

PlanEstimate estimate_layout(const Job& job, const PlanBackend& backend) {
  PlanEstimate out;
  PlanLayout l;
  l.tp = job.parallel.tp, l.cp = job.parallel.cp, l.mbs = job.training.micro_batch_size;
  l.ep = job.parallel.ep, l.expert_tp = job.parallel.expert_tp_degree(), l.sp = job.parallel.sequence_parallel;
  l.recompute = job.training.recompute;
  Result<NetworkModel> net = resolve_network(job, job.parallel.world_size(), false);
  if (!net.ok()) {
    out.error = net.error();
    return out;
  }
  Proxy px = build_proxy(job, key_of(l), *net, backend);
  if (!px.ok) {
    out.error = px.error;
    return out;
  }
  Estimate e = estimate(job, px, &*net);
  out.ok = e.ok;
  out.peak_lower_bytes = e.lower;
  out.peak_upper_bytes = e.upper;
  out.first_bound_seconds = e.bound_us / 1e6;
  out.bound_seconds = std::max(e.bound_us, replay_bound_us(job, px, &*net)) / 1e6;
  return out;
}

std::string layout_label(const PlanLayout& l, bool moe) {
  std::string s = "tp" + std::to_string(l.tp) + (l.sp ? "+sp" : "") + " cp" + std::to_string(l.cp) + " pp" +
                  std::to_string(l.pp);
  if (l.vp > 1) s += " v" + std::to_string(l.vp);
  if (l.pp > 1) s += std::string(" ") + schedule_name(l.schedule);
  if (l.empty_ends) s += " emb+loss-ends";
  if (l.counted_ends) s += " emb+loss-in-split";
  s += " dp" + std::to_string(l.dp);
  if (moe) s += " ep" + std::to_string(l.ep) + " etp" + std::to_string(l.expert_tp);
  s += " zero" + std::to_string(l.zero);
  if (l.zero > 0 && l.shard_group != l.dp * l.cp) s += "/hsdp" + std::to_string(l.shard_group);
  s += std::string(" rc-") + recompute_name(l.recompute) + " mbs" + std::to_string(l.mbs);
  if (l.pp > 1 && l.dp > 1) s += " " + order_name(l.order);
  return s;
}

nlohmann::ordered_json layout_json(const PlanLayout& l) {
  nlohmann::ordered_json j = nlohmann::ordered_json::object();
  j["tp"] = l.tp;
  j["sp"] = l.sp;
  j["cp"] = l.cp;
  j["pp"] = l.pp;
  j["vp"] = l.vp;
  j["schedule"] = schedule_name(l.schedule);
  j["dp"] = l.dp;
  j["zero"] = l.zero;
  j["shard_group"] = l.shard_group;
  j["ep"] = l.ep;
  j["expert_tp"] = l.expert_tp;
  j["recompute"] = recompute_name(l.recompute);
  j["micro_batch_size"] = l.mbs;
  j["order"] = l.order;
  // Only when set: the first and last virtual stages hold no layers.
  if (l.empty_ends) j["empty_end_chunks"] = true;
  // Only when set: the embedding and the loss count as layers of the split.
  if (l.counted_ends) j["embedding_loss_in_split"] = true;
  return j;
}

int64_t plan_bytes_per_layout(const Job& base) {
  (void)base;  // a layout holds no job (Cand): its size does not depend on it
  // A layout's record, its rank order's four names (a vector's buffer and
  // the allocator's header), a rejection reason's text (at most a few
  // hundred bytes, with the allocator's slack) and its entries in the
  // search's index vectors and maps.
  return static_cast<int64_t>(sizeof(Cand)) + 4 * static_cast<int64_t>(sizeof(std::string)) + 16 + 256 + 64;
}

namespace {
Result<PlanResult> search(const Job& base_in, const PlanOptions& o, const PlanBackend& backend);
}  // namespace

// The search, then, when nothing fits for memory, the smallest GPU count
// that does: searches at more GPUs that stop at their first fitting layout.
Result<PlanResult> plan(const Job& base, const PlanOptions& o, const PlanBackend& backend) {
  const auto t0 = std::chrono::steady_clock::now();
  SC_ASSIGN_OR_RETURN(PlanResult r, search(base, o, backend));
  if (!o.probe_smallest_fit || o.first_fit || !r.candidates.empty() || !r.complete || r.counts.memory == 0 ||
      cancel_requested())
    return r;
  // Every world degree fixed: no other count has a layout.
  const PlanConstraints& pc = o.constraints;
  if (pc.fixed[kTp] && pc.fixed[kPp] && pc.fixed[kCp] && pc.fixed[kDp]) return r;
  auto since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  // Its time: what the time limit leaves, else twice the search's own
  // (at least 30 s): an answer in seconds where the search took seconds.
  const double budget = o.time_limit_seconds > 0 ? o.time_limit_seconds - since(t0) : std::max(30.0, 2 * since(t0));
  const auto p0 = std::chrono::steady_clock::now();
  PlanResult::SmallestFit& sf = r.smallest_fit;
  const int64_t node = std::max<int64_t>(1, base.hardware.gpus_per_node);
  int64_t g = std::max(r.min_gpus_lower_bound, o.gpus + 1);
  sf.from = g;
  constexpr int kMaxCounts = 40, kLinearNodes = 16;
  for (int i = 0; i < kMaxCounts && g <= limits::kMaxDegree; ++i) {
    const double left = budget - since(p0);
    if (cancel_requested() || left <= 0) {
      sf.stopped = true;
      break;
    }
    if (o.progress) o.progress(i, kMaxCounts, "fit");
    PlanOptions p = o;
    p.gpus = g;
    p.progress = nullptr;
    p.improved = nullptr;
    p.seed = false;
    p.first_fit = true;
    p.constraints.top = 1;
    p.time_limit_seconds = left;
    Result<PlanResult> pr = search(base, p, backend);
    ++sf.counts_tried;
    if (pr.ok() && !pr->candidates.empty()) {
      sf.gpus = g;
      sf.layout = pr->candidates.front().layout;
      sf.peak_memory_bytes = pr->candidates.front().peak_memory_bytes;
      break;
    }
    if (pr.ok() && !pr->complete) {
      sf.stopped = true;
      break;
    }
    // A count the constraints leave no layout at (fixed degrees that do
    // not divide it) is passed over, not counted as fitting nothing; any
    // other error (the search's budget) ends the probe.
    const bool no_layout = pr.ok() ? pr->counts.considered == 0
                                   : pr.error().code == ErrorCode::kInvalidArgument && pr.error().path == "gpus";
    if (!pr.ok() && !no_layout) break;
    if (!no_layout) sf.largest_without = g;
    // Next: every count up to a node, then whole nodes; after 16 of those,
    // steps of an eighth (rounded up to whole nodes).
    if (g < node) ++g;
    else if (g / node < sf.from / node + kLinearNodes) g = (g / node + 1) * node;
    else {
      g = ((g + g / 8 + node - 1) / node) * node;
      sf.every_count = false;
    }
  }
  if (o.progress) o.progress(kMaxCounts, kMaxCounts, "fit");
  return r;
}

namespace {

Result<PlanResult> search(const Job& base_in, const PlanOptions& o, const PlanBackend& backend) {
  SC_RETURN_IF_ERROR(check_constraints(base_in, o));
  const PlanConstraints& c = o.constraints;
  Job base = base_in;
  base.parallel.pipeline_layout.clear();
  PlanResult r;
  r.gpus = o.gpus;
  r.objective = c.objective;
  const int64_t capacity = static_cast<int64_t>(base.hardware.memory_bytes);
  // Default: the GPU profile's derived reserve (plan/memory_reserve.h).
  const double reserve = c.memory_reserve_gib        ? *c.memory_reserve_gib * 1024.0 * 1024.0 * 1024.0
                         : c.memory_reserve_fraction ? capacity * *c.memory_reserve_fraction
                                                     : static_cast<double>(default_memory_reserve(base.hardware).total());
  const int64_t usable = capacity - static_cast<int64_t>(reserve);
  r.memory_capacity_bytes = capacity;
  r.usable_memory_bytes = usable;
  if (usable <= 0)
    return make_error(ErrorCode::kInvalidArgument,
                      "the memory reserve (" + gib(static_cast<int64_t>(reserve)) + ") leaves nothing of the GPU's " +
                          gib(capacity),
                      c.memory_reserve_gib ? "plan.memory_reserve_gib" : "plan.memory_reserve_fraction");
  auto progress = [&](int64_t d, int64_t t, const char* ph) {
    if (o.progress) o.progress(d, t, ph);
  };
  // --time-limit bounds the whole search, every phase (the CLI also
  // cancels a build or simulation in flight at the limit).
  const auto started = std::chrono::steady_clock::now();
  auto out_of_time = [&] {
    return o.time_limit_seconds > 0 &&
           std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count() >= o.time_limit_seconds;
  };
  auto stopping = [&] { return cancel_requested() || out_of_time(); };

  Job net_job = base;
  net_job.parallel.dp = o.gpus;  // the network of o.gpus ranks
  SC_ASSIGN_OR_RETURN(NetworkModel net, resolve_network(net_job, o.gpus, false));
  DpShapes dp_shapes(net);  // rank 0's dp group shapes, shared by every layout's bounds

  // 1. Enumerate; reject what the job validation refuses.
  std::atomic<bool> cancelled{false};
  bool enum_stopped = false;
  // The budget, checked before the work: every layout holds its job while
  // the search runs (docs/plan.md, "Budget").
  if (o.max_search_bytes > 0) {
    int64_t n = 0;
    enumerate(base, o, stopping, &enum_stopped, &n);
    const int64_t need = n * plan_bytes_per_layout(base);
    if (!enum_stopped && need > o.max_search_bytes)
      return make_error(ErrorCode::kTooLarge,
                        "the search over " + std::to_string(n) + " layouts would hold about " + gib(need) +
                            " (budget " + gib(o.max_search_bytes) +
                            "): fix or bound degrees (e.g. tp, pp, max_mbs, zero, recompute) to narrow it",
                        "gpus");
  }
  std::vector<Cand> cands =
      enum_stopped ? std::vector<Cand>{} : enumerate(base, o, stopping, &enum_stopped);
  if (enum_stopped) cancelled = true;
  r.enumeration_stopped = enum_stopped;
  r.counts.considered = static_cast<int64_t>(cands.size());
  auto lap = [&, t = started](int phase) mutable {
    const auto now = std::chrono::steady_clock::now();
    r.phase_seconds[phase] += std::chrono::duration<double>(now - t).count();
    t = now;
  };
  lap(0);
  progress(0, r.counts.considered, "validate");
  // A layout the job validation refuses is kDivisibility, with the reason.
  auto validate = [&](Cand& cd) {
    const Job job = layout_job(base, cd.l);
    if (job.training.global_batch_size % (cd.l.dp * cd.l.mbs) != 0) {
      cd.state = Cand::kDivisibility;
      cd.reason = "training.global_batch_size: " + std::to_string(job.training.global_batch_size) +
                  " is not divisible by dp x micro_batch_size = " + std::to_string(cd.l.dp * cd.l.mbs);
      return;
    }
    Status st = validate_job(job);
    if (!st.ok()) {
      cd.state = Cand::kDivisibility;
      cd.reason = st.error().path + ": " + st.error().message;
    }
  };
  // The seed's proxies (2b), built before the others: step 2 takes them.
  std::map<ProxyKey, Proxy> seed_proxies;
  // 2b. The seed (docs/plan.md, "Anytime"): before the estimates of every
  // layout, a small set chosen by a fixed rule (cp 1, tp within a node,
  // ZeRO 0 or 1, one micro-batch, no virtual stages or empty end chunks,
  // 1F1B, the megatron order) is estimated alone; the layouts of the set that fit by the
  // estimate are simulated in the order of their bound until one fits
  // (at most kSeedSimulations). That one is the first best so far
  // (PlanOptions::improved, and what a stop during the estimates
  // returns). The full search then runs unchanged; when it reaches a seed
  // layout it takes the seed's simulation instead of simulating it again,
  // so the counts and the result are those of a search without the seed.
  std::map<int, Eval> seed_evals;  // cands index -> its simulation
  if (o.seed && !cancelled.load() && !stopping()) {
    const int64_t node = base.hardware.gpus_per_node > 0 ? base.hardware.gpus_per_node : 8;
    constexpr size_t kSeedSetMax = 1024;
    constexpr int kSeedSimulations = 4;
    // The megatron rank order where it is searched: step 4 may set a
    // llama3-order layout aside as its megatron twin's duplicate, and the
    // seed must stay a layout the search decides (a best so far that
    // stays).
    const bool megatron_seed = in_list(c.orders, std::string("megatron"));
    std::vector<std::pair<int, Estimate>> seeds;
    for (size_t i = 0; i < cands.size() && seeds.size() < kSeedSetMax; ++i) {
      if ((i & 255) == 0 && stopping()) break;
      Cand& cd = cands[i];
      const PlanLayout& l = cd.l;
      if (cd.state != Cand::kNew || l.cp != 1 || l.tp > node || l.zero > 1 || l.mbs != 1 || l.vp != 1 ||
          l.empty_ends || (l.pp > 1 && l.schedule != Schedule::kOneFOneB) ||
          (megatron_seed && order_name(l.order) != "megatron"))
        continue;
      validate(cd);
      if (cd.state != Cand::kNew) continue;
      auto px_it = seed_proxies.find(key_of(l));
      if (px_it == seed_proxies.end())
        px_it = seed_proxies.emplace(key_of(l), build_proxy(base, key_of(l), net, backend)).first;
      const Proxy& px = px_it->second;
      if (!px.ok) continue;
      Estimate e =
          estimate(layout_job(base, l), px, &net, nullptr, -1, o.replay_bound, o.expert_dp_bound, &dp_shapes);
      if (e.lower <= usable) seeds.emplace_back(static_cast<int>(i), e);
    }
    std::sort(seeds.begin(), seeds.end(), [&](const auto& x, const auto& y) {
      if (x.second.bound_us != y.second.bound_us) return x.second.bound_us < y.second.bound_us;
      return tie_key(cands[x.first].l) < tie_key(cands[y.first].l);
    });
    bool seed_fits = false;
    for (size_t k = 0; k < seeds.size() && k < static_cast<size_t>(kSeedSimulations) && !seed_fits; ++k) {
      if (stopping()) break;
      Cand probe = cands[static_cast<size_t>(seeds[k].first)];
      probe.est = seeds[k].second;
      Eval ev = evaluate(probe, layout_job(base, probe.l), usable, backend);
      if (!ev.done || ev.cancelled) break;
      seed_fits = !ev.failed && ev.fits;
      seed_evals.emplace(seeds[k].first, std::move(ev));
    }
    r.seed_simulated = static_cast<int64_t>(seed_evals.size());
    if (seed_fits)
      r.first_best_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  }
  const size_t top = static_cast<size_t>(c.top);
  std::vector<double> best;  // accepted steps (µs) of distinct rows, sorted
  std::set<std::pair<std::string, double>> variant_steps;
  std::vector<PlanCandidate> accepted;
  auto threshold = [&] {
    return !o.exhaustive && best.size() >= top ? best[top - 1] : std::numeric_limits<double>::infinity();
  };
  // What the search returns when it ends now (complete or stopped):
  // counts, the ranked rows of `acc` (collapsed, top N), the why line
  // and the closest misses. Also the best-so-far snapshots of
  // PlanOptions::improved, taken without changing any layout's state.
  auto conclude = [&](bool complete, std::vector<PlanCandidate> acc) {
    PlanResult out = r;
    out.complete = complete;
    // Not decided: cut by the bound when the search ran to its end (or
    // the bound already cuts it), else not examined.
    auto settled = [&](const Cand& cd) {
      if (cd.state != Cand::kNew) return cd.state;
      return complete || !(cd.est.bound_us < threshold()) ? Cand::kBound : Cand::kUnexamined;
    };
    for (const Cand& cd : cands) {
      switch (settled(cd)) {
        case Cand::kDivisibility: ++out.counts.divisibility; break;
        case Cand::kMemory: ++out.counts.memory; break;
        case Cand::kDominated: ++out.counts.dominated; break;
        case Cand::kBound: ++out.counts.bound; break;
        case Cand::kSimulated: ++out.counts.simulated; break;
        case Cand::kUnexamined: ++out.counts.unexamined; break;
        default: break;
      }
    }

    // 6. Rank: objective value, then the layout key. With every GPU used
    // both objectives order alike (tokens/s/GPU = tokens per step / step / GPUs).
    std::sort(acc.begin(), acc.end(), [](const PlanCandidate& a, const PlanCandidate& b) {
      if (a.step_seconds != b.step_seconds) return a.step_seconds < b.step_seconds;
      return tie_key(a.layout) < tie_key(b.layout);
    });
    // Collapse the variants into the row of the first (by the layout key),
    // which names them; then the top N rows.
    {
      std::vector<PlanCandidate> rows;
      std::map<std::pair<std::string, double>, size_t> row_of;
      for (PlanCandidate& pc : acc) {
        auto [it, added] = row_of.emplace(std::make_pair(variant_key(pc.layout), pc.step_seconds), rows.size());
        if (added) rows.push_back(std::move(pc));
        else rows[it->second].alternatives.push_back(pc.layout);
      }
      acc = std::move(rows);
    }
    if (acc.size() > top) acc.resize(top);
    for (PlanCandidate& pc : acc) {
      pc.bound = bound_line(pc);
      pc.low_confidence = low_confidence(pc);
    }
    out.candidates = std::move(acc);
    if (out.candidates.size() >= 2) out.why_winner = why_line(out.candidates);
    else if (out.candidates.size() == 1)
      out.why_winner = out.complete ? "the only layout that fits"
                                    : "the only layout timed so far that fits (the search was stopped)";
    else if (!out.complete && out.counts.simulated == 0) out.why_winner = "nothing simulated yet";
    else if (!out.complete) out.why_winner = "no layout simulated so far fits";
    else if (out.counts.considered == 0) out.why_winner = "no layout meets the search's constraints: nothing was searched";
    else out.why_winner = "no layout fits";

    // 7. Closest misses: smallest memory shortfall (those that would beat
    // the winner when something fits), else the validation errors.
    std::vector<const Cand*> mem;
    for (const Cand& cd : cands)
      if (cd.state == Cand::kMemory &&
          (out.candidates.empty() || cd.est.bound_us / 1e6 < out.candidates.front().step_seconds))
        mem.push_back(&cd);
    // Only the first few are shown: a partial sort (the order of those is
    // the full sort's: no two layouts tie), 0.2 s less at 10^5 layouts
    // (a stop's answer comes within a second of it).
    const size_t shown = std::min<size_t>(mem.size(), 15);  // room for the twins dropped below
    std::partial_sort(mem.begin(), mem.begin() + static_cast<std::ptrdiff_t>(shown), mem.end(),
                      [](const Cand* a, const Cand* b) {
                        if (a->short_by != b->short_by) return a->short_by < b->short_by;
                        return tie_key(a->l) < tie_key(b->l);
                      });
    // Nothing fits for memory: the fewest GPUs the model's state could fit
    // on at all, its weights, gradients and optimizer state sharded over
    // every GPU (ZeRO-3) with nothing else in memory: a lower bound (the
    // activations come on top).
    if (out.candidates.empty() && out.complete && !mem.empty()) {
      const double per_param = dtype_bytes(base.training.dtype) + dtype_bytes(base.training.grad_reduce_dtype) +
                               static_cast<double>(base.training.optimizer_bytes_per_param);
      const double state = static_cast<double>(closed_form_parameters(base.model)) * per_param;
      const int64_t need = static_cast<int64_t>(std::ceil(state / static_cast<double>(usable)));
      if (need > o.gpus) out.min_gpus_lower_bound = need;
    }
    const size_t want = out.candidates.empty() ? 5 : 3;
    // A miss whose twin (another recompute mode or rank order, the same
    // shortfall) is already listed adds nothing.
    std::set<std::pair<std::string, int64_t>> listed;
    for (size_t i = 0; i < shown && out.closest_misses.size() < want; ++i)
      if (listed.insert({variant_key(mem[i]->l), mem[i]->short_by}).second)
        out.closest_misses.push_back({mem[i]->l, mem[i]->reason, mem[i]->short_by});
    if (out.candidates.empty() && out.closest_misses.empty()) {
      std::set<std::string> seen;
      for (const Cand& cd : cands)
        if (cd.state == Cand::kDivisibility && seen.insert(cd.reason).second && out.closest_misses.size() < 5)
          out.closest_misses.push_back({cd.l, "divisibility: " + cd.reason, 0});
    }
    return out;
  };
  // A best-so-far snapshot (PlanOptions::improved): the rows accepted so
  // far and the seed's fitting simulations the search has not decided
  // yet, so the best so far never gets worse. Those stay counted as
  // undecided (unexamined, or bound once the bound cuts them): the final
  // answer may count them so, and the simulated count never falls.
  auto snapshot = [&](std::vector<PlanCandidate> acc) {
    for (const auto& [at, ev] : seed_evals)
      if (ev.fits && !ev.failed && cands[static_cast<size_t>(at)].state == Cand::kNew) acc.push_back(ev.c);
    return conclude(false, std::move(acc));
  };
  if (r.first_best_seconds > 0 && o.improved) o.improved(snapshot({}));

  // Each layout writes its own slot only: any thread count, same result.
  // (The seed's layouts, validated in 2b, are validated again: the same.)
  parallel_for(
      static_cast<int64_t>(cands.size()), o.threads,
      [&](int64_t i) {
        Cand& cd = cands[static_cast<size_t>(i)];
        if (cancelled.load(std::memory_order_relaxed) || ((i & 255) == 0 && stopping())) {
          cancelled = true;
          cd.state = Cand::kUnexamined;
          return false;
        }
        validate(cd);
        return true;
      },
      [&](int64_t d) { progress(d, r.counts.considered, "validate"); });

  lap(1);
  // 2. One proxy per stage-program key.
  std::map<ProxyKey, int> key_index;
  std::vector<ProxyKey> keys;
  for (Cand& cd : cands) {
    if (cd.state != Cand::kNew) continue;
    auto [it, added] = key_index.emplace(key_of(cd.l), static_cast<int>(keys.size()));
    if (added) keys.push_back(it->first);
    cd.proxy = it->second;
  }
  std::vector<Proxy> proxies(keys.size());
  parallel_for(
      static_cast<int64_t>(keys.size()), o.threads,
      [&](int64_t i) {
        if (cancelled.load() || stopping()) { cancelled = true; return false; }
        const ProxyKey& k = keys[static_cast<size_t>(i)];
        auto built = seed_proxies.find(k);
        proxies[static_cast<size_t>(i)] = built != seed_proxies.end() ? built->second : build_proxy(base, k, net, backend);
        return true;
      },
      [&](int64_t d) { progress(d, static_cast<int64_t>(keys.size()), "estimate"); });

  lap(2);

  // 3. Memory and bound of each layout (activation peaks cached: they do
  // not depend on ZeRO, the shard group or the rank order). In parallel
  // over the groups of layouts that share a peak key, each group in order
  // with a cache of its own: a cached peak is the one the group's first
  // layout computed, so the estimates do not depend on the thread count.
  std::map<PeakKey, std::vector<size_t>> peak_groups;
  for (size_t i = 0; i < cands.size(); ++i) {
    const Cand& cd = cands[i];
    if (cd.state != Cand::kNew) continue;
    peak_groups[PeakKey{cd.proxy, cd.l.pp, cd.l.vp, chunk_kind_of(cd.l), cd.l.dp}]
        .push_back(i);
  }
  std::vector<const std::vector<size_t>*> groups;
  for (const auto& [key, members] : peak_groups) groups.push_back(&members);
  std::atomic<bool> estimate_cancelled{false};
  parallel_for(static_cast<int64_t>(groups.size()), o.threads, [&](int64_t gi) {
    PeakCache peak_cache;
    for (size_t i : *groups[static_cast<size_t>(gi)]) {
      Cand& cd = cands[i];
      const Proxy& px = proxies[static_cast<size_t>(cd.proxy)];
      if (estimate_cancelled.load(std::memory_order_relaxed) || cancelled.load(std::memory_order_relaxed) ||
          stopping() || (!px.ok && px.error.code == ErrorCode::kCancelled)) {
        estimate_cancelled = true;
        cd.state = Cand::kUnexamined;
        continue;
      }
      if (!px.ok) {
        cd.state = Cand::kDivisibility;
        cd.reason = px.error.path + ": " + px.error.message;
        continue;
      }
      cd.est = estimate(layout_job(base, cd.l), px, &net, &peak_cache, cd.proxy, o.replay_bound, o.expert_dp_bound,
                        &dp_shapes);
      if (cd.est.lower > usable) {
        cd.state = Cand::kMemory;
        cd.short_by = cd.est.lower - usable;
        // A lower bound (the estimate's), so the shortfall is one too.
        cd.reason = "memory: needs at least " + gib(cd.est.lower) + " per GPU, " + gib(usable) +
                    " usable (short by at least " + gib(cd.short_by) + ")";
      }
    }
  });
  if (estimate_cancelled) cancelled = true;

  lap(3);
  // 4. Dominance (applied as the search goes, below): with
  // overlap_grad_reduce, ZeRO 2 issues the same gather after the step as
  // ZeRO 1, the same reductions with one micro-batch per step and more with
  // several (its sharded gradients are reduce-scattered after every
  // micro-batch's backward), and needs less memory; once the ZeRO 1 layout
  // of the same everything else was simulated and fits, it is dominated.
  // (Without it ZeRO 1 reduces after the backward and ZeRO 2 during it.) ZeRO 3 is not: its
  // per-layer gathers overlap the forward on the dp stream, while ZeRO 1's
  // gather after the optimizer step is exposed, so either may be faster.
  auto sibling = [](const PlanLayout& l) {
    PlanLayout k = l;
    k.zero = 0;
    k.shard_group = 0;
    return layout_label(k, true);
  };
  std::set<std::string> zero1_fits;
  // Without overlap_grad_reduce the dominance fails: ZeRO 1 then reduces
  // after the backward, ZeRO 2 during it (TrainingConfig::grad_reduce_overlapped).
  const bool zero2_dominance = base.training.overlap_grad_reduce;
  // A ZeRO-2 layout whose ZeRO-1 twin is in `fits`.
  auto zero1_twin_in = [&](const Cand& cd, const std::set<std::string>& fits) {
    return !o.exhaustive && zero2_dominance && cd.l.zero == 2 && fits.count(sibling(cd.l)) > 0;
  };
  auto dominated = [&](const Cand& cd) { return zero1_twin_in(cd, zero1_fits); };
  // A layout whose rank order simulates exactly as the megatron order's
  // (orders_equivalent) is a duplicate: its megatron twin stands for it.
  if (!o.exhaustive && !base.model.is_moe() && in_list(c.orders, std::string("megatron"))) {
    std::map<std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>, bool> memo;
    for (Cand& cd : cands) {
      if (cd.state != Cand::kNew || order_name(cd.l.order) != "llama3") continue;
      const auto key = std::make_tuple(cd.l.tp, cd.l.cp, cd.l.dp, cd.l.pp, cd.l.zero > 0 ? cd.l.shard_group : 0, 0);
      auto it = memo.find(key);
      if (it == memo.end()) {
        // A stop: the layouts not looked at stay undecided (unexamined).
        if (cancelled.load() || stopping()) {
          cancelled = true;
          break;
        }
        const ParallelConfig par = layout_job(base, cd.l).parallel;
        ParallelConfig mg = par;
        mg.order = order_of("megatron");
        const std::optional<bool> eq =
            orders_equivalent(par, mg, net, base.model.last_stage_embeds(), stopping);
        if (!eq) {
          cancelled = true;
          break;
        }
        it = memo.emplace(key, *eq).first;
      }
      if (it->second) {
        cd.state = Cand::kDominated;
        cd.reason = "simulates exactly as its megatron-order twin";
      }
    }
  }

  // 5. Time the rest in order of their bound; stop when the bound cannot
  // beat the top-th best step. Evaluated in batches of `threads`, then
  // accepted in order as a sequential search would, so the result and the
  // counts do not depend on the thread count.
  std::vector<int> order;
  for (size_t i = 0; i < cands.size(); ++i)
    if (cands[i].state == Cand::kNew) order.push_back(static_cast<int>(i));
  auto by_bound = [&](int a, int b) {
    if (cands[a].est.bound_us != cands[b].est.bound_us) return cands[a].est.bound_us < cands[b].est.bound_us;
    return tie_key(cands[a].l) < tie_key(cands[b].l);
  };
  // A stop before the timing needs no order (nothing more is decided).
  if (!cancelled.load() && stopping()) cancelled = true;
  if (!cancelled.load()) std::sort(order.begin(), order.end(), by_bound);
  // The schedule replay is computed when a layout reaches the front (it
  // costs ~ a thousandth of a simulation, but there are 10^5 layouts): the
  // layout then moves to its place by the larger bound, so the order stays
  // that of the bounds as far as the search looks.
  auto refine = [&](size_t pos) {
    Cand& cd = cands[order[pos]];
    cd.refined = true;
    ++r.counts.replayed;
    cd.est.bound_us =
        std::max(cd.est.bound_us, replay_bound_us(layout_job(base, cd.l), proxies[static_cast<size_t>(cd.proxy)], &net,
                                    o.expert_dp_bound, &dp_shapes));
    const auto to = std::upper_bound(order.begin() + static_cast<std::ptrdiff_t>(pos) + 1, order.end(), order[pos], by_bound);
    std::rotate(order.begin() + static_cast<std::ptrdiff_t>(pos), order.begin() + static_cast<std::ptrdiff_t>(pos) + 1, to);
  };
  bool snapshot_due = false;
  int64_t sim_done = -1;  // the simulate phase's last reported count
  auto last_snapshot = std::chrono::steady_clock::time_point{};
  // Layouts whose selective recomputation recomputes nothing (Proxy::
  // recomputes) build the same programs as with no recomputation: one
  // build and simulation times both (keyed by the layout without its
  // recompute), the other takes its figures.
  std::map<std::string, Eval> twins;
  auto twin_key = [&](const Cand& cd) -> std::string {
    if (cd.l.recompute == Recompute::kFull || proxies[static_cast<size_t>(cd.proxy)].recomputes) return {};
    return build_key(cd.l);
  };
  size_t next = 0;
  const int batch = std::max(1, o.threads);
  bool stop = cancelled.load(), exhausted = false;
  while (!stop && !exhausted && next < order.size()) {
    // The next positions up to `batch` candidates to build and simulate
    // (those dominated already are passed over, and marked in the replay;
    // those whose twin was timed come along without counting).
    std::vector<int> chunk;
    size_t end = next, builds = 0;
    std::set<std::string> pending;
    // ZeRO-1 layouts of this chunk that take a fitting twin's figures: they
    // will be accepted before anything after them, so their ZeRO-2
    // siblings are dominated already (not built only to be dropped).
    std::set<std::string> zero1_copies;
    while (end < order.size() && builds < static_cast<size_t>(batch)) {
      const Cand& cd = cands[order[end]];
      if (!(cd.est.bound_us < threshold())) break;
      if (dominated(cd) || zero1_twin_in(cd, zero1_copies)) {
        ++end;
        continue;
      }
      if (!cd.refined && o.replay_bound) {
        refine(end);  // look at this position again: it may hold another layout now
        continue;
      }
      const std::string key = twin_key(cd);
      if (key.empty() || (!twins.count(key) && pending.insert(key).second)) ++builds;
      else if (cd.l.zero == 1) {
        auto it = twins.find(key);
        if (it != twins.end() && it->second.fits && !it->second.failed) zero1_copies.insert(sibling(cd.l));
      }
      chunk.push_back(order[end++]);
    }
    if (end == next) break;
    std::vector<Eval> evs(chunk.size());
    std::vector<int64_t> fresh;  // positions in chunk that need a build
    std::vector<size_t> copies;  // those that take their twin's figures
    std::set<std::string> building;
    for (size_t i = 0; i < chunk.size(); ++i) {
      const std::string key = twin_key(cands[chunk[i]]);
      if (!key.empty() && (twins.count(key) || building.count(key))) copies.push_back(i);
      else {
        fresh.push_back(static_cast<int64_t>(i));
        if (!key.empty()) building.insert(key);
      }
    }
    parallel_for(static_cast<int64_t>(fresh.size()), o.threads, [&](int64_t i) {
      if (stopping()) return;
      const size_t at = static_cast<size_t>(fresh[static_cast<size_t>(i)]);
      const Cand& cd = cands[chunk[at]];
      // A seed layout: its simulation (2b) is this one's.
      const auto seeded = seed_evals.find(chunk[at]);
      if (seeded != seed_evals.end()) {
        evs[at] = seeded->second;
        evs[at].c.bound_seconds = cd.est.bound_us / 1e6;
        return;
      }
      evs[at] = evaluate(cd, layout_job(base, cd.l), usable, backend);
    });
    for (int64_t i : fresh) {
      const Eval& ev = evs[static_cast<size_t>(i)];
      const std::string key = twin_key(cands[chunk[static_cast<size_t>(i)]]);
      if (!key.empty() && ev.done && !ev.cancelled) twins.emplace(key, ev);
    }
    for (size_t i : copies) {
      const Cand& cd = cands[chunk[i]];
      auto it = twins.find(twin_key(cd));
      if (it == twins.end()) continue;  // its twin was stopped: so is this one
      evs[i] = it->second;
      evs[i].c.layout = cd.l;
      evs[i].c.job = layout_job(base, cd.l);
      evs[i].c.bound_seconds = cd.est.bound_us / 1e6;
    }
    // Replayed in order, as a one-at-a-time search decides.
    size_t ci = 0;
    bool improved = false;  // the ranked rows changed (PlanOptions::improved)
    for (size_t k = next; k < end; ++k) {
      Cand& cd = cands[order[k]];
      Eval* ev = ci < chunk.size() && chunk[ci] == order[k] ? &evs[ci++] : nullptr;
      // Thresholds only fall: past the first candidate cut, all are cut.
      if (!(cd.est.bound_us < threshold())) { exhausted = true; break; }
      if (dominated(cd)) {
        cd.state = Cand::kDominated;
        next = k + 1;
        continue;
      }
      if (!ev || !ev->done || ev->cancelled) { stop = true; break; }
      next = k + 1;
      if (ev->failed) {
        cd.state = Cand::kDivisibility;
        cd.reason = ev->error.path + ": " + ev->error.message;
        continue;
      }
      if (!ev->fits) {
        cd.state = Cand::kMemory;
        cd.short_by = ev->c.peak_memory_bytes - usable;
        cd.reason = "memory: peak " + gib(ev->c.peak_memory_bytes) + " per GPU (summary.json), " + gib(usable) +
                    " usable (short by " + gib(cd.short_by) + ")";
        continue;
      }
      cd.state = Cand::kSimulated;
      if (cd.l.zero == 1) zero1_fits.insert(sibling(cd.l));
      // A variant (same layout but for recompute, same step) shares its
      // row: it does not take a place of the top N.
      if (variant_steps.insert({variant_key(cd.l), ev->c.step_seconds}).second) {
        const auto at = std::upper_bound(best.begin(), best.end(), ev->c.step_seconds * 1e6);
        if (static_cast<size_t>(at - best.begin()) < top) improved = true;
        best.insert(at, ev->c.step_seconds * 1e6);
      } else {
        improved = true;  // a row gains an alternative
      }
      accepted.push_back(std::move(ev->c));
    }
    // The best so far, at most every quarter second (a snapshot walks
    // every layout): a change held back goes out after a later batch.
    if (improved) snapshot_due = true;
    if (snapshot_due && o.improved &&
        std::chrono::steady_clock::now() - last_snapshot >= std::chrono::milliseconds(250)) {
      o.improved(snapshot(accepted));
      snapshot_due = false;
      last_snapshot = std::chrono::steady_clock::now();
    }
    if (stopping()) stop = true;
    // A probe for the smallest GPU count that fits: one is enough, the
    // first accepted (the order a one-thread search accepts in, so the
    // answer does not depend on the thread count).
    if (o.first_fit && !accepted.empty()) {
      accepted.resize(1);
      break;
    }
    // Done: the layouts decided (simulated, passed over) and those the
    // bound already cuts (the threshold only falls, so they stay cut); of
    // a total that is every layout still in the running after the
    // estimates: the total never shrinks and done never falls.
    const auto cut = std::partition_point(order.begin() + static_cast<std::ptrdiff_t>(next), order.end(),
                                          [&](int i) { return cands[i].est.bound_us < threshold(); });
    sim_done = static_cast<int64_t>(next) + (order.end() - cut);
    progress(sim_done, static_cast<int64_t>(order.size()), "simulate");
  }
  // A search that ran to its end decided every layout (the bound cut the
  // rest): the count reaches the total, also when the loop ended before
  // reporting it (the next layout already cut).
  if (!stop && !cancelled.load() && sim_done != static_cast<int64_t>(order.size()))
    progress(static_cast<int64_t>(order.size()), static_cast<int64_t>(order.size()), "simulate");
  r.complete = !stop && !cancelled.load();
  // A stopped search also returns the seed's simulations it did not reach.
  if (!r.complete) {
    for (auto& [at, ev] : seed_evals) {
      Cand& cd = cands[static_cast<size_t>(at)];
      if (!ev.fits || ev.failed || (cd.state != Cand::kNew && cd.state != Cand::kUnexamined)) continue;
      cd.state = Cand::kSimulated;
      if (variant_steps.insert({variant_key(cd.l), ev.c.step_seconds}).second)
        best.insert(std::upper_bound(best.begin(), best.end(), ev.c.step_seconds * 1e6), ev.c.step_seconds * 1e6);
      accepted.push_back(ev.c);
    }
  }
  lap(4);
  return conclude(r.complete, std::move(accepted));
}

}  // namespace

std::string plan_json(const PlanResult& r) {
  using ojson = nlohmann::ordered_json;
  ojson out = ojson::object();
  out["gpus"] = r.gpus;
  out["objective"] = r.objective;
  out["counts"] = {{"considered", r.counts.considered},
                   {"rejected",
                    {{"divisibility", r.counts.divisibility},
                     {"memory", r.counts.memory},
                     {"dominated", r.counts.dominated},
                     {"bound", r.counts.bound}}},
                   {"simulated", r.counts.simulated}};
  // Only a search that stopped early has layouts it never decided on.
  if (r.counts.unexamined > 0) out["counts"]["unexamined"] = r.counts.unexamined;
  ojson cands = ojson::array();
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    const PlanCandidate& c = r.candidates[i];
    ojson j = ojson::object();
    j["rank"] = static_cast<int64_t>(i + 1);
    j["layout"] = layout_json(c.layout);
    j["step_seconds"] = c.step_seconds;
    j["mfu"] = c.mfu;
    j["tokens_per_second"] = c.tokens_per_second;
    j["tokens_per_second_per_gpu"] = c.tokens_per_second_per_gpu;
    j["peak_memory_bytes"] = c.peak_memory_bytes;
    j["memory_capacity_bytes"] = c.memory_capacity_bytes;
    j["bubble_fraction"] = c.bubble_fraction;
    j["exposed_comm_seconds"] = {{"tp", c.exposed[0]}, {"cp", c.exposed[1]}, {"ep", c.exposed[2]},
                                 {"pp", c.exposed[3]}, {"dp", c.exposed[4]}};
    j["bound"] = c.bound;
    if (!c.low_confidence.empty()) j["low_confidence"] = c.low_confidence;
    // Only where some layout simulated to the same step (docs/plan.md).
    if (!c.alternatives.empty()) {
      ojson alts = ojson::array();
      for (const PlanLayout& a : c.alternatives) alts.push_back(layout_json(a));
      j["alternatives"] = std::move(alts);
    }
    j["job"] = ojson::parse(job_to_canonical_json(c.job), nullptr, false);
    cands.push_back(std::move(j));
  }
  out["candidates"] = std::move(cands);
  out["why_winner"] = r.why_winner;
  ojson misses = ojson::array();
  for (const PlanMiss& m : r.closest_misses)
    misses.push_back({{"layout", layout_json(m.layout)}, {"reason", m.reason}, {"short_by_bytes", m.short_by_bytes}});
  out["closest_misses"] = std::move(misses);
  out["complete"] = r.complete;
  if (r.min_gpus_lower_bound > 0) out["min_gpus_lower_bound"] = r.min_gpus_lower_bound;
  if (const PlanResult::SmallestFit& sf = r.smallest_fit; sf.from > 0) {
    ojson f = ojson::object();
    f["gpus"] = sf.gpus;
    if (sf.gpus > 0) {
      f["layout"] = layout_json(sf.layout);
      f["peak_memory_bytes"] = sf.peak_memory_bytes;
    }
    f["from"] = sf.from;
    f["largest_without"] = sf.largest_without;
    f["counts_tried"] = sf.counts_tried;
    f["every_count"] = sf.every_count;
    f["stopped"] = sf.stopped;
    out["smallest_fit"] = std::move(f);
  }
  return out.dump(2) + "\n";
}

}  // namespace sc
