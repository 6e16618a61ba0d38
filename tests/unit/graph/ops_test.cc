// The operator table (graph/ops.h): entries are unique and complete, every
// op of a built job carries its entry (no op resolved by a fallback), each
// entry's declared `saves` matches what its VJP rule actually reads, and
// every collective records why it was made (Op::cause).
#include <doctest/doctest.h>

#include <map>
#include <set>
#include <string>

#include "../test_jobs.h"
#include "api/state.h"
#include "graph/ops.h"

using namespace sc;

namespace {

const char* kJobs[] = {
    R"({"model":{"preset":"gpt3-1.7b","num_layers":2},"parallel":{"tp":2,"dp":2,"sequence_parallel":true},
        "training":{"seq_len":64,"global_batch_size":2}})",
    R"({"model":{"preset":"llama3-8b","num_layers":2,"flash_attention":true},"parallel":{"cp":2,"tp":2,"pp":2},
        "training":{"seq_len":64,"global_batch_size":2}})",
    R"({"model":{"preset":"llama2-7b","num_layers":2},"parallel":{"cp":2,"dp":2,"cp_algorithm":"ring","zero":3,
        "shard_group":2},"training":{"seq_len":64,"global_batch_size":2}})",
    R"({"model":{"preset":"mixtral-8x7b","num_layers":2},"parallel":{"tp":2,"dp":2,"ep":2,"sequence_parallel":true,
        "zero":1},"training":{"seq_len":64,"global_batch_size":2}})",
    R"({"model":{"preset":"deepseek-v3","num_layers":2,"first_dense_layers":1},"parallel":{"dp":2,"ep":2},
        "training":{"seq_len":64,"global_batch_size":2,"recompute":"selective"}})",
    // DeepSeek-V3's multi-token-prediction module (its [enorm | hnorm] concatenation) on the last stage.
    R"({"model":{"preset":"deepseek-v3","num_layers":2,"first_dense_layers":1,"mtp_num_layers":1},
        "parallel":{"tp":2,"pp":2,"ep":2,"expert_tp":1,"sequence_parallel":true},
        "training":{"seq_len":64,"global_batch_size":2}})",
    // Megatron-LM's unfused cross entropy (the fp32 copy's cast and its passes).
    R"({"model":{"preset":"gpt3-1.7b","num_layers":2},"parallel":{"pp":2,"dp":2},
        "training":{"seq_len":64,"global_batch_size":4,"cross_entropy_loss_fusion":false}})",
    R"({"model":{"preset":"nemotron-h-8b","num_layers":4,"hybrid_pattern":"M*-M"},
        "parallel":{"tp":2,"dp":2,"sequence_parallel":true},"training":{"seq_len":64,"global_batch_size":2}})",
    // Jamba-v0.1's Mamba-1 mixer beside attention and MoE.
    R"({"model":{"preset":"jamba-v0.1","num_layers":4,"hybrid_pattern":"S*-E"},
        "parallel":{"tp":2,"dp":2,"ep":2,"sequence_parallel":true},"training":{"seq_len":64,"global_batch_size":2}})",
    // Qwen2-MoE's sigmoid-gated shared expert beside routed experts.
    R"({"model":{"preset":"mixtral-8x7b","num_layers":2,"shared_experts":1,"shared_expert_gate":true},
        "parallel":{"tp":2,"dp":2,"ep":2,"sequence_parallel":true},"training":{"seq_len":64,"global_batch_size":2}})",
    // HF-family options: GeGLU (Gemma), q/k/v-only biases (Qwen2), per-head q/k norms (Qwen3).
    R"({"model":{"preset":"llama3-8b","num_layers":2,"mlp":"geglu","qkv_bias":true,"qk_norm":true,
        "sandwich_norms":true,"sliding_window":16,"window_pattern":2,"attn_softcap":50,"final_softcap":30,
        "flash_attention":false,
        "embedding_multiplier":12,"residual_multiplier":0.22,"logit_multiplier":0.125},
        "parallel":{"tp":2,"dp":2,"pp":2,"sequence_parallel":true},"training":{"seq_len":64,"global_batch_size":4}})",
    // OLMo-2's post-sublayer norms and q/k norms over all heads; partial rotary (Phi-4-mini).
    R"({"model":{"preset":"llama3-8b","num_layers":2,"post_norms":true,"qk_norm":true,"qk_norm_across_heads":true,
        "rotary_dim":64},"parallel":{"tp":2,"dp":2,"sequence_parallel":true},
        "training":{"seq_len":64,"global_batch_size":2}})",
};

template <typename F>
void for_each_stage_graph(F&& f) {
  for (const char* text : kJobs) {
    auto job = parse_job(text);
    REQUIRE_MESSAGE(job.ok(), job.error().to_string());
    Generator gen = testing::make(*job);
    const GeneratorState& s = GeneratorAccess::state(gen);
    for (int64_t st = 0; st < s.num_stages(); ++st) f(s.graph_of(st), std::string(text));
  }
}

}  // namespace

TEST_CASE("ops: table entries are unique and state their kind, fn and gradient") {
  std::set<std::string> names;
  for (const OpDef* d : op_table()) {
    CAPTURE(d->name);
    CHECK(names.insert(d->name).second);
    CHECK(std::string(d->fn).size() > 0);
    CHECK(find_op_def(d->name) == d);
    if (d->vjp) CHECK(std::string(d->gradient).size() > 0);
    CHECK(std::string(fusion_class_name(d->fusion)) != "?");
  }
  CHECK(find_op_def("no-such-op") == nullptr);
}

TEST_CASE("ops: every op of a built job carries its table entry, and its kind and fn come from it") {
  int ops = 0;
  std::set<std::string> seen;
  for_each_stage_graph([&](const Graph& g, const std::string& job) {
    for (int id : g.order) {
      const Op& o = g.ops[id];
      CAPTURE(job);
      CAPTURE(o.name);
      REQUIRE(o.def != nullptr);
      CHECK(o.kind == o.def->kind);
      if (o.kind != OpKind::kCollective) CHECK(o.fn == o.def->fn);
      seen.insert(o.def->name);
      ++ops;
    }
  });
  CHECK(ops > 1000);
  // The jobs exercise every forward entry that has a gradient.
  for (const OpDef* d : op_table())
    if (d->vjp && d != &ops::kLayerNorm && d != &ops::kRMSNorm) CHECK_MESSAGE(seen.count(d->name), std::string(d->name));
}

TEST_CASE("ops: an entry's `saves` is what its VJP rule reads from the forward pass") {
  for_each_stage_graph([&](const Graph& g, const std::string& job) {
    // Forward tensors each forward op's backward ops read.
    std::map<int, std::pair<bool, bool>> reads;  // fwd op -> (reads an input, reads an output)
    std::set<int> differentiated;
    for (const Op& b : g.ops) {
      if (b.phase != Phase::kBackward || b.fwd_op < 0 || b.recomputed) continue;
      const Op& f = g.ops[b.fwd_op];
      differentiated.insert(f.id);
      auto& r = reads[f.id];
      for (int t : b.inputs) {
        // Follow a reshard chain back to the tensor the forward op touched.
        int u = t;
        for (int guard = 0; guard < 8 && g.tensors[u].producer >= 0; ++guard) {
          const Op& p = g.ops[g.tensors[u].producer];
          if (p.kind != OpKind::kCollective && &op_def(p) != &ops::kSlice) break;
          u = p.inputs[0];
        }
        const std::string base = g.tensors[u].name;
        for (int in : f.inputs) r.first |= u == in || g.tensors[in].name + ".recomputed" == base;
        for (int out : f.outputs) r.second |= u == out || g.tensors[out].name + ".recomputed" == base;
      }
    }
    for (int id : differentiated) {
      const Op& f = g.ops[id];
      // Cross entropy's rule (on the loss op) reads the logits and statistics;
      // its backward op is filed under the max statistic whose labels it uses.
      if (f.kind == OpKind::kLoss || f.kind == OpKind::kReduce) continue;
      CAPTURE(job);
      CAPTURE(f.name);
      const auto [in, out] = reads[id];
      switch (op_def(f).saves) {
        case Saves::kNothing: CHECK(!in); CHECK(!out); break;
        case Saves::kInputs: CHECK(in); CHECK(!out); break;
        case Saves::kOutputs: CHECK(!in); CHECK(out); break;
        case Saves::kInputsAndOutputs: CHECK(in); CHECK(out); break;
      }
    }
  });
}

TEST_CASE("ops: every collective and reshard slice records its cause where it was made") {
  std::set<CauseKind> kinds;
  for_each_stage_graph([&](const Graph& g, const std::string& job) {
    for (int id : g.order) {
      const Op& o = g.ops[id];
      if (o.kind != OpKind::kCollective && &op_def(o) != &ops::kSlice) continue;
      CAPTURE(job);
      CAPTURE(o.name);
      CHECK(o.cause.kind != CauseKind::kNone);
      CHECK(!o.cause.feature.empty());
      kinds.insert(o.cause.kind);
      // A reshard's record names the tensor and the layout mismatch.
      if (o.cause.kind == CauseKind::kPartialSum || o.cause.kind == CauseKind::kGather) {
        REQUIRE(o.cause.tensor >= 0);
        CHECK(!(o.cause.from == o.cause.to));
      }
    }
  });
  for (CauseKind k : {CauseKind::kPartialSum, CauseKind::kGather, CauseKind::kSlice, CauseKind::kMoeDispatch,
                      CauseKind::kMoeCombine, CauseKind::kGradBucket, CauseKind::kWeightSync,
                      CauseKind::kZeroGradShard, CauseKind::kZeroParamGatherAfterStep, CauseKind::kZeroParamGather,
                      CauseKind::kHsdpReplicaReduce})
    CHECK_MESSAGE(kinds.count(k), cause_kind_name(k));
}
