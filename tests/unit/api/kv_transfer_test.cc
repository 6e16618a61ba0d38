// The KV transfer between disaggregated pools (serve/kv_transfer.h): which
// prefill rank sends which decode rank how many bytes, derived here by hand
// from the two layouts (which layers a pipeline stage holds, which KV heads
// a tp rank holds; MLA's latent on every tp rank), never read back from the
// code under test. Rank numbers come from the pools' own rank_at.
#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>
#include <utility>

#include "api/api.h"
#include "api/serving.h"
#include "check/replay.h"
#include "../test_jobs.h"

using namespace sc;

namespace {

Generator build(const std::string& text) { return testing::generator_from_json(text); }

int64_t at(const Generator& g, const std::string& coords) {
  Result<int64_t> r = g.rank_at(coords);
  REQUIRE_MESSAGE(r.ok(), r.error().message);
  return *r;
}

using Pairs = std::map<std::pair<int64_t, int64_t>, int64_t>;

// The pairs, checked against the traces: each pair one send on its sender
// and one recv on its receiver with the same size and tag; the world replays.
Pairs pairs_of(const KvTransfer& kv) {
  Pairs out;
  for (size_t k = 0; k < kv.pairs.size(); ++k) {
    const KvPair& p = kv.pairs[k];
    out[{p.src, p.dst}] += p.bytes;
    int sends = 0, recvs = 0;
    for (const TraceNode& n : kv.ranks[static_cast<size_t>(p.src)].nodes)
      if (n.kind == TraceNodeKind::kSend && n.tag == static_cast<int32_t>(k) && n.peer == p.dst && n.comm_size == p.bytes) ++sends;
    for (const TraceNode& n : kv.ranks[static_cast<size_t>(p.dst)].nodes)
      if (n.kind == TraceNodeKind::kRecv && n.tag == static_cast<int32_t>(k) && n.peer == p.src && n.comm_size == p.bytes) ++recvs;
    CHECK(sends == 1);
    CHECK(recvs == 1);
  }
  // A rank in no pair holds exactly one node of no work (ASTRA-sim refuses
  // a trace without nodes); every other rank only its sends and receives.
  std::set<int64_t> busy;
  for (const KvPair& p : kv.pairs) busy.insert(p.src), busy.insert(p.dst);
  int64_t idle = 0;
  for (const RankTrace& t : kv.ranks) {
    REQUIRE(!t.nodes.empty());
    if (busy.count(t.rank)) continue;
    ++idle;
    CHECK(t.nodes.size() == 1);
    CHECK(t.nodes[0].kind == TraceNodeKind::kCompute);
    CHECK(t.nodes[0].num_ops == 0);
    CHECK(t.nodes[0].duration_micros == 0);
  }
  ReplayResult rr = replay_traces(kv.ranks, kv.groups);
  CHECK(rr.completed);
  CHECK(rr.nodes_finished == static_cast<int64_t>(2 * kv.pairs.size()) + idle);
  return out;
}

}  // namespace

TEST_CASE("kv transfer, GQA: prefill tp 4 pp 2 -> decode tp 2 dp 2, each prefill rank sends its heads of its layers") {
  // Llama 3 8B cut to 4 layers: 8 KV heads of 128, bf16. One prompt of
  // 1,000 tokens = 63 pages of 16 = 1,008 tokens; a (layer, head) is
  // 1,008 x 2 (K, V) x 128 x 2 B = 516,096 B.
  Generator g = build(R"({"mode": "inference", "model": {"preset": "llama3-8b", "num_layers": 4}, "parallel": {"tp": 2},
    "serving": {"prompt_tokens": 1000, "output_tokens": 200, "concurrency": 2,
      "disaggregated": {"prefill": {"tp": 4, "pp": 2, "dp": 1}, "decode": {"tp": 2, "pp": 1, "dp": 2}}}})");
  const Generator& pre = *g.phase("prefill");
  const int64_t wp = pre.world_size();
  REQUIRE(wp == 8);
  REQUIRE(g.world_size() == 4);
  Result<KvTransfer> kv = kv_transfer_traces(g);
  REQUIRE(kv.ok());
  CHECK(kv->ranks.size() == 12);
  // Prefill tp rank t holds heads 2t, 2t+1; decode tp rank t' holds heads
  // 4t'..4t'+3, so prefill tp t sends to decode tp t / 2. Stage s holds
  // layers 2s, 2s+1. The one prompt (prefill dp 0) goes to decode dp 0:
  // 2 layers x 2 heads x 516,096 B from each of the 8 prefill ranks.
  Pairs want;
  for (int t = 0; t < 4; ++t)
    for (int s = 0; s < 2; ++s)
      want[{at(pre, "{\"tp\":" + std::to_string(t) + ",\"pp\":" + std::to_string(s) + "}"),
            wp + at(g, "{\"tp\":" + std::to_string(t / 2) + ",\"dp\":0}")}] = 2 * 2 * 516096;
  CHECK(pairs_of(*kv) == want);
  // The sum is one prompt's cache: 1,008 tokens x 2 x 4 layers x 8 heads x 128 x 2 B.
  CHECK(kv->total_bytes == 1008 * 2 * 4 * 8 * 128 * 2);
}

TEST_CASE("kv transfer, GQA: prefill tp 2 dp 2 -> decode tp 4 pp 2, a prefill rank's heads split over two decode tp ranks") {
  Generator g = build(R"({"mode": "inference", "model": {"preset": "llama3-8b", "num_layers": 4}, "parallel": {"tp": 2},
    "serving": {"prompt_tokens": 1000, "output_tokens": 200, "concurrency": 1,
      "disaggregated": {"prefill": {"tp": 2, "pp": 1, "dp": 2}, "decode": {"tp": 4, "pp": 2, "dp": 1}}}})");
  const Generator& pre = *g.phase("prefill");
  const int64_t wp = pre.world_size();
  REQUIRE(wp == 4);
  REQUIRE(g.world_size() == 8);
  Result<KvTransfer> kv = kv_transfer_traces(g);
  REQUIRE(kv.ok());
  // Two prompts (prefill dp 0 and 1), both to the one decode dp rank.
  // Prefill tp t holds heads 4t..4t+3 of all 4 layers; decode (tp t', pp s')
  // holds heads 2t', 2t'+1 of layers 2s', 2s'+1: it receives from prefill
  // tp t' / 2 of each prompt 2 layers x 2 heads x 516,096 B.
  Pairs want;
  for (int j = 0; j < 2; ++j)
    for (int t2 = 0; t2 < 4; ++t2)
      for (int s = 0; s < 2; ++s)
        want[{at(pre, "{\"tp\":" + std::to_string(t2 / 2) + ",\"dp\":" + std::to_string(j) + "}"),
              wp + at(g, "{\"tp\":" + std::to_string(t2) + ",\"pp\":" + std::to_string(s) + "}")}] = 2 * 2 * 516096;
  CHECK(want.size() == 16);
  CHECK(pairs_of(*kv) == want);
  CHECK(kv->total_bytes == 2 * 1008 * 2 * 4 * 8 * 128 * 2);
}

TEST_CASE("kv transfer, MLA: the latent is replicated over tp, so every decode tp rank receives it whole") {
  // DeepSeek-V3's attention, dense, 4 layers: the cache per layer and token
  // is the latent (512) + the RoPE key (64), 1,152 B in bf16. 100 prompt
  // tokens = 7 pages = 112 tokens: 129,024 B per layer.
  Generator g = build(R"({"mode": "inference", "model": {"preset": "deepseek-v3", "num_layers": 4, "num_experts": 0,
      "experts_per_token": 0, "shared_experts": 0, "first_dense_layers": 0, "moe_ffn_hidden": 0, "router_bias": false},
    "parallel": {"tp": 2}, "serving": {"prompt_tokens": 100, "output_tokens": 10, "weights_dtype": "fp8",
      "disaggregated": {"prefill": {"tp": 2, "pp": 2}, "decode": {"tp": 4, "pp": 1, "dp": 1}}}})");
  const Generator& pre = *g.phase("prefill");
  const int64_t wp = pre.world_size();
  REQUIRE(wp == 4);
  REQUIRE(g.world_size() == 4);
  Result<KvTransfer> kv = kv_transfer_traces(g);
  REQUIRE(kv.ok());
  // Decode tp t' holds all 4 layers' latent; it is sent by prefill tp
  // t' mod 2 (the two prefill tp ranks share the sending), of stage s for
  // layers 2s, 2s+1: 2 x 129,024 B per (prefill stage, decode rank).
  Pairs want;
  for (int t2 = 0; t2 < 4; ++t2)
    for (int s = 0; s < 2; ++s)
      want[{at(pre, "{\"tp\":" + std::to_string(t2 % 2) + ",\"pp\":" + std::to_string(s) + "}"),
            wp + at(g, "{\"tp\":" + std::to_string(t2) + "}")}] = 2 * 129024;
  CHECK(pairs_of(*kv) == want);
  // tp 4 copies of one prompt's 112 x 4 x 1,152 B.
  CHECK(kv->total_bytes == 4 * 112 * 4 * 1152);
}

TEST_CASE("kv transfer: only between disaggregated pools") {
  Generator c = build(R"({"mode": "inference", "model": {"preset": "llama3-8b", "num_layers": 2}, "parallel": {"tp": 2},
    "serving": {"prompt_tokens": 100, "output_tokens": 10}})");
  Result<KvTransfer> kv = kv_transfer_traces(c);
  REQUIRE(!kv.ok());
  CHECK(kv.error().path == "serving.disaggregated");
}
