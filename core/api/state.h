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
#include "api/api.h"
#include "api/budget.h"

namespace sc {

// How a built stage graph is sharded, from the axes its build used: reshard
// order outermost first (edp, dp, cp, tp, ep, etp), sequence parallelism as
// built. Megatron re-gathers SP/CP inputs in backward; the MoE dispatcher's
// tokens gathered over etp are kept (the expert GEMMs save them). Training
// and serving stages both shard this way.
inline PropagationOptions propagation_options(const BuildOptions& bo) {
  PropagationOptions po;
  po.sequence_parallel = bo.sequence_parallel;
  if (bo.has_edp) po.axes_outer_first.push_back("edp");
  if (bo.has_dp) po.axes_outer_first.push_back("dp");
  if (bo.has_cp) po.axes_outer_first.push_back("cp");
  if (bo.has_tp) po.axes_outer_first.push_back("tp");
  if (bo.has_ep) po.axes_outer_first.push_back("ep");
  if (bo.has_etp) po.axes_outer_first.push_back("etp");
  po.kept_gather_axes = {"etp"};
  return po;
}

// FNV-1a 64-bit of a job's canonical JSON (summary.json's config_hash): a
// stable provenance tag, not a cryptographic digest (api.cc).
std::string config_hash_hex(const std::string& canonical_json);

struct SimulateReport;

// One rank role per pipeline stage: its sharded graph and lowered program.
struct StageState {
  Graph graph;
  RoleProgram program;
};

struct GeneratorState {
  Job job;
  std::vector<StageState> stages;  // index = pipeline stage
  Bindings bind;
  RankLayout layout{{}};
  GroupTable groups;
  std::string config_hash;
  std::string summary;  // summary.json text
  JobEstimate estimate;  // estimate_job_counted, for summary.json (training jobs with a summary)
  // simulate with default options, run once for summary.json's time block
  // (api/summary.cc) and reused by simulate (api/simulate.cc).
  // Written while the summary is built (Generator::create), read-only after.
  mutable std::shared_ptr<const SimulateReport> default_simulation;
  // Inference jobs (api/serving.cc): the whole job (this state's `job` is
  // its pool's), and the other iteration kinds ("prefill", "mixed"); this
  // state is the decode iteration.
  std::shared_ptr<const Job> serving_job;
  std::vector<std::pair<std::string, Generator>> phases;

  int64_t num_stages() const { return static_cast<int64_t>(stages.size()); }
  const Graph& graph_of(int64_t stage) const { return stages[static_cast<size_t>(stage)].graph; }
  const RoleProgram& program_of(int64_t stage) const { return stages[static_cast<size_t>(stage)].program; }
};

// Every per-rank value a role's nodes will take exists in the layout: a
// collective's axis has groups, a pipeline peer is a stage in [0, pp), a
// ring neighbour's axis has degree > 1. RankLayout stops on a violation
// (SC_CHECK, every build); Generator::create checks each program here
// first, so a broken program is a kInternal error value instead.
Status check_role_program(const RoleProgram& prog, const RankLayout& layout, int64_t pp, int64_t stage);

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
