#include "serving_text.h"

#include <cmath>
#include <cstdio>

#include "api/serving.h"

namespace sc::cli {

std::string rate_text(double v, int decimals) {
  char b[64];
  if (v != 0 && std::fabs(v) < std::pow(10.0, 1 - decimals))
    std::snprintf(b, sizeof b, "%.3g", v);
  else
    std::snprintf(b, sizeof b, "%.*f", decimals, v);
  return b;
}

void print_short_run_warning(int64_t requests, double capacity, double e2e_p99, const char* raise) {
  std::printf("warning: at this rate the %lld requests arrive within %.3g s, under %g P99 end-to-end latencies "
              "(%.3g s): too short for a steady state, the capacity is not measured by this run: raise %s\n",
              static_cast<long long>(requests), static_cast<double>(requests) / capacity, kSteadyRunLatencies,
              e2e_p99, raise);
}

}  // namespace sc::cli
