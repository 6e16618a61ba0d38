// Internal state behind Generator (not part of the public API).
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "graph/graph.h"
#include "job/job.h"
#include "model/transformer.h"
#include "parallel/mesh.h"
#include "parallel/propagate.h"
#include "trace/lower.h"
#include "sim/built.h"
#include "api/api.h"
#include "api/budget.h"

namespace sc {

// FNV-1a 64-bit of a job's canonical JSON (summary.json's config_hash): a
// stable provenance tag, not a cryptographic digest (api.cc).
std::string config_hash_hex(const std::string& canonical_json);

struct SimulateReport;

// The built job (sim/built.h) with what the façade adds.
struct GeneratorState : BuiltJob {
  std::string config_hash;
  std::string summary;  // summary.json text
  JobEstimate estimate;  // estimate_job_counted, for summary.json (training jobs with a summary)
  // DeepEP's node split of the ep groups (api.cc deepep_node_split; 0: one
  // all-to-all over ep), kept so a relowering (the budget estimate's
  // samples) lowers as the build did.
  int64_t deepep_nvl = 0;
  double deepep_rdma_share = 0;
  // simulate with default options, run once for summary.json's time block
  // (api/summary.cc) and reused by simulate (api/simulate.cc).
  // Written while the summary is built (Generator::create), read-only after.
  mutable std::shared_ptr<const SimulateReport> default_simulation;
  // Inference jobs (serve/serving.h, assembled by api/serving.cc): the
  // whole job (this state's `job` is its pool's), and the other iteration
  // kinds ("prefill", "mixed"); this state is the decode iteration.
  std::shared_ptr<const Job> serving_job;
  std::vector<std::pair<std::string, Generator>> phases;
};

// summary.json for a fully built state (api/summary.cc).
Result<std::string> build_summary(const GeneratorState& s);

}  // namespace sc

namespace sc {
// Read access to a Generator's state for the façade's own translation units.
struct GeneratorAccess {
  static const GeneratorState& state(const Generator& g) { return *g.state_; }
  static Generator make(std::unique_ptr<GeneratorState> s) { return Generator(std::move(s)); }
};
}  // namespace sc
