// Inference (serving) jobs in the façade (docs/inference.md): the graphs
// of the three iteration kinds, memory, the fit, TTFT / TPOT / throughput
// from the simulator, and the concurrency sweep.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "api/api.h"
#include "api/kv_transfer.h"
#include "base/status.h"

namespace sc {

// What a Generator does for an inference job (called by Generator::create).
Result<Generator> create_serving_generator(const Job& job);

struct ServingPoint {
  int64_t concurrency = 0;
  bool fits = true;  // the KV cache of that many sequences fits beside weights and activations
  double ttft_seconds = 0, tpot_seconds = 0, tokens_per_second_per_gpu = 0, tokens_per_second_per_user = 0;
};

// TTFT, TPOT and throughput at each concurrency (a multiple of the decode
// pool's dp; errors name "concurrency"). For an inference job's Generator.
Result<std::vector<ServingPoint>> serving_sweep(const Generator& g, const std::vector<int64_t>& concurrency);
// {"ok":true,"sweep":[...]}'s array as JSON text.
std::string serving_sweep_json(const std::vector<ServingPoint>& points);

// The KV transfer between disaggregated pools: api/kv_transfer.h.

}  // namespace sc
