// The requests of a serving workload (docs/inference.md, "Workload"):
// arrival times and lengths drawn from serving.workload with the seeded,
// platform-independent stream of serve/rng.h.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "job/job.h"

namespace sc::serve {

struct Request {
  double arrival = 0;  // seconds
  int64_t prompt = 1, output = 1;
};

// The workload's requests in arrival order. rate_scale multiplies a
// poisson/fixed workload's rate (the capacity search: the same draws, the
// times divided by it). max_context caps normal draws (prompt + output).
// The lengths default to the job's request classes (serving.requests or
// prompt_tokens/output_tokens), drawn by weight.
Result<std::vector<Request>> make_requests(const ServingConfig& sv, int64_t max_context, double rate_scale = 1.0);

}  // namespace sc::serve
