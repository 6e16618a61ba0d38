// FP8 training (core/cost/fp8_cost.h, docs/hardware.md "FP8 training"):
// parsing and refusals of training.fp8_recipe, which GEMMs run at FP8, the
// quantize / amax kernels and their bytes by hand, the FP8 weight copies.
#include <algorithm>
#include <set>
#include <string>

#include "../test_jobs.h"
#include "cost/fp8_cost.h"
#include "api/simulate.h"

using namespace sc;

namespace {

// One Llama-style layer: h 256, 4 heads, SwiGLU f 512, V 1000 (or h 1024,
// f 4096, s 1024 when `big`: GEMMs long enough that FP8 shows in every one).
std::string job_text(const std::string& training_extra, const std::string& hw = "\"h100\"", bool big = false) {
  const std::string h = big ? "1024" : "256", f = big ? "4096" : "512", s = big ? "1024" : "128";
  return R"({"model": {"name": "t", "num_layers": 1, "hidden": )" + h + R"(, "num_heads": 4, "vocab": 1000,
                       "ffn_hidden": )" + f + R"(, "mlp": "swiglu", "norm": "rmsnorm", "position": "rope",
                       "tied_embeddings": false, "linear_bias": false, "dropout": false},
             "training": {"seq_len": )" + s + R"(, "micro_batch_size": 2, "global_batch_size": 8)" +
         training_extra + R"(}, "hardware": )" + hw + "}";
}

Job must(const std::string& text) {
  Result<Job> j = parse_job(text);
  REQUIRE_MESSAGE(j.ok(), j.error().to_string());
  return j.value();
}

// Rank 0's trace of `bf16` and of the same job under `recipe`, node for
// node (the FP8 recipe changes durations and sizes, never the nodes, but
// for delayed scaling's amax all-reduces, which are left out of the FP8
// trace here; their own test is below).
std::pair<RankTrace, RankTrace> bf16_and_fp8_rank0(const Job& bf16, Fp8Recipe recipe) {
  Job fp8 = bf16;
  fp8.training.fp8_recipe = recipe;
  Result<Generator> gb = Generator::create(bf16), gf = Generator::create(fp8);
  REQUIRE_MESSAGE(gb.ok(), gb.error().to_string());
  REQUIRE_MESSAGE(gf.ok(), gf.error().to_string());
  Result<RankTrace> tb = gb.value().rank_trace(0), tf = gf.value().rank_trace(0);
  REQUIRE(tb.ok());
  REQUIRE(tf.ok());
  std::vector<TraceNode>& fn = tf.value().nodes;
  fn.erase(std::remove_if(fn.begin(), fn.end(),
                          [](const TraceNode& x) { return x.name.find("fp8.amax_reduce") != std::string::npos; }),
           fn.end());
  REQUIRE(tb.value().nodes.size() == tf.value().nodes.size());
  return {std::move(tb).value(), std::move(tf).value()};
}

}  // namespace

TEST_CASE("fp8_recipe: parses the four recipes and none; bad values and bare fp8 are refused by field") {
  CHECK(must(job_text("")).training.fp8_recipe == Fp8Recipe::kNone);
  CHECK(must(job_text(R"(, "fp8_recipe": "none")")).training.fp8_recipe == Fp8Recipe::kNone);
  CHECK(must(job_text(R"(, "fp8_recipe": "delayed")")).training.fp8_recipe == Fp8Recipe::kDelayed);
  CHECK(must(job_text(R"(, "fp8_recipe": "tensorwise")")).training.fp8_recipe == Fp8Recipe::kTensorwise);
  CHECK(must(job_text(R"(, "fp8_recipe": "blockwise")")).training.fp8_recipe == Fp8Recipe::kBlockwise);
  CHECK(must(job_text(R"(, "fp8_recipe": "mxfp8")", "\"b200\"")).training.fp8_recipe == Fp8Recipe::kMxfp8);

  Result<Job> bad = parse_job(job_text(R"(, "fp8_recipe": "e4m3")"));
  REQUIRE(!bad.ok());
  CHECK(bad.error().path == "training.fp8_recipe");
  CHECK(bad.error().message.find("e4m3") != std::string::npos);
  CHECK(bad.error().message.find("tensorwise") != std::string::npos);

  Result<Job> num = parse_job(job_text(R"(, "fp8_recipe": 1)"));
  REQUIRE(!num.ok());
  CHECK(num.error().path == "training.fp8_recipe");

  // A bare fp8 dtype says what to write instead.
  Result<Job> bare = parse_job(job_text(R"(, "dtype": "fp8")"));
  REQUIRE(!bare.ok());
  CHECK(bare.error().path == "training.dtype");
  CHECK(bare.error().message.find("\"fp8_recipe\": \"delayed\"") != std::string::npos);

  // A100 has no FP8 tensor cores; MXFP8 needs Blackwell.
  Result<Job> a100 = parse_job(job_text(R"(, "fp8_recipe": "delayed")", "\"a100\""));
  REQUIRE(!a100.ok());
  CHECK(a100.error().path == "training.fp8_recipe");
  CHECK(a100.error().message.find("peak_flops_fp8") != std::string::npos);
  Result<Job> mx = parse_job(job_text(R"(, "fp8_recipe": "mxfp8")"));
  REQUIRE(!mx.ok());
  CHECK(mx.error().path == "training.fp8_recipe");
  Result<Job> fp32 = parse_job(job_text(R"(, "dtype": "fp32", "fp8_recipe": "delayed")"));
  REQUIRE(!fp32.ok());
  CHECK(fp32.error().path == "training.fp8_recipe");

  // Canonical form: the key only when set, so other jobs keep their hash.
  CHECK(job_to_canonical_json(must(job_text(""))).find("fp8_recipe") == std::string::npos);
  CHECK(job_to_canonical_json(must(job_text(R"(, "fp8_recipe": "blockwise")"))).find("\"fp8_recipe\": \"blockwise\"") !=
        std::string::npos);

  // Serving jobs keep their fp8 weights and KV cache.
  Result<Job> serve = parse_job(R"({"mode": "inference", "model": "llama3-8b", "hardware": "h100",
                                    "serving": {"weights_dtype": "fp8", "kv_dtype": "fp8"}})");
  CHECK_MESSAGE(serve.ok(), (serve.ok() ? "" : serve.error().to_string()));
}

TEST_CASE("fp8: the linear layers' GEMMs run at FP8, attention, norms, embedding and LM head stay BF16") {
  Job bf16 = must(job_text(R"(, "recompute": "none")", "\"h100\"", /*big=*/true));
  bf16.model.flash_attention = false;  // the scores/values BMMs are GEMMs too: they must stay BF16
  const auto [tb, tf] = bf16_and_fp8_rank0(bf16, Fp8Recipe::kDelayed);
  // The linear layers of this model, by name: q/k/v (fused qkv), the
  // attention output projection, the MLP's fc1 (gate and up) and fc2.
  const std::vector<std::string> linears = {"attn.qkv", "attn.proj", "mlp.fc1", "mlp.fc2"};
  // Their nodes: "mb<i>.fwd.L0.<linear>", "mb<i>.bwd.L0.<linear>.dgrad" / ".wgrad".
  auto is_linear = [&](const std::string& n) {
    for (const std::string& l : linears)
      for (const char* suffix : {"", ".dgrad", ".wgrad"}) {
        const std::string tail = ".L0." + l + suffix;
        if (n.size() > tail.size() && n.compare(n.size() - tail.size(), tail.size(), tail) == 0) return true;
      }
    return false;
  };
  std::set<std::string> changed, same_bf16;
  int linear_nodes = 0;
  uint64_t linear_us_bf16 = 0, linear_us_fp8 = 0;
  for (size_t i = 0; i < tb.nodes.size(); ++i) {
    const TraceNode& a = tb.nodes[i];
    const TraceNode& b = tf.nodes[i];
    REQUIRE(a.name == b.name);
    if (a.kind != TraceNodeKind::kCompute) continue;
    if (is_linear(a.name)) {
      // An FP8 GEMM reads its operands' 1-byte copies: fewer bytes, always.
      ++linear_nodes;
      if (b.tensor_size < a.tensor_size) changed.insert(a.name);
      linear_us_bf16 += a.duration_micros;
      linear_us_fp8 += b.duration_micros;
    } else {
      // attention BMMs, softmax, norms, embedding, output layer, optimizer: untouched
      CHECK_MESSAGE(a.duration_micros == b.duration_micros, a.name);
      CHECK_MESSAGE(a.tensor_size == b.tensor_size, a.name);
      if (a.name.find("output.logits") != std::string::npos || a.name.find("attn.qk") != std::string::npos)
        same_bf16.insert(a.name);
    }
  }
  // forward, dgrad and wgrad of each of the 4 linears all moved; the LM
  // head and the attention BMMs did not.
  CHECK(linear_nodes == 4 * 3 * 4);  // 4 linears x (fprop, dgrad, wgrad) x 4 micro-batches
  CHECK(static_cast<int>(changed.size()) == linear_nodes);
  CHECK(!same_bf16.empty());
  // At 1.87x the GEMM rate (h100, measured), with the quantize kernels added, the linears are faster but not 2x.
  CHECK(linear_us_fp8 < linear_us_bf16);
  CHECK(2 * linear_us_fp8 > linear_us_bf16);
}

TEST_CASE("fp8 kernels by hand: quantize, transpose and amax bytes per recipe") {
  // A 4096 -> 4096 linear on 8192 tokens (b*s), 4 micro-batches per step.
  const int64_t n = 8192LL * 4096, w = 4096LL * 4096;
  Fp8Operands x;
  x.elems = n;
  x.weight_elems = w;
  x.micro_batches = 4;
  const double N = static_cast<double>(n), W = static_cast<double>(w);

  // delayed, input not from a norm: cast+transpose reads 2 B, writes 1 + 1 B;
  // the weight the same, a quarter per micro-batch.
  auto k = fp8_kernels(Fp8Recipe::kDelayed, Fp8GemmRole::kFprop, x);
  REQUIRE(k.size() == 2);
  CHECK(k[0].name == "fp8.quantize.input");
  CHECK(k[0].bytes == 4 * N);
  CHECK(k[1].name == "fp8.quantize.weight");
  CHECK(k[1].bytes == 4 * W / 4);
  CHECK(k[1].launches == 0.25);

  // delayed after a norm: the norm wrote the FP8 copy, a transpose remains.
  x.from_norm = true;
  k = fp8_kernels(Fp8Recipe::kDelayed, Fp8GemmRole::kFprop, x);
  REQUIRE(k.size() == 2);
  CHECK(k[0].name == "fp8.transpose.input");
  CHECK(k[0].bytes == 2 * N);

  // tensorwise: an amax pass (2 B read) before each cast, no norm fusion.
  k = fp8_kernels(Fp8Recipe::kTensorwise, Fp8GemmRole::kFprop, x);
  REQUIRE(k.size() == 4);
  CHECK(k[0].name == "fp8.amax.input");
  CHECK(k[0].bytes == 2 * N);
  CHECK(k[1].bytes == 4 * N);
  CHECK(k[2].name == "fp8.amax.weight");
  CHECK(k[2].bytes == 2 * W / 4);

  // blockwise: FP32 scales per 1x128 tile (input) / 128x128 block (weight), both directions.
  k = fp8_kernels(Fp8Recipe::kBlockwise, Fp8GemmRole::kFprop, x);
  REQUIRE(k.size() == 2);
  CHECK(k[0].bytes == 4 * N + 2 * 4 * (N / 128));
  CHECK(k[1].bytes == (4 * W + 2 * 4 * (W / 16384)) / 4);

  // mxfp8: one E8M0 byte per 32 elements, both directions.
  k = fp8_kernels(Fp8Recipe::kMxfp8, Fp8GemmRole::kFprop, x);
  REQUIRE(k.size() == 2);
  CHECK(k[0].bytes == 4 * N + 2 * (N / 32));

  // dgrad quantizes the output gradient; wgrad adds nothing.
  Fp8Operands dy;
  dy.elems = n;
  k = fp8_kernels(Fp8Recipe::kDelayed, Fp8GemmRole::kDgrad, dy);
  REQUIRE(k.size() == 1);
  CHECK(k[0].name == "fp8.quantize.grad_output");
  CHECK(k[0].bytes == 4 * N);
  CHECK(fp8_kernels(Fp8Recipe::kDelayed, Fp8GemmRole::kWgrad, dy).empty());
  CHECK(fp8_kernels(Fp8Recipe::kNone, Fp8GemmRole::kFprop, x).empty());

  // Time: bytes at hbm_efficiency of HBM, each at least the launch floor.
  HardwareProfile hw = hardware_preset("h100").value();
  const double hbm = hw.mem_bandwidth * hw.hbm_efficiency;
  x.from_norm = false;
  k = fp8_kernels(Fp8Recipe::kDelayed, Fp8GemmRole::kFprop, x);
  CHECK(fp8_kernels_micros(hw, k) == doctest::Approx(4 * N / hbm * 1e6 + W / hbm * 1e6));
  Fp8Operands tiny;
  tiny.elems = 16;
  CHECK(fp8_kernels_micros(hw, fp8_kernels(Fp8Recipe::kDelayed, Fp8GemmRole::kDgrad, tiny)) ==
        doctest::Approx(hw.kernel_floor_micros));
}

TEST_CASE("fp8 kernels by hand: a sequence-parallel operand is cast on its shard, gathered in FP8, transposed after") {
  // tp 8: the GEMM reads an all-gathered 8192 x 4096 activation whose shard
  // on this rank is 1024 x 4096 (TE casts the shard, gathers the FP8 copy).
  const int64_t shard = 1024LL * 4096, full = 8 * shard;
  const double S = static_cast<double>(shard), F = static_cast<double>(full);
  Fp8Operands x;
  x.elems = shard;
  x.gathered = true;
  // delayed after a norm: the norm wrote the row-wise FP8 shard; nothing
  // else before the gather (the column-wise copy is made after it).
  x.from_norm = true;
  CHECK(fp8_kernels(Fp8Recipe::kDelayed, Fp8GemmRole::kFprop, x).empty());
  // Not after a norm (the row-parallel GEMM's output gradient in dgrad):
  // a row-wise cast of the shard only, read 2 B, write 1 B.
  x.from_norm = false;
  auto k = fp8_kernels(Fp8Recipe::kDelayed, Fp8GemmRole::kDgrad, x);
  REQUIRE(k.size() == 1);
  CHECK(k[0].name == "fp8.cast.grad_output");
  CHECK(k[0].bytes == 3 * S);
  // tensorwise: its amax pass first, then the same row-wise cast.
  k = fp8_kernels(Fp8Recipe::kTensorwise, Fp8GemmRole::kDgrad, x);
  REQUIRE(k.size() == 2);
  CHECK(k[0].bytes == 2 * S);
  CHECK(k[1].bytes == 3 * S);
  // blockwise / mxfp8 gather both copies: the shard's full quantize as without sp.
  k = fp8_kernels(Fp8Recipe::kBlockwise, Fp8GemmRole::kDgrad, x);
  REQUIRE(k.size() == 1);
  CHECK(k[0].bytes == 4 * S + 2 * 4 * (S / 128));
  // The weight gradient transposes the gathered tensor: read 1 B, write 1 B
  // per gathered element (all 8 shards), for each gathered operand.
  Fp8Operands w;
  w.wgrad_gathered = full;
  k = fp8_kernels(Fp8Recipe::kDelayed, Fp8GemmRole::kWgrad, w);
  REQUIRE(k.size() == 1);
  CHECK(k[0].name == "fp8.transpose.gathered");
  CHECK(k[0].bytes == 2 * F);
  CHECK(fp8_kernels(Fp8Recipe::kTensorwise, Fp8GemmRole::kWgrad, w).size() == 1);
  CHECK(fp8_kernels(Fp8Recipe::kBlockwise, Fp8GemmRole::kWgrad, w).empty());
  CHECK(fp8_kernels(Fp8Recipe::kMxfp8, Fp8GemmRole::kWgrad, w).empty());
}

TEST_CASE("fp8 with sequence parallelism: the all-gathers feeding FP8 GEMMs move 1 byte per element") {
  // tp 2 with sequence parallelism: the forward gathers of the norms'
  // outputs (qkv, fc1), the backward gathers of proj's and fc2's output
  // gradients and the wgrad re-gathers all feed FP8 GEMMs only; the final
  // norm's gather feeds the LM head, which stays BF16.
  const std::string par = R"(, "recompute": "none"}, "parallel": {"tp": 2, "sequence_parallel": true)";
  // job_text closes "training" itself: splice the parallel block in before its last brace.
  std::string text = job_text(par, "\"h100\"", /*big=*/true);
  Job bf16 = must(text);
  const auto [tb, tf] = bf16_and_fp8_rank0(bf16, Fp8Recipe::kDelayed);
  int halved = 0, kept = 0;
  for (size_t i = 0; i < tb.nodes.size(); ++i) {
    const TraceNode& a = tb.nodes[i];
    const TraceNode& b = tf.nodes[i];
    REQUIRE(a.name == b.name);
    if (a.kind != TraceNodeKind::kCollective) continue;
    const bool gather = a.name.find("all_gather(tp)") != std::string::npos;
    // Outside the layer: the LM head reads the final norm's gathered
    // output and the embedding's backward its gathered gradient: BF16 in both.
    if (gather && a.name.find(".L0.") == std::string::npos) {
      CHECK_MESSAGE(b.comm_size == a.comm_size, a.name);
      if (a.name.find("final_norm") != std::string::npos) ++kept;
    } else if (gather) {
      // Each shard: micro-batch 2 x 1024 tokens / tp 2 x hidden 1024.
      CHECK_MESSAGE(a.comm_size == 2 * 1024 / 2 * 1024 * 2, a.name);
      CHECK_MESSAGE(b.comm_size == 2 * 1024 / 2 * 1024, a.name);
      CHECK_MESSAGE(b.output_bytes == 2 * 1024 * 1024, a.name);
      ++halved;
    } else {
      CHECK_MESSAGE(b.comm_size == a.comm_size, a.name);  // reduce-scatters of BF16 GEMM outputs, dp
    }
  }
  // Per micro-batch (4): forward ln1 + ln2, backward 2 gradient gathers + 2 re-gathers.
  CHECK(halved == 4 * 6);
  CHECK(kept >= 4);
}

TEST_CASE("fp8 weight copies in memory, by hand") {
  CHECK(fp8_weight_copy_bytes(Fp8Recipe::kNone, 1000) == 0);
  CHECK(fp8_weight_copy_bytes(Fp8Recipe::kDelayed, 1 << 20) == 2 << 20);
  CHECK(fp8_weight_copy_bytes(Fp8Recipe::kBlockwise, 1 << 20) == (2 << 20) + 2 * 4 * 64);
  CHECK(fp8_weight_copy_bytes(Fp8Recipe::kMxfp8, 1 << 20) == (2 << 20) + 2 * (1 << 15));

  // The 1-layer model above: qkv 256x768, proj 256x256, fc1 (SwiGLU gate +
  // up) 256x1024, fc2 512x256 = 655,360 FP8 parameters; the embedding and
  // the LM head (1000x256 each) stay BF16. Delayed: 2 B each.
  Job fp8 = must(job_text(R"(, "fp8_recipe": "delayed")"));
  Result<Generator> g = Generator::create(fp8);
  REQUIRE(g.ok());
  auto s = nlohmann::json::parse(g.value().summary_json());
  const auto& mem = s["stages"][0]["memory_bytes"];
  CHECK(mem["fp8_weight_copies"].get<int64_t>() == 2 * 655360);
  CHECK(mem["peak"].get<int64_t>() == mem["weights"].get<int64_t>() + 2 * 655360 + mem["gradients"].get<int64_t>() +
                                          mem["optimizer"].get<int64_t>() + mem["activations_peak"].get<int64_t>());
  Job bf16 = must(job_text(""));
  auto sb = nlohmann::json::parse(Generator::create(bf16).value().summary_json());
  CHECK(!sb["stages"][0]["memory_bytes"].contains("fp8_weight_copies"));
}

TEST_CASE("fp8_params: the FP8 linears' weights are held as their FP8 copies only, by hand") {
  // The 1-layer model above: 655,360 FP8 parameters (qkv, proj, fc1, fc2);
  // BF16: the embedding and the LM head, 1000 x 256 each, and three RMSNorm
  // weights of 256 = 512,768. Without fp8_params all 1,168,128 are held in
  // BF16 beside the copies; with it only the 512,768 (Megatron-Core
  // --fp8-param-gather / NeMo fp8_params: TE's fp8_model_init keeps no
  // high-precision weight). Gradients and optimizer are unchanged.
  Job plain = must(job_text(R"(, "fp8_recipe": "delayed")"));
  Job held = must(job_text(R"(, "fp8_recipe": "delayed", "fp8_params": true)"));
  CHECK(held.training.fp8_params);
  auto mp = nlohmann::json::parse(Generator::create(plain).value().summary_json())["stages"][0]["memory_bytes"];
  auto mh = nlohmann::json::parse(Generator::create(held).value().summary_json())["stages"][0]["memory_bytes"];
  CHECK(mp["weights"].get<int64_t>() == 2 * 1168128);
  CHECK(mh["weights"].get<int64_t>() == 2 * 512768);
  CHECK(mh["fp8_weight_copies"].get<int64_t>() == 2 * 655360);
  CHECK(mh["gradients"] == mp["gradients"]);
  CHECK(mh["optimizer"] == mp["optimizer"]);
  CHECK(mp["peak_live"].get<int64_t>() - mh["peak_live"].get<int64_t>() == 2 * 655360);
  // Written in the canonical form only when set; needs a recipe.
  CHECK(job_to_canonical_json(held).find("fp8_params") != std::string::npos);
  CHECK(job_to_canonical_json(plain).find("fp8_params") == std::string::npos);
  Result<Job> no_recipe = parse_job(job_text(R"(, "fp8_params": true)"));
  Status st = no_recipe.ok() ? validate_job(*no_recipe) : Status(no_recipe.error());
  REQUIRE(!st.ok());
  CHECK(st.error().path == "training.fp8_params");
  Result<Job> not_bool = parse_job(job_text(R"(, "fp8_recipe": "delayed", "fp8_params": 1)"));
  REQUIRE(!not_bool.ok());
  CHECK(not_bool.error().path == "training.fp8_params");
}

TEST_CASE("fp8 under ZeRO-3: the GEMMs reading an all-gathered weight run at FP8 too") {
  // FSDP gathers each layer's BF16 weights before use; the GEMM's operand
  // is the gathered copy, and TE quantizes it as it would the parameter.
  std::string text = job_text(R"(, "recompute": "none")", "\"h100\"", /*big=*/true);
  text.replace(text.find("\"training\""), 0, R"("parallel": {"dp": 2, "zero": 3}, )");
  Job bf16 = must(text);
  const auto [tb, tf] = bf16_and_fp8_rank0(bf16, Fp8Recipe::kTensorwise);
  int fp8_linears = 0;
  for (size_t i = 0; i < tb.nodes.size(); ++i) {
    const TraceNode &a = tb.nodes[i], &b = tf.nodes[i];
    if (a.kind != TraceNodeKind::kCompute) continue;
    for (const char* l : {".L0.attn.qkv", ".L0.attn.proj", ".L0.mlp.fc1", ".L0.mlp.fc2"})
      for (const char* suffix : {"", ".dgrad", ".wgrad"}) {
        const std::string tail = std::string(l) + suffix;
        if (a.name.size() > tail.size() && a.name.compare(a.name.size() - tail.size(), tail.size(), tail) == 0) {
          CHECK_MESSAGE(b.tensor_size < a.tensor_size, a.name);  // 1-byte operands
          ++fp8_linears;
        }
      }
  }
  CHECK(fp8_linears == 4 * 3 * 2);  // 4 linears x (fprop, dgrad, wgrad) x 2 micro-batches (8 / (2 x 2))
  // The FP8 weight copies, sharded over the 2 ranks: qkv 1024x3072, proj
  // 1024x1024, fc1 (gate + up) 1024x8192, fc2 4096x1024 = 16,777,216
  // parameters at 2 B (tensorwise: one scale per tensor), halved.
  Job fp8 = bf16;
  fp8.training.fp8_recipe = Fp8Recipe::kTensorwise;
  const auto s = nlohmann::json::parse(Generator::create(fp8).value().summary_json());
  CHECK(s["stages"][0]["memory_bytes"]["fp8_weight_copies"].get<int64_t>() == 2 * 16777216 / 2);
}

TEST_CASE("fp8 delayed: an amax all-reduce over tp x cp x dp after every forward and backward step, by hand") {
  // 2 layers over pp 2 (one per stage), tp 2, dp 2: 8 ranks, 4 micro-batches
  // per pipeline. A stage's chunk has 4 FP8 linears (qkv, proj, fc1, fc2):
  // forward 3 amax entries each (input, weight, output), backward 2, 4 bytes
  // apiece: 48 and 32 bytes per step.
  auto job_with = [&](const std::string& recipe) {
    std::string text = R"({"model": {"name": "t", "num_layers": 2, "hidden": 256, "num_heads": 4, "vocab": 1000,
        "ffn_hidden": 512, "mlp": "swiglu", "norm": "rmsnorm", "position": "rope", "tied_embeddings": false,
        "linear_bias": false, "dropout": false},
        "parallel": {"tp": 2, "dp": 2, "pp": 2, "sequence_parallel": true},
        "training": {"seq_len": 128, "micro_batch_size": 1, "global_batch_size": 8, "fp8_recipe": ")" + recipe + R"("}})";
    return must(text);
  };
  Result<Generator> g = Generator::create(job_with("delayed"));
  REQUIRE_MESSAGE(g.ok(), g.error().to_string());
  for (int64_t rank : {0, 5}) {
    CAPTURE(rank);
    const RankTrace t = g.value().rank_trace(rank).value();
    int fwd = 0, bwd = 0;
    std::set<int64_t> groups;
    for (size_t i = 0; i < t.nodes.size(); ++i) {
      const TraceNode& x = t.nodes[i];
      if (x.name.find("fp8.amax_reduce") == std::string::npos) continue;
      CHECK(x.kind == TraceNodeKind::kCollective);
      CHECK(x.coll == CollectiveType::kAllReduce);
      const bool f = x.name.find(".fwd.") != std::string::npos;
      (f ? fwd : bwd)++;
      CHECK(x.comm_size == (f ? 48 : 32));
      groups.insert(x.group);
      // On the compute stream: it follows a compute node, and the next
      // compute node of the program waits for it.
      REQUIRE(!x.deps.empty());
      for (size_t j = i + 1; j < t.nodes.size(); ++j)
        if (t.nodes[j].kind == TraceNodeKind::kCompute) {
          CHECK(std::find(t.nodes[j].deps.begin(), t.nodes[j].deps.end(), x.id) != t.nodes[j].deps.end());
          break;
        }
    }
    CHECK(fwd == 4);  // one per micro-batch's forward step
    CHECK(bwd == 4);
    REQUIRE(groups.size() == 1);
    // Its members: the stage's tp x dp ranks (Megatron order tp, cp, dp, pp:
    // stage 0 = ranks 0-3, stage 1 = ranks 4-7).
    const std::vector<int64_t> want = rank < 4 ? std::vector<int64_t>{0, 1, 2, 3} : std::vector<int64_t>{4, 5, 6, 7};
    CHECK(g.value().groups().at(*groups.begin()) == want);
  }
  // Current scaling (tensorwise) reduces no amax history: no such node.
  Result<Generator> cs = Generator::create(job_with("tensorwise"));
  REQUIRE(cs.ok());
  const RankTrace current = cs.value().rank_trace(0).value();
  REQUIRE(!current.nodes.empty());
  for (const TraceNode& x : current.nodes) CHECK(x.name.find("amax_reduce") == std::string::npos);
}

TEST_CASE("fp8_training_gemm_efficiency: a training job's FP8 GEMMs run at that share of the FP8 rate, nothing else moves") {
  // The profiles' fitted value (docs/hardware.md, "FP8 GEMMs in training
  // iterations"): h100, and h200 with the same SMs and clocks; b200 (no
  // measured FP8 rate) and a100 (no FP8) keep 1.
  CHECK(hardware_preset("h100").value().fp8_training_gemm_efficiency == 0.90);
  CHECK(hardware_preset("h200").value().fp8_training_gemm_efficiency == 0.90);
  CHECK(hardware_preset("b200").value().fp8_training_gemm_efficiency == 1.0);
  CHECK(hardware_preset("a100").value().fp8_training_gemm_efficiency == 1.0);

  // A linear's FP8 node is its GEMM, G / e at share e (compute-bound at
  // these sizes), plus the quantize kernels X, which do not depend on e:
  // d(e) = G / e + X, so d(0.5) - d(1) = G and d(0.25) - d(0.5) = 2 G.
  auto rank0 = [](const std::string& e) {
    Job j = must(job_text(R"(, "recompute": "none", "fp8_recipe": "delayed")",
                          R"({"preset": "h100", "fp8_training_gemm_efficiency": )" + e + "}", /*big=*/true));
    Result<Generator> g = Generator::create(j);
    REQUIRE_MESSAGE(g.ok(), g.error().to_string());
    Result<RankTrace> t = g.value().rank_trace(0);
    REQUIRE(t.ok());
    return std::move(t).value();
  };
  const RankTrace t1 = rank0("1"), t05 = rank0("0.5"), t025 = rank0("0.25");
  REQUIRE(t1.nodes.size() == t05.nodes.size());
  REQUIRE(t1.nodes.size() == t025.nodes.size());
  double g1 = 0, g2 = 0;  // sums of d(0.5) - d(1) and d(0.25) - d(0.5) over the linears
  int linears = 0;
  for (size_t i = 0; i < t1.nodes.size(); ++i) {
    const TraceNode& a = t1.nodes[i];
    REQUIRE(a.name == t05.nodes[i].name);
    if (a.kind != TraceNodeKind::kCompute) continue;
    // "mb<i>.fwd.L0.<linear>", "mb<i>.bwd.L0.<linear>.dgrad" / ".wgrad" (not the optimizer's nodes)
    bool linear = false;
    for (const char* l : {"attn.qkv", "attn.proj", "mlp.fc1", "mlp.fc2"})
      for (const char* suffix : {"", ".dgrad", ".wgrad"}) {
        const std::string tail = std::string(".L0.") + l + suffix;
        linear = linear || (a.name.rfind("mb", 0) == 0 && a.name.size() > tail.size() &&
                            a.name.compare(a.name.size() - tail.size(), tail.size(), tail) == 0);
      }
    if (!linear) {
      CHECK_MESSAGE(a.duration_micros == t05.nodes[i].duration_micros, a.name);
      CHECK_MESSAGE(a.duration_micros == t025.nodes[i].duration_micros, a.name);
      continue;
    }
    ++linears;
    g1 += static_cast<double>(t05.nodes[i].duration_micros) - static_cast<double>(a.duration_micros);
    g2 += static_cast<double>(t025.nodes[i].duration_micros) - static_cast<double>(t05.nodes[i].duration_micros);
  }
  REQUIRE(linears == 4 * 3 * 4);  // 4 linears x (fprop, dgrad, wgrad) x 4 micro-batches
  CHECK(g1 > 0);
  // Whole microseconds per node: each sum is off by at most one per node.
  CHECK(std::abs(g2 - 2 * g1) <= 3.0 * linears);

  // Written in the canonical form only where a training job runs FP8 GEMMs.
  CHECK(job_to_canonical_json(must(job_text("", "\"h100\"", true))).find("fp8_training_gemm_efficiency") ==
        std::string::npos);
  CHECK(job_to_canonical_json(must(job_text(R"(, "fp8_recipe": "delayed")", "\"h100\"", true)))
            .find("\"fp8_training_gemm_efficiency\": 0.9,") != std::string::npos);
  Result<Job> bad = parse_job(job_text("", R"({"preset": "h100", "fp8_training_gemm_efficiency": 0})"));
  REQUIRE(!bad.ok());
  CHECK(bad.error().path == "hardware.fp8_training_gemm_efficiency");
}
