// The streaming validator (StreamingValidator, and validate_traces on top
// of it) against the in-memory validator it replaced, kept as an oracle in
// validate_reference.cc: on a valid job and on each deliberately broken
// archive of validate_test.cc (and a few more), all three paths must report
// the same findings: same counts per rule, same (rule, rank, node, message)
// lines. The only documented difference is the order of R7 findings within
// one group (ascending rank now, by sequence before), so lines are compared
// as sorted lists, and the order is compared for everything else.
#include <algorithm>
#include <functional>

#include "validate_reference.h"
#include "validate_test_util.h"

using namespace sc;
using namespace sc::testing;

namespace {

// pp 2 x dp 2, 4 micro-batches: sends and recvs between the stages.
Archive pp_dp() {
  Job j = gpt_job(4, 512, 8, 1, 2, false, 1, 256, 8);
  j.parallel.pp = 2;
  return through_reader(make(j));
}

std::vector<std::string> lines(const ValidationReport& rep, bool without_r7 = false) {
  std::vector<std::string> out;
  for (const Violation& v : rep.listed())
    if (!without_r7 || v.rule != "R7") out.push_back(ValidationReport::format(v));
  return out;
}

// The streaming API used as the CLI does: each rank fed as a copy that is
// destroyed right after, checked on "another thread" (check() then take()),
// the loader handing out fresh copies.
ValidationReport stream(const Archive& a, const ValidateOptions& o, bool with_loader = true, bool split = true) {
  std::vector<const DecodedTrace*> order;
  for (const auto& t : a.ranks) if (t.rank < 0) order.push_back(&t);
  std::vector<const DecodedTrace*> sorted;
  for (const auto& t : a.ranks) if (t.rank >= 0) sorted.push_back(&t);
  std::stable_sort(sorted.begin(), sorted.end(), [](auto* x, auto* y) { return x->rank < y->rank; });
  order.insert(order.end(), sorted.begin(), sorted.end());
  ValidateOptions opt = o;
  if (!sorted.empty() && opt.assumed_world_size == 0) opt.assumed_world_size = sorted.back()->rank + 1;
  StreamingValidator::RankLoader loader;
  if (with_loader) {
    loader = [sorted](int64_t r, DecodedTrace* scratch) -> const DecodedTrace* {
      for (auto* t : sorted)
        if (t->rank == r) { *scratch = *t; return scratch; }
      return nullptr;
    };
  }
  StreamingValidator v(a.groups, opt, loader);
  for (const DecodedTrace* t : order) {
    DecodedTrace copy = *t;  // dropped at the end of the iteration
    if (split && v.world_size() > 0) {
      RankCheck c = v.check(copy);
      copy = DecodedTrace{};
      v.take(std::move(c));
    } else {
      v.add_rank(copy);
    }
  }
  return v.finish();
}

// All three paths agree with the oracle.
void same_as_reference(const Archive& a, const ValidateOptions& o = {}) {
  const ValidationReport want = reference::validate_traces(a.ranks, a.groups, o);
  const ValidationReport got[] = {validate_traces(a.ranks, a.groups, o), stream(a, o)};
  for (const ValidationReport& rep : got) {
    CHECK(rep.errors() == want.errors());
    CHECK(rep.warnings() == want.warnings());
    CHECK(rep.counts() == want.counts());
    auto x = lines(rep), y = lines(want);
    CHECK(lines(rep, true) == lines(want, true));  // same order outside R7
    std::sort(x.begin(), x.end());
    std::sort(y.begin(), y.end());
    CHECK(x == y);
    if (x != y) {
      for (const auto& l : lines(want)) MESSAGE("want: " << l);
      for (const auto& l : lines(rep)) MESSAGE("got:  " << l);
    }
  }
  CHECK(lines(got[0]) == lines(got[1]));
}


// Each broken archive of validate_test.cc, and more.
struct Case {
  const char* name;
  std::function<void(Archive&, ValidateOptions&)> breakit;
  bool pp = false;  // on pp_dp() instead of tp_dp()
};

const std::vector<Case>& cases() {
  static const std::vector<Case> kCases = {
      {"valid", [](Archive&, ValidateOptions&) {}},
      {"valid pp", [](Archive&, ValidateOptions&) {}, true},
      {"R1 duplicate id", [](Archive& a, ValidateOptions&) { nodes(a, 1)[6].id = nodes(a, 1)[5].id; }},
      {"R2 dangling dependency", [](Archive& a, ValidateOptions&) { nodes(a, 1)[3].deps.push_back(987654); }},
      {"R3 cycle",
       [](Archive& a, ValidateOptions&) {
         auto& n = nodes(a, 1);
         size_t x = 1;
         while (n[x].deps.empty()) ++x;
         const uint64_t y = n[x].deps[0];
         for (auto& m : n) if (m.id == y) m.deps.push_back(n[x].id);
       }},
      {"R4 METADATA node", [](Archive& a, ValidateOptions&) { nodes(a, 1)[4].kind = static_cast<TraceNodeKind>(1); }},
      {"R4 REDUCE", [](Archive& a, ValidateOptions&) { nth_collective(a, 1, 0)->coll = static_cast<CollectiveType>(1); }},
      {"R5 tensor_size 0",
       [](Archive& a, ValidateOptions&) {
         for (auto& n : nodes(a, 1)) if (n.kind == TraceNodeKind::kCompute) { n.tensor_size = 0; break; }
       }},
      {"R6 pg_name not a key", [](Archive& a, ValidateOptions&) { nth_collective(a, 2, 1)->group = 999; }},
      {"R6 not a member",
       [](Archive& a, ValidateOptions&) {
         TraceNode* c = nth_collective(a, 0, 0);
         for (const auto& [key, members] : a.groups)
           if (std::find(members.begin(), members.end(), 0) == members.end()) { c->group = key; break; }
       }},
      {"R6 group file",
       [](Archive& a, ValidateOptions&) {
         a.groups[0] = {0, 1};
         a.groups[77] = {3, 3, 9};
       }},
      {"R7 size", [](Archive& a, ValidateOptions&) { nth_collective(a, 1, 2)->comm_size += 2; }},
      {"R7 order",
       [](Archive& a, ValidateOptions&) {
         TraceNode *first = nullptr, *second = nullptr;
         for (auto& x : nodes(a, 3)) {
           if (x.kind != TraceNodeKind::kCollective) continue;
           if (!first) { first = &x; continue; }
           if (x.group == first->group && (x.coll != first->coll || x.comm_size != first->comm_size)) { second = &x; break; }
         }
         std::swap(first->coll, second->coll);
         std::swap(first->comm_size, second->comm_size);
       }},
      {"R7 last collective missing",
       [](Archive& a, ValidateOptions&) {
         auto& n = nodes(a, 3);
         size_t i = n.size();
         while (n[i - 1].kind != TraceNodeKind::kCollective) --i;
         n[i - 1].kind = TraceNodeKind::kCompute;
         n[i - 1].tensor_size = 1;
       }},
      {"R7 an extra collective, and the lowest rank is the odd one",
       [](Archive& a, ValidateOptions&) {
         TraceNode c = *nth_collective(a, 0, 0);
         c.id = 100000;
         c.name = "extra";
         c.deps.clear();
         nodes(a, 0).push_back(c);
       }},
      {"R7 every collective of a rank gone (empty sequence)",
       [](Archive& a, ValidateOptions&) {
         for (auto& n : nodes(a, 2))
           if (n.kind == TraceNodeKind::kCollective) { n.kind = TraceNodeKind::kCompute; n.tensor_size = 1; }
       }},
      {"R7 several classes on one group (dp 2 x pp 2: 2-member groups tie)",
       [](Archive& a, ValidateOptions&) {
         nth_collective(a, 1, 0)->comm_size += 8;
         nth_collective(a, 2, 0)->comm_size += 16;
         nth_collective(a, 3, 1)->coll = CollectiveType::kAllGather;
       },
       true},
      {"R8 matched pair",
       [](Archive& a, ValidateOptions&) {
         nodes(a, 0).push_back(p2p(TraceNodeKind::kSend, 100000, 1, 7, 4096));
         nodes(a, 1).push_back(p2p(TraceNodeKind::kRecv, 100000, 0, 7, 4096));
       }},
      {"R8 send without recv", [](Archive& a, ValidateOptions&) { nodes(a, 0).push_back(p2p(TraceNodeKind::kSend, 100000, 1, 7, 4096)); }},
      {"R8 tag mismatch",
       [](Archive& a, ValidateOptions&) {
         nodes(a, 0).push_back(p2p(TraceNodeKind::kSend, 100000, 1, 7, 4096));
         nodes(a, 1).push_back(p2p(TraceNodeKind::kRecv, 100001, 0, 8, 4096));
       }},
      {"R8 multiplicity",
       [](Archive& a, ValidateOptions&) {
         nodes(a, 0).push_back(p2p(TraceNodeKind::kSend, 100000, 1, 7, 64));
         nodes(a, 0).push_back(p2p(TraceNodeKind::kSend, 100001, 1, 7, 64));
         nodes(a, 1).push_back(p2p(TraceNodeKind::kRecv, 100000, 0, 7, 64));
       }},
      {"R8 peer out of range, negative tag",
       [](Archive& a, ValidateOptions&) { nodes(a, 2).push_back(p2p(TraceNodeKind::kSend, 100000, 4, -1, 64)); }},
      {"R8 self send, three recvs",
       [](Archive& a, ValidateOptions&) {
         nodes(a, 2).push_back(p2p(TraceNodeKind::kSend, 100000, 2, 1, 64));
         for (uint64_t i = 1; i <= 3; ++i) nodes(a, 2).push_back(p2p(TraceNodeKind::kRecv, 100000 + i, 2, 1, 64));
       }},
      {"R8 generated pipeline: a recv of the wrong size, a send of the wrong tag",
       [](Archive& a, ValidateOptions&) {
         int seen = 0;
         for (auto& n : nodes(a, 3)) if (n.kind == TraceNodeKind::kRecv && seen++ == 1) n.comm_size += 1;
         for (auto& n : nodes(a, 0)) if (n.kind == TraceNodeKind::kSend) { n.tag += 1000; break; }
       },
       true},
      {"R8 to a missing rank is not reported",
       [](Archive& a, ValidateOptions&) {
         nodes(a, 0).push_back(p2p(TraceNodeKind::kSend, 100000, 3, 7, 64));
         a.ranks.erase(a.ranks.begin() + 3);
       }},
      {"R8 1500 loose sends: counts exact, 1000 listed",
       [](Archive& a, ValidateOptions&) {
         for (int i = 0; i < 1500; ++i) nodes(a, 0).push_back(p2p(TraceNodeKind::kSend, 100000 + i, 1, i % 3, 64));
         nodes(a, 1).push_back(p2p(TraceNodeKind::kRecv, 100000, 0, 1, 64));
         nodes(a, 1).push_back(p2p(TraceNodeKind::kRecv, 100001, 0, 5, 64));
       }},
      {"R7 and 1500 loose sends: R7 listed, R8 up to the 1000th",
       [](Archive& a, ValidateOptions&) {
         nth_collective(a, 3, 0)->comm_size += 2;
         for (int i = 0; i < 1500; ++i) nodes(a, 2).push_back(p2p(TraceNodeKind::kSend, 100000 + i, 1, i % 7, 64));
         nodes(a, 1).push_back(p2p(TraceNodeKind::kRecv, 100000, 2, 9, 64));
       }},
      {"over 1000 errors before R7 and R8: those are counted only",
       [](Archive& a, ValidateOptions&) {
         for (int64_t r = 0; r < 4; ++r)
           for (auto& n : nodes(a, r)) n.deps.push_back(555555);
         nth_collective(a, 3, 0)->comm_size += 2;
         nodes(a, 0).push_back(p2p(TraceNodeKind::kSend, 100000, 1, 7, 4096));
       }},
      {"R9 missing rank", [](Archive& a, ValidateOptions&) { a.ranks.erase(a.ranks.begin() + 2); }},
      {"R9 undecodable rank",
       [](Archive& a, ValidateOptions& o) {
         a.ranks.erase(a.ranks.begin() + 2);
         o.undecodable_ranks = {2};
       }},
      {"R9 different jobs",
       [](Archive& a, ValidateOptions&) {
         a.ranks[3].meta.config_hash = "0123";
         a.ranks[1].meta.world_size = 8;
       }},
      {"R9 corrupt world_size", [](Archive& a, ValidateOptions&) { for (auto& t : a.ranks) t.meta.world_size = int64_t{1} << 40; }},
      {"R9 world_size absent everywhere", [](Archive& a, ValidateOptions&) { for (auto& t : a.ranks) t.meta.world_size = 0; }},
      {"R9 a rank twice, out of order, one without rank, one outside",
       [](Archive& a, ValidateOptions&) {
         std::swap(a.ranks[0], a.ranks[3]);
         a.ranks.push_back(a.ranks[1]);
         a.ranks.back().trace.nodes[0].name = "second copy";
         a.ranks.push_back(a.ranks[2]);
         a.ranks.back().rank = -1;
         a.ranks.push_back(a.ranks[2]);
         a.ranks.back().rank = 6;
       }},
      {"R9 world_size given by the caller", [](Archive&, ValidateOptions& o) { o.world_size = 6; }},
      {"group file unavailable",
       [](Archive& a, ValidateOptions& o) {
         a.groups.clear();
         o.groups_unavailable = true;
       }},
      {"R2 on every node of a rank",
       [](Archive& a, ValidateOptions&) { for (auto& n : nodes(a, 1)) n.deps.push_back(555555); }},
      {"everything at once",
       [](Archive& a, ValidateOptions&) {
         nodes(a, 1)[6].id = nodes(a, 1)[5].id;
         nth_collective(a, 1, 0)->comm_size += 2;
         nth_collective(a, 2, 0)->comm_size += 2;
         nodes(a, 0).push_back(p2p(TraceNodeKind::kSend, 100000, 1, 7, 4096));
         nodes(a, 1).push_back(p2p(TraceNodeKind::kRecv, 100001, 0, 8, 4096));
         a.ranks[3].meta.config_hash = "0123";
       },
       true},
  };
  return kCases;
}

}  // namespace

TEST_CASE("validate stream: every broken archive is reported as the in-memory validator did") {
  const Archive base[] = {tp_dp(), pp_dp()};
  for (const Case& c : cases()) {
    CAPTURE(c.name);
    Archive a = base[c.pp ? 1 : 0];
    ValidateOptions o;
    c.breakit(a, o);
    same_as_reference(a, o);
  }
}

TEST_CASE("validate stream: the broken archives report what validate_test.cc expects") {
  // Spot checks that the comparison is not vacuous.
  Archive a = tp_dp();
  nodes(a, 0).push_back(p2p(TraceNodeKind::kSend, 100000, 1, 7, 64));
  nodes(a, 0).push_back(p2p(TraceNodeKind::kSend, 100001, 1, 7, 64));
  nodes(a, 1).push_back(p2p(TraceNodeKind::kRecv, 100000, 0, 7, 64));
  TraceNode* c = nth_collective(a, 3, 1);
  c->comm_size += 2;
  auto rep = stream(a, {});
  CHECK(rep.counts().at("R8") == 1);
  CHECK(rep.counts().at("R7") == 1);
  bool r7 = false, r8 = false;
  for (const Violation& v : rep.listed()) {
    if (v.rule == "R8") r8 = v.rank == 0 && v.has_node && v.node_id == 100001;  // the second, surplus send
    if (v.rule == "R7") {
      r7 = v.rank == 3 && v.has_node && v.node_id == c->id && v.message.find("#1 ") != std::string::npos &&
           v.message.find("where rank 2 issues") != std::string::npos;
    }
  }
  CHECK(r7);
  CHECK(r8);
}

TEST_CASE("validate stream: without a loader, mismatches are still found and counted") {
  Archive a = pp_dp();
  nth_collective(a, 1, 0)->comm_size += 2;
  for (auto& n : nodes(a, 0)) if (n.kind == TraceNodeKind::kSend) { n.tag += 1000; break; }
  const auto want = reference::validate_traces(a.ranks, a.groups);
  for (bool split : {false, true}) {
    auto rep = stream(a, {}, /*with_loader=*/false, split);
    CHECK(rep.counts() == want.counts());
    CHECK(rep.errors() == want.errors());
    for (const Violation& v : rep.listed()) {
      if (v.rule != "R7" && v.rule != "R8") continue;
      CHECK(v.rank >= 0);
      CHECK(v.message.find("no loader") != std::string::npos);
    }
  }
}

TEST_CASE("validate stream: a loader that fails leaves the findings without a node, never drops one") {
  Archive a = tp_dp();
  nth_collective(a, 1, 0)->comm_size += 2;
  nodes(a, 0).push_back(p2p(TraceNodeKind::kSend, 100000, 1, 7, 64));
  StreamingValidator v(a.groups, {}, [](int64_t, DecodedTrace*) -> const DecodedTrace* { return nullptr; });
  for (const auto& t : a.ranks) v.add_rank(t);
  auto rep = v.finish();
  CHECK(rep.counts().at("R7") == 1);
  CHECK(rep.counts().at("R8") == 1);
  for (const Violation& x : rep.listed()) {
    CHECK(!x.has_node);
    CHECK(x.message.find("could not be read again") != std::string::npos);
  }
  CHECK(v.finish().errors() == 0);  // once only
}

TEST_CASE("validate stream: the loader is not called for a valid archive") {
  Archive a = pp_dp();
  int calls = 0;
  StreamingValidator v(a.groups, {}, [&](int64_t, DecodedTrace*) -> const DecodedTrace* { ++calls; return nullptr; });
  for (const auto& t : a.ranks) v.add_rank(t);
  auto rep = v.finish();
  CHECK(rep.ok());
  CHECK(rep.warnings() == 0);
  CHECK(calls == 0);
}
