// Serving workloads on whole jobs (docs/inference.md, "Workload" and
// "Capacity"): the parse errors name their fields, the issue's form runs,
// the interpolated iteration cost agrees with the engine's own simulated
// iterations, a seeded run is deterministic, and the capacity search is
// monotone in its targets.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "api/api.h"
#include "api/request.h"
#include "api/serving.h"
#include "../test_jobs.h"

using namespace sc;
using json = nlohmann::json;

namespace {

std::string job_with(const std::string& serving_extra, const std::string& model = "llama3-8b",
                     const std::string& parallel = R"({"tp": 1})") {
  return R"({"mode": "inference", "model": ")" + model + R"(", "parallel": )" + parallel +
         R"(, "hardware": "h100", "serving": {"prompt_tokens": 2048, "output_tokens": 256)" + serving_extra + "}}";
}

Error parse_error(const std::string& text) {
  Result<Job> j = parse_job(text);
  REQUIRE(!j.ok());
  return j.error();
}

json inference_of(const std::string& text) {
  Generator g = testing::generator_from_json(text);
  return json::parse(g.summary_json())["inference"];
}

}  // namespace

TEST_CASE("serving workload: parse errors name the field") {
  CHECK(parse_error(job_with(R"(, "workload": {"arrival": "poisson", "duration_seconds": 10})")).path ==
        "serving.workload.rate");
  CHECK(parse_error(job_with(R"(, "workload": {"arrival": "gamma", "rate": 1, "requests": 5})")).path ==
        "serving.workload.arrival");
  CHECK(parse_error(job_with(R"(, "workload": {"rate": 1})")).path == "serving.workload.duration_seconds");
  CHECK(parse_error(job_with(R"(, "workload": {"rate": 1, "requests": 5, "colour": 1})")).path ==
        "serving.workload.colour");
  CHECK(parse_error(job_with(
            R"(, "workload": {"rate": 1, "requests": 5, "prompt_tokens": {"distribution": "uniform", "min": 9, "max": 3}})"))
            .path == "serving.workload.prompt_tokens.max");
  CHECK(parse_error(job_with(R"(, "workload": {"rate": 1, "requests": 5, "output_tokens": {"distribution": "zipf"}})"))
            .path == "serving.workload.output_tokens.distribution");
  CHECK(parse_error(job_with(R"(, "workload": {"arrival": "burst"})")).path == "serving.workload.requests");
  CHECK(parse_error(job_with(R"(, "workload": {"rate": 1000, "duration_seconds": 1000})")).path ==
        "serving.workload.duration_seconds");
  CHECK(parse_error(job_with(R"(, "workload": {"arrival": "trace", "trace": [{"arrival_seconds": 1, "prompt_tokens": 5}]})"))
            .path == "serving.workload.trace[0].output_tokens");
  CHECK(parse_error(job_with(R"(, "workload": {"arrival": "trace", "trace": [
      {"arrival_seconds": 2, "prompt_tokens": 5, "output_tokens": 5},
      {"arrival_seconds": 1, "prompt_tokens": 5, "output_tokens": 5}]})"))
            .path == "serving.workload.trace[1].arrival_seconds");
  CHECK(parse_error(job_with(R"(, "scheduler": {"policy": "fifo"})")).path == "serving.scheduler.policy");
  CHECK(parse_error(job_with(R"(, "scheduler": {"max_num_seqs": 0})")).path == "serving.scheduler.max_num_seqs");
  CHECK(parse_error(job_with(R"(, "slo": {})")).path == "serving.slo");
  CHECK(parse_error(job_with(R"(, "gpu_memory_utilization": 1.5)")).path == "serving.gpu_memory_utilization");
  CHECK(parse_error(job_with(R"(, "workload": {"rate": 1, "requests": 5, "prefix_cache_hit_rate": 1})")).path ==
        "serving.workload.prefix_cache_hit_rate");
  CHECK(parse_error(job_with(R"(, "scheduler": {"speculative_tokens": 3})")).path == "serving.scheduler.acceptance_rate");
  CHECK(parse_error(job_with(R"(, "scheduler": {"speculative_tokens": 3, "acceptance_rate": 1.2})")).path ==
        "serving.scheduler.acceptance_rate");
  CHECK(parse_error(job_with(R"(, "scheduler": {"step_overhead_seconds": -1})")).path ==
        "serving.scheduler.step_overhead_seconds");
  CHECK(parse_error(job_with(R"(, "scheduler": {"request_overhead_seconds": -0.01})")).path ==
        "serving.scheduler.request_overhead_seconds");
  CHECK(parse_error(job_with(R"(, "scheduler": {"request_overhead_seconds": 11})")).path ==
        "serving.scheduler.request_overhead_seconds");
  CHECK(parse_error(job_with(R"(, "scheduler": {"scheduler_steps": 0})")).path == "serving.scheduler.scheduler_steps");
  CHECK(parse_error(job_with(R"(, "scheduler": {"scheduler_steps": 65})")).path == "serving.scheduler.scheduler_steps");
  {
    const Error e = parse_error(
        job_with(R"(, "scheduler": {"scheduler_steps": 4, "speculative_tokens": 2, "acceptance_rate": 0.5})"));
    CHECK(e.path == "serving.scheduler.scheduler_steps");
    CHECK(e.message.find("4 steps") != std::string::npos);
  }
  CHECK(parse_error(job_with(R"(, "scheduler": {"policy": "prefill-first"})")).message.find("prefill_first") !=
        std::string::npos);
  CHECK(parse_job(job_with(R"(, "scheduler": {"policy": "prefill_first", "scheduler_steps": 10})")).ok());
  // Whole prompts only under prefill_first (vllm and sarathi chunk by definition).
  CHECK(parse_error(job_with(R"(, "scheduler": {"chunked_prefill": false})")).path ==
        "serving.scheduler.chunked_prefill");
  CHECK(parse_error(job_with(R"(, "scheduler": {"policy": "prefill_first", "chunked_prefill": "no"})")).path ==
        "serving.scheduler.chunked_prefill");
  CHECK(parse_job(job_with(R"(, "scheduler": {"policy": "prefill_first", "chunked_prefill": false})")).ok());
  // SGLang's admission: a name it knows, and not with vLLM's multi-step runs.
  {
    const Error e = parse_error(job_with(R"(, "scheduler": {"admission": "sglang"})"));
    CHECK(e.path == "serving.scheduler.admission");
    CHECK(e.message.find("\"sglang\"") != std::string::npos);
    CHECK(e.message.find("greedy, reserve, guaranteed") != std::string::npos);
  }
  CHECK(parse_error(job_with(R"(, "scheduler": {"admission": "reserve", "scheduler_steps": 10})")).path ==
        "serving.scheduler.admission");
  CHECK(parse_job(job_with(R"(, "scheduler": {"policy": "prefill_first", "admission": "reserve"})")).ok());
  CHECK(parse_job(job_with(R"(, "scheduler": {"admission": "greedy"})")).ok());
  CHECK(parse_job(job_with(R"(, "scheduler": {"admission": "guaranteed"})")).ok());
  CHECK(parse_error(job_with(R"(, "scheduler": {"admission": "guaranteed", "scheduler_steps": 4})")).message.find(
            "TensorRT-LLM") != std::string::npos);
  // Past the model's context (Llama 3 8B: 8,192).
  CHECK(parse_error(job_with(R"(, "workload": {"rate": 1, "requests": 5, "prompt_tokens": 9000})")).path ==
        "serving.workload.prompt_tokens");
}

TEST_CASE("serving workload: the issue's form on Llama-3-70B tp 8, percentiles under explicit keys") {
  json inf = inference_of(job_with(R"(, "workload": {"arrival": "poisson", "rate": 10, "duration_seconds": 60, "seed": 1})",
                                   "llama3-70b", R"({"tp": 8})"));
  for (const char* k : {"ttft_seconds", "tpot_seconds", "itl_seconds", "e2e_seconds", "queue_seconds"})
    for (const char* s : {"_mean", "_p50", "_p90", "_p99"}) CHECK(inf.contains(std::string(k) + s));
  const json& w = inf["workload"];
  // About 600 requests (sd 24), every one finished, each with 256 tokens.
  CHECK(w["requests"].get<int64_t>() > 500);
  CHECK(w["requests"].get<int64_t>() < 700);
  CHECK(w["output_tokens"].get<int64_t>() == 256 * w["requests"].get<int64_t>());
  CHECK(inf["ttft_seconds_p50"].get<double>() <= inf["ttft_seconds_p99"].get<double>());
  CHECK(inf["ttft_seconds_p99"].get<double>() >= inf["iterations"]["prefill"]["seconds"].get<double>() * 0.9);
  CHECK(w["kv_cache_utilization_max"].get<double>() <= 1.0);
  CHECK(w["kv_cache_utilization"].size() == 100);
}

TEST_CASE("serving workload: one request alone: its TTFT is the prefill iteration, its TPOT the decode's") {
  // A lone 2,048 + 2-token request, the whole prompt in one iteration:
  // TTFT = the engine's simulated prefill iteration; TPOT = its decode at
  // one sequence (concurrency 1: iterations.decode at 2,048 + 1 cached).
  // The workload's cost model interpolates between other token counts and
  // adds attention linearly; it must land within 3 % of both.
  const std::string text = R"({"mode": "inference", "model": "llama3-70b", "parallel": {"tp": 8}, "hardware": "h100",
    "serving": {"prompt_tokens": 2048, "output_tokens": 2, "concurrency": 1,
                "workload": {"arrival": "burst", "requests": 1}}})";
  json inf = inference_of(text);
  const double prefill = inf["iterations"]["prefill"]["seconds"].get<double>();
  const double decode = inf["iterations"]["decode"]["seconds"].get<double>();
  CHECK(inf["ttft_seconds_p50"].get<double>() == doctest::Approx(prefill).epsilon(0.03));
  CHECK(inf["tpot_seconds_p50"].get<double>() == doctest::Approx(decode).epsilon(0.03));
  // The same at 64 sequences decoding together (a burst of 64 of them): a
  // decode iteration of 64 rows reading 64 x 2,049 cached tokens.
  const std::string many = R"({"mode": "inference", "model": "llama3-70b", "parallel": {"tp": 8}, "hardware": "h100",
    "serving": {"prompt_tokens": 2048, "output_tokens": 2, "concurrency": 64}})";
  const double decode64 = inference_of(many)["iterations"]["decode"]["seconds"].get<double>();
  json inf64 = inference_of(R"({"mode": "inference", "model": "llama3-70b", "parallel": {"tp": 8}, "hardware": "h100",
    "serving": {"prompt_tokens": 2048, "output_tokens": 2, "concurrency": 64,
                "scheduler": {"max_num_batched_tokens": 131072},
                "workload": {"arrival": "burst", "requests": 64}}})");
  CHECK(inf64["tpot_seconds_p50"].get<double>() == doctest::Approx(decode64).epsilon(0.03));
}

TEST_CASE("serving workload: eager prefill launches and per-request time on a whole job") {
  // A lone 16 + 4-token request on a narrow 32-layer Llama (hidden 512:
  // 0.1 GB of weights, one H100). Under prefill_first (engines that graph
  // decode batches only) its prefill launches every kernel from Python: at
  // least the 4 GEMMs of each of the 32 layers at 21.8 us = 2.79 ms, more
  // than 16 tokens of its GPU work take; under vllm's policy the TTFT is
  // the prefill iteration.
  const std::string lone = R"({"mode": "inference", "parallel": {"tp": 1}, "hardware": "h100",
    "model": {"hf_config": {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 512,
      "intermediate_size": 1024, "num_attention_heads": 8, "num_key_value_heads": 8, "num_hidden_layers": 32,
      "vocab_size": 32000, "max_position_embeddings": 4096}},
    "serving": {"prompt_tokens": 16, "output_tokens": 4, "concurrency": 1,
                "workload": {"arrival": "burst", "requests": 1}, "scheduler": {"policy": "%P"%R}}})";
  auto with = [&](const std::string& policy, const std::string& extra) {
    std::string t = lone;
    t.replace(t.find("%P"), 2, policy);
    t.replace(t.find("%R"), 2, extra);
    return inference_of(t);
  };
  json v = with("vllm", "");
  json pf = with("prefill_first", "");
  const double prefill = v["iterations"]["prefill"]["seconds"].get<double>();
  CHECK(v["ttft_seconds_p50"].get<double>() == doctest::Approx(prefill).epsilon(0.03));
  CHECK(prefill < 32 * 4 * 21.8e-6);
  CHECK(pf["ttft_seconds_p50"].get<double>() >= 32 * 4 * 21.8e-6);
  CHECK(pf["workload"]["cost_model"].contains("eager_prefill_floor_seconds"));
  CHECK(!v["workload"]["cost_model"].contains("eager_prefill_floor_seconds"));
  // Its decode steps are graphed: the same TPOT under both policies.
  CHECK(pf["tpot_seconds_p50"].get<double>() == doctest::Approx(v["tpot_seconds_p50"].get<double>()).epsilon(1e-9));
  // 25 ms per request outside the iterations: TTFT and E2E 25 ms later,
  // TPOT the same.
  json r = with("vllm", R"(, "request_overhead_seconds": 0.025)");
  CHECK(r["ttft_seconds_p50"].get<double>() ==
        doctest::Approx(v["ttft_seconds_p50"].get<double>() + 0.025).epsilon(1e-6));
  CHECK(r["e2e_seconds_p50"].get<double>() ==
        doctest::Approx(v["e2e_seconds_p50"].get<double>() + 0.025).epsilon(1e-6));
  CHECK(r["tpot_seconds_p50"].get<double>() == doctest::Approx(v["tpot_seconds_p50"].get<double>()).epsilon(1e-9));
}

TEST_CASE("serving workload: a seeded run gives the same bytes twice; another seed differs") {
  const std::string a = job_with(R"(, "workload": {"rate": 4, "requests": 200, "seed": 3,
      "prompt_tokens": {"distribution": "uniform", "min": 100, "max": 3000},
      "output_tokens": {"distribution": "normal", "mean": 200, "std": 80}})");
  Generator g1 = testing::generator_from_json(a), g2 = testing::generator_from_json(a);
  CHECK(g1.summary_json() == g2.summary_json());
  std::string b = a;
  b.replace(b.find("\"seed\": 3"), 9, "\"seed\": 4");
  Generator g3 = testing::generator_from_json(b);
  CHECK(json::parse(g3.summary_json())["inference"]["ttft_seconds_p99"] !=
        json::parse(g1.summary_json())["inference"]["ttft_seconds_p99"]);
}

TEST_CASE("serving workload: a trace's seed is part of the canonical job (speculative decoding draws from it)") {
  const std::string trace = R"("arrival": "trace", "trace": [{"arrival_seconds": 0, "prompt_tokens": 100, "output_tokens": 20},
      {"arrival_seconds": 0.5, "prompt_tokens": 200, "output_tokens": 30}])";
  const std::string spec = R"(, "scheduler": {"speculative_tokens": 3, "acceptance_rate": 0.5})";
  auto canonical = [&](const std::string& seed) {
    Result<Job> j = parse_job(job_with(", \"workload\": {" + trace + seed + "}" + spec));
    REQUIRE_MESSAGE(j.ok(), j.error().message);
    return json::parse(job_to_canonical_json(*j))["serving"]["workload"];
  };
  CHECK(!canonical("").contains("seed"));  // 0, the default: older traces keep their text and hash
  CHECK(canonical(R"(, "seed": 2)")["seed"] == 2);
  // Different seeds, different draws: the hash must tell the jobs apart.
  CHECK(canonical(R"(, "seed": 1)") != canonical(R"(, "seed": 2)"));
}

TEST_CASE("serving workload: jobs without one keep their summary; gpu_memory_utilization shrinks the cache") {
  json plain = inference_of(job_with(""));
  CHECK(!plain.contains("workload"));
  CHECK(!plain.contains("ttft_seconds_p99"));
  json half = inference_of(job_with(R"(, "gpu_memory_utilization": 0.5)"));
  // 80 GB x 0.5 = 40 GB: capacity halves, the weights stay, fewer sequences fit.
  CHECK(half["memory_bytes_per_rank"]["capacity"].get<int64_t>() * 2 ==
        plain["memory_bytes_per_rank"]["capacity"].get<int64_t>());
  CHECK(half["max_concurrent_sequences"].get<int64_t>() < plain["max_concurrent_sequences"].get<int64_t>());
}

TEST_CASE("serving workload: multi-step scheduling on a whole job: the summary says so; arrivals wait for the run") {
  const std::string w = R"(, "workload": {"rate": 4, "requests": 60, "seed": 3})";
  json one = inference_of(job_with(w + R"(, "scheduler": {"policy": "prefill_first"})"));
  json ten = inference_of(job_with(w + R"(, "scheduler": {"policy": "prefill_first", "scheduler_steps": 10})"));
  CHECK(one["workload"]["scheduler"]["policy"] == "prefill_first");
  CHECK(!one["workload"]["scheduler"].contains("scheduler_steps"));
  CHECK(ten["workload"]["scheduler"]["scheduler_steps"] == 10);
  // A request arriving during a ten-step run waits for it: the median TTFT
  // grows by more than a decode step; a burst gap spans several steps.
  const double step = one["tpot_seconds_p50"].get<double>();
  CHECK(ten["ttft_seconds_p50"].get<double>() > one["ttft_seconds_p50"].get<double>() + step);
  CHECK(ten["itl_seconds_p50"].get<double>() > 3 * one["itl_seconds_p50"].get<double>());
  // Whole prompts: the summary says so (the key only when false); a
  // sequence longer than the budget is refused, naming the budget.
  CHECK(!one["workload"]["scheduler"].contains("chunked_prefill"));
  json whole = inference_of(job_with(w + R"(, "scheduler": {"policy": "prefill_first", "chunked_prefill": false})"));
  CHECK(whole["workload"]["scheduler"]["chunked_prefill"] == false);
  Result<Job> j = parse_job(job_with(w + R"(, "scheduler": {"policy": "prefill_first", "chunked_prefill": false,
      "max_num_batched_tokens": 2048})"));
  REQUIRE(j.ok());
  Result<Generator> g = Generator::create(*j);  // 2,048 + 256 tokens against a budget of 2,048
  REQUIRE(!g.ok());
  CHECK(g.error().path == "serving.scheduler.max_num_batched_tokens");
}

TEST_CASE("serving capacity: monotone in the targets; the curve meets the SLO below the capacity") {
  Generator g = testing::generator_from_json(job_with(R"(, "workload": {"rate": 1, "requests": 300, "seed": 2})"));
  Result<CapacityResult> tight = serving_capacity(g, 0.5, 0.05), loose = serving_capacity(g, 2.0, 0.1);
  REQUIRE(tight.ok());
  REQUIRE(loose.ok());
  CHECK(tight->capacity > 0);
  CHECK(loose->capacity >= tight->capacity);
  for (const CapacityPoint& c : tight->curve)
    if (c.rate <= tight->capacity) CHECK(c.meets_slo);
  // No target at all is an error naming it; a trace workload cannot be rescaled.
  Result<CapacityResult> none = serving_capacity(g, 0, 0);
  REQUIRE(!none.ok());
  CHECK(none.error().path == "serving.slo.ttft_seconds_p99");
  // Neither target given: the job's serving.slo, as the CLI does.
  Generator with_slo = testing::generator_from_json(
      job_with(R"(, "workload": {"rate": 1, "requests": 300, "seed": 2}, "slo": {"ttft_seconds_p99": 0.5, "tpot_seconds_p99": 0.05})"));
  Result<CapacityResult> from_job = serving_capacity(with_slo, 0, 0);
  REQUIRE(from_job.ok());
  CHECK(from_job->slo_ttft == 0.5);
  CHECK(from_job->slo_tpot == 0.05);
  CHECK(from_job->capacity == tight->capacity);
}

TEST_CASE("serving workload: the memory of a run is checked against the engine budget before it runs") {
  // A burst of 200,000 requests of 6,000 output tokens keeps 1.2e9
  // inter-token gaps: at 16 bytes each (a double, with the vector's growth)
  // 19.2 GB, past the budget (2 GiB in the browser, 8 GiB in the CLI);
  // refused before a single iteration (run, it would take hours).
  const std::string job = job_with(
      R"(, "workload": {"arrival": "burst", "requests": 200000, "output_tokens": 6000, "seed": 1})");
  Result<Job> j = parse_job(job);
  REQUIRE(j.ok());
  Result<Generator> g = Generator::create(*j);
  REQUIRE(!g.ok());
  CHECK(g.error().code == ErrorCode::kTooLarge);
  CHECK(g.error().path == "serving.workload");
  CHECK_MESSAGE(g.error().message.find("200000 requests, 1200000000 output tokens") != std::string::npos,
                g.error().message);
  // The capacity search checks each run the same way: 200,000 requests of
  // 256 tokens per run bound 51.4 million iterations at 64 bytes (3.3 GB)
  // beside 0.8 GB of gaps, past the 2 GiB default budget.
  Generator small = testing::generator_from_json(job_with(R"(, "workload": {"rate": 1, "requests": 100, "seed": 2})"));
  Result<CapacityResult> c = serving_capacity(small, 1, 0.05, 200000);
  REQUIRE(!c.ok());
  CHECK(c.error().code == ErrorCode::kTooLarge);
  CHECK(c.error().path == "serving.workload");
}

TEST_CASE("serving capacity: whether its runs can start is known before any run, with the search's own errors") {
  Generator small = testing::generator_from_json(job_with(R"(, "workload": {"rate": 1, "requests": 100, "seed": 2})"));
  CHECK(serving_capacity_prepare(small).ok());
  Result<serve::CapacitySearch> prepared = serving_capacity_prepare(small, 100);
  REQUIRE(prepared.ok());
  // The search run on the prepared one is the one-call search's, to the bit.
  Result<CapacityResult> one = serving_capacity(small, 1, 0.05, 100), two = serving_capacity(*prepared, 1, 0.05);
  REQUIRE(one.ok());
  REQUIRE(two.ok());
  CHECK(serving_capacity_json(*one) == serving_capacity_json(*two));
  // The run-memory budget (the test above): the same error as the search.
  Result<serve::CapacitySearch> big = serving_capacity_prepare(small, 200000);
  REQUIRE(!big.ok());
  CHECK(big.error().code == ErrorCode::kTooLarge);
  CHECK(big.error().path == "serving.workload");
  // A request whose whole sequence needs more KV pages than a rank holds:
  // Llama 3 8B in bf16 on one H100 at 20% of its memory keeps 357 pages of
  // 16 tokens beside its weights. The job's own two requests (prompts drawn
  // uniformly from 100 to 8,000 tokens, seed 4) fit, so it builds; the
  // search's 200 draws of the same lengths hold longer ones, and both the
  // preparation and the search refuse them with the same error.
  const std::string tight = job_with(
      R"(, "gpu_memory_utilization": 0.2, "workload": {"rate": 1, "requests": 2, "seed": 4,)"
      R"( "prompt_tokens": {"distribution": "uniform", "min": 100, "max": 8000}, "output_tokens": 100})");
  Generator g = testing::generator_from_json(tight);
  CHECK(serving_capacity_prepare(g).ok());
  Result<serve::CapacitySearch> ready = serving_capacity_prepare(g, 200);
  REQUIRE(!ready.ok());
  CHECK(ready.error().path == "serving.workload");
  CHECK_MESSAGE(ready.error().message.find("KV pages but a rank holds 357") != std::string::npos,
                ready.error().message);
  Result<CapacityResult> c = serving_capacity(g, 100, 0, 200);
  REQUIRE(!c.ok());
  CHECK(c.error().path == ready.error().path);
  CHECK(c.error().message == ready.error().message);
}

TEST_CASE("serving capacity: the request op") {
  const std::string job = job_with(R"(, "workload": {"rate": 1, "requests": 200, "seed": 2})");
  RequestHandler h;
  json r = json::parse(h.handle_json(R"({"op": "serving_capacity", "job": )" + job +
                                     R"(, "ttft_seconds_p99": 1, "tpot_seconds_p99": 0.05})").envelope);
  REQUIRE_MESSAGE(r["ok"].get<bool>(), r.dump());
  CHECK(r["capacity"]["capacity_requests_per_second"].get<double>() > 0);
  CHECK(r["capacity"]["curve"].size() == 8);
  json bad = json::parse(h.handle_json(R"({"op": "serving_capacity", "job": )" + job +
                                       R"(, "ttft_seconds_p99": -1})").envelope);
  CHECK(!bad["ok"].get<bool>());
  CHECK(bad["error"]["path"] == "ttft_seconds_p99");
}

namespace {

std::string fixture(const char* name) {
  std::ifstream f(std::string(STAGECRAFT_SOURCE_DIR) + "/tests/fixtures/hf/" + name);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

json hf_inference(const char* file, int64_t prompt, int64_t output) {
  return inference_of(R"({"mode": "inference", "model": {"hf_config": )" + fixture(file) +
                      R"(}, "parallel": {"tp": 1}, "hardware": "h100", "serving": {"prompt_tokens": )" +
                      std::to_string(prompt) + R"(, "output_tokens": )" + std::to_string(output) + "}}");
}

}  // namespace

TEST_CASE("serving: a sliding window caps the KV cache per sequence, by hand") {
  // Mistral 7B v0.1 (config.json): 32 layers, 8 KV heads of 128, window
  // 4,096 on every layer. 8,000 + 1,000 tokens keep the last 4,096 per
  // layer: 32 x 2 x 8 x 128 x 2 B x 4,096 = 536,870,912 B, not the
  // 9,008 paged tokens' 1,180,696,576 B of a full cache.
  json m = hf_inference("mistral-7b-v0.1-cot-mnc.config.json", 8000, 1000);
  CHECK(m["kv_cache_bytes_per_token"].get<int64_t>() == 32 * 2 * 8 * 128 * 2);
  CHECK(m["kv_cache_bytes_per_sequence"].get<int64_t>() == int64_t{32} * 2 * 8 * 128 * 2 * 4096);
  // The fit follows: (capacity - weights - activations) / that.
  const json& mem = m["memory_bytes_per_rank"];
  const int64_t left = mem["capacity"].get<int64_t>() - mem["weights"].get<int64_t>() - mem["activations"].get<int64_t>();
  CHECK(m["max_concurrent_sequences"].get<int64_t>() == left / (int64_t{32} * 2 * 8 * 128 * 2 * 4096));
  // Gemma 2 9B: 42 layers, 8 KV heads of 256, every other layer windowed
  // (4,096), the others global. 8,000 + 100 tokens: 21 layers keep 8,112
  // paged tokens, 21 keep 4,096; 2 x 8 x 256 x 2 = 8,192 B per layer and token.
  json g = hf_inference("gemma-2-9b-it.config.json", 8000, 100);
  CHECK(g["kv_cache_bytes_per_sequence"].get<int64_t>() == int64_t{21} * 8192 * (8112 + 4096));
  // A context within the window: nothing capped (Mistral, 1,000 + 24 tokens).
  json s = hf_inference("mistral-7b-v0.1-cot-mnc.config.json", 1000, 24);
  CHECK(s["kv_cache_bytes_per_sequence"].get<int64_t>() == int64_t{32} * 2 * 8 * 128 * 2 * 1024);
}
