// Inference (serving) jobs (docs/inference.md): the graphs of the three
// iteration kinds, memory, the fit, TTFT / TPOT / throughput from the
// simulator, the workload run, the concurrency sweep and the capacity
// search. The façade (api/serving.h) wraps the iterations into Generators
// and supplies the simulator (ServeBackend), as it does for the planner.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "job/job.h"
#include "sim/built.h"

namespace sc {

// What the layer above supplies: the step time of a built iteration (its
// simulator, default options), and the engine-memory budget a workload run
// is refused past (api/budget.h).
struct ServeBackend {
  std::function<Result<double>(const BuiltJob&)> step_seconds;
  int64_t max_engine_bytes = 0;
};

struct ServingPoint {
  int64_t concurrency = 0;
  bool fits = true;  // the KV cache of that many sequences fits beside weights and activations
  double ttft_seconds = 0, tpot_seconds = 0, tokens_per_second_per_gpu = 0, tokens_per_second_per_user = 0;
  // The gap a request sees between its tokens at that concurrency: TPOT
  // plus the stalls of the other requests' prefills (summary's itl_seconds).
  double itl_seconds = 0;
};

// The capacity search (docs/inference.md, "Capacity"): the highest request
// rate (requests per second, the whole deployment) whose simulated
// workload meets the SLOs (P99 TTFT, P99 TPOT; 0 = no target), and the
// latency-rate curve around it. The workload is the job's serving.workload
// (poisson or fixed arrivals; its lengths and seed) with its rate varied,
// or, without one, Poisson arrivals of the job's request lengths, seed 0;
// `requests` of them per run (0: the workload's count, else 1000).
struct CapacityPoint {
  double rate = 0, ttft_p50 = 0, ttft_p99 = 0, tpot_p50 = 0, tpot_p99 = 0, output_tokens_per_second = 0;
  double e2e_p99 = 0;
  bool meets_slo = false;
};
struct CapacityResult {
  double capacity = 0;  // requests per second; 0 when even a trickle misses the SLOs
  double slo_ttft = 0, slo_tpot = 0;
  int64_t requests = 0, gpus = 0, simulations = 0;
  std::vector<CapacityPoint> curve;  // ascending rate
  CapacityPoint reference;  // the curve's point at the capacity, or at the lowest rate tried when none meets the SLOs
  // The run at the capacity arrives over requests / capacity seconds; when
  // that is under kSteadyRunLatencies P99 end-to-end latencies the run is a
  // burst, not a steady state, and the capacity is not measured by it
  // (docs/inference.md, "Capacity").
  bool short_run = false;
  double e2e_p99_at_capacity = 0;
};
inline constexpr double kSteadyRunLatencies = 2;

namespace serve {

// A serving job built at its concurrency: the iterations (lowered as the
// traces show them; `mixed` only for colocated jobs) and summary.json's
// "inference" block (with the workload's figures when it has one).
struct ServingBuild {
  std::unique_ptr<BuiltJob> prefill, decode, mixed;
  nlohmann::json inference;
};
Result<ServingBuild> build_serving(const Job& job, const ServeBackend& backend);

// TTFT, TPOT and throughput at each concurrency (a multiple of the decode
// pool's dp; errors name "concurrency[i]"). `job`: the whole inference job.
Result<std::vector<ServingPoint>> serving_sweep(const Job& job, const ServeBackend& backend,
                                                const std::vector<int64_t>& concurrency);
// The capacity search; slo_ttft / slo_tpot <= 0 both: the job's serving.slo.
Result<CapacityResult> serving_capacity(const Job& job, const ServeBackend& backend, double slo_ttft,
                                        double slo_tpot, int64_t requests);
// Whether the capacity search can run on the job (before building it): it
// varies the arrival rate of colocated engines, so a disaggregated job or a
// burst or trace workload is an error naming the field.
Status capacity_searchable(const Job& job);

// A capacity search made ready, without simulating: the job's plan, its
// scheduler and cost model, and `requests` drawn (0: the workload's count,
// else 1000) and checked, so that the model fitting its memory and every
// request being able to finish on an idle rank are known before any run
// (the errors the search would return first). serving_capacity(job, ...)
// is prepare_capacity then the search; a caller that checks several
// layouts first (serve-capacity) keeps the prepared ones.
struct CapacitySetup;
class CapacitySearch {
 public:
  explicit CapacitySearch(std::shared_ptr<const CapacitySetup> s) : setup_(std::move(s)) {}
  const CapacitySetup& setup() const { return *setup_; }

 private:
  std::shared_ptr<const CapacitySetup> setup_;
};
Result<CapacitySearch> prepare_capacity(const Job& job, const ServeBackend& backend, int64_t requests);
Result<CapacityResult> serving_capacity(const CapacitySearch& search, const ServeBackend& backend, double slo_ttft,
                                        double slo_tpot);

}  // namespace serve

// {"ok":true,"sweep":[...]}'s array as JSON text.
std::string serving_sweep_json(const std::vector<ServingPoint>& points);
// {"capacity_requests_per_second", ..., "curve": [...]} as JSON text.
std::string serving_capacity_json(const CapacityResult& r);

}  // namespace sc
