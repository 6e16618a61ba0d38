// Fused attention by shape (attention_shape_factor, docs/hardware.md
// "Attention by shape"): the curve against FlashAttention-3's published
// forward throughput on H100 (kernel-efficiency.md §2.2), the reference
// shape the hardware constants keep their meaning at, the cap at the peak,
// and a flash-attention node's duration in a trace worked out by hand.
#include <doctest/doctest.h>

#include <cmath>
#include <map>

#include "api/api.h"
#include "cost/kernel_cost.h"
#include "job/job.h"

using namespace sc;

namespace {

HardwareProfile h100() {
  Result<HardwareProfile> hw = hardware_preset("h100");
  REQUIRE(hw.ok());
  return *hw;
}

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
  CHECK(attention_shape_factor(hw, 4096, 64, true) == doctest::Approx(1.0));  // head dims below 128: 128's curve
  // 256 keys (cp 16 ring steps of a 8k causal sequence): (256 / 494) / (4096 / 4334).
  CHECK(attention_shape_factor(hw, 256, 128, false) == doctest::Approx((256.0 / 494) / (4096.0 / 4334)));
  // Never above the peak: with a 0.99 constant the factor stops at 1/0.99.
  hw.attention_efficiency = 0.99;
  CHECK(attention_shape_factor(hw, 1e9, 128, false) == doctest::Approx(1 / 0.99));
}

TEST_CASE("attention by shape: a flash-attention node's duration in the trace, by hand") {
  // 1 layer, h 4096, 32 heads of 128, seq 2048, 2 sequences, causal: each
  // query visits 1024 keys on average.
  Result<Job> j = parse_job(R"({"model": {"num_layers": 1, "hidden": 4096, "num_heads": 32, "vocab": 1000,
      "flash_attention": true}, "training": {"seq_len": 2048, "micro_batch_size": 2, "global_batch_size": 2},
      "hardware": "h100"})");
  REQUIRE(j.ok());
  Result<Generator> gen = Generator::create(*j);
  REQUIRE(gen.ok());
  std::map<std::string, TraceNode> nodes;
  const RankTrace trace = gen->rank_trace(0).value();
  for (const TraceNode& n : trace.nodes) nodes[n.name] = n;
  REQUIRE(nodes.count("mb0.fwd.L0.attn.flash"));
  // FLOPs: 2 x b x a x s x (s/2) x (d + d).
  const double flops = 2.0 * 2 * 32 * 2048 * 1024 * 256;
  const double factor = (1024.0 / (1024 + 238)) / (4096.0 / 4334);
  const double compute_us = flops / (989.5e12 * 0.75 * factor) * 1e6;  // 107.9 µs
  // Its bytes (q, k, v, output and log-sum-exp, ~168 MB) take ~56 µs: compute bound.
  CHECK(nodes["mb0.fwd.L0.attn.flash"].duration_micros == static_cast<uint64_t>(std::llround(compute_us)));
}
