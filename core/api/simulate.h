// `simulate`: the step time of the whole job (docs/simulate.md), for the
// CLI (stagecraft simulate), the wasm bridge and summary.json's "time".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "api/api.h"
#include "base/status.h"
#include "sim/built.h"
#include "sim/simulate.h"

namespace sc {

struct SimulateOptions {
  bool exhaustive = false;  // every rank, not one per symmetry class
  bool astra = false;       // ASTRA-sim's analytical rules on the exported network
  bool timeline = false;    // per-stage intervals (rank 0's pipeline)
  // Compute slowdown while communication runs beside it (default mode;
  // docs/simulate.md); negative: the network model's default.
  double comm_sm_share_domain = -1, comm_sm_share_scale_out = -1;
  // The host's time per node (docs/simulate.md, "The host"); negative: the
  // hardware profile's host_sync_micros.
  double host_sync_micros = -1;
  // The host's issue time per node of a training job (docs/simulate.md,
  // "The host"); negative: the hardware profile's host_launch_micros.
  double host_launch_micros = -1;
  // Default options return the run summary.json's time block already made
  // (Generator::create); false simulates again (benchmarks).
  bool reuse_summary = true;
};

struct SimulateReport {
  SimResult sim;
  NetworkModel network;
  bool astra = false, exhaustive = false;
  double step_seconds = 0;
  double model_flops = 0;      // per step (flops.model_per_iteration)
  double peak_flops = 0;       // per GPU, the training dtype's
  double mfu = 0;              // model_flops / (world x peak x step)
  double tokens_per_second = 0;
  double bubble_fraction = 0;  // mean over stages of bubble / step
  double exposed_comm_seconds[kNumCommKinds] = {0, 0, 0, 0, 0};  // mean over stages
  double host_sync_micros = 0;  // the host timeline's gap per sync; 0: no host timeline ran
  double host_launch_micros = 0;  // the host's issue time per node; 0: none
};

Result<SimulateReport> simulate(const Generator& g, const SimulateOptions& o);

// The report as JSON (docs/simulate.md, "Output"); stable key order.
std::string simulate_json(const SimulateReport& r);
// The report as text for the CLI.
std::string simulate_text(const SimulateReport& r);

struct GeneratorState;
// For summary.json (api/summary.cc): the same, from the state being built.
Result<SimulateReport> simulate_state(const GeneratorState& s, const SimulateOptions& o);
// The same for any built job, never reusing a summary's run (the serving
// layer's iterations, through its backend: api/serving.cc).
Result<SimulateReport> simulate_built(const BuiltJob& s, const SimulateOptions& o);

}  // namespace sc
