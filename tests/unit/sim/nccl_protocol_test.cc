// Small messages under NCCL's protocols (network.protocols "nccl", the
// default): ring collectives take the fastest of LL, LL128 and Simple,
// each with NCCL's latency and bandwidth share; the times are worked out
// here by hand from the constants docs/simulate.md lists, and checked
// against the measured floors of kernel-efficiency.md §6.3.
#include "../test_jobs.h"

#include "sim/network.h"

using namespace sc;
using namespace sc::testing;

namespace {

GroupShape group_of(const NetworkModel& n, int64_t first, int64_t count, int64_t stride = 1) {
  GroupShapeBuilder b;
  for (int64_t i = 0; i < count; ++i) b.add(n, first + i * stride);
  return b.finish(n);
}

NetworkModel h100_net(int64_t world, const std::string& protocols = "nccl") {
  Job j;
  j.hardware = hardware_preset("h100").value();
  j.network.protocols = protocols;
  return resolve_network(j, world, false).value();
}

}  // namespace

TEST_CASE("nccl protocols: the default, the key and its error") {
  CHECK(h100_net(8).nccl_protocols);
  CHECK(!h100_net(8, "simple").nccl_protocols);
  Result<Job> bad = parse_job(R"({"model":"gpt3-1.7b","network":{"protocols":"ll"}})");
  REQUIRE(!bad.ok());
  CHECK(bad.error().path == "network.protocols");
  CHECK(bad.error().message.find("\"ll\"") != std::string::npos);
  CHECK(parse_job(R"({"model":"gpt3-1.7b","network":{"protocols":"simple"}})").ok());
}

TEST_CASE("nccl protocols: small all-reduces cost their latency floors, by hand") {
  const NetworkModel n = h100_net(16);
  REQUIRE(n.domain_lat == 0.7);
  REQUIRE(n.scale_out_lat == 10);
  // 8 GPUs of one node, 8 bytes: LL, 14 NVLink steps of 0.7 µs (the
  // ~10 µs floor), plus 14/8 x 8 bytes at a quarter of 370 GB/s.
  const GroupShape node = group_of(n, 0, 8);
  const double bw = 370e9 / 1e6;  // bytes per µs
  CHECK(collective_micros(n, node, CollectiveType::kAllReduce, 8) == doctest::Approx(14 * 0.7 + 14.0 / 8 * 8 / (bw / 4)));
  // Two nodes, one GPU each: 2 network steps of 10 µs = 20 µs, the measured
  // 19-21 µs (nccl-tests#150).
  const GroupShape two = group_of(n, 0, 2, 8);
  REQUIRE(two.domains == 2);
  CHECK(collective_micros(n, two, CollectiveType::kAllReduce, 8) == doctest::Approx(20).epsilon(0.001));
  // Two nodes x 8 GPUs: 30 ring steps, 2 of them across the network; LL's
  // NVLink steps are 1.8 x NCCL's 0.47 µs slower across nodes:
  // 28 x (0.7 + 0.8 x 0.47) + 2 x 10 = 50.1 µs (measured with NVLS tree on
  // 2 x 8 H20: 46-48 µs, nccl#1244).
  const GroupShape both = group_of(n, 0, 16);
  CHECK(collective_micros(n, both, CollectiveType::kAllReduce, 8) ==
        doctest::Approx(28 * (0.7 + 0.8 * 0.47) + 2 * 10).epsilon(0.001));
}

TEST_CASE("nccl protocols: medium messages pick LL128 or Simple, large ones pay Simple's latency") {
  const NetworkModel n = h100_net(8);
  const GroupShape node = group_of(n, 0, 8);
  const double bw = 370e9 / 1e6;
  auto by_hand = [&](double S) {
    const double bytes = 2 * 7.0 / 8 * S;
    const double ll = 14 * 0.7 + bytes / (bw / 4);
    const double ll128 = (10.0 - 3.6) + 14 * (0.7 + 1.9 - 0.47) + bytes / (bw * 0.92);
    const double simple = (8.4 - 3.6) + 14 * (0.7 + 3.4 - 0.47) + bytes / bw;
    return std::min({ll, ll128, simple});
  };
  for (double S : {4096.0, 1048576.0, 4194304.0, 268435456.0}) {
    CAPTURE(S);
    CHECK(collective_micros(n, node, CollectiveType::kAllReduce, static_cast<int64_t>(S)) == doctest::Approx(by_hand(S)));
  }
  // 1 MiB: LL at a quarter of the bandwidth still wins (29.6 µs), twice the
  // single-protocol model's 14.8 µs.
  const double mib = static_cast<double>(1 << 20);
  CHECK(collective_micros(n, node, CollectiveType::kAllReduce, 1 << 20) ==
        doctest::Approx(14 * 0.7 + 2 * 7.0 / 8 * mib / (bw / 4)));
  // 256 MiB: Simple, 55.6 µs of latency over the bandwidth term.
  const double big = static_cast<double>(256 << 20);
  CHECK(collective_micros(n, node, CollectiveType::kAllReduce, 256 << 20) ==
        doctest::Approx(4.8 + 14 * 3.63 + 2 * 7.0 / 8 * big / bw));
  // An all-gather inside a node: LL at a third (comm_size is the shard).
  CHECK(collective_micros(n, node, CollectiveType::kAllGather, 512) ==
        doctest::Approx(7 * 0.7 + 7.0 / 8 * 8 * 512 / (bw / 3)));
  // "simple": the single-protocol model.
  const NetworkModel s = h100_net(8, "simple");
  CHECK(collective_micros(s, node, CollectiveType::kAllReduce, 1 << 20) ==
        doctest::Approx(14 * 0.7 + 2 * 7.0 / 8 * mib / bw));
}
