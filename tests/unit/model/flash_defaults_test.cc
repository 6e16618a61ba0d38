// model.flash_attention defaults (issue 22, docs/job-format.md "Presets",
// docs/hf-import.md): fused attention for every preset and Hugging Face
// family trained with it; the GPT-3-era presets, gpt2 and a soft-capped
// Gemma-2 keep unfused scores + softmax; an explicit model stays unfused.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "../test_jobs.h"
#include "job/job.h"
#include "model/model_config.h"

using namespace sc;
namespace fs = std::filesystem;

namespace {
fs::path hf(const std::string& f) { return fs::path(STAGECRAFT_SOURCE_DIR) / "tests" / "fixtures" / "hf" / f; }
}  // namespace

TEST_CASE("flash_attention defaults: every preset but the GPT-3-era ones") {
  int gpt = 0, fused = 0;
  for (const std::string& name : preset_names()) {
    Result<ModelConfig> m = model_preset(name);
    REQUIRE(m.ok());
    CAPTURE(name);
    const bool gpt3 = name.rfind("gpt3-", 0) == 0;  // Narayanan et al. 2021's table: unfused
    CHECK(m->flash_attention == !gpt3);
    (gpt3 ? gpt : fused) += 1;
  }
  CHECK(gpt == 11);    // docs/job-format.md's table: 11 GPT rows
  CHECK(fused == 12);  // 6 Llama, 2 Mixtral, DeepSeek-V3, Nemotron-H, 2 Jamba

  // The job parser uses the preset's value; a field overrides it.
  Result<Job> j = parse_job(R"({"model": "llama3-8b"})");
  REQUIRE(j.ok());
  CHECK(j->model.flash_attention);
  j = parse_job(R"({"model": {"preset": "llama3-8b", "flash_attention": false}})");
  REQUIRE(j.ok());
  CHECK(!j->model.flash_attention);
  j = parse_job(R"({"model": "gpt3-1.7b"})");
  REQUIRE(j.ok());
  CHECK(!j->model.flash_attention);
  // An explicit model keeps the unfused default.
  j = parse_job(R"({"model": {"num_layers": 1, "hidden": 64, "num_heads": 4, "vocab": 100}})");
  REQUIRE(j.ok());
  CHECK(!j->model.flash_attention);
  // Score soft-capping on a preset must turn fusion off, and the error says so.
  j = parse_job(R"({"model": {"preset": "llama3-8b", "attn_softcap": 50}})");
  REQUIRE(!j.ok());
  CHECK(j.error().message.find("flash_attention false") != std::string::npos);
}

TEST_CASE("flash_attention defaults: Hugging Face families") {
  for (const char* f : {"llama-3.1-8b.config.json", "mistral-7b-instruct-v0.3.config.json",
                        "mixtral-8x7b-v0.1.config.json", "qwen2.5-7b.config.json", "qwen3-8b.config.json",
                        "qwen3-30b-a3b.config.json", "gemma-7b-sft-dolly.config.json", "gemma-3-1b-it.config.json",
                        "phi-3-mini-4k-instruct.config.json", "olmo-2-1124-7b.config.json",
                        "granite-3.2-8b-instruct-abliterated.config.json", "deepseek-v3.config.json",
                        "nemotron-h-8b-base-8k.config.json", "jamba-v0.1.config.json"}) {
    CAPTURE(f);
    Result<ModelConfig> m = model_from_hf_config(testing::slurp(hf(f)));
    REQUIRE_MESSAGE(m.ok(), m.error().to_string());
    CHECK(m->flash_attention);
  }
  // Gemma-2 caps its scores (attn_logit_softcapping 50): unfused; without the cap, fused.
  Result<ModelConfig> g2 = model_from_hf_config(testing::slurp(hf("gemma-2-9b-it.config.json")));
  REQUIRE(g2.ok());
  CHECK(g2->attn_softcap > 0);
  CHECK(!g2->flash_attention);
  Result<ModelConfig> gpt2 = model_from_hf_config(
      R"({"model_type": "gpt2", "n_embd": 64, "n_layer": 2, "n_head": 4, "vocab_size": 100})");
  REQUIRE(gpt2.ok());
  CHECK(!gpt2->flash_attention);
}
