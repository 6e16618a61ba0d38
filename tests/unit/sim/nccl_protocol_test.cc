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

NetworkModel h100_net(int64_t world, const std::string& protocols = "nccl", const std::string& algorithm = "nccl") {
  Job j;
  j.hardware = hardware_preset("h100").value();
  j.network.protocols = protocols;
  j.network.algorithm = algorithm;
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
  // Two nodes x 8 GPUs on the ring: 30 ring steps, 2 of them across the
  // network; LL's NVLink steps are 1.8 x NCCL's 0.47 µs slower across
  // nodes: 28 x (0.7 + 0.8 x 0.47) + 2 x 10 = 50.1 µs (measured with NVLS
  // tree on 2 x 8 H20: 46-48 µs, nccl#1244).
  const NetworkModel ring = h100_net(16, "nccl", "ring");
  const GroupShape both = group_of(ring, 0, 16);
  CHECK(collective_micros(ring, both, CollectiveType::kAllReduce, 8) ==
        doctest::Approx(28 * (0.7 + 0.8 * 0.47) + 2 * 10).epsilon(0.001));
}

TEST_CASE("nccl algorithm: all-reduces take NCCL's tree where its model says it is faster, by hand") {
  // NCCL's Tree rows (tuning.cc @01afd20): base 4.4 / 4.4 / 0 µs, NVLink
  // step 0.52 / 1.2 / 28, network step 5.0 / 8.5 / 50 (LL / LL128 /
  // Simple); added to the anchors as differences from Ring/LL's 3.6 µs
  // base, 0.47 µs NVLink and 2.7 µs network step.
  Result<Job> bad = parse_job(R"({"model":"gpt3-1.7b","network":{"algorithm":"auto"}})");
  REQUIRE(!bad.ok());
  CHECK(bad.error().path == "network.algorithm");
  CHECK(bad.error().message.find("nccl, ring, tree, hierarchical") != std::string::npos);
  CHECK(Job{}.network.algorithm == "nccl");

  const NetworkModel n = h100_net(512);
  const double out = n.scale_out_bw / n.oversubscription;
  const double cross_bw = std::min(n.domain_bw, 8 * out);
  // Two nodes x 8 GPUs, 8 bytes: LL tree, 7 NVLink steps up and down in
  // each node ((0.7 + 0.05) + 0.8 x 0.52 each, LL's 1.8 across nodes) and
  // one level across (10 + 2.3 µs): 0.8 + 2 x (7 x 1.166 + 12.3) = 41.7 µs,
  // below the ring's 50.1 (and nearer the 46-48 µs measured with a tree).
  const GroupShape both = group_of(n, 0, 16);
  const double ll_tree_16 = 0.8 + 2 * (7 * (0.75 + 0.8 * 0.52) + 12.3) + 8 / (cross_bw * 0.9 / 3.8 * 0.5);
  CHECK(collective_micros(n, both, CollectiveType::kAllReduce, 8) == doctest::Approx(ll_tree_16));
  // 64 nodes x 8 GPUs, 200 bytes (an FP8 amax reduction's size): the ring
  // takes 1,022 steps (126 across the network), the tree 6 levels:
  // 0.8 + 2 x (8.16 + 6 x 12.3) = 164.7 µs against the ring's 2,224 µs.
  const GroupShape all = group_of(n, 0, 512);
  REQUIRE(all.domains == 64);
  // 200 / 64 rounds down to 3 = 2^1: LL's correction factor at index 1 is 1.0.
  const double ll_tree_512 = 0.8 + 2 * (7 * (0.75 + 0.8 * 0.52) + 6 * 12.3) + 200 / (cross_bw * 0.9 / 3.8 * 0.5);
  CHECK(collective_micros(n, all, CollectiveType::kAllReduce, 200) == doctest::Approx(ll_tree_512));
  const NetworkModel ring = h100_net(512, "nccl", "ring");
  CHECK(collective_micros(ring, all, CollectiveType::kAllReduce, 200) > 2000);
  // 256 MiB over the same 512 ranks: the ring's 1,022 steps of latency
  // (4.5 ms under Simple) outweigh its better bandwidth term, and NCCL's
  // model takes the tree even here (no correction factor from 256 MiB on):
  // LL128 0.8 + 2 x (7 x 1.43 + 6 x 15.8) µs + S / (0.9 x 0.915 / 2 of the
  // bus bandwidth), Simple -3.6 + 2 x (7 x 28.23 + 6 x 57.3) + S / (0.45 B).
  const double big = static_cast<double>(256 << 20);
  const double ll128 = 0.8 + 2 * (7 * 1.43 + 6 * 15.8) + big / (cross_bw * 0.9 * 0.915 * 0.5);
  const double simple_tree = -3.6 + 2 * (7 * 28.23 + 6 * 57.3) + big / (cross_bw * 0.45);
  CHECK(collective_micros(n, all, CollectiveType::kAllReduce, 256 << 20) == doctest::Approx(std::min(ll128, simple_tree)));
  CHECK(collective_micros(ring, all, CollectiveType::kAllReduce, 256 << 20) > 2 * std::min(ll128, simple_tree));
  // Inside one node the ring wins large messages: 256 MiB over 8 GPUs is
  // the Simple ring's 1,325 µs (the tree's bandwidth term alone is 1,612).
  const GroupShape node = group_of(n, 0, 8);
  const NetworkModel ring8 = h100_net(8, "nccl", "ring");
  CHECK(collective_micros(n, node, CollectiveType::kAllReduce, 256 << 20) ==
        doctest::Approx(collective_micros(ring8, node, CollectiveType::kAllReduce, 256 << 20)));
  CHECK(big / (n.domain_bw * 0.45) > collective_micros(n, node, CollectiveType::kAllReduce, 256 << 20));
  // Only all-reduces have a tree: an all-gather is the ring's.
  CHECK(collective_micros(n, all, CollectiveType::kAllGather, 4096) ==
        doctest::Approx(collective_micros(ring, all, CollectiveType::kAllGather, 4096)));
  // Without NCCL's protocols "nccl" is the old ring.
  const NetworkModel simple = h100_net(512, "simple");
  const NetworkModel simple_ring = h100_net(512, "simple", "ring");
  CHECK(collective_micros(simple, all, CollectiveType::kAllReduce, 200) ==
        doctest::Approx(collective_micros(simple_ring, all, CollectiveType::kAllReduce, 200)));
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
