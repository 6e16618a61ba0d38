// parse_job errors: each code, its JSON path and the values in the message.
#include <doctest/doctest.h>

#include "job/job.h"

using namespace sc;

namespace {

Error must_fail(const std::string& text) {
  Result<Job> job = parse_job(text);
  REQUIRE_MESSAGE(!job.ok(), text);
  return job.error();
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("parse errors report line and column") {
  Error e = must_fail("{\n  \"model\": {\"preset\": \"gpt3-1.7b\"},\n  \"parallel\": {\"dp\": 2,}\n}");
  CHECK(e.code == ErrorCode::kParseError);
  CHECK(e.path == "");
  CHECK(e.message.rfind("line 3, column 24: ", 0) == 0);
  e = must_fail("");
  CHECK(e.code == ErrorCode::kParseError);
  CHECK(e.message.rfind("line 1, column 1: ", 0) == 0);
  e = must_fail("{\"model\": \"gpt3-1.7b\"} trailing");
  CHECK(e.code == ErrorCode::kParseError);
  e = must_fail(R"({"model": "gpt3-1.7b", "parallel": {"tp": 2, "tp": 4}})");
  CHECK(e.code == ErrorCode::kParseError);
  CHECK(e.path == "parallel.tp");
  CHECK(contains(e.message, "duplicate key"));
  e = must_fail(std::string(100, '[') + std::string(100, ']'));
  CHECK(e.code == ErrorCode::kParseError);
  CHECK(contains(e.message, "nesting"));
  e = must_fail("[1, 2]");
  CHECK(e.code == ErrorCode::kInvalidArgument);
  CHECK(contains(e.message, "must be a JSON object"));
}

TEST_CASE("unknown keys name the path and the known keys") {
  Error e = must_fail(R"({"model": "gpt3-1.7b", "parallel": {"tpp": 2}})");
  CHECK(e.code == ErrorCode::kUnknownField);
  CHECK(e.path == "parallel.tpp");
  const std::string known =
      "unknown key (known: dp, tp, pp, cp, cp_algorithm, virtual_stages, zero, sequence_parallel, pipeline_layout, "
      "order, world_size, ep, expert_tp, shard_group, moe_dispatcher, moe_imbalance)";
  CHECK(e.message == known);
  CHECK(e.to_string() == "parallel.tpp: " + known);
  CHECK(must_fail(R"({"model": "gpt3-1.7b", "pipeline": {}})").path == "pipeline");
  CHECK(must_fail(R"({"model": {"preset": "gpt3-1.7b", "layers": 2}})").path == "model.layers");
  CHECK(must_fail(R"({"model": "gpt3-1.7b", "training": {"seqlen": 2}})").path == "training.seqlen");
  CHECK(must_fail(R"({"model": "gpt3-1.7b", "hardware": {"peak": 2}})").path == "hardware.peak");
}

TEST_CASE("wrong types") {
  Error e = must_fail(R"({"model": "gpt3-1.7b", "parallel": {"tp": "2"}})");
  CHECK(e.code == ErrorCode::kInvalidArgument);
  CHECK(e.path == "parallel.tp");
  CHECK(e.message == "must be an integer (got string \"2\")");
  e = must_fail(R"({"model": "gpt3-1.7b", "parallel": {"tp": 2.5}})");
  CHECK(e.message == "must be an integer (got number 2.5)");
  // A whole number written as a float, or past int64: what is wrong with
  // it, not "must be an integer" (it is one).
  e = must_fail(R"({"model": "gpt3-1.7b", "parallel": {"tp": 2.0}})");
  CHECK(e.message == "must be an integer written without a decimal point or exponent (got 2.0)");
  e = must_fail(R"({"model": "gpt3-1.7b", "parallel": {"tp": 18446744073709551617}})");
  CHECK(e.message == "must be <= 1048576 (got 1.8446744073709552e+19)");
  e = must_fail(R"({"model": "gpt3-1.7b", "parallel": {"tp": 1e308}})");
  CHECK(e.message == "must be <= 1048576 (got 1e+308)");
  e = must_fail(R"({"model": "gpt3-1.7b", "parallel": {"tp": -1e20}})");
  CHECK(e.message == "must be >= 1 (got -1e+20)");
  // A bound is printed whole (the cap itself, not 1.04858e+06).
  e = must_fail(R"({"model": "gpt3-1.7b", "parallel": {"moe_imbalance": 1e308}})");
  CHECK(e.message == "must be <= 1048576 (got 1e+308)");
  // A multiplier (1: none) must be above 0, and 0 says so with its value.
  for (const char* v : {"0", "-1"}) {
    e = must_fail(std::string(R"({"model": {"preset": "gpt3-1.7b", "embedding_multiplier": )") + v + "}}");
    CHECK(e.path == "model.embedding_multiplier");
    CHECK(e.message == std::string("must be > 0 (got ") + v + ")");
  }
  e = must_fail(R"({"model": "gpt3-1.7b", "parallel": {"sequence_parallel": 1}})");
  CHECK(e.path == "parallel.sequence_parallel");
  e = must_fail(R"({"model": "gpt3-1.7b", "parallel": [1]})");
  CHECK(e.path == "parallel");
  CHECK(contains(e.message, "must be an object"));
  e = must_fail(R"({"model": 7})");
  CHECK(e.path == "model");
  e = must_fail(R"({"model": {"hf_config": 3}})");
  CHECK(e.path == "model.hf_config");
  e = must_fail(R"({"model": "gpt3-1.7b", "training": {"dtype": "int8"}})");
  CHECK(e.path == "training.dtype");
  CHECK(contains(e.message, "\"int8\""));
  e = must_fail(R"({"model": "gpt3-1.7b", "training": {"optimizer": "lion"}})");
  CHECK(e.path == "training.optimizer");
  CHECK(contains(e.message, "adam, adamw, sgd"));
}

TEST_CASE("zero, negative and absurd values") {
  Error e = must_fail(R"({"model": "gpt3-1.7b", "parallel": {"dp": 0}})");
  CHECK(e.path == "parallel.dp");
  CHECK(e.message == "must be >= 1 (got 0)");
  e = must_fail(R"({"model": "gpt3-1.7b", "training": {"seq_len": -5}})");
  CHECK(e.path == "training.seq_len");
  CHECK(e.message == "must be >= 1 (got -5)");
  e = must_fail(R"({"model": "gpt3-1.7b", "parallel": {"tp": 2000000}})");
  CHECK(e.message == "must be <= 1048576 (got 2000000)");
  e = must_fail(R"({"model": "gpt3-1.7b", "parallel": {"tp": 18446744073709551615}})");
  CHECK(e.path == "parallel.tp");
  e = must_fail(R"({"model": "gpt3-1.7b", "parallel": {"dp": 1048576, "tp": 2}})");
  CHECK(e.path == "parallel");
  CHECK(contains(e.message, "2097152"));
  CHECK(must_fail(R"({"model": "gpt3-1.7b", "training": {"seq_len": 20000000}})").path == "training.seq_len");
  CHECK(must_fail(R"({"model": "gpt3-1.7b", "training": {"global_batch_size": 200000000}})").path ==
        "training.global_batch_size");
  CHECK(must_fail(R"({"model": {"preset": "gpt3-1.7b", "hidden": 2000000}})").path == "model.hidden");
  CHECK(must_fail(R"({"model": {"preset": "gpt3-1.7b", "num_layers": 10001}})").path == "model.num_layers");
  CHECK(must_fail(R"({"model": "gpt3-1.7b", "training": {"dp_bucket_mb": 0}})").path == "training.dp_bucket_mb");
  e = must_fail(R"({"model": "gpt3-1.7b", "hardware": {"preset": "h100", "compute_efficiency": 1.5}})");
  CHECK(e.path == "hardware.compute_efficiency");
  e = must_fail(R"({"model": "gpt3-1.7b", "hardware": {"preset": "h100", "mem_bandwidth": -1}})");
  CHECK(e.path == "hardware.mem_bandwidth");
  e = must_fail(R"({"model": "gpt3-1.7b", "hardware": {"peak_flops_bf16": 1e15}})");
  CHECK(e.path == "hardware.peak_flops_fp32");
  CHECK(contains(e.message, "required"));
  // Learned positions: the table has 2048 rows.
  e = must_fail(R"({"model": "gpt3-1.7b", "training": {"seq_len": 4096}})");
  CHECK(e.path == "training.seq_len");
  CHECK(contains(e.message, "max_positions = 2048"));
  // One micro-batch whose attention alone exceeds the per-op work cap.
  e = must_fail(R"({"model": {"preset": "llama3-405b", "max_positions": 10485760},
                    "training": {"seq_len": 10485760, "micro_batch_size": 64}})");
  CHECK(e.path == "training");
  CHECK(contains(e.message, "exceeds the cap"));
}

TEST_CASE("divisibility") {
  Error e = must_fail(R"({"model": "gpt3-175b", "parallel": {"tp": 7}})");
  CHECK(e.code == ErrorCode::kNotDivisible);
  CHECK(e.path == "parallel.tp");
  CHECK(e.message == "num_heads (96) is not divisible by tp (7)");
  e = must_fail(R"({"model": "llama3-8b", "parallel": {"tp": 16}})");
  CHECK(e.code == ErrorCode::kNotDivisible);
  CHECK(contains(e.message, "num_kv_heads (8) is not divisible by tp (16)"));
  e = must_fail(R"({"model": {"preset": "gpt3-1.7b", "ffn_hidden": 9004}, "parallel": {"tp": 8}})");
  CHECK(contains(e.message, "ffn_hidden (9004) is not divisible by tp (8)"));
  e = must_fail(R"({"model": {"preset": "gpt3-1.7b", "vocab": 50257}, "parallel": {"tp": 2}})");
  CHECK(e.code == ErrorCode::kNotDivisible);
  CHECK(contains(e.message, "vocab (50257) is not divisible by tp (2)"));
  CHECK(contains(e.message, "50432"));
  e = must_fail(R"({"model": "gpt3-1.7b", "parallel": {"dp": 4},
                    "training": {"micro_batch_size": 2, "global_batch_size": 12}})");
  CHECK(e.code == ErrorCode::kNotDivisible);
  CHECK(e.path == "training.global_batch_size");
  CHECK(e.message == "global_batch_size (12) is not divisible by dp (4) x micro_batch_size (2) = 8");
  e = must_fail(R"({"model": "gpt3-1.7b", "parallel": {"tp": 8, "sequence_parallel": true},
                    "training": {"seq_len": 2044}})");
  CHECK(e.code == ErrorCode::kNotDivisible);
  CHECK(e.path == "training.seq_len");
  CHECK(contains(e.message, "seq_len (2044) is not divisible by tp (8)"));
  CHECK(parse_job(R"({"model": "gpt3-1.7b", "parallel": {"tp": 8}, "training": {"seq_len": 2044}})").ok());
}

TEST_CASE("world size mismatch shows the product") {
  Error e = must_fail(R"({"model": "gpt3-1.7b", "parallel": {"dp": 2, "tp": 4, "world_size": 16}})");
  CHECK(e.code == ErrorCode::kWorldSizeMismatch);
  CHECK(e.path == "parallel.world_size");
  CHECK(e.message == "world_size (16) != dp (2) x tp (4) x pp (1) x cp (1) = 8");
}

TEST_CASE("model section errors") {
  Error e = must_fail(R"({"parallel": {"tp": 2}})");
  CHECK(e.path == "model");
  e = must_fail(R"({"model": {"preset": "gpt3-1.7b", "hf_config": {}}})");
  CHECK(e.path == "model");
  CHECK(contains(e.message, "not both"));
  e = must_fail(R"({"model": {"preset": "gpt-5"}})");
  CHECK(e.path == "model.preset");
  e = must_fail(R"({"model": {"hidden": 64, "num_heads": 4, "vocab": 10}})");
  CHECK(e.path == "model.num_layers");
  e = must_fail(R"({"model": {"num_layers": 1, "hidden": 65, "num_heads": 4, "vocab": 10}})");
  CHECK(e.code == ErrorCode::kNotDivisible);
  CHECK(e.path == "model.num_heads");
  e = must_fail(R"({"model": {"hf_config": {"hidden_size": 64}}})");
  CHECK(e.path == "model.hf_config.num_hidden_layers");
  e = must_fail(R"({"model": {"hf_config": "{\"hidden_size\": 64,"}})");
  CHECK(e.code == ErrorCode::kParseError);
  CHECK(e.path == "model.hf_config");
  e = must_fail(R"({"model": {"preset": "gpt3-1.7b", "norm": "batchnorm"}})");
  CHECK(e.path == "model.norm");
  CHECK(contains(e.message, "layernorm, rmsnorm"));
}

TEST_CASE("issue 13: interleaved-1f1b with pp 1 is refused (its chunks would message the rank itself)") {
  Error e = must_fail(
      R"({"model": "gpt3-1.7b", "parallel": {"pp": 1, "virtual_stages": 2},
          "training": {"schedule": "interleaved-1f1b", "seq_len": 256, "global_batch_size": 4}})");
  CHECK(e.code == ErrorCode::kInvalidArgument);
  CHECK(e.path == "parallel.pp");
  CHECK(contains(e.message, "interleaved-1f1b needs pp >= 2"));
}

TEST_CASE("issue 13: messages echo bounded input and no library-internal text") {
  // A 10 MB key: the message names it clipped, not whole.
  const std::string key(10 << 20, 'k');
  Error e = must_fail(R"({"model": "gpt3-1.7b", "parallel": {")" + key + R"(": 1}})");
  CHECK(e.code == ErrorCode::kUnknownField);
  CHECK(e.to_string().size() < 1000);
  CHECK(contains(e.path, "(10485760 bytes)"));
  // The same key twice: the duplicate-key message is bounded too.
  e = must_fail(R"({")" + key + R"(": 1, ")" + key + R"(": 2})");
  CHECK(e.code == ErrorCode::kParseError);
  CHECK(e.to_string().size() < 1000);
  // 1e400 does not fit a double: a plain message, no "[json.exception...]".
  e = must_fail(R"({"model": "gpt3-1.7b", "training": {"dp_bucket_mb": 1e400}})");
  CHECK(e.code == ErrorCode::kParseError);
  CHECK_MESSAGE(!contains(e.message, "json.exception"), e.message);
  CHECK_MESSAGE(contains(e.message, "number 1e400 is out of range"), e.message);
  // A long malformed token is clipped in the parse error's detail.
  e = must_fail(R"({"model": )" + std::string(1 << 20, 'x') + "}");
  CHECK(e.code == ErrorCode::kParseError);
  CHECK(e.to_string().size() < 1000);
}

TEST_CASE("a context-parallel degree that does not split the sequence names parallel.cp") {
  // seq 4096 over 2 x cp = 6 chunks: the degree the user just typed is at
  // fault, not the sequence length (issue 25: "cp 3 flags the sequence length").
  Error e = must_fail(R"({"model": "llama3-8b", "parallel": {"cp": 3},
                          "training": {"seq_len": 4096, "global_batch_size": 8}})");
  CHECK(e.code == ErrorCode::kNotDivisible);
  CHECK(e.path == "parallel.cp");
  CHECK(contains(e.message, "4096"));
  CHECK(contains(e.message, "2 x cp (6)"));
  // With SP each cp chunk is split again over tp: seq 4100 divides by tp 4
  // and by 2 x cp = 4, but 4100 / cp 2 = 2050 does not divide by tp 4.
  e = must_fail(R"({"model": "llama3-8b", "parallel": {"cp": 2, "tp": 4, "sequence_parallel": true},
                    "training": {"seq_len": 4100, "global_batch_size": 8}})");
  CHECK(e.code == ErrorCode::kNotDivisible);
  CHECK(e.path == "parallel.cp");
}
