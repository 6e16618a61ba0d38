// Activation recomputation against Korthikanti et al. and Megatron-LM.
#include "../test_jobs.h"

using namespace sc;
using namespace sc::testing;

namespace {
int64_t layer_bytes(const Job& j) {
  auto s = summary(make(j));
  return s["stages"][0]["activation_bytes_by_layer"]["1"].get<int64_t>();
}
}  // namespace

TEST_CASE("recompute: selective and full activation bytes per layer") {
  const int64_t s = 2048, b = 1, h = 12288, a = 96, t = 8;
  const int64_t sbh = s * b * h;
  Job j = gpt_job(2, h, a, t, 1, true, b, s);
  j.training.recompute = Recompute::kSelective;
  CHECK(layer_bytes(j) == sbh * 34 / t);  // tensor + sequence parallel + selective
  j.parallel.sequence_parallel = false;
  CHECK(layer_bytes(j) == sbh * 10 + sbh * 24 / t);  // tensor parallel + selective
  j.training.recompute = Recompute::kFull;
  CHECK(layer_bytes(j) == 2 * sbh);  // full: only the layer input
}

TEST_CASE("recompute: full recomputation executes 96 B s L h^2 (1 + s/6h + V/16Lh) GEMM FLOPs") {
  const int64_t L = 4, h = 2048, a = 16, S = 1024, V = 51200, B = 4;
  Job j = gpt_job(L, h, a, 2, 2, true, 1, S, B);
  j.training.recompute = Recompute::kFull;
  auto s = summary(make(j));
  // 96 B s L h^2 + 16 B s^2 L h + 6 B s h V, exactly.
  const uint64_t F = 96ull * B * S * L * h * h + 16ull * B * S * S * L * h + 6ull * B * S * h * V;
  CHECK(s["flops"]["hardware_per_iteration"].get<uint64_t>() == F);
  // Model FLOPs do not count the recomputation.
  const uint64_t M = 72ull * B * S * L * h * h + 12ull * B * S * S * L * h + 6ull * B * S * h * V;
  CHECK(s["flops"]["model_per_iteration"].get<uint64_t>() == M);
}

TEST_CASE("recompute: full recomputation re-runs the whole layer, with or without dropout") {
  // Megatron's CheckpointFunction re-runs the layer's forward: the MLP's
  // last linear (fc2) and the final residual add too, whose outputs no
  // backward op reads when no dropout follows them (every Llama-family
  // model). Without dropout the executed GEMM FLOPs are the same 96 B s L
  // h^2 (1 + s/6h + V/16Lh) as with it; fc2 alone is 2 B s h 4h = 8 B s h^2
  // a layer, which were missing before.
  const int64_t L = 4, h = 2048, a = 16, S = 1024, V = 51200, B = 4;
  Job j = gpt_job(L, h, a, 2, 2, true, 1, S, B);
  j.training.recompute = Recompute::kFull;
  j.model.dropout = false;
  auto s = summary(make(j));
  const uint64_t F = 96ull * B * S * L * h * h + 16ull * B * S * S * L * h + 6ull * B * S * h * V;
  CHECK(s["flops"]["hardware_per_iteration"].get<uint64_t>() == F);
  auto g = make(j);
  bool fc2 = false, residual = false;
  const RankTrace t = g.rank_trace(0).value();
  for (const auto& n : t.nodes) {
    fc2 |= n.name.find("L0.mlp.fc2.recompute") != std::string::npos;
    residual |= n.name.find("L0.mlp.residual.recompute") != std::string::npos;
  }
  CHECK(fc2);
  CHECK(residual);
}

TEST_CASE("recompute: recomputed forward ops appear in the trace, with their communication") {
  Job j = gpt_job(2, 1024, 16, 2, 1, true, 1, 512);
  j.training.recompute = Recompute::kFull;
  auto g = make(j);
  int recomputed = 0, recomputed_comm = 0;
  const RankTrace trace_0 = g.rank_trace(0).value();
  for (const auto& n : trace_0.nodes) {
    if (n.name.find(".recompute") == std::string::npos) continue;
    ++recomputed;
    recomputed_comm += n.kind == TraceNodeKind::kCollective;
  }
  CHECK(recomputed > 0);
  CHECK(recomputed_comm > 0);  // Megatron re-runs the forward all-gathers and reduce-scatters
}
