// parse_job: sections, defaults, overrides, hardware, canonical JSON.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "job/job.h"

using namespace sc;

namespace {

Job must_parse(const std::string& text) {
  Result<Job> job = parse_job(text);
  REQUIRE_MESSAGE(job.ok(), (job.ok() ? "" : job.error().to_string()));
  return *job;
}

}  // namespace

TEST_CASE("defaults") {
  Job job = must_parse(R"({"model": {"preset": "gpt3-1.7b"}})");
  CHECK(job.model.name == "gpt3-1.7b");
  CHECK(job.parallel.dp == 1);
  CHECK(job.parallel.tp == 1);
  CHECK(!job.parallel.sequence_parallel);
  CHECK(job.training.seq_len == 2048);
  CHECK(job.training.micro_batch_size == 1);
  CHECK(job.training.global_batch_size == 1);
  CHECK(job.training.dtype == DType::kBF16);
  CHECK(job.training.grad_reduce_dtype == DType::kFP32);
  CHECK(job.training.dp_bucket_mb == 25.0);
  CHECK(job.training.optimizer == OptimizerKind::kAdamW);
  CHECK(job.training.optimizer_bytes_per_param == 12);
  CHECK(job.hardware.name == "h100");
  CHECK(must_parse(R"({"model": "llama3-8b"})").model.name == "llama3-8b");
}

TEST_CASE("full job, global batch default dp * micro batch") {
  Job job = must_parse(R"({
    "model": {"preset": "llama3-8b", "num_layers": 2},
    "parallel": {"dp": 4, "tp": 8, "sequence_parallel": true, "world_size": 32},
    "training": {"seq_len": 4096, "micro_batch_size": 2, "dtype": "bf16", "fp8_recipe": "mxfp8",
                 "grad_reduce_dtype": "bf16", "dp_bucket_mb": 12.5,
                 "optimizer": "sgd"},
    "hardware": {"preset": "b200", "compute_efficiency": 0.7}
  })");
  CHECK(job.model.num_layers == 2);
  CHECK(job.model.hidden == 4096);
  CHECK(job.parallel.world_size() == 32);
  CHECK(job.training.global_batch_size == 8);
  CHECK(job.training.num_micro_batches(job.parallel) == 1);
  CHECK(job.training.dtype == DType::kBF16);
  CHECK(job.training.fp8_recipe == Fp8Recipe::kMxfp8);
  CHECK(job.training.grad_reduce_dtype == DType::kBF16);
  CHECK(job.training.dp_bucket_mb == 12.5);
  CHECK(job.training.optimizer == OptimizerKind::kSGD);
  CHECK(job.training.optimizer_bytes_per_param == 8);
  CHECK(job.hardware.name == "b200");
  CHECK(job.hardware.compute_efficiency == 0.7);
  CHECK(job.hardware.memory_efficiency == 1.0);
}

TEST_CASE("model overrides carry derived sizes") {
  Job job = must_parse(R"({"model": {"preset": "gpt3-1.7b", "hidden": 1024, "num_heads": 16}})");
  CHECK(job.model.head_dim == 64);
  CHECK(job.model.num_kv_heads == 16);
  CHECK(job.model.ffn_hidden == 4096);
  job = must_parse(R"({"model": {"preset": "llama3-8b", "num_heads": 16}})");
  CHECK(job.model.head_dim == 256);
  CHECK(job.model.num_kv_heads == 8);   // GQA base: kept
  CHECK(job.model.ffn_hidden == 14336);
}

TEST_CASE("explicit model") {
  Job job = must_parse(R"({"model": {"num_layers": 2, "hidden": 256, "num_heads": 4,
                                      "vocab": 1000, "mlp": "swiglu", "norm": "rmsnorm",
                                      "position": "rope", "tied_embeddings": false},
                           "training": {"seq_len": 512}})");
  CHECK(job.model.name == "custom");
  CHECK(job.model.head_dim == 64);
  CHECK(job.model.ffn_hidden == 1024);
  CHECK(job.model.num_kv_heads == 4);
  CHECK(job.model.max_positions == 512);
  CHECK(job.model.mlp == MlpKind::kSwiGLU);
  CHECK(!job.model.tied_embeddings);
}

TEST_CASE("hf_config as object and as string") {
  const char* hf = R"({"model_type":"llama","hidden_size":4096,"num_hidden_layers":32,
      "num_attention_heads":32,"intermediate_size":11008,"vocab_size":32000,
      "max_position_embeddings":4096,"rms_norm_eps":1e-5})";
  Job a = must_parse(std::string(R"({"model": {"hf_config": )") + hf + R"(, "num_layers": 4}})");
  nlohmann::json wrapper = {{"model", {{"hf_config", hf}}}};
  Job b = must_parse(wrapper.dump());
  CHECK(a.model.num_layers == 4);
  CHECK(b.model.num_layers == 32);
  CHECK(closed_form_parameters(b.model) == 6738415616);
}

TEST_CASE("custom hardware") {
  Job job = must_parse(R"({"model": "gpt3-1.7b", "hardware": {"name": "toy",
      "peak_flops_fp32": 1e12, "peak_flops_tf32": 2e12, "peak_flops_bf16": 4e12,
      "mem_bandwidth": 1e11, "memory_bytes": 1.6e10, "intra_node_bw": 5e10,
      "inter_node_bw": 1e10, "gpus_per_node": 4}})");
  CHECK(job.hardware.name == "toy");
  CHECK(job.hardware.peak_flops_fp8 == 0);
  CHECK(job.hardware.peak_for(DType::kFP8) == 4e12);
  CHECK(job.hardware.gpus_per_node == 4);
}

TEST_CASE("canonical JSON: explicit, sorted, stable, and parses back to the same job") {
  Job job = must_parse(R"({"hardware": "a100", "training": {"seq_len": 1024},
                           "parallel": {"tp": 2}, "model": {"preset": "gpt3-1.7b"}})");
  std::string c = job_to_canonical_json(job);
  CHECK(c == job_to_canonical_json(must_parse(R"({"model": "gpt3-1.7b", "parallel": {"tp": 2},
      "hardware": {"preset": "a100"}, "training": {"seq_len": 1024, "dtype": "bf16"}})")));
  CHECK(c.find("\"hardware\"") < c.find("\"model\""));
  CHECK(c.find("\"model\"") < c.find("\"parallel\""));
  CHECK(c.find("\"peak_flops_bf16\": 312000000000000.0") != std::string::npos);
  CHECK(c.find("\"world_size\": 2") != std::string::npos);
  Job back = must_parse(c);
  CHECK(job_to_canonical_json(back) == c);
  CHECK(closed_form_parameters(back.model) == closed_form_parameters(job.model));
}
