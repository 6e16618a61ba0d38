// The loss as Megatron runs it (docs/parallelism.md, "The loss"):
// training.cross_entropy_loss_fusion true (the default) reads the bf16
// logits once per statistic; false is Megatron-LM's unfused
// vocabulary-parallel cross entropy (megatron/core/tensor_parallel/
// cross_entropy.py): the logits copied to fp32, max, x - max and exp in
// place, sum, the division leaving the softmax, and in backward a multiply
// and the cast back. The bytes each node moves are worked out by hand from
// those passes, not read from the code under test.
#include "../test_jobs.h"

#include "api/simulate.h"

using namespace sc;
using namespace sc::testing;

namespace {

// V 1024 over tp, s 128, one sequence a micro-batch: N = 131,072 logits a
// micro-batch on one GPU, T = 128 tokens.
constexpr int64_t kV = 1024, kS = 128;

std::string ce_job(const std::string& extra, int tp = 1, int64_t vocab = kV) {
  return R"({"model": {"num_layers": 2, "hidden": 256, "num_heads": 4, "vocab": )" +
         std::to_string(vocab) + R"(, "ffn_hidden": 512},
            "training": {"seq_len": 128, "global_batch_size": )" +
         std::to_string(2 * tp) + extra + R"(},
            "parallel": {"dp": 2, "tp": )" +
         std::to_string(tp) + R"(}, "hardware": "h100"})";
}


// Rank 0's first micro-batch's loss nodes: name suffix -> tensor_size.
std::map<std::string, uint64_t> loss_nodes(const Generator& g) {
  const RankTrace t = g.rank_trace(0).value();
  std::map<std::string, uint64_t> out;
  for (const TraceNode& n : t.nodes) {
    const std::string name = n.name;
    for (const char* prefix : {"mb0.fwd.", "mb0.bwd."})
      if (name.rfind(prefix, 0) == 0 && (has(name, ".loss") || name == std::string(prefix) + "loss") &&
          n.kind == TraceNodeKind::kCompute)
        out[name.substr(4)] = n.tensor_size;
  }
  return out;
}

double step(const Generator& g) {
  SimulateOptions o;
  o.reuse_summary = false;
  Result<SimulateReport> r = simulate(g, o);
  REQUIRE_MESSAGE(r.ok(), r.error().message);
  return r->sim.step;
}

}  // namespace

TEST_CASE("cross entropy fusion: the key parses, defaults to fused, is named in errors and the canonical JSON") {
  const Job d = job_of(ce_job(""));
  CHECK(d.training.cross_entropy_loss_fusion);
  CHECK(!has(job_to_canonical_json(d), "cross_entropy_loss_fusion"));
  const Job u = job_of(ce_job(R"(, "cross_entropy_loss_fusion": false)"));
  CHECK(!u.training.cross_entropy_loss_fusion);
  CHECK(has(job_to_canonical_json(u), "\"cross_entropy_loss_fusion\": false"));
  CHECK(job_to_canonical_json(job_of(ce_job(R"(, "cross_entropy_loss_fusion": true)"))) ==
        job_to_canonical_json(d));
  Result<Job> bad = parse_job(ce_job(R"(, "cross_entropy_loss_fusion": "no")"));
  REQUIRE(!bad.ok());
  CHECK(bad.error().path == "training.cross_entropy_loss_fusion");
}

TEST_CASE("cross entropy fusion: the unfused loss makes Megatron-LM's passes over an fp32 copy of the logits") {
  constexpr uint64_t N = kV * kS, T = kS;  // logits and tokens of one micro-batch, tp 1
  const std::map<std::string, uint64_t> f = loss_nodes(make(job_of(ce_job(""))));
  // Fused: three statistics read the bf16 logits (2 B) and write one fp32
  // value a token; the target's also reads the int64 labels; the backward
  // reads the logits, two statistics, the labels and the loss gradient
  // and writes the logits' bf16 gradient.
  CHECK(f == std::map<std::string, uint64_t>{{"fwd.loss.max", 2 * N + 4 * T},
                                             {"fwd.loss.sum_exp", 2 * N + 4 * T + 4 * T},
                                             {"fwd.loss.target_logit", 2 * N + 8 * T + 4 * T},
                                             {"fwd.loss", 3 * 4 * T + 4 * T},
                                             {"bwd.loss.bwd", 2 * N + 4 * T + 4 * T + 8 * T + 4 * T + 2 * N}});

  const std::map<std::string, uint64_t> u =
      loss_nodes(make(job_of(ce_job(R"(, "cross_entropy_loss_fusion": false)"))));
  // Unfused: the copy (read 2 B, write 4 B), max and target over it, x -
  // max and exp in place (read and write 4 B each; the shift reads the
  // max too), the sum over the exponentials, the division by the sum
  // leaving the softmax; backward: the multiply (read the saved softmax,
  // write the copy's fp32 gradient) and the cast back to bf16 (read 4 B,
  // write 2 B).
  CHECK(u == std::map<std::string, uint64_t>{{"fwd.loss.float", 2 * N + 4 * N},
                                             {"fwd.loss.max", 4 * N + 4 * T},
                                             {"fwd.loss.shift", 8 * N + 4 * T},
                                             {"fwd.loss.exp", 8 * N},
                                             {"fwd.loss.sum_exp", 4 * N + 4 * T},
                                             {"fwd.loss.target_logit", 4 * N + 8 * T + 4 * T},
                                             {"fwd.loss", 3 * 4 * T + 4 * T},
                                             {"fwd.loss.softmax", 8 * N + 4 * T},
                                             {"bwd.loss.bwd", 4 * N + 4 * T + 4 * T + 8 * T + 4 * T + 4 * N},
                                             {"bwd.loss.float.bwd", 4 * N + 2 * N}});
  uint64_t fused = 0, unfused = 0;
  for (const auto& [name, bytes] : f) fused += bytes;
  for (const auto& [name, bytes] : u) unfused += bytes;
  // 10 and 56 bytes a logit (docs/parallelism.md, "The loss"), plus the
  // per-token statistics.
  CHECK(fused == 10 * N + 60 * T);
  CHECK(unfused == 56 * N + 64 * T);
}

TEST_CASE("cross entropy fusion: with tp the copy is vocabulary-sharded and the statistics all-reduced") {
  constexpr uint64_t N = kV / 2 * kS;  // one tp rank's logits
  Generator g = make(job_of(ce_job(R"(, "cross_entropy_loss_fusion": false)", 2)));
  const std::map<std::string, uint64_t> u = loss_nodes(g);
  CHECK(u.at("fwd.loss.float") == 6 * N);
  CHECK(u.at("fwd.loss.shift") == 8 * N + 4 * kS);
  CHECK(u.at("bwd.loss.float.bwd") == 6 * N);
  const RankTrace t = g.rank_trace(0).value();
  int all_reduces = 0;
  for (const TraceNode& n : t.nodes)
    if (n.kind == TraceNodeKind::kCollective && std::string(n.name).rfind("mb0.fwd.loss.", 0) == 0) ++all_reduces;
  CHECK(all_reduces == 3);  // max, sum of exponentials, target logit: as fused
  // x - max waits for the max's all-reduce, the softmax for the sum's (as
  // Megatron all-reduces each before using it).
  auto id_of = [&](const std::string& name) {
    for (const TraceNode& n : t.nodes)
      if (n.name == name) return static_cast<int64_t>(n.id);
    return int64_t{-1};
  };
  auto waits_for = [&](const std::string& node, const std::string& dep) {
    const int64_t d = id_of(dep);
    for (const TraceNode& n : t.nodes)
      if (n.name == node)
        for (uint64_t x : n.deps)
          if (static_cast<int64_t>(x) == d) return true;
    return false;
  };
  CHECK(waits_for("mb0.fwd.loss.shift", "mb0.fwd.loss.max.all_reduce(tp)"));
  CHECK(waits_for("mb0.fwd.loss.softmax", "mb0.fwd.loss.sum_exp.all_reduce(tp)"));
}

TEST_CASE("cross entropy fusion: fp32 logits are not copied (.float() returns them)") {
  const std::map<std::string, uint64_t> u =
      loss_nodes(make(job_of(ce_job(R"(, "dtype": "fp32", "cross_entropy_loss_fusion": false)"))));
  CHECK(u.count("fwd.loss.float") == 0);
  CHECK(u.count("bwd.loss.float.bwd") == 0);
  CHECK(u.at("fwd.loss.shift") == 8 * static_cast<uint64_t>(kV * kS) + 4 * kS);
}

TEST_CASE("cross entropy fusion: the unfused loss lengthens the step and keeps its fp32 softmax for backward") {
  const Generator fused = make(job_of(ce_job("")));
  const Generator unfused = make(job_of(ce_job(R"(, "cross_entropy_loss_fusion": false)")));
  CHECK(step(unfused) > step(fused));
  // The saved activations: the fp32 softmax (4 B a logit) where the fused
  // loss keeps the bf16 logits (2 B): 2 B a logit more at their peak.
  auto mem = [](const Generator& g) { return summary(g)["stages"][0]["memory_bytes"]; };
  CHECK(mem(unfused)["activations_peak"].get<int64_t>() - mem(fused)["activations_peak"].get<int64_t>() ==
        static_cast<int64_t>(2 * kV * kS));
  // While the loss runs (a vocabulary large enough that it sets the live
  // peak): two fp32 buffers of the logits at a time (the copy and its
  // shift, the shift and the exponentials, the exponentials and the
  // softmax, the softmax and its gradient: 8 B a logit) against the fused
  // loss's bf16 logits and their gradient (4 B), plus one fp32 statistic a
  // token.
  constexpr int64_t V = 32768, N = V * kS;
  const Generator big_fused = make(job_of(ce_job("", 1, V)));
  const Generator big_unfused = make(job_of(ce_job(R"(, "cross_entropy_loss_fusion": false)", 1, V)));
  CHECK(mem(big_unfused)["activations_live_peak"].get<int64_t>() -
            mem(big_fused)["activations_live_peak"].get<int64_t>() ==
        4 * N + 4 * kS);
}
