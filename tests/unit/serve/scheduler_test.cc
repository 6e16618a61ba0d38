// The serving workload simulator (core/serve, docs/inference.md "Workload"):
// the 3-request example of the docs traced by hand iteration by iteration,
// preemption by recompute traced by hand, percentiles, and the seeded
// samplers. Expected values are derived here from the cost function's
// formula, never read back from the code under test.
#include <doctest/doctest.h>

#include <cmath>
#include <vector>

#include "job/job.h"
#include "serve/rng.h"
#include "serve/scheduler.h"
#include "serve/workload.h"

using namespace sc;
using namespace sc::serve;

namespace {

// An iteration costs 10 ms + 10 us per token: linear, so the grid's linear
// interpolation is exact; no attention or head cost.
CostModel linear_cost() {
  CostModel m;
  m.grid = {1, 4096};
  m.prefill_base = {0.010 + 1e-5, 0.010 + 4096e-5};
  m.decode_base = m.prefill_base;
  return m;
}
double cost(int tokens) { return 0.010 + 1e-5 * tokens; }

SchedulerParams small(int64_t budget, int64_t blocks) {
  SchedulerParams p;
  p.token_budget = budget;
  p.max_num_seqs = 4;
  p.page_tokens = 4;
  p.blocks_per_rank = blocks;
  return p;
}

// SGLang v0.3's engine: prefill first, its reserve admission.
SchedulerParams sglang(int64_t budget, int64_t blocks) {
  SchedulerParams p = small(budget, blocks);
  p.policy = SchedulerParams::Policy::kPrefillFirst;
  p.admission = SchedulerParams::Admission::kReserve;
  return p;
}

// Three 8 + 8 requests at t = 0 where the third waits for the first two
// (hand traces in the admission cases below): A and B prefill together
// (16 tokens), decode 7 steps and finish; C prefills alone (8) and decodes
// 7 steps; nothing is preempted.
const std::vector<Request> kThreeEights = {{0, 8, 8}, {0, 8, 8}, {0, 8, 8}};
void check_third_waits(const WorkloadResult& r) {
  CHECK(r.preemptions == 0);
  CHECK(r.iterations == 16);
  const double ab = cost(16) + 7 * cost(2), c_first = ab + cost(8);
  CHECK(r.requests[0].finish == doctest::Approx(ab).epsilon(1e-12));
  CHECK(r.requests[1].finish == doctest::Approx(ab).epsilon(1e-12));
  CHECK(r.requests[2].queue() == doctest::Approx(ab).epsilon(1e-12));
  CHECK(r.requests[2].ttft() == doctest::Approx(c_first).epsilon(1e-12));
  CHECK(r.requests[2].finish == doctest::Approx(c_first + 7 * cost(1)).epsilon(1e-12));
}

}  // namespace

TEST_CASE("serve: the 3-request example of docs/inference.md, by hand") {
  // A: t=0, 20 + 3 tokens; B: t=5 ms, 4 + 2; C: t=50 ms, 8 + 2. Budget 16.
  const std::vector<Request> reqs = {{0.0, 20, 3}, {0.005, 4, 2}, {0.050, 8, 2}};
  Result<WorkloadResult> r = simulate_workload(reqs, linear_cost(), small(16, 1000));
  REQUIRE(r.ok());
  // it1 (t=0): A's first chunk of 16.         ends t1 = c(16)
  // it2: A's last 4 + B's 4 (B arrived at 5 ms): t2 = t1 + c(8); A, B first tokens
  // it3: A and B decode:                        t3 = t2 + c(2); B done (2 tokens)
  // it4: A decodes:                             t4 = t3 + c(1); A done (3 tokens)
  // idle until C arrives at 50 ms; it5: C's 8:  t5 = 0.05 + c(8); C first token
  // it6: C decodes:                             t6 = t5 + c(1); C done
  const double t1 = cost(16), t2 = t1 + cost(8), t3 = t2 + cost(2), t4 = t3 + cost(1);
  const double t5 = 0.05 + cost(8), t6 = t5 + cost(1);
  const auto& q = r->requests;
  CHECK(r->iterations == 6);
  CHECK(q[0].ttft() == doctest::Approx(t2).epsilon(1e-12));
  CHECK(q[1].ttft() == doctest::Approx(t2 - 0.005).epsilon(1e-12));
  CHECK(q[2].ttft() == doctest::Approx(t5 - 0.05).epsilon(1e-12));
  CHECK(q[0].tpot() == doctest::Approx((t4 - t2) / 2).epsilon(1e-12));
  CHECK(q[1].tpot() == doctest::Approx(t3 - t2).epsilon(1e-12));
  CHECK(q[2].tpot() == doctest::Approx(t6 - t5).epsilon(1e-12));
  CHECK(q[0].e2e() == doctest::Approx(t4).epsilon(1e-12));
  CHECK(q[1].queue() == doctest::Approx(t1 - 0.005).epsilon(1e-12));  // waited for A's first chunk
  CHECK(q[0].queue() == 0);
  CHECK(r->makespan == doctest::Approx(t6).epsilon(1e-12));
  // TTFTs sorted: C 10.08 ms, B 15.24 ms, A 20.24 ms. P50 = B's; P90 at
  // rank 0.9 x 2 = 1.8: B + 0.8 (A - B); P99 at 1.98.
  CHECK(r->ttft.p50 == doctest::Approx(t2 - 0.005).epsilon(1e-12));
  CHECK(r->ttft.p90 == doctest::Approx((t2 - 0.005) + 0.8 * 0.005).epsilon(1e-9));
  CHECK(r->ttft.p99 == doctest::Approx((t2 - 0.005) + 0.98 * 0.005).epsilon(1e-9));
  CHECK(r->output_tokens == 7);
  CHECK(r->preemptions == 0);
}

TEST_CASE("serve: prefill first runs a prompt as a batch of its own, by hand") {
  // A: t=0, 8 + 4 tokens; B: t=15 ms, 8 + 2. Budget 16.
  const std::vector<Request> reqs = {{0.0, 8, 4}, {0.015, 8, 2}};
  SchedulerParams p = small(16, 1000);
  p.policy = SchedulerParams::Policy::kPrefillFirst;
  Result<WorkloadResult> r = simulate_workload(reqs, linear_cost(), p);
  REQUIRE(r.ok());
  // it1: A's prompt (8):          t1 = c(8)          A token 1
  // it2: B not yet here; A:       t2 = t1 + c(1)     A token 2
  // it3: B's prompt alone (8):    t3 = t2 + c(8)     B token 1 (A waits)
  // it4: A, B decode:             t4 = t3 + c(2)     A token 3, B done
  // it5: A:                       t5 = t4 + c(1)     A done
  const double t1 = cost(8), t2 = t1 + cost(1), t3 = t2 + cost(8), t4 = t3 + cost(2), t5 = t4 + cost(1);
  const auto& q = r->requests;
  CHECK(r->iterations == 5);
  CHECK(q[0].ttft() == doctest::Approx(t1).epsilon(1e-12));
  CHECK(q[0].e2e() == doctest::Approx(t5).epsilon(1e-12));
  CHECK(q[1].ttft() == doctest::Approx(t3 - 0.015).epsilon(1e-12));
  CHECK(q[1].e2e() == doctest::Approx(t4 - 0.015).epsilon(1e-12));
  // A's gaps: c(1), c(8) + c(2) (B's prefill between), c(1); B's: c(2).
  // Sorted: c(1), c(1), c(2), c(8) + c(2); the median between the middle two.
  CHECK(r->itl.p50 == doctest::Approx((cost(1) + cost(2)) / 2).epsilon(1e-12));
  // vLLM's policy joins B's prompt to A's decode instead: it3 = c(9).
  p.policy = SchedulerParams::Policy::kVllm;
  Result<WorkloadResult> v = simulate_workload(reqs, linear_cost(), p);
  REQUIRE(v.ok());
  CHECK(v->requests[1].ttft() == doctest::Approx(t2 + cost(9) - 0.015).epsilon(1e-12));
}

TEST_CASE("serve: prefill first without chunked prefill admits whole prompts only, by hand") {
  // A and B both at t=0, 10 + 2 tokens each. Budget 16.
  const std::vector<Request> reqs = {{0.0, 10, 2}, {0.0, 10, 2}};
  SchedulerParams p = small(16, 1000);
  p.policy = SchedulerParams::Policy::kPrefillFirst;
  // Chunked (SGLang): it1 = A's 10 + B's first 6 = c(16), A token 1;
  // it2 = B's last 4 (a prompt still running comes first) = c(4), B token 1;
  // it3 = A, B decode = c(2), both done.
  Result<WorkloadResult> c = simulate_workload(reqs, linear_cost(), p);
  REQUIRE(c.ok());
  CHECK(c->iterations == 3);
  CHECK(c->requests[0].ttft() == doctest::Approx(cost(16)).epsilon(1e-12));
  CHECK(c->requests[1].ttft() == doctest::Approx(cost(16) + cost(4)).epsilon(1e-12));
  CHECK(c->requests[1].e2e() == doctest::Approx(cost(16) + cost(4) + cost(2)).epsilon(1e-12));
  // Whole prompts (vLLM V0 without chunked prefill): B's 10 do not fit the
  // 6 left, so it1 = A's 10 alone = c(10); it2 = B's 10 (prefill first,
  // before A's decode) = c(10); it3 = A, B decode = c(2).
  p.chunked_prefill = false;
  Result<WorkloadResult> w = simulate_workload(reqs, linear_cost(), p);
  REQUIRE(w.ok());
  CHECK(w->iterations == 3);
  CHECK(w->requests[0].ttft() == doctest::Approx(cost(10)).epsilon(1e-12));
  CHECK(w->requests[1].ttft() == doctest::Approx(2 * cost(10)).epsilon(1e-12));
  CHECK(w->requests[1].queue() == doctest::Approx(cost(10)).epsilon(1e-12));
  CHECK(w->requests[0].e2e() == doctest::Approx(2 * cost(10) + cost(2)).epsilon(1e-12));
  // A sequence longer than the budget could never be prefilled whole: an
  // error naming the budget (vLLM V0 requires max_num_batched_tokens >=
  // max_model_len).
  Result<WorkloadResult> e = simulate_workload({{0.0, 12, 5}}, linear_cost(), p);
  REQUIRE(!e.ok());
  CHECK(e.error().path == "serving.scheduler.max_num_batched_tokens");
}

TEST_CASE("serve: multi-step scheduling: arrivals wait for the run, tokens stream in bursts, by hand") {
  // The same two requests, prefill first, 3 decode steps per decision.
  const std::vector<Request> reqs = {{0.0, 8, 4}, {0.015, 8, 2}};
  SchedulerParams p = small(16, 1000);
  p.policy = SchedulerParams::Policy::kPrefillFirst;
  p.scheduler_steps = 3;
  Result<WorkloadResult> r = simulate_workload(reqs, linear_cost(), p);
  REQUIRE(r.ok());
  // it1: A's prompt:                       t1 = c(8)        A token 1 streamed
  // it2-4: a run of min(3, 4 - 1) = 3 decode steps of A; B arrives at 15 ms
  //        (during it2) and waits:         t4 = t1 + 3 c(1) A tokens 2-4 in one burst, done
  // it5: B's prompt:                       t5 = t4 + c(8)   B token 1
  // it6: B's last token, a run of min(3, 2 - 1) = 1 step: t6 = t5 + c(1)
  const double t1 = cost(8), t4 = t1 + 3 * cost(1), t5 = t4 + cost(8), t6 = t5 + cost(1);
  const auto& q = r->requests;
  CHECK(r->iterations == 6);
  CHECK(q[0].ttft() == doctest::Approx(t1).epsilon(1e-12));
  CHECK(q[0].e2e() == doctest::Approx(t4).epsilon(1e-12));
  CHECK(q[0].tpot() == doctest::Approx(cost(1)).epsilon(1e-12));  // (t4 - t1) / 3
  CHECK(q[1].ttft() == doctest::Approx(t5 - 0.015).epsilon(1e-12));
  CHECK(q[1].queue() == doctest::Approx(t4 - 0.015).epsilon(1e-12));
  CHECK(q[1].e2e() == doctest::Approx(t6 - 0.015).epsilon(1e-12));
  // ITL: one gap per burst: A's 3 c(1), B's c(1); median their mean.
  CHECK(r->itl.p50 == doctest::Approx(2 * cost(1)).epsilon(1e-12));
  CHECK(r->output_tokens == 6);
}

TEST_CASE("serve: preemption by recompute when the paged cache is full, by hand") {
  // Two 8 + 8 requests at t=0, 4-token pages, 6 pages (24 slots). Both
  // prefill (16 tokens, 2 pages each), decode to 12 cached tokens (3 pages
  // each); at the 13th token X needs a 4th page: Y (admitted last) is
  // preempted, its 3 pages freed. X decodes alone to its 8th token (Y's
  // 13-token recompute needs 4 pages, 2 free), finishes, then Y recomputes
  // its prompt and 5 tokens in one 13-token iteration and decodes twice.
  const std::vector<Request> reqs = {{0, 8, 8}, {0, 8, 8}};
  Result<WorkloadResult> r = simulate_workload(reqs, linear_cost(), small(16, 6));
  REQUIRE(r.ok());
  CHECK(r->iterations == 11);
  CHECK(r->preemptions == 1);
  CHECK(r->requests[1].preemptions == 1);
  CHECK(r->requests[0].preemptions == 0);
  // Tokens per iteration: 16, 2, 2, 2, 2, 1 (X; Y preempted), 1, 1 (X done), 13, 1, 1.
  const double x_done = 8 * 0.010 + 1e-5 * (16 + 2 + 2 + 2 + 2 + 1 + 1 + 1);
  const double y_done = x_done + 3 * 0.010 + 1e-5 * (13 + 1 + 1);
  CHECK(r->requests[0].finish == doctest::Approx(x_done).epsilon(1e-12));
  CHECK(r->requests[1].finish == doctest::Approx(y_done).epsilon(1e-12));
  CHECK(r->requests[1].ttft() == doctest::Approx(cost(16)).epsilon(1e-12));  // its first token stands
}

TEST_CASE("serve: SGLang's admission holds a prompt back for the running outputs, by hand") {
  // Three 8 + 8 requests at t=0, 4-token pages, 10 pages (40 slots), budget
  // 32, prefill first. it1: A is admitted (40 free; it takes 8 + 8 = 16),
  // B too (8 + 8 = 16 < 24 left; it takes 16), C not (16 < 8 fails). Each
  // later step the reserve is the free slots less A's and B's outputs left
  // x the ratio (0.7, then 0.001 less per decode step): after it1 24 - 2 x
  // 7 x 0.7 = 14.2, after it6 (2 pages free) 8 - 2 x 2 x 0.695 = 5.2;
  // never 16 or more until A and B finish at it8 (7 decode steps), so C
  // prefills alone at it9 and decodes 7 steps. Greedy admission takes C at
  // it1 (24 tokens, 6 pages) and later runs out of pages.
  SchedulerParams p = sglang(32, 10);
  Result<WorkloadResult> r = simulate_workload(kThreeEights, linear_cost(), p);
  REQUIRE(r.ok());
  check_third_waits(*r);
  p.admission = SchedulerParams::Admission::kGreedy;
  Result<WorkloadResult> g = simulate_workload(kThreeEights, linear_cost(), p);
  REQUIRE(g.ok());
  CHECK(g->requests[2].ttft() == doctest::Approx(cost(24)).epsilon(1e-12));
  CHECK(g->preemptions >= 1);
}

TEST_CASE("serve: SGLang's retraction when a decode step is short of pages, by hand") {
  // Two 4 + 12 requests at t=0, 4-token pages, 7 pages (28 slots), budget
  // 16, prefill first, SGLang's admission. it1: A (28 free, takes 4 + 12).
  // B waits (16 < 12 fails). it2: 6 pages free, 24 - 11 x 0.7 = 16.3 > 16:
  // B prefills alone. it3-it10: A and B decode (2 pages each from their
  // 5th token, 3 from the 9th: 1 page free). it11: both need a 4th page, 1
  // is free: B (the same outputs as A, the same prompt: the later one)
  // is retracted to the queue (its 3 pages freed: 4 free, 4 x 4 = 16 slots
  // >= 20 x 1 request left), the ratio becomes (9 + 20) / 12 -> 1; A
  // decodes. it12, it13: B's 13-token recompute needs 13 + 12 < 12 - 2 x
  // 1.0 = 10: no; A decodes to its 12th token. it14: B recomputes prompt
  // and 9 outputs (13 tokens) alone, then decodes twice.
  const std::vector<Request> reqs = {{0, 4, 12}, {0, 4, 12}};
  SchedulerParams p = sglang(16, 7);
  Result<WorkloadResult> r = simulate_workload(reqs, linear_cost(), p);
  REQUIRE(r.ok());
  CHECK(r->iterations == 16);
  CHECK(r->preemptions == 1);
  CHECK(r->requests[1].preemptions == 1);
  CHECK(r->requests[0].preemptions == 0);
  const double a_done = 2 * cost(4) + 8 * cost(2) + 3 * cost(1);
  CHECK(r->requests[0].finish == doctest::Approx(a_done).epsilon(1e-12));
  CHECK(r->requests[1].ttft() == doctest::Approx(2 * cost(4)).epsilon(1e-12));  // its first token stands
  CHECK(r->requests[1].finish == doctest::Approx(a_done + cost(13) + 2 * cost(1)).epsilon(1e-12));
}

TEST_CASE("serve: TensorRT-LLM's guaranteed admission takes a whole sequence's pages, by hand") {
  // Three 8 + 8 requests at t=0, 4-token pages, 10 pages, budget 32, vLLM's
  // mixed batching. Each request is admitted with the pages of its 16
  // tokens (4): A and B at it1 (2 pages left), C not (4 > 2). A and B
  // prefill (16 tokens), decode 7 steps needing no page, finish at it8 and
  // free 8; C prefills alone at it9 and decodes 7 steps. Nothing is ever
  // preempted; greedy admission, the same batching, takes C at it1.
  SchedulerParams p = small(32, 10);
  p.admission = SchedulerParams::Admission::kGuaranteed;
  Result<WorkloadResult> r = simulate_workload(kThreeEights, linear_cost(), p);
  REQUIRE(r.ok());
  check_third_waits(*r);
  // The cache in use: 8 of 10 pages from it1 to it8 (A's and B's whole
  // sequences), then C's 4: the maximum is 0.8.
  CHECK(r->kv_utilization_max == doctest::Approx(0.8).epsilon(1e-12));
  p.admission = SchedulerParams::Admission::kGreedy;
  Result<WorkloadResult> g = simulate_workload(kThreeEights, linear_cost(), p);
  REQUIRE(g.ok());
  CHECK(g->requests[2].ttft() == doctest::Approx(cost(24)).epsilon(1e-12));
}

TEST_CASE("serve: a request larger than a rank's cache is an error naming the workload") {
  Result<WorkloadResult> r = simulate_workload({{0, 30, 10}}, linear_cost(), small(16, 6));
  REQUIRE(!r.ok());
  CHECK(r.error().path == "serving.workload");
  CHECK(r.error().message.find("needs 10 KV pages but a rank holds 6") != std::string::npos);
}

TEST_CASE("serve: the token budget and max_num_seqs cap an iteration") {
  // Five 4 + 1 requests at t=0, budget 16, at most 4 running: the first
  // iteration prefills four (16 tokens), the fifth waits for the next.
  std::vector<Request> reqs(5, Request{0, 4, 1});
  Result<WorkloadResult> r = simulate_workload(reqs, linear_cost(), small(16, 100));
  REQUIRE(r.ok());
  CHECK(r->iterations == 2);
  for (int i = 0; i < 4; ++i) CHECK(r->requests[i].ttft() == doctest::Approx(cost(16)).epsilon(1e-12));
  CHECK(r->requests[4].ttft() == doctest::Approx(cost(16) + cost(4)).epsilon(1e-12));
}

TEST_CASE("serve: dp ranks in lockstep wait for the slowest; round robin over ranks") {
  // Two ranks, requests alternate: rank 0 gets a 16-token prompt, rank 1 a
  // 4-token one. In lockstep the iteration is the slower rank's; apart,
  // each rank its own.
  const std::vector<Request> reqs = {{0, 16, 1}, {0, 4, 1}};
  SchedulerParams p = small(16, 100);
  p.dp = 2;
  p.lockstep = true;
  Result<WorkloadResult> lock = simulate_workload(reqs, linear_cost(), p);
  REQUIRE(lock.ok());
  CHECK(lock->requests[1].ttft() == doctest::Approx(cost(16)).epsilon(1e-12));
  p.lockstep = false;
  Result<WorkloadResult> apart = simulate_workload(reqs, linear_cost(), p);
  REQUIRE(apart.ok());
  CHECK(apart->requests[1].ttft() == doctest::Approx(cost(4)).epsilon(1e-12));
}

TEST_CASE("serve: percentiles interpolate between order statistics") {
  Percentiles p = percentiles({4, 1, 3, 2});
  CHECK(p.mean == 2.5);
  CHECK(p.p50 == 2.5);                                     // rank 1.5
  CHECK(p.p90 == doctest::Approx(3.7).epsilon(1e-12));     // rank 2.7
  CHECK(p.p99 == doctest::Approx(3.97).epsilon(1e-12));    // rank 2.97
}

TEST_CASE("serve: portable_log matches the logarithm to the last bits") {
  for (double x : {1e-300, 1e-9, 0.1, 0.5, 0.70710678, 1.0, 1.5, 2.0, 10.0, 12345.678, 1e300})
    CHECK(portable_log(x) == doctest::Approx(std::log(x)).epsilon(1e-15));
  CHECK(portable_log(1.0) == 0.0);
}

TEST_CASE("serve: seeded samplers: the same stream twice, the moments they should have") {
  Rng a(7), b(7), c(8);
  for (int i = 0; i < 100; ++i) CHECK(a.next() == b.next());
  CHECK(Rng(7).next() != c.next());
  // Means over 200,000 draws: exponential 1 (sd of the mean 0.0022),
  // normal 0 and variance 1 (sd 0.0022 and 0.0032), uniform 1/2.
  Rng r(1);
  double se = 0, sn = 0, sn2 = 0, su = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    se += r.exponential();
    const double z = r.normal();
    sn += z;
    sn2 += z * z;
    su += r.uniform();
  }
  CHECK(se / n == doctest::Approx(1.0).epsilon(0.01));
  CHECK(std::abs(sn / n) < 0.01);
  CHECK(sn2 / n == doctest::Approx(1.0).epsilon(0.015));
  CHECK(su / n == doctest::Approx(0.5).epsilon(0.01));
}

TEST_CASE("serve: a Poisson workload: its count, order and the rate scale") {
  ServingConfig sv;
  sv.prompt_tokens = 2048;
  sv.output_tokens = 256;
  sv.workload.present = true;
  sv.workload.rate = 10;
  sv.workload.duration_seconds = 600;
  sv.workload.seed = 1;
  Result<std::vector<Request>> r = make_requests(sv, 8192);
  REQUIRE(r.ok());
  // 6,000 expected, sd sqrt(6000) = 77: within 4 sd.
  CHECK(r->size() > 6000 - 310);
  CHECK(r->size() < 6000 + 310);
  for (size_t i = 1; i < r->size(); ++i) CHECK((*r)[i].arrival >= (*r)[i - 1].arrival);
  CHECK((*r)[0].prompt == 2048);
  CHECK(r->back().arrival < 600);
  // Twice the rate: the same draws, half the times (over the first requests).
  sv.workload.requests = 100;
  Result<std::vector<Request>> one = make_requests(sv, 8192), two = make_requests(sv, 8192, 2.0);
  REQUIRE(one.ok());
  REQUIRE(two.ok());
  for (size_t i = 0; i < 100; ++i) CHECK((*two)[i].arrival == doctest::Approx((*one)[i].arrival / 2).epsilon(1e-12));
  // Uniform lengths stay in their range.
  sv.workload.prompt = {LengthDist::Kind::kUniform, 100, 200};
  sv.workload.output = {LengthDist::Kind::kNormal, 50, 400};
  Result<std::vector<Request>> u = make_requests(sv, 8192);
  REQUIRE(u.ok());
  for (const Request& q : *u) {
    CHECK(q.prompt >= 100);
    CHECK(q.prompt <= 200);
    CHECK(q.output >= 1);
  }
}

TEST_CASE("serve: prefix caching skips the cached pages of a prompt, by hand") {
  // 20 + 2 tokens, 4-token pages, half the prompt found cached: floor(0.5 x
  // 20 / 4) = 2 pages = 8 tokens; the first iteration computes the other 12.
  SchedulerParams p = small(16, 100);
  p.prefix_hit_rate = 0.5;
  Result<WorkloadResult> r = simulate_workload({{0, 20, 2}}, linear_cost(), p);
  REQUIRE(r.ok());
  CHECK(r->iterations == 2);
  CHECK(r->requests[0].ttft() == doctest::Approx(cost(12)).epsilon(1e-12));
  CHECK(r->requests[0].e2e() == doctest::Approx(cost(12) + cost(1)).epsilon(1e-12));
}

TEST_CASE("serve: speculative decoding, every draft accepted or none, by hand") {
  // 4 + 5 tokens, 2 draft tokens per step. Accepting all: the prefill gives
  // token 1; a step verifies 1 + 2 positions and yields 3 (tokens 2-4); the
  // last step drafts none (one token left): 3 iterations of 4, 3, 1 tokens.
  SchedulerParams p = small(16, 100);
  p.speculative_tokens = 2;
  p.acceptance_rate = 1.0;
  Result<WorkloadResult> all = simulate_workload({{0, 4, 5}}, linear_cost(), p);
  REQUIRE(all.ok());
  CHECK(all->iterations == 3);
  CHECK(all->output_tokens == 5);
  CHECK(all->requests[0].e2e() == doctest::Approx(cost(4) + cost(3) + cost(1)).epsilon(1e-12));
  // Accepting none: each step yields one token; drafts shrink to what is
  // left: steps of 3, 3, 2, 1 positions after the prefill.
  p.acceptance_rate = 0.0;
  Result<WorkloadResult> none = simulate_workload({{0, 4, 5}}, linear_cost(), p);
  REQUIRE(none.ok());
  CHECK(none->iterations == 5);
  CHECK(none->requests[0].e2e() ==
        doctest::Approx(cost(4) + cost(3) + cost(3) + cost(2) + cost(1)).epsilon(1e-12));
}

TEST_CASE("serve: fixed host costs per iteration and per sampled token") {
  // 10 ms + 10 us per token, plus 1 ms per iteration and 0.1 ms per sampled
  // row: a lone 8 + 2 request: (c(8) + 1 + 0.1 ms) then (c(1) + 1 + 0.1 ms).
  CostModel m = linear_cost();
  m.step_overhead = 0.001;
  m.per_sampled_overhead = 0.0001;
  Result<WorkloadResult> r = simulate_workload({{0, 8, 2}}, m, small(16, 100));
  REQUIRE(r.ok());
  CHECK(r->requests[0].ttft() == doctest::Approx(cost(8) + 0.0011).epsilon(1e-12));
  CHECK(r->requests[0].tpot() == doctest::Approx(cost(1) + 0.0011).epsilon(1e-12));
}

TEST_CASE("serve: an eager prefill lasts at least its launches; decode batches are graphed, by hand") {
  // The prefill-first example above with a 25 ms launch floor on iterations
  // holding prompt tokens (c(8) = 10.08 ms is under it; c(1), c(2) are
  // decode-only batches and keep their cost). A: t=0, 8 + 4; B: t=15 ms, 8 + 2.
  // it1: A's prompt:          t1 = 25 ms            A token 1 (B arrived meanwhile)
  // it2: B's prompt alone:    t2 = t1 + 25 ms       B token 1
  // it3: A, B decode:         t3 = t2 + c(2)        A token 2, B done
  // it4, it5: A decodes:      t5 = t3 + 2 c(1)      A done
  CostModel m = linear_cost();
  m.eager_floor = 0.025;
  SchedulerParams p = small(16, 1000);
  p.policy = SchedulerParams::Policy::kPrefillFirst;
  Result<WorkloadResult> r = simulate_workload({{0.0, 8, 4}, {0.015, 8, 2}}, m, p);
  REQUIRE(r.ok());
  const double t1 = 0.025, t2 = t1 + 0.025, t3 = t2 + cost(2), t5 = t3 + 2 * cost(1);
  CHECK(r->iterations == 5);
  CHECK(r->requests[0].ttft() == doctest::Approx(t1).epsilon(1e-12));
  CHECK(r->requests[0].e2e() == doctest::Approx(t5).epsilon(1e-12));
  CHECK(r->requests[1].ttft() == doctest::Approx(t2 - 0.015).epsilon(1e-12));
  CHECK(r->requests[1].e2e() == doctest::Approx(t3 - 0.015).epsilon(1e-12));
  // A floor below the GPU time changes nothing: a 20-token prompt, c(20) = 10.2 ms.
  m.eager_floor = 0.005;
  Result<WorkloadResult> s = simulate_workload({{0.0, 20, 2}}, m, small(32, 1000));
  REQUIRE(s.ok());
  CHECK(s->requests[0].ttft() == doctest::Approx(cost(20)).epsilon(1e-12));
}

TEST_CASE("serve: per-request time outside the iterations shifts TTFT and E2E only, by hand") {
  // The 3-request example with 4 ms per request: every first token and
  // finish 4 ms later, TPOT, ITL and the iterations unchanged.
  SchedulerParams p = small(16, 1000);
  p.request_overhead = 0.004;
  const std::vector<Request> reqs = {{0.0, 20, 3}, {0.005, 4, 2}, {0.050, 8, 2}};
  Result<WorkloadResult> r = simulate_workload(reqs, linear_cost(), p);
  REQUIRE(r.ok());
  const double t1 = cost(16), t2 = t1 + cost(8), t3 = t2 + cost(2), t4 = t3 + cost(1);
  const double t5 = 0.05 + cost(8), t6 = t5 + cost(1);
  const auto& q = r->requests;
  CHECK(r->iterations == 6);
  CHECK(q[0].ttft() == doctest::Approx(t2 + 0.004).epsilon(1e-12));
  CHECK(q[1].ttft() == doctest::Approx(t2 - 0.005 + 0.004).epsilon(1e-12));
  CHECK(q[2].ttft() == doctest::Approx(t5 - 0.05 + 0.004).epsilon(1e-12));
  CHECK(q[0].e2e() == doctest::Approx(t4 + 0.004).epsilon(1e-12));
  CHECK(q[0].tpot() == doctest::Approx((t4 - t2) / 2).epsilon(1e-12));
  CHECK(q[1].queue() == doctest::Approx(t1 - 0.005).epsilon(1e-12));
  // gaps: A c(2), c(1); B c(2); C c(1): the median between c(1) and c(2)
  CHECK(r->itl.p50 == doctest::Approx((cost(1) + cost(2)) / 2).epsilon(1e-12));
  CHECK(r->makespan == doctest::Approx(t6 + 0.004).epsilon(1e-12));
}
