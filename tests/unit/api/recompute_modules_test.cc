// Megatron-Core's recompute_modules (training.recompute_modules, with
// recompute "selective"; core/graph/autodiff.h), derived by hand on
// Korthikanti et al.'s GPT layer with fused attention (34 units of s·b·h
// bytes saved, korthikanti_test.cc): LN1 input 2, QKV input 2 (LN1's
// output), Q, K, V 2 + 2 + 2, the attention output 2, its dropout mask 1,
// LN2 input 2, fc1 input 2 (LN2's output), GeLU input 8 (fc1's output), fc2
// input 8 (GeLU's output), the MLP dropout mask 1.
#include "../test_jobs.h"

#include <map>

using namespace sc;
using namespace sc::testing;
using nlohmann::json;

namespace {

constexpr int64_t kS = 2048, kB = 1, kH = 12288, kA = 96;

Job layer_job(int64_t L, uint32_t modules, int64_t t = 8, bool sp = true) {
  Job j = gpt_job(L, kH, kA, t, 1, sp, kB, kS);
  j.model.flash_attention = true;
  j.training.recompute = Recompute::kSelective;
  j.training.recompute_modules = modules;
  return j;
}

uint32_t bits(std::initializer_list<const char*> names) {
  uint32_t b = 0;
  for (const char* n : names)
    for (size_t k = 0; k < kRecomputeModuleCount; ++k)
      if (std::string(n) == kRecomputeModules[k]) b |= 1u << k;
  REQUIRE(b != 0);
  return b;
}

// activation_bytes_by_layer of a small MoE model (8 experts, top 2, width
// 128; ep 2 over dp 2; 128 tokens) with selective recomputation of
// `modules` (the inside of a JSON list; "" for the default), its other
// model fields in `model`.
json moe_layers(const std::string& model, const char* modules) {
  const std::string mods = modules[0] ? std::string(R"(, "recompute_modules": [)") + modules + "]" : "";
  Job j = job_of(R"({"model": {"name": "t", "hidden": 256, "num_heads": 4, "ffn_hidden": 512, "vocab": 1024,
      "norm": "rmsnorm", "mlp": "swiglu", "position": "rope", "dropout": false, "flash_attention": true,
      "num_experts": 8, "experts_per_token": 2, "moe_ffn_hidden": 128, )" + model + R"(},
      "parallel": {"dp": 2, "ep": 2}, "training": {"seq_len": 128, "micro_batch_size": 1,
      "global_batch_size": 2, "recompute": "selective")" + mods + "}}");
  return summary(make(j))["stages"][0]["activation_bytes_by_layer"];
}

double layer_bytes(uint32_t modules) {
  return summary(make(layer_job(2, modules)))["stages"][0]["activation_bytes_by_layer"]["1"].get<double>();
}

}  // namespace

TEST_CASE("recompute modules: Korthikanti's layer, module by module") {
  const double sbh = double(kS * kB * kH), lse = 4.0 * double(kB * kA * kS);
  const double t = 8;
  // core_attn (the default, and "selective" alone): fused attention keeps
  // nothing a selective region could drop: the 34 units.
  CHECK(layer_bytes(0) == sbh * 34 / t + lse / t);
  CHECK(layer_bytes(bits({"core_attn"})) == layer_bytes(0));
  // layernorm: a dense GPT layer's two norms are fused into the next linear
  // by Transformer Engine's layer spec (no module of their own): nothing.
  CHECK(layer_bytes(bits({"layernorm"})) == sbh * 34 / t + lse / t);
  // mlp checkpoints the dense MLP: its input (LN2's output) is kept, what
  // lies between (the GeLU's input and output, 8 + 8) is recomputed; the
  // dropout mask after it stays.
  CHECK(layer_bytes(bits({"mlp"})) == sbh * (34 - 8 - 8) / t + lse / t);
  CHECK(layer_bytes(bits({"layernorm", "mlp"})) == sbh * (34 - 8 - 8) / t + lse / t);
  // Modules the layer does not have change nothing.
  CHECK(layer_bytes(bits({"moe_act", "moe", "shared_experts"})) == sbh * 34 / t + lse / t);
}

// The norms Transformer Engine keeps as modules of their own are the ones
// feeding MLA's down projections (an MLA layer's input norm) and the MoE
// router (an MoE layer's pre-MLP norm): layernorm discards their outputs,
// s x b x h x 2 bytes each (tp 1). An MLA model with one dense first layer
// (layer 0: its input norm only) and MoE layers (layer 1: both).
TEST_CASE("recompute modules: layernorm recomputes the norms feeding MLA and the router") {
  auto layers = [](const char* modules) {
    return moe_layers(R"("num_layers": 3, "head_dim": 32, "first_dense_layers": 1, "q_lora_rank": 96,
        "kv_lora_rank": 64, "qk_rope_head_dim": 16, "v_head_dim": 32)", modules);
  };
  const json none = layers(""), ln = layers(R"("layernorm")");
  const double norm_out = 128.0 * 256 * 2;
  CHECK(none["0"].get<double>() - ln["0"].get<double>() == norm_out);
  CHECK(none["1"].get<double>() - ln["1"].get<double>() == 2 * norm_out);
}

// A checkpointed module re-runs each of its forward ops once: the
// backward holds one ".recompute" copy of every op of the MLP (fc1, its
// bias, the GeLU, fc2, its bias) in every layer, none twice.
TEST_CASE("recompute modules: a checkpointed module's ops are recomputed once each") {
  Job j = gpt_job(2, 256, 4, 1, 1, false, 1, 128);
  j.training.recompute = Recompute::kSelective;
  j.training.recompute_modules = bits({"mlp"});
  Generator g = make(j);
  auto gj = g.graph_json(0);
  REQUIRE(gj.ok());
  const json graph = json::parse(gj.value());
  std::map<std::string, int> count;
  for (const auto& o : graph["ops"]) {
    const std::string n = o["name"];
    if (n.size() > 10 && n.compare(n.size() - 10, 10, ".recompute") == 0) ++count[n];
  }
  for (const char* layer : {"L0.", "L1."})
    for (const char* op : {"mlp.fc1", "mlp.fc1.bias_add", "mlp.gelu", "mlp.fc2", "mlp.fc2.bias_add"}) {
      CAPTURE(std::string(layer) + op);
      CHECK(count[std::string(layer) + op + ".recompute"] == 1);
    }
  CHECK(count.size() == 10);
}

// Recomputing the dense MLP runs its forward GEMMs again in the backward:
// fc1 and fc2, 2·s·h·4h FLOPs each, per layer and sequence; the norms'
// recomputation is element-wise (not in the GEMM count).
TEST_CASE("recompute modules: the MLP's recomputation adds its forward GEMMs to the executed FLOPs") {
  const int64_t L = 2;
  auto flops = [&](uint32_t modules) {
    return summary(make(layer_job(L, modules)))["flops"]["hardware_per_iteration"].get<double>();
  };
  const double base = flops(0);
  CHECK(flops(bits({"layernorm"})) == base);
  CHECK(flops(bits({"mlp"})) - base == double(L) * double(kB) * 2 * 2 * double(kS) * double(kH) * 4 * double(kH));
}

// moe_act discards the routed experts' activation output (the fc2 input)
// and recomputes it from fc1's output, which the activation's backward
// keeps: per MoE layer and micro-batch the rank's routed rows (balanced:
// tokens x top-k, here 128 x 2 over ep 2 = 256 rows on each rank) x the
// expert width x 2 bytes.
TEST_CASE("recompute modules: moe_act drops the routed experts' activation output") {
  auto layer = [](const char* modules) {
    return moe_layers(R"("num_layers": 2, "head_dim": 64)", modules)["1"].get<double>();
  };
  CHECK(layer("") - layer(R"("moe_act")") == 256.0 * 128 * 2);
  // shared_experts / moe on a model without shared experts / with: moe
  // checkpoints the whole block, so it keeps less than moe_act alone.
  CHECK(layer(R"("moe")") < layer(R"("moe_act")"));
}

TEST_CASE("recompute modules: parse and validation errors name the field") {
  auto err = [](const std::string& training) {
    Result<Job> j = parse_job(R"({"model": "llama3-8b", "training": {)" + training + "}}");
    if (j.ok()) {
      Status s = validate_job(*j);
      REQUIRE(!s.ok());
      return s.error();
    }
    return j.error();
  };
  Error e = err(R"("recompute": "selective", "recompute_modules": ["layernorm", "attn"])");
  CHECK(e.path == "training.recompute_modules[1]");
  CHECK(has(e.message, "unknown module \"attn\""));
  CHECK(has(e.message, "shared_experts"));
  e = err(R"("recompute": "selective", "recompute_modules": ["mlp", "mlp"])");
  CHECK(e.path == "training.recompute_modules[1]");
  CHECK(has(e.message, "twice"));
  e = err(R"("recompute": "selective", "recompute_modules": [])");
  CHECK(e.path == "training.recompute_modules");
  e = err(R"("recompute": "selective", "recompute_modules": "layernorm")");
  CHECK(e.path == "training.recompute_modules");
  e = err(R"("recompute": "full", "recompute_modules": ["layernorm"])");
  CHECK(e.path == "training.recompute_modules");
  CHECK(has(e.message, "\"full\""));
  e = err(R"("recompute_modules": ["layernorm"])");
  CHECK(has(e.message, "\"none\""));
  // The default list, ["core_attn"], is refused without selective too (it
  // used to pass, read as no list at all).
  e = err(R"("recompute": "full", "recompute_modules": ["core_attn"])");
  CHECK(e.path == "training.recompute_modules");
  CHECK(has(e.message, "\"full\""));
  e = err(R"("recompute_modules": ["core_attn"])");
  CHECK(has(e.message, "\"none\""));
  CHECK(parse_job(R"({"model": "llama3-8b", "training": {"recompute": "selective", "recompute_modules": ["core_attn"]}})").ok());
  e = err(R"("recompute": "selective", "recompute_modules": ["mla_up_proj"])");
  CHECK(e.path == "training.recompute_modules");
  CHECK(has(e.message, "kv_lora_rank"));
  // Megatron-Core's own refusals.
  e = err(R"("recompute": "selective", "recompute_modules": ["layernorm"], "fp8_recipe": "delayed")");
  CHECK(e.path == "training.recompute_modules");
  CHECK(has(e.message, "delayed"));
  CHECK(err(R"("recompute": "selective", "recompute_modules": ["moe_act"], "fp8_recipe": "delayed")").path ==
        "training.recompute_modules");
  auto moe_err = [](const std::string& training) {
    Result<Job> j = parse_job(R"({"model": "deepseek-v3", "parallel": {"dp": 8, "ep": 8}, "training": {)" + training + "}}");
    REQUIRE(!j.ok());  // parse_job validates the job
    return j.error();
  };
  e = moe_err(R"("recompute": "selective", "recompute_modules": ["moe"], "overlap_moe_expert_parallel_comm": true)");
  CHECK(e.path == "training.recompute_modules");
  CHECK(has(e.message, "overlap_moe_expert_parallel_comm"));
  e = moe_err(R"("recompute": "selective", "recompute_modules": ["shared_experts"], "moe_shared_expert_overlap": true)");
  CHECK(e.path == "training.recompute_modules");
  CHECK(has(e.message, "moe_shared_expert_overlap"));
}

// The canonical job (summary.json's "job", the config hash) carries the
// list only when it is set, in Megatron's order.
TEST_CASE("recompute modules: written back only when set") {
  json s = summary(make(layer_job(2, 0)));
  CHECK(!s["job"]["training"].contains("recompute_modules"));
  s = summary(make(layer_job(2, bits({"mlp", "layernorm"}))));
  CHECK(s["job"]["training"]["recompute_modules"] == json::array({"layernorm", "mlp"}));
  // Naming the default is the default: the same canonical job.
  Result<Job> j = parse_job(R"({"model": "llama3-8b", "training": {"recompute": "selective", "recompute_modules": ["core_attn"]}})");
  REQUIRE(j.ok());
  CHECK(j->training.recompute_modules == 0);
}
