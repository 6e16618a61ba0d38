// The summary against published formulas (../shared/docs/reference-numbers.md).
#include "../test_jobs.h"

using namespace sc;
using namespace sc::testing;

TEST_CASE("reference: Megatron-LM parameter count and model FLOPs of GPT-3 175B") {
  Job j = gpt_job(96, 12288, 96, 8, 4, true, 1, 2048, 8);
  j.model.max_positions = 2048;
  auto s = summary(make(j));
  const int64_t L = 96, h = 12288, V = 51200, S = 2048, B = 8;
  // P = 12 L h^2 (1 + 13/(12h) + (V+s)/(12 L h)), plus the final LayerNorm's
  // 2h that the paper's formula leaves out.
  const int64_t P = 12 * L * h * h + 13 * L * h + (V + S) * h + 2 * h;
  CHECK(s["parameters"]["total"].get<int64_t>() == P);
  // Table 1 of the paper lists it as 174.6 billion.
  CHECK(s["parameters"]["total"].get<double>() / 1e9 == doctest::Approx(174.6).epsilon(0.0005));
  // 72 B s L h^2 (1 + s/(6h) + V/(12 L h)), expanded to integers.
  const unsigned __int128 F = (unsigned __int128)72 * B * S * L * h * h + (unsigned __int128)12 * B * S * S * L * h +
                              (unsigned __int128)6 * B * S * h * V;
  CHECK(s["flops"]["model_per_iteration"].get<uint64_t>() == (uint64_t)F);
  CHECK(s["world_size"].get<int64_t>() == 32);
  CHECK(s["micro_batches_per_iteration"].get<int64_t>() == 2);
}

namespace {
int64_t layer_activation_bytes(const Generator& g, int layer) {
  auto s = summary(g);
  return s["stages"][0]["activation_bytes_by_layer"][std::to_string(layer)].get<int64_t>();
}
}  // namespace

TEST_CASE("reference: Korthikanti et al. activation bytes per layer") {
  // 22B row of their Figure 1: a=64, h=6144, s=2048, b=4, t=8 (two layers
  // suffice: every layer is the same).
  const int64_t s = 2048, b = 4, h = 6144, a = 64, t = 8;
  const double sbh = double(s) * b * h, att = 5.0 * a * s / h;
  SUBCASE("no parallelism: sbh (34 + 5as/h)") {
    auto g = make(gpt_job(2, h, a, 1, 1, false, b, s));
    CHECK(layer_activation_bytes(g, 1) == int64_t(sbh * (34 + att)));
  }
  SUBCASE("tensor parallel: sbh (10 + 24/t + 5as/(ht))") {
    auto g = make(gpt_job(2, h, a, t, 1, false, b, s));
    CHECK(layer_activation_bytes(g, 1) == int64_t(sbh * (10 + 24.0 / t + att / t)));
    // Figure 1, 'act. TP only' column: per-layer x 48 layers, GiB.
    CHECK(layer_activation_bytes(g, 1) * 48 / double(1ull << 30) == doctest::Approx(59.25).epsilon(1e-12));
  }
  SUBCASE("tensor + sequence parallel: sbh (34/t + 5as/(ht))") {
    auto g = make(gpt_job(2, h, a, t, 1, true, b, s));
    CHECK(layer_activation_bytes(g, 1) == int64_t(sbh * (34.0 / t + att / t)));
  }
}

TEST_CASE("reference: mixed-precision Adam keeps 18 bytes per parameter") {
  auto s = summary(make(gpt_job(2, 6144, 64, 8, 2, true, 1, 2048)));
  auto mem = s["stages"][0]["memory_bytes"];
  int64_t per_rank = s["parameters"]["per_rank"].get<int64_t>();
  CHECK(mem["weights"].get<int64_t>() == 2 * per_rank);
  CHECK(mem["gradients"].get<int64_t>() == 4 * per_rank);
  CHECK(mem["optimizer"].get<int64_t>() == 12 * per_rank);
  CHECK(mem["peak"].get<int64_t>() == 18 * per_rank + mem["activations_peak"].get<int64_t>());
}

TEST_CASE("reference: per-rank FLOPs add up to the job's FLOPs") {
  // GEMMs split exactly over tp; executed FLOPs also hold non-GEMM work, so
  // the model FLOPs are a lower bound and the GEMM share dominates.
  auto s = summary(make(gpt_job(2, 2048, 16, 4, 2, true, 2, 1024, 8)));
  auto f = s["flops"];
  CHECK(f["executed_per_iteration"].get<uint64_t>() == f["executed_per_rank"].get<uint64_t>() * 8);
  CHECK(f["executed_per_iteration"].get<uint64_t>() > f["model_per_iteration"].get<uint64_t>());
  CHECK(f["executed_per_iteration"].get<double>() < 1.1 * f["model_per_iteration"].get<double>());
}
