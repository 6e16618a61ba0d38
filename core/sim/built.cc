// Checks of a built job: see built.h.
#include "sim/built.h"

#include <string>

namespace sc {

Status check_role_program(const RoleProgram& prog, const RankLayout& layout, int64_t pp, int64_t stage) {
  const auto bad = [&](size_t i, const std::string& what) {
    return make_error(ErrorCode::kInternal,
                      "pipeline stage " + std::to_string(stage) + ", node " + std::to_string(i) + " (" +
                          prog.node_name(i) + "): " + what);
  };
  if (prog.node_axis.size() != prog.nodes.size() || prog.peer_stage.size() != prog.nodes.size())
    return make_error(ErrorCode::kInternal, "pipeline stage " + std::to_string(stage) + ": per-node tables of " +
                                                std::to_string(prog.node_axis.size()) + "/" +
                                                std::to_string(prog.peer_stage.size()) + " entries for " +
                                                std::to_string(prog.nodes.size()) + " nodes");
  // The layout's answers per axis (an index into prog.axes), looked up once
  // (millions of nodes, a few axes).
  struct AxisFacts {
    int groups = -1;      // -1: not asked yet
    int64_t degree = -1;  // -1: not asked yet
  };
  std::vector<AxisFacts> facts(prog.axes.size());
  const auto has_groups = [&](uint8_t a) {
    AxisFacts& f = facts[a];
    if (f.groups < 0) f.groups = layout.has_groups(prog.axes[a]) ? 1 : 0;
    return f.groups == 1;
  };
  const auto degree = [&](uint8_t a) {
    AxisFacts& f = facts[a];
    if (f.degree < 0) f.degree = layout.degree(prog.axes[a]);
    return f.degree;
  };
  for (size_t i = 0; i < prog.nodes.size(); ++i) {
    const ProgramNode& n = prog.nodes[i];
    if (n.kind == TraceNodeKind::kCompute) continue;
    const uint8_t a = prog.node_axis[i];
    if (a >= prog.axes.size()) return bad(i, "axis index " + std::to_string(a) + " outside the program's axis table");
    const std::string& axis = prog.axes[a];
    const bool ring = i < prog.ring_offset.size() && prog.ring_offset[i] != 0;
    if (n.kind == TraceNodeKind::kCollective && !has_groups(a))
      return bad(i, "collective over axis '" + axis + "', which has no communicator groups");
    if (n.kind != TraceNodeKind::kCollective && ring && degree(a) <= 1)
      return bad(i, "ring neighbour over axis '" + axis + "' of degree 1");
    if (n.kind != TraceNodeKind::kCollective && !ring && (prog.peer_stage[i] < 0 || prog.peer_stage[i] >= pp))
      return bad(i, "peer stage " + std::to_string(prog.peer_stage[i]) + " outside [0, " + std::to_string(pp) + ")");
  }
  return ok_status();
}

}  // namespace sc
