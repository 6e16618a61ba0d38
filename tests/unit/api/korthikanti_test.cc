// Korthikanti et al. 2022, Figure 1 (../shared/docs/reference-numbers.md):
// activation GiB per GPU of the first pipeline stage, s = 2048, from the
// per-layer bytes the graph saves and the layers in flight that the
// pipeline schedule keeps on stage 0, both measured on generated jobs.
#include "../test_jobs.h"

using namespace sc;
using namespace sc::testing;

namespace {

struct Row {
  int64_t a, h, L, t, p, b, v;
  double tp_only, tp_sp_selective;  // GiB
};

double per_layer(const Row& r, bool sp, Recompute rc) {
  Job j = gpt_job(2, r.h, r.a, r.t, 1, sp, r.b, 2048);
  j.training.recompute = rc;
  return summary(make(j))["stages"][0]["activation_bytes_by_layer"]["1"].get<double>();
}

// Layers whose activations stage 0 holds at its peak, as a multiple of L,
// on a small model with the same pipeline shape (no embedding-side
// activations, so chunks are uniform).
double in_flight_factor(const Row& r) {
  if (r.p == 1) return 1.0;
  const int64_t layers = r.p * r.v;
  Job j = gpt_job(layers, 64, 4, 1, 1, false, 1, 64);
  j.model.dropout = false;
  j.model.position = PositionKind::kRope;
  j.model.vocab = 64;
  j.parallel.pp = r.p;
  j.parallel.virtual_stages = r.v;
  j.training.global_batch_size = 2 * r.p;
  j.training.schedule = r.v > 1 ? Schedule::kInterleaved : Schedule::kOneFOneB;
  auto s = summary(make(j));
  const double layer = s["stages"][0]["activation_bytes_by_layer"]["0"].get<double>();
  return s["stages"][0]["memory_bytes"]["activations_peak"].get<double>() / layer / double(layers);
}

}  // namespace

TEST_CASE("korthikanti: Figure 1 activation memory, TP only and TP + SP + selective recompute") {
  const Row rows[] = {
      {64, 6144, 48, 8, 1, 4, 1, 59.25, 9.5625},
      {96, 12288, 96, 8, 8, 1, 3, 66.84375, 12.3515625},
      {128, 20480, 105, 8, 35, 1, 3, 114.0234375, 23.076171875},
      {160, 25600, 128, 8, 64, 1, 1, 131.25, 26.5625},
  };
  const double gib = double(1ull << 30);
  for (const Row& r : rows) {
    CAPTURE(r.h);
    const double factor = in_flight_factor(r);
    // Interleaving keeps 1 + (p-1)/(p v) of the layers; plain 1F1B exactly L.
    const double expected = r.v > 1 ? 1.0 + double(r.p - 1) / double(r.p * r.v) : 1.0;
    CHECK(factor == doctest::Approx(expected));
    CHECK(per_layer(r, false, Recompute::kNone) * r.L * factor / gib == doctest::Approx(r.tp_only));
    CHECK(per_layer(r, true, Recompute::kSelective) * r.L * factor / gib == doctest::Approx(r.tp_sp_selective));
  }
}

// Korthikanti et al. 2022, Table 2, with fused (flash) attention: the
// 5·a·s/h term (scores, softmax, its dropout mask) is gone and the kernel
// keeps its log-sum-exp instead (fp32, one per query and head). The other
// 34 units of s·b·h bytes, one by one: LN1 input 2, QKV GEMM input 2, Q 2,
// K 2, V 2 (the kernel's inputs), the attention output 2 — ONE buffer,
// the kernel's output and the projection's input (its merged-heads view) —
// attention dropout mask 1, LN2 input 2, fc1 input 2, GeLU input 8, fc2
// input 8, MLP dropout mask 1. Replicated under tp without sp: the LN
// inputs, the QKV and fc1 inputs and the two masks (10); the rest is
// split over t (24); sequence parallelism splits all 34.
TEST_CASE("korthikanti: Table 2 with flash attention counts the attention output once") {
  const int64_t s = 2048, b = 1, h = 12288, a = 96;
  const double sbh = double(s * b * h);
  auto layer = [&](int64_t t, bool sp) {
    Job j = gpt_job(2, h, a, t, 1, sp, b, s);
    j.model.flash_attention = true;
    return summary(make(j))["stages"][0]["activation_bytes_by_layer"]["1"].get<double>();
  };
  const double units = 2 + 2 + 2 + 2 + 2 + 2 + 1 + 2 + 2 + 8 + 8 + 1;
  CHECK(units == 34);
  const double lse = 4.0 * double(b * a * s);
  CHECK(layer(1, false) == sbh * 34 + lse);
  CHECK(layer(8, false) == sbh * (10 + 24.0 / 8) + lse / 8);
  CHECK(layer(8, true) == sbh * 34 / 8 + lse / 8);
}

// The pipeline's saved-activation peak (trace/lower.cc, a separate count
// from summary.json's per-layer figure) grows by the same formula per
// layer: one micro-batch, pp 1, so the peak is every layer's saved bytes.
TEST_CASE("korthikanti: the saved-activation peak adds 34·s·b·h/t per flash-attention layer") {
  const int64_t s = 2048, b = 1, h = 12288, a = 96, t = 8;
  auto peak = [&](int64_t L) {
    Job j = gpt_job(L, h, a, t, 1, true, b, s);
    j.model.flash_attention = true;
    return summary(make(j))["stages"][0]["memory_bytes"]["activations_peak"].get<double>();
  };
  CHECK(peak(3) - peak(2) == double(s * b * h) * 34 / t + 4.0 * double(b * a * s) / t);
}
