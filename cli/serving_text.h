// Text the serving commands (simulate, inspect, serve-capacity) print the
// same way: request rates readable at any size, and the warning for a run
// too short to measure a capacity (docs/inference.md, "Capacity").
#pragma once

#include <cstdint>
#include <string>

namespace sc::cli {

// A rate (requests/s, tokens/s) with `decimals` places from 10^(1 -
// decimals) up (0.01 for 3), and to 3 significant digits below, where
// fixed places would print 0 or one digit.
std::string rate_text(double v, int decimals = 3);

// "warning: at this rate the N requests arrive within …": the run at the
// capacity is shorter than kSteadyRunLatencies P99 end-to-end latencies.
// `raise` names what lengthens it (a flag, or the job's keys).
void print_short_run_warning(int64_t requests, double capacity, double e2e_p99, const char* raise);

}  // namespace sc::cli
