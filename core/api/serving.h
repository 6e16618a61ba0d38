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
// The search made ready on an inference job's Generator, without
// simulating (serve::prepare_capacity: the model and every request fit, or
// the error the search would give first), then run on it: a caller that
// checks several layouts before searching any keeps the prepared ones.
Result<serve::CapacitySearch> serving_capacity_prepare(const Generator& g, int64_t requests = 0);
Result<CapacityResult> serving_capacity(const serve::CapacitySearch& search, double slo_ttft, double slo_tpot);

// The KV transfer between disaggregated pools (serve/kv_transfer.h), for
// an inference job's Generator with serving.disaggregated; otherwise an
// error at path "serving.disaggregated".
Result<KvTransfer> kv_transfer_traces(const Generator& g);

}  // namespace sc
