// serving.two_batch_overlap (SGLang's --enable-two-batch-overlap,
// docs/inference.md "Two-batch overlap"): the key and its refusals; the
// split (each micro-batch half the iteration's tokens, checked against the
// same job at half the batch); the lowered order, SGLang's per layer, and
// the EP stream; traces that replay on every rank; and the iteration time
// derived by hand from the per-op times in the two regimes: compute-bound
// (the all-to-alls hidden: the compute alone) and communication-bound
// (the all-to-alls back to back, the compute before the first and after
// the last exposed), against the same job without the key (their sum).
#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "api/api.h"
#include "api/state.h"
#include "check/replay.h"
#include "check/validate.h"
#include "../test_jobs.h"

using namespace sc;
using sc::testing::has;
using json = nlohmann::json;

namespace {


// Two MoE layers (8 experts top-2, one shared expert), DP attention over 2
// ranks with ep 2 in one NVLink domain; `network`: the job's network block.
std::string moe_job(const std::string& serving_extra, const std::string& network = "",
                    const std::string& parallel = R"({"dp": 2, "ep": 2})") {
  return R"({"mode": "inference",
    "model": {"num_layers": 2, "hidden": 256, "num_heads": 4, "vocab": 1024, "ffn_hidden": 512,
              "mlp": "swiglu", "linear_bias": false, "num_experts": 8, "experts_per_token": 2,
              "moe_ffn_hidden": 128, "first_dense_layers": 0, "shared_experts": 1, "max_positions": 4096},
    "parallel": )" + parallel + R"(,
    "serving": {"prompt_tokens": 256, "output_tokens": 16, "concurrency": 8)" +
         serving_extra + "}" + (network.empty() ? "" : R"(, "network": )" + network) + "}";
}
const std::string kOn = R"(, "two_batch_overlap": true)";

void check_error(const std::string& text, const std::string& says) {
  CAPTURE(text);
  Result<Job> r = parse_job(text);
  REQUIRE(!r.ok());
  CHECK(r.error().path == "serving.two_batch_overlap");
  CHECK_MESSAGE(has(r.error().message, says), r.error().message);
}

const RoleProgram& program(const Generator& g, const std::string& kind) {
  const Generator* p = g.phase(kind);
  REQUIRE(p != nullptr);
  return GeneratorAccess::state(*p).program_of(0);
}

bool ep_a2a(const RoleProgram& p, size_t i) {
  return p.nodes[i].kind == TraceNodeKind::kCollective && p.axis_of(i) == "ep" &&
         p.nodes[i].coll == CollectiveType::kAllToAll;
}

double iteration_us(const Generator& g, const std::string& kind) {
  return json::parse(g.summary_json())["inference"]["iterations"][kind]["seconds"].get<double>() * 1e6;
}

// The all-to-all of S bytes over the 2 ep ranks of one domain
// (docs/simulate.md, "all-to-all"): alpha + (m - 1) x (S / n) / B_d, n = m = 2.
double a2a_us(int64_t bytes, double alpha_us, double gbs) {
  return alpha_us + static_cast<double>(bytes) / 2 / (gbs * 1e3);
}

}  // namespace

TEST_CASE("two-batch overlap: the key parses, default false, canonical only when set; refusals name the field") {
  const Job off = testing::job_of(moe_job(""));
  CHECK(!off.serving.two_batch_overlap);
  CHECK(!has(job_to_canonical_json(off), "two_batch_overlap"));
  CHECK(job_to_canonical_json(testing::job_of(moe_job(R"(, "two_batch_overlap": false)"))) == job_to_canonical_json(off));
  const Job on = testing::job_of(moe_job(kOn));
  CHECK(on.serving.two_batch_overlap);
  const std::string c = job_to_canonical_json(on);
  CHECK(has(c, "\"two_batch_overlap\": true"));
  CHECK(job_to_canonical_json(testing::job_of(c)) == c);
  for (const char* bad : {R"("yes")", "1"}) check_error(moe_job(std::string(R"(, "two_batch_overlap": )") + bad), "true or false");
  // A dense model has no expert all-to-all.
  check_error(R"({"mode": "inference", "model": "llama3-8b", "parallel": {"dp": 2},
                  "serving": {"two_batch_overlap": true}})",
              "num_experts 0");
  // ep 1: the experts stay on each rank.
  check_error(moe_job(kOn, "", R"({"dp": 2, "ep": 1})"), "ep 1");
  // tp > 1: the experts over the tp ranks (an all-reduce, no all-to-all).
  check_error(moe_job(kOn, "", R"({"tp": 2, "ep": 2})"), "tp 2");
  // Disaggregated: each pool must have an all-to-all; the message names the pool.
  check_error(moe_job(kOn + R"(, "disaggregated": {"prefill": {"dp": 2, "ep": 2}, "decode": {"dp": 2, "ep": 1}})"),
              "the decode pool has ep 1");
  CHECK(parse_job(moe_job(kOn + R"(, "disaggregated": {"prefill": {"dp": 2, "ep": 2}, "decode": {"dp": 4, "ep": 4}})"))
            .ok());
}

TEST_CASE("two-batch overlap: each micro-batch is half the iteration (decode: the same nodes as half the batch)") {
  // Decode at 8 sequences (4 per dp rank) split in two: each micro-batch is
  // the decode iteration of 4 sequences (2 per rank), node for node.
  Generator on = testing::make(testing::job_of(moe_job(kOn)));
  std::string half_text = moe_job("");
  half_text.replace(half_text.find("\"concurrency\": 8"), 16, "\"concurrency\": 4");
  Generator half = testing::make(testing::job_of(half_text));
  const RankTrace t = on.phase("decode")->rank_trace(0).value(), h = half.phase("decode")->rank_trace(0).value();
  std::multiset<std::string> mb[2], want;
  for (const auto& x : h.nodes) {
    REQUIRE(x.name.rfind("mb0.", 0) == 0);
    want.insert(x.name.substr(4) + "/" + std::to_string(x.duration_micros) + "/" + std::to_string(x.comm_size) + "/" +
                std::to_string(x.num_ops));
  }
  for (const auto& x : t.nodes) {
    const int which = x.name.rfind("mb1.", 0) == 0 ? 1 : 0;
    REQUIRE((which == 1 || x.name.rfind("mb0.", 0) == 0));
    mb[which].insert(x.name.substr(4) + "/" + std::to_string(x.duration_micros) + "/" + std::to_string(x.comm_size) +
                     "/" + std::to_string(x.num_ops));
  }
  CHECK(mb[0] == want);
  CHECK(mb[1] == want);
  // Prefill: a 256-token prompt as two halves of 128 tokens; its 256 x 257 / 2
  // = 32,896 causal query-key pairs, 16,448 each. The GEMMs and the
  // attention of a micro-batch do half the FLOPs of the whole prompt's.
  Generator off = testing::make(testing::job_of(moe_job("")));
  const RankTrace pf = off.phase("prefill")->rank_trace(0).value(), pn = on.phase("prefill")->rank_trace(0).value();
  std::map<std::string, int64_t> ops_off, ops_on[2];
  for (const auto& x : pf.nodes) ops_off[x.name] = x.num_ops;
  for (const auto& x : pn.nodes) ops_on[x.name.rfind("mb1.", 0) == 0 ? 1 : 0][x.name.substr(4)] = x.num_ops;
  REQUIRE(ops_on[0].size() == ops_off.size());
  for (const char* n : {"fwd.L0.attn.qkv", "fwd.L0.attn.paged", "fwd.L1.moe.router", "fwd.L1.moe.shared.fc1"}) {
    CAPTURE(n);
    REQUIRE(ops_off.count(std::string("mb0.") + n));
    CHECK(2 * ops_on[0][n] == ops_off[std::string("mb0.") + n]);
    CHECK(ops_on[1][n] == ops_on[0][n]);
  }
}

TEST_CASE("two-batch overlap: SGLang's order per layer, the all-to-alls on the EP stream, traces that replay") {
  Generator on = testing::make(testing::job_of(moe_job(kOn)));
  for (const std::string kind : {"prefill", "decode", "mixed"}) {
    CAPTURE(kind);
    const RoleProgram& p = program(on, kind);
    REQUIRE(p.side_stream.size() == p.nodes.size());
    std::map<std::string, size_t> at;
    int on_stream = 0;
    for (size_t i = 0; i < p.nodes.size(); ++i) {
      at[p.node_name(i)] = i;
      CHECK_MESSAGE(p.side_stream[i] == (ep_a2a(p, i) ? 4 : 0), p.node_name(i));
      on_stream += ep_a2a(p, i);
    }
    CHECK(on_stream == 2 * 2 * 2);  // 2 micro-batches x 2 MoE layers x (dispatch, combine)
    const auto id = [&](const std::string& n) {
      REQUIRE_MESSAGE(at.count(n), n);
      return at[n];
    };
    const auto deps = [&](const std::string& a, const std::string& b) {
      const auto& d = p.nodes[id(a)].deps;
      return std::find(d.begin(), d.end(), id(b)) != d.end();
    };
    // Layer 1: A's attention and dispatch, B's attention (after A's
    // post-combine part of layer 0) and dispatch, A's experts and combine,
    // B's experts and combine, then A's post-combine part.
    const std::vector<std::string> order = {
        "mb0.fwd.L0.mlp.residual",        "mb0.fwd.L1.ln1",
        "mb0.fwd.L1.moe.dispatch.all_to_all(ep)", "mb1.fwd.L0.mlp.residual",
        "mb1.fwd.L1.ln1",                 "mb1.fwd.L1.moe.dispatch.all_to_all(ep)",
        "mb0.fwd.L1.moe.experts.fc1",     "mb0.fwd.L1.moe.experts.fc2.all_to_all(ep)",
        "mb1.fwd.L1.moe.experts.fc1",     "mb1.fwd.L1.moe.experts.fc2.all_to_all(ep)",
        "mb0.fwd.L1.moe.combine",         "mb0.fwd.final_norm",
        "mb1.fwd.L1.moe.combine",         "mb1.fwd.final_norm"};
    for (size_t i = 1; i < order.size(); ++i) CHECK_MESSAGE(id(order[i - 1]) < id(order[i]), order[i]);
    // B's attention does not wait for A's dispatch (they overlap); A's
    // experts do. A's dispatch waits for A's last compute before it (the
    // shared experts run with the attention, before the dispatch).
    CHECK(!deps("mb1.fwd.L1.ln1", "mb0.fwd.L1.moe.dispatch.all_to_all(ep)"));
    CHECK(deps("mb0.fwd.L1.moe.experts.fc1", "mb0.fwd.L1.moe.dispatch.all_to_all(ep)"));
    CHECK(deps("mb0.fwd.L1.moe.dispatch.all_to_all(ep)", "mb0.fwd.L1.moe.shared.fc2"));
    // Every rank's trace replays to the end (matched collectives, no cycle).
    const Generator* pg = on.phase(kind);
    std::vector<RankTrace> ranks;
    for (int64_t r = 0; r < pg->world_size(); ++r) ranks.push_back(pg->rank_trace(r).value());
    ReplayResult rr = replay_traces(ranks, pg->groups());
    const std::string why = rr.problems.empty() ? std::string() : rr.problems[0];
    CHECK_MESSAGE(rr.completed, why);
  }
  // Pipeline stages: on each stage its layer's micro-batches pair up the
  // same way, and the traces replay.
  Generator piped = testing::make(testing::job_of(moe_job(kOn, "", R"({"dp": 2, "ep": 2, "pp": 2})")));
  for (const std::string kind : {"prefill", "decode"}) {
    CAPTURE(kind);
    const Generator* pg = piped.phase(kind);
    REQUIRE(pg != nullptr);
    for (int64_t st = 0; st < 2; ++st) {
      const RoleProgram& p = GeneratorAccess::state(*pg).program_of(st);
      int on_stream = 0;
      for (size_t i = 0; i < p.nodes.size(); ++i) on_stream += p.side_stream.at(i) == 4;
      CHECK(on_stream == 2 * 2);  // 2 micro-batches x (dispatch, combine) of its one MoE layer
    }
    std::vector<RankTrace> ranks;
    for (int64_t r = 0; r < pg->world_size(); ++r) ranks.push_back(pg->rank_trace(r).value());
    ReplayResult rr = replay_traces(ranks, pg->groups());
    const std::string why = rr.problems.empty() ? std::string() : rr.problems[0];
    CHECK_MESSAGE(rr.completed, why);
  }
  // Without the key: one micro-batch, no side streams (the program as before).
  Generator off = testing::make(testing::job_of(moe_job("")));
  CHECK(program(off, "prefill").side_stream.empty());
  // A decode batch of one sequence per rank cannot be split: it runs whole.
  std::string one = moe_job(kOn);
  one.replace(one.find("\"concurrency\": 8"), 16, "\"concurrency\": 2");
  CHECK(program(testing::make(testing::job_of(one)), "decode").side_stream.empty());
}

TEST_CASE("two-batch overlap: the iteration time by hand, compute-bound and communication-bound") {
  // No SM share, so compute runs at its own durations beside a transfer.
  for (const bool slow : {false, true}) {
    CAPTURE(slow);
    // Fast: 1 PB/s (each all-to-all well under a microsecond); slow: 10
    // MB/s, each all-to-all far longer than any compute segment. No latency:
    // the halves' all-to-alls move the whole one's bytes in the same time.
    const double alpha = 0, gbs = slow ? 0.01 : 1e6;
    const std::string net = R"({"domain_size": 2, "domain_latency_us": )" + std::to_string(alpha) +
                            R"(, "domain_bandwidth_gbs": )" + std::to_string(gbs) +
                            R"(, "comm_sm_share_domain": 0, "comm_sm_share_scale_out": 0})";
    Generator on = testing::make(testing::job_of(moe_job(kOn, net))), off = testing::make(testing::job_of(moe_job("", net)));
    for (const std::string kind : {"prefill", "decode"}) {
      CAPTURE(kind);
      // Without the key: one stream, everything in series.
      const RoleProgram& po = program(off, kind);
      double sum_off = 0;
      for (size_t i = 0; i < po.nodes.size(); ++i)
        sum_off += po.nodes[i].kind == TraceNodeKind::kCompute ? static_cast<double>(po.nodes[i].duration_micros)
                                                               : a2a_us(po.nodes[i].comm_size, alpha, gbs);
      CHECK(iteration_us(off, kind) == doctest::Approx(sum_off).epsilon(1e-6));
      // With it: the compute stream's nodes and the EP stream's all-to-alls.
      const RoleProgram& p = program(on, kind);
      double compute = 0, comm = 0, before_first = 0, after_last = 0;
      size_t first = p.nodes.size(), last = 0;
      for (size_t i = 0; i < p.nodes.size(); ++i)
        if (ep_a2a(p, i)) {
          comm += a2a_us(p.nodes[i].comm_size, alpha, gbs);
          first = std::min(first, i);
          last = i;
        }
      for (size_t i = 0; i < p.nodes.size(); ++i) {
        if (p.nodes[i].kind != TraceNodeKind::kCompute) continue;
        const double d = static_cast<double>(p.nodes[i].duration_micros);
        compute += d;
        if (i < first) before_first += d;                                  // A's embedding and first attention
        if (i > last && p.node_name(i).rfind("mb1.", 0) == 0) after_last += d;  // B's last post-combine part and head
      }
      if (!slow) {
        // Every all-to-all ends before the compute that needs it is next
        // in line: the iteration is its compute (max(compute, comm)).
        CHECK(iteration_us(on, kind) == doctest::Approx(compute).epsilon(1e-6));
        CHECK(comm < 2.0);
      } else {
        // The EP stream runs its 8 all-to-alls back to back from A's first
        // dispatch to B's last combine; before it A's first attention, after
        // it B's last part.
        CHECK(iteration_us(on, kind) == doctest::Approx(before_first + comm + after_last).epsilon(1e-6));
        CHECK(comm > 4 * compute);
        // The prefill's compute hides behind the exchange. (Decode's
        // buffers hold one row per expert, the whole batch's as each
        // micro-batch's: twice the bytes in all, no faster here.)
        if (kind == "prefill") CHECK(iteration_us(on, kind) < iteration_us(off, kind));
      }
    }
  }
}
