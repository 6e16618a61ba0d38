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
  // The gap a request sees between its tokens at that concurrency: TPOT
  // plus the stalls of the other requests' prefills (summary's itl_seconds).
  double itl_seconds = 0;
};

// TTFT, TPOT and throughput at each concurrency (a multiple of the decode
// pool's dp; errors name "concurrency"). For an inference job's Generator.
Result<std::vector<ServingPoint>> serving_sweep(const Generator& g, const std::vector<int64_t>& concurrency);
// {"ok":true,"sweep":[...]}'s array as JSON text.
std::string serving_sweep_json(const std::vector<ServingPoint>& points);

// The capacity search (docs/inference.md, "Capacity"): the highest request
// rate (requests per second, the whole deployment) whose simulated
// workload meets the SLOs (P99 TTFT, P99 TPOT; 0 = no target), and the
// latency-rate curve around it. The workload is the job's serving.workload
// (poisson or fixed arrivals; its lengths and seed) with its rate varied,
// or, without one, Poisson arrivals of the job's request lengths, seed 0;
// `requests` of them per run (0: the workload's count, else 1000).
struct CapacityPoint {
  double rate = 0, ttft_p50 = 0, ttft_p99 = 0, tpot_p50 = 0, tpot_p99 = 0, output_tokens_per_second = 0;
  bool meets_slo = false;
};
struct CapacityResult {
  double capacity = 0;  // requests per second; 0 when even a trickle misses the SLOs
  double slo_ttft = 0, slo_tpot = 0;
  int64_t requests = 0, gpus = 0, simulations = 0;
  std::vector<CapacityPoint> curve;  // ascending rate
};
Result<CapacityResult> serving_capacity(const Generator& g, double slo_ttft, double slo_tpot, int64_t requests = 0);
// {"capacity_requests_per_second", ..., "curve": [...]} as JSON text.
std::string serving_capacity_json(const CapacityResult& r);

// The KV transfer between disaggregated pools: api/kv_transfer.h.

}  // namespace sc
