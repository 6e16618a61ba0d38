// Megatron-LM's overlap options (docs/parallelism.md, "Communication
// overlap"): parsing and errors, the lowered structure (chunks and their
// dependencies), and simulated times derived by hand from the traces' own
// node durations and the network formulas.
#include "../test_jobs.h"

#include <regex>

#include "api/plan.h"
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

SimulateReport sim(const Generator& g, bool timeline = false) {
  SimulateOptions o;
  o.comm_sm_share_domain = o.comm_sm_share_scale_out = 0;  // no slowdown: times add up by hand
  o.timeline = timeline;
  auto r = simulate(g, o);
  if (!r.ok()) FAIL(r.error().to_string());
  return *r;
}

GroupShape shape_of(const NetworkModel& n, int64_t size) {
  GroupShapeBuilder b;
  for (int64_t r = 0; r < size; ++r) b.add(n, r);
  return b.finish(n);
}

// A tp2 job with sequence parallelism, 2 layers, on a fast NVLink (every
// transfer shorter than the GEMM chunk it hides under).
std::string tp_job(const std::string& extra, int64_t tp = 2) {
  return R"({"model":{"preset":"gpt3-1.7b","num_layers":2},"parallel":{"tp":)" + std::to_string(tp) +
         R"(,"sequence_parallel":true},
            "training":{"seq_len":2048,"global_batch_size":1)" + extra + R"(},
            "network":{"domain_bandwidth_gbs":2000}})";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("overlap options: parse, defaults, canonical form, errors name the field") {
  Job d = parse(R"({"model":{"preset":"gpt3-1.7b"}})");
  CHECK(d.training.tp_comm_overlap == false);
  // Megatron-LM's defaults: every overlap off (arguments.py's store_true flags).
  CHECK(d.training.overlap_grad_reduce == false);
  CHECK(d.training.overlap_param_gather == false);
  // Defaults stay out of the canonical form (jobs keep their hash).
  const std::string canon = job_to_canonical_json(d);
  CHECK(!contains(canon, "overlap"));
  Job j = parse(R"({"model":{"preset":"gpt3-1.7b"},"parallel":{"dp":2,"zero":1},
                   "training":{"tp_comm_overlap":true,"overlap_grad_reduce":true,"overlap_param_gather":true}})");
  CHECK(j.training.tp_comm_overlap);
  CHECK(j.training.overlap_param_gather);
  const std::string c2 = job_to_canonical_json(j);
  CHECK(contains(c2, "\"tp_comm_overlap\": true"));
  CHECK(contains(c2, "\"overlap_param_gather\": true"));
  Job back = parse(c2);  // the canonical form parses back to the same job
  CHECK(job_to_canonical_json(back) == c2);
  CHECK(contains(c2, "\"overlap_grad_reduce\": true"));
  CHECK(!contains(job_to_canonical_json(parse(R"({"model":{"preset":"gpt3-1.7b"},"training":{"overlap_grad_reduce":false}})")),
                  "overlap"));
  for (const char* key : {"tp_comm_overlap", "overlap_grad_reduce", "overlap_param_gather"}) {
    auto bad = parse_job(std::string(R"({"model":{"preset":"gpt3-1.7b"},"training":{")") + key + R"(":"yes"}})");
    REQUIRE(!bad.ok());
    CHECK(bad.error().path == std::string("training.") + key);
    auto num = parse_job(std::string(R"({"model":{"preset":"gpt3-1.7b"},"training":{")") + key + R"(":1}})");
    REQUIRE(!num.ok());
    CHECK(num.error().path == std::string("training.") + key);
  }
  auto both = parse_job(R"({"model":{"preset":"gpt3-1.7b"},"parallel":{"dp":2,"zero":1},
                           "training":{"overlap_grad_reduce":false,"overlap_param_gather":true}})");
  REQUIRE(!both.ok());
  CHECK(both.error().path == "training.overlap_param_gather");
  CHECK(contains(both.error().message, "overlap_grad_reduce"));
}

TEST_CASE("tp_comm_overlap: lowered chunks and their dependencies") {
  for (int64_t tp : {2, 4}) {
    CAPTURE(tp);
    auto g = make(parse(tp_job(R"(,"tp_comm_overlap":true)", tp)));
    const RankTrace t = g.rank_trace(0).value();
    const NodesByName nodes(t);
    const auto node = [&](const std::string& name) { return nodes.node(name); };
    const auto depends = NodesByName::depends;
    int sends = 0, recvs = 0, gemm_chunks = 0, rs_chunks = 0;
    for (const auto& n : t.nodes) {
      sends += n.kind == TraceNodeKind::kSend;
      recvs += n.kind == TraceNodeKind::kRecv;
      if (contains(n.name, ".chunk")) (n.kind == TraceNodeKind::kCompute ? gemm_chunks : rs_chunks)++;
    }
    // Per layer: 4 ring exchanges (qkv, fc1 forward; proj, fc2 dgrad) of
    // tp - 1 steps, tp GEMM chunks each; 2 pipelined GEMMs (proj, fc2
    // forward) of 4 chunks, each with its reduce-scatter chunk.
    CHECK(sends == 2 * 4 * (tp - 1));
    CHECK(recvs == sends);
    CHECK(gemm_chunks == 2 * (4 * tp + 2 * 4));
    CHECK(rs_chunks == 2 * 2 * 4);
    // The layer's GEMMs and collectives are gone as whole nodes; the output
    // layer's (not Transformer Engine's) stay.
    CHECK(nodes.count("mb0.fwd.L0.attn.qkv") == 0);
    CHECK(nodes.count("mb0.fwd.L0.ln1.all_gather(tp)") == 0);
    CHECK(nodes.count("mb0.fwd.L0.attn.proj.reduce_scatter(tp)") == 0);
    CHECK(nodes.count("mb0.fwd.final_norm.all_gather(tp)") == 1);
    CHECK(nodes.count("mb0.fwd.output.logits") == 1);
    // Ring exchange: chunk 0 needs no transfer; chunk j waits for receive j-1.
    const TraceNode* c0 = node("mb0.fwd.L0.attn.qkv.chunk0");
    for (const auto& n : t.nodes)
      if (n.kind == TraceNodeKind::kRecv) CHECK(!depends(c0, &n));
    for (int64_t j = 1; j < tp; ++j) {
      const TraceNode* c = node("mb0.fwd.L0.attn.qkv.chunk" + std::to_string(j));
      const TraceNode* r = node("mb0.fwd.L0.ln1.all_gather(tp).ub_recv" + std::to_string(j - 1));
      CHECK(depends(c, r));
      CHECK(r->comm_size == node("mb0.fwd.L0.ln1.all_gather(tp).ub_send" + std::to_string(j - 1))->comm_size);
    }
    // Each send carries one sequence shard: b * s/tp * h bf16 bytes.
    CHECK(node("mb0.fwd.L0.ln1.all_gather(tp).ub_send0")->comm_size == 1 * 2048 / tp * 2304 * 2);
    // Pipelined reduce-scatter: chunk j's reduce-scatter waits for GEMM chunk
    // j and carries a quarter of the b * s * h bf16 output.
    for (int j = 0; j < 4; ++j) {
      const TraceNode* c = node("mb0.fwd.L0.attn.proj.chunk" + std::to_string(j));
      const TraceNode* r = node("mb0.fwd.L0.attn.proj.reduce_scatter(tp).chunk" + std::to_string(j));
      CHECK(depends(r, c));
      CHECK(r->comm_size == 2048 * 2304 * 2 / 4);
    }
    // The bias add waits for the last reduce-scatter chunk.
    CHECK(depends(node("mb0.fwd.L0.attn.proj.bias_add"), node("mb0.fwd.L0.attn.proj.reduce_scatter(tp).chunk3")));
    // GEMM chunks keep the GEMM's FLOPs: their sum is the GEMM's without overlap.
    auto plain = make(parse(tp_job("", tp)));
    int64_t whole = 0, sum = 0;
    const RankTrace tp_plain = plain.rank_trace(0).value();
    for (const auto& n : tp_plain.nodes)
      if (n.name == "mb0.fwd.L0.attn.qkv") whole = n.num_ops;
    for (int64_t j = 0; j < tp; ++j) sum += node("mb0.fwd.L0.attn.qkv.chunk" + std::to_string(j))->num_ops;
    CHECK(whole > 0);
    CHECK(sum == whole);
    // Every rank runs to completion, sends meet receives, FLOPs add up, and
    // the Chakra validator accepts the traces.
    check_complete_balanced_and_summed(g, summary(g));
    CHECK(validate_generated(g).ok());
  }
}

// The backward collectives Transformer Engine's column-parallel modules
// launch asynchronously without userbuffers: the all-gather of the saved
// layer-norm output for the weight gradient and the reduce-scatter of the
// input gradient (the layer norms' side of qkv and fc1).
const std::regex te_async_bwd(R"(^mb\d+\.bwd\.L\d+\.ln\d\.(all_gather|grad\.reduce_scatter)\(tp\)$)");

TEST_CASE("tp_comm_overlap: exposed tp time drops by the hidden transfers, derived from the chunks") {
  // Without userbuffers the tp collectives run on the compute stream, all
  // exposed, except the column-parallel backward's all-gather and
  // reduce-scatter that TE launches asynchronously beside the dgrad and
  // wgrad GEMMs (hidden on this fast network: next test). With them the
  // collectives of the layers' GEMMs run beside them; each transfer is
  // shorter than the compute it hides under, so only the last
  // reduce-scatter chunk of each pipelined GEMM stays exposed (its consumer
  // waits for it). The drop is therefore sum(layer collectives without
  // userbuffers, less TE's asynchronous ones) - sum(last chunks with them).
  auto g0 = make(parse(tp_job("")));
  auto g1 = make(parse(tp_job(R"(,"tp_comm_overlap":true)")));
  auto r0 = sim(g0), r1 = sim(g1);
  const GroupShape pair = shape_of(r0.network, 2);
  const std::regex layer(R"(^mb\d+\.(fwd|bwd)\.L\d+\.)");
  double hidden = 0, last_chunks = 0;
  const RankTrace t0 = g0.rank_trace(0).value();
  for (const auto& n : t0.nodes)
    if (n.kind == TraceNodeKind::kCollective && std::regex_search(n.name, layer) &&
        !std::regex_search(n.name, te_async_bwd))
      hidden += collective_micros(r0.network, pair, n.coll, n.comm_size);
  const RankTrace t1 = g1.rank_trace(0).value();
  // The premise: every transfer beside a GEMM chunk is shorter than the
  // shortest chunk.
  double shortest_chunk = 1e30, longest_transfer = 0;
  for (const auto& n : t1.nodes) {
    if (n.kind == TraceNodeKind::kCollective && contains(n.name, "reduce_scatter(tp).chunk3"))
      last_chunks += collective_micros(r1.network, pair, n.coll, n.comm_size);
    if (n.kind == TraceNodeKind::kSend) longest_transfer = std::max(longest_transfer, p2p_micros(r1.network, 0, 1, n.comm_size));
    if (n.kind == TraceNodeKind::kCollective && contains(n.name, ".chunk"))
      longest_transfer = std::max(longest_transfer, collective_micros(r1.network, pair, n.coll, n.comm_size));
    if (n.kind == TraceNodeKind::kCompute && contains(n.name, ".chunk"))
      shortest_chunk = std::min(shortest_chunk, static_cast<double>(n.duration_micros));
  }
  REQUIRE(longest_transfer < shortest_chunk);
  REQUIRE(hidden > 0);
  REQUIRE(last_chunks > 0);
  CHECK(r0.sim.stages[0].exposed[0] - r1.sim.stages[0].exposed[0] == doctest::Approx(hidden - last_chunks).epsilon(1e-9));
  // Nothing else moves: the compute is the same, split in chunks.
  CHECK(r0.sim.stages[0].busy == doctest::Approx(r1.sim.stages[0].busy).epsilon(1e-9));
  CHECK(r0.sim.step - r1.sim.step == doctest::Approx(hidden - last_chunks).epsilon(1e-9));
  // Without sequence parallelism (or with tp 1) the option changes nothing.
  auto n0 = make(parse(R"({"model":{"preset":"gpt3-1.7b","num_layers":2},"parallel":{"tp":2},
                          "training":{"seq_len":512,"global_batch_size":1}})"));
  auto n1 = make(parse(R"({"model":{"preset":"gpt3-1.7b","num_layers":2},"parallel":{"tp":2},
                          "training":{"seq_len":512,"global_batch_size":1,"tp_comm_overlap":true}})"));
  CHECK(same_nodes(n0.rank_trace(0).value(), n1.rank_trace(0).value()));
}

TEST_CASE("without userbuffers: TE's column-parallel backward collectives run beside the dgrad and wgrad GEMMs") {
  // transformer_engine/pytorch/module/linear.py (and layernorm_linear.py,
  // layernorm_mlp.py's fc1) backward with sequence parallelism: the saved
  // input's all-gather is launched (async_op=True) before the dgrad GEMM,
  // the dgrad's reduce-scatter before the wgrad GEMM; both are waited for
  // at the end of the module's backward.
  auto g0 = make(parse(tp_job("")));
  const RankTrace t = g0.rank_trace(0).value();
  const NodesByName nodes(t);
  const auto node = [&](const std::string& name) { return nodes.node(name); };
  const auto depends = NodesByName::depends;
  for (const std::string& l : {std::string("L0"), std::string("L1")}) {
    CAPTURE(l);
    for (const auto& [ln, mod] : {std::pair<std::string, std::string>{"ln2", "mlp.fc1"}, {"ln1", "attn.qkv"}}) {
      const TraceNode* gather = node("mb0.bwd." + l + "." + ln + ".all_gather(tp)");
      const TraceNode* rs = node("mb0.bwd." + l + "." + ln + ".grad.reduce_scatter(tp)");
      const TraceNode* dgrad = node("mb0.bwd." + l + "." + mod + ".dgrad");
      const TraceNode* wgrad = node("mb0.bwd." + l + "." + mod + ".wgrad");
      const TraceNode* norm_bwd = node("mb0.bwd." + l + "." + ln + ".bwd");
      CHECK_FALSE(depends(gather, dgrad));  // launched with the dgrad, not after it
      CHECK(depends(wgrad, gather));        // the wgrad GEMM reads the gathered input
      CHECK(depends(rs, dgrad));            // the reduce-scatter reads the dgrad's output
      CHECK_FALSE(depends(wgrad, rs));      // and runs while the wgrad GEMM computes
      CHECK(depends(norm_bwd, rs));
      CHECK(depends(norm_bwd, wgrad));
    }
    // The row-parallel modules' gradient all-gather stays in line: the
    // dgrad GEMM waits for it.
    CHECK(depends(node("mb0.bwd." + l + ".mlp.fc2.dgrad"), node("mb0.bwd." + l + ".mlp.fc2.bias_add.grad.all_gather(tp)")));
  }
  // On this fast network each asynchronous transfer is shorter than the
  // GEMM it runs beside, so the exposed tp time is every other tp
  // collective's time, one after another on the compute stream.
  auto r0 = sim(g0);
  const GroupShape pair = shape_of(r0.network, 2);
  double exposed = 0, async = 0;
  int n_async = 0;
  const auto tp_group = node("mb0.bwd.L0.ln1.all_gather(tp)")->group;
  for (const auto& n : t.nodes) {
    if (n.kind != TraceNodeKind::kCollective || n.group != tp_group) continue;
    const double us = collective_micros(r0.network, pair, n.coll, n.comm_size);
    if (std::regex_search(n.name, te_async_bwd)) {
      async = std::max(async, us);
      ++n_async;
    } else {
      exposed += us;
    }
  }
  CHECK(n_async == 2 * 4);
  REQUIRE(async < static_cast<double>(node("mb0.bwd.L0.attn.qkv.wgrad")->duration_micros));
  CHECK(r0.sim.stages[0].exposed[0] == doctest::Approx(exposed).epsilon(1e-9));
  check_complete_balanced_and_summed(g0, summary(g0));
  CHECK(validate_generated(g0).ok());
  // With full recomputation the recomputed forward's collectives (phase
  // backward) stay the forward's, in line on the compute stream; only the
  // backward's own reduce-scatters run beside the GEMMs (the stage
  // program's side stream, read through the planner's build).
  {
    auto job = parse(tp_job(R"(,"recompute":"full")"));
    auto built = generator_plan_backend().build(job, /*summary=*/false);
    REQUIRE(built.ok());
    const RoleProgram& prog = (*built)->program_of(0);
    REQUIRE(prog.side_stream.size() == prog.nodes.size());
    int side = 0, recomputed_in_line = 0;
    for (size_t i = 0; i < prog.nodes.size(); ++i) {
      if (prog.nodes[i].kind != TraceNodeKind::kCollective || prog.axis_of(i) != "tp") continue;
      const std::string name(prog.name_suffix(i));
      if (contains(name, ".recomputed.")) {
        CHECK_MESSAGE(prog.side_stream[i] == 0, name);
        ++recomputed_in_line;
      } else if (std::regex_search("mb0." + name, te_async_bwd)) {
        CHECK_MESSAGE(prog.side_stream[i] == 1, name);
        ++side;
      } else {
        CHECK_MESSAGE(prog.side_stream[i] == 0, name);
      }
    }
    CHECK(recomputed_in_line == 2 * 4);  // ln1, ln2 gathers and proj, fc2 reduce-scatters per layer
    CHECK(side == 2 * 2);                // ln1, ln2 gradient reduce-scatters per layer
  }
  // The exposed tp time with full recomputation: every collective but the
  // asynchronous reduce-scatters, one after another.
  auto gr = make(parse(tp_job(R"(,"recompute":"full")")));
  const RankTrace tr = gr.rank_trace(0).value();
  const NodesByName rn(tr);
  auto rr = sim(gr);
  double exposed_r = 0;
  int recomputed = 0;
  for (const auto& n : tr.nodes) {
    if (n.kind != TraceNodeKind::kCollective || n.group != tp_group) continue;
    recomputed += contains(n.name, ".recomputed.") || contains(n.name, "recompute");
    if (!std::regex_search(n.name, te_async_bwd)) exposed_r += collective_micros(rr.network, pair, n.coll, n.comm_size);
  }
  CHECK(recomputed > 0);
  CHECK(rr.sim.stages[0].exposed[0] == doctest::Approx(exposed_r).epsilon(1e-9));
  // A tp job without sequence parallelism has no such collectives (its
  // column-parallel backward all-reduces stay in line: not modelled as
  // asynchronous): its traces are the same with or without userbuffers.
}

TEST_CASE("tp_comm_overlap: the SM share slows the GEMMs a transfer runs beside") {
  auto g1 = make(parse(tp_job(R"(,"tp_comm_overlap":true)")));
  SimulateOptions o;
  o.comm_sm_share_domain = o.comm_sm_share_scale_out = 0;
  auto free_run = simulate(g1, o).value();
  o.comm_sm_share_domain = 0.15;
  auto shared = simulate(g1, o).value();
  CHECK(shared.sim.stages[0].busy > free_run.sim.stages[0].busy);
}

TEST_CASE("overlap_grad_reduce: false reduces once after backward, the trace of one huge bucket") {
  const std::string base = R"({"model":{"preset":"gpt3-1.7b","num_layers":2},"parallel":{"dp":4},
                               "training":{"seq_len":2048,"global_batch_size":4,"dp_bucket_mb":4)";
  auto on = make(parse(base + R"(,"overlap_grad_reduce":true}})"));
  auto off = make(parse(base + R"(,"overlap_grad_reduce":false}})"));
  auto plain = make(parse(base + "}}"));  // Megatron-LM's default: off
  CHECK(same_nodes(off.rank_trace(0).value(), plain.rank_trace(0).value()));
  auto huge = make(parse(R"({"model":{"preset":"gpt3-1.7b","num_layers":2},"parallel":{"dp":4},
                             "training":{"seq_len":2048,"global_batch_size":4,"dp_bucket_mb":1048576}})"));
  // The same nodes as a bucket above the gradient bytes (docs/fidelity.md's jobs).
  CHECK(same_nodes(off.rank_trace(0).value(), huge.rank_trace(0).value()));
  auto r_on = sim(on), r_off = sim(off), r_huge = sim(huge);
  CHECK(r_off.sim.step == r_huge.sim.step);
  const GroupShape dp = shape_of(r_off.network, 4);
  // Off: every optimizer step waits for the one all-reduce, issued after the
  // last backward node: all of it is exposed.
  double whole = 0;
  int reductions = 0;
  const RankTrace t_off = off.rank_trace(0).value();
  for (const auto& n : t_off.nodes)
    if (n.kind == TraceNodeKind::kCollective && contains(n.name, "dp_grad_bucket")) {
      whole += collective_micros(r_off.network, dp, n.coll, n.comm_size);
      ++reductions;
    }
  CHECK(reductions == 1);
  CHECK(r_off.sim.stages[0].exposed[4] == doctest::Approx(whole).epsilon(1e-9));
  // On: the buckets before the last finish under the backward pass; the last
  // one (here the tied word embedding's gradient, final with the last
  // backward node) is issued at the end of backward and overlaps only the
  // optimizer steps that need none of it: exposed is what of it those steps
  // do not cover.
  const RankTrace t = on.rank_trace(0).value();
  const TraceNode* last = nullptr;
  int buckets = 0;
  for (const auto& n : t.nodes)
    if (n.kind == TraceNodeKind::kCollective && contains(n.name, "dp_grad_bucket")) last = &n, ++buckets;
  REQUIRE(last);
  CHECK(buckets > 2);
  // Compute nodes form one chain: the optimizer steps that run beside the
  // last bucket are those before the first that reads it.
  double free_opt = 0;
  for (const auto& n : t.nodes) {
    if (n.kind != TraceNodeKind::kCompute || n.id < last->id) continue;
    if (std::find(n.deps.begin(), n.deps.end(), last->id) != n.deps.end()) break;
    free_opt += static_cast<double>(n.duration_micros);
  }
  const double tail = collective_micros(r_on.network, dp, last->coll, last->comm_size);
  CHECK(r_on.sim.stages[0].exposed[4] == doctest::Approx(std::max(0.0, tail - free_opt)).epsilon(1e-9));
  CHECK(r_on.sim.stages[0].exposed[4] < r_off.sim.stages[0].exposed[4]);
}

TEST_CASE("overlap_param_gather: ZeRO-1's parameter all-gathers move into the forward pass") {
  const std::string base = R"({"model":{"preset":"gpt3-1.7b","num_layers":2},"parallel":{"dp":4,"zero":1},
                               "training":{"seq_len":2048,"global_batch_size":4,"dp_bucket_mb":4,"overlap_grad_reduce":true)";
  auto after = make(parse(base + "}}"));
  auto during = make(parse(base + R"(,"overlap_param_gather":true}})"));
  const RankTrace ta = after.rank_trace(0).value(), td = during.rank_trace(0).value();
  CHECK(ta.nodes.size() == td.nodes.size());  // the same nodes, moved
  uint64_t first_forward = UINT64_MAX, first_opt = UINT64_MAX;
  for (const auto& n : td.nodes) {
    if (n.kind == TraceNodeKind::kCompute && first_forward == UINT64_MAX) first_forward = n.id;
    if (contains(n.name, "opt.optimizer.") && first_opt == UINT64_MAX) first_opt = n.id;
  }
  int gathers = 0;
  std::vector<uint64_t> ids;
  for (const auto& n : td.nodes)
    if (contains(n.name, "param_all_gather")) {
      ++gathers;
      ids.push_back(n.id);
      CHECK(n.id < first_opt);  // before the step, in the forward pass
    }
  int gathers_after = 0;
  for (const auto& n : ta.nodes)
    if (contains(n.name, "param_all_gather")) ++gathers_after;
  CHECK(gathers == gathers_after);
  REQUIRE(gathers > 1);
  // The first bucket's gather precedes the first compute and nothing waits
  // before it; the first forward node reads the embedding (its bucket's
  // gather is a dependency of it).
  CHECK(ids.front() < first_forward);
  CHECK(td.nodes[ids.front()].deps.empty());
  bool waits = false;
  for (const auto& n : td.nodes)
    for (uint64_t d : n.deps)
      if (n.kind == TraceNodeKind::kCompute && std::find(ids.begin(), ids.end(), d) != ids.end()) waits = true;
  CHECK(waits);
  check_runs_to_completion(during);
  CHECK(validate_generated(during).ok());
  // The gathers overlap the forward pass: the step is shorter, by at most
  // their time.
  auto ra = sim(after), rd = sim(during);
  const GroupShape dp = shape_of(ra.network, 4);
  double gather_time = 0;
  for (const auto& n : ta.nodes)
    if (contains(n.name, "param_all_gather")) gather_time += collective_micros(ra.network, dp, n.coll, n.comm_size);
  CHECK(rd.sim.step < ra.sim.step);
  CHECK(ra.sim.step - rd.sim.step <= gather_time + 1e-6);
  // ZeRO 0: nothing to gather, nothing changes.
  auto z0 = make(parse(R"({"model":{"preset":"gpt3-1.7b","num_layers":2},"parallel":{"dp":4},
                          "training":{"seq_len":512,"global_batch_size":4,"overlap_grad_reduce":true,"overlap_param_gather":true}})"));
  auto z0d = make(parse(R"({"model":{"preset":"gpt3-1.7b","num_layers":2},"parallel":{"dp":4},
                           "training":{"seq_len":512,"global_batch_size":4,"overlap_grad_reduce":true}})"));
  CHECK(same_nodes(z0.rank_trace(0).value(), z0d.rank_trace(0).value()));
}

TEST_CASE("simulate timeline: communication pieces marked hidden or exposed") {
  auto g = make(parse(tp_job(R"(,"tp_comm_overlap":true)")));
  auto r = sim(g, true);
  double exposed_tp = 0;
  int hidden = 0;
  for (const auto& iv : r.sim.stages[0].timeline) {
    const bool compute = std::string(iv.kind).size() == 1;
    CHECK((iv.exposed == -1) == compute);
    if (!compute && iv.exposed == 0) ++hidden;
    if (std::string(iv.kind) == "tp" && iv.exposed == 1) exposed_tp += iv.end - iv.start;
  }
  CHECK(hidden > 0);
  // The exposed pieces of tp are the stage's exposed tp time (tp is the
  // only kind of communication in this job).
  CHECK(exposed_tp == doctest::Approx(r.sim.stages[0].exposed[0]).epsilon(1e-6));
  auto js = nlohmann::json::parse(simulate_json(r));
  bool five = false;
  for (const auto& e : js["stages"][0]["timeline"])
    if (e[2] == "tp") five = e.size() == 5;
  CHECK(five);
}

TEST_CASE("overlap_param_gather, interleaved: chunks 0 and 1 gathered up front, chunk k + 1 at chunk k's first forward") {
  // Megatron-LM's interleaved schedule (schedules.py, param_sync_func):
  // every bucket of chunks 0 and 1 before the first step; chunk k + 1's
  // when virtual micro-batch (forward steps so far + pipeline rank) is the
  // first of chunk k, i.e. forward step k * pp - rank.
  const std::string job = R"({"model":{"preset":"gpt3-1.7b","num_layers":6},
      "parallel":{"dp":2,"pp":2,"virtual_stages":3,"zero":1},
      "training":{"seq_len":512,"global_batch_size":8,"dp_bucket_mb":4,"schedule":"interleaved-1f1b",
                  "overlap_grad_reduce":true,"overlap_param_gather":true}})";
  auto g = make(parse(job));
  check_runs_to_completion(g);
  CHECK(validate_generated(g).ok());
  for (int64_t rank : {0, 2}) {  // stage 0 and stage 1 (dp is inner to pp)
    const RankTrace t = g.rank_trace(rank).value();
    std::vector<uint64_t> gathers;
    for (const auto& n : t.nodes)
      if (contains(n.name, "param_all_gather")) gathers.push_back(n.id);
    REQUIRE(gathers.size() > 3);
    uint64_t first_compute = UINT64_MAX;
    for (const auto& n : t.nodes)
      if (n.kind == TraceNodeKind::kCompute) { first_compute = n.id; break; }
    // Chunks 0 and 1 of this stage hold layers (stage + 2 c) of 6 one-layer
    // chunks: the gathers before the first compute are theirs, with no
    // dependencies; the rest (chunk 2) come later, behind a compute node.
    int early = 0, late = 0;
    for (uint64_t id : gathers) {
      if (id < first_compute) {
        ++early;
        CHECK(t.nodes[id].deps.size() <= 1);  // at most the previous gather on the dp stream
      } else {
        ++late;
        bool behind_compute = false;
        for (uint64_t d : t.nodes[id].deps) behind_compute |= t.nodes[d].kind == TraceNodeKind::kCompute;
        CHECK(behind_compute);
      }
    }
    CHECK(early > 0);
    CHECK(late > 0);
  }
  // Dispatched ahead, the gathers cost the step no more than after it.
  const std::string after_job = std::regex_replace(job, std::regex(R"(,"overlap_param_gather":true)"), "");
  auto a = make(parse(after_job));
  CHECK(sim(g).sim.step <= sim(a).sim.step);
}
