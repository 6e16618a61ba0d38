// Context parallelism (Llama 3's all-gather of K/V) and the Llama 3 rank
// layout worked example of ../shared/docs/reference-numbers.md.
#include <set>

#include "../test_jobs.h"
#include "check/replay.h"

using namespace sc;
using namespace sc::testing;

namespace {
Job cp_job(int64_t tp, int64_t cp, int64_t pp, int64_t dp) {
  Job j = gpt_job(4, 1024, 16, tp, dp, false, 1, 1024, 2 * pp * dp);
  j.model.num_kv_heads = 4;  // GQA: K/V are smaller than Q
  j.parallel.cp = cp;
  j.parallel.pp = pp;
  return j;
}
}  // namespace

TEST_CASE("cp: Llama 3 worked example, 16 GPUs, TP = CP = PP = DP = 2 in the order [TP, CP, PP, DP]") {
  Job j = cp_job(2, 2, 2, 2);
  j.parallel.order = {"tp", "cp", "pp", "dp"};
  auto g = make(j);
  REQUIRE(g.world_size() == 16);
  std::map<std::string, std::set<int64_t>> group_of_rank0;  // axis name in node -> members
  const RankTrace t0 = g.rank_trace(0).value();
  for (const auto& n : t0.nodes) {
    if (n.kind == TraceNodeKind::kCollective) {
      const auto& m = g.groups().at(n.group);
      std::string axis = n.name.substr(n.name.rfind('(') + 1);
      axis.pop_back();
      group_of_rank0[axis] = std::set<int64_t>(m.begin(), m.end());
    }
    if (n.kind == TraceNodeKind::kSend) CHECK(n.peer == 4);  // GPU0 and GPU4 share a pipeline
  }
  CHECK(group_of_rank0["tp"] == std::set<int64_t>{0, 1});
  CHECK(group_of_rank0["cp"] == std::set<int64_t>{0, 2});
  // GPU0 and GPU8 share a DP group; gradients are reduced over dp x cp.
  CHECK(group_of_rank0["dp+cp"] == std::set<int64_t>{0, 2, 8, 10});
}

TEST_CASE("cp: K and V are all-gathered forward, re-gathered and their gradients reduce-scattered backward") {
  const int64_t cp = 4, s = 1024, kv = 4, d = 64;
  auto g = make(cp_job(1, cp, 1, 1));
  const int64_t kv_shard = 1 * (s / cp) * kv * d * 2;  // bf16 bytes of K (or V) on one rank
  int fwd_ag = 0, bwd_ag = 0, bwd_rs = 0;
  const RankTrace t1 = g.rank_trace(1).value();
  for (const auto& n : t1.nodes) {
    if (n.kind != TraceNodeKind::kCollective || n.name.find(".L1.") == std::string::npos) continue;
    bool fwd = n.name.find(".fwd.") != std::string::npos;
    if (n.coll == CollectiveType::kAllGather && n.comm_size == kv_shard) (fwd ? fwd_ag : bwd_ag)++;
    if (n.coll == CollectiveType::kReduceScatter && !fwd && n.comm_size == kv_shard * cp) bwd_rs++;
  }
  const int micro_batches = 2;
  CHECK(fwd_ag == 2 * micro_batches);
  CHECK(bwd_ag == 2 * micro_batches);
  CHECK(bwd_rs == 2 * micro_batches);
}

TEST_CASE("cp: attention and GEMM work split over cp ranks; every mix completes") {
  auto one = summary(make(cp_job(1, 1, 1, 1)));
  auto four = summary(make(cp_job(1, 4, 1, 1)));
  // Same job, sequence split 4 ways: the same model FLOPs, a quarter per rank.
  CHECK(four["flops"]["model_per_iteration"] == one["flops"]["model_per_iteration"]);
  CHECK(four["flops"]["executed_per_rank"].get<double>() ==
        doctest::Approx(one["flops"]["executed_per_rank"].get<double>() / 4).epsilon(0.01));
  for (auto [tp, cp, pp, dp] : {std::tuple{2, 2, 1, 2}, {1, 2, 2, 2}, {2, 4, 2, 1}}) {
    Job j = cp_job(tp, cp, pp, dp);
    j.parallel.zero = dp > 1 ? 1 : 0;
    check_runs_to_completion(make(j));
  }
}

TEST_CASE("cp: ring attention passes K/V blocks around the ring and runs to completion") {
  const int64_t cp = 4, s = 1024, kv = 4, d = 64;
  for (auto [tp, pp, dp] : {std::tuple{1, 1, 1}, {2, 2, 2}}) {
    Job j = cp_job(tp, cp, pp, dp);
    j.parallel.cp_algorithm = "ring";
    auto g = make(j);
    check_runs_to_completion(g);
    const RankTrace rank0 = g.rank_trace(0).value();
    // No K/V gathers: only ring steps, cp - 1 sends of one K+V block forward
    // and of K/V + dK/dV backward per layer and micro-batch.
    const int64_t block = 1 * (s / cp) * (kv / tp) * d * 2 * 2;
    int fwd_sends = 0, bwd_sends = 0;
    for (const auto& n : rank0.nodes) {
      CHECK(!(n.kind == TraceNodeKind::kCollective && n.name.find("attn.k.all_gather") != std::string::npos));
      if (n.kind == TraceNodeKind::kSend && n.name.find("mb0.fwd.L") == 0 && n.name.find(".kv_send") != std::string::npos) {
        CHECK(n.comm_size == block);
        ++fwd_sends;
      }
      if (n.kind == TraceNodeKind::kSend && n.name.find("mb0.bwd.L") == 0 && n.name.find(".kv_send") != std::string::npos) {
        CHECK(n.comm_size == 2 * block);
        ++bwd_sends;
      }
    }
    const int layers_on_rank0 = static_cast<int>(4 / pp);
    CHECK(fwd_sends == layers_on_rank0 * (cp - 1));
    CHECK(bwd_sends == layers_on_rank0 * (cp - 1));
    // The same FLOPs as the all-gather scheme.
    Job a = j;
    a.parallel.cp_algorithm = "allgather";
    CHECK(summary(g)["flops"]["model_per_iteration"] == summary(make(a))["flops"]["model_per_iteration"]);
  }
}

TEST_CASE("cp: causal fused attention executes half the square, the same half on every cp rank") {
  // Llama-3-8B's heads (a 32, d 128), 2 layers, s = 64 over cp 2, flash
  // attention, all-gathered K/V. Each rank holds s/cp = 32 queries against
  // all 64 keys; under the causal mask (chunks i and 2cp-1-i per rank) it
  // executes half of its 32 x 64 share: 2 GEMMs x 2 a d x 32 x 64 / 2.
  auto j = parse_job(R"({"model":{"preset":"llama3-8b","num_layers":2,"flash_attention":true},
      "parallel":{"cp":2},"training":{"seq_len":64,"global_batch_size":1}})");
  REQUIRE(j.ok());
  auto g = make(*j);
  const int64_t a = 32, d = 128, s = 64, cp = 2;
  const int64_t fwd = 2 * (2 * a * d) * (s / cp) * s / 2;
  for (int64_t r = 0; r < cp; ++r) {
    const RankTrace t = g.rank_trace(r).value();
    int seen = 0;
    for (const auto& n : t.nodes) {
      if (n.name == "mb0.fwd.L0.attn.flash") {
        CHECK(n.num_ops == fwd);
        ++seen;
      }
      // The backward recomputes Q K^T: 5 products of the forward's 2.
      if (n.name == "mb0.bwd.L0.attn.flash.bwd") {
        CHECK(n.num_ops == fwd / 2 * 5);
        ++seen;
      }
    }
    CHECK(seen == 2);
  }
  // Model FLOPs keep the full square (Megatron-LM's and PaLM's convention):
  // the attention part is 3 x 2 GEMMs x 2 a d s^2 per layer.
  auto plain = parse_job(R"({"model":{"preset":"llama3-8b","num_layers":2,"flash_attention":false},
      "parallel":{"cp":2},"training":{"seq_len":64,"global_batch_size":1}})");
  REQUIRE(plain.ok());
  CHECK(summary(g)["flops"]["model_per_iteration"] == summary(make(*plain))["flops"]["model_per_iteration"]);
}
