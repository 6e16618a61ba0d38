// DeepEP in the traces (parallel.moe_dispatcher deepep, docs/parallelism.md
// "Token dispatchers"): across nodes each ep all-to-all is written as the
// two legs DeepEP moves it in, an RDMA all-to-all over the ep ranks of the
// same local index (ep_rdma) and an NVLink all-to-all over the ep ranks of
// one node (ep_nvl), sized by hand; inside one node, or with a rank order
// that does not split evenly, the traces keep the plain all-to-all. simulate
// times the legs as it times DeepEP's exchange.
#include "../test_jobs.h"

#include <algorithm>

#include "api/simulate.h"
#include "sim/network.h"

using namespace sc;
using namespace sc::testing;

namespace {

// 8 experts, top-2, hidden 256, 128 tokens per rank (seq 128, micro-batch
// 1): capacity ceil(128 x 2 / 8) = 32, one rank's dispatch buffer 8 x 32
// token slots of 256 bf16 values = 131,072 bytes; its 128 tokens once are
// 65,536 bytes. dp 4 x ep 4 over nodes of `domain` GPUs.
std::string deepep_json(const std::string& dispatcher, int64_t domain) {
  return R"({"model": {"num_layers": 2, "hidden": 256, "num_heads": 4, "vocab": 1024, "ffn_hidden": 512,
                       "num_experts": 8, "experts_per_token": 2, "moe_ffn_hidden": 128},
            "training": {"seq_len": 128, "global_batch_size": 4},
            "parallel": {"dp": 4, "ep": 4, "moe_dispatcher": ")" +
         dispatcher + R"("},
            "network": {"domain_size": )" +
         std::to_string(domain) + "}}";
}


constexpr int64_t kBuffer = 8 * 32 * 256 * 2;  // C
constexpr double kTokens = 128.0 * 256 * 2;    // T h

}  // namespace

TEST_CASE("deepep traces: across 2 nodes of 2, each ep all-to-all is an RDMA leg and an NVLink leg, sized by hand") {
  Generator a2a = generator_from_json(deepep_json("alltoall", 2));
  Generator dep = generator_from_json(deepep_json("deepep", 2));
  // The groups: ep {0,1,2,3} over nodes {0,1} and {2,3}; rank 0's NVLink
  // leg is {0, 1} (its node), its RDMA leg {0, 2} (local index 0 of each node).
  const GroupTable& groups = dep.groups();
  auto group_of = [&](int64_t key) { return groups.at(key); };
  // RDMA bytes: a token goes to the other node once when either of its two
  // experts is there (that node holds 4 of the 8; both miss with
  // probability C(4,2) / C(8,2) = 6/28). As an all-to-all over the 2 nodes
  // the comm_size is twice what leaves: 2 x 65,536 x 22/28 = 102,985.14.
  const int64_t rdma = std::llround(2 * kTokens * (1 - 6.0 / 28));
  CHECK(rdma == 102985);
  for (int64_t rank = 0; rank < 4; ++rank) {
    const RankTrace ta = a2a.rank_trace(rank).value(), td = dep.rank_trace(rank).value();
    int plain = 0, legs_rdma = 0, legs_nvl = 0;
    for (const TraceNode& x : ta.nodes)
      if (x.kind == TraceNodeKind::kCollective && x.coll == CollectiveType::kAllToAll && has(x.name, "(ep)")) {
        ++plain;
        CHECK(x.comm_size == kBuffer);
      }
    for (const TraceNode& y : td.nodes) {
      if (y.kind != TraceNodeKind::kCollective) continue;
      CHECK_MESSAGE(!has(y.name, "all_to_all(ep)"), y.name);
      if (has(y.name, "all_to_all(ep_rdma)")) {
        ++legs_rdma;
        CHECK(y.coll == CollectiveType::kAllToAll);
        CHECK(y.comm_size == rdma);
        const std::vector<int64_t> want = {rank % 2, rank % 2 + 2};
        CHECK(group_of(y.group) == want);
      } else if (has(y.name, "all_to_all(ep_nvl)")) {
        ++legs_nvl;
        CHECK(y.coll == CollectiveType::kAllToAll);
        CHECK(y.comm_size == kBuffer);
        const std::vector<int64_t> want = {rank / 2 * 2, rank / 2 * 2 + 1};
        CHECK(group_of(y.group) == want);
      }
    }
    // 2 MoE layers x (dispatch, combine) x (forward, backward), one leg of each kind per exchange.
    CHECK(plain == 8);
    CHECK(legs_rdma == plain);
    CHECK(legs_nvl == plain);
    // Nothing else moved: every other node is the all-to-all job's.
    CHECK(td.nodes.size() == ta.nodes.size() + static_cast<size_t>(plain));
  }
  // The legs' readers wait for both: the traces run to completion and pass the validator.
  check_runs_to_completion(dep);
  CHECK(validate_generated(dep).ok());
}

TEST_CASE("deepep traces: inside one node, or nodes that do not split the ep group evenly, the plain all-to-all") {
  for (const int64_t domain : {4, 8, 3}) {
    CAPTURE(domain);
    Generator a2a = generator_from_json(deepep_json("alltoall", domain));
    Generator dep = generator_from_json(deepep_json("deepep", domain));
    CHECK(dep.groups() == a2a.groups());
    const RankTrace ta = a2a.rank_trace(0).value(), td = dep.rank_trace(0).value();
    REQUIRE(td.nodes.size() == ta.nodes.size());
    for (size_t i = 0; i < ta.nodes.size(); ++i) {
      CHECK(td.nodes[i].name == ta.nodes[i].name);
      CHECK(td.nodes[i].comm_size == ta.nodes[i].comm_size);
      CHECK(td.nodes[i].group == ta.nodes[i].group);
    }
  }
}

TEST_CASE("deepep traces: simulate times the two legs as DeepEP's exchange, by hand") {
  const Job j = parse_job(deepep_json("deepep", 2)).value();
  NetworkModel n = resolve_network(j, 4, false).value();
  // The toy network of simulate_test: 100 B/us and 1 us per step inside a
  // domain, 10 B/us and 5 us between domains.
  n.domain_size = 2;
  n.domain_bw = 100;
  n.domain_lat = 1;
  n.scale_out_bw = 10;
  n.scale_out_lat = 5;
  n.nccl_protocols = false;
  n.ep_scale_out_efficiency = 1;  // DeepEP's bytes alone (moe_dispatch_test: the fitted share)
  auto shape = [&](std::vector<int64_t> ranks) {
    GroupShapeBuilder b;
    for (int64_t r : ranks) b.add(n, r);
    return b.finish(n);
  };
  const double nvl_bw = 100 * 153.0 / 160;
  const double rdma_out = kTokens * (1 - 6.0 / 28);  // what leaves over the NIC: 51,492.6 bytes
  // Before the split: one all-to-all over the 4 ranks, RDMA and NVLink overlapped.
  const double whole = expert_collective_micros(n, shape({0, 1, 2, 3}), CollectiveType::kAllToAll, kBuffer);
  CHECK(whole == doctest::Approx(5 + std::max(rdma_out / 10, kBuffer / 2.0 / nvl_bw)));
  // The legs: RDMA over {0, 2} (half its comm_size leaves), NVLink over {0, 1}.
  n.deepep_legs = true;
  const double t_rdma =
      expert_collective_micros(n, shape({0, 2}), CollectiveType::kAllToAll, std::llround(2 * rdma_out));
  const double t_nvl = expert_collective_micros(n, shape({0, 1}), CollectiveType::kAllToAll, kBuffer);
  CHECK(t_rdma == doctest::Approx(5 + std::llround(2 * rdma_out) / 2.0 / 10));
  CHECK(t_nvl == doctest::Approx(1 + kBuffer / 2.0 / nvl_bw));
  // Side by side they take the longer leg: the unsplit time up to one latency.
  CHECK(std::max(t_rdma, t_nvl) == doctest::Approx(whole).epsilon(1e-4));
  // The whole job on the h100 network (NIC 47 GB/s, 10 us per network
  // step; NVLink 370 GB/s): the all-to-all dispatcher sends 65,536 bytes of
  // each exchange over the NIC, DeepEP's RDMA leg 51,493 while its NVLink
  // leg (under 1 us) runs beside it, so DeepEP's step is the shorter one;
  // run one after the other the legs would take longer than the all-to-all.
  Generator a2a = generator_from_json(deepep_json("alltoall", 2));
  Generator dep = generator_from_json(deepep_json("deepep", 2));
  const SimulateReport ra = simulate(a2a, SimulateOptions{}).value(), rd = simulate(dep, SimulateOptions{}).value();
  CHECK(rd.step_seconds < ra.step_seconds);
  CHECK(rd.exposed_comm_seconds[2] < ra.exposed_comm_seconds[2]);
}
