// Properties of the lowered traces: Megatron's per-layer collectives, the
// schedule rules a Chakra consumer needs, DP bucket overlap.
#include <map>
#include <set>

#include "../test_jobs.h"

using namespace sc;
using namespace sc::testing;

namespace {

struct Coll {
  CollectiveType type;
  int64_t bytes;
};

// Collectives of one layer in one micro-batch and phase, by node name prefix.
std::vector<Coll> layer_collectives(const RankTrace& t, const std::string& prefix) {
  std::vector<Coll> out;
  for (const auto& n : t.nodes)
    if (n.kind == TraceNodeKind::kCollective && n.name.rfind(prefix, 0) == 0) out.push_back({n.coll, n.comm_size});
  return out;
}

int count(const std::vector<Coll>& v, CollectiveType t, int64_t bytes) {
  int c = 0;
  for (const auto& x : v) c += x.type == t && x.bytes == bytes;
  return c;
}

}  // namespace

TEST_CASE("trace: Megatron tensor parallelism without SP, 2 all-reduces of b*s*h per layer and direction") {
  const int64_t b = 2, s = 512, h = 1024;
  auto g = make(gpt_job(3, h, 16, 4, 1, false, b, s, 4));
  auto t = g.rank_trace(1).value();
  const int64_t bsh = b * s * h * 2;  // bf16 bytes
  for (const char* mb : {"mb0.", "mb1."}) {
    auto fwd = layer_collectives(t, std::string(mb) + "fwd.L1.");
    auto bwd = layer_collectives(t, std::string(mb) + "bwd.L1.");
    CHECK(fwd.size() == 2);
    CHECK(count(fwd, CollectiveType::kAllReduce, bsh) == 2);
    CHECK(bwd.size() == 2);
    CHECK(count(bwd, CollectiveType::kAllReduce, bsh) == 2);
  }
}

TEST_CASE("trace: with sequence parallelism each all-reduce becomes all-gather + reduce-scatter") {
  const int64_t b = 1, s = 512, h = 1024, tp = 4;
  auto g = make(gpt_job(3, h, 16, tp, 1, true, b, s, 1));
  auto t = g.rank_trace(0).value();
  const int64_t full = b * s * h * 2, shard = full / tp;
  auto fwd = layer_collectives(t, "mb0.fwd.L1.");
  auto bwd = layer_collectives(t, "mb0.bwd.L1.");
  CHECK(fwd.size() == 4);
  CHECK(count(fwd, CollectiveType::kAllGather, shard) == 2);   // comm_size: the per-rank input shard
  CHECK(count(fwd, CollectiveType::kReduceScatter, full) == 2); // comm_size: the full input
  // Backward: the two pairs, plus Megatron's re-gather of the two
  // column-parallel inputs for the weight gradients (not kept from forward).
  CHECK(bwd.size() == 6);
  CHECK(count(bwd, CollectiveType::kReduceScatter, full) == 2);
  CHECK(count(bwd, CollectiveType::kAllGather, shard) == 4);
}

TEST_CASE("trace: schedule invariants a Chakra consumer relies on") {
  auto g = make(gpt_job(2, 512, 8, 2, 2, true, 1, 256, 4));
  for (int64_t r = 0; r < g.world_size(); ++r) {
    auto t = g.rank_trace(r).value();
    int64_t last_compute = -1;
    std::map<int64_t, int64_t> last_on_group;
    for (size_t i = 0; i < t.nodes.size(); ++i) {
      const auto& n = t.nodes[i];
      CHECK(n.id == i);
      for (auto d : n.deps) CHECK(d < n.id);  // ids are a topological issue order
      std::set<uint64_t> deps(n.deps.begin(), n.deps.end());
      if (n.kind == TraceNodeKind::kCompute) {
        CHECK(n.tensor_size >= 1);
        CHECK(n.duration_micros >= 1);
        if (last_compute >= 0) CHECK(deps.count(last_compute));  // one compute stream
        last_compute = n.id;
      } else {
        bool member = false;
        for (auto m : g.groups().at(n.group)) member |= m == r;
        CHECK(member);
        if (last_on_group.count(n.group)) CHECK(deps.count(last_on_group[n.group]));  // one stream per group
        last_on_group[n.group] = n.id;
      }
    }
  }
}

TEST_CASE("trace: every member of a group issues the same collectives in the same order") {
  auto g = make(gpt_job(2, 512, 8, 2, 3, true, 1, 256, 6));
  std::map<int64_t, std::map<int64_t, std::vector<std::pair<int, int64_t>>>> seq;  // group -> rank -> seq
  for (int64_t r = 0; r < g.world_size(); ++r) {
    const RankTrace t = g.rank_trace(r).value();
    for (const auto& n : t.nodes)
      if (n.kind == TraceNodeKind::kCollective) seq[n.group][r].push_back({int(n.coll), n.comm_size});
  }
  CHECK(seq.size() == g.groups().size());
  for (auto& [group, by_rank] : seq) {
    CHECK(by_rank.size() == g.groups().at(group).size());
    for (auto& [r, s] : by_rank) CHECK(s == by_rank.begin()->second);
  }
}

TEST_CASE("trace: data-parallel gradients are all-reduced once per iteration, in buckets overlapping backward") {
  Job j = gpt_job(4, 1024, 16, 1, 4, false, 1, 512, 12);  // 3 micro-batches
  j.training.dp_bucket_mb = 4;
  j.training.overlap_grad_reduce = true;  // Megatron-LM's --overlap-grad-reduce (the default is off)
  auto g = make(j);
  auto s = summary(g);
  auto t = g.rank_trace(0).value();
  int64_t dp_bytes = 0, buckets = 0;
  uint64_t first_bucket = UINT64_MAX, last_bwd = 0;
  for (const auto& n : t.nodes) {
    if (n.kind == TraceNodeKind::kCollective) {
      CHECK(n.coll == CollectiveType::kAllReduce);
      CHECK(n.name.rfind("opt.dp_grad_bucket", 0) == 0);
      dp_bytes += n.comm_size;
      ++buckets;
      first_bucket = std::min(first_bucket, n.id);
    }
    if (n.kind == TraceNodeKind::kCompute && n.name.rfind("mb2.bwd.", 0) == 0) last_bwd = n.id;
  }
  // fp32 main grads: 4 bytes per parameter, each exactly once.
  CHECK(dp_bytes == 4 * s["parameters"]["per_rank"].get<int64_t>());
  CHECK(buckets > 1);
  CHECK(first_bucket < last_bwd);  // issued while the last backward still runs
}

TEST_CASE("trace: ranks of one role differ only in their groups") {
  auto g = make(gpt_job(1, 512, 8, 2, 2, true, 1, 256));
  auto a = g.rank_trace(0).value(), b = g.rank_trace(3).value();
  REQUIRE(a.nodes.size() == b.nodes.size());
  for (size_t i = 0; i < a.nodes.size(); ++i) {
    CHECK(a.nodes[i].name == b.nodes[i].name);
    CHECK(a.nodes[i].deps == b.nodes[i].deps);
    CHECK(a.nodes[i].comm_size == b.nodes[i].comm_size);
    if (a.nodes[i].kind == TraceNodeKind::kCollective) CHECK(a.nodes[i].group != b.nodes[i].group);
  }
  CHECK(g.rank_trace_bytes(2).value() == g.rank_trace_bytes(2).value());
  CHECK(!g.rank_trace(4).ok());
}
