// Saved activations under FP8 training as Transformer Engine keeps them
// (cost/fp8_cost.h, SavedForm; docs/hardware.md "FP8 training"): a linear
// keeps the FP8 copy of its input for its weight gradient instead of the
// BF16 input. Derived by hand on Korthikanti et al.'s GPT layer (Table 2
// with fused attention, korthikanti_test.cc): of its 34 units of s·b·h
// bytes, the QKV GEMM input (2) and the fc1 input (2) become 1 each and the
// fc2 input (the GeLU's output, 8) becomes 4. The attention output (2: the
// attention kernel's backward reads it) stays, and under delayed scaling
// gains a 1-byte copy for the projection's weight gradient (29 units);
// under the other recipes Megatron-Core has that linear save its BF16 input
// instead (save_original_input): 28.
#include "../test_jobs.h"

using namespace sc;
using namespace sc::testing;
using nlohmann::json;

namespace {

constexpr int64_t kS = 2048, kB = 1, kH = 12288, kA = 96;

Job fp8_layer_job(int64_t L, int64_t t, bool sp, Fp8Recipe r) {
  Job j = gpt_job(L, kH, kA, t, 1, sp, kB, kS);
  j.model.flash_attention = true;
  j.training.fp8_recipe = r;
  return j;
}

double layer_bytes(int64_t t, bool sp, Fp8Recipe r) {
  return summary(make(fp8_layer_job(2, t, sp, r)))["stages"][0]["activation_bytes_by_layer"]["1"].get<double>();
}

}  // namespace

TEST_CASE("fp8 saved activations: Korthikanti's layer keeps 29 of its 34 units (28 without delayed scaling)") {
  const double sbh = double(kS * kB * kH), lse = 4.0 * double(kB * kA * kS);
  const double delayed_units = 2 /*LN1 input*/ + 1 /*QKV input, FP8 copy*/ + 2 + 2 + 2 /*Q, K, V*/ +
                               (2 + 1) /*attention output and its FP8 copy*/ + 1 /*attention dropout mask*/ +
                               2 /*LN2 input*/ + 1 /*fc1 input, FP8 copy*/ + 8 /*GeLU input*/ +
                               4 /*fc2 input, FP8 copy*/ + 1 /*MLP dropout mask*/;
  CHECK(delayed_units == 29);
  // One FP32 scale per tensor: no per-element scale bytes.
  CHECK(layer_bytes(1, false, Fp8Recipe::kDelayed) == sbh * delayed_units + lse);
  // tp 8 without sequence parallelism: the LN inputs, the QKV and fc1
  // inputs (now 1 + 1) and the two masks stay whole (8 units); the rest
  // (Q, K, V 6 + attention output 3 + GeLU input 8 + fc2 input 4 = 21) is split.
  CHECK(layer_bytes(8, false, Fp8Recipe::kDelayed) == sbh * (8 + 21.0 / 8) + lse / 8);
  // Sequence parallelism splits all of it: TE keeps the copy of the shard
  // it quantized before the all-gather.
  CHECK(layer_bytes(8, true, Fp8Recipe::kDelayed) == sbh * delayed_units / 8 + lse / 8);
  // Current scaling: the attention output without its copy.
  CHECK(layer_bytes(1, false, Fp8Recipe::kTensorwise) == sbh * (delayed_units - 1) + lse);
  CHECK(layer_bytes(8, false, Fp8Recipe::kTensorwise) == sbh * (8 + 20.0 / 8) + lse / 8);
  CHECK(layer_bytes(8, true, Fp8Recipe::kTensorwise) == sbh * (delayed_units - 1) / 8 + lse / 8);
  // Blockwise scaling adds one FP32 scale per 1x128 tile of each copy: the
  // 6 units of copies (1 + 1 + 4) gain 4/128 of a byte per element.
  CHECK(layer_bytes(8, true, Fp8Recipe::kBlockwise) == sbh * (delayed_units - 1) / 8 + sbh * 6 / 8 / 32 + lse / 8);
  // Without a recipe the layer is the BF16 one (korthikanti_test.cc).
  CHECK(layer_bytes(8, true, Fp8Recipe::kNone) == sbh * 34 / 8 + lse / 8);
}

// Unfused attention: the attention output is the values BMM's output, which
// no backward op but the projection's weight gradient reads (the BMM's
// backward reads the probabilities and V), so it is kept as its copy alone:
// 7 units less than Table 2's s·b·h·(34 + 5·a·s/h), under any recipe.
TEST_CASE("fp8 saved activations: unfused attention's output is kept as its FP8 copy only") {
  const double sbh = double(kS * kB * kH);
  for (Fp8Recipe r : {Fp8Recipe::kNone, Fp8Recipe::kDelayed, Fp8Recipe::kTensorwise}) {
    CAPTURE(fp8_recipe_name(r));
    Job j = fp8_layer_job(2, 8, true, r);
    j.model.flash_attention = false;
    const double layer = summary(make(j))["stages"][0]["activation_bytes_by_layer"]["1"].get<double>();
    const double units = r == Fp8Recipe::kNone ? 34 : 27;
    CHECK(layer == sbh * (units + 5.0 * double(kA * kS) / double(kH)) / 8);
  }
}

// Full recomputation keeps each layer's input (2·s·b·h, Table 2's last
// row), read by the recomputed forward, whose FP8 GEMMs quantize it again:
// FP8 or not, the same bytes.
TEST_CASE("fp8 saved activations: a fully recomputed layer keeps its BF16 input") {
  const double sbh = double(kS * kB * kH);
  for (Fp8Recipe r : {Fp8Recipe::kNone, Fp8Recipe::kDelayed, Fp8Recipe::kTensorwise}) {
    CAPTURE(fp8_recipe_name(r));
    Job j = fp8_layer_job(2, 8, false, r);
    j.training.recompute = Recompute::kFull;
    CHECK(summary(make(j))["stages"][0]["activation_bytes_by_layer"]["1"].get<double>() == 2 * sbh);
  }
}

// The pipeline's saved-activation peak (trace/lower.cc) and the liveness
// analysis's live peak count the same copies: one micro-batch, pp 1, so
// each layer adds its saved bytes to the first, and its saved bytes less
// the BF16 buffers it no longer keeps to the second.
TEST_CASE("fp8 saved activations: the saved and live peaks gain 29·s·b·h/t per layer") {
  const double sbh = double(kS * kB * kH), lse = 4.0 * double(kB * kA * kS);
  const int64_t t = 8;
  auto mem = [&](int64_t L, Fp8Recipe r) {
    return summary(make(fp8_layer_job(L, t, true, r)))["stages"][0]["memory_bytes"];
  };
  const json bf16_2 = mem(2, Fp8Recipe::kNone), bf16_3 = mem(3, Fp8Recipe::kNone);
  const json fp8_2 = mem(2, Fp8Recipe::kDelayed), fp8_3 = mem(3, Fp8Recipe::kDelayed);
  const double saved_bf16 = bf16_3["activations_peak"].get<double>() - bf16_2["activations_peak"].get<double>();
  const double saved_fp8 = fp8_3["activations_peak"].get<double>() - fp8_2["activations_peak"].get<double>();
  CHECK(saved_bf16 == sbh * 34 / t + lse / t);
  CHECK(saved_fp8 == sbh * 29 / t + lse / t);
  // The live peak sits at the start of the backward, where every saved
  // buffer (or its copy) of every layer is alive: a layer adds the same
  // 5 units less under FP8 there as to the saved peak.
  const double live_bf16 = bf16_3["activations_live_peak"].get<double>() - bf16_2["activations_live_peak"].get<double>();
  const double live_fp8 = fp8_3["activations_live_peak"].get<double>() - fp8_2["activations_live_peak"].get<double>();
  CHECK(live_bf16 - live_fp8 == sbh * 5 / t);
}
