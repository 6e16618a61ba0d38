// Hybrid Mamba-2 / attention models (Nemotron-H-8B, Jamba-v0.1's layout
// with Mamba-2 mixers): parameters against the published configs counted
// by hand, model FLOPs against the hand formula, traces that replay to
// completion and validate under tp/sp/dp/pp/ep/ZeRO/recompute, and cp
// refused clearly.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "../test_jobs.h"
#include "check/validate.h"
#include "emit/chakra_writer.h"

using namespace sc;
using sc::testing::make;
using sc::testing::summary;

namespace {

// Published config values, by hand (not the code's helpers).
// nvidia/Nemotron-H-8B-Base-8K config.json.
constexpr int64_t kH = 4096, kHeads = 32, kKv = 8, kHeadDim = 128, kFfn = 21504, kVocab = 131072;
constexpr int64_t kMHeads = 128, kMHeadDim = 64, kGroups = 8, kState = 128, kConv = 4;

int64_t mamba2_params(int64_t h, int64_t heads, int64_t p, int64_t g, int64_t n, int64_t k) {
  const int64_t inner = heads * p, conv = inner + 2 * g * n;
  return h * (2 * inner + 2 * g * n + heads)  // in_proj -> z, x, B, C, dt
         + conv * k + conv                    // depthwise conv1d weight + bias
         + 3 * heads                          // A_log, D, dt_bias
         + inner                              // gated RMSNorm weight
         + inner * h;                         // out_proj
}

Generator job(const std::string& text) {
  auto j = parse_job(text);
  REQUIRE_MESSAGE(j.ok(), j.error().to_string());
  return make(*j);
}

using testing::validate_generated;

}  // namespace

TEST_CASE("hybrid: Nemotron-H-8B's parameters equal the published config counted by hand") {
  const ModelConfig m = testing::preset("nemotron-h-8b");
  CHECK(m.num_layers == 52);
  const std::string pattern = "M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M*-M-M-M-M-M-";
  CHECK(m.hybrid_pattern == pattern);
  // 24 Mamba-2, 4 attention, 24 MLP blocks, each with its RMSNorm (h).
  const int64_t mamba = mamba2_params(kH, kMHeads, kMHeadDim, kGroups, kState, kConv);
  CHECK(mamba == 109635968);
  const int64_t attn = kH * kHeads * kHeadDim + 2 * kH * kKv * kHeadDim + kHeads * kHeadDim * kH;
  const int64_t mlp = 2 * kH * kFfn;  // relu2: up and down, no gate, no bias
  const int64_t expected = 24 * (kH + mamba) + 4 * (kH + attn) + 24 * (kH + mlp) + 2 * kVocab * kH + kH;
  CHECK(expected == 8100852736);  // "8B"
  CHECK(closed_form_parameters(m) == expected);
  CHECK(closed_form_active_parameters(m) == expected);
}

TEST_CASE("hybrid: Jamba-v0.1's layout (1 attention : 7 Mamba, MoE every other layer) counted by hand") {
  const ModelConfig m = testing::preset("jamba-v0.1-mamba2");
  testing::check_jamba_layout(m, 'M');
  // ai21labs/Jamba-v0.1 config.json: h 4096, 32/8 heads of 128, SwiGLU
  // 14336, 16 experts top-2, vocab 65536 untied; Mamba expand 2 (d_inner
  // 8192), d_state 16, d_conv 4, dt_rank 256.
  const int64_t h = 4096, V = 65536, f = 14336, E = 16, k = 2;
  const int64_t attn_p = h * 32 * 128 + 2 * h * 8 * 128 + 32 * 128 * h;
  const int64_t swiglu = 3 * h * f;
  const int64_t moe_p = E * swiglu + h * E;
  const int64_t rest = 64 * h + 4 * attn_p + 16 * moe_p + 16 * swiglu + 2 * V * h + h;
  // Jamba's own Mamba-1 mixer: in_proj, conv (+bias), x_proj, dt_proj
  // (+bias), A_log, D, out_proj and the dt/B/C layernorms.
  const int64_t inner = 8192, n = 16, dtr = 256;
  const int64_t mamba1 = h * 2 * inner + inner * 4 + inner + inner * (dtr + 2 * n) + dtr * inner + inner +
                         inner * n + inner + inner * h + dtr + 2 * n;
  CHECK(rest + 28 * mamba1 == 51570323328);  // the published 51.6B total ...
  CHECK(rest + 28 * mamba1 - 16 * (E - k) * swiglu == 12110311296);  // ... and 12B active
  // This preset's Mamba-2 mixer (128 heads x 64, 8 groups, state 16).
  const int64_t m2 = mamba2_params(h, 128, 64, 8, 16, 4);
  CHECK(closed_form_parameters(m) == rest + 28 * m2);
  CHECK(closed_form_active_parameters(m) == rest + 28 * m2 - 16 * (E - k) * swiglu);
}

TEST_CASE("hybrid: the graph's parameters and model FLOPs equal the hand formulas") {
  // 4 blocks: Mamba, attention, MLP, Mamba; s = 64, B = 2 sequences.
  Generator g = job(R"({"model":{"preset":"nemotron-h-8b","num_layers":4,"hybrid_pattern":"M*-M"},
    "parallel":{"tp":2,"dp":2,"sequence_parallel":true},
    "training":{"seq_len":64,"micro_batch_size":1,"global_batch_size":2}})");
  auto s = summary(g);
  const int64_t mamba = mamba2_params(kH, kMHeads, kMHeadDim, kGroups, kState, kConv);
  const int64_t attn = kH * kHeads * kHeadDim + 2 * kH * kKv * kHeadDim + kHeads * kHeadDim * kH;
  CHECK(s["parameters"]["total"].get<int64_t>() ==
        2 * (kH + mamba) + (kH + attn) + (kH + 2 * kH * kFfn) + 2 * kVocab * kH + kH);
  // Per token, forward: Mamba in_proj, scan (7 d_inner d_state, as
  // Megatron-LM's hybrid FLOP count), out_proj; attention projections and
  // the s^2 BMMs; the MLP; the logits. Training = 3x forward.
  const int64_t s_len = 64, tokens = 2 * s_len;
  const int64_t inner = kMHeads * kMHeadDim, in_proj = 2 * inner + 2 * kGroups * kState + kMHeads;
  const int64_t mamba_f = 2 * kH * in_proj + 7 * inner * kState + 2 * inner * kH;
  const int64_t attn_f = 2 * kH * (kHeads + 2 * kKv) * kHeadDim + 2 * 2 * kHeads * s_len * kHeadDim +
                         2 * kHeads * kHeadDim * kH;
  const int64_t mlp_f = 2 * 2 * kH * kFfn;
  const int64_t fwd = tokens * (2 * mamba_f + attn_f + mlp_f + 2 * kH * kVocab);
  CHECK(s["flops"]["model_per_iteration"].get<uint64_t>() == static_cast<uint64_t>(3 * fwd));
}

TEST_CASE("hybrid: tp/sp/dp/pp/ep/ZeRO/recompute mixes replay, balance, add up and validate") {
  const char* jobs[] = {
      R"({"model":{"preset":"nemotron-h-8b","num_layers":4,"hybrid_pattern":"M*-M"},
        "parallel":{"tp":2,"dp":2,"sequence_parallel":true},"training":{"seq_len":64,"global_batch_size":2}})",
      R"({"model":{"preset":"nemotron-h-8b","num_layers":4,"hybrid_pattern":"M*-M"},
        "parallel":{"tp":2,"pp":2},"training":{"seq_len":64,"global_batch_size":4,"recompute":"full"}})",
      R"({"model":{"preset":"nemotron-h-8b","num_layers":4,"hybrid_pattern":"M*-M"},
        "parallel":{"pp":2,"virtual_stages":2,"dp":2,"zero":1},
        "training":{"seq_len":64,"global_batch_size":8,"schedule":"interleaved-1f1b","recompute":"selective"}})",
      R"({"model":{"preset":"nemotron-h-8b","num_layers":2,"hybrid_pattern":"M-"},
        "parallel":{"dp":4,"zero":3},"training":{"seq_len":64,"global_batch_size":4}})",
      R"({"model":{"preset":"jamba-v0.1-mamba2","num_layers":4},
        "parallel":{"tp":2,"dp":2,"ep":2,"sequence_parallel":true},"training":{"seq_len":64,"global_batch_size":2}})",
      R"({"model":{"preset":"jamba-v0.1-mamba2","num_layers":4},
        "parallel":{"pp":2,"dp":2,"ep":2,"expert_tp":1,"zero":1},
        "training":{"seq_len":64,"global_batch_size":4,"schedule":"zero-bubble"}})",
  };
  for (const char* text : jobs) {
    CAPTURE(std::string(text));
    Generator g = job(text);
    testing::check_complete_balanced_and_summed(g, summary(g));
    ValidationReport v = validate_generated(g);
    CHECK(v.ok());
  }
}

TEST_CASE("hybrid: context parallelism and a tp that does not divide the Mamba heads/groups are refused clearly") {
  auto cp = parse_job(R"({"model":{"preset":"nemotron-h-8b","num_layers":2},"parallel":{"cp":2},
    "training":{"seq_len":64}})");
  REQUIRE(!cp.ok());
  CHECK(cp.error().path == "parallel.cp");
  CHECK(cp.error().code == ErrorCode::kUnsupported);
  CHECK(cp.error().message.find("Mamba-2") != std::string::npos);
  auto tp = parse_job(R"({"model":{"preset":"nemotron-h-8b","num_layers":2,"mamba_groups":1},
    "parallel":{"tp":2,"sequence_parallel":true},"training":{"seq_len":64}})");
  REQUIRE(!tp.ok());
  CHECK(tp.error().path == "parallel.tp");
  CHECK(tp.error().message.find("mamba_groups (1)") != std::string::npos);
  // Attention-only hybrids have no scan: cp is fine there.
  CHECK(parse_job(R"({"model":{"preset":"nemotron-h-8b","num_layers":2,"hybrid_pattern":"*-","mamba_heads":0,
    "mamba_head_dim":0,"mamba_groups":0,"mamba_state":0,"mamba_conv_kernel":0},"parallel":{"cp":2},
    "training":{"seq_len":64}})").ok());
  auto bad = parse_job(R"({"model":{"preset":"nemotron-h-8b","hybrid_pattern":"MX"}})");
  REQUIRE(!bad.ok());
  CHECK(bad.error().path == "model.hybrid_pattern");
}

TEST_CASE("hybrid: every collective of a hybrid job is explained from its recorded cause") {
  Generator g = job(R"({"model":{"preset":"jamba-v0.1-mamba2","num_layers":4},
    "parallel":{"tp":2,"dp":2,"ep":2,"sequence_parallel":true},"training":{"seq_len":64,"global_batch_size":2}})");
  auto gj = g.graph_json(0);
  REQUIRE(gj.ok());
  auto j = nlohmann::json::parse(gj.value());
  int explained = 0, dispatch = 0;
  for (const auto& o : j["ops"]) {
    if (!o.contains("why")) continue;
    CAPTURE(o["name"].get<std::string>());
    const std::string reason = o["why"]["reason"];
    CHECK(reason != "reshard");  // the fallback when no cause says more
    dispatch += o["why"]["text"].get<std::string>().rfind("MoE token dispatch", 0) == 0;
    ++explained;
  }
  CHECK(explained > 20);
  CHECK(dispatch > 0);
}
