// Multi-token prediction (model.mtp_num_layers; Megatron-Core's
// --mtp-num-layers, megatron/core/transformer/multi_token_prediction.py):
// what one MTP module adds, derived by hand from its parts — two norms of
// h (enorm, hnorm), the 2h -> h projection (eh_proj), one decoder layer of
// the last layer's kind, a final norm, and a second pass through the shared
// output layer with its own loss — and where it runs (the last stage).
#include "../test_jobs.h"

#include <array>

#include "api/plan.h"
#include "api/simulate.h"
#include "api/state.h"
#include "plan/plan.h"

using namespace sc;
using namespace sc::testing;
using nlohmann::json;

namespace {

// Llama 3 8B's shape (RMSNorm, RoPE, untied), `L` layers, `mtp` MTP modules.
std::string llama_text(int64_t L, int64_t mtp, const std::string& parallel = R"({"dp":1})",
                       int64_t seq = 256, int64_t batch = 2) {
  return R"({"model":{"preset":"llama3-8b","flash_attention":true,"num_layers":)" + std::to_string(L) +
         R"(,"mtp_num_layers":)" + std::to_string(mtp) + R"(},"parallel":)" + parallel +
         R"(,"training":{"seq_len":)" + std::to_string(seq) + R"(,"micro_batch_size":1,"global_batch_size":)" +
         std::to_string(batch) + "}}";
}

int64_t count(const json& v) {
  return v.is_string() ? std::stoll(v.get<std::string>()) : v.get<int64_t>();
}

// Model FLOPs per iteration (summary.json, from the graph).
int64_t model_flops(const std::string& text) {
  return count(summary(make(job_of(text)))["flops"]["model_per_iteration"]);
}

bool has_op(const Graph& g, const std::string& name) {
  for (const Op& o : g.ops)
    if (o.name == name) return true;
  return false;
}

}  // namespace

TEST_CASE("mtp: one module adds a decoder layer, three norms and the 2h x h projection") {
  const ModelConfig base = preset("llama3-8b");
  const int64_t h = base.hidden;
  ModelConfig m = base, more = base, mtp = base;
  m.num_layers = 2;
  more.num_layers = 3;
  mtp.num_layers = 2;
  mtp.mtp_num_layers = 1;
  // enorm, hnorm and the final norm (RMSNorm: h each), eh_proj without bias.
  const int64_t by_hand = closed_form_parameters(more) - closed_form_parameters(m) + 3 * h + 2 * h * h;
  CHECK(closed_form_parameters(mtp) - closed_form_parameters(m) == by_hand);
  CHECK(closed_form_active_parameters(mtp) == closed_form_parameters(mtp));  // dense: every weight active
  // The graph holds exactly those weights (the embedding is shared, not counted twice).
  const json s = summary(make(job_of(llama_text(2, 1))));
  CHECK(count(s["parameters"]["total"]) == closed_form_parameters(mtp));
  // Pipelined, the last stage's embedding copy is not a parameter of its own either.
  const json sp = summary(make(job_of(llama_text(2, 1, R"({"pp":2})"))));
  CHECK(count(sp["parameters"]["total"]) == closed_form_parameters(mtp));
}

TEST_CASE("mtp: an MoE model's MTP layer is an MoE layer (the last decoder layer's kind)") {
  ModelConfig m = preset("deepseek-v3");
  m.num_layers = 2;
  m.first_dense_layers = 1;
  ModelConfig more = m, mtp = m;
  more.num_layers = 3;  // layer 2 is MoE, like layer 1
  mtp.mtp_num_layers = 1;
  const int64_t h = m.hidden;
  CHECK(closed_form_parameters(mtp) - closed_form_parameters(m) ==
        closed_form_parameters(more) - closed_form_parameters(m) + 3 * h + 2 * h * h);
  // Its routed experts are inactive but for the k a token uses.
  CHECK(closed_form_active_parameters(mtp) - closed_form_active_parameters(m) ==
        closed_form_active_parameters(more) - closed_form_active_parameters(m) + 3 * h + 2 * h * h);
}

TEST_CASE("mtp: the model FLOPs of a module: a layer, eh_proj and a second output layer") {
  // T tokens an iteration; forward + backward (dgrad, wgrad) = 3 x the
  // forward GEMM: eh_proj 2 T (2h) h, the output layer 2 T h V.
  const int64_t seq = 256, batch = 2, T = seq * batch;
  const ModelConfig m = preset("llama3-8b");
  const int64_t h = m.hidden, V = m.vocab;
  const int64_t layer = model_flops(llama_text(3, 0, R"({"dp":1})", seq, batch)) -
                        model_flops(llama_text(2, 0, R"({"dp":1})", seq, batch));
  const int64_t by_hand = layer + 3 * 2 * T * (2 * h) * h + 3 * 2 * T * h * V;
  CHECK(model_flops(llama_text(2, 1, R"({"dp":1})", seq, batch)) -
            model_flops(llama_text(2, 0, R"({"dp":1})", seq, batch)) ==
        by_hand);
  // Two modules: twice that.
  CHECK(model_flops(llama_text(2, 2, R"({"dp":1})", seq, batch)) -
            model_flops(llama_text(2, 0, R"({"dp":1})", seq, batch)) ==
        2 * by_hand);
}

TEST_CASE("mtp: it runs on the last stage, which embeds the tokens again and sums the embedding's gradient") {
  Generator gen = make(job_of(llama_text(2, 1, R"({"pp":2})")));
  const GeneratorState& s = GeneratorAccess::state(gen);
  REQUIRE(s.num_stages() == 2);
  const Graph& first = s.graph_of(0);
  const Graph& last = s.graph_of(1);
  for (const char* name : {"mtp0.embedding.word", "mtp0.enorm", "mtp0.hnorm", "mtp0.concat", "mtp0.eh_proj",
                           "mtp0.attn.flash", "mtp0.final_norm", "mtp0.output.logits", "mtp0.loss"}) {
    CAPTURE(name);
    CHECK(has_op(last, name));
    CHECK_FALSE(has_op(first, name));
  }
  // Two losses, two seeds; the MTP layer is layer L (after L0..L1) and
  // reads the decoder's final norm.
  int seeds = 0, mtp_layer_ops = 0;
  for (const Tensor& t : last.tensors) seeds += t.name == "loss.grad" || t.name == "mtp0.loss.grad";
  for (const Op& o : last.ops) mtp_layer_ops += o.name.starts_with("mtp0.") && o.layer == 2;
  CHECK(seeds == 2);
  CHECK(mtp_layer_ops > 0);
  // The word embedding's gradient is summed over the embedding group on both stages.
  for (const Graph* g : {&first, &last}) {
    bool embd = false;
    for (const Op& o : g->ops)
      embd |= o.kind == OpKind::kCollective && o.axis == "embd" && has(o.name, "embedding.word.weight");
    CHECK(embd);
  }
  // Without MTP an untied model has no embedding group.
  Generator plain = make(job_of(llama_text(2, 0, R"({"pp":2})")));
  for (const Op& o : GeneratorAccess::state(plain).graph_of(1).ops) CHECK(o.axis != "embd");
  check_runs_to_completion(gen);
}

TEST_CASE("mtp: the last stage computes longer by the module") {
  const Job with = job_of(llama_text(4, 1, R"({"pp":2})", 1024, 8));
  const Job without = job_of(llama_text(4, 0, R"({"pp":2})", 1024, 8));
  Result<SimulateReport> a = simulate(make(with), SimulateOptions{});
  Result<SimulateReport> b = simulate(make(without), SimulateOptions{});
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(a->sim.stages.size() == 2);
  CHECK(a->sim.stages[0].busy == doctest::Approx(b->sim.stages[0].busy).epsilon(1e-6));  // the first stage: unchanged
  CHECK(a->sim.stages[1].busy > b->sim.stages[1].busy);
  CHECK(a->step_seconds > b->step_seconds);
}

TEST_CASE("mtp: bad values and combinations are refused with the field named") {
  auto err = [](const std::string& text) {
    Result<Job> j = parse_job(text);
    REQUIRE_FALSE(j.ok());
    return j.error().to_string();
  };
  CHECK(has(err(llama_text(2, -1)), "model.mtp_num_layers"));
  CHECK(has(err(llama_text(2, 10001)), "model.mtp_num_layers"));  // above the layer cap
  const std::string gpt =
      R"({"model":{"preset":"gpt3-1.7b","num_layers":2,"mtp_num_layers":1},"training":{"seq_len":64,"global_batch_size":1}})";
  CHECK(has(err(gpt), "model.mtp_num_layers"));
  CHECK(has(err(gpt), "learned positions"));
  const std::string hybrid =
      R"({"model":{"preset":"nemotron-h-8b","num_layers":4,"mtp_num_layers":1},"training":{"seq_len":64,"global_batch_size":1}})";
  CHECK(has(err(hybrid), "model.mtp_num_layers"));
  CHECK(has(err(hybrid), "hybrid"));
  const std::string serving =
      R"({"mode":"inference","model":{"preset":"llama3-8b","mtp_num_layers":1},
          "serving":{"prompt_tokens":128,"output_tokens":16}})";
  CHECK(has(err(serving), "model.mtp_num_layers"));
  CHECK(has(err(serving), "speculative_tokens"));
}

TEST_CASE("mtp: the canonical job keeps the key only when set") {
  const Job with = job_of(llama_text(2, 1));
  const Job without = job_of(llama_text(2, 0));
  CHECK(json::parse(job_to_canonical_json(with))["model"]["mtp_num_layers"] == 1);
  CHECK_FALSE(json::parse(job_to_canonical_json(without))["model"].contains("mtp_num_layers"));
  Result<Job> back = parse_job(job_to_canonical_json(with));
  REQUIRE(back.ok());
  CHECK(back->model.mtp_num_layers == 1);
}

namespace {

// tp collectives of an MTP module (ops named mtp0.*), by type, of stage 0
// of a one-stage job: [all_gather, reduce_scatter, all_reduce, other].
std::array<int, 4> mtp_tp_collectives(const std::string& parallel) {
  Generator gen = make(job_of(llama_text(2, 1, parallel)));
  std::array<int, 4> n{0, 0, 0, 0};
  for (const Op& o : GeneratorAccess::state(gen).graph_of(0).ops) {
    if (o.kind != OpKind::kCollective || o.axis != "tp" || !o.name.starts_with("mtp0.")) continue;
    if (o.phase != Phase::kForward) continue;
    n[o.coll == CollectiveType::kAllGather ? 0 : o.coll == CollectiveType::kReduceScatter ? 1
      : o.coll == CollectiveType::kAllReduce ? 2 : 3]++;
  }
  return n;
}

// summary.json's memory "peak" of the most loaded stage: what the plan's
// memory estimate must equal (plan_test.cc).
int64_t max_stage_peak(const Job& j) {
  int64_t peak = 0;
  const json s = summary(make(j));
  for (const json& st : s["stages"]) peak = std::max(peak, st["memory_bytes"]["peak"].get<int64_t>());
  return peak;
}

}  // namespace

// Megatron-Core's forward of one module at tp 2 (multi_token_prediction.py,
// _concat_embeddings; the layer as any decoder layer), counted by hand:
// with sequence parallelism the embedding's reduce-scatter, eh_proj's
// input all-gather (ColumnParallelLinear under SP) and output gather
// (gather_from_tensor_model_parallel_region; the scatter back to the
// sequence is local), the layer's two all-gathers and two reduce-scatters,
// the output layer's input all-gather, the loss's three all-reduces; without
// it, the embedding's all-reduce, eh_proj's output gather, the layer's two
// all-reduces and the loss's three: no all-to-all either way.
TEST_CASE("mtp: the module's tp collectives are Megatron-Core's, with and without sequence parallelism") {
  const std::array<int, 4> sp = mtp_tp_collectives(R"({"tp":2,"sequence_parallel":true})");
  CHECK(sp[0] == 1 + 1 + 2 + 1);  // all-gathers: eh_proj's input and output, ln1 and ln2 outputs, the final norm's
  CHECK(sp[1] == 1 + 2);          // reduce-scatters: the embedding, attention's and the MLP's outputs
  CHECK(sp[2] == 3);              // the loss's statistics
  CHECK(sp[3] == 0);
  const std::array<int, 4> plain = mtp_tp_collectives(R"({"tp":2})");
  CHECK(plain[0] == 1);      // eh_proj's output
  CHECK(plain[1] == 0);
  CHECK(plain[2] == 1 + 2 + 3);  // the embedding, attention's and the MLP's outputs, the loss
  CHECK(plain[3] == 0);
}

TEST_CASE("mtp: the module's attention is windowed as Megatron-Core numbers it (layer k + 1)") {
  // window_pattern 2: layer l (0-based) is global when (l + 1) % 2 == 0.
  // With 2 decoder layers the last one (l = 1) is global; MTP module 0 is
  // layer number 1: windowed; module 1, layer number 2: global.
  const std::string text =
      R"({"model":{"preset":"llama3-8b","num_layers":2,"mtp_num_layers":2,"sliding_window":64,"window_pattern":2},
          "training":{"seq_len":256,"global_batch_size":1}})";
  Generator gen = make(job_of(text));
  const Graph& g = GeneratorAccess::state(gen).graph_of(0);
  auto flops_of = [&](const std::string& name) -> Expr {
    for (const Op& o : g.ops)
      if (o.name == name) return o.flops;
    FAIL("no op " << name);
    return Expr(0);
  };
  const Bindings& b = GeneratorAccess::state(gen).bind;
  const int64_t l0 = flops_of("L0.attn.flash").eval(b, "L0").value();    // windowed
  const int64_t l1 = flops_of("L1.attn.flash").eval(b, "L1").value();    // global
  CHECK(l0 < l1);
  CHECK(flops_of("mtp0.attn.flash").eval(b, "m0").value() == l0);
  CHECK(flops_of("mtp1.attn.flash").eval(b, "m1").value() == l1);
}

TEST_CASE("mtp: the plan runs with more modules than its proxy's layers") {
  // A dense model's proxy has one layer; two MTP modules must not refuse it.
  const Job dense = job_of(R"({"model":{"preset":"llama3-8b","num_layers":4,"mtp_num_layers":2},
      "parallel":{"pp":2,"dp":2},"training":{"seq_len":256,"micro_batch_size":1,"global_batch_size":8}})");
  const PlanEstimate e = estimate_layout(dense);
  REQUIRE_MESSAGE(e.ok, e.error.to_string());
  CHECK(e.peak_lower_bytes == max_stage_peak(dense));
}

TEST_CASE("mtp: the plan keeps an MoE model's MTP layer MoE when its proxy's layer is dense") {
  // moe_layer_step 2: layer 0 is dense and layer 3 (the last) MoE, so the
  // MTP layer is MoE: the estimate's memory is the built job's
  // (plan_test.cc's rule) only if the proxy prices it MoE.
  const Job moe = job_of(R"({"model":{"preset":"mixtral-8x7b","num_layers":4,"moe_layer_step":2,"mtp_num_layers":1},
      "parallel":{"pp":2,"ep":2,"dp":2},"training":{"seq_len":256,"micro_batch_size":1,"global_batch_size":8}})");
  const PlanEstimate m = estimate_layout(moe);
  REQUIRE_MESSAGE(m.ok, m.error.to_string());
  CHECK(m.peak_lower_bytes == max_stage_peak(moe));
}

TEST_CASE("mtp: recompute_modules reach the module's layer as any decoder layer's") {
  // Megatron-Core builds the MTP layer as a TransformerLayer of the same
  // config: its "mlp" module is recomputed like L0's.
  const std::string text =
      R"({"model":{"preset":"llama3-8b","num_layers":2,"mtp_num_layers":1},
          "training":{"seq_len":256,"global_batch_size":1,"recompute":"selective","recompute_modules":["mlp"]}})";
  Generator gen = make(job_of(text));
  const Graph& g = GeneratorAccess::state(gen).graph_of(0);
  CHECK(has_op(g, "L0.mlp.fc1.recompute"));
  CHECK(has_op(g, "mtp0.mlp.fc1.recompute"));
  CHECK_FALSE(has_op(g, "mtp0.eh_proj.recompute"));  // the module's own ops are not the layer's MLP
}
