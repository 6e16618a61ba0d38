// Helpers for tests that drive the whole pipeline through the façade.
#pragma once

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <tuple>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "api/api.h"
#include "base/json_fields.h"
#include "sim/simulate.h"
#include "check/replay.h"
#include "check/validate.h"
#include "emit/chakra_writer.h"
#include "sim/network.h"

namespace sc::testing {

// Whether `s` contains `part` (error messages, node names, JSON text).
inline bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

inline std::string slurp(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A JSON file of the source tree (measurements under tests/bench/gpu/
// results, fixtures), parsed; the test stops if it is missing or invalid.
inline jsonf::Json source_json(const std::string& relative) {
  const std::string text = slurp(std::filesystem::path(STAGECRAFT_SOURCE_DIR) / relative);
  REQUIRE_MESSAGE(!text.empty(), relative);
  Result<jsonf::Json> j = jsonf::parse_text(text);
  REQUIRE_MESSAGE(j.ok(), relative);
  return *j;
}

inline Job gpt_job(int64_t L, int64_t h, int64_t a, int64_t tp, int64_t dp, bool sp, int64_t b, int64_t s,
                   int64_t B = 0) {
  Job j;
  j.model.name = "test-gpt";
  j.model.num_layers = L;
  j.model.hidden = h;
  j.model.num_heads = a;
  j.model.num_kv_heads = a;
  j.model.head_dim = h / a;
  j.model.ffn_hidden = 4 * h;
  j.model.vocab = 51200;
  j.model.max_positions = s;
  j.parallel.tp = tp;
  j.parallel.dp = dp;
  j.parallel.sequence_parallel = sp;
  j.training.seq_len = s;
  j.training.micro_batch_size = b;
  j.training.global_batch_size = B ? B : b * dp;
  j.hardware = hardware_preset("h100").value();
  return j;
}

// A preset's published architecture (model/presets.cc); fails the test if unknown.
inline ModelConfig preset(const std::string& name) {
  Result<ModelConfig> m = model_preset(name);
  REQUIRE_MESSAGE(m.ok(), name);
  return *m;
}

// Jamba-v0.1's published layout (ai21labs/Jamba-v0.1 config.json): 32
// Jamba layers as 64 blocks, mixer then FFN; attention at offset 4 of every
// 8 (attn_layer_period 8, attn_layer_offset 4), MIXER ('M' Mamba-2, 'S'
// Mamba-1) otherwise; MoE at offset 1 of every 2 (expert_layer_period 2,
// expert_layer_offset 1), a dense MLP otherwise. Counted by hand: 4
// attention, 28 Mamba, 16 MoE, 16 MLP blocks.
inline void check_jamba_layout(const ModelConfig& m, char mixer) {
  REQUIRE(m.num_layers == 64);
  int attn = 0, mamba = 0, moe = 0, mlp = 0;
  for (int64_t l = 0; l < m.num_layers; ++l) {
    const int64_t jl = l / 2;  // Jamba layer
    if (l % 2 == 0) {
      CHECK(m.block(l) == (jl % 8 == 4 ? '*' : mixer));
      (m.block(l) == '*' ? attn : mamba)++;
    } else {
      CHECK(m.block(l) == (jl % 2 == 1 ? 'E' : '-'));
      (m.block(l) == 'E' ? moe : mlp)++;
    }
  }
  CHECK(attn == 4);
  CHECK(mamba == 28);
  CHECK(moe == 16);
  CHECK(mlp == 16);
}

// A job from its JSON text, built; fails the test with the engine's message.
inline Generator generator_from_json(const std::string& text) {
  Result<Job> job = parse_job(text);
  REQUIRE_MESSAGE(job.ok(), job.error().message);
  Result<Generator> g = Generator::create(*job);
  REQUIRE_MESSAGE(g.ok(), g.error().message);
  return std::move(g).value();
}

// A job from its JSON text; a parse error fails the test with its message.
inline Job job_of(const std::string& text) {
  Result<Job> j = parse_job(text);
  REQUIRE_MESSAGE(j.ok(), j.error().message);
  return *j;
}

inline Generator make(const Job& j) {
  auto g = Generator::create(j);
  if (!g.ok()) FAIL(g.error().to_string());
  return std::move(g).value();
}

inline nlohmann::json summary(const Generator& g) {
  auto j = nlohmann::json::parse(g.summary_json(), nullptr, false);
  REQUIRE(!j.is_discarded());
  return j;
}

// Replays every rank together (core/check/replay.h) and expects every node
// to finish; prints the hangs otherwise.
inline void check_runs_to_completion(const Generator& g) {
  std::vector<RankTrace> ranks;
  for (int64_t r = 0; r < g.world_size(); ++r) ranks.push_back(g.rank_trace(r).value());
  auto res = replay_traces(ranks, g.groups());
  for (const auto& p : res.problems) MESSAGE(p);
  CHECK(res.completed);
}

// The sweeps' properties, on every rank together: the traces run to
// completion, every send has exactly one receive of the same size and tag,
// and the FLOPs executed summed over all ranks equal summary s's
// flops.executed_per_iteration.
inline void check_complete_balanced_and_summed(const Generator& g, const nlohmann::json& s) {
  std::vector<RankTrace> ranks;
  std::map<std::tuple<int64_t, int64_t, int32_t, int64_t>, int> p2p;
  unsigned __int128 flops = 0;
  for (int64_t r = 0; r < g.world_size(); ++r) {
    ranks.push_back(g.rank_trace(r).value());
    for (const auto& n : ranks.back().nodes) {
      flops += static_cast<unsigned __int128>(n.num_ops);
      if (n.kind == TraceNodeKind::kSend) p2p[{r, n.peer, n.tag, n.comm_size}]++;
      if (n.kind == TraceNodeKind::kRecv) p2p[{n.peer, r, n.tag, n.comm_size}]--;
    }
  }
  auto res = replay_traces(ranks, g.groups());
  for (const auto& p : res.problems) MESSAGE(p);
  CHECK(res.completed);
  for (const auto& [k, v] : p2p) CHECK(v == 0);
  CHECK(static_cast<uint64_t>(flops) == s["flops"]["executed_per_iteration"].get<uint64_t>());
}

// Every rank's trace through the Chakra writer and reader, then the
// cross-rank validator against the job's groups.
inline ValidationReport validate_generated(const Generator& g) {
  std::vector<DecodedTrace> ranks;
  for (int64_t r = 0; r < g.world_size(); ++r) {
    std::string bytes;
    REQUIRE(write_chakra_trace(g.rank_trace(r).value(), g.metadata(), &bytes).ok());
    auto t = read_chakra_trace(bytes);
    REQUIRE(t.ok());
    ranks.push_back(std::move(t).value());
  }
  return validate_traces(ranks, g.groups());
}

// Two rank traces hold the same nodes (every field a Chakra node gets).
inline bool same_nodes(const RankTrace& a, const RankTrace& b) {
  if (a.nodes.size() != b.nodes.size()) return false;
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    const TraceNode &x = a.nodes[i], &y = b.nodes[i];
    if (std::tie(x.id, x.name, x.kind, x.coll, x.num_ops, x.tensor_size, x.duration_micros, x.comm_size, x.group, x.peer,
                 x.tag, x.output_bytes) != std::tie(y.id, y.name, y.kind, y.coll, y.num_ops, y.tensor_size,
                                                    y.duration_micros, y.comm_size, y.group, y.peer, y.tag, y.output_bytes) ||
        !(x.deps == y.deps))
      return false;
  }
  return true;
}

// A rank trace's nodes by name: node(name) fails the test when absent;
// depends(a, b) says whether a lists b among its dependencies.
struct NodesByName {
  explicit NodesByName(const RankTrace& t) {
    for (const auto& n : t.nodes) by_name[n.name] = &n;
  }
  const TraceNode* node(const std::string& name) const {
    auto it = by_name.find(name);
    REQUIRE_MESSAGE(it != by_name.end(), name);
    return it->second;
  }
  static bool depends(const TraceNode* a, const TraceNode* b) {
    return std::find(a->deps.begin(), a->deps.end(), b->id) != a->deps.end();
  }
  size_t count(const std::string& name) const { return by_name.count(name); }
  std::map<std::string, const TraceNode*> by_name;
};

// Appends a node to a program built by hand (the hand-timed simulator
// tests): a compute node of `dur` µs, or a transfer of `comm_size` bytes
// (a collective is an all-to-all; a send or receive has its peer stage
// and tag), on mesh axis `axis` and side stream `side`.
inline void add_hand_node(RoleProgram& p, TraceNodeKind k, uint64_t dur, std::vector<uint64_t> deps, uint8_t axis,
                          uint8_t side, int64_t comm_size, int32_t peer = -1, int32_t tag = 0) {
  TraceNode x;
  x.id = p.nodes.size();
  x.name = "n" + std::to_string(x.id);
  x.kind = k;
  if (k == TraceNodeKind::kCompute) {
    x.duration_micros = dur;
  } else {
    x.comm_size = comm_size, x.tag = tag;
    if (k == TraceNodeKind::kCollective) x.coll = CollectiveType::kAllToAll;
  }
  x.deps = std::move(deps);
  p.nodes.push_back(x);
  p.node_axis.push_back(axis);
  p.peer_stage.push_back(peer);
  p.ring_offset.push_back(0);
  p.side_stream.push_back(side);
}

// Two ranks in one NVLink domain of 8 at 100 B/µs and 1 µs latency (the
// scale-out tier 10 B/µs, 5 µs, unused), one protocol: a network whose
// transfer times the hand-timed simulator tests derive (p2p_micros:
// latency + bytes / bandwidth).
inline NetworkModel two_rank_network() {
  NetworkModel net;
  net.world = 2;
  net.domain_size = 8;
  net.domain_bw = 100;
  net.domain_lat = 1;
  net.scale_out_bw = 10;
  net.scale_out_lat = 5;
  net.nccl_protocols = false;
  return net;
}

// A program built by hand, run as the one pipeline stage of two ranks
// (ep 2 in two_rank_network's domain) in Megatron's streams: the
// hand-timed simulator tests set net and o, then run() (options or network
// of their own: simulate_programs on the members).
struct HandSim {
  RankLayout layout{{{"ep", 2}, {"pp", 1}}};
  NetworkModel net = two_rank_network();
  std::vector<SimStage> st = std::vector<SimStage>(1);
  SimOptions o;
  int64_t max_key = 0;
  explicit HandSim(const RoleProgram& p) {
    st[0].program = &p;
    o.streams = SimStreams::kMegatron;
    max_key = layout.group_id(0, "ep");
  }
  SimResult run() const { return run(o); }
  SimResult run(const SimOptions& with) const {
    Result<SimResult> r = simulate_programs(st, layout, max_key, net, with);
    REQUIRE_MESSAGE(r.ok(), r.error().message);
    return *r;
  }
};

}  // namespace sc::testing
