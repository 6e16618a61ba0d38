// simulate: the network formulas against hand computations, symmetry
// against the exhaustive run, the reference replay (core/check) on a free
// network, and the summary's time fields against their definitions.
#include "../test_jobs.h"

#include "api/simulate.h"
#include "sim/network.h"

using namespace sc;
using namespace sc::testing;

namespace {

NetworkModel toy(int64_t world) {
  NetworkModel n;
  n.world = world;
  n.domain_size = 4;
  n.domain_bw = 100;  // bytes per µs
  n.domain_lat = 1;
  n.scale_out_bw = 10;
  n.scale_out_lat = 5;
  return n;
}

GroupShape shape(const NetworkModel& n, std::vector<int64_t> ranks) {
  GroupShapeBuilder b;
  for (int64_t r : ranks) b.add(n, r);
  return b.finish(n);
}

Job parse(const std::string& text) {
  auto j = parse_job(text);
  if (!j.ok()) FAIL(j.error().to_string());
  return *j;
}

SimulateReport run(const Generator& g, bool exhaustive, bool astra = false, bool sm_sharing = true) {
  SimulateOptions o;
  o.exhaustive = exhaustive;
  o.astra = astra;
  if (!sm_sharing) o.comm_sm_share_domain = o.comm_sm_share_scale_out = 0;
  auto r = simulate(g, o);
  if (!r.ok()) FAIL(r.error().to_string());
  return *r;
}

}  // namespace

TEST_CASE("simulate network: ring, tree, hierarchical and all-to-all times by hand") {
  NetworkModel n = toy(16);
  const GroupShape in_domain = shape(n, {0, 1, 2, 3});
  CHECK(in_domain.domains == 1);
  CHECK(in_domain.per_domain == 4);
  // ring all-reduce: 2(n-1) steps x 1 µs + 2(n-1)/n x 800 B / 100 B/µs
  CHECK(collective_micros(n, in_domain, CollectiveType::kAllReduce, 800) == doctest::Approx(6 + 12));
  // all-gather: comm_size is the shard, the full buffer is 4 x 100
  CHECK(collective_micros(n, in_domain, CollectiveType::kAllGather, 100) == doctest::Approx(3 + 3));
  CHECK(collective_micros(n, in_domain, CollectiveType::kReduceScatter, 400) == doctest::Approx(3 + 3));
  // one member per domain: the NIC (10 B/µs) and the scale-out latency
  const GroupShape spread = shape(n, {0, 4, 8, 12});
  CHECK(spread.domains == 4);
  CHECK(spread.per_domain == 1);
  CHECK(collective_micros(n, spread, CollectiveType::kAllReduce, 800) == doctest::Approx(30 + 120));
  n.oversubscription = 2;
  CHECK(collective_micros(n, spread, CollectiveType::kAllReduce, 800) == doctest::Approx(30 + 240));
  n.oversubscription = 1;
  // 16 ranks, 4 per domain: the flat ring crosses domains on 4 NICs (40 B/µs)
  const GroupShape all = shape(n, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15});
  CHECK(collective_micros(n, all, CollectiveType::kAllReduce, 1600) == doctest::Approx(2 * 15 * 5 + 2 * 15.0 / 16 * 40));
  n.algorithm = "tree";  // 2 log2(16) latency steps
  CHECK(collective_micros(n, all, CollectiveType::kAllReduce, 1600) == doctest::Approx(2 * 4 * 5 + 2 * 15.0 / 16 * 40));
  CHECK(collective_micros(n, all, CollectiveType::kReduceScatter, 1600) ==
        doctest::Approx(15 * 5 + 15.0 / 16 * 40));  // tree is all-reduce only: ring
  n.algorithm = "hierarchical";  // inside (4), across (4) on S/4, inside again
  CHECK(collective_micros(n, all, CollectiveType::kAllReduce, 1600) ==
        doctest::Approx(2 * (3 * 1 + 0.75 * 16 + 3 * 5 + 0.75 * 400 / 10.0)));
  // all-to-all: 3 x 100 B over NVLink and 12 x 100 B over the NIC at once
  CHECK(collective_micros(n, all, CollectiveType::kAllToAll, 1600) == doctest::Approx(5 + 120));
  CHECK(p2p_micros(n, 0, 3, 500) == doctest::Approx(1 + 5));
  CHECK(p2p_micros(n, 3, 4, 500) == doctest::Approx(5 + 50));
}

TEST_CASE("simulate network: ASTRA-sim's message and ring rules on the exported dimensions") {
  Job j;
  j.hardware = hardware_preset("a100").value();
  NetworkModel n = resolve_network(j, 16, true).value();
  REQUIRE(n.dims.size() == 2);  // 8 GPUs per node x 2 nodes
  // A message pays 2 hops x latency + bytes / bandwidth + endpoint delay (ns).
  CHECK(p2p_micros(n, 0, 1, 3000) == doctest::Approx((2 * 500 + 3000 / 300.0 + 10) / 1000));
  // Differing in dimension 1 only: the scale-out dimension.
  CHECK(p2p_micros(n, 0, 8, 3000) == doctest::Approx((2 * 2000 + 3000 / 25.0 + 10) / 1000));
  // All-reduce over {0, 1} of 4000 B: 4 chunks of 1000 B, each 2 steps of
  // 500 B, one of them a reduction reading 500 B of local memory.
  const GroupShape pair = shape(n, {0, 1});
  const double step = (1000 + 500 / 300.0 + 10) / 1000, mem = 500 / (2039e9 / 1e6);
  CHECK(collective_micros(n, pair, CollectiveType::kAllReduce, 4000) == doctest::Approx(4 * (2 * step + mem)));
  // A group whose ring crosses nodes is charged at the slowest edge's dimension.
  const GroupShape across = shape(n, {0, 8});
  CHECK(across.astra_dim == 1);
  const double step1 = (4000 + 1000 / 25.0 + 10) / 1000;
  CHECK(collective_micros(n, across, CollectiveType::kAllGather, 4000) == doctest::Approx(4 * step1));
}

TEST_CASE("simulate network: ASTRA-sim pipelines a world collective's chunks across dimensions") {
  // 8 x 2 NPUs, 1 byte per ns, no hop latency, no local-memory charge: a
  // message of B bytes takes B + 10 ns (endpoint delay).
  NetworkModel n;
  n.astra = true;
  n.world = 16;
  n.dims = {{"Switch", 8, 1.0, 0, ""}, {"Switch", 2, 1.0, 0, ""}};
  std::vector<int64_t> all(16);
  for (int64_t i = 0; i < 16; ++i) all[static_cast<size_t>(i)] = i;
  const GroupShape world = shape(n, all);
  REQUIRE(world.world);
  // All-reduce of 512000 B: 4 chunks of 128000 B, each a reduce-scatter on
  // dimension 0 (7 steps of 16000 B: r = 112.07 µs), an all-reduce on
  // dimension 1 (2 steps of 8000 B: 16.02 µs) and an all-gather on
  // dimension 0 (7 steps of 16000 B: r). Dimension 1 finishes each chunk
  // before dimension 0 is free again, so dimension 0 runs its 8 phases back
  // to back: 8 r (one after another, chunk by chunk, would be 8 r + 4 x 16.02).
  const double r = 7 * 16010 / 1000.0;
  CHECK(collective_micros(n, world, CollectiveType::kAllReduce, 512000) == doctest::Approx(8 * r));
  // All-gather of a 4000 B shard: 4 chunks of 1000 B, dimension 1 first
  // (1 step of 1000 B: a = 1.01 µs), then dimension 0 on the 2000 B the
  // chunk has become (7 steps: b = 14.07 µs). Dimension 0 is the slower
  // stage: the first chunk's a, then 4 b back to back.
  const double a = 1010 / 1000.0, b = 7 * 2010 / 1000.0;
  CHECK(collective_micros(n, world, CollectiveType::kAllGather, 4000) == doctest::Approx(a + 4 * b));
}

TEST_CASE("simulate: one rank without communication takes the sum of its compute") {
  Job j = gpt_job(2, 256, 4, 1, 1, false, 1, 128, 2);
  auto g = make(j);
  uint64_t sum = 0;
  const RankTrace trace = g.rank_trace(0).value();  // held: a range-for over a temporary's member dangles
  REQUIRE(!trace.nodes.empty());
  for (const auto& n : trace.nodes) sum += n.duration_micros;
  auto r = run(g, false);
  CHECK(r.sim.step == doctest::Approx(static_cast<double>(sum)));
  CHECK(r.sim.stages[0].busy == doctest::Approx(static_cast<double>(sum)));
  CHECK(r.sim.stages[0].bubble == doctest::Approx(0));
}

TEST_CASE("simulate: symmetry classes and the exhaustive run agree exactly") {
  const char* jobs[] = {
      // pipeline + tp + dp, nodes of 4 GPUs: dp groups cross nodes
      R"({"model":{"preset":"llama2-7b","num_layers":4},"parallel":{"tp":2,"dp":4,"pp":2,"sequence_parallel":true},
          "training":{"seq_len":128,"global_batch_size":16,"schedule":"1f1b"},"network":{"domain_size":4}})",
      R"({"model":{"preset":"llama2-7b","num_layers":4},"parallel":{"tp":2,"dp":2,"pp":2,"virtual_stages":2},
          "training":{"seq_len":128,"global_batch_size":8,"schedule":"interleaved-1f1b"},"network":{"domain_size":2}})",
      // nodes of 6 GPUs: groups are placed unevenly, the classes must split
      R"({"model":{"preset":"llama2-7b","num_layers":2},"parallel":{"tp":2,"dp":4,"pp":2},
          "training":{"seq_len":64,"global_batch_size":8,"schedule":"gpipe"},"network":{"domain_size":6,"algorithm":"hierarchical"}})",
      // zero-bubble, ZeRO-3 with HSDP
      R"({"model":{"preset":"llama2-7b","num_layers":2},"parallel":{"dp":4,"pp":2,"zero":3,"shard_group":2},
          "training":{"seq_len":64,"global_batch_size":8,"schedule":"zero-bubble"},"network":{"domain_size":4,"algorithm":"tree"}})",
      // context parallelism as a ring of sends
      R"({"model":{"preset":"llama2-7b","num_layers":2},"parallel":{"tp":2,"cp":4,"cp_algorithm":"ring","dp":2},
          "training":{"seq_len":256,"global_batch_size":2},"network":{"domain_size":4}})",
      // experts
      R"({"model":{"preset":"mixtral-8x7b","num_layers":2},"parallel":{"tp":2,"dp":4,"ep":4,"sequence_parallel":true,"pp":2},
          "training":{"seq_len":64,"global_batch_size":8},"network":{"domain_size":8,"oversubscription":2}})",
      // 512 ranks
      R"({"model":{"preset":"gpt3-1.7b","num_layers":4},"parallel":{"tp":8,"dp":16,"pp":4,"sequence_parallel":true},
          "training":{"seq_len":128,"global_batch_size":64},"network":{"domain_size":8}})",
  };
  for (const char* text : jobs) {
    CAPTURE(text);
    auto g = make(parse(text));
    for (bool astra : {false, true}) {
      CAPTURE(astra);
      if (astra && g.world_size() % 8 != 0) continue;
      auto sym = run(g, false, astra), all = run(g, true, astra);
      CHECK(all.sim.classes == g.world_size());
      CHECK(sym.sim.classes < all.sim.classes);
      CHECK(sym.sim.step == all.sim.step);
      REQUIRE(sym.sim.stages.size() == all.sim.stages.size());
      for (size_t s = 0; s < sym.sim.stages.size(); ++s) {
        CHECK(sym.sim.stages[s].busy == all.sim.stages[s].busy);
        CHECK(sym.sim.stages[s].bubble == all.sim.stages[s].bubble);
        CHECK(sym.sim.stages[s].end == all.sim.stages[s].end);
        for (int k = 0; k < kNumCommKinds; ++k) CHECK(sym.sim.stages[s].exposed[k] == all.sim.stages[s].exposed[k]);
      }
      CHECK(sym.sim.critical_path == all.sim.critical_path);
    }
  }
}

TEST_CASE("simulate: uneven nodes split the symmetry classes by placement") {
  // dp over 4 ranks with 3 GPUs per node: groups {0,1,2,3} span 2 nodes
  // ({0,1,2},{3}) and the world is not alike.
  auto g = make(parse(R"({"model":{"preset":"llama2-7b","num_layers":2},"parallel":{"dp":6},
                         "training":{"seq_len":64,"global_batch_size":6},"network":{"domain_size":4}})"));
  auto sym = run(g, false), all = run(g, true);
  CHECK(sym.sim.classes == 1);  // one dp group over all 6 ranks: every rank sees the same group
  CHECK(sym.sim.step == all.sim.step);
  auto g2 = make(parse(R"({"model":{"preset":"llama2-7b","num_layers":2},"parallel":{"tp":2,"dp":3},
                          "training":{"seq_len":64,"global_batch_size":3},"network":{"domain_size":4}})"));
  // tp groups {0,1},{2,3} inside node 0, {4,5} inside node 1; dp groups
  // {0,2,4} and {1,3,5} both span two nodes the same way: still one class.
  auto s2 = run(g2, false), a2 = run(g2, true);
  CHECK(s2.sim.classes == 1);
  CHECK(s2.sim.step == a2.sim.step);
  auto g3 = make(parse(R"({"model":{"preset":"llama2-7b","num_layers":2},"parallel":{"tp":2,"dp":3},
                          "training":{"seq_len":64,"global_batch_size":3},"network":{"domain_size":3}})"));
  // nodes of 3: tp group {2,3} crosses nodes, {0,1} and {4,5} do not.
  auto s3 = run(g3, false), a3 = run(g3, true);
  CHECK(s3.sim.classes > 1);
  CHECK(s3.sim.step == a3.sim.step);
}

TEST_CASE("simulate: on a free network the step equals the reference replay's makespan") {
  // The reference replay (core/check/replay) applies the same issue rules
  // with communication of bytes / bandwidth; with a network of 1e15 B/s and
  // no latency both leave only the compute and the schedule's structure.
  const char* jobs[] = {
      R"({"model":{"preset":"llama2-7b","num_layers":4},"parallel":{"pp":4},
          "training":{"seq_len":64,"global_batch_size":8,"schedule":"gpipe"}})",
      R"({"model":{"preset":"llama2-7b","num_layers":4},"parallel":{"pp":4},
          "training":{"seq_len":64,"global_batch_size":8,"schedule":"1f1b"}})",
      R"({"model":{"preset":"llama2-7b","num_layers":8},"parallel":{"pp":4,"virtual_stages":2},
          "training":{"seq_len":64,"global_batch_size":8,"schedule":"interleaved-1f1b"}})",
      R"({"model":{"preset":"llama2-7b","num_layers":4},"parallel":{"pp":4,"tp":2,"dp":2},
          "training":{"seq_len":64,"global_batch_size":8,"schedule":"zero-bubble"}})",
  };
  for (const char* text : jobs) {
    CAPTURE(text);
    Job j = parse(text);
    j.network.domain_bandwidth_gbs = j.network.scale_out_bandwidth_gbs = 1e6;
    j.network.domain_latency_us = j.network.scale_out_latency_us = 0;
    j.network.protocols = "simple";  // one protocol at full bandwidth, as the replay assumes
    auto g = make(j);
    std::vector<RankTrace> ranks;
    for (int64_t r = 0; r < g.world_size(); ++r) ranks.push_back(g.rank_trace(r).value());
    auto ref = replay_traces(ranks, g.groups(), 1e9);  // bytes per µs
    REQUIRE(ref.completed);
    // Communication kernels taking SMs would slow compute by a share of
    // the (almost zero) transfer times: left out here.
    auto r = run(g, false, false, false);
    CHECK(r.sim.step == doctest::Approx(ref.makespan_micros).epsilon(1e-6));
    for (const auto& st : r.sim.stages) {
      double sum = st.busy + st.bubble;
      for (double e : st.exposed) sum += e;
      CHECK(sum == doctest::Approx(r.sim.step).epsilon(1e-6));
    }
  }
}

TEST_CASE("simulate: busy + bubble + exposed communication make up the step on every stage") {
  auto g = make(parse(R"({"model":{"preset":"llama2-7b","num_layers":4},"parallel":{"tp":2,"dp":2,"pp":2},
                         "training":{"seq_len":128,"global_batch_size":8},"network":{"domain_size":2}})"));
  auto r = run(g, false);
  for (const auto& st : r.sim.stages) {
    double sum = st.busy + st.bubble;
    for (double e : st.exposed) sum += e;
    CHECK(sum == doctest::Approx(r.sim.step));
    CHECK(st.exposed[0] > 0);  // tp collectives sit between GEMMs
  }
  CHECK(!r.sim.critical_path.empty());
  CHECK(r.sim.critical_path.size() <= 12);
}

TEST_CASE("simulate: summary time fields follow their definitions") {
  auto g = make(parse(R"({"model":{"preset":"llama2-7b","num_layers":4},"parallel":{"tp":2,"dp":2,"pp":2},
                         "training":{"seq_len":128,"global_batch_size":8}})"));
  auto s = summary(g);
  const auto& t = s["time"];
  const double step = t["step_seconds"].get<double>();
  CHECK(step > 0);
  const double model = s["flops"]["model_per_iteration"].get<double>();
  const double peak = hardware_preset("h100").value().peak_flops_bf16;
  CHECK(t["mfu"].get<double>() == doctest::Approx(model / (8 * peak * step)).epsilon(1e-6));
  CHECK(t["tokens_per_second"].get<double>() == doctest::Approx(8.0 * 128 / step).epsilon(1e-6));
  CHECK(t["bubble_fraction"].get<double>() >= 0);
  CHECK(t["bubble_fraction"].get<double>() < 1);
  for (const char* k : kCommKinds) CHECK(t["exposed_comm_seconds"].contains(k));
  CHECK(run(g, false).step_seconds == doctest::Approx(step).epsilon(1e-8));
}

TEST_CASE("simulate: timeline intervals per stage") {
  auto g = make(parse(R"({"model":{"preset":"llama2-7b","num_layers":2},"parallel":{"pp":2},
                         "training":{"seq_len":64,"global_batch_size":3,"schedule":"1f1b"}})"));
  SimulateOptions o;
  o.timeline = true;
  auto r = simulate(g, o).value();
  for (const auto& st : r.sim.stages) {
    std::set<int32_t> fwd, bwd;
    double last_end = 0;
    for (const auto& iv : st.timeline) {
      CHECK(iv.end > iv.start);
      const std::string k = iv.kind;
      if (k == "F" || k == "B" || k == "W" || k == "O") {
        CHECK(iv.start >= last_end - 1e-9);  // one compute stream
        last_end = iv.end;
      }
      if (k == "F") fwd.insert(iv.micro_batch);
      if (k == "B") bwd.insert(iv.micro_batch);
    }
    CHECK(fwd == std::set<int32_t>{0, 1, 2});
    CHECK(bwd == std::set<int32_t>{0, 1, 2});
  }
  auto js = nlohmann::json::parse(simulate_json(r));
  CHECK(js["stages"][0]["timeline"].is_array());
  CHECK(js["stages"][0]["timeline"][0].size() == 4);
}

TEST_CASE("simulate: bad network settings name the field") {
  auto err = [](const std::string& network) {
    auto j = parse_job(R"({"model":{"preset":"llama2-7b","num_layers":2},"network":)" + network + "}");
    REQUIRE(!j.ok());
    return j.error();
  };
  CHECK(err(R"({"algorithm":"butterfly"})").path == "network.algorithm");
  CHECK(err(R"({"algorithm":"butterfly"})").message.find("ring, tree, hierarchical") != std::string::npos);
  CHECK(err(R"({"bandwidth":1})").code == ErrorCode::kUnknownField);
  CHECK(err(R"({"oversubscription":0.5})").path == "network.oversubscription");
  CHECK(err(R"({"domain_bandwidth_gbs":0})").path == "network.domain_bandwidth_gbs");
  CHECK(err(R"({"scale_out_latency_us":-1})").path == "network.scale_out_latency_us");
  CHECK(err(R"({"domain_size":0})").path == "network.domain_size");
  CHECK(err(R"([1])").path == "network");
  // SM shares are fractions in [0, 1): the message names the range and value.
  CHECK(err(R"({"comm_sm_share_domain":1})").path == "network.comm_sm_share_domain");
  CHECK(err(R"({"comm_sm_share_domain":1})").message.find("< 1") != std::string::npos);
  CHECK(err(R"({"comm_sm_share_domain":1})").message.find("got 1") != std::string::npos);
  CHECK(err(R"({"comm_sm_share_scale_out":-0.1})").path == "network.comm_sm_share_scale_out");
  CHECK(err(R"({"comm_sm_share_scale_out":"x"})").path == "network.comm_sm_share_scale_out");
  // A network with fewer GPUs than the job.
  Job j = parse(R"({"model":{"preset":"llama2-7b","num_layers":2},"parallel":{"dp":32},
                   "training":{"seq_len":64},"network":{"nodes":2}})");
  auto g = Generator::create(j);
  REQUIRE(!g.ok());
  CHECK(g.error().path == "network.nodes");
  CHECK(g.error().message.find("too small") != std::string::npos);
  CHECK(g.error().message.find("32 ranks") != std::string::npos);
}

TEST_CASE("simulate: tp collectives run on the compute stream (default mode), beside it under ASTRA-sim's rules") {
  // One tp pair, no dp, no pipeline: in the default (Megatron) mode the
  // compute stream runs every compute node and every tp collective one
  // after another, so the step is their sum, each collective timed by the
  // network formula for a 2-rank group inside one domain.
  auto g = make(parse(R"({"model":{"preset":"gpt3-1.7b","num_layers":2},"parallel":{"tp":2},
                         "training":{"seq_len":256,"global_batch_size":2}})"));
  auto r = run(g, false);
  const RankTrace t = g.rank_trace(0).value();
  GroupShape pair = shape(r.network, {0, 1});
  double expect = 0;
  int colls = 0;
  for (const auto& n : t.nodes) {
    if (n.kind == TraceNodeKind::kCompute) expect += static_cast<double>(n.duration_micros);
    if (n.kind == TraceNodeKind::kCollective) {
      expect += collective_micros(r.network, pair, n.coll, n.comm_size);
      ++colls;
    }
  }
  REQUIRE(colls > 0);
  CHECK(r.sim.step == doctest::Approx(expect).epsilon(1e-9));
  CHECK(r.sim.stages[0].exposed[0] > 0);
  CHECK(r.sim.stages[0].bubble == doctest::Approx(0).epsilon(1e-9));
}

TEST_CASE("simulate: communication beside compute slows it by its SM share") {
  // dp buckets overlap the backward pass on their own stream. With the SM
  // share at 0 the step is the free-running schedule; with a share f the
  // compute overlapped by a transfer runs 1/(1-f) times longer, so the step
  // grows, and by at most f/(1-f) of the total transfer time. (Long
  // sequences: the backward pass outlasts the reductions it overlaps.)
  auto g = make(parse(R"({"model":{"preset":"gpt3-1.7b","num_layers":4},"parallel":{"dp":8},
                         "training":{"seq_len":2048,"global_batch_size":8,"dp_bucket_mb":4,"overlap_grad_reduce":true}})"));
  SimulateOptions o;
  o.comm_sm_share_domain = o.comm_sm_share_scale_out = 0;
  auto free_run = simulate(g, o).value();
  o.comm_sm_share_domain = 0.15;
  auto shared = simulate(g, o).value();
  const RankTrace t = g.rank_trace(0).value();
  std::vector<int64_t> all(8);
  for (int64_t i = 0; i < 8; ++i) all[i] = i;
  GroupShape dp = shape(free_run.network, all);
  double comm = 0;
  for (const auto& n : t.nodes)
    if (n.kind == TraceNodeKind::kCollective) comm += collective_micros(free_run.network, dp, n.coll, n.comm_size);
  REQUIRE(comm > 0);
  CHECK(shared.sim.step > free_run.sim.step);
  CHECK(shared.sim.step - free_run.sim.step <= 0.15 / 0.85 * comm + 1e-6);
  // The same shares set in the job's network block: the same step, and the
  // resolved network reports them.
  auto g0 = make(parse(R"({"model":{"preset":"gpt3-1.7b","num_layers":4},"parallel":{"dp":8},
                          "training":{"seq_len":2048,"global_batch_size":8,"dp_bucket_mb":4,"overlap_grad_reduce":true},
                          "network":{"comm_sm_share_domain":0,"comm_sm_share_scale_out":0}})"));
  SimulateOptions d;
  d.reuse_summary = false;
  auto from_job = simulate(g0, d).value();
  CHECK(from_job.sim.step == free_run.sim.step);
  CHECK(from_job.network.comm_sm_share_domain == 0);
  CHECK(from_job.network.comm_sm_share_scale_out == 0);
  // Unset, they are the documented defaults (Calculon's 15% and 2%).
  CHECK(simulate(g, d).value().network.comm_sm_share_domain == 0.15);
  CHECK(simulate(g, d).value().network.comm_sm_share_scale_out == 0.02);
  // Symmetry still holds with the rate changes.
  o.exhaustive = true;
  CHECK(simulate(g, o).value().sim.step == shared.sim.step);
}

TEST_CASE("simulate: the default run reuses the summary's simulation and equals a fresh one") {
  auto g = make(parse(R"({"model":{"preset":"llama2-7b","num_layers":4},"parallel":{"tp":2,"dp":2,"pp":2},
                         "training":{"seq_len":128,"global_batch_size":8}})"));
  SimulateOptions fresh;
  fresh.reuse_summary = false;
  auto a = simulate(g, {}).value(), b = simulate(g, fresh).value();
  CHECK(simulate_json(a) == simulate_json(b));
}
