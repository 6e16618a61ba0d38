// training.overlap_p2p_comm (Megatron-LM's pipeline send/recv overlap,
// docs/parallelism.md "Pipeline send/recv overlap"): parsing, the default,
// the canonical form, errors naming the field; the simulator's streams on a
// program built by hand, timed by hand from the message size and the link
// bandwidth; and on whole jobs: the exported traces unchanged, the effect
// only where Megatron-LM applies it (interleaved schedules).
#include "../test_jobs.h"

#include "api/simulate.h"
#include "sim/network.h"

using namespace sc;
using namespace sc::testing;

namespace {

Job parse(const std::string& text) {
  auto j = parse_job(text);
  if (!j.ok()) FAIL(j.error().to_string());
  return *j;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

SimulateReport sim(const Generator& g) {
  SimulateOptions o;
  o.comm_sm_share_domain = o.comm_sm_share_scale_out = 0;
  auto r = simulate(g, o);
  if (!r.ok()) FAIL(r.error().to_string());
  return *r;
}

// A tiny pipeline: 4 layers of gpt3-1.7b over pp 2.
std::string pipe_job(const std::string& schedule, int64_t v, const std::string& extra) {
  return R"({"model":{"preset":"gpt3-1.7b","num_layers":4},"parallel":{"pp":2,"virtual_stages":)" +
         std::to_string(v) + R"(},"training":{"seq_len":1024,"global_batch_size":4,"schedule":")" + schedule +
         R"(")" + extra + R"(}})";
}

}  // namespace

TEST_CASE("overlap_p2p_comm: parse, default true (Megatron-LM's), canonical form, errors name the field") {
  Job d = parse(R"({"model":{"preset":"gpt3-1.7b"}})");
  CHECK(d.training.overlap_p2p_comm);  // --no-overlap-p2p-communication is a store_false flag
  // The default stays out of the canonical form: existing jobs keep their text and hash.
  CHECK(!contains(job_to_canonical_json(d), "overlap_p2p_comm"));
  CHECK(!contains(job_to_canonical_json(parse(R"({"model":{"preset":"gpt3-1.7b"},"training":{"overlap_p2p_comm":true}})")),
                  "overlap_p2p_comm"));
  Job off = parse(R"({"model":{"preset":"gpt3-1.7b"},"training":{"overlap_p2p_comm":false}})");
  CHECK(!off.training.overlap_p2p_comm);
  const std::string c = job_to_canonical_json(off);
  CHECK(contains(c, "\"overlap_p2p_comm\": false"));
  CHECK(job_to_canonical_json(parse(c)) == c);  // parses back to the same job
  for (const char* bad : {R"("no")", "0", "[]"}) {
    auto r = parse_job(std::string(R"({"model":{"preset":"gpt3-1.7b"},"training":{"overlap_p2p_comm":)") + bad + "}}");
    REQUIRE(!r.ok());
    CHECK(r.error().path == "training.overlap_p2p_comm");
    CHECK(contains(r.error().message, "true or false"));
  }
}

TEST_CASE("overlap_p2p_comm: a steady-phase send runs beside the compute stream, timed by hand") {
  // Two pipeline stages in one NVLink domain of 100 B/µs and 1 µs latency.
  // A message of 2,900 B takes T = 1 + 2900 / 100 = 30 µs (sim/network.cc
  // p2p_micros: latency + bytes / bandwidth inside a domain).
  //   stage 0:  A (100 µs), send s1 (tag 0, after A), C (100 µs), send s2 (tag 1, after C)
  //   stage 1:  recv r1 (tag 0), D1 (100 µs, after r1), recv r2 (tag 1), D2 (100 µs, after r2)
  NetworkModel net = two_rank_network();
  net.comm_sm_share_domain = net.comm_sm_share_scale_out = 0;
  REQUIRE(p2p_micros(net, 0, 1, 2900) == doctest::Approx(30));
  const auto add = [](RoleProgram& p, TraceNodeKind k, uint64_t dur, std::vector<uint64_t> deps, int32_t peer,
                      int32_t tag) { add_hand_node(p, k, dur, std::move(deps), 0, 0, 2900, peer, tag); };
  RoleProgram p0, p1;
  add(p0, TraceNodeKind::kCompute, 100, {}, -1, 0);  // 0 A
  add(p0, TraceNodeKind::kSend, 0, {0}, 1, 0);       // 1 s1
  add(p0, TraceNodeKind::kCompute, 100, {0}, -1, 0);  // 2 C
  add(p0, TraceNodeKind::kSend, 0, {2}, 1, 1);       // 3 s2
  add(p1, TraceNodeKind::kRecv, 0, {}, 0, 0);        // 0 r1
  add(p1, TraceNodeKind::kCompute, 100, {0}, -1, 0);  // 1 D1
  add(p1, TraceNodeKind::kRecv, 0, {}, 0, 1);        // 2 r2
  add(p1, TraceNodeKind::kCompute, 100, {1, 2}, -1, 0);  // 3 D2
  RankLayout layout({{"pp", 2}});
  std::vector<SimStage> st(2);
  st[0].program = &p0;
  st[1].program = &p1;
  SimOptions o;
  o.streams = SimStreams::kMegatron;
  const auto run = [&] { return simulate_programs(st, layout, 1, net, o).value(); };

  SUBCASE("blocking sends (side 0, warm-up / cool-down, or overlap off)") {
    // Megatron-LM's streams: a send holds the compute stream until its
    // transfer is done. Stage 0: A 0-100, s1 100-130, C 130-230, s2
    // 230-260. Stage 1: r1 100-130, D1 130-230, r2 230-260, D2 260-360.
    const SimResult r = run();
    CHECK(r.step == doctest::Approx(360));
    CHECK(r.stages[0].exposed[3] == doctest::Approx(60));  // both sends, nothing computing beside them
    CHECK(r.stages[1].exposed[3] == doctest::Approx(60));  // both receives waited for
    CHECK(r.stages[1].bubble == doctest::Approx(100));     // before s1 is sent
  }
  SUBCASE("asynchronous sends (side 3: overlap_p2p_comm's steady phase)") {
    p0.side_stream[1] = p0.side_stream[3] = 3;
    // The sends go to the pipeline stream: stage 0's C starts at 100, right
    // after A; s1 100-130 beside it, s2 200-230. Stage 1 waits only for
    // the transfers: r1 100-130, D1 130-230, r2 200-230 (hidden under D1),
    // D2 230-330. The step is T shorter: 360 - 30.
    const SimResult r = run();
    CHECK(r.step == doctest::Approx(330));
    // Stage 0: s1 hidden under C; s2 in flight after the last compute: 30.
    CHECK(r.stages[0].exposed[3] == doctest::Approx(30));
    CHECK(r.stages[0].busy == doctest::Approx(200));
    // Stage 1: r1 waited for (30); r2 hidden under D1.
    CHECK(r.stages[1].exposed[3] == doctest::Approx(30));
    // ASTRA-sim's streams already put every send beside the compute stream:
    // the marks change nothing there.
    o.streams = SimStreams::kAstra;
    const double astra = run().step;
    p0.side_stream[1] = p0.side_stream[3] = 0;
    CHECK(run().step == doctest::Approx(astra));
  }
}

TEST_CASE("overlap_p2p_comm: interleaved jobs only, same exported traces, less exposed pipeline time") {
  // Megatron-LM applies the overlap to the interleaved schedule only
  // (arguments.py turns it off without virtual stages): a 1F1B job
  // simulates to the same numbers either way.
  {
    auto on = sim(make(parse(pipe_job("1f1b", 1, ""))));
    auto off = sim(make(parse(pipe_job("1f1b", 1, R"(,"overlap_p2p_comm":false)"))));
    CHECK(on.sim.step == off.sim.step);
    for (size_t s = 0; s < 2; ++s) CHECK(on.sim.stages[s].exposed[3] == off.sim.stages[s].exposed[3]);
  }
  // Interleaved, pp 2, v 2, m 4: the overlap is a simulator stream choice;
  // the Chakra traces every rank exports are the same nodes and
  // dependencies either way (tests/golden/corpus_hashes.txt stays).
  Generator gon = make(parse(pipe_job("interleaved-1f1b", 2, "")));
  Generator goff = make(parse(pipe_job("interleaved-1f1b", 2, R"(,"overlap_p2p_comm":false)")));
  for (int64_t rank : {0, 1}) CHECK(same_nodes(gon.rank_trace(rank).value(), goff.rank_trace(rank).value()));
  auto on = sim(gon), off = sim(goff);
  // Each stage's compute is the same work (no SM share here); the steady
  // phase's sends leave the compute stream, so each stage's exposed
  // pipeline time falls and the step with it.
  for (size_t s = 0; s < 2; ++s) {
    CHECK(on.sim.stages[s].busy == doctest::Approx(off.sim.stages[s].busy).epsilon(1e-12));
    CHECK(on.sim.stages[s].exposed[3] < off.sim.stages[s].exposed[3]);
  }
  CHECK(on.sim.step < off.sim.step);
  // Stage 0 sends after every forward (chunks 0 and 1 feed stage 1) and
  // after each backward of chunk 1. Its steady phase (trace/schedule.h:
  // warm-up (2 - 0 - 1) * 2 + (2 - 1) * 2 = 4 of the m v = 8 forwards)
  // holds 4 forwards and the backwards of virtual micro-batches 0-3,
  // chunk 1 for 0 and 1: 6 sends leave the compute stream. Each blocked
  // it for at least the message's transfer time, so the step cannot fall
  // by more than 6 transfers on stage 0 plus stage 1's (warm-up 2, then 6
  // forward/backward pairs; it sends after forwards of chunk 0, virtual
  // micro-batches 4 and 5, and after every backward: 8).
  const RankTrace t0 = gon.rank_trace(0).value();
  double transfer = 0;
  for (const TraceNode& n : t0.nodes)
    if (n.kind == TraceNodeKind::kSend) transfer = std::max(transfer, p2p_micros(on.network, 0, n.peer, n.comm_size));
  REQUIRE(transfer > 0);
  CHECK(off.sim.step - on.sim.step <= (6 + 8) * transfer + 1e-6);
}
