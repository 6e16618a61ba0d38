// The compact forms lowered programs keep for millions of nodes: a node's
// fields (ProgramNode, 80 bytes, not a TraceNode's 128), its
// dependencies (DepList: two ids inline, more on the heap), its name as
// (micro-batch, suffix) rather than a string, its mesh axis as an index.
// Each must read back as the plain form it replaces.
#include <map>
#include <set>
#include <vector>

#include "../test_jobs.h"
#include "api/state.h"

using namespace sc;
using namespace sc::testing;

TEST_CASE("DepList: holds ids like a vector, inline up to two and on the heap beyond") {
  DepList d;
  CHECK(d.empty());
  CHECK(d.begin() == d.end());
  d.push_back(7);
  d.push_back(3);
  CHECK(d == std::vector<uint64_t>{7, 3});
  for (uint64_t i = 0; i < 10; ++i) d.push_back(100 + i);  // grows onto the heap
  REQUIRE(d.size() == 12);
  CHECK(d[0] == 7);
  CHECK(d[1] == 3);
  CHECK(d[11] == 109);

  DepList copy = d;  // a copy owns its ids
  copy[0] = 1;
  CHECK(d[0] == 7);
  DepList moved = std::move(copy);
  CHECK(moved.size() == 12);
  CHECK(moved[0] == 1);
  CHECK(copy.empty());  // NOLINT(bugprone-use-after-move): moved-from is empty, as a vector's

  DepList small = {5};
  DepList small_moved = std::move(small);
  CHECK(small_moved == std::vector<uint64_t>{5});
  small_moved = d;  // inline to heap
  CHECK(small_moved == d);
  small_moved = {4, 2};
  CHECK(small_moved == std::vector<uint64_t>{4, 2});
  small_moved = small_moved;  // self-assignment keeps the ids
  CHECK(small_moved == std::vector<uint64_t>{4, 2});

  const std::set<uint64_t> ids = {9, 1, 5};
  DepList from_set;
  from_set.assign(ids.begin(), ids.end());
  CHECK(from_set == std::vector<uint64_t>{1, 5, 9});
  from_set.clear();
  CHECK(from_set.empty());
  from_set = std::vector<uint64_t>{};
  CHECK(from_set.size() == 0);
  CHECK(sizeof(DepList) == sizeof(std::vector<uint64_t>));
}

TEST_CASE("ProgramNode: a program's node holds a TraceNode's fields in 80 bytes and gives them back") {
  // 32-bit dependency ids, two inline: 16 bytes.
  ProgramDeps d = {7, 3};
  CHECK(sizeof(ProgramDeps) == 16);
  CHECK(d == std::vector<uint64_t>{7, 3});
  d.push_back(uint64_t{4000000000});  // to the heap; still below 2^32
  CHECK(d == std::vector<uint64_t>{7, 3, 4000000000});
  // A stored name: empty without an allocation, else one string.
  NodeName none;
  CHECK(none.empty());
  CHECK(none.str().empty());
  NodeName opt = std::string("opt.adam");
  CHECK(opt == "opt.adam");
  CHECK(opt.rfind("opt.", 0) == 0);
  NodeName copy = opt;
  opt.clear();
  CHECK(copy == std::string("opt.adam"));
  CHECK(opt.empty());
  CHECK(sizeof(NodeName) == sizeof(void*));

  TraceNode t;
  t.id = 41;
  t.name = "opt.adam";
  t.kind = TraceNodeKind::kSend;
  t.coll = CollectiveType::kAllGather;
  t.deps = {1, 2, 40};
  t.num_ops = int64_t{1} << 50;
  t.tensor_size = uint64_t{3} << 40;
  t.duration_micros = 12345;
  t.comm_size = int64_t{5} << 33;
  t.tag = 77;
  t.output_bytes = uint64_t{9} << 35;
  const ProgramNode p = t;
  CHECK(sizeof(ProgramNode) == 80);
  const TraceNode back = p.to_trace_node();
  CHECK(back.id == 41);
  CHECK(back.name == "opt.adam");
  CHECK(back.kind == TraceNodeKind::kSend);
  CHECK(back.coll == CollectiveType::kAllGather);
  CHECK(back.deps == std::vector<uint64_t>{1, 2, 40});
  CHECK(back.num_ops == int64_t{1} << 50);
  CHECK(back.tensor_size == uint64_t{3} << 40);
  CHECK(back.duration_micros == 12345);
  CHECK(back.comm_size == int64_t{5} << 33);
  CHECK(back.tag == 77);
  CHECK(back.output_bytes == uint64_t{9} << 35);
  // A program's group and peer are per rank: unset until instantiate_rank.
  CHECK(back.group == 0);
  CHECK(back.peer == -1);
}

TEST_CASE("program names: a micro-batch's node is named mb<k>.<suffix> without a string of its own") {
  // 2 stages, 4 micro-batches, tp 2 with SP: forward, backward, the
  // optimizer phase and the DP/tied-embedding reductions.
  Job j = gpt_job(2, 256, 4, 2, 1, true, 1, 128, 4);
  j.parallel.pp = 2;
  Generator g = make(j);
  const GeneratorState& s = GeneratorAccess::state(g);
  for (int64_t stage = 0; stage < 2; ++stage) {
    const RoleProgram& p = s.program_of(stage);
    const RankTrace t = g.rank_trace(s.layout.with_coord(0, "pp", stage)).value();
    REQUIRE(t.nodes.size() == p.nodes.size());
    std::map<int32_t, int64_t> per_mb;  // nodes per micro-batch
    int64_t stored = 0;
    for (size_t i = 0; i < p.nodes.size(); ++i) {
      const std::string& name = t.nodes[i].name;
      const int32_t mb = p.micro_batch_of(i);
      CHECK(p.node_name(i) == name);
      if (mb >= 0) {
        const std::string prefix = "mb" + std::to_string(mb) + ".";
        REQUIRE(name.rfind(prefix, 0) == 0);
        CHECK(p.name_suffix(i) == name.substr(prefix.size()));
        CHECK(p.nodes[i].name.empty());  // the program keeps no string for it
        CHECK(mb < 4);
        per_mb[mb]++;
      } else {
        CHECK(name.rfind("mb", 0) != 0);
        CHECK(p.name_suffix(i) == name);
        CHECK(p.nodes[i].name == name);
        ++stored;
      }
      // Suffixes start with the phase.
      const std::string_view suffix = p.name_suffix(i);
      CHECK((suffix.starts_with("fwd.") || suffix.starts_with("bwd.") || suffix.starts_with("opt.")));
    }
    // Every micro-batch runs the same ops on a stage.
    REQUIRE(per_mb.size() == 4);
    for (const auto& [mb, n] : per_mb) CHECK(n == per_mb.begin()->second);
    CHECK(stored > 0);  // the optimizer phase
    // One suffix per distinct op, shared by the micro-batches.
    CHECK(p.name_suffixes.size() == static_cast<size_t>(per_mb.begin()->second));
  }
}

TEST_CASE("program names: a program built by hand keeps its names and axes as given") {
  RoleProgram p;
  TraceNode a, b, c;
  a.name = "mb7.fwd.L0.attn.qkv";
  b.name = "opt.adam";
  c.name = "bwd.x";
  c.kind = TraceNodeKind::kCollective;
  p.nodes = {a, b, c};
  p.node_axis = {0, 0, p.axis_id("tp")};
  CHECK(p.node_name(0) == "mb7.fwd.L0.attn.qkv");
  CHECK(p.micro_batch_of(0) == 7);
  CHECK(p.name_suffix(0) == "fwd.L0.attn.qkv");
  CHECK(p.micro_batch_of(1) == -1);
  CHECK(p.name_suffix(1) == "opt.adam");
  CHECK(p.axis_of(0).empty());
  CHECK(p.axis_of(2) == "tp");
  CHECK(p.axis_id("tp") == p.node_axis[2]);  // interned once
  CHECK(p.axes.size() == 2);
}
