// stagecraft validate's rules (core/check/validate.h): a generated job
// passes; then each rule is broken on purpose, on traces that went through
// the real writer and reader, and must be reported with its rule id, rank
// and node. The file-level rules (missing file, corrupt bytes, reader
// errors) are covered by tests/ctest/cli_validate.sh.
#include <chrono>
#include <optional>

#include "check/group_file.h"
#include "validate_test_util.h"

using namespace sc;
using namespace sc::testing;

namespace {

ValidationReport run(const Archive& a, const ValidateOptions& o = {}) { return validate_traces(a.ranks, a.groups, o); }

// The finding of `rule` at (rank, node id), if any; prints all if none.
std::optional<Violation> find(const ValidationReport& rep, const std::string& rule, int64_t rank,
                              std::optional<uint64_t> node) {
  for (const Violation& v : rep.listed()) {
    if (v.rule == rule && v.rank == rank && (!node || (v.has_node && v.node_id == *node))) return v;
  }
  for (const Violation& v : rep.listed()) MESSAGE(ValidationReport::format(v));
  return std::nullopt;
}

}  // namespace

TEST_CASE("validate: a generated job passes, with no warnings") {
  Archive a = tp_dp();
  auto rep = run(a);
  MESSAGE(rep.text());
  CHECK(rep.ok());
  CHECK(rep.errors() == 0);
  CHECK(rep.warnings() == 0);
  auto j = nlohmann::json::parse(rep.json(), nullptr, false);
  REQUIRE(j.is_object());
  CHECK(j["ok"] == true);
}

TEST_CASE("validate: per-rank rules R1-R5") {
  Archive a = tp_dp();
  auto& n = nodes(a, 1);
  REQUIRE(n.size() > 10);
  SUBCASE("R1 duplicate id") {
    n[6].id = n[5].id;
    auto rep = run(a);
    auto v = find(rep, "R1", 1, n[5].id);
    REQUIRE(v);
    CHECK(v->node_name == n[6].name);
    CHECK(!rep.ok());
  }
  SUBCASE("R2 dangling dependency") {
    n[3].deps.push_back(987654);
    auto v = find(run(a), "R2", 1, n[3].id);
    REQUIRE(v);
    CHECK(v->message.find("987654") != std::string::npos);
  }
  SUBCASE("R3 cycle") {
    size_t x = 1;
    while (n[x].deps.empty()) ++x;
    const uint64_t y = n[x].deps[0];  // x waits on y; now y waits on x too
    for (auto& m : n) if (m.id == y) m.deps.push_back(n[x].id);
    auto rep = run(a);
    auto v = find(rep, "R3", 1, std::nullopt);
    REQUIRE(v);
    CHECK((v->node_id == y || v->node_id == n[x].id));
    CHECK(v->message.find("cycle of 2 nodes") != std::string::npos);
  }
  SUBCASE("R3 a file without nodes") {
    n.clear();  // ASTRA-sim throws at start: no node is free of dependencies
    auto rep = run(a);
    auto v = find(rep, "R3", 1, std::nullopt);
    REQUIRE(v);
    CHECK(!v->has_node);
    CHECK(v->message.find("no nodes") != std::string::npos);
    CHECK(!rep.ok());
  }
  SUBCASE("R4 METADATA node") {
    n[4].kind = static_cast<TraceNodeKind>(1);
    auto v = find(run(a), "R4", 1, n[4].id);
    REQUIRE(v);
    CHECK(v->message.find("METADATA_NODE") != std::string::npos);
  }
  SUBCASE("R4 node type outside the schema") {
    n[4].kind = static_cast<TraceNodeKind>(12);
    auto v = find(run(a), "R4", 1, n[4].id);
    REQUIRE(v);
    CHECK(v->message.find("UNKNOWN(12)") != std::string::npos);
  }
  SUBCASE("R4 BARRIER and a collective type outside the schema") {
    TraceNode* c = nth_collective(a, 1, 0);
    c->coll = static_cast<CollectiveType>(9);
    auto v = find(run(a), "R4", 1, c->id);
    REQUIRE(v);
    CHECK(v->message.find("BARRIER(9)") != std::string::npos);
    c->coll = static_cast<CollectiveType>(10);
    v = find(run(a), "R4", 1, c->id);
    REQUIRE(v);
    CHECK(v->message.find("UNKNOWN(10)") != std::string::npos);
  }
  SUBCASE("R4 unsupported collective type") {
    TraceNode* c = nth_collective(a, 1, 0);
    c->coll = static_cast<CollectiveType>(1);  // REDUCE
    auto v = find(run(a), "R4", 1, c->id);
    REQUIRE(v);
    CHECK(v->message.find("REDUCE(1)") != std::string::npos);
  }
  SUBCASE("R5 tensor_size 0") {
    size_t i = 0;
    while (n[i].kind != TraceNodeKind::kCompute) ++i;
    n[i].tensor_size = 0;
    CHECK(find(run(a), "R5", 1, n[i].id));
  }
}

TEST_CASE("validate: groups and collective sequences (R6, R7)") {
  Archive a = tp_dp();
  SUBCASE("R6 pg_name not in the group file") {
    TraceNode* c = nth_collective(a, 2, 1);
    c->group = 999;
    auto v = find(run(a), "R6", 2, c->id);
    REQUIRE(v);
    CHECK(v->message.find("\"999\" is not a key") != std::string::npos);
  }
  SUBCASE("R6 rank not a member of its group") {
    TraceNode* c = nth_collective(a, 0, 0);
    for (const auto& [key, members] : a.groups)
      if (std::find(members.begin(), members.end(), 0) == members.end()) { c->group = key; break; }
    auto v = find(run(a), "R6", 0, c->id);
    REQUIRE(v);
    CHECK(v->message.find("not a member") != std::string::npos);
  }
  SUBCASE("R6 group file itself") {
    a.groups[0] = {0, 1};
    a.groups[77] = {3, 3, 9};
    auto rep = run(a);
    CHECK(find(rep, "R6", -1, std::nullopt));
    int r6 = 0;
    for (const auto& v : rep.listed()) r6 += v.rule == "R6" && v.rank == -1;
    CHECK(r6 == 3);  // key 0, member 3 twice, member 9 outside 0..3
  }
  SUBCASE("R7 a member issues a different size") {
    TraceNode* c = nth_collective(a, 1, 2);
    c->comm_size += 2;
    auto v = find(run(a), "R7", 1, c->id);
    REQUIRE(v);
    CHECK(v->message.find("hangs") != std::string::npos);
  }
  SUBCASE("R7 a member issues collectives in a different order") {
    // Two collectives on one group with different (type, size): swap them.
    auto& n = nodes(a, 3);
    TraceNode *first = nullptr, *second = nullptr;
    for (auto& x : n) {
      if (x.kind != TraceNodeKind::kCollective) continue;
      if (!first) { first = &x; continue; }
      if (x.group == first->group && (x.coll != first->coll || x.comm_size != first->comm_size)) { second = &x; break; }
    }
    REQUIRE(second);
    std::swap(first->coll, second->coll);
    std::swap(first->comm_size, second->comm_size);
    auto v = find(run(a), "R7", 3, first->id);
    REQUIRE(v);
  }
  SUBCASE("R7 a member lacks its last collective on a group") {
    auto& n = nodes(a, 3);  // rank 2 is the reference of its 2-member groups (lowest rank wins ties)
    size_t i = n.size();
    while (n[i - 1].kind != TraceNodeKind::kCollective) --i;
    const int64_t g = n[i - 1].group;
    n[i - 1].kind = TraceNodeKind::kCompute;
    n[i - 1].tensor_size = 1;
    auto rep = run(a);
    auto v = find(rep, "R7", 3, std::nullopt);
    REQUIRE(v);
    CHECK(v->message.find("on group " + std::to_string(g) + ", rank 2 issues") != std::string::npos);
    CHECK(v->message.find("the first one missing is") != std::string::npos);
  }
}

TEST_CASE("validate: sends and recvs pair up (R8)") {
  Archive a = tp_dp();
  auto add = [&](int64_t r, TraceNode n) { nodes(a, r).push_back(std::move(n)); return nodes(a, r).back().id; };
  SUBCASE("a matched pair passes") {
    add(0, p2p(TraceNodeKind::kSend, 100000, 1, 7, 4096));
    add(1, p2p(TraceNodeKind::kRecv, 100000, 0, 7, 4096));
    CHECK(run(a).ok());
  }
  SUBCASE("a send without a recv") {
    const uint64_t id = add(0, p2p(TraceNodeKind::kSend, 100000, 1, 7, 4096));
    auto v = find(run(a), "R8", 0, id);
    REQUIRE(v);
    CHECK(v->message.find("no matching recv on rank 1") != std::string::npos);
  }
  SUBCASE("tag mismatch: both ends reported, each naming the other") {
    const uint64_t s = add(0, p2p(TraceNodeKind::kSend, 100000, 1, 7, 4096));
    const uint64_t r = add(1, p2p(TraceNodeKind::kRecv, 100001, 0, 8, 4096));
    auto rep = run(a);
    auto vs = find(rep, "R8", 0, s);
    REQUIRE(vs);
    CHECK(vs->message.find("tag 8") != std::string::npos);
    auto vr = find(rep, "R8", 1, r);
    REQUIRE(vr);
    CHECK(vr->message.find("tag 7") != std::string::npos);
  }
  SUBCASE("multiplicity: two sends, one recv") {
    add(0, p2p(TraceNodeKind::kSend, 100000, 1, 7, 64));
    const uint64_t second = add(0, p2p(TraceNodeKind::kSend, 100001, 1, 7, 64));
    add(1, p2p(TraceNodeKind::kRecv, 100000, 0, 7, 64));
    auto rep = run(a);
    CHECK(rep.counts().at("R8") == 1);
    CHECK(find(rep, "R8", 0, second));
  }
  SUBCASE("a rank sending to and receiving from itself (issue 13 item 7)") {
    const uint64_t s = add(1, p2p(TraceNodeKind::kSend, 100000, 1, 7, 64));
    const uint64_t r = add(1, p2p(TraceNodeKind::kRecv, 100001, 1, 7, 64));
    auto rep = run(a);
    CHECK_FALSE(rep.ok());
    CHECK(rep.counts().at("R8") == 2);  // the pair matches itself, but each end names rank 1 itself
    auto vs = find(rep, "R8", 1, s);
    REQUIRE(vs);
    CHECK(vs->message == "comm_dst is 1, the rank itself (a send/recv needs another rank)");
    auto vr = find(rep, "R8", 1, r);
    REQUIRE(vr);
    CHECK(vr->message.find("comm_src is 1, the rank itself") == 0);
  }
  SUBCASE("peer out of range, negative tag") {
    const uint64_t id = add(2, p2p(TraceNodeKind::kSend, 100000, 4, -1, 64));
    auto rep = run(a);
    CHECK(rep.counts().at("R8") == 2);
    CHECK(find(rep, "R8", 2, id));
  }
}

TEST_CASE("validate: the archive (R9)") {
  Archive a = tp_dp();
  SUBCASE("a missing rank") {
    a.ranks.erase(a.ranks.begin() + 2);
    auto v = find(run(a), "R9", 2, std::nullopt);
    REQUIRE(v);
    CHECK(v->message.find("rank 2 is missing") != std::string::npos);
    ValidateOptions o;
    o.undecodable_ranks = {2};  // the caller reported it: not missing again
    CHECK(run(a, o).counts().count("R9") == 0);
  }
  SUBCASE("files of different jobs") {
    a.ranks[3].meta.config_hash = "0123";
    a.ranks[1].meta.world_size = 8;
    auto rep = run(a);
    CHECK(find(rep, "R9", 3, std::nullopt));
    CHECK(find(rep, "R9", 1, std::nullopt));
  }
  SUBCASE("no trace at all: the world is unknown, so the group file's members are not range-checked") {
    // A serving part a --ranks shard left without traces (docs/export.md):
    // its groups are the part's, the members beyond "rank 0..-1".
    a.ranks.clear();
    auto rep = run(a);
    CHECK(rep.counts().count("R6") == 0);
    a.groups.begin()->second.push_back(-1);  // a negative member stays an error
    CHECK(run(a).counts().count("R6") == 1);
  }
  SUBCASE("a corrupt world_size does not enumerate 2^40 ranks") {
    for (auto& t : a.ranks) t.meta.world_size = int64_t{1} << 40;
    auto rep = run(a);
    CHECK(rep.counts().at("R9") == 1);  // ranks 4..2^40-1, one range
  }
}

TEST_CASE("validate: R7b warns when collectives on a group are not chained") {
  // Two ranks, two independent all-reduces each: the same sequence by id,
  // but nothing stops the simulator issuing them in the other order.
  Archive a;
  a.groups[1] = {0, 1};
  for (int64_t r = 0; r < 2; ++r) {
    DecodedTrace t;
    t.rank = r;
    t.meta.world_size = 2;
    for (uint64_t id = 0; id < 2; ++id) {
      TraceNode n;
      n.id = id;
      n.name = "ar" + std::to_string(id);
      n.kind = TraceNodeKind::kCollective;
      n.comm_size = 100 * (1 + static_cast<int64_t>(id));
      n.group = 1;
      t.trace.nodes.push_back(n);
    }
    a.ranks.push_back(t);
  }
  auto rep = run(a);
  CHECK(rep.ok());
  CHECK(rep.warnings() == 2);
  CHECK(find(rep, "R7b", 0, 1));
  for (auto& t : a.ranks) t.trace.nodes[1].deps = {0};
  CHECK(run(a).warnings() == 0);
}

TEST_CASE("validate: a 200K-node chain with a cycle, no recursion") {
  Archive a;
  a.groups[1] = {0};
  DecodedTrace t;
  t.rank = 0;
  t.meta.world_size = 1;
  const uint64_t kN = 200000;
  for (uint64_t id = 0; id < kN; ++id) {
    TraceNode n;
    n.id = id;
    n.name = "c";
    n.tensor_size = 1;
    if (id) n.deps = {id - 1};
    t.trace.nodes.push_back(std::move(n));
  }
  t.trace.nodes[0].deps = {kN - 1};  // the whole chain is one loop
  a.ranks.push_back(std::move(t));
  const auto t0 = std::chrono::steady_clock::now();
  auto rep = run(a);
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  MESSAGE("200K-node validate: " << ms << " ms");
  auto v = find(rep, "R3", 0, std::nullopt);
  REQUIRE(v);
  CHECK(v->message.find("cycle of 200000 nodes") != std::string::npos);
  CHECK(rep.counts().at("R3") == 1);
}

TEST_CASE("validate: group file parser") {
  auto ok = parse_group_file("g.json", R"({"1": [0, 1], "2": [2, 3]})");
  REQUIRE(ok.ok());
  CHECK(ok->at(2) == std::vector<int64_t>{2, 3});
  CHECK(parse_group_file("g.json", R"({"0": []})").ok());  // R6 judges key 0, not the parser
  for (const char* bad : {"[1]", "{", R"({"01": [0]})", R"({"a": [0]})", R"({"-1": [0]})", R"({"1": 0})",
                          R"({"1": [0.5]})", R"({"1": ["0"]})", R"({"1": [18446744073709551615]})",
                          R"({"1234567890123456789": [0]})", R"({"1": [0], "1": [1]})", R"({"1": [[0]]})",
                          R"({"1": {"2": [0]}})", R"({"1": [0]} x)", ""}) {
    auto r = parse_group_file("g.json", bad);
    CHECK_MESSAGE(!r.ok(), bad);
    if (!r.ok()) CHECK(r.error().message.rfind("g.json: ", 0) == 0);
  }
}

TEST_CASE("validate: report text and JSON") {
  Archive a = tp_dp();
  for (auto& n : nodes(a, 1)) n.deps.push_back(555555);  // many R2 findings
  auto rep = run(a);
  const std::string text = rep.text(50);
  CHECK(text.find("(50 of " + std::to_string(rep.errors()) + " shown)") != std::string::npos);
  CHECK(text.find("errors, 0 warnings: R2 " + std::to_string(rep.errors())) != std::string::npos);
  auto j = nlohmann::json::parse(rep.json(), nullptr, false);
  REQUIRE(j.is_object());
  CHECK(j["ok"] == false);
  CHECK(j["counts"]["R2"] == rep.errors());
  CHECK(j["violations"][0]["rule"] == "R2");
  CHECK(j["violations"][0]["rank"] == 1);
}
