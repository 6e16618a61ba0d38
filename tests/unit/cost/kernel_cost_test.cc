// The kernel cost model (core/cost): GEMM dims from the bound shapes, tile
// and wave quantisation, memory-bound kernels, Megatron's fusions, the
// launch floor, and the hardware fields that select and tune it. Expected
// values are derived by hand from the formulas in docs/hardware.md.
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <regex>
#include <string>
#include <tuple>
#include <vector>

#include "api/api.h"
#include "api/state.h"
#include "base/json_fields.h"
#include "cost/kernel_cost.h"
#include "job/job.h"
#include "../test_jobs.h"

using namespace sc;

namespace {

Job gpt_layer(const std::string& hardware) {
  // 1 layer, h 1024, 16 heads (d 64), f 4096, V 1000, tp 2, b 2, s 512.
  Result<Job> j = parse_job(R"({"model": {"num_layers": 1, "hidden": 1024, "num_heads": 16, "vocab": 1000},
      "parallel": {"tp": 2}, "training": {"seq_len": 512, "micro_batch_size": 2, "global_batch_size": 2},
      "hardware": )" + hardware + "}");
  REQUIRE(j.ok());
  return *j;
}

const Op& op_named(const Graph& g, const std::string& name) {
  for (const Op& o : g.ops)
    if (o.name == name) return o;
  FAIL("no op " << name);
  return g.ops[0];
}

std::map<std::string, TraceNode> nodes_by_name(const RankTrace& t) {
  std::map<std::string, TraceNode> m;
  for (const TraceNode& n : t.nodes) m[n.name] = n;
  return m;
}

HardwareProfile a100() { return *hardware_preset("a100"); }

}  // namespace

TEST_CASE("kernel cost: GEMM dims of forward, dgrad, wgrad and attention BMMs from the bound shapes") {
  Result<Generator> gen = Generator::create(gpt_layer(R"("a100")"));
  REQUIRE(gen.ok());
  const GeneratorState& s = GeneratorAccess::state(*gen);
  const Graph& g = s.graph_of(0);
  const int64_t b = 2, sq = 512, h = 1024, f = 4096, tp = 2, a = 16, d = 64;
  GemmShape fc1 = *gemm_shape(g, op_named(g, "L0.mlp.fc1"), s.bind);
  CHECK(fc1.batch == 1);
  CHECK(fc1.m == b * sq);
  CHECK(fc1.n == f / tp);
  CHECK(fc1.k == h);
  GemmShape dgrad = *gemm_shape(g, op_named(g, "L0.mlp.fc1.dgrad"), s.bind);
  CHECK(dgrad.m == b * sq);
  CHECK(dgrad.n == h);
  CHECK(dgrad.k == f / tp);
  // Weight gradient: the tokens are the contracted dim.
  GemmShape wgrad = *gemm_shape(g, op_named(g, "L0.mlp.fc1.wgrad"), s.bind);
  CHECK(wgrad.k == b * sq);
  CHECK(wgrad.m * wgrad.n == h * f / tp);
  // Unfused attention: QK^T is (b * a/tp) batched s x s x d products.
  GemmShape qk = *gemm_shape(g, op_named(g, "L0.attn.qk"), s.bind);
  CHECK(qk.batch == b * a / tp);
  CHECK(qk.m == sq);
  CHECK(qk.n == sq);
  CHECK(qk.k == d);
  GemmShape av = *gemm_shape(g, op_named(g, "L0.attn.av"), s.bind);
  CHECK(av.batch == b * a / tp);
  CHECK(av.m == sq);
  CHECK(av.n == d);
  CHECK(av.k == sq);
}

TEST_CASE("kernel cost: tile and wave quantisation on an A100 (DU-09799 section 3)") {
  HardwareProfile hw = a100();
  const double rate = 312e12 * 0.80;  // gemm_efficiency of the a100 preset (docs/hardware.md)
  auto gemm = [&](int64_t m, int64_t n, int64_t k) {
    const double flops = 2.0 * m * n * k;
    return gemm_micros(hw, DType::kBF16, {1, m, n, k}, flops, 2.0 * (m * k + k * n + m * n));
  };
  // The guide's example: 1792 x 1792 outputs are 7 x 14 = 98 tiles of
  // 256 x 128, one wave of 108 SMs; a tile's time is 2*256*128*K at the
  // per-SM rate.
  const int64_t k = 4096;
  const double tile = 2.0 * 256 * 128 * k / (rate / 108) * 1e6;
  CHECK(gemm(1792, 1792, k) == doctest::Approx(tile));
  // One more row and column: 8 x 15 = 120 tiles, two waves: twice the time
  // for 0.1% more work (128 x 128 tiles, 15 x 15 = 225 in three waves at
  // 3/4 of the rate, tie; 64 x 128: 435 tiles, 5 waves at half: 2.5x).
  CHECK(gemm(1793, 1793, k) == doctest::Approx(2 * tile));
  // A large square GEMM: 8192^2 outputs are 32 x 64 = 2048 tiles, 19 waves of
  // 108 (2052 slots): within 0.2% of the ceiling.
  const double big = gemm(8192, 8192, 8192);
  CHECK(big == doctest::Approx(19.0 * 2 * 256 * 128 * 8192 / (rate / 108) * 1e6));
  CHECK(2.0 * 8192 * 8192 * 8192 / (big * 1e-6) == doctest::Approx(rate * 2048.0 / 2052.0));
  // Skinny: 8192 x 128 outputs are 32 tiles of 256 x 128 (one wave on 32
  // of the 108 SMs) or 64 tiles of 128 x 128 at 3/4 of the per-SM rate
  // (intensity 64 vs 85.3): the latter wins, 48/108 of the ceiling.
  const double skinny = gemm(8192, 128, 8192);
  CHECK(2.0 * 8192 * 128 * 8192 / (skinny * 1e-6) == doctest::Approx(rate * 64.0 * 0.75 / 108.0));
  // Short K is memory-bound: 8192 x 8192 x 16 moves the 128 MiB output.
  const double shortk = gemm(8192, 8192, 16);
  CHECK(shortk == doctest::Approx(2.0 * (8192.0 * 16 * 2 + 8192.0 * 8192) / (2039e9 * 0.90) * 1e6));
  // A ZeRO shard of the same shape: time scales with the op's own FLOPs.
  CHECK(gemm_micros(hw, DType::kBF16, {1, 1792, 1792, k}, 2.0 * 1792 * 1792 * k / 4, 0) ==
        doctest::Approx(tile / 4));
}

TEST_CASE("kernel cost: skinny GEMMs (serving) tend to the weight-streaming bandwidth bound") {
  // docs/hardware.md, "Skinny GEMMs": with the small-M kernels (serving
  // iterations) a GEMM of at most 256 rows pads them to 8, not to a
  // 64-row tile, and splits K over SMs its few tiles leave idle. A100:
  // 249.6 TFLOP/s at gemm_efficiency 0.80, 108 SMs, 2039 GB/s at 0.90.
  HardwareProfile hw = a100();
  const double per_sm = 312e12 * 0.80 / 108, hbm = 2039e9 * 0.90;
  auto gemm = [&](int64_t m, int64_t n, int64_t k, bool skinny) {
    return gemm_micros(hw, DType::kBF16, {1, m, n, k}, 2.0 * m * n * k, 2.0 * (m * k + k * n + m * n), skinny);
  };
  // A decode step's projection, 8 rows x 8192 x 8192 (Llama-3-70B's o_proj
  // at tp 1, batch 8): its bytes are the 128 MiB weight (plus 2 x 128 KiB
  // of rows), 73.3 us at 1835 GB/s. The tile model pads the 8 rows to a
  // 64 x 128 tile: 64 tiles in one wave at half the per-SM rate (intensity
  // 42.7 vs 85.3), 2 x 64 x 128 x 8192 / (per_sm / 2) = 116.2 us, 1.58x the
  // bandwidth bound. The small-M kernel's 8 x 256 tiles (32 of them, K
  // split 3 ways over 96 SMs, intensity 7.76) take 53.2 us: below the
  // bytes, so the GEMM is bound by streaming its weight.
  const double bytes = 2.0 * (8.0 * 8192 + 8192.0 * 8192 + 8.0 * 8192);
  CHECK(gemm(8, 8192, 8192, true) == doctest::Approx(bytes / hbm * 1e6));
  CHECK(gemm(8, 8192, 8192, false) == doctest::Approx(2.0 * 64 * 128 * 8192 / (per_sm * 0.5) * 1e6));
  // One row: the same weight, a little fewer bytes.
  const double one = 2.0 * (8192.0 + 8192.0 * 8192 + 8192.0);
  CHECK(gemm(1, 8192, 8192, true) == doctest::Approx(one / hbm * 1e6));
  // 256 rows x 4096 x 4096 is compute-bound: 256 x 128 tiles (intensity
  // 85.3: the full per-SM rate), 32 of them with K split 3 ways (1366
  // each) on 96 SMs, one wave: 2 x 256 x 128 x 1366 / per_sm = 38.7 us
  // (the bytes take 20.6 us). The tile model's best is 64 tiles of
  // 128 x 128 at 3/4 of the rate: 77.4 us.
  CHECK(gemm(256, 4096, 4096, true) == doctest::Approx(2.0 * 256 * 128 * 1366 / per_sm * 1e6));
  CHECK(gemm(256, 4096, 4096, false) == doctest::Approx(2.0 * 128 * 128 * 4096 / (per_sm * 0.75) * 1e6));
  // Past 256 rows (a training micro-batch's thousands of tokens, a long
  // prompt) nothing changes.
  CHECK(gemm(257, 4096, 4096, true) == gemm(257, 4096, 4096, false));
  CHECK(gemm(4096, 8192, 8192, true) == gemm(4096, 8192, 8192, false));
}

TEST_CASE("kernel cost: the h100's measured skinny-GEMM constants") {
  // docs/hardware.md, "Measured on a GPU": decode GEMMs stream their
  // weight at 0.83 of 3.35 TB/s after 3.0 us.
  Result<HardwareProfile> h100 = hardware_preset("h100");
  REQUIRE(h100.ok());
  auto gemm = [&](const HardwareProfile& hw, DType dt, int64_t m, int64_t n, int64_t k, bool skinny) {
    const double width = dt == DType::kFP8 ? 1.0 : 2.0;
    return gemm_micros(hw, dt, {1, m, n, k}, 2.0 * m * n * k, width * (m * k + k * n + m * n), skinny);
  };
  // One decode row against Llama-3-8B's 4096 x 4096 o_proj: 33.6 MB of
  // weight and rows, 12.07 us at 2.78 TB/s, plus 3.0 us (measured: 13.4 us).
  // Its compute (8 x 256 tiles, K split 8 ways) is 5.2 us: bound by bytes.
  const double bytes = 2.0 * (4096.0 + 4096.0 * 4096 + 4096.0);
  CHECK(gemm(*h100, DType::kBF16, 1, 4096, 4096, true) == doctest::Approx(3.0 + bytes / (3350e9 * 0.83) * 1e6));
  // Outside serving's small-M kernels the HBM fraction is hbm_efficiency
  // and there is no start-up: 1 row x 512 x 16384 is bound by its bytes.
  const double flat = 2.0 * (16384.0 + 16384.0 * 512 + 512.0);
  CHECK(gemm(*h100, DType::kBF16, 1, 512, 16384, false) >= flat / (3350e9 * 0.90) * 1e6);
  CHECK(gemm(*h100, DType::kBF16, 1, 512, 16384, true) == doctest::Approx(3.0 + flat / (3350e9 * 0.83) * 1e6));
  // Past 256 rows the skinny constants do not apply.
  CHECK(gemm(*h100, DType::kBF16, 257, 4096, 4096, true) == gemm(*h100, DType::kBF16, 257, 4096, 4096, false));
}

TEST_CASE("kernel cost: FP8 GEMMs at the measured fp8_gemm_speedup") {
  // docs/hardware.md, "Measured on a GPU": an FP8 GEMM runs 1.87x a BF16
  // GEMM of the same shape on the h100 (1.85 on the h200), not the
  // datasheet's 1979 / 989.5 = 2.
  Result<HardwareProfile> h100 = hardware_preset("h100"), h200 = hardware_preset("h200");
  REQUIRE(h100.ok());
  REQUIRE(h200.ok());
  CHECK(h100->fp8_gemm_speedup == 1.87);
  CHECK(h200->fp8_gemm_speedup == 1.85);
  CHECK(gemm_rate(*h100, DType::kFP8) == doctest::Approx(989.5e12 * 1.87 * 0.60));
  CHECK(gemm_rate(*h100, DType::kBF16) == doctest::Approx(989.5e12 * 0.60));
  // A compute-bound 8192^3 GEMM (2048 tiles of 256 x 128 in 16 waves of
  // 132 SMs in both dtypes; bytes far below): FP8 time = BF16 time / 1.87.
  auto gemm = [](const HardwareProfile& hw, DType dt) {
    const double m = 8192, width = dt == DType::kFP8 ? 1.0 : 2.0;
    return gemm_micros(hw, dt, {1, 8192, 8192, 8192}, 2.0 * m * m * m, width * 3 * m * m);
  };
  CHECK(gemm(*h100, DType::kBF16) / gemm(*h100, DType::kFP8) == doctest::Approx(1.87));
  CHECK(gemm(*h200, DType::kBF16) / gemm(*h200, DType::kFP8) == doctest::Approx(1.85));
  // Without the measurement (0): the datasheet ratio of the FP8 peak.
  HardwareProfile unmeasured = *h100;
  unmeasured.fp8_gemm_speedup = 0;
  CHECK(gemm(unmeasured, DType::kBF16) / gemm(unmeasured, DType::kFP8) == doctest::Approx(1979.0 / 989.5));
  // A device without FP8 tensor cores runs "FP8" at its BF16 peak, whatever the speedup says.
  unmeasured.fp8_gemm_speedup = 1.87;
  unmeasured.peak_flops_fp8 = 0;
  CHECK(gemm(unmeasured, DType::kBF16) / gemm(unmeasured, DType::kFP8) == doctest::Approx(1.0));
  // BF16 GEMMs do not move.
  HardwareProfile other = *h100;
  other.fp8_gemm_speedup = 1.5;
  CHECK(gemm(other, DType::kBF16) == gemm(*h100, DType::kBF16));
  CHECK(gemm(*h100, DType::kBF16) / gemm(other, DType::kFP8) == doctest::Approx(1.5));
}

TEST_CASE("kernel cost: memory-bound and attention kernels") {
  HardwareProfile hw = a100();
  CHECK(memory_micros(hw, 0, 1e9) == doctest::Approx(1e9 / (2039e9 * 0.90) * 1e6));
  // FP32 vector math dominates only when it outweighs the bytes.
  CHECK(memory_micros(hw, 1e12, 1e3) == doctest::Approx(1e12 / 19.5e12 * 1e6));
  CHECK(attention_micros(hw, DType::kBF16, 1e12, 1e6, false) == doctest::Approx(1e12 / (312e12 * 0.73) * 1e6));
  // H100: FlashAttention-3's forward (740 of 989.5 TFLOP/s) and its slower
  // backward (561 TFLOP/s at head dim 128, 16k tokens: 0.57).
  Result<HardwareProfile> h100 = hardware_preset("h100");
  REQUIRE(h100.ok());
  CHECK(attention_micros(*h100, DType::kBF16, 1e12, 1e6, false) == doctest::Approx(1e12 / (989.5e12 * 0.75) * 1e6));
  CHECK(attention_micros(*h100, DType::kBF16, 1e12, 1e6, true) == doctest::Approx(1e12 / (989.5e12 * 0.57) * 1e6));
  // The job's efficiencies scale the kernel rates.
  hw.memory_efficiency = 0.5;
  CHECK(memory_micros(hw, 0, 1e9) == doctest::Approx(1e9 / (2039e9 * 0.90 * 0.5) * 1e6));
}

TEST_CASE("kernel cost: the measured small-kernel floor and decode attention's start-up") {
  // docs/hardware.md, "Measured on a GPU". The h100's start-up is the
  // batch-1 row of h100-sxm-2026-11-27-skinny-fp8.json's `decode`: 10.28 µs
  // for a 16,777,216-byte cache, whose bytes at 0.9 x 3.35 TB/s take
  // 16,777,216 / 3.015e12 = 5.56 µs: 4.7 µs over. Its floor is the median
  // of the four batch-1 rows of h100-sxm-2026-11-27-decode-step.json, per
  // small kernel (3.14, 3.22, 3.78, 3.96 µs): 3.5. The h200's start-up is
  // its own batch-1 row: 9.43 - 16,777,216 / (0.9 x 4.8e12) * 1e6 = 5.5.
  // Its floor comes from h200-2026-11-28-fp8-decode.json's two
  // one-sequence Llama-3.1-70B layers (derived below from the file). The
  // a100's and b200's floors stay 2.4, with no start-up.
  Result<HardwareProfile> h100 = hardware_preset("h100"), h200 = hardware_preset("h200");
  Result<HardwareProfile> a100p = hardware_preset("a100"), b200 = hardware_preset("b200");
  REQUIRE(h100.ok());
  REQUIRE(h200.ok());
  REQUIRE(a100p.ok());
  REQUIRE(b200.ok());
  CHECK(h100->kernel_floor_micros == 3.5);
  CHECK(h100->attention_startup_micros == 4.7);
  CHECK(h200->attention_startup_micros == 5.5);
  {
    // The h200's floor: each one-sequence layer (bf16 and FP8 linears) less
    // its four GEMMs at one row and its decode attention at 1 x 1,500, as
    // the same file times them alone, over its other kernels (bf16: two
    // norms, two scaled copies, two cache writes, two adds, SiLU, the
    // multiply = 10; FP8: those and four activation casts = 14): 4.66 and
    // 3.18 µs; their median (the mean of two), 3.92, rounded: 3.9.
    const jsonf::Json j = testing::source_json("tests/bench/gpu/results/h200-2026-11-28-fp8-decode.json");
    double attention = 0;
    for (const jsonf::Json& r : j["decode_attn"])
      if (r["model"].get<std::string>() == "llama3-70b tp1" && r["batch"].get<int>() == 1) attention = r["us"].get<double>();
    std::vector<double> per;
    for (const auto& [weights, kind, small] : {std::tuple{"bf16", "bf16", 10}, std::tuple{"fp8", "fp8_fast", 14}}) {
      double layer = 0, gemms = 0;
      for (const jsonf::Json& r : j["step"])
        if (r["weights"].get<std::string>() == weights && r["batch"].get<int>() == 1 && r["attention"].get<bool>())
          layer = r["per_layer_us"].get<double>();
      for (const jsonf::Json& r : j["gemm"])
        if (r["model"].get<std::string>() == "llama3-70b" && r["tp"].get<int>() == 1 && r["m"].get<int>() == 1 &&
            r["kind"].get<std::string>() == kind && r["gemm"].get<std::string>() != "lm_head")
          gemms += r["us"].get<double>();
      REQUIRE(layer > 0);
      REQUIRE(gemms > 0);
      per.push_back((layer - gemms - attention) / small);
    }
    REQUIRE(attention > 0);
    CHECK(per[0] == doctest::Approx(4.66).epsilon(0.005));
    CHECK(per[1] == doctest::Approx(3.18).epsilon(0.005));
    CHECK(h200->kernel_floor_micros == doctest::Approx(std::round((per[0] + per[1]) / 2 * 10) / 10));
  }
  CHECK(a100p->kernel_floor_micros == 2.4);
  CHECK(a100p->attention_startup_micros == 0);
  CHECK(b200->kernel_floor_micros == 2.4);
  CHECK(b200->attention_startup_micros == 0);
  // Decode attention, one query row per sequence: the batch-1 row itself
  // (32 query heads of 128 over 4,096 positions: 4 x 32 x 128 x 4,096 =
  // 67 MFLOP, 0.09 µs at 0.75 of peak, far under the bytes).
  const double kv = 16777216, fl = 4.0 * 32 * 128 * 4096;
  CHECK(attention_micros(*h100, DType::kBF16, fl, kv, false) == doctest::Approx(4.7 + kv / 3.015e12 * 1e6));
  CHECK(attention_micros(*h100, DType::kBF16, fl, kv, false) == doctest::Approx(10.26).epsilon(0.001));
  // Checked on the file's other rows (not fitted): batch 8 x 4,096
  // (134,217,728 bytes) 4.7 + 44.52 = 49.2 µs against 51.6 measured;
  // batch 128 x 1,024 (536,870,912 bytes) 4.7 + 178.07 = 182.8 against 180.6.
  CHECK(attention_micros(*h100, DType::kBF16, 8 * fl, 8 * kv, false) == doctest::Approx(49.2).epsilon(0.001));
  CHECK(attention_micros(*h100, DType::kBF16, 32 * fl, 32 * kv, false) == doctest::Approx(182.8).epsilon(0.001));
  // A compute-bound (prefill, training) attention kernel keeps its FLOPs'
  // time: 1e12 FLOPs at 0.75 of 989.5 TFLOP/s; its 1 MB would take 0.33 µs.
  CHECK(attention_micros(*h100, DType::kBF16, 1e12, 1e6, false) == doctest::Approx(1e12 / (989.5e12 * 0.75) * 1e6));
  // A profile without it streams the cache alone; 0 in a job turns it off.
  CHECK(attention_micros(*a100p, DType::kBF16, fl, kv, false) == doctest::Approx(kv / (2039e9 * 0.9) * 1e6));
  Result<Job> off = parse_job(R"({"model": "gpt3-1.7b", "hardware": {"preset": "h100", "attention_startup_micros": 0}})");
  REQUIRE(off.ok());
  CHECK(attention_micros(off->hardware, DType::kBF16, fl, kv, false) == doctest::Approx(kv / 3.015e12 * 1e6));
}

TEST_CASE("kernel cost: Megatron's fused kernels read and write their bytes once") {
  Result<Generator> gen = Generator::create(gpt_layer(R"("a100")"));
  REQUIRE(gen.ok());
  const GeneratorState& s = GeneratorAccess::state(*gen);
  const Graph& g = s.graph_of(0);
  FusionPlan p = plan_fusion(g);
  auto head = [&](const std::string& n) { return g.ops[p.head[op_named(g, n).id]].name; };
  CHECK(head("L0.mlp.gelu") == "L0.mlp.fc1.bias_add");
  CHECK(head("L0.attn.dropout") == "L0.attn.proj.bias_add");
  CHECK(head("L0.attn.residual") == "L0.attn.proj.bias_add");
  CHECK(head("L0.mlp.residual") == "L0.mlp.fc2.bias_add");
  // Not fused in Megatron: embedding sum and dropout, the softmax and the
  // attention dropout, the QKV bias.
  CHECK(head("embedding.dropout") == "embedding.dropout");
  CHECK(head("L0.attn.softmax_dropout") == "L0.attn.softmax_dropout");
  CHECK(head("L0.attn.qkv.bias_add") == "L0.attn.qkv.bias_add");

  // Bias + dropout + residual add: reads y (b s h), the bias (h) and the
  // residual (b s h), writes the output (b s h) and the 1-byte mask.
  const int64_t bsh = 2 * 512 * 1024;
  auto nodes = nodes_by_name(gen->rank_trace(0).value());
  const uint64_t bytes = nodes["mb0.fwd.L0.attn.proj.bias_add"].tensor_size +
                         nodes["mb0.fwd.L0.attn.dropout"].tensor_size +
                         nodes["mb0.fwd.L0.attn.residual"].tensor_size;
  CHECK(bytes == static_cast<uint64_t>(3 * bsh * 2 + 1024 * 2 + bsh * 1));
  // Bias + GeLU: reads fc1's output (b s f/tp) and the bias, writes GeLU's.
  const int64_t bsf = 2 * 512 * 4096 / 2;
  CHECK(nodes["mb0.fwd.L0.mlp.fc1.bias_add"].tensor_size + nodes["mb0.fwd.L0.mlp.gelu"].tensor_size ==
        static_cast<uint64_t>(2 * bsf * 2 + 2048 * 2));
  // The roofline counts each op's bytes on its own.
  Result<Generator> roof = Generator::create(gpt_layer(R"({"preset": "a100", "cost_model": "roofline"})"));
  REQUIRE(roof.ok());
  auto rn = nodes_by_name(roof->rank_trace(0).value());
  CHECK(rn["mb0.fwd.L0.attn.residual"].tensor_size == static_cast<uint64_t>(3 * bsh * 2));
}

TEST_CASE("kernel cost: durations in the trace, the launch floor and the roofline option") {
  Result<Generator> gen = Generator::create(gpt_layer(R"("a100")"));
  REQUIRE(gen.ok());
  auto nodes = nodes_by_name(gen->rank_trace(0).value());
  // fc1: 1024 x 2048 x 1024 → 4 x 16 = 64 tiles of 256 x 128 (or 8 x 8 of
  // 128 x 256): one wave of 108, one tile's time.
  const double tile = 2.0 * 256 * 128 * 1024 / (312e12 * 0.80 / 108) * 1e6;
  CHECK(nodes["mb0.fwd.L0.mlp.fc1"].duration_micros == static_cast<uint64_t>(std::llround(tile)));
  // The loss statistics of 1000/2 vocabulary columns are tiny: the floor
  // (2.4 µs, rounded to 2) sets their time.
  CHECK(nodes["mb0.fwd.loss"].duration_micros == 2);
  // A fused group pays the floor once: its first op carries it.
  Result<Generator> tiny = Generator::create(*parse_job(
      R"({"model": {"num_layers": 1, "hidden": 64, "num_heads": 4, "vocab": 100},
          "training": {"seq_len": 16, "micro_batch_size": 1}, "hardware": {"preset": "a100", "kernel_floor_micros": 10}})"));
  REQUIRE(tiny.ok());
  auto tn = nodes_by_name(tiny->rank_trace(0).value());
  CHECK(tn["mb0.fwd.L0.attn.proj.bias_add"].duration_micros == 10);
  CHECK(tn["mb0.fwd.L0.attn.dropout"].duration_micros == 1);  // 1 µs: the trace's minimum
  CHECK(tn["mb0.fwd.L0.attn.residual"].duration_micros == 1);
  CHECK(tn["mb0.fwd.L0.ln1"].duration_micros == 10);
  // The roofline option keeps the old durations: fc1 at the datasheet peak.
  Result<Generator> roof = Generator::create(gpt_layer(R"({"preset": "a100", "cost_model": "roofline"})"));
  REQUIRE(roof.ok());
  auto rn = nodes_by_name(roof->rank_trace(0).value());
  CHECK(rn["mb0.fwd.L0.mlp.fc1"].duration_micros ==
        static_cast<uint64_t>(std::llround(2.0 * 1024 * 2048 * 1024 / 312e12 * 1e6)));
}

TEST_CASE("kernel cost: hardware fields name themselves when wrong") {
  struct Bad { const char* hw; const char* path; };
  for (Bad c : {Bad{R"({"preset": "h100", "cost_model": "magic"})", "hardware.cost_model"},
                Bad{R"({"preset": "h100", "gemm_efficiency": 0})", "hardware.gemm_efficiency"},
                Bad{R"({"preset": "h100", "attention_efficiency": 1.5})", "hardware.attention_efficiency"},
                Bad{R"({"preset": "h100", "attention_bwd_efficiency": 0.001})", "hardware.attention_bwd_efficiency"},
                Bad{R"({"preset": "h100", "hbm_efficiency": -1})", "hardware.hbm_efficiency"},
                Bad{R"({"preset": "h100", "kernel_floor_micros": 1e9})", "hardware.kernel_floor_micros"},
                Bad{R"({"preset": "h100", "sm_count": -1})", "hardware.sm_count"},
                Bad{R"({"preset": "h100", "fp8_gemm_speedup": 0.1})", "hardware.fp8_gemm_speedup"},
                Bad{R"({"preset": "h100", "skinny_hbm_efficiency": 1.2})", "hardware.skinny_hbm_efficiency"},
                Bad{R"({"preset": "h100", "skinny_gemm_micros": -3})", "hardware.skinny_gemm_micros"},
                Bad{R"({"preset": "h100", "attention_startup_micros": -1})", "hardware.attention_startup_micros"}}) {
    Result<Job> j = parse_job(std::string(R"({"model": "gpt3-1.7b", "hardware": )") + c.hw + "}");
    REQUIRE(!j.ok());
    CHECK(j.error().path == c.path);
  }
  Result<Job> ok = parse_job(R"({"model": "gpt3-1.7b", "hardware": {"preset": "h100", "gemm_efficiency": 0.7,
      "sm_count": 100, "cost_model": "roofline"}})");
  REQUIRE(ok.ok());
  CHECK(ok->hardware.gemm_efficiency == 0.7);
  CHECK(ok->hardware.sm_count == 100);
  CHECK(ok->hardware.cost_model == HardwareProfile::CostModel::kRoofline);
  // The canonical JSON carries them and parses back to the same profile.
  Result<Job> back = parse_job(job_to_canonical_json(*ok));
  REQUIRE(back.ok());
  CHECK(back->hardware.gemm_efficiency == 0.7);
  CHECK(back->hardware.sm_count == 100);
  CHECK(back->hardware.cost_model == HardwareProfile::CostModel::kRoofline);
}

namespace {

// The routed experts' GEMMs measured on an H100 (tests/bench/gpu/results/
// h100-sxm-2026-11-27-moe-gemm.json, docs/kernel-measurements.md): per
// layer (one ep rank's E local experts, M tokens each), the six GEMMs
// (fc1, fc2 x fprop, dgrad, wgrad) as E GEMMs over 4 streams.
struct ExpertLayer {
  std::string name;
  int64_t experts = 0;
  std::vector<GemmShape> gemms;
  double measured_us = 0;  // the six GEMMs, 4 streams
};
std::vector<ExpertLayer> measured_expert_layers() {
  const jsonf::Json j = testing::source_json("tests/bench/gpu/results/h100-sxm-2026-11-27-moe-gemm.json");
  std::vector<ExpertLayer> out;
  for (const jsonf::Json& r : j["experts"]) {
    const std::string name = r["layer"].get<std::string>();
    if (out.empty() || out.back().name != name) out.push_back(ExpertLayer{name, r["experts"].get<int64_t>(), {}, 0});
    GemmShape s;
    s.batch = r["experts"].get<int64_t>();
    s.m = r["m"].get<int64_t>();
    s.n = r["n"].get<int64_t>();
    s.k = r["k"].get<int64_t>();
    out.back().gemms.push_back(s);
    const double flops = 2.0 * static_cast<double>(s.batch * s.m * s.n * s.k);
    out.back().measured_us += flops / (r["streams4_tflops"].get<double>() * 1e12) * 1e6;
  }
  return out;
}

}  // namespace

TEST_CASE("kernel cost: routed experts' GEMM launches against the H100 measurements") {
  // The model's time of each measured layer (the six GEMMs, tiles of all
  // experts timed together, plus the launches after the first) over the
  // measured one, relative to the same ratio of the 4-expert Qwen3 235B
  // layer (4,096 tokens each: launches 2% of its time): within 8% for
  // every layer (they come out 0.94-1.06). Without the launches the 16
  // experts of 512 tokens came out 45% too fast relative to it, the 16 of
  // 2,048 12% (the profile's efficiency is a whole run's, so only ratios
  // between layers are checked).
  const HardwareProfile hw = *hardware_preset("h100");
  const std::vector<ExpertLayer> layers = measured_expert_layers();
  REQUIRE(layers.size() == 9);
  auto model = [&](const ExpertLayer& l, bool launches) {
    double us = 0;
    for (const GemmShape& s : l.gemms) {
      const double flops = 2.0 * static_cast<double>(s.batch * s.m * s.n * s.k);
      us += gemm_micros(hw, DType::kBF16, s, flops, 0) + (launches ? expert_gemm_launch_micros(hw, s.batch) : 0);
    }
    return us;
  };
  const ExpertLayer* ref = nullptr;
  for (const ExpertLayer& l : layers)
    if (l.name == "qwen3-235b-a22b ep32") ref = &l;
  REQUIRE(ref);
  const double ref_ratio = model(*ref, true) / ref->measured_us;
  for (const ExpertLayer& l : layers) {
    const double r = model(l, true) / l.measured_us / ref_ratio;
    CAPTURE(l.name);
    CAPTURE(r);
    CHECK(std::abs(r - 1) <= 0.08);
  }
  // By hand: 16 experts, 15 launches after the first at the H100's 3.5 us.
  CHECK(expert_gemm_launch_micros(hw, 16) == doctest::Approx(15 * 3.5));
  CHECK(expert_gemm_launch_micros(hw, 1) == 0.0);
}

TEST_CASE("kernel cost: the expert launches are a training job's, on its routed experts' GEMMs only") {
  // The same MoE model with the h100's launch floor raised by 10 µs: in a
  // training job at ep 1 (8 local experts) each routed-expert GEMM node
  // (forward, dgrad, wgrad) grows by 7 x 10 µs, the other GEMMs not at all
  // (all far above the floor); in a serving job's prefill (one fused MoE
  // kernel, docs/hardware.md) and under the roofline cost model by nothing.
  auto job = [](const std::string& mode, const std::string& hw) {
    const std::string model = R"("model": {"num_layers": 1, "hidden": 2048, "num_heads": 16, "vocab": 1024,
        "ffn_hidden": 4096, "mlp": "swiglu", "num_experts": 8, "experts_per_token": 2, "moe_ffn_hidden": 2048,
        "max_positions": 8192})";
    const std::string tail = mode == "training"
                                 ? R"("training": {"seq_len": 4096, "micro_batch_size": 1, "global_batch_size": 1})"
                                 : R"("mode": "inference", "serving": {"prompt_tokens": 4096, "output_tokens": 2, "concurrency": 4})";
    Result<Job> j = parse_job("{" + model + ", " + tail + R"(, "hardware": )" + hw + "}");
    REQUIRE_MESSAGE(j.ok(), j.error().to_string());
    Result<Generator> g = Generator::create(*j);
    REQUIRE_MESSAGE(g.ok(), g.error().to_string());
    const Generator* p = mode == "training" ? &*g : g->phase("prefill");
    REQUIRE(p != nullptr);
    return nodes_by_name(p->rank_trace(0).value());
  };
  const std::string lo = R"({"preset": "h100", "kernel_floor_micros": 3.5})",
                    hi = R"({"preset": "h100", "kernel_floor_micros": 13.5})";
  const std::regex expert(R"(moe\.experts\.fc[12](\.dgrad|\.wgrad)?$)"), dense(R"(attn\.(qkv|proj)(\.dgrad|\.wgrad)?$)");
  auto diffs = [&](const std::map<std::string, TraceNode>& a, const std::map<std::string, TraceNode>& b,
                   const std::regex& re) {
    std::vector<double> d;
    for (const auto& [name, n] : a)
      if (std::regex_search(name, re)) {
        REQUIRE(b.count(name));
        CHECK(n.duration_micros > 40);  // far above either floor
        d.push_back(static_cast<double>(b.at(name).duration_micros) - static_cast<double>(n.duration_micros));
      }
    return d;
  };
  const auto t_lo = job("training", lo), t_hi = job("training", hi);
  const std::vector<double> te = diffs(t_lo, t_hi, expert), td = diffs(t_lo, t_hi, dense);
  CHECK(te.size() == 6);  // fc1, fc2 x forward, dgrad, wgrad
  for (double d : te) CHECK(std::abs(d - 7 * 10) <= 1);  // whole µs each side
  for (double d : td) CHECK(d == 0);
  const auto s_lo = job("inference", lo), s_hi = job("inference", hi);
  const std::vector<double> se = diffs(s_lo, s_hi, expert);
  CHECK(se.size() == 2);  // forward only
  for (double d : se) CHECK(d == 0);
  const auto r_lo = job("training", R"({"preset": "h100", "cost_model": "roofline", "kernel_floor_micros": 3.5})");
  const auto r_hi = job("training", R"({"preset": "h100", "cost_model": "roofline", "kernel_floor_micros": 13.5})");
  for (double d : diffs(r_lo, r_hi, expert)) CHECK(d == 0);
}
