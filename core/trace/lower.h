// Lowering: the sharded graph of one rank role becomes that role's program
// (a list of trace nodes whose collectives name a mesh axis, not a group),
// and a program becomes one rank's trace by substituting the rank's groups.
//
// Schedule (what a single-GPU framework process issues):
//  - micro-batches run one after another: forward then backward of each;
//  - compute nodes form one chain (one CUDA compute stream);
//  - collectives on one axis form one chain (one communicator stream),
//    issued in program order, identical on every member of a group;
//  - data-parallel gradient buckets are issued during the last backward
//    pass as soon as their gradients are final (DDP hooks), everything
//    else of the optimizer phase (grad syncs over other axes, the
//    optimizer steps) after the last backward;
//  - weight-gradient ops of micro-batch k > 0 depend on the same op of
//    micro-batch k - 1 (they accumulate into one fp32 main grad).
// Node ids are issue order; every edge is a data dependency.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "graph/graph.h"
#include "hw/hardware.h"
#include "parallel/mesh.h"
#include "trace/rank_trace.h"

namespace sc {

struct RoleProgram {
  std::vector<TraceNode> nodes;        // group field unset for collectives
  std::vector<std::string> node_axis;  // per node: mesh axis of a collective, "" otherwise
};

struct LowerOptions {
  int64_t micro_batches = 1;
  DType compute_dtype = DType::kBF16;
  int64_t optimizer_bytes_per_param = 12;
};

Result<RoleProgram> lower_program(const Graph& g, const Bindings& bind, const HardwareProfile& hw,
                                  const LowerOptions& o);

RankTrace instantiate_rank(const RoleProgram& p, const RankLayout& layout, int64_t rank);

}  // namespace sc
