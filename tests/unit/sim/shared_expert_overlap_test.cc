// training.moe_shared_expert_overlap (docs/parallelism.md, "Shared-expert
// overlap"): the key and its errors; the lowered structure (the shared
// experts' chain and where it waits for the compute stream, as Megatron-Core's
// token dispatcher launches it); and the two compute streams of `simulate`
// on a hand-built program whose timeline is worked out by hand.
#include "../test_jobs.h"

#include "api/simulate.h"
#include "sim/network.h"
#include "sim/simulate.h"

using namespace sc;
using namespace sc::testing;

namespace {


// DeepSeek-style MoE: 8 experts top-2, one shared expert, SwiGLU without
// biases or dropout, 2 layers (the first dense), ep 2 over dp 2, with tp 2
// and sequence parallelism when asked.
std::string moe_job(const std::string& training_extra, const std::string& parallel_extra = "", int64_t shared = 1) {
  return R"({"model": {"num_layers": 2, "hidden": 256, "num_heads": 4, "vocab": 1024, "ffn_hidden": 512,
                       "mlp": "swiglu", "linear_bias": false, "dropout": false,
                       "num_experts": 8, "experts_per_token": 2, "moe_ffn_hidden": 128, "first_dense_layers": 1,
                       "shared_experts": )" +
         std::to_string(shared) + R"(},
            "training": {"seq_len": 256, "global_batch_size": 4)" +
         training_extra + R"(},
            "parallel": {"dp": 2, "ep": 2)" +
         parallel_extra + "}}";
}

struct Names {
  std::map<std::string, const TraceNode*> by;
  explicit Names(const RankTrace& t) {
    for (const auto& n : t.nodes) by[n.name] = &n;
  }
  const TraceNode* operator()(const std::string& name) const {
    auto it = by.find(name);
    REQUIRE_MESSAGE(it != by.end(), name);
    return it->second;
  }
};

bool depends(const TraceNode* a, const TraceNode* b) {
  return std::find(a->deps.begin(), a->deps.end(), b->id) != a->deps.end();
}

}  // namespace

TEST_CASE("moe_shared_expert_overlap: parses, default false, canonical only when set, errors name the field") {
  const Job d = job_of(moe_job(""));
  CHECK(d.training.moe_shared_expert_overlap == false);
  CHECK(!has(job_to_canonical_json(d), "moe_shared_expert_overlap"));
  const Job j = job_of(moe_job(R"(, "moe_shared_expert_overlap": true)"));
  CHECK(j.training.moe_shared_expert_overlap);
  const std::string c = job_to_canonical_json(j);
  CHECK(has(c, "\"moe_shared_expert_overlap\": true"));
  CHECK(job_to_canonical_json(job_of(c)) == c);
  for (const char* bad : {R"("yes")", "1"}) {
    Result<Job> r = parse_job(moe_job(std::string(R"(, "moe_shared_expert_overlap": )") + bad));
    REQUIRE(!r.ok());
    CHECK(r.error().path == "training.moe_shared_expert_overlap");
  }
  // Megatron-Core: alltoall or flex (deepep) only, when there are shared experts.
  Result<Job> ag = parse_job(moe_job(R"(, "moe_shared_expert_overlap": true)", R"(, "moe_dispatcher": "allgather")"));
  REQUIRE(!ag.ok());
  CHECK(ag.error().path == "training.moe_shared_expert_overlap");
  CHECK(has(ag.error().message, "allgather"));
  CHECK(parse_job(moe_job(R"(, "moe_shared_expert_overlap": true)", R"(, "moe_dispatcher": "deepep")")).ok());
  // Without shared experts it is accepted and changes nothing (Megatron:
  // "only effective when moe-shared-expert-intermediate-size is set").
  const std::string none = moe_job(R"(, "moe_shared_expert_overlap": true)", R"(, "moe_dispatcher": "allgather")", 0);
  REQUIRE(parse_job(none).ok());
  Generator a = make(job_of(none)), b = make(job_of(moe_job("", R"(, "moe_dispatcher": "allgather")", 0)));
  const RankTrace ta = a.rank_trace(0).value(), tb = b.rank_trace(0).value();
  REQUIRE(ta.nodes.size() == tb.nodes.size());
  for (size_t i = 0; i < ta.nodes.size(); ++i) {
    CHECK(ta.nodes[i].name == tb.nodes[i].name);
    CHECK(ta.nodes[i].deps == tb.nodes[i].deps);
  }
}

TEST_CASE("moe_shared_expert_overlap: the shared experts' chain and where it waits, forward and backward") {
  for (bool tp : {false, true}) {
    CAPTURE(tp);
    const std::string par = tp ? R"(, "tp": 2, "sequence_parallel": true)" : "";
    Generator off = make(job_of(moe_job("", par))), on = make(job_of(moe_job(R"(, "moe_shared_expert_overlap": true)", par)));
    const RankTrace t0 = off.rank_trace(0).value(), t = on.rank_trace(0).value();
    // The same nodes (names, sizes, durations), in another order.
    REQUIRE(t.nodes.size() == t0.nodes.size());
    std::multiset<std::string> n0, n1;
    for (const auto& x : t0.nodes) n0.insert(x.name + "/" + std::to_string(x.duration_micros) + "/" + std::to_string(x.comm_size));
    for (const auto& x : t.nodes) n1.insert(x.name + "/" + std::to_string(x.duration_micros) + "/" + std::to_string(x.comm_size));
    CHECK(n0 == n1);
    Names N(t), N0(t0);
    const std::string f = "mb0.fwd.L1.", b = "mb0.bwd.L1.";
    // Without the option the shared MLP follows the combine on the compute chain.
    CHECK(depends(N0(f + "moe.shared.fc1"), N0(f + "moe.combine")));
    // Forward: fc1 right after the permutation, waiting for it (not for the
    // all-to-all); the routed experts do not wait for the shared fc1.
    const TraceNode* perm = N(f + "moe.permute");
    const TraceNode* a2a = N(f + "moe.dispatch.all_to_all(ep)");
    const TraceNode* fc1 = N(f + "moe.shared.fc1");
    const TraceNode* first = tp ? N(f + "ln2.all_gather(tp)") : fc1;
    CHECK(depends(first, perm));
    CHECK(first->id > perm->id);
    CHECK(fc1->id < N(f + "moe.experts.fc1")->id);  // issued before the routed experts
    CHECK(!depends(fc1, a2a));
    CHECK(!depends(N(f + "moe.experts.fc1"), fc1));
    if (tp) CHECK(depends(fc1, first));
    // fc2 waits for the routed experts (Megatron waits before the combine
    // all-to-all), not for the combine.
    const TraceNode* fc2 = N(f + "moe.shared.fc2");
    CHECK(depends(fc2, N(f + "moe.experts.fc2")));
    CHECK(!depends(fc2, N(f + "moe.experts.fc2.all_to_all(ep)")));
    CHECK(fc2->id < N(f + "moe.combine")->id);
    // The sum waits for both.
    const TraceNode* add = N(f + "moe.add_shared");
    CHECK(depends(add, N(f + "moe.combine")));
    CHECK(depends(add, tp ? N(f + "moe.shared.fc2.reduce_scatter(tp)") : fc2));
    // Backward: fc2's gradients do not wait for the combine's backward;
    // fc1's wait for the routed fc1's (dgrad and wgrad done) and run beside
    // the dispatch's all-to-all, before the permutation's backward.
    CHECK(!depends(N(b + "moe.shared.fc2.dgrad"), N(b + "moe.combine.bwd")));
    const TraceNode* act = N(b + "moe.shared.swiglu.bwd");
    const TraceNode* routed_w = N(b + "moe.experts.fc1.wgrad");
    CHECK(depends(act, routed_w));
    CHECK(act->id > N(b + "moe.dispatch.grad.all_to_all(ep)")->id);
    CHECK(act->id < N(b + "moe.permute.bwd")->id);
    CHECK(!depends(N(b + "moe.permute.bwd"), N(b + "moe.shared.fc1.dgrad")));
    // The layer input's gradient sums both paths.
    const TraceNode* acc = N(b + "ln2.grad_accumulate");
    CHECK(depends(acc, tp ? N(b + "ln2.grad.reduce_scatter(tp)") : N(b + "moe.shared.fc1.dgrad")));
  }
}

TEST_CASE("moe_shared_expert_overlap: two compute streams, timed by hand") {
  // Two ranks (ep 2, one NVLink domain of 100 B/µs, 1 µs per step). One
  // MoE layer as Megatron-Core issues it with the overlap:
  //   0 A     compute 10 µs
  //   1 a2a   dispatch all-to-all of C = 5800 B: 1 + (2-1)/2 x 5800 / 100 = 30 µs (compute stream)
  //   2 S1    shared fc1 40 µs, shared stream, waits for A
  //   3 R     routed experts 40 µs, waits for the all-to-all
  //   4 S2    shared fc2 20 µs, waits for S1 and R
  //   5 comb  combine all-to-all, 30 µs, waits for R
  //   6 ADD   compute 10 µs, waits for comb and S2
  RoleProgram p;
  p.axes = {"", "ep"};
  const auto node = [&](TraceNodeKind k, uint64_t dur, std::vector<uint64_t> deps, uint8_t axis, uint8_t side) {
    add_hand_node(p, k, dur, std::move(deps), axis, side, 5800);  // all-to-alls of C = 5800 B
  };
  node(TraceNodeKind::kCompute, 10, {}, 0, 0);
  node(TraceNodeKind::kCollective, 0, {0}, 1, 0);
  node(TraceNodeKind::kCompute, 40, {0}, 0, 2);
  node(TraceNodeKind::kCompute, 40, {0, 1}, 0, 0);
  node(TraceNodeKind::kCompute, 20, {2, 3}, 0, 2);
  node(TraceNodeKind::kCollective, 0, {1, 3}, 1, 0);
  node(TraceNodeKind::kCompute, 10, {4, 5}, 0, 0);
  HandSim h(p);
  REQUIRE(h.max_key == h.layout.group_id(1, "ep"));

  SUBCASE("no SM share") {
    h.net.comm_sm_share_domain = h.net.comm_sm_share_scale_out = 0;
    // A 0-10; the all-to-all 10-40 and S1 from 10 alone; at 40 R starts
    // and both compute streams run at half rate: S1's last 10 µs take 20
    // (ends 60), R does 10 by then and its last 30 alone (ends 90); S2 and
    // the combine 90-110 / 90-120; ADD 120-130.
    const SimResult r = h.run();
    CHECK(r.step == doctest::Approx(130));
    // Busy: either stream computes: 0-110 and 120-130; the combine alone 110-120.
    CHECK(r.stages[0].busy == doctest::Approx(120));
    CHECK(r.stages[0].exposed[2] == doctest::Approx(10));
    // On one stream (side 0): every node in sequence, 10+30+40+40+20+30+10.
    for (auto& s : p.side_stream) s = 0;
    CHECK(h.run().step == doctest::Approx(180));
  }
  SUBCASE("SM share 0.2: the all-to-all slows the shared kernel beside it") {
    h.net.comm_sm_share_domain = 0.2;
    h.net.comm_sm_share_scale_out = 0;
    // 10-40: S1 at 0.8 (24 done, 16 left); 40: R and S1 at 0.5 each: S1
    // ends 72, R has 24 left, alone: ends 96; the combine 96-126 and S2 at
    // 0.8 beside it: 20 / 0.8 = 25, ends 121; ADD 126-136.
    const SimResult r = h.run();
    CHECK(r.step == doctest::Approx(136));
    CHECK(r.stages[0].busy == doctest::Approx(131));
    CHECK(r.stages[0].exposed[2] == doctest::Approx(5));
    // ASTRA-sim's streams: one compute stream (S1 and S2 in id order on
    // it), every collective beside it: A 0-10, a2a 10-40 beside S1 10-50;
    // R 50-90; S2 90-110 beside the combine 90-120; ADD 120-130.
    h.o.streams = SimStreams::kAstra;
    CHECK(h.run().step == doctest::Approx(130));
  }
}

TEST_CASE("moe_shared_expert_overlap: simulate hides expert all-to-all time, symmetric and exhaustive agree") {
  const std::string par = R"(, "tp": 2, "sequence_parallel": true)";
  Generator off = make(job_of(moe_job("", par))), on = make(job_of(moe_job(R"(, "moe_shared_expert_overlap": true)", par)));
  SimulateOptions o;
  const SimulateReport a = simulate(off, o).value(), b = simulate(on, o).value();
  // The same work, less of the all-to-all exposed.
  CHECK(b.sim.stages[0].exposed[2] < a.sim.stages[0].exposed[2]);
  CHECK(b.sim.step < a.sim.step);
  // Busy + bubble + exposed still make up the step.
  double sum = b.sim.stages[0].busy + b.sim.stages[0].bubble;
  for (double e : b.sim.stages[0].exposed) sum += e;
  CHECK(sum == doctest::Approx(b.sim.stages[0].end).epsilon(1e-9));
  o.exhaustive = true;
  CHECK(simulate(on, o).value().sim.step == b.sim.step);
}

TEST_CASE("moe_shared_expert_overlap: the timeline's compute covers the busy time, its exposed pieces the exposed time") {
  // With two compute streams a node of the shared experts' stream can
  // start inside the previous interval of the same kind; joining it used
  // to cut that interval short to the node's own end, so the compute
  // intervals covered less than busy and the split of the all-to-alls
  // marked hidden time exposed (audit, session 25).
  const std::string par = R"(, "tp": 2, "sequence_parallel": true)";
  Generator on = make(job_of(moe_job(R"(, "moe_shared_expert_overlap": true)", par)));
  SimulateOptions o;
  o.timeline = true;
  const SimulateReport r = simulate(on, o).value();
  for (const auto& st : r.sim.stages) {
    std::vector<std::pair<double, double>> comp;
    double exposed[kNumCommKinds] = {};
    for (const auto& iv : st.timeline) {
      if (iv.exposed == -1) comp.push_back({iv.start, iv.end});
      for (int k = 0; k < kNumCommKinds; ++k)
        if (iv.exposed == 1 && std::string(iv.kind) == kCommKinds[k]) exposed[k] += iv.end - iv.start;
    }
    std::sort(comp.begin(), comp.end());
    double covered = 0, from = -1, to = -1;
    for (const auto& [s, e] : comp) {
      if (s > to) {
        covered += to - from;
        from = s, to = e;
      } else {
        to = std::max(to, e);
      }
    }
    covered += to - from;
    CHECK(covered == doctest::Approx(st.busy).epsilon(1e-6));
    for (int k = 0; k < kNumCommKinds; ++k) CHECK(exposed[k] == doctest::Approx(st.exposed[k]).epsilon(1e-6));
  }
}
