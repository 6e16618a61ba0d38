// Inference jobs: "mode": "inference" and the serving section (docs/inference.md, "Job").
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "job/job.h"

using namespace sc;
using json = nlohmann::json;

namespace {

Error must_fail(const std::string& text) {
  Result<Job> job = parse_job(text);
  REQUIRE_MESSAGE(!job.ok(), text);
  return job.error();
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("serving: defaults, fields and the canonical round trip") {
  Result<Job> j = parse_job(R"({"mode": "inference", "model": "llama3-70b", "parallel": {"tp": 8},
    "serving": {"prompt_tokens": 4000, "output_tokens": 192, "concurrency": 16, "chunk_tokens": 512,
                "kv_dtype": "fp8", "weights_dtype": "fp8", "page_tokens": 32, "replicas": 2}})");
  REQUIRE_MESSAGE(j.ok(), j.error().message);
  CHECK(j->inference());
  CHECK(j->serving.prompt_tokens == 4000);
  CHECK(j->serving.output_tokens == 192);
  CHECK(j->serving.concurrency == 16);
  CHECK(j->serving.chunk_tokens == 512);
  CHECK(j->serving.kv_dtype == DType::kFP8);
  CHECK(j->serving.weights_dtype == DType::kFP8);
  CHECK(j->serving.page_tokens == 32);
  CHECK(j->serving.replicas == 2);
  CHECK(j->training.dtype == DType::kFP8);  // the GEMMs run in the weights' dtype
  const std::string canon = job_to_canonical_json(*j);
  CHECK(has(canon, "\"mode\": \"inference\""));
  CHECK(!has(canon, "\"training\""));
  CHECK(!has(canon, "\"zero\""));
  Result<Job> back = parse_job(canon);
  REQUIRE_MESSAGE(back.ok(), back.error().message);
  CHECK(job_to_canonical_json(*back) == canon);

  Result<Job> d = parse_job(R"({"mode": "inference", "model": "llama3-8b"})");
  REQUIRE(d.ok());
  CHECK(d->serving.prompt_tokens == 1024);
  CHECK(d->serving.output_tokens == 256);
  CHECK(d->serving.concurrency == 0);
  CHECK(d->serving.page_tokens == 16);
  CHECK(d->serving.kv_dtype == DType::kBF16);
  // A training job's canonical form has no mode or serving.
  Result<Job> t = parse_job(R"({"model": "llama3-8b"})");
  REQUIRE(t.ok());
  CHECK(!t->inference());
  CHECK(!has(job_to_canonical_json(*t), "serving"));
}

TEST_CASE("serving: training-only fields and bad values name the field") {
  Error e = must_fail(R"({"mode": "inference", "model": "llama3-8b", "training": {"seq_len": 4096}})");
  CHECK(e.path == "training.seq_len");
  CHECK(has(e.message, "training setting"));
  for (const char* key : {"zero", "cp", "sequence_parallel", "virtual_stages", "shard_group", "cp_algorithm"}) {
    e = must_fail(std::string(R"({"mode": "inference", "model": "llama3-8b", "parallel": {")") + key + R"(": 1}})");
    CHECK(e.path == std::string("parallel.") + key);
  }
  e = must_fail(R"({"mode": "serve", "model": "llama3-8b"})");
  CHECK(e.path == "mode");
  e = must_fail(R"({"model": "llama3-8b", "serving": {}})");
  CHECK(e.path == "serving");
  e = must_fail(R"({"mode": "inference", "model": "llama3-8b", "serving": {"kv_dtype": "int4"}})");
  CHECK(e.path == "serving.kv_dtype");
  e = must_fail(R"({"mode": "inference", "model": "llama3-8b", "serving": {"prompt_tokens": 0}})");
  CHECK(e.path == "serving.prompt_tokens");
  e = must_fail(R"({"mode": "inference", "model": "llama3-8b", "serving": {"batch": 3}})");
  CHECK(e.code == ErrorCode::kUnknownField);
  CHECK(e.path == "serving.batch");
  // Llama 3 70B's context is 8192 tokens (max_position_embeddings).
  e = must_fail(R"({"mode": "inference", "model": "llama3-70b", "serving": {"prompt_tokens": 8000, "output_tokens": 193}})");
  CHECK(e.path == "serving.prompt_tokens");
  CHECK(has(e.message, "8193"));
  CHECK(has(e.message, "8192"));
  // Hybrid (Mamba) models serve colocated; disaggregated pools would move
  // the Mamba state too, which the KV transfer does not model.
  CHECK(parse_job(R"({"mode": "inference", "model": "nemotron-h-8b"})").ok());
  e = must_fail(R"({"mode": "inference", "model": "nemotron-h-8b", "serving": {"disaggregated":
      {"prefill": {"tp": 1}, "decode": {"tp": 1}}}})");
  CHECK(e.path == "serving.disaggregated");
  CHECK(has(e.message, "Mamba state"));
  // MoE with attention tp: the experts fill the tp ranks (ep x expert_tp =
  // tp). expert_tp left out is what ep leaves of tp: tp 2 alone is expert
  // tp 2 (vLLM's default), "ep": 2 is expert parallelism over the 2 ranks.
  Result<Job> etp = parse_job(R"({"mode": "inference", "model": "mixtral-8x7b", "parallel": {"tp": 2}})");
  REQUIRE_MESSAGE(etp.ok(), etp.error().message);
  CHECK(etp->parallel.expert_tp == 2);
  CHECK(etp->parallel.ep == 1);
  Result<Job> ep = parse_job(R"({"mode": "inference", "model": "mixtral-8x7b", "parallel": {"tp": 2, "ep": 2}})");
  REQUIRE_MESSAGE(ep.ok(), ep.error().message);
  CHECK(ep->parallel.expert_tp == 1);
  CHECK(parse_job(R"({"mode": "inference", "model": "mixtral-8x7b", "parallel": {"tp": 1, "dp": 2, "ep": 2}})").ok());
  // Experts over more ranks than the tp group: refused, naming ep, the
  // product and the layouts that work.
  e = must_fail(R"({"mode": "inference", "model": "mixtral-8x7b", "parallel": {"tp": 2, "ep": 2, "expert_tp": 2}})");
  CHECK(e.path == "parallel.ep");
  CHECK(has(e.message, "expert_tp (2) x ep (2) must equal tp (2)"));
  CHECK(has(e.message, R"("ep": 2, "expert_tp": 1)"));
  // Wide EP across attention-dp ranks with tp: Mixtral 8x22B on tp 4 x dp 3 =
  // 12 ranks with ep 8: the DeepSeek-style layout, 8 experts over ep gcd(12, 8) = 4.
  e = must_fail(R"({"mode": "inference", "model": "mixtral-8x22b", "parallel": {"tp": 4, "dp": 3, "ep": 8}})");
  CHECK(e.path == "parallel.ep");
  CHECK(has(e.message, R"("tp": 1, "dp": 12, "ep": 4)"));
  CHECK(parse_job(R"({"mode": "inference", "model": "mixtral-8x22b", "parallel": {"tp": 1, "dp": 12, "ep": 4}})").ok());
  // tp 8 x dp 4 with the experts over each tp group (expert tp 8, replicated over dp).
  CHECK(parse_job(R"({"mode": "inference", "model": "deepseek-v3", "parallel": {"tp": 8, "dp": 4},
    "serving": {"concurrency": 8}})").ok());
  e = must_fail(R"({"mode": "inference", "model": "mixtral-8x7b",
    "parallel": {"tp": 2, "dp": 2, "order": ["dp", "tp", "cp", "pp"]}})");
  CHECK(e.path == "parallel.order");
  // Disaggregated: the pool's field.
  e = must_fail(R"({"mode": "inference", "model": "mixtral-8x7b", "serving": {"disaggregated":
    {"prefill": {"tp": 2}, "decode": {"tp": 4, "ep": 2, "expert_tp": 1}}}})");
  CHECK(e.path == "serving.disaggregated.decode.ep");
  e = must_fail(R"({"mode": "inference", "model": "llama3-8b", "parallel": {"dp": 4}, "serving": {"concurrency": 6}})");
  CHECK(e.path == "serving.concurrency");
}

TEST_CASE("serving: a request mix — fields, canonical form, errors naming the class's field") {
  Result<Job> j = parse_job(R"({"mode": "inference", "model": "llama3-8b", "serving": {"requests": [
    {"prompt_tokens": 1000, "output_tokens": 100, "weight": 3}, {"prompt_tokens": 3000, "output_tokens": 300},
    {"prompt_tokens": 3000, "output_tokens": 50, "weight": 0.5}]}})");
  REQUIRE_MESSAGE(j.ok(), j.error().message);
  REQUIRE(j->serving.requests.size() == 3);
  CHECK(j->serving.requests[1].weight == 1);  // the default
  // The longest prompt's class (the first of equals) gives the traced prefill.
  CHECK(j->serving.prompt_tokens == 3000);
  CHECK(j->serving.output_tokens == 300);
  CHECK(j->training.seq_len == 3300);  // the longest context
  json c = json::parse(job_to_canonical_json(*j));
  CHECK(!c["serving"].contains("prompt_tokens"));
  CHECK(c["serving"]["requests"][2]["weight"] == 0.5);
  Result<Job> again = parse_job(c.dump());
  REQUIRE(again.ok());
  CHECK(job_to_canonical_json(*again) == job_to_canonical_json(*j));

  Error e = must_fail(R"({"mode": "inference", "model": "llama3-8b", "serving": {"prompt_tokens": 10,
    "requests": [{"prompt_tokens": 1, "output_tokens": 1}]}})");
  CHECK(e.path == "serving.requests");
  CHECK(has(e.message, "not both"));
  e = must_fail(R"({"mode": "inference", "model": "llama3-8b", "serving": {"requests": []}})");
  CHECK(e.path == "serving.requests");
  e = must_fail(R"({"mode": "inference", "model": "llama3-8b", "serving": {"requests": [{"prompt_tokens": 1, "output_tokens": 1},
    {"prompt_tokens": 5}]}})");
  CHECK(e.path == "serving.requests[1].output_tokens");
  e = must_fail(R"({"mode": "inference", "model": "llama3-8b", "serving": {"requests": [{"prompt_tokens": 1, "output_tokens": 1,
    "weight": 0}]}})");
  CHECK(e.path == "serving.requests[0].weight");
  e = must_fail(R"({"mode": "inference", "model": "llama3-8b", "serving": {"requests": [{"prompt_tokens": 1, "output_tokens": 1,
    "share": 1}]}})");
  CHECK(e.path == "serving.requests[0].share");
  // Llama 3 8B's context is 8192 tokens: the class that exceeds it is named.
  e = must_fail(R"({"mode": "inference", "model": "llama3-8b", "serving": {"requests": [{"prompt_tokens": 100, "output_tokens": 1},
    {"prompt_tokens": 8000, "output_tokens": 500}]}})");
  CHECK(e.path == "serving.requests[1].prompt_tokens");
  CHECK(has(e.message, "8500"));
  std::string many = R"({"mode": "inference", "model": "llama3-8b", "serving": {"requests": [)";
  for (int i = 0; i < 17; ++i) many += std::string(i ? "," : "") + R"({"prompt_tokens": 10, "output_tokens": 10})";
  e = must_fail(many + "]}}");
  CHECK(e.path == "serving.requests");
  CHECK(has(e.message, "16"));
}

TEST_CASE("serving: disaggregated pools, their errors name the pool's field") {
  Result<Job> j = parse_job(R"({"mode": "inference", "model": "deepseek-v3",
    "parallel": {"dp": 8, "ep": 8},
    "serving": {"disaggregated": {"prefill": {"dp": 8, "ep": 8, "replicas": 3}, "decode": {"dp": 32, "ep": 32}}}})");
  REQUIRE_MESSAGE(j.ok(), j.error().message);
  CHECK(j->serving.disaggregated);
  CHECK(j->serving.prefill.replicas == 3);
  CHECK(j->serving.decode.dp == 32);
  CHECK(serving_pool_job(*j, false).parallel.world_size() == 32);
  CHECK(serving_pool_job(*j, true).parallel.world_size() == 8);
  Result<Job> back = parse_job(job_to_canonical_json(*j));
  REQUIRE_MESSAGE(back.ok(), back.error().message);
  CHECK(job_to_canonical_json(*back) == job_to_canonical_json(*j));

  Error e = must_fail(R"({"mode": "inference", "model": "llama3-70b",
    "serving": {"disaggregated": {"prefill": {"tp": 8}, "decode": {"tp": 16}}}})");
  CHECK(e.path == "serving.disaggregated.decode.tp");
  CHECK(has(e.message, "decode pool"));
  e = must_fail(R"({"mode": "inference", "model": "llama3-70b", "serving": {"disaggregated": {"prefill": {"tp": 8}}}})");
  CHECK(e.path == "serving.disaggregated.decode");
  e = must_fail(R"({"mode": "inference", "model": "deepseek-v3",
    "serving": {"disaggregated": {"prefill": {"dp": 8, "ep": 7}, "decode": {"dp": 8, "ep": 8}}}})");
  CHECK(e.path == "serving.disaggregated.prefill.ep");
  // MoE with tp in one pool and its experts over more ranks than tp (tp 2 x
  // dp 4 = 8, ep 8): that pool's field and that pool's ranks.
  e = must_fail(R"({"mode": "inference", "model": "deepseek-v3", "parallel": {"dp": 8, "ep": 8},
    "serving": {"concurrency": 16, "disaggregated": {"prefill": {"tp": 2, "dp": 4, "ep": 8}, "decode": {"dp": 8, "ep": 8}}}})");
  CHECK(e.path == "serving.disaggregated.prefill.ep");
  CHECK(has(e.message, "the prefill pool"));
  CHECK(has(e.message, R"("tp": 1, "dp": 8, "ep": 8)"));
}
