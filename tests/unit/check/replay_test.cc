#include "../test_jobs.h"
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
}
