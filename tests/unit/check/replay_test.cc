#include "../test_jobs.h"
#include "api/state.h"
#include "check/replay.h"

using namespace sc;
using namespace sc::testing;

namespace {
std::vector<RankTrace> all_ranks(const Generator& g) {
  std::vector<RankTrace> v;
  for (int64_t r = 0; r < g.world_size(); ++r) v.push_back(g.rank_trace(r).value());
  return v;
}
}  // namespace

TEST_CASE("replay: GPT-3 175B, tp8 x dp4 with SP, runs to completion on all 32 ranks") {
  Job j = gpt_job(96, 12288, 96, 8, 4, true, 1, 2048, 8);
  auto g = make(j);
  auto ranks = all_ranks(g);
  REQUIRE(ranks.size() == 32);
  auto r = replay_traces(ranks, g.groups());
  for (const auto& p : r.problems) MESSAGE(p);
  CHECK(r.completed);
  int64_t total = 0;
  for (const auto& t : ranks) total += static_cast<int64_t>(t.nodes.size());
  CHECK(r.nodes_finished == total);
  CHECK(r.makespan_micros > 0);
  MESSAGE("replayed " << total << " nodes, makespan " << r.makespan_micros << " us");
}

TEST_CASE("replay: a mismatched or missing collective is reported, not passed") {
  auto g = make(gpt_job(2, 512, 8, 2, 2, true, 1, 256, 4));
  SUBCASE("size mismatch on one member") {
    auto ranks = all_ranks(g);
    for (auto& n : ranks[1].nodes)
      if (n.kind == TraceNodeKind::kCollective) { n.comm_size += 2; break; }
    auto r = replay_traces(ranks, g.groups());
    CHECK(!r.completed);
    REQUIRE(!r.problems.empty());
    CHECK(r.problems[0].find("rank 1 issues") != std::string::npos);
  }
  SUBCASE("one member never issues its last collective: its peers hang") {
    auto ranks = all_ranks(g);
    auto& nodes = ranks[2].nodes;
    while (nodes.back().kind != TraceNodeKind::kCollective) nodes.pop_back();
    nodes.pop_back();
    auto r = replay_traces(ranks, g.groups());
    CHECK(!r.completed);
    bool names_hang = false;
    for (const auto& p : r.problems) names_hang |= p.find("hangs at node") != std::string::npos;
    CHECK(names_hang);
  }
  SUBCASE("a group file whose members are other ranks, with as many of them: a non-member's collective is named") {
    // The group of ranks {0, 1}'s first collective listed as {0, 3}: two
    // members issue on it, as many as it lists, but rank 1 is not one.
    auto ranks = all_ranks(g);
    const TraceNode* first = nullptr;
    for (const auto& n : ranks[1].nodes)
      if (n.kind == TraceNodeKind::kCollective) { first = &n; break; }
    REQUIRE(first);
    GroupTable groups = g.groups();
    std::vector<int64_t>& members = groups[first->group];
    REQUIRE(std::find(members.begin(), members.end(), 1) != members.end());
    std::replace(members.begin(), members.end(), int64_t{1}, int64_t{3});
    auto r = replay_traces(ranks, groups);
    CHECK(!r.completed);
    bool named = false;
    for (const auto& p : r.problems)
      named |= p.find("rank 1 node " + std::to_string(first->id) + ": issues a collective on group " +
                      std::to_string(first->group) + ", of which it is not a member") != std::string::npos;
    CHECK(named);
    // A group with no members at all is named as such.
    members.clear();
    r = replay_traces(ranks, groups);
    CHECK(!r.completed);
    bool empty = false;
    for (const auto& p : r.problems) empty |= p.find("which has no members") != std::string::npos;
    CHECK(empty);
  }
}

namespace {

TraceNode compute(uint64_t id, uint64_t dur, std::vector<uint64_t> deps, std::string name = "c") {
  TraceNode n;
  n.id = id;
  n.name = std::move(name);
  n.duration_micros = dur;
  n.deps = std::move(deps);
  return n;
}
TraceNode p2p(uint64_t id, TraceNodeKind k, int32_t tag, std::vector<uint64_t> deps) {
  TraceNode n;
  n.id = id;
  n.name = k == TraceNodeKind::kSend ? "s" : "r";
  n.kind = k;
  n.tag = tag;
  n.comm_size = 64;
  n.deps = std::move(deps);
  return n;
}

}  // namespace

TEST_CASE("replay_pipeline: compute waits for its sends' producers, free communication, by hand") {
  // stage 0: A (10 µs), send A to stage 1, then the optimizer step (2 µs,
  // not counted); stage 1: C (3 µs), the receive, B (5 µs) after C and the
  // receive. B starts at max(3, 10) = 10 and ends at 15.
  std::vector<TraceNode> s0 = {compute(0, 10, {}), p2p(1, TraceNodeKind::kSend, 7, {0}), compute(2, 2, {0, 1}, "opt.adam")};
  std::vector<TraceNode> s1 = {compute(0, 3, {}), p2p(1, TraceNodeKind::kRecv, 7, {}), compute(2, 5, {0, 1})};
  std::vector<const std::vector<TraceNode>*> st = {&s0, &s1};
  std::vector<std::vector<int64_t>> peers = {{-1, 1, -1}, {-1, 0, -1}};
  for (bool events : {false, true}) {
    CAPTURE(events);
    PipelineTiming t = events ? replay_pipeline_events(st, peers) : replay_pipeline(st, peers);
    CHECK(t.completed);
    CHECK(t.busy_micros == std::vector<double>{10, 8});
    CHECK(t.end_micros == std::vector<double>{10, 15});
  }
  SUBCASE("compute nodes that are not one chain share the stream: 4 then 6 µs, not side by side") {
    std::vector<TraceNode> one = {compute(0, 4, {}), compute(1, 6, {})};
    std::vector<const std::vector<TraceNode>*> o = {&one};
    PipelineTiming t = replay_pipeline(o, {{-1, -1}});
    CHECK(t.completed);
    CHECK(t.end_micros == std::vector<double>{10});
  }
  SUBCASE("a send without its receive hangs") {
    std::vector<TraceNode> lone = {compute(0, 4, {}), p2p(1, TraceNodeKind::kSend, 3, {0})};
    std::vector<TraceNode> other = {compute(0, 1, {})};
    std::vector<const std::vector<TraceNode>*> o = {&lone, &other};
    CHECK(!replay_pipeline(o, {{-1, 1}, {-1}}).completed);
  }
  SUBCASE("a receive without its send hangs, and so does one of a key sent twice") {
    std::vector<TraceNode> waits = {p2p(0, TraceNodeKind::kRecv, 3, {}), compute(1, 4, {0})};
    std::vector<TraceNode> other = {compute(0, 1, {})};
    std::vector<const std::vector<TraceNode>*> o = {&waits, &other};
    CHECK(!replay_pipeline(o, {{1, -1}, {-1}}).completed);
    std::vector<TraceNode> twice = {compute(0, 1, {}), p2p(1, TraceNodeKind::kSend, 3, {0}),
                                    p2p(2, TraceNodeKind::kSend, 3, {0})};
    std::vector<TraceNode> once = {p2p(0, TraceNodeKind::kRecv, 3, {}), compute(1, 4, {0})};
    std::vector<const std::vector<TraceNode>*> d = {&twice, &once};
    CHECK(!replay_pipeline(d, {{-1, 1, 1}, {0, -1}}).completed);
  }
}

TEST_CASE("replay_pipeline: the longest path equals the event replay on lowered pipelines") {
  const char* jobs[] = {
      R"({"model":{"preset":"llama2-7b","num_layers":4},"parallel":{"tp":2,"pp":4},
          "training":{"seq_len":128,"global_batch_size":8,"schedule":"gpipe"}})",
      R"({"model":{"preset":"llama2-7b","num_layers":4},"parallel":{"tp":2,"pp":2,"sequence_parallel":true},
          "training":{"seq_len":128,"global_batch_size":8,"schedule":"1f1b"}})",
      R"({"model":{"preset":"llama2-7b","num_layers":8},"parallel":{"pp":4,"virtual_stages":2,"dp":2,"zero":1},
          "training":{"seq_len":64,"global_batch_size":16,"schedule":"interleaved-1f1b"}})",
      R"({"model":{"preset":"llama2-7b","num_layers":4},"parallel":{"pp":2,"dp":2,"zero":3},
          "training":{"seq_len":64,"global_batch_size":8,"schedule":"zero-bubble"}})",
      R"({"model":{"preset":"llama2-7b","num_layers":2},"parallel":{"cp":4,"cp_algorithm":"ring","pp":2},
          "training":{"seq_len":256,"global_batch_size":4}})",
  };
  for (const char* text : jobs) {
    CAPTURE(text);
    auto j = parse_job(text);
    REQUIRE(j.ok());
    auto g = make(*j);
    const GeneratorState& s = GeneratorAccess::state(g);
    std::vector<const std::vector<ProgramNode>*> st;
    std::vector<std::vector<int64_t>> peers;
    for (int64_t i = 0; i < s.num_stages(); ++i) {
      const RoleProgram& p = s.program_of(i);
      st.push_back(&p.nodes);
      auto& v = peers.emplace_back(p.nodes.size(), -1);
      for (size_t n = 0; n < p.nodes.size(); ++n)
        if (p.nodes[n].kind == TraceNodeKind::kSend || p.nodes[n].kind == TraceNodeKind::kRecv)
          v[n] = p.ring_offset[n] != 0 ? i : p.peer_stage[n];
    }
    PipelineTiming fast = replay_pipeline(st, peers), ev = replay_pipeline_events(st, peers);
    CHECK(fast.completed);
    CHECK(ev.completed);
    CHECK(fast.busy_micros == ev.busy_micros);
    CHECK(fast.end_micros == ev.end_micros);
    // The programs read in place (peers from their columns) give the same.
    std::vector<const RoleProgram*> programs;
    for (int64_t i = 0; i < s.num_stages(); ++i) programs.push_back(&s.program_of(i));
    PipelineTiming in_place = replay_pipeline(programs);
    CHECK(in_place.completed);
    CHECK(in_place.busy_micros == ev.busy_micros);
    CHECK(in_place.end_micros == ev.end_micros);
    double makespan = 0;
    for (double e : fast.end_micros) makespan = std::max(makespan, e);
    CHECK(makespan > 0);
  }
}
