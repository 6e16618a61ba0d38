// ZeRO stages against the DeepSpeed paper's model-state formulas
// (../shared/docs/reference-numbers.md) and their communication.
#include "../test_jobs.h"

using namespace sc;
using namespace sc::testing;

TEST_CASE("zero: model states per GPU follow (2+2+K)psi, 4psi+K psi/N, 2psi+(2+K)psi/N, (2+2+K)psi/N") {
  const int64_t N = 4, K = 12;
  for (int64_t stage = 0; stage <= 3; ++stage) {
    CAPTURE(stage);
    Job j = gpt_job(2, 1024, 16, 1, N, false, 1, 512);
    j.parallel.zero = stage;
    j.training.grad_reduce_dtype = DType::kBF16;  // the paper's 2-byte gradients
    auto s = summary(make(j));
    const int64_t psi = s["parameters"]["per_rank"].get<int64_t>();
    REQUIRE(psi % N == 0);
    auto mem = s["stages"][0]["memory_bytes"];
    const int64_t states = mem["weights"].get<int64_t>() + mem["gradients"].get<int64_t>() +
                           mem["optimizer"].get<int64_t>();
    const int64_t want[] = {(2 + 2 + K) * psi, 4 * psi + K * psi / N, 2 * psi + (2 + K) * psi / N,
                            (2 + 2 + K) * psi / N};
    CHECK(states == want[stage]);
  }
}

TEST_CASE("zero: gradients are reduce-scattered and parameters all-gathered instead of one all-reduce") {
  const int64_t N = 4;
  for (int64_t stage = 0; stage <= 3; ++stage) {
    CAPTURE(stage);
    Job j = gpt_job(2, 1024, 16, 1, N, false, 1, 512, 2 * N);  // 2 micro-batches
    j.parallel.zero = stage;
    auto g = make(j);
    auto s = summary(g);
    const int64_t psi = s["parameters"]["per_rank"].get<int64_t>();
    auto bytes = s["communication"]["per_rank_bytes"];
    auto get = [&](const char* k) { return bytes.contains(k) ? bytes[k].get<int64_t>() : 0; };
    if (stage == 0) {
      CHECK(get("all_reduce") == 4 * psi);  // fp32 main grads, once per iteration
      CHECK(get("reduce_scatter") == 0);
    } else {
      CHECK(get("all_reduce") == 0);
      CHECK(get("reduce_scatter") == 4 * psi);  // comm_size: the full input
      // Stages 1-2 gather the updated bf16 parameters once (per-rank shard);
      // stage 3 gathers every unit before forward and backward of each
      // micro-batch (2 x 2), shards rounded up per unit.
      const int64_t once = 2 * psi / N;
      if (stage < 3) CHECK(get("all_gather") == doctest::Approx(double(once)).epsilon(0.001));
      else CHECK(get("all_gather") == doctest::Approx(4.0 * once).epsilon(0.001));
    }
  }
}
