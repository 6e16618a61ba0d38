// The host timeline (docs/simulate.md, "The host"): a dropless MoE token
// dispatcher copies the tokens per expert to the host in every layer's
// forward, and the host issues the dispatch and everything after it only
// hardware.host_sync_micros after the dispatch's inputs are done. The key
// training.moe_pad_expert_input_to_capacity, the profile field, and the
// step against the same job without the sync, worked out by hand.
#include "../test_jobs.h"

#include "api/simulate.h"

using namespace sc;
using namespace sc::testing;

namespace {

// 8 experts, top-2, ep 4 over dp 4; 2 MoE layers, one micro-batch per rank
// (global batch 4): two forward dispatches per rank.
std::string moe_job(const std::string& dispatcher, const std::string& training_extra,
                    const std::string& hardware = R"("h100")") {
  return R"({"model": {"num_layers": 2, "hidden": 256, "num_heads": 4, "vocab": 1024, "ffn_hidden": 512,
                       "num_experts": 8, "experts_per_token": 2, "moe_ffn_hidden": 128},
            "training": {"seq_len": 128, "global_batch_size": 4)" +
         training_extra + R"(},
            "parallel": {"dp": 4, "ep": 4, "moe_dispatcher": ")" +
         dispatcher + R"("},
            "hardware": )" +
         hardware + "}";
}

SimulateReport sim(const Job& j, double host_sync_micros = -1) {
  Generator g = make(j);
  SimulateOptions o;
  o.host_sync_micros = host_sync_micros;
  o.reuse_summary = false;
  Result<SimulateReport> r = simulate(g, o);
  REQUIRE_MESSAGE(r.ok(), r.error().message);
  return *r;
}


}  // namespace

TEST_CASE("host sync: the key parses, defaults to dropless, and is named in errors and the canonical JSON") {
  const Job d = job_of(moe_job("alltoall", ""));
  CHECK(!d.training.moe_pad_expert_input_to_capacity);
  CHECK(!has(job_to_canonical_json(d), "moe_pad_expert_input_to_capacity"));
  const Job p = job_of(moe_job("alltoall", R"(, "moe_pad_expert_input_to_capacity": true)"));
  CHECK(p.training.moe_pad_expert_input_to_capacity);
  CHECK(has(job_to_canonical_json(p), "\"moe_pad_expert_input_to_capacity\": true"));
  // Padded: no host timeline, so the constant is not part of its hash.
  CHECK(!has(job_to_canonical_json(p), "host_sync_micros"));
  Result<Job> bad = parse_job(moe_job("alltoall", R"(, "moe_pad_expert_input_to_capacity": "yes")"));
  REQUIRE(!bad.ok());
  CHECK(bad.error().path == "training.moe_pad_expert_input_to_capacity");
  // The profile's constant: h100 has one, named in an MoE training job's
  // canonical JSON (its hash), not in a dense job's.
  // The profiles' value (docs/hardware.md, "The host"): derived for the
  // h100 from a published profile, taken by h200 and b200; a100 none.
  CHECK(hardware_preset("h100").value().host_sync_micros == 615);
  CHECK(hardware_preset("h200").value().host_sync_micros == 615);
  CHECK(hardware_preset("b200").value().host_sync_micros == 615);
  CHECK(hardware_preset("a100").value().host_sync_micros == 0);
  CHECK(d.hardware.host_sync_micros == 615);
  CHECK(has(job_to_canonical_json(d), "\"host_sync_micros\""));
  const Job dense = job_of(R"({"model": {"preset": "gpt3-1.7b", "num_layers": 2}, "parallel": {"dp": 2},
                               "training": {"seq_len": 128, "global_batch_size": 2}, "hardware": "h100"})");
  CHECK(!has(job_to_canonical_json(dense), "host_sync_micros"));
  Result<Job> neg = parse_job(moe_job("alltoall", "", R"({"preset": "h100", "host_sync_micros": -1})"));
  REQUIRE(!neg.ok());
  CHECK(neg.error().path == "hardware.host_sync_micros");
  CHECK(has(neg.error().message, "-1"));
}

TEST_CASE("host sync: each forward dispatch waits host_sync_micros") {
  // In Megatron's streams the ep all-to-alls run on the compute stream, so
  // a rank's forward and backward are one chain; the two forward
  // dispatches of the step each start host_sync_micros later than their
  // inputs finish, and nothing runs beside the gap: the step grows by
  // exactly 2 x host_sync_micros over the padded job's (no sync), and the
  // gap is idle time (bubble). Symmetric ranks: one class, no skew.
  const double g = 500;
  for (const char* dispatcher : {"alltoall", "deepep"}) {
    CAPTURE(dispatcher);
    const Job dropless = job_of(moe_job(dispatcher, ""));
    const Job padded = job_of(moe_job(dispatcher, R"(, "moe_pad_expert_input_to_capacity": true)"));
    const SimulateReport base = sim(padded, g);
    const SimulateReport none = sim(dropless, 0);
    const SimulateReport with = sim(dropless, g);
    CHECK(base.sim.step == doctest::Approx(none.sim.step).epsilon(1e-12));
    CHECK(with.sim.step == doctest::Approx(none.sim.step + 2 * g).epsilon(1e-12));
    CHECK(with.sim.stages[0].bubble == doctest::Approx(none.sim.stages[0].bubble + 2 * g).epsilon(1e-9));
    // The report counts the syncs (two dispatches) and says the gap; the
    // padded job and the run without a gap report none.
    CHECK(with.sim.stages[0].host_syncs == 2);
    CHECK(with.host_sync_micros == g);
    CHECK(base.host_sync_micros == 0);
    CHECK(base.sim.stages[0].host_syncs == 0);
    CHECK(none.host_sync_micros == 0);
    const std::string js = simulate_json(with);
    CHECK(has(js, "\"host_syncs\": 2"));
    CHECK(has(js, "\"host_sync_micros\": 500"));
    CHECK(!has(simulate_json(base), "host_sync"));
    CHECK(has(simulate_text(with), "waits for the device 2 times a step"));
  }
}

TEST_CASE("host sync: DeepEP's two legs across nodes count once") {
  // ep 16 over two nodes of 8: DeepEP's dispatch is an RDMA leg (ep_rdma)
  // and an NVLink leg (ep_nvl), two adjacent collectives; the host waits
  // once per layer and micro-batch: 2 layers x 1 micro-batch.
  const std::string text = R"({"model": {"num_layers": 2, "hidden": 256, "num_heads": 4, "vocab": 1024,
                                         "ffn_hidden": 512, "num_experts": 16, "experts_per_token": 2,
                                         "moe_ffn_hidden": 128},
                               "training": {"seq_len": 128, "global_batch_size": 16},
                               "parallel": {"dp": 16, "ep": 16, "moe_dispatcher": "deepep"}, "hardware": "h100"})";
  const Job j = job_of(text);
  Generator gen = make(j);
  const RankTrace t = gen.rank_trace(0).value();
  int legs = 0;
  for (const auto& n : t.nodes)
    if (n.kind == TraceNodeKind::kCollective && n.name.find("fwd.L0.moe.dispatch.") != std::string::npos) ++legs;
  REQUIRE(legs == 2);  // the case under test: two legs
  const double g = 500;
  const SimulateReport with = sim(j, g), none = sim(j, 0);
  CHECK(with.sim.stages[0].host_syncs == 2);
  CHECK(with.sim.step == doctest::Approx(none.sim.step + 2 * g).epsilon(1e-12));
}

TEST_CASE("host sync: only dropless MoE training over ep > 1, and not under ASTRA-sim's rules") {
  const double g = 500;
  // ep 1: no dispatch collective, nothing to wait for.
  const Job ep1 = job_of(R"({"model": {"num_layers": 2, "hidden": 256, "num_heads": 4, "vocab": 1024,
                                      "ffn_hidden": 512, "num_experts": 8, "experts_per_token": 2,
                                      "moe_ffn_hidden": 128},
                            "training": {"seq_len": 128, "global_batch_size": 4}, "parallel": {"dp": 4}})");
  CHECK(sim(ep1, g).sim.step == doctest::Approx(sim(ep1, 0).sim.step).epsilon(1e-12));
  // ep 1 with tp 2: the dispatch has collectives (over etp), still no sync.
  const Job etp = job_of(R"({"model": {"num_layers": 2, "hidden": 256, "num_heads": 4, "vocab": 1024,
                                      "ffn_hidden": 512, "num_experts": 8, "experts_per_token": 2,
                                      "moe_ffn_hidden": 128},
                            "training": {"seq_len": 128, "global_batch_size": 4},
                            "parallel": {"dp": 2, "tp": 2, "sequence_parallel": true}})");
  {
    Generator gen = make(etp);
    int dispatch_colls = 0;
    const RankTrace t = gen.rank_trace(0).value();  // held: a range-for over a temporary's member dangles
    for (const auto& n : t.nodes)
      if (n.kind == TraceNodeKind::kCollective && n.name.find("fwd.L0.moe.dispatch.") != std::string::npos)
        ++dispatch_colls;
    CHECK(dispatch_colls > 0);
  }
  CHECK(sim(etp, g).sim.step == doctest::Approx(sim(etp, 0).sim.step).epsilon(1e-12));
  CHECK(sim(etp, g).sim.stages[0].host_syncs == 0);
  // ASTRA-sim's analytical rules have no host.
  const Job d = job_of(moe_job("alltoall", ""));
  Generator gen = make(d);
  SimulateOptions o;
  o.astra = true;
  o.host_sync_micros = g;
  const double a = simulate(gen, o).value().sim.step;
  o.host_sync_micros = 0;
  CHECK(a == doctest::Approx(simulate(gen, o).value().sim.step).epsilon(1e-12));
}

TEST_CASE("host sync: the engine by hand: the host holds back every later node, on every stream") {
  // Two ranks (ep 2, one NVLink domain of 100 B/µs, 1 µs per step):
  //   0 A  compute 10 µs (the router)
  //   1 R  an all-to-all on the EP stream (side 4), no dependency, 30 µs:
  //        issued by the host before the sync, so it starts at 0
  //   2 X  the dispatch all-to-all of C = 5800 B, waits for A: 1 + (2-1)/2
  //        x 5800 / 100 = 30 µs; the host waits here (host_sync)
  //   3 P  compute 40 µs with no dependency: ready at 0, but the host
  //        issues it only with X
  //   4 Q  compute 10 µs after X and P
  // Without the host: A 0-10, X 10-40 on the compute stream, P 40-80, Q
  // 80-90. With a gap of 100 µs: X is issued at 10 + 100 = 110 (110-140),
  // P, issued with it, after it (140-180), Q 180-190; R, before the sync
  // in id order, is not held (0-30).
  RoleProgram p;
  p.axes = {"", "ep"};
  const auto node = [&](TraceNodeKind k, uint64_t dur, std::vector<uint64_t> deps, uint8_t axis, uint8_t side) {
    add_hand_node(p, k, dur, std::move(deps), axis, side, 5800);
  };
  node(TraceNodeKind::kCompute, 10, {}, 0, 0);
  node(TraceNodeKind::kCollective, 0, {}, 1, 4);
  node(TraceNodeKind::kCollective, 0, {0}, 1, 0);
  node(TraceNodeKind::kCompute, 40, {}, 0, 0);
  node(TraceNodeKind::kCompute, 10, {2, 3}, 0, 0);
  HandSim h(p);
  h.net.comm_sm_share_domain = h.net.comm_sm_share_scale_out = 0;
  h.o.timeline = true;
  // No sync flag: at 10 the compute stream takes the lowest ready id, X
  // (2), before P (3), ready since 0.
  CHECK(h.run().step == doctest::Approx(90));
  h.st[0].host_sync = {0, 0, 1, 0, 0};
  // The flag without a host timeline changes nothing.
  CHECK(h.run().step == doctest::Approx(90));
  h.o.host_sync_micros = 100;
  const SimResult r = h.run();
  CHECK(r.step == doctest::Approx(190));
  // The timeline: compute A 0-10, P 140-180, Q 180-190; the ep transfers
  // R 0-30 (beside A until 10, exposed after) and X 110-140. Idle: 30-110,
  // the gap less the 20 µs R runs into it.
  CHECK(r.stages[0].bubble == doctest::Approx(80));
  double x_start = -1, x_end = -1, r_end = -1;
  for (const SimInterval& x : r.stages[0].timeline) {
    if (std::string(x.kind) != "ep") continue;
    if (x.start >= 100) x_start = x.start, x_end = x.end;
    else r_end = std::max(r_end, x.end);
  }
  CHECK(r_end == doctest::Approx(30));
  CHECK(x_start == doctest::Approx(110));
  CHECK(x_end == doctest::Approx(140));
  // ASTRA-sim's streams: no host.
  SimOptions a = h.o;
  a.streams = SimStreams::kAstra;
  a.timeline = false;
  SimOptions a0 = a;
  a0.host_sync_micros = 0;
  CHECK(h.run(a).step == doctest::Approx(h.run(a0).step));
}
