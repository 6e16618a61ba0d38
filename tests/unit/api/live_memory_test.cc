// The live-activation analysis (core/trace/lower.cc): every activation
// buffer alive at each node, next to the saved-for-backward figure the
// papers use (activations_peak).
#include "../test_jobs.h"

using namespace sc;
using namespace sc::testing;

namespace {

int64_t at(const nlohmann::json& st, const char* key) { return st["memory_bytes"][key].get<int64_t>(); }

}  // namespace

TEST_CASE("live memory: at least the saved activations, back to zero after the last backward") {
  for (Recompute rc : {Recompute::kNone, Recompute::kSelective, Recompute::kFull}) {
    for (int64_t pp : {1, 2}) {
      CAPTURE(int(rc));
      CAPTURE(pp);
      Job j = gpt_job(4, 512, 8, 2, 2, true, 1, 256, 8);
      j.parallel.pp = pp;
      j.training.recompute = rc;
      auto s = summary(make(j));
      for (const auto& st : s["stages"]) {
        // Saved activations are alive from their forward to their backward,
        // so the live curve can never be below them.
        CHECK(at(st, "activations_live_peak") >= at(st, "activations_peak"));
        CHECK(at(st, "peak_live") - at(st, "peak") == at(st, "activations_live_peak") - at(st, "activations_peak"));
        const auto& tl = st["live_activation_timeline"];
        const auto bytes = tl["bytes"].get<std::vector<int64_t>>();
        REQUIRE(!bytes.empty());
        CHECK(bytes.size() <= 512);
        CHECK(*std::max_element(bytes.begin(), bytes.end()) == at(st, "activations_live_peak"));
        // The optimizer phase holds no activation buffer: the curve ends at 0.
        CHECK(bytes.back() == 0);
        for (int64_t b : bytes) CHECK(b >= 0);
      }
    }
  }
}

TEST_CASE("live memory: full recomputation re-materialises a layer during its backward") {
  auto run = [](Recompute rc) {
    Job j = gpt_job(4, 512, 8, 1, 1, false, 1, 512, 1);
    j.model.vocab = 128;  // layers dominate, not the logits
    j.training.recompute = rc;
    return summary(make(j))["stages"][0];
  };
  const auto none = run(Recompute::kNone), full = run(Recompute::kFull);
  const int64_t layer = none["activation_bytes_by_layer"]["1"].get<int64_t>();
  // Saved: the layer inputs only (Korthikanti's 2sbh per layer)...
  CHECK(at(full, "activations_peak") < layer);
  // ...but the backward of a layer first re-runs most of its forward, so the
  // live peak exceeds the checkpoints by at least half a layer's activations.
  CHECK(at(full, "activations_live_peak") - at(full, "activations_peak") > layer / 2);
  // Without recomputation the live peak is the saved one plus what the
  // backward of the last layer allocates on top (gradients, never a layer).
  CHECK(at(none, "activations_live_peak") - at(none, "activations_peak") < layer);
}

TEST_CASE("live memory: ZeRO-3 gathered parameters are transient activations") {
  Job j = gpt_job(4, 512, 8, 1, 4, false, 1, 256);
  auto z0 = summary(make(j))["stages"][0];
  j.parallel.zero = 3;
  auto z3 = summary(make(j))["stages"][0];
  // One layer's bf16 parameters (12 h^2 + 13 h) are gathered whole while the
  // layer runs; with one unit of prefetch up to two layers at once.
  const int64_t layer_params_bytes = (12 * 512 * 512 + 13 * 512) * 2;
  CHECK(at(z3, "activations_peak") == at(z0, "activations_peak"));
  CHECK(at(z3, "activations_live_peak") - at(z0, "activations_live_peak") >= layer_params_bytes);
}
