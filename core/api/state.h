// Internal state behind Generator (not part of the public API).
#pragma once

#include <string>

#include "graph/graph.h"
#include "job/job.h"
#include "parallel/mesh.h"
#include "trace/lower.h"
#include "api/api.h"

namespace sc {

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

  int64_t num_stages() const { return static_cast<int64_t>(stages.size()); }
  const Graph& graph_of(int64_t stage) const { return stages[static_cast<size_t>(stage)].graph; }
  const RoleProgram& program_of(int64_t stage) const { return stages[static_cast<size_t>(stage)].program; }
};

// summary.json for a fully built state (api/summary.cc).
Result<std::string> build_summary(const GeneratorState& s);

}  // namespace sc

namespace sc {
// Read access to a Generator's state for the façade's own translation units.
struct GeneratorAccess {
  static const GeneratorState& state(const Generator& g) { return *g.state_; }
};
}  // namespace sc
