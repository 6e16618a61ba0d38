// The work budget (core/api/budget.h, docs/promises.md "Budgets"): the
// estimate is made from the job's numbers, never under the nodes a built
// job has and within 4x of them; it takes microseconds for any size; a job
// past the budget is refused by Generator::create with too_large before
// anything is built; cancellation stops a build.
#include <doctest/doctest.h>

#include <chrono>

#include "api/api.h"
#include "api/budget.h"
#include "base/cancel.h"
#include "job/job.h"

using namespace sc;

namespace {

Job parse(const std::string& text) {
  Result<Job> j = parse_job(text);
  REQUIRE_MESSAGE(j.ok(), j.error().to_string());
  return std::move(j).value();
}

std::string job_text(const std::string& model, const std::string& parallel, const std::string& training) {
  return "{\"model\": " + model + ", \"parallel\": {" + parallel + "}, \"training\": {" + training + "}}";
}

}  // namespace

TEST_CASE("budget: the node estimate bounds every built job from above, within 4x") {
  const std::string mixes[][3] = {
      {R"({"preset": "gpt3-1.7b", "num_layers": 4})", R"("dp": 1)", R"("seq_len": 256, "global_batch_size": 8)"},
      {R"({"preset": "gpt3-1.7b", "num_layers": 4})", R"("tp": 2, "sequence_parallel": true, "cp": 2)",
       R"("seq_len": 256, "global_batch_size": 8, "recompute": "full")"},
      {R"({"preset": "gpt3-1.7b", "num_layers": 4})", R"("dp": 2, "zero": 3)", R"("seq_len": 256, "global_batch_size": 16)"},
      {R"({"preset": "gpt3-1.7b", "num_layers": 8})", R"("pp": 2, "virtual_stages": 2)",
       R"("seq_len": 256, "global_batch_size": 8, "schedule": "interleaved-1f1b")"},
      {R"({"preset": "gpt3-1.7b", "num_layers": 6})", R"("pp": 3, "tp": 2)",
       R"("seq_len": 256, "global_batch_size": 12, "schedule": "zero-bubble")"},
      {R"({"preset": "gpt3-1.7b", "num_layers": 6})", R"("pp": 2, "pipeline_layout": [1, 5])",
       R"("seq_len": 256, "global_batch_size": 6, "schedule": "gpipe")"},
      {R"({"preset": "mixtral-8x7b", "num_layers": 4})", R"("tp": 2, "sequence_parallel": true, "ep": 2, "dp": 2)",
       R"("seq_len": 256, "global_batch_size": 16, "recompute": "full")"},
      {R"({"preset": "deepseek-v3", "num_layers": 4})", R"("tp": 2, "sequence_parallel": true, "ep": 2, "dp": 2)",
       R"("seq_len": 256, "global_batch_size": 16, "recompute": "full")"},
      {R"({"preset": "llama3-8b", "num_layers": 4})", R"("tp": 4, "cp": 2, "sequence_parallel": true, "dp": 2, "zero": 3)",
       R"("seq_len": 256, "global_batch_size": 16, "recompute": "selective")"},
  };
  for (const auto& m : mixes) {
    const std::string text = job_text(m[0], m[1], m[2]);
    CAPTURE(text);
    const Job job = parse(text);
    Result<Generator> g = Generator::create(job);
    REQUIRE(g.ok());
    int64_t max_nodes = 0, total_program = 0, max_bytes = 0;
    for (int64_t r = 0; r < g->world_size(); ++r) {
      const int64_t n = static_cast<int64_t>(g->rank_trace(r).value().nodes.size());
      max_nodes = std::max(max_nodes, n);
      max_bytes = std::max<int64_t>(max_bytes, static_cast<int64_t>(g->rank_trace_bytes(r).value().size()));
    }
    // One program per pipeline stage, none larger than the largest rank's.
    total_program = max_nodes * job.parallel.pp;
    const JobEstimate e = estimate_job(job);
    CHECK(e.nodes_per_rank >= max_nodes);
    CHECK(e.nodes_per_rank <= 4 * max_nodes);
    CHECK(e.trace_bytes_per_rank >= max_bytes);
    CHECK(e.trace_bytes_per_rank <= 4 * max_bytes);
    CHECK(e.program_nodes >= max_nodes);
    CHECK(e.program_nodes <= 4 * total_program);
  }
}

TEST_CASE("budget: estimating is instant and saturates for absurd jobs") {
  // 10^8 sequences per iteration on dp 1, and 2^20 ranks.
  const Job huge = parse(job_text(R"({"preset": "llama3-70b"})", R"("dp": 1)",
                                  R"("seq_len": 8192, "global_batch_size": 100000000)"));
  const Job wide = parse(job_text(R"({"preset": "gpt3-1.7b", "num_layers": 2})", R"("dp": 1048576)",
                                  R"("seq_len": 256, "global_batch_size": 1048576)"));
  const auto t0 = std::chrono::steady_clock::now();
  JobEstimate a{}, b{};
  for (int i = 0; i < 1000; ++i) {
    a = estimate_job(huge);
    b = estimate_job(wide);
  }
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  MESSAGE("2000 estimates in " << s << " s");
  CHECK(a.micro_batches == 100000000);
  CHECK(a.program_nodes > int64_t{100000000} * 80);
  CHECK(a.engine_bytes > 0);  // saturated, not wrapped
  CHECK(b.trace_bytes_total >= b.trace_bytes_per_rank * 1048576);
}

TEST_CASE("budget: a job past the budget is refused before it is built, naming the estimate and what to change") {
  // Llama-3-70B on dp 1 with 4,096 micro-batches: ~10^7 nodes, gigabytes.
  const Job job = parse(job_text(R"({"preset": "llama3-70b"})", R"("dp": 1)",
                                 R"("seq_len": 8192, "global_batch_size": 4096)"));
  const auto t0 = std::chrono::steady_clock::now();
  Result<Generator> g = Generator::create(job);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  REQUIRE_FALSE(g.ok());
  CHECK(s < 1.0);  // refused from the numbers: nothing was built
  CHECK(g.error().code == ErrorCode::kTooLarge);
  CHECK(std::string(error_code_name(g.error().code)) == "too_large");
  CHECK(g.error().path == "training.global_batch_size");
  const std::string& m = g.error().message;
  CHECK(m.find("4096 micro-batches x 80 layers") != std::string::npos);
  CHECK(m.find("over the budget of 2.0 GiB") != std::string::npos);
  CHECK(m.find("training.micro_batch_size") != std::string::npos);
  CHECK(m.find("parallel.dp") != std::string::npos);
  // A raised budget lets the estimate through (checked without building).
  CHECK(check_budget(job, Budget{int64_t{1} << 50}).ok());
  CHECK_FALSE(check_budget(job).ok());
}

TEST_CASE("cancel: a requested cancel stops Generator::create with cancelled") {
  const Job job = parse(job_text(R"({"preset": "gpt3-1.7b", "num_layers": 2})", R"("pp": 2)",
                                 R"("seq_len": 256, "global_batch_size": 4)"));
  request_cancel();
  Result<Generator> g = Generator::create(job);
  clear_cancel();
  REQUIRE_FALSE(g.ok());
  CHECK(g.error().code == ErrorCode::kCancelled);
  CHECK(g.error().message.find("cancelled during") == 0);
  CHECK(Generator::create(job).ok());  // cleared: builds again
}
