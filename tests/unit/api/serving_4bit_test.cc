// 4-bit weights in serving (docs/inference.md, "4-bit weights"): int4
// (AWQ/GPTQ group 128, W4A16) on any GPU, nvfp4 / mxfp4 (W4A4) only where
// the profile has FP4 tensor cores. Weights per rank, a decode step's
// streamed bytes and a prefill GEMM's rate, every expected number derived
// by hand from Llama-3-8B's config and the datasheets.
#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "api/api.h"
#include "api/state.h"
#include "hw/hardware.h"
#include "job/job.h"
#include "../test_jobs.h"

using namespace sc;
using json = nlohmann::json;

namespace {

// Llama-3-8B (meta-llama/Meta-Llama-3-8B config.json): 32 layers, hidden
// 4096, 32 heads and 8 KV heads of 128, SwiGLU width 14336, vocab 128256,
// untied embedding and output head, RMSNorm.
constexpr int64_t kH = 4096, kL = 32, kF = 14336, kV = 128256;
constexpr int64_t kQkv = kH * (32 + 2 * 8) * 128, kProj = kH * kH, kFc1 = kH * 2 * kF, kFc2 = kF * kH;
constexpr int64_t kLinear = kL * (kQkv + kProj + kFc1 + kFc2);  // the matrices a 4-bit format quantizes
constexpr int64_t kBf16Rest = 2 * kV * kH * 2 + (2 * kL + 1) * kH * 2;  // embedding, output head, norms

std::string llama8b(const std::string& hw, int64_t tp, const std::string& weights, int64_t prompt, int64_t output,
                    int64_t concurrency) {
  return R"({"mode": "inference", "model": "llama3-8b", "hardware": ")" + hw + R"(", "parallel": {"tp": )" +
         std::to_string(tp) + R"(}, "serving": {"prompt_tokens": )" + std::to_string(prompt) +
         R"(, "output_tokens": )" + std::to_string(output) + R"(, "concurrency": )" + std::to_string(concurrency) +
         R"(, "weights_dtype": ")" + weights + R"("}})";
}

json inference_of(const Generator& g) { return json::parse(g.summary_json())["inference"]; }

const TraceNode* node_ending(const RankTrace& t, const std::string& suffix) {
  for (const TraceNode& n : t.nodes)
    if (n.name.size() >= suffix.size() && n.name.compare(n.name.size() - suffix.size(), suffix.size(), suffix) == 0)
      return &n;
  return nullptr;
}

}  // namespace

TEST_CASE("serving 4-bit: Llama-3-8B weights per rank at int4 g128, nvfp4 and mxfp4, by hand") {
  static_assert(kLinear == 6979321856);
  // tp 2: every matrix halves (the embedding and head over the vocabulary),
  // the norms are replicated. Per rank each matrix keeps a multiple of 256
  // elements, so the groups divide evenly.
  const int64_t lin = kLinear / 2, rest = (2 * kV * kH * 2) / 2 + (2 * kL + 1) * kH * 2;
  // int4: 4 bits a value, and per 128 values an fp16 scale and a 4-bit
  // zero point (20 bits): 64 + 2.5 = 66.5 bytes per 128.
  const int64_t int4 = lin / 2 + lin / 128 * 20 / 8 + rest;
  CHECK(int4 == 2864193536);
  Generator g = testing::generator_from_json(llama8b("h100", 2, "int4", 1000, 24, 0));
  json inf = inference_of(g);
  CHECK(inf["weights_bytes_per_rank"].get<int64_t>() == int4);
  // The fit follows: as many 1,024-token sequences as the rest holds.
  const json& mem = inf["memory_bytes_per_rank"];
  CHECK(mem["weights"].get<int64_t>() == int4);
  // The stage summary's weights are the same stored bytes, not parameters x 1 byte.
  CHECK(json::parse(g.summary_json())["stages"][0]["memory_bytes"]["weights"].get<int64_t>() == int4);
  const int64_t seq_rank = 1024 * (kL * 2 * 8 * 128 * 2 / 2);  // 64 pages of 16, kv heads over tp 2
  const int64_t n = inf["max_concurrent_sequences"].get<int64_t>();
  const int64_t left = mem["capacity"].get<int64_t>() - int4 - mem["activations"].get<int64_t>();
  CHECK(n == left / seq_rank);
  // bf16 for comparison: the matrices at 2 bytes.
  json bf16 = inference_of(testing::generator_from_json(llama8b("h100", 2, "bf16", 1000, 24, 0)));
  CHECK(bf16["weights_bytes_per_rank"].get<int64_t>() == lin * 2 + rest);
  CHECK(bf16["max_concurrent_sequences"].get<int64_t>() < n);

  // nvfp4 on a B200: 4 bits a value, an fp8 scale per 16 values and an
  // fp32 scale per tensor (4 matrices per layer: qkv, proj, fc1, fc2).
  json nv = inference_of(testing::generator_from_json(llama8b("b200", 2, "nvfp4", 1000, 24, 0)));
  CHECK(nv["weights_bytes_per_rank"].get<int64_t>() == lin / 2 + lin / 16 + 4 * 4 * kL + rest);
  // mxfp4: an e8m0 scale per 32 values.
  json mx = inference_of(testing::generator_from_json(llama8b("b200", 2, "mxfp4", 1000, 24, 0)));
  CHECK(mx["weights_bytes_per_rank"].get<int64_t>() == lin / 2 + lin / 32 + rest);
}

TEST_CASE("serving 4-bit: an int4 decode step on an H100 streams the 4-bit matrices (W4A16, bandwidth-bound)") {
  // One sequence of ~150 tokens, tp 1: the step is the weights' streaming.
  Generator g4 = testing::generator_from_json(llama8b("h100", 1, "int4", 100, 100, 1));
  Generator g16 = testing::generator_from_json(llama8b("h100", 1, "bf16", 100, 100, 1));
  // One GEMM: L0's fc2 (14336 -> 4096) reads its int4 matrix (29,360,128 B
  // of values, 458,752 groups x 2.5 B of scales and zeros), one token's
  // 14336 inputs and writes 4096 outputs in bf16, at the h100's measured
  // skinny-GEMM rate: 3.0 us, then 83% of 3.35 TB/s (docs/hardware.md,
  // "Measured on a GPU").
  const RankTrace t4 = g4.rank_trace(0).value();
  const TraceNode* fc2 = node_ending(t4, "L0.mlp.fc2");
  REQUIRE(fc2 != nullptr);
  const int64_t fc2_bytes = kFc2 / 2 + kFc2 / 128 * 5 / 2 + kF * 2 + kH * 2;
  CHECK(fc2_bytes == 30543872);
  CHECK(fc2->tensor_size == static_cast<uint64_t>(fc2_bytes));
  CHECK(fc2->duration_micros == static_cast<uint64_t>(std::llround(3.0 + fc2_bytes / (0.83 * 3350e9) * 1e6)));
  // The whole step: the bf16 step less the bytes the 4-bit matrices no
  // longer stream (2 B a value against 66.5 / 128), at the same 83% of
  // 3.35 TB/s (the start-ups cancel); everything else (attention, norms, embedding, the bf16
  // output head) is the same work in both.
  const json i4 = inference_of(g4), i16 = inference_of(g16);
  const double saved = (2.0 - 66.5 / 128) * static_cast<double>(kLinear) / (0.83 * 3350e9);
  const double t4s = i4["iterations"]["decode"]["seconds"].get<double>();
  const double t16s = i16["iterations"]["decode"]["seconds"].get<double>();
  CHECK(t16s - t4s == doctest::Approx(saved).epsilon(0.02));
  // And never faster than its weights over the bandwidth.
  CHECK(t4s >= i4["weights_bytes_per_rank"].get<double>() / 3350e9);
  CHECK(i4["tpot_seconds"].get<double>() < 0.5 * i16["tpot_seconds"].get<double>());
}

TEST_CASE("serving 4-bit: a B200 nvfp4 prefill GEMM runs at the FP4 rate; int4 at bf16's") {
  // L0's fc1 of a 4096-token prompt, tp 1: M 4096, K 4096, N 2 x 14336.
  // 256 x 128 tiles: 16 x 224 = 3,584 tiles in ceil(3584 / 148) = 25 waves
  // on the B200's 148 SMs, each tile 2 x 256 x 128 x 4096 FLOPs at
  // 1/148 of 0.60 x 9 PFLOP/s (FP4 dense: HGX B200's 144 PFLOPS sparse / 8 / 2).
  const double tile = 2.0 * 256 * 128 * 4096, waves = 25;
  const double fp4_us = waves * tile / (0.60 * 9000e12 / 148) * 1e6;
  auto fc1_micros = [](const std::string& weights) {
    Generator g = testing::generator_from_json(llama8b("b200", 1, weights, 4096, 16, 1));
    const Generator* pre = g.phase("prefill");
    REQUIRE(pre != nullptr);
    const RankTrace t = pre->rank_trace(0).value();
    const TraceNode* fc1 = node_ending(t, "L0.mlp.fc1");
    REQUIRE(fc1 != nullptr);
    return static_cast<double>(fc1->duration_micros);
  };
  const double nv = fc1_micros("nvfp4"), bf = fc1_micros("bf16"), i4 = fc1_micros("int4");
  CHECK(nv == doctest::Approx(fp4_us).epsilon(0.005));  // 187 us
  // bf16 runs the same tiles at 2.25 PFLOP/s: four times as long; int4
  // dequantizes to bf16 in the GEMM and runs at that rate too.
  CHECK(bf == doctest::Approx(4 * fp4_us).epsilon(0.005));
  CHECK(i4 == bf);
}

TEST_CASE("serving 4-bit: fp4 weights refused without FP4 tensor cores; int4 accepted; 4-bit is serving-only") {
  for (const char* hw : {"h100", "h200", "a100"})
    for (const char* w : {"nvfp4", "mxfp4"}) {
      CAPTURE(hw);
      CAPTURE(w);
      Result<Job> j = parse_job(llama8b(hw, 1, w, 100, 10, 1));
      REQUIRE(!j.ok());
      CHECK(j.error().path == "serving.weights_dtype");
      CHECK(j.error().message.find("hardware.peak_flops_fp4 is 0") != std::string::npos);
      CHECK(j.error().message.find(std::string("\"") + hw + "\"") != std::string::npos);
      CHECK(j.error().message.find("int4") != std::string::npos);
    }
  CHECK(parse_job(llama8b("a100", 1, "int4", 100, 10, 1)).ok());
  // A custom profile that states an FP4 rate accepts them.
  Result<Job> custom = parse_job(R"({"mode": "inference", "model": "llama3-8b",
    "hardware": {"preset": "h100", "peak_flops_fp4": 4e15}, "serving": {"weights_dtype": "nvfp4"}})");
  REQUIRE_MESSAGE(custom.ok(), custom.error().message);
  CHECK(custom->hardware.peak_flops_fp4 == 4e15);
  // The canonical job carries the FP4 rate the job computes at, and re-parses to itself.
  const json canon = json::parse(job_to_canonical_json(*custom));
  CHECK(canon["hardware"]["peak_flops_fp4"].get<double>() == 4e15);
  CHECK(canon["serving"]["weights_dtype"] == "nvfp4");
  Result<Job> again = parse_job(canon.dump());
  REQUIRE(again.ok());
  CHECK(json::parse(job_to_canonical_json(*again)) == canon);
  // Jobs that do not compute in FP4 keep their canonical hardware without the field.
  CHECK(!json::parse(job_to_canonical_json(*parse_job(llama8b("b200", 1, "int4", 100, 10, 1))))["hardware"].contains(
      "peak_flops_fp4"));
  // Training refuses the 4-bit formats, naming the field.
  for (const char* w : {"int4", "nvfp4", "mxfp4"}) {
    Result<Job> t = parse_job(std::string(R"({"model": "llama3-8b", "training": {"dtype": ")") + w + "\"}}");
    REQUIRE(!t.ok());
    CHECK(t.error().path == "training.dtype");
    CHECK(t.error().message.find("serving only") != std::string::npos);
  }
  // The KV cache stays bf16 or fp8.
  Result<Job> kv = parse_job(R"({"mode": "inference", "model": "llama3-8b", "serving": {"kv_dtype": "nvfp4"}})");
  REQUIRE(!kv.ok());
  CHECK(kv.error().path == "serving.kv_dtype");
  Result<Job> bad = parse_job(R"({"mode": "inference", "model": "llama3-8b", "serving": {"weights_dtype": "int3"}})");
  REQUIRE(!bad.ok());
  CHECK(bad.error().message.find("int4, nvfp4, mxfp4") != std::string::npos);
}

TEST_CASE("serving 4-bit: only the linear layers' matrices are 4-bit; the B200 profile's FP4 rate") {
  Generator g = testing::generator_from_json(llama8b("b200", 1, "nvfp4", 100, 10, 1));
  CHECK(g.job().hardware.peak_flops_fp4 == 9000e12);  // HGX B200: 144 PFLOPS FP4 sparse / 8 GPUs / 2
  CHECK(hardware_preset("h100")->peak_flops_fp4 == 0);
  CHECK(hardware_preset("a100")->peak_flops_fp4 == 0);
  // qkv, proj, fc1, fc2 in each of the 32 layers; the embedding, the output
  // head and the norms stay bf16.
  int fp4 = 0;
  for (const Tensor& t : GeneratorAccess::state(g).graph_of(0).tensors) {
    if (t.kind != TensorKind::kWeight) continue;
    const bool matrix = t.name.find(".attn.qkv.weight") != std::string::npos ||
                        t.name.find(".attn.proj.weight") != std::string::npos ||
                        t.name.find(".mlp.fc1.weight") != std::string::npos ||
                        t.name.find(".mlp.fc2.weight") != std::string::npos;
    CAPTURE(t.name);
    CHECK(t.dtype == (matrix ? DType::kNVFP4 : DType::kBF16));
    fp4 += matrix;
  }
  CHECK(fp4 == 4 * kL);
}
