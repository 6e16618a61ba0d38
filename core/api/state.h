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
struct GeneratorState {
  Job job;
  Graph graph;          // stage 0
  RoleProgram program;  // stage 0
  std::vector<Graph> later_graphs;          // stages 1 .. pp-1
  std::vector<RoleProgram> later_programs;  // stages 1 .. pp-1
  Bindings bind;
  RankLayout layout{{}};
  GroupTable groups;
  std::string config_hash;
  std::string summary;  // summary.json text

  int64_t num_stages() const { return 1 + static_cast<int64_t>(later_graphs.size()); }
  const Graph& graph_of(int64_t stage) const { return stage == 0 ? graph : later_graphs[stage - 1]; }
  const RoleProgram& program_of(int64_t stage) const {
    return stage == 0 ? program : later_programs[stage - 1];
  }
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
