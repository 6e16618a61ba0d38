// Hybrid (Mamba + attention) models in inference (docs/inference.md,
// "Hybrid models"): each Mamba layer keeps a fixed-size state per sequence
// (conv state and SSM state) beside the attention layers' paged KV cache;
// the fit counts both, tp splits the state with the mixer's heads or
// channels, and a decode step reads and writes every sequence's state.
// Every expected number is derived by hand from the models' configs.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "api/api.h"
#include "../test_jobs.h"

using namespace sc;
using json = nlohmann::json;

namespace {

std::string hybrid_job(const std::string& model, int64_t tp, int64_t concurrency, const std::string& extra = "") {
  return R"({"mode": "inference", "model": ")" + model + R"(", "parallel": {"tp": )" + std::to_string(tp) +
         R"(}, "hardware": "h100", "serving": {"prompt_tokens": 1000, "output_tokens": 24, "concurrency": )" +
         std::to_string(concurrency) + extra + "}}";
}

// Nemotron-H 8B (nvidia/Nemotron-H-8B-Base-8K config.json): 24 Mamba-2
// layers of 128 heads x 64 (d_inner 8,192), 8 groups, d_state 128,
// d_conv 4; 4 attention layers with 8 KV heads of 128. bf16 state.
constexpr int64_t kNemoConv = (8192 + 2 * 8 * 128) * (4 - 1);  // 30,720 elements per layer
constexpr int64_t kNemoSsm = 128 * 64 * 128;                    // 1,048,576 elements per layer
constexpr int64_t kNemoState = 24 * (kNemoConv + kNemoSsm) * 2;  // 51,806,208 B per sequence
constexpr int64_t kNemoKvToken = 4 * 2 * 8 * 128 * 2;           // 16,384 B per token

}  // namespace

TEST_CASE("serving hybrid: Nemotron-H 8B's Mamba state and KV cache per sequence, and the fit, by hand") {
  static_assert(kNemoState == 51806208);
  Generator g = testing::generator_from_json(hybrid_job("nemotron-h-8b", 1, 0));
  const json inf = json::parse(g.summary_json())["inference"];
  CHECK(inf["kv_cache_bytes_per_token"].get<int64_t>() == kNemoKvToken);
  // 1,000 + 24 tokens are 64 pages of 16: 1,024 cached tokens.
  CHECK(inf["kv_cache_bytes_per_sequence"].get<int64_t>() == 1024 * kNemoKvToken);
  CHECK(inf["state_cache_bytes_per_sequence"].get<int64_t>() == kNemoState);
  CHECK(inf["state_cache_bytes_per_sequence_per_rank"].get<int64_t>() == kNemoState);
  // A sequence holds both: the fit divides what weights and activations
  // leave by 16,777,216 + 51,806,208 B, not by the KV pages alone.
  const int64_t per_seq = 1024 * kNemoKvToken + kNemoState;
  const json& mem = inf["memory_bytes_per_rank"];
  const int64_t left = mem["capacity"].get<int64_t>() - mem["weights"].get<int64_t>() - mem["activations"].get<int64_t>();
  const int64_t n = inf["max_concurrent_sequences"].get<int64_t>();
  CHECK(n == left / per_seq);
  CHECK(n > 0);
  CHECK(mem["kv_cache"].get<int64_t>() == n * per_seq);
}

TEST_CASE("serving hybrid: tp splits the state with the heads (Mamba-2) and the channels (Mamba-1)") {
  // Nemotron-H at tp 2: 64 heads and 5,120 conv channels per rank, half.
  json nemo = json::parse(testing::generator_from_json(hybrid_job("nemotron-h-8b", 2, 8)).summary_json())["inference"];
  CHECK(nemo["state_cache_bytes_per_sequence"].get<int64_t>() == kNemoState);
  CHECK(nemo["state_cache_bytes_per_sequence_per_rank"].get<int64_t>() == 24 * ((5120 * 3) + 64 * 64 * 128) * 2);
  CHECK(nemo["state_cache_bytes_per_sequence_per_rank"].get<int64_t>() * 2 == kNemoState);
  // Jamba-v0.1 (Mamba-1: d_inner 8,192, d_state 16, d_conv 4; 28 Mamba
  // layers of 32, 4 attention layers): 8,192 x (3 + 16) x 2 B x 28 =
  // 8,716,288 B per sequence; at tp 2 (experts over expert tp 2) half.
  json jamba = json::parse(testing::generator_from_json(hybrid_job("jamba-v0.1", 2, 8)).summary_json())["inference"];
  CHECK(jamba["state_cache_bytes_per_sequence"].get<int64_t>() == int64_t{8192} * (3 + 16) * 2 * 28);
  CHECK(jamba["state_cache_bytes_per_sequence_per_rank"].get<int64_t>() == int64_t{4096} * (3 + 16) * 2 * 28);
  CHECK(jamba["kv_cache_bytes_per_token"].get<int64_t>() == 4 * 2 * 8 * 128 * 2);
}

TEST_CASE("serving hybrid: a decode step reads and writes each sequence's SSM state, by hand") {
  // Nemotron-H 8B, tp 1, 64 sequences decoding (64 tokens): the first
  // Mamba-2 layer's scan reads x (64 x 128 x 64), dt (64 x 128), B and C
  // (64 x 8 x 128 each), A_log, D and dt_bias (128 each) and the 64
  // states (64 x 128 x 64 x 128), and writes y (as x) and the 64 states
  // back, all bf16: 270,811,904 B. Memory-bound (its 7 x 64 x 8,192 x 128
  // FLOPs take 7 us on the FP32 units): 270,811,904 / (0.90 x 3,350 GB/s)
  // = 89.8 us, more than its in_proj GEMM's weight (4,096 x 18,560 x 2 B:
  // 50 us).
  Generator g = testing::generator_from_json(hybrid_job("nemotron-h-8b", 1, 64));
  const RankTrace decode = g.rank_trace(0).value();
  const TraceNode* scan = nullptr;
  for (const TraceNode& n : decode.nodes)
    if (n.name.size() >= 12 && n.name.substr(n.name.size() - 12) == "L0.mamba.ssd") scan = &n;
  REQUIRE(scan != nullptr);
  const int64_t state = int64_t{64} * 128 * 64 * 128 * 2;
  const int64_t bytes = 64 * 128 * 64 * 2 * 2 + 64 * 128 * 2 + 2 * 64 * 8 * 128 * 2 + 3 * 128 * 2 + 2 * state;
  CHECK(bytes == 270811904);
  CHECK(scan->tensor_size == static_cast<uint64_t>(bytes));
  CHECK(scan->duration_micros == static_cast<uint64_t>(std::llround(bytes / (0.90 * 3350e9) * 1e6)));
  // At one sequence the state moved is 64 times smaller: TPOT grows with
  // the batch beyond the weights' streaming.
  json one = json::parse(testing::generator_from_json(hybrid_job("nemotron-h-8b", 1, 1)).summary_json())["inference"];
  json many = json::parse(g.summary_json())["inference"];
  CHECK(many["tpot_seconds"].get<double>() > one["tpot_seconds"].get<double>());
}

TEST_CASE("serving hybrid: a workload runs with each sequence's state in pages, and disaggregation is refused") {
  Generator g = testing::generator_from_json(
      hybrid_job("nemotron-h-8b", 1, 0, R"(, "workload": {"arrival": "poisson", "rate": 4, "requests": 40, "seed": 1})"));
  const json w = json::parse(g.summary_json())["inference"]["workload"];
  CHECK(w["requests"].get<int64_t>() == 40);
  CHECK(w["output_tokens"].get<int64_t>() == 40 * 24);
  Result<Job> bad = parse_job(R"({"mode": "inference", "model": "nemotron-h-8b", "serving": {"disaggregated":
      {"prefill": {"tp": 1}, "decode": {"tp": 1}}}})");
  REQUIRE(!bad.ok());
  CHECK(bad.error().path == "serving.disaggregated");
}

TEST_CASE("serving hybrid: a Mamba-only model serves a workload, each sequence holding one state and no KV pages") {
  // Nemotron-H 8B with every block a Mamba-2 mixer or an MLP: no attention
  // layer, so no KV cache. A running sequence holds its fixed state from
  // its first token, so the slots per rank are what weights and
  // activations leave, divided by one state (not 0 pages, which refused
  // every request before).
  Generator g = testing::generator_from_json(
      R"({"mode": "inference", "model": {"preset": "nemotron-h-8b", "hybrid_pattern": "M-"}, "hardware": "h100",
          "serving": {"prompt_tokens": 1000, "output_tokens": 24,
                      "workload": {"arrival": "poisson", "rate": 4, "requests": 40, "seed": 1}}})");
  const json inf = json::parse(g.summary_json())["inference"];
  CHECK(inf["kv_cache_bytes_per_token"].get<int64_t>() == 0);
  const int64_t state = inf["state_cache_bytes_per_sequence_per_rank"].get<int64_t>();
  REQUIRE(state > 0);
  const json& mem = inf["memory_bytes_per_rank"];
  const int64_t left = mem["capacity"].get<int64_t>() - mem["weights"].get<int64_t>() - mem["activations"].get<int64_t>();
  const json& w = inf["workload"];
  CHECK(w["kv_cache_pages_per_rank"].get<int64_t>() == left / state);
  CHECK(w["requests"].get<int64_t>() == 40);
  CHECK(w["output_tokens"].get<int64_t>() == 40 * 24);
  CHECK(w["preemptions"].get<int64_t>() == 0);
  // 40 requests at 4/s hold at most a few states at once: utilisation is
  // the states in use over the slots, under 1 %.
  CHECK(w["kv_cache_utilization_max"].get<double>() > 0);
  CHECK(w["kv_cache_utilization_max"].get<double>() < 0.01);
}
