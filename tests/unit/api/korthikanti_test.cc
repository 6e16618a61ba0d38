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
