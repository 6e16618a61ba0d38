// Internal state behind Generator (not part of the public API).
#pragma once

#include <string>

#include "graph/graph.h"
#include "job/job.h"
#include "parallel/mesh.h"
#include "trace/lower.h"
#include "api/api.h"

namespace sc {

struct GeneratorState {
  Job job;
  Graph graph;
  Bindings bind;
  RankLayout layout{{}};
  RoleProgram program;
  GroupTable groups;
  std::string config_hash;
  std::string summary;  // summary.json text
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
