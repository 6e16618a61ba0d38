// Fused attention by shape (attention_shape_factor, docs/hardware.md
// "Attention by shape"): the curve against FlashAttention-3's published
// forward throughput on H100 (kernel-efficiency.md §2.2), the reference
// shape the hardware constants keep their meaning at, the cap at the peak,
// and a flash-attention node's duration in a trace worked out by hand; the
// occupancy term (tiles in waves over the SMs) by hand and against this
// project's H100 measurements of short query blocks.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <string>

#include "api/api.h"
#include "base/json_fields.h"
#include "cost/kernel_cost.h"
#include "job/job.h"
#include "../test_jobs.h"

using namespace sc;

namespace {

HardwareProfile h100() {
  Result<HardwareProfile> hw = hardware_preset("h100");
  REQUIRE(hw.ok());
  return *hw;
}

// Rank 0's trace nodes of a job, by name.
std::map<std::string, TraceNode> rank0_nodes(const std::string& job_json) {
  Result<Job> j = parse_job(job_json);
  REQUIRE_MESSAGE(j.ok(), j.error().to_string());
  Result<Generator> gen = Generator::create(*j);
  REQUIRE_MESSAGE(gen.ok(), gen.error().to_string());
  std::map<std::string, TraceNode> nodes;
  const RankTrace trace = gen->rank_trace(0).value();  // held: a range-for over a temporary's member dangles
  for (const TraceNode& n : trace.nodes) nodes[n.name] = n;
  return nodes;
}

// The keys-per-row knee at head dim 128 (knee 238), relative to the
// reference 4,096 keys.
double knee128(double kv) { return (kv / (kv + 238)) / (4096.0 / 4334); }

// The reference launch's occupancy: 2,048 tiles in 16 waves of 132 SMs.
constexpr double kRefOccupancy = 2048.0 / (16 * 132);

// A causal tile computes `masked` keys per row beside the `inner` counted
// (its diagonal block); relative to the reference's 64 beside 4,096.
double diagonal(double inner, double masked) { return (inner / (inner + masked)) / (4096.0 / 4160); }

}  // namespace

TEST_CASE("attention by shape: ratios between sequence lengths are FlashAttention-3's") {
  const HardwareProfile hw = h100();
  // FA3 forward, head dim 128, TFLOP/s at 512, 1k, 2k, 4k, 8k, 16k keys
  // (pytorch/benchmark PR #2391): the curve's ratios to 16k match within 2%
  // (512 and 16k are the two points the knee is fitted on).
  const double keys[] = {512, 1024, 2048, 4096, 8192, 16384};
  const double fa3_d128[] = {430, 517, 566, 590, 614, 621};
  for (int i = 0; i < 6; ++i) {
    CAPTURE(keys[i]);
    const double model = attention_shape_factor(hw, keys[i], 128, false) / attention_shape_factor(hw, 16384, 128, false);
    CHECK(model == doctest::Approx(fa3_d128[i] / 621).epsilon(0.02));
  }
  // Head dim 256 (FA3 paper figure): 286 ... 642, within 8%.
  const double fa3_d256[] = {286, 427, 537, 612, 628, 642};
  for (int i = 0; i < 6; ++i) {
    CAPTURE(keys[i]);
    const double model = attention_shape_factor(hw, keys[i], 256, false) / attention_shape_factor(hw, 16384, 256, false);
    CHECK(model == doctest::Approx(fa3_d256[i] / 642).epsilon(0.08));
  }
}

TEST_CASE("attention by shape: 1 at the reference shape, below it for short keys, capped at the peak") {
  HardwareProfile hw = h100();
  CHECK(attention_shape_factor(hw, 4096, 128, false) == doctest::Approx(1.0));
  // Head dims below 128: 128's curve, times the head-dim term.
  CHECK(attention_shape_factor(hw, 4096, 64, true) == doctest::Approx(attention_head_dim_factor(64, true)));
  // 256 keys (cp 16 ring steps of a 8k causal sequence): (256 / 494) / (4096 / 4334).
  CHECK(attention_shape_factor(hw, 256, 128, false) == doctest::Approx((256.0 / 494) / (4096.0 / 4334)));
  // Never above the peak: with a 0.99 constant the factor stops at 1/0.99.
  hw.attention_efficiency = 0.99;
  CHECK(attention_shape_factor(hw, 1e9, 128, false) == doctest::Approx(1 / 0.99));
}

TEST_CASE("attention by shape: a flash-attention node's duration in the trace, by hand") {
  // 1 layer, h 4096, 32 heads of 128, seq 2048, 2 sequences, causal: each
  // query visits 1024 keys on average.
  std::map<std::string, TraceNode> nodes = rank0_nodes(R"({"model": {"num_layers": 1, "hidden": 4096, "num_heads": 32, "vocab": 1000,
      "flash_attention": true}, "training": {"seq_len": 2048, "micro_batch_size": 2, "global_batch_size": 2},
      "hardware": "h100"})");
  REQUIRE(nodes.count("mb0.fwd.L0.attn.flash"));
  // FLOPs: 2 x b x a x s x (s/2) x (d + d). 2 x 32 x 16 query tiles fill
  // 8 waves of 132 SMs, as the reference launch does (0.97); each tile
  // computes its diagonal 128 x 128 block whole, 64 wasted keys per row
  // beside the 1,024 counted (the reference: 64 beside 4,096).
  const double flops = 2.0 * 2 * 32 * 2048 * 1024 * 256;
  const double factor = knee128(1024) * diagonal(1024, 64);
  const double compute_us = flops / (989.5e12 * 0.75 * factor) * 1e6;  // 112.9 µs
  // Its bytes (q, k, v, output and log-sum-exp, ~168 MB) take ~56 µs: compute bound.
  CHECK(nodes["mb0.fwd.L0.attn.flash"].duration_micros == static_cast<uint64_t>(std::llround(compute_us)));
}

// ---- Occupancy: tiles in waves over the SMs (attention_occupancy) ----------

namespace {

AttentionLaunch non_causal(double pairs, double queries, double keys) {
  AttentionLaunch l;
  l.pairs = pairs;
  l.queries = queries;
  l.keys = l.kv = l.kv_max = keys;
  return l;
}

// Fused-attention TFLOP/s measured on an H100 SXM (tests/bench/gpu/results/
// h100-sxm-2026-11-26.json, docs/kernel-measurements.md), keyed
// "<backend> <head dim> <query rows> <key rows> <causal|full> <fwd|bwd>",
// with each record's batch x heads.
struct Measured {
  std::map<std::string, double> tflops, pairs;
};
std::string mkey(const std::string& backend, int d, int q, int k, bool causal, bool bwd) {
  return backend + " " + std::to_string(d) + " " + std::to_string(q) + " " + std::to_string(k) +
         (causal ? " causal" : " full") + (bwd ? " bwd" : " fwd");
}
Measured measured_h100() {
  const jsonf::Json j = testing::source_json("tests/bench/gpu/results/h100-sxm-2026-11-26.json");
  Measured out;
  for (const jsonf::Json& r : j["attention"])
    for (const bool bwd : {false, true}) {
      const std::string key = mkey(r["backend"].get<std::string>(), r["d"].get<int>(), r["sq"].get<int>(),
                                   r["sk"].get<int>(), r["causal"].get<bool>(), bwd);
      out.tflops[key] = r[bwd ? "bwd_tflops" : "fwd_tflops"].get<double>();
      out.pairs[key] = r["batch"].get<double>() * r["heads"].get<double>();
    }
  return out;
}

// The launch of a measured square record: causal rows visit half the keys
// on average, the last row all of them.
AttentionLaunch square(double pairs, double n, bool causal) {
  AttentionLaunch l = non_causal(pairs, n, n);
  if (causal) l.kv = n / 2;
  return l;
}

}  // namespace

TEST_CASE("attention occupancy: wave counts by hand") {
  const HardwareProfile hw = h100();  // 132 SMs
  // A 256-row query block of 16 heads against 8K keys, forward: 16 x
  // ceil(256 / 128) = 32 tiles, one partial wave: 32 of 132 SMs busy.
  CHECK(attention_occupancy(hw, non_causal(16, 256, 8192), 128, false) == doctest::Approx(32.0 / 132));
  // Its backward: 16 x ceil(8192 / 128) = 1,024 key tiles, ceil(1024 / 132)
  // = 8 waves of 132: 1024 / 1056 busy.
  CHECK(attention_occupancy(hw, non_causal(16, 256, 8192), 128, true) == doctest::Approx(1024.0 / 1056));
  // Llama 3 405B at tp 8, 8K causal (16 heads, one sequence): 16 x 64 =
  // 1,024 query tiles, 8 waves; the longest row (8,192 keys) is shorter
  // than 8 waves of the average row (4,096 keys).
  AttentionLaunch causal;
  causal.pairs = 16;
  causal.queries = causal.keys = causal.kv_max = 8192;
  causal.kv = 4096;
  CHECK(attention_occupancy(hw, causal, 128, false) == doctest::Approx(1024.0 / 1056));
  // One causal ring step of cp 16 at 8K (512 rows, 16 heads): 64 tiles in
  // one wave, which lasts the last tile (512 keys) while the average tile
  // visits 256: 64 x 256 / (132 x 512) busy.
  causal.queries = causal.keys = causal.kv_max = 512;
  causal.kv = 256;
  CHECK(attention_occupancy(hw, causal, 128, false) == doctest::Approx(64.0 * 256 / (132 * 512)));
  // Head dim 64: 192-row forward tiles (FlashAttention-3): 16 x ceil(1024 /
  // 192) = 96 tiles.
  CHECK(attention_occupancy(hw, non_causal(16, 1024, 1024), 64, false) == doctest::Approx(96.0 / 132));
  // Without an SM count nothing is quantised.
  HardwareProfile bare = hw;
  bare.sm_count = 0;
  CHECK(attention_occupancy(bare, non_causal(16, 256, 8192), 128, false) == 1.0);
}

TEST_CASE("attention occupancy: short query blocks against the H100 measurements") {
  // Ratios between shapes (the profile's level is fitted elsewhere): a 256-
  // and a 1,024-row query block against 8K, 32K and 128K keys, each over
  // the 4,096-row block against the same keys, measured (cuDNN's Hopper
  // kernels, FlashAttention-3 class) and modelled. Forward: the model's
  // ratio within 25% of the measured one (the flat model said 1.0 where
  // 0.21-0.28 was measured for 256 rows). Backward (its inner loop over the
  // few queries): within 40%, for cuDNN and for PyTorch's FlashAttention-2
  // (the flat model: 1.03-1.06 against 0.41-0.87). FlashAttention-2's
  // forward is not checked: it splits the keys over extra CTAs when the
  // query tiles cannot fill the GPU (docs/hardware.md).
  const HardwareProfile hw = h100();
  const Measured m = measured_h100();
  for (const char* backend : {"cudnn", "flash"})
    for (const int keys : {8192, 32768, 131072})
      for (const int rows : {256, 1024})
        for (const bool bwd : {false, true}) {
          if (!bwd && std::string(backend) == "flash") continue;
          const std::string k = mkey(backend, 128, rows, keys, false, bwd), ref = mkey(backend, 128, 4096, keys, false, bwd);
          REQUIRE(m.tflops.count(k));
          REQUIRE(m.tflops.count(ref));
          const double measured = m.tflops.at(k) / m.tflops.at(ref);
          const double model = attention_launch_factor(hw, non_causal(16, rows, keys), 128, bwd) /
                               attention_launch_factor(hw, non_causal(16, 4096, keys), 128, bwd);
          CAPTURE(k);
          CAPTURE(measured);
          CAPTURE(model);
          CHECK(std::abs(model / measured - 1) <= (bwd ? 0.40 : 0.25));
        }
}

TEST_CASE("attention by shape: square blocks against the H100 measurements") {
  // The forward of every measured square block (512-32K tokens, batch x
  // tokens = 16K, head dim 64 with 32 heads and 128 with 16, causal and
  // not, both backends) over the same backend's 4,096-token non-causal
  // block: the model's ratio within 20% of the measured one. Causal blocks
  // carry the diagonal's masked half tile (without it the 512-token causal
  // block was 31% too fast). The backward of short blocks is not held to
  // this: at 512-1K tokens it runs 0.3-0.5 of the reference where the
  // model says 0.4-0.9 (docs/hardware.md).
  const HardwareProfile hw = h100();
  const Measured m = measured_h100();
  for (const char* backend : {"cudnn", "flash"})
    for (const int d : {64, 128})
      for (const int n : {512, 1024, 2048, 4096, 8192, 16384, 32768})
        for (const bool causal : {false, true}) {
          const std::string k = mkey(backend, d, n, n, causal, false), ref = mkey(backend, d, 4096, 4096, false, false);
          REQUIRE(m.tflops.count(k));
          const double measured = m.tflops.at(k) / m.tflops.at(ref);
          const double model = attention_launch_factor(hw, square(m.pairs.at(k), n, causal), d, false) /
                               attention_launch_factor(hw, square(m.pairs.at(ref), 4096, false), d, false);
          CAPTURE(k);
          CAPTURE(measured);
          CAPTURE(model);
          CHECK(std::abs(model / measured - 1) <= 0.20);
        }
}

TEST_CASE("attention occupancy: a short causal flash-attention node in the trace, by hand") {
  // 1 layer, h 2048, 16 heads of 128, one sequence of 256 tokens, causal:
  // 16 x 2 = 32 query tiles in one wave on 132 SMs, lasting the last tile
  // (256 keys) while the average row visits 128.
  std::map<std::string, TraceNode> nodes = rank0_nodes(R"({"model": {"num_layers": 1, "hidden": 2048, "num_heads": 16, "vocab": 1000,
      "flash_attention": true}, "training": {"seq_len": 256, "micro_batch_size": 1, "global_batch_size": 1},
      "hardware": "h100"})");
  REQUIRE(nodes.count("mb0.fwd.L0.attn.flash"));
  const double flops = 2.0 * 16 * 256 * 128 * 256;  // 2 x a x s x (s/2) x (d + d)
  const double knee = knee128(128);
  const double occupancy = (32.0 * 128 / (132 * 256)) / kRefOccupancy;  // over the reference launch's
  const double diag = diagonal(128, 64);  // 64 masked keys per row computed
  const double compute_us = flops / (989.5e12 * 0.75 * knee * occupancy * diag) * 1e6;  // 11.5 µs
  CHECK(nodes["mb0.fwd.L0.attn.flash"].duration_micros == static_cast<uint64_t>(std::llround(compute_us)));
}

TEST_CASE("attention occupancy: ring-attention steps, by hand") {
  // cp 2 ring, 1 layer, 16 heads of 128, 1,024 tokens: each rank holds 512
  // rows (chunks i and 3 - i). Its two steps: the causal one against its
  // own block, and either its 512 queries against the first half of the
  // other block or its last 256 queries against the whole block, one of
  // each over the two ranks. Each step's FLOPs: 2 x 16 x 512 x 256 x 256.
  std::map<std::string, TraceNode> nodes = rank0_nodes(R"({"model": {"num_layers": 1, "hidden": 2048, "num_heads": 16, "vocab": 1000,
      "flash_attention": true}, "training": {"seq_len": 1024, "micro_batch_size": 1, "global_batch_size": 1},
      "parallel": {"cp": 2, "cp_algorithm": "ring"}, "hardware": "h100"})");
  REQUIRE(nodes.count("mb0.fwd.L0.attn.ring.step1"));
  REQUIRE(nodes.count("mb0.bwd.L0.attn.ring.bwd.step1"));
  // The diagonal block: 64 masked rows computed beside `inner` in a causal
  // tile, against 64 beside 4,096 at the reference.
  // Forward: query tiles of 128 rows. Causal step: 64 tiles, one wave as
  // long as the last tile (512 keys; average 256). First half: 64 tiles of
  // 256 keys. Second half: 32 tiles of 512 keys.
  const double causal = knee128(256) * (64.0 * 256 / (132 * 512)) / kRefOccupancy * diagonal(256, 64);
  const double first = knee128(256) * (64.0 / 132) / kRefOccupancy * diagonal(256, 0);
  const double second = knee128(512) * (32.0 / 132) / kRefOccupancy * diagonal(512, 0);
  const double fwd = 2 / (1 / causal + 0.5 * (1 / first + 1 / second));
  const double step_flops = 2.0 * 16 * 512 * 256 * 256;
  CHECK(nodes["mb0.fwd.L0.attn.ring.step1"].duration_micros ==
        static_cast<uint64_t>(std::llround(step_flops / (989.5e12 * 0.75 * fwd) * 1e6)));
  // Backward: key tiles of 128 rows, each looping over the queries that
  // see it. Causal: 64 tiles, 256 queries on average, the first key tile
  // all 512. First half (256 keys seen by 512 queries): 32 tiles. Second
  // half (512 keys seen by 256 queries): 64 tiles.
  const double b_causal = knee128(256) * (64.0 * 256 / (132 * 512)) / kRefOccupancy * diagonal(256, 64);
  const double b_first = knee128(512) * (32.0 / 132) / kRefOccupancy * diagonal(512, 0);
  const double b_second = knee128(256) * (64.0 / 132) / kRefOccupancy * diagonal(256, 0);
  const double bwd = 2 / (1 / b_causal + 0.5 * (1 / b_first + 1 / b_second));
  CHECK(nodes["mb0.bwd.L0.attn.ring.bwd.step1"].duration_micros ==
        static_cast<uint64_t>(std::llround(2.5 * step_flops / (989.5e12 * 0.57 * bwd) * 1e6)));
}

TEST_CASE("attention occupancy: cp all-gather chunks, by hand") {
  // cp 2 all-gather (Llama 3's), 16 heads of 128, 1,024 tokens: a rank's
  // 512 rows are two chunks of 256, each run against the keys up to its
  // end (chunks 0 and 3: 256 and 1,024 keys, 640 on average). A row visits
  // 512 keys on average (the rank's FLOPs: half of 512 x 1,024), the last
  // row of a chunk 512 + 128.
  std::map<std::string, TraceNode> nodes = rank0_nodes(R"({"model": {"num_layers": 1, "hidden": 2048, "num_heads": 16, "vocab": 1000,
      "flash_attention": true}, "training": {"seq_len": 1024, "micro_batch_size": 1, "global_batch_size": 1},
      "parallel": {"cp": 2, "cp_algorithm": "allgather"}, "hardware": "h100"})");
  REQUIRE(nodes.count("mb0.fwd.L0.attn.flash"));
  REQUIRE(nodes.count("mb0.bwd.L0.attn.flash.bwd"));
  const double flops = 2.0 * 16 * 512 * 512 * 256;
  // Forward: 16 x 2 query tiles, one wave lasting the longest row (640 keys).
  // Causal tiles: 64 masked rows beside the counted keys.
  const double fwd = knee128(512) * (32.0 * 512 / (132 * 640)) / kRefOccupancy * diagonal(512, 64);
  CHECK(nodes["mb0.fwd.L0.attn.flash"].duration_micros ==
        static_cast<uint64_t>(std::llround(flops / (989.5e12 * 0.75 * fwd) * 1e6)));
  // Backward: 16 x ceil(640 / 128) key tiles, each key row seen by
  // 256 x 512 / 640 query rows on average and 256 at most.
  const double inner = 256.0 * 512 / 640;
  const double bwd = knee128(inner) * (80.0 * inner / (132 * 256)) / kRefOccupancy * diagonal(inner, 64);
  CHECK(nodes["mb0.bwd.L0.attn.flash.bwd"].duration_micros ==
        static_cast<uint64_t>(std::llround(2.5 * flops / (989.5e12 * 0.57 * bwd) * 1e6)));
}

TEST_CASE("attention by shape: head dim 64 against 128, cuDNN's H100 kernels") {
  // The same shapes (batch x tokens = 16K, one sequence at 32K; 32 heads
  // of 64 against 16 of 128: the same query elements) measured with both
  // head dims: the
  // model's ratio of the two rates (tiles, occupancy and the head-dim term)
  // within 10% of the measured one at 2K-32K tokens, causal and not,
  // forward and backward (the largest gap: 2K non-causal forward, 0.67
  // measured). Without the head-dim term the model said 0.97-1.02 where
  // 0.67-0.76 (forward) and 0.78-0.85 (backward) were measured.
  const HardwareProfile hw = h100();
  const Measured m = measured_h100();
  for (const int n : {2048, 4096, 8192, 16384, 32768})
    for (const bool causal : {false, true})
      for (const bool bwd : {false, true}) {
        const std::string k64 = mkey("cudnn", 64, n, n, causal, bwd), k128 = mkey("cudnn", 128, n, n, causal, bwd);
        REQUIRE(m.tflops.count(k64));
        REQUIRE(m.tflops.count(k128));
        const double measured = m.tflops.at(k64) / m.tflops.at(k128);
        const double model = attention_launch_factor(hw, square(m.pairs.at(k64), n, causal), 64, bwd) /
                             attention_launch_factor(hw, square(m.pairs.at(k128), n, causal), 128, bwd);
        CAPTURE(k64);
        CAPTURE(measured);
        CAPTURE(model);
        CHECK(std::abs(model / measured - 1) <= 0.10);
      }
  // By hand: forward c = 72, backward c = 36.
  CHECK(attention_head_dim_factor(64, false) == doctest::Approx((64.0 / 136) / (128.0 / 200)));
  CHECK(attention_head_dim_factor(64, true) == doctest::Approx((64.0 / 100) / (128.0 / 164)));
  CHECK(attention_head_dim_factor(128, false) == 1.0);
  CHECK(attention_head_dim_factor(192, true) == 1.0);
}
