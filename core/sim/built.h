// A job built into what the simulator times: per pipeline stage its sharded
// graph and lowered program, the numbers bound, the rank layout and its
// communicator groups. The façade's state (api/state.h) and the serving
// layer's iterations (serve/serving.h) are both this.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "graph/graph.h"
#include "job/job.h"
#include "model/transformer.h"
#include "parallel/mesh.h"
#include "parallel/propagate.h"
#include "trace/lower.h"

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

// One rank role per pipeline stage: its sharded graph and lowered program.
struct StageState {
  Graph graph;
  RoleProgram program;
};

struct BuiltJob {
  Job job;
  std::vector<StageState> stages;  // index = pipeline stage
  Bindings bind;
  RankLayout layout{{}};
  GroupTable groups;

  int64_t num_stages() const { return static_cast<int64_t>(stages.size()); }
  const Graph& graph_of(int64_t stage) const { return stages[static_cast<size_t>(stage)].graph; }
  const RoleProgram& program_of(int64_t stage) const { return stages[static_cast<size_t>(stage)].program; }
};

// Every per-rank value a role's nodes will take exists in the layout: a
// collective's axis has groups, a pipeline peer is a stage in [0, pp), a
// ring neighbour's axis has degree > 1. RankLayout stops on a violation
// (SC_CHECK, every build); the builders check each program here first, so
// a broken program is a kInternal error value instead (sim/built.cc).
Status check_role_program(const RoleProgram& prog, const RankLayout& layout, int64_t pp, int64_t stage);

}  // namespace sc
