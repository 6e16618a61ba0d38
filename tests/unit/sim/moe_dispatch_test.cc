// MoE token dispatchers and router imbalance (parallel.moe_dispatcher,
// parallel.moe_imbalance): the job keys and their errors, the time of the
// ep exchange under each dispatcher against bytes worked out by hand for a
// small MoE layer (8 experts, top-2, ep 4), and the busiest expert rank's
// GEMMs stretched by the imbalance.
#include "../test_jobs.h"

#include <regex>

#include "api/simulate.h"
#include "sim/network.h"

using namespace sc;
using namespace sc::testing;

namespace {

// 8 experts, top-2, hidden 256, 128 tokens per rank (seq 128, micro-batch
// 1, no tp/cp): capacity ceil(128 x 2 / 8) = 32 per expert, so one rank's
// dispatch buffer holds E x cap = 256 = 128 x 2 token copies.
std::string moe_json(const std::string& parallel_extra, int64_t seq = 128, int64_t h = 256, int64_t fe = 128) {
  return R"({"model": {"num_layers": 2, "hidden": )" + std::to_string(h) +
         R"(, "num_heads": 4, "vocab": 1024, "ffn_hidden": 512,
                       "num_experts": 8, "experts_per_token": 2, "moe_ffn_hidden": )" +
         std::to_string(fe) + R"(},
            "training": {"seq_len": )" +
         std::to_string(seq) + R"(, "global_batch_size": 4},
            "parallel": {"dp": 4, "ep": 4)" +
         parallel_extra + "}}";
}

Error parse_error(const std::string& text) {
  Result<Job> j = parse_job(text);
  REQUIRE(!j.ok());
  return j.error();
}


// The toy network of simulate_test: 100 B/µs and 1 µs per step inside a
// domain, 10 B/µs and 5 µs between domains.
NetworkModel toy_net(const Job& j, int64_t domain_size) {
  NetworkModel n = resolve_network(j, 4, false).value();
  n.domain_size = domain_size;
  n.domain_bw = 100;
  n.domain_lat = 1;
  n.scale_out_bw = 10;
  n.scale_out_lat = 5;
  n.nccl_protocols = false;  // one protocol: the ring all-gather as simulate_test's toy network
  n.ep_scale_out_efficiency = 1;  // the dispatchers' bytes alone (the fitted share: its own test)
  return n;
}

GroupShape group(const NetworkModel& n, std::vector<int64_t> ranks) {
  GroupShapeBuilder b;
  for (int64_t r : ranks) b.add(n, r);
  return b.finish(n);
}

}  // namespace

TEST_CASE("moe dispatcher: keys parse, default as the traces, errors name the field and the value") {
  const Job d = job_of(moe_json(""));
  CHECK(d.parallel.moe_dispatcher == "alltoall");
  CHECK(d.parallel.moe_imbalance == 1.0);
  // Defaults leave the canonical JSON (and so every hash) as it was.
  const std::string canon = job_to_canonical_json(d);
  CHECK(!has(canon, "moe_dispatcher"));
  CHECK(!has(canon, "moe_imbalance"));
  const Job x = job_of(moe_json(R"(, "moe_dispatcher": "deepep", "moe_imbalance": 1.5)"));
  CHECK(x.parallel.moe_dispatcher == "deepep");
  CHECK(x.parallel.moe_imbalance == 1.5);
  CHECK(has(job_to_canonical_json(x), "\"moe_dispatcher\": \"deepep\""));
  CHECK(has(job_to_canonical_json(x), "\"moe_imbalance\": 1.5"));
  CHECK(job_of(moe_json(R"(, "moe_dispatcher": "allgather")")).parallel.moe_dispatcher == "allgather");

  Error e = parse_error(moe_json(R"(, "moe_dispatcher": "a2a")"));
  CHECK(e.path == "parallel.moe_dispatcher");
  CHECK(has(e.message, "\"a2a\""));
  CHECK(has(e.message, "alltoall, allgather, deepep"));
  e = parse_error(moe_json(R"(, "moe_dispatcher": 3)"));
  CHECK(e.path == "parallel.moe_dispatcher");
  e = parse_error(moe_json(R"(, "moe_imbalance": 0.5)"));
  CHECK(e.path == "parallel.moe_imbalance");
  CHECK(has(e.message, "0.5"));
  e = parse_error(moe_json(R"(, "moe_imbalance": "high")"));
  CHECK(e.path == "parallel.moe_imbalance");
  // The busiest of 4 expert ranks holds at most all tokens: 4 x the mean.
  e = parse_error(moe_json(R"(, "moe_imbalance": 4.5)"));
  CHECK(e.path == "parallel.moe_imbalance");
  CHECK(has(e.message, "4.5"));
  CHECK(has(e.message, "ep (4)"));
  CHECK(job_of(moe_json(R"(, "moe_imbalance": 4)")).parallel.moe_imbalance == 4.0);
}

TEST_CASE("moe dispatcher: bytes each dispatcher moves per rank, 8 experts, top-2, ep 4, by hand") {
  Job j = job_of(moe_json(""));
  // One rank's dispatch buffer: 8 experts x 32 slots x 256 x 2 bytes.
  const int64_t C = 8 * 32 * 256 * 2;
  const double tokens = 128.0 * 256 * 2;  // the rank's own tokens, once each
  {
    const NetworkModel n = toy_net(j, 4);
    CHECK(n.moe_experts == 8);
    CHECK(n.moe_topk == 2);
    CHECK(n.moe_token_share == doctest::Approx(0.5));  // 128 tokens in 256 slots
  }
  SUBCASE("one domain") {
    j.parallel.moe_dispatcher = "alltoall";
    NetworkModel n = toy_net(j, 4);
    const GroupShape g = group(n, {0, 1, 2, 3});
    // all-to-all: 3 of the 4 quarters of the buffer leave the rank.
    const double a2a_bytes = 3.0 / 4 * C;  // 98,304
    CHECK(a2a_bytes == 98304);
    CHECK(expert_collective_micros(n, g, CollectiveType::kAllToAll, C) == doctest::Approx(1 + a2a_bytes / 100));
    // all-gather: every rank receives the 3 others' tokens (not k copies)
    // on a ring of 3 steps.
    n.moe_dispatcher = NetworkModel::Dispatcher::kAllGather;
    const double ag_bytes = 3 * tokens;  // 196,608
    CHECK(expert_collective_micros(n, g, CollectiveType::kAllToAll, C) == doctest::Approx(3 * 1 + ag_bytes / 100));
    // DeepEP inside a node: the all-to-all's bytes at DeepEP's NVLink rate
    // (153 of 160 GB/s measured).
    n.moe_dispatcher = NetworkModel::Dispatcher::kDeepEP;
    CHECK(expert_collective_micros(n, g, CollectiveType::kAllToAll, C) ==
          doctest::Approx(1 + a2a_bytes / (100 * 153.0 / 160)));
    // Other ep collectives keep the ordinary rules.
    CHECK(expert_collective_micros(n, g, CollectiveType::kAllReduce, C) ==
          collective_micros(n, g, CollectiveType::kAllReduce, C));
  }
  SUBCASE("two domains of 2 ranks") {
    NetworkModel n = toy_net(j, 2);
    const GroupShape g = group(n, {0, 1, 2, 3});
    REQUIRE(g.domains == 2);
    // all-to-all: a quarter over NVLink, two quarters over the NIC at once.
    const double nic = 2.0 / 4 * C;  // 65,536
    CHECK(expert_collective_micros(n, g, CollectiveType::kAllToAll, C) == doctest::Approx(5 + nic / 10));
    // DeepEP: each token crosses to the other node once if either of its 2
    // experts lives there. That node holds 4 of the 8 experts; both picks
    // miss it with probability C(4,2)/C(8,2) = 6/28.
    n.moe_dispatcher = NetworkModel::Dispatcher::kDeepEP;
    const double rdma = tokens * (1 - 6.0 / 28);  // 51,492.6 bytes: fewer than the all-to-all's 65,536
    const double nvl = C / 2.0;                    // copies for the other GPU of the node
    CHECK(rdma < nic);
    CHECK(expert_collective_micros(n, g, CollectiveType::kAllToAll, C) ==
          doctest::Approx(5 + std::max(rdma / 10, nvl / (100 * 153.0 / 160))));
  }
  SUBCASE("imbalance stretches the busiest rank's all-to-all by its factor, not the all-gather") {
    j.parallel.moe_imbalance = 2;
    NetworkModel n = toy_net(j, 4);
    const GroupShape g = group(n, {0, 1, 2, 3});
    CHECK(expert_collective_micros(n, g, CollectiveType::kAllToAll, C) == doctest::Approx(1 + 2 * (3.0 / 4 * C) / 100));
    n.moe_dispatcher = NetworkModel::Dispatcher::kAllGather;
    CHECK(expert_collective_micros(n, g, CollectiveType::kAllToAll, C) == doctest::Approx(3 + 3 * tokens / 100));
  }
  SUBCASE("alltoall without imbalance is the plain all-to-all, bit for bit") {
    const NetworkModel n = toy_net(j, 2);
    const GroupShape g = group(n, {0, 1, 2, 3});
    CHECK(expert_collective_micros(n, g, CollectiveType::kAllToAll, C) ==
          collective_micros(n, g, CollectiveType::kAllToAll, C));
  }
}

TEST_CASE("ep_scale_out_efficiency: a job's expert exchange sends its cross-node share at that fraction of the NIC rate") {
  Job j = job_of(moe_json(""));
  // The profiles' value (docs/hardware.md, "Expert exchanges across
  // nodes"): fitted for the h100, taken by h200 and b200; a100 and a custom
  // device keep 1.
  CHECK(hardware_preset("h100").value().ep_scale_out_efficiency == 0.72);
  CHECK(hardware_preset("h200").value().ep_scale_out_efficiency == 0.72);
  CHECK(hardware_preset("b200").value().ep_scale_out_efficiency == 0.72);
  CHECK(hardware_preset("a100").value().ep_scale_out_efficiency == 1.0);
  CHECK(j.hardware.ep_scale_out_efficiency == 0.72);  // moe_json's h100
  CHECK(resolve_network(j, 4, false).value().ep_scale_out_efficiency == 0.72);

  NetworkModel n = toy_net(j, 2);
  n.ep_scale_out_efficiency = 0.5;
  const int64_t C = 8 * 32 * 256 * 2;
  SUBCASE("alltoall across two domains of 2: the NIC's half of the buffer at 10 x 0.5 B/us") {
    const double nic = 2.0 / 4 * C;  // 65,536 bytes, as the dispatcher test above
    CHECK(expert_collective_micros(n, group(n, {0, 1, 2, 3}), CollectiveType::kAllToAll, C) ==
          doctest::Approx(5 + nic / 5));
  }
  SUBCASE("inside one domain nothing crosses: the NVLink time, as before") {
    NetworkModel one = toy_net(j, 4);
    one.ep_scale_out_efficiency = 0.5;
    CHECK(expert_collective_micros(one, group(one, {0, 1, 2, 3}), CollectiveType::kAllToAll, C) ==
          doctest::Approx(1 + 3.0 / 4 * C / 100));
  }
  SUBCASE("deepep across two domains: the RDMA copies at the same share") {
    n.moe_dispatcher = NetworkModel::Dispatcher::kDeepEP;
    const double rdma = 128.0 * 256 * 2 * (1 - 6.0 / 28);
    const double nvl = C / 2.0;
    CHECK(expert_collective_micros(n, group(n, {0, 1, 2, 3}), CollectiveType::kAllToAll, C) ==
          doctest::Approx(5 + std::max(rdma / 5, nvl / (100 * 153.0 / 160))));
  }
  SUBCASE("the other collectives of the ep group keep the NCCL rate") {
    CHECK(expert_collective_micros(n, group(n, {0, 1, 2, 3}), CollectiveType::kAllGather, C) ==
          collective_micros(n, group(n, {0, 1, 2, 3}), CollectiveType::kAllGather, C));
  }
  SUBCASE("a serving job's exchange runs at the profile's share too (docs/hardware.md, since session 15)") {
    Job s = j;
    s.mode = JobMode::kInference;
    CHECK(resolve_network(s, 4, false).value().ep_scale_out_efficiency == j.hardware.ep_scale_out_efficiency);
    CHECK(j.hardware.ep_scale_out_efficiency < 1.0);  // the h100's fitted share, not the NCCL rate
  }
  SUBCASE("the job can set it; out of range is an error naming the field and the value") {
    const std::string js = moe_json("");  // no hardware key: the default h100
    auto with_hw = [&](const std::string& v) {
      return R"({"hardware": {"preset": "h100", "ep_scale_out_efficiency": )" + v + "}, " + js.substr(1);
    };
    CHECK(job_of(with_hw("0.5")).hardware.ep_scale_out_efficiency == 0.5);
    CHECK(job_to_canonical_json(job_of(with_hw("0.5"))).find("\"ep_scale_out_efficiency\": 0.5") != std::string::npos);
    const Error e = parse_error(with_hw("1.5"));
    CHECK(e.path == "hardware.ep_scale_out_efficiency");
    CHECK(e.message.find("1.5") != std::string::npos);
  }
}

TEST_CASE("moe imbalance: the routed experts' GEMMs last imbalance x as long, nothing else moves") {
  // Large enough that the expert GEMMs are far above the launch floor.
  const std::string base = moe_json("", 4096, 1024, 2048);
  const std::string skew = moe_json(R"(, "moe_imbalance": 2.5)", 4096, 1024, 2048);
  Generator g1 = make(job_of(base)), g2 = make(job_of(skew));
  const RankTrace t1 = g1.rank_trace(0).value(), t2 = g2.rank_trace(0).value();
  REQUIRE(t1.nodes.size() == t2.nodes.size());
  // The routed experts' GEMMs: forward, dgrad, wgrad (not their bias adds,
  // activations or optimizer steps).
  const std::regex gemm(R"(moe\.experts\.fc[12](\.dgrad|\.wgrad)?$)");
  int experts = 0;
  for (size_t i = 0; i < t1.nodes.size(); ++i) {
    const TraceNode &a = t1.nodes[i], &b = t2.nodes[i];
    REQUIRE(a.name == b.name);
    if (std::regex_search(a.name, gemm)) {
      ++experts;
      CAPTURE(a.name);
      CHECK(a.duration_micros > 20);
      // Durations are whole µs: 2.5 x within rounding (±0.5 on the uniform
      // time, times 2.5, and ±0.5 on the skewed one). The second local
      // expert's launch (ep 4 of 8 experts: 2 per rank; the h100's 3.5 µs
      // floor, cost/kernel_cost.h) is paid once, not 2.5 times.
      const double launch = 3.5;
      CHECK(std::abs(static_cast<double>(b.duration_micros) -
                     (2.5 * (static_cast<double>(a.duration_micros) - launch) + launch)) <= 1.75);
    } else {
      CHECK(a.duration_micros == b.duration_micros);
    }
  }
  // fc1 and fc2, forward and backward (dgrad, wgrad), 2 layers.
  CHECK(experts == 2 * 2 * 3);
  // All ranks wait for the busiest: the simulated step grows.
  SimulateOptions o;
  const double s1 = simulate(g1, o).value().sim.step, s2 = simulate(g2, o).value().sim.step;
  CHECK(s2 > s1);
}

TEST_CASE("moe dispatcher allgather: the traces hold Megatron's all-gather / reduce-scatter pair over ep, sized by hand") {
  // 8 experts top-2, h 256, 128 tokens per rank (bf16), ep 4: the rank's
  // tokens once are 128 x 256 x 2 = 65,536 bytes; the all-to-all moved the
  // 8 x 32 x 256 x 2 = 131,072-byte dispatch buffer.
  const int64_t th = 128 * 256 * 2, C = 8 * 32 * 256 * 2;
  Generator a2a = make(job_of(moe_json(""))), ag = make(job_of(moe_json(R"(, "moe_dispatcher": "allgather")")));
  const RankTrace ta = a2a.rank_trace(0).value(), tg = ag.rank_trace(0).value();
  REQUIRE(ta.nodes.size() == tg.nodes.size());
  int gathers = 0, scatters = 0, a2as = 0;
  for (size_t i = 0; i < ta.nodes.size(); ++i) {
    const TraceNode &x = ta.nodes[i], &y = tg.nodes[i];
    CHECK(x.deps == y.deps);
    if (x.kind == TraceNodeKind::kCollective && x.coll == CollectiveType::kAllToAll && has(x.name, "(ep)")) {
      ++a2as;
      CHECK(x.comm_size == C);
      CAPTURE(y.name);
      // Toward the experts (dispatch forward, the combine's gradient
      // backward) an all-gather of the rank's tokens; back a reduce-scatter
      // of the 4 ranks' gathered tokens.
      const bool toward = has(x.name, ".fwd.") == has(x.name, "moe.dispatch.");
      CHECK(y.coll == (toward ? CollectiveType::kAllGather : CollectiveType::kReduceScatter));
      CHECK(y.comm_size == (toward ? th : 4 * th));
      CHECK(y.output_bytes == static_cast<uint64_t>(toward ? 4 * th : th));
      CHECK(has(y.name, toward ? "all_gather(ep)" : "reduce_scatter(ep)"));
      (toward ? gathers : scatters)++;
    } else {
      CHECK(x.name == y.name);
      CHECK(x.coll == y.coll);
      CHECK(x.comm_size == y.comm_size);
    }
  }
  // 2 MoE layers x 1 micro-batch x (dispatch, combine) x (forward, backward).
  CHECK(a2as == 8);
  CHECK(gathers == a2as / 2);
  CHECK(scatters == a2as / 2);
  for (const auto& n : tg.nodes) CHECK(!(n.kind == TraceNodeKind::kCollective && n.coll == CollectiveType::kAllToAll));
  // simulate times the pair as it timed the all-gather dispatcher before:
  // a ring all-gather of the tokens, the reduce-scatter of 4x them the same.
  const NetworkModel n = toy_net(job_of(moe_json(R"(, "moe_dispatcher": "allgather")")), 4);
  const GroupShape g = group(n, {0, 1, 2, 3});
  CHECK(collective_micros(n, g, CollectiveType::kAllGather, th) == doctest::Approx(3 * 1 + 3.0 * th / 100));
  CHECK(collective_micros(n, g, CollectiveType::kReduceScatter, 4 * th) == doctest::Approx(3 * 1 + 3.0 * th / 100));
}
