// The host's issue time per node (hardware.host_launch_micros; docs/
// simulate.md, "The host"): in a training job the host issues a rank's
// nodes one after another, each host_launch_micros after the previous,
// and no node starts before its issue. Every preset has 0 (the host keeps
// ahead); a job's value is in its canonical JSON only when given. The
// engine's timing is worked out by hand on small programs.
#include "../test_jobs.h"

#include "api/simulate.h"

using namespace sc;
using namespace sc::testing;

namespace {

std::string dense_job(const std::string& hardware) {
  return R"({"model": {"preset": "gpt3-1.7b", "num_layers": 2}, "parallel": {"dp": 1},
             "training": {"seq_len": 128, "global_batch_size": 1}, "hardware": )" +
         hardware + "}";
}

SimulateReport sim(const Generator& g, double launch, bool astra = false) {
  SimulateOptions o;
  o.host_launch_micros = launch;
  o.astra = astra;
  o.reuse_summary = false;
  Result<SimulateReport> r = simulate(g, o);
  REQUIRE_MESSAGE(r.ok(), r.error().message);
  return *r;
}

}  // namespace

TEST_CASE("host launch: the key parses, is 0 on every preset, and is in the canonical JSON only when given") {
  for (const std::string& name : hardware_names()) {
    CAPTURE(name);
    CHECK(hardware_preset(name).value().host_launch_micros == 0);
  }
  const Job none = job_of(dense_job(R"("h100")"));
  CHECK(none.hardware.host_launch_micros == 0);
  CHECK(!has(job_to_canonical_json(none), "host_launch_micros"));
  const Job given = job_of(dense_job(R"({"preset": "h100", "host_launch_micros": 21.8})"));
  CHECK(given.hardware.host_launch_micros == 21.8);
  CHECK(has(job_to_canonical_json(given), "\"host_launch_micros\": 21.8"));
  // Out of [0, 1000] or not a number: an error naming the field and the value.
  for (const char* bad : {"-1", "1000.5", "\"fast\""}) {
    CAPTURE(bad);
    Result<Job> r = parse_job(dense_job(std::string(R"({"preset": "h100", "host_launch_micros": )") + bad + "}"));
    REQUIRE(!r.ok());
    CHECK(r.error().path == "hardware.host_launch_micros");
  }
  Result<Job> neg = parse_job(dense_job(R"({"preset": "h100", "host_launch_micros": -1})"));
  CHECK(has(neg.error().message, "-1"));
  // A serving job has its own host costs (docs/inference.md): the field is
  // not part of its canonical JSON.
  const Job serve = job_of(R"({"mode": "inference", "model": {"preset": "llama3-8b", "num_layers": 2},
                               "parallel": {"tp": 1}, "serving": {"prompt_tokens": 128, "output_tokens": 8},
                               "hardware": {"preset": "h100", "host_launch_micros": 21.8}})");
  CHECK(!has(job_to_canonical_json(serve), "host_launch_micros"));
}

TEST_CASE("host launch: the engine by hand: each node waits for its issue") {
  // One rank's chain on the compute stream: A 10 µs, B 10 µs after A,
  // C 50 µs after B. Without a host: 0-10, 10-20, 20-70.
  RoleProgram p;
  p.axes = {"", "ep"};
  add_hand_node(p, TraceNodeKind::kCompute, 10, {}, 0, 0, 0);
  add_hand_node(p, TraceNodeKind::kCompute, 10, {0}, 0, 0, 0);
  add_hand_node(p, TraceNodeKind::kCompute, 50, {1}, 0, 0, 0);
  HandSim h(p);
  CHECK(h.run().step == doctest::Approx(70));
  // 20 µs per node, longer than A and B: issued at 20, 40 and 60, each
  // starts at its issue: A 20-30, B 40-50, C 60-110; the device idles 40 µs.
  h.o.host_launch_micros = 20;
  SimResult r = h.run();
  CHECK(r.step == doctest::Approx(110));
  CHECK(r.stages[0].busy == doctest::Approx(70));
  // 5 µs per node, shorter than every node: A is issued at 5 (5-15); B
  // (issued at 10) and C (at 15) wait for their inputs, not for the host:
  // the step is the chain's 70 plus the first issue.
  h.o.host_launch_micros = 5;
  CHECK(h.run().step == doctest::Approx(75));
}

TEST_CASE("host launch: with a dispatcher's sync, the issue follows the sync's gap") {
  // A 10 µs; X the dispatch all-to-all (5800 B over 100 B/µs, 1 µs a
  // step, 2 ranks: 1 + 29 = 30 µs) after A, where the host waits for the
  // device; Q 10 µs after X. Sync gap 100, 5 µs per node: A issued at 5
  // (5-15); the host waits for A (15), spends 100, then 5 more: X issued
  // at 120 (120-150); Q issued at 125, starts after X: 150-160.
  RoleProgram p;
  p.axes = {"", "ep"};
  add_hand_node(p, TraceNodeKind::kCompute, 10, {}, 0, 0, 5800);
  add_hand_node(p, TraceNodeKind::kCollective, 0, {0}, 1, 0, 5800);
  add_hand_node(p, TraceNodeKind::kCompute, 10, {1}, 0, 0, 5800);
  HandSim h(p);
  h.net.comm_sm_share_domain = h.net.comm_sm_share_scale_out = 0;
  h.st[0].host_sync = {0, 1, 0};
  CHECK(h.run().step == doctest::Approx(50));
  h.o.host_sync_micros = 100;
  CHECK(h.run().step == doctest::Approx(150));  // A 0-10, X 110-140, Q 140-150
  h.o.host_launch_micros = 5;
  CHECK(h.run().step == doctest::Approx(160));
}

TEST_CASE("host launch: a built job: host-bound, host ahead, reported, and not under ASTRA-sim's rules") {
  const Job j = job_of(dense_job(R"("h100")"));
  Generator g = make(j);
  const RankTrace t = g.rank_trace(0).value();  // held: a range-for over a temporary's member dangles
  // One rank, no collective: every node is issued by the host, in id order.
  uint64_t longest = 0, shortest = UINT64_MAX;
  for (const auto& n : t.nodes) {
    REQUIRE(n.kind == TraceNodeKind::kCompute);
    longest = std::max(longest, n.duration_micros);
    shortest = std::min(shortest, n.duration_micros);
  }
  REQUIRE(shortest >= 1);
  const double none = sim(g, 0).sim.step;
  // Longer than every node: node k (from 0) is issued at (k + 1) L and
  // starts then, its inputs long done; the last one ends the step.
  const double L = static_cast<double>(longest) + 1;
  const SimulateReport slow = sim(g, L);
  CHECK(slow.sim.step ==
        doctest::Approx(static_cast<double>(t.nodes.size()) * L + static_cast<double>(t.nodes.back().duration_micros))
            .epsilon(1e-12));
  // Shorter than every node: the host keeps ahead after the first issue.
  const double s = static_cast<double>(shortest) / 2;
  CHECK(sim(g, s).sim.step == doctest::Approx(none + s).epsilon(1e-12));
  // The report names it when it ran, and not otherwise.
  CHECK(slow.host_launch_micros == L);
  CHECK(has(simulate_json(slow), "\"host_launch_micros\""));
  CHECK(has(simulate_text(slow), "issues each node"));
  const SimulateReport zero = sim(g, 0);
  CHECK(zero.host_launch_micros == 0);
  CHECK(!has(simulate_json(zero), "host_launch"));
  CHECK(!has(simulate_text(zero), "issues each node"));
  // The profile's value is what a plain simulate uses.
  const Job given = job_of(dense_job(R"({"preset": "h100", "host_launch_micros": 1000})"));
  Generator gg = make(given);
  CHECK(sim(gg, -1).sim.step == doctest::Approx(sim(gg, 1000).sim.step).epsilon(1e-12));
  CHECK(sim(gg, -1).sim.step > none);
  // ASTRA-sim's analytical rules have no host.
  CHECK(sim(g, L, true).sim.step == doctest::Approx(sim(g, 0, true).sim.step).epsilon(1e-12));
}
