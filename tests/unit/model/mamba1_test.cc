// Mamba-1 (S6) layers and the real Jamba-v0.1: parameters against the
// published config counted by hand, model FLOPs against the hand formula
// (mamba_ssm's 9 x tokens x d_inner x d_state for the scan), the collectives
// tensor parallelism derives for the mixer, traces that replay, balance and
// validate under tp/sp/dp/pp/ep/ZeRO/recompute, and cp refused clearly.
#include <doctest/doctest.h>

#include <map>
#include <string>
#include <vector>

#include "../test_jobs.h"
#include "api/state.h"
#include "graph/ops.h"
#include "model/transformer.h"

using namespace sc;
using sc::testing::summary;

namespace {

// ai21labs/Jamba-v0.1 config.json (tests/fixtures/hf/jamba-v0.1.config.json), by hand.
constexpr int64_t kH = 4096, kV = 65536, kF = 14336, kE = 16, kK = 2;
constexpr int64_t kInner = 2 * kH /* mamba_expand 2 */, kN = 16, kDtr = 256, kConv = 4;

// JambaMambaMixer: in_proj (no bias), conv1d (+bias), x_proj, dt_proj (+bias),
// A_log, D, out_proj, dt/B/C RMSNorms.
constexpr int64_t kMamba1 = kH * 2 * kInner + kInner * kConv + kInner + kInner * (kDtr + 2 * kN) + kDtr * kInner +
                            kInner + kInner * kN + kInner + kInner * kH + kDtr + 2 * kN;
constexpr int64_t kAttn = kH * 32 * 128 + 2 * kH * 8 * 128 + 32 * 128 * kH;
constexpr int64_t kSwiGLU = 3 * kH * kF;

Generator job(const std::string& text) {
  auto j = parse_job(text);
  REQUIRE_MESSAGE(j.ok(), j.error().to_string());
  return testing::make(*j);
}

}  // namespace

TEST_CASE("mamba1: Jamba-v0.1's parameters equal the published 51,570,323,328 (12,110,311,296 active)") {
  const ModelConfig m = testing::preset("jamba-v0.1");
  testing::check_jamba_layout(m, 'S');
  CHECK(kMamba1 == 105308448);
  const int64_t total = 64 * kH /* block norms */ + 4 * kAttn + 28 * kMamba1 + 16 * kSwiGLU +
                        16 * (kE * kSwiGLU + kH * kE) + 2 * kV * kH + kH;
  CHECK(total == 51570323328);  // index total_size / 2 (tests/fixtures/hf/expected_counts.json)
  CHECK(closed_form_parameters(m) == total);
  CHECK(closed_form_active_parameters(m) == total - 16 * (kE - kK) * kSwiGLU);
  CHECK(closed_form_active_parameters(m) == 12110311296);
}

TEST_CASE("mamba1: the graph's parameters and model FLOPs equal the hand formulas") {
  // Blocks: Mamba-1, attention, MLP, Mamba-1; s = 64, 2 sequences; tp 2 + sp, dp 2.
  Generator g = job(R"({"model":{"preset":"jamba-v0.1","num_layers":4,"hybrid_pattern":"S*-S"},
    "parallel":{"tp":2,"dp":2,"sequence_parallel":true},
    "training":{"seq_len":64,"micro_batch_size":1,"global_batch_size":2}})");
  auto s = summary(g);
  CHECK(s["parameters"]["total"].get<int64_t>() ==
        2 * (kH + kMamba1) + (kH + kAttn) + (kH + kSwiGLU) + 2 * kV * kH + kH);
  // Per token, forward: in_proj (h -> 2 d_inner), x_proj (d_inner -> dt_rank
  // + 2N), dt_proj (dt_rank -> d_inner), the scan (9 d_inner N, + d_inner for
  // D and for the z gate), out_proj; attention's projections and s^2 BMMs;
  // the SwiGLU MLP; the logits. Training = 3x forward (the scan's backward
  // 2x, as a GEMM's).
  const int64_t s_len = 64, tokens = 2 * s_len;
  const int64_t mamba_f = 2 * kH * 2 * kInner + 2 * kInner * (kDtr + 2 * kN) + 2 * kDtr * kInner +
                          (9 * kInner * kN + 2 * kInner) + 2 * kInner * kH;
  const int64_t attn_f = 2 * kH * (32 + 2 * 8) * 128 + 2 * 2 * 32 * s_len * 128 + 2 * 32 * 128 * kH;
  const int64_t mlp_f = 2 * kSwiGLU;
  const int64_t fwd = tokens * (2 * mamba_f + attn_f + mlp_f + 2 * kH * kV);
  CHECK(s["flops"]["model_per_iteration"].get<uint64_t>() == static_cast<uint64_t>(3 * fwd));
}

TEST_CASE("mamba1: tp splits d_inner; x_proj's partial sum is one forward all-reduce, dt/B/C's gradients reduce") {
  Generator g = job(R"({"model":{"preset":"jamba-v0.1","num_layers":2,"hybrid_pattern":"S-"},
    "parallel":{"tp":2,"sequence_parallel":true},"training":{"seq_len":64,"global_batch_size":1}})");
  const GeneratorState& st = GeneratorAccess::state(g);
  const Graph& gr = st.graph_of(0);
  std::map<std::string, int> fwd, bwd;  // tensor that asked -> tp all-reduces
  for (int id : gr.order) {
    const Op& o = gr.ops[id];
    if (o.kind != OpKind::kCollective || o.axis != "tp" || o.cause.tensor < 0) continue;
    const std::string t = gr.tensors[o.cause.tensor].name;
    if (t.rfind("L0.mamba.", 0) != 0 || o.coll != CollectiveType::kAllReduce) continue;
    CHECK(o.cause.kind == CauseKind::kPartialSum);
    (o.phase == Phase::kForward ? fwd : bwd)[t]++;
  }
  // Forward: x_proj is row-parallel (d_inner split), so [dt, B, C] is a
  // partial sum, resolved once before the split (the only forward
  // all-reduce: out_proj's partial is reduce-scattered onto the sequence,
  // as every row-parallel output under sequence parallelism).
  CHECK(fwd["L0.mamba.x_proj"] == 1);
  CHECK(fwd.size() == 1);
  // Backward: dt_proj's dgrad (d_inner contracted) and the scan's dB, dC
  // (sums over channels) are partial sums over tp that the norms' backward
  // needs whole.
  CHECK(bwd["L0.mamba.dt_layernorm.grad"] == 1);
  CHECK(bwd["L0.mamba.b_layernorm.grad"] == 1);
  CHECK(bwd["L0.mamba.c_layernorm.grad"] == 1);
  CHECK(bwd.size() == 3);
  // Weights split over tp on d_inner: A_log [d_inner, N] holds half the rows per rank.
  for (const Tensor& t : gr.tensors) {
    if (t.name == "L0.mamba.A_log" || t.name == "L0.mamba.D" || t.name == "L0.mamba.dt_proj.bias" ||
        t.name == "L0.mamba.conv1d.weight") {
      CAPTURE(t.name);
      CHECK(t.sharding.dim_axis[0] == "tp");
    }
    if (t.name == "L0.mamba.x_proj.weight" || t.name == "L0.mamba.out_proj.weight") {
      CAPTURE(t.name);
      CHECK(t.sharding.dim_axis[0] == "tp");  // row-parallel: d_inner is the input dim
    }
    if (t.name == "L0.mamba.dt_proj.weight" || t.name == "L0.mamba.in_proj.weight") {
      CAPTURE(t.name);
      CHECK(t.sharding.dim_axis.back() == "tp");  // column-parallel
    }
    if (t.name == "L0.mamba.b_layernorm.weight") CHECK(t.sharding.dim_axis[0] == "");
  }
}

TEST_CASE("mamba1: the scan's entry, its backward split and fusion classes") {
  CHECK(std::string(fusion_class_name(ops::kSelectiveScan.fusion)) == "scan");
  CHECK(ops::kSelectiveScan.saves == Saves::kInputs);
  CHECK(ops::kSplitReduced.propagation == PropagationRule::kFactors);  // not linear: resolves x_proj's sum first
  CHECK(find_op_def("selective_scan_bwd_bc") == &ops::kSelectiveScanBwdBC);
  // The backward ops' FLOPs add up to twice the forward's.
  Generator g = job(R"({"model":{"preset":"jamba-v0.1","num_layers":1,"hybrid_pattern":"S"},
    "training":{"seq_len":64,"global_batch_size":1}})");
  const Graph& gr = GeneratorAccess::state(g).graph_of(0);
  Expr fwd = 0, bwd = 0;
  Bindings b = model_bindings(testing::preset("jamba-v0.1"), 1, 64);
  for (int id : gr.order) {
    const Op& o = gr.ops[id];
    if (o.def == &ops::kSelectiveScan) fwd = fwd + o.model_flops;
    if (o.def == &ops::kSelectiveScanBwd || o.def == &ops::kSelectiveScanBwdBC) bwd = bwd + o.model_flops;
  }
  const Result<int64_t> f = fwd.eval(b), bw = bwd.eval(b);
  REQUIRE(f.ok());
  REQUIRE(bw.ok());
  CHECK(*f == 9 * 64 * kInner * kN + 2 * 64 * kInner);
  CHECK(*bw == 2 * *f);
}

TEST_CASE("mamba1: tp/sp/dp/pp/ep/ZeRO/recompute mixes replay, balance, add up and validate") {
  const char* jobs[] = {
      R"({"model":{"preset":"jamba-v0.1","num_layers":4},
        "parallel":{"tp":2,"dp":2,"ep":2,"sequence_parallel":true},"training":{"seq_len":64,"global_batch_size":2}})",
      R"({"model":{"preset":"jamba-v0.1","num_layers":4},
        "parallel":{"pp":2,"dp":2,"ep":2,"expert_tp":1,"zero":1},
        "training":{"seq_len":64,"global_batch_size":4,"schedule":"zero-bubble"}})",
      R"({"model":{"preset":"jamba-v0.1","num_layers":4,"hybrid_pattern":"S*S-"},
        "parallel":{"tp":2,"pp":2,"sequence_parallel":true},
        "training":{"seq_len":64,"global_batch_size":4,"recompute":"full"}})",
      R"({"model":{"preset":"jamba-v0.1","num_layers":4,"hybrid_pattern":"S-SE"},
        "parallel":{"pp":2,"virtual_stages":2,"dp":2,"zero":1},
        "training":{"seq_len":64,"global_batch_size":8,"schedule":"interleaved-1f1b","recompute":"selective"}})",
      R"({"model":{"preset":"jamba-v0.1","num_layers":2,"hybrid_pattern":"S-"},
        "parallel":{"dp":4,"zero":3},"training":{"seq_len":64,"global_batch_size":4}})",
  };
  for (const char* text : jobs) {
    CAPTURE(std::string(text));
    Generator g = job(text);
    testing::check_complete_balanced_and_summed(g, summary(g));
    CHECK(testing::validate_generated(g).ok());
  }
}

TEST_CASE("mamba1: context parallelism and a tp that does not divide d_inner are refused clearly") {
  auto cp = parse_job(R"({"model":{"preset":"jamba-v0.1","num_layers":2},"parallel":{"cp":2},
    "training":{"seq_len":64,"global_batch_size":1}})");
  REQUIRE_FALSE(cp.ok());
  CHECK(cp.error().path == "parallel.cp");
  CHECK(cp.error().code == ErrorCode::kUnsupported);
  CHECK(cp.error().message.find("Mamba-1") != std::string::npos);
  auto tp = parse_job(R"({"model":{"preset":"jamba-v0.1","num_layers":2,"mamba1_inner":8190},"parallel":{"tp":4},
    "training":{"seq_len":64,"global_batch_size":1}})");
  REQUIRE_FALSE(tp.ok());
  CHECK(tp.error().path == "parallel.tp");
  CHECK(tp.error().message.find("mamba1_inner (8190)") != std::string::npos);
  // Mamba-1 sizes without 'S' layers, and 'S' layers without their sizes.
  auto stray = parse_job(R"({"model":{"preset":"nemotron-h-8b","num_layers":2,"mamba1_dt_rank":16},
    "training":{"seq_len":64,"global_batch_size":1}})");
  REQUIRE_FALSE(stray.ok());
  CHECK(stray.error().path == "model.mamba1_dt_rank");
  auto missing = parse_job(R"({"model":{"preset":"jamba-v0.1","num_layers":2,"mamba1_inner":0},
    "training":{"seq_len":64,"global_batch_size":1}})");
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.error().path == "model.mamba1_inner");
}
