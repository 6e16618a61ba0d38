// The façade's door to inference (serving) jobs (docs/inference.md): the
// serving layer (serve/serving.h) builds and times the iterations; this
// wraps them into Generators and answers the sweep, the capacity search
// and the KV transfer from an inference job's Generator.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "api/api.h"
#include "base/status.h"
#include "serve/kv_transfer.h"
#include "serve/serving.h"

namespace sc {

// What a Generator does for an inference job (called by Generator::create).
Result<Generator> create_serving_generator(const Job& job);

// TTFT, TPOT and throughput at each concurrency (a multiple of the decode
// pool's dp; errors name "concurrency"). For an inference job's Generator.
Result<std::vector<ServingPoint>> serving_sweep(const Generator& g, const std::vector<int64_t>& concurrency);

// The capacity search (serve/serving.h, docs/inference.md "Capacity") for
// an inference job's Generator.
Result<CapacityResult> serving_capacity(const Generator& g, double slo_ttft, double slo_tpot, int64_t requests = 0);
// Whether that search can run on an inference job, before building it
// (serve::capacity_searchable: colocated, poisson or fixed arrivals).
Status serving_capacity_searchable(const Job& job);
// Whether the search's runs can start on an inference job's Generator (the
// model and every request fit; serve::capacity_ready), without simulating.
Status serving_capacity_ready(const Generator& g, int64_t requests = 0);

// The KV transfer between disaggregated pools (serve/kv_transfer.h), for
// an inference job's Generator with serving.disaggregated; otherwise an
// error at path "serving.disaggregated".
Result<KvTransfer> kv_transfer_traces(const Generator& g);

}  // namespace sc
