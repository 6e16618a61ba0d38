// parse_job never aborts: with JSON_NOEXCEPTION an unchecked nlohmann
// access would kill the process (and the wasm module). Deterministic
// mutations of a valid job and type swaps at every known field.
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "job/job.h"

using namespace sc;

namespace {

const char* kValid = R"({"model": {"preset": "llama3-8b", "num_layers": 2, "hf_config": null},
  "parallel": {"dp": 2, "tp": 2, "sequence_parallel": true, "world_size": 4},
  "training": {"seq_len": 256, "micro_batch_size": 1, "global_batch_size": 4,
               "dtype": "bf16", "grad_reduce_dtype": "fp32", "dp_bucket_mb": 25,
               "optimizer": "adamw", "optimizer_bytes_per_param": 12},
  "hardware": {"preset": "h100", "compute_efficiency": 0.5}})";

uint64_t next(uint64_t* s) {  // xorshift64: fixed sequence on every platform
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

}  // namespace

TEST_CASE("parse_job survives byte mutations") {
  REQUIRE(parse_job(kValid).ok());
  const std::string alphabet = "{}[]\",:0123456789-.eE truefalsnul\\\n";
  uint64_t seed = 0x9e3779b97f4a7c15ULL;
  int accepted = 0;
  for (int i = 0; i < 3000; ++i) {
    std::string text = kValid;
    int edits = 1 + int(next(&seed) % 4);
    for (int e = 0; e < edits; ++e) {
      size_t pos = next(&seed) % text.size();
      switch (next(&seed) % 3) {
        case 0: text[pos] = alphabet[next(&seed) % alphabet.size()]; break;
        case 1: text.erase(pos, 1 + next(&seed) % 8); break;
        default: text.insert(pos, 1, alphabet[next(&seed) % alphabet.size()]); break;
      }
      if (text.empty()) text = "{";
    }
    Result<Job> job = parse_job(text);
    if (job.ok()) {
      ++accepted;
      CHECK(validate_job(*job).ok());
      CHECK(parse_job(job_to_canonical_json(*job)).ok());
    } else {
      CHECK(!job.error().message.empty());
    }
  }
  MESSAGE("mutated jobs accepted: " << accepted);
}

TEST_CASE("every field with every JSON type") {
  const char* values[] = {"null", "true", "-1", "0", "1e400", "18446744073709551616",
                          "2.5", "\"x\"", "[]", "{}", "[1,2]", "{\"a\":1}"};
  const char* fields[][2] = {
      {"model", "preset"}, {"model", "hf_config"}, {"model", "num_layers"}, {"model", "norm"},
      {"model", "tied_embeddings"}, {"model", "head_dim"}, {"parallel", "dp"},
      {"parallel", "sequence_parallel"}, {"parallel", "world_size"}, {"training", "seq_len"},
      {"training", "dtype"}, {"training", "dp_bucket_mb"}, {"training", "optimizer"},
      {"hardware", "preset"}, {"hardware", "mem_bandwidth"}, {"hardware", "gpus_per_node"},
  };
  for (auto& f : fields) {
    for (const char* v : values) {
      std::string text = std::string("{\"model\": {\"preset\": \"gpt3-1.7b\"}, \"") + f[0] +
                         "\": {\"" + f[1] + "\": " + v + "}}";
      if (std::string(f[0]) == "model") text = std::string("{\"model\": {\"") + f[1] + "\": " + v + "}}";
      Result<Job> job = parse_job(text);
      if (!job.ok()) CHECK(!job.error().message.empty());
    }
  }
  for (const char* v : values) {
    Result<Job> job = parse_job(std::string("{\"model\": ") + v + "}");
    CHECK(!job.ok());
    job = parse_job(std::string("{\"model\": \"gpt3-1.7b\", \"hardware\": ") + v + "}");
    CHECK(job.ok() == (std::string(v) == "null"));  // null = absent = default h100
  }
}
