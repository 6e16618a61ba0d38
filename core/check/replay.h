// A reference Chakra consumer: replays every rank's trace together under
// the execution rules ASTRA-sim applies (../shared/docs/chakra-format.md):
//  - a node is ready when all its dependencies have finished;
//  - ready nodes are issued in ascending id;
//  - per rank at most one compute node and one collective/send in flight;
//    receives may overlap;
//  - the k-th collective a rank issues on a group joins the k-th collective
//    of every other member; it starts when all have issued it and must have
//    the same (type, size) on all of them;
//  - a send and a recv match on (src, dst, tag, size).
// Compute takes duration_micros; communication a simple bytes / bandwidth.
// A run that stops with unfinished nodes is a hang, reported per rank with
// the node it is stuck on. Used by tests to show that generated traces run
// to completion; it is not a network model.
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "trace/lower.h"  // RoleProgram
#include "trace/rank_trace.h"

namespace sc {

struct ReplayResult {
  bool completed = false;
  double makespan_micros = 0;
  int64_t nodes_finished = 0;
  std::vector<std::string> problems;  // hangs and mismatches, precise
};

ReplayResult replay_traces(const std::vector<RankTrace>& ranks, const GroupTable& groups,
                           double bytes_per_micro = 100e3);

// Replays one pipeline (one rank per stage) with collectives completing at
// once and sends/receives costing nothing: what remains is the schedule's
// structure under the compute durations. stages[i] is stage i's trace with
// its send/recv peers given as stage indices. Returns, per stage, the time its
// forward/backward compute is busy and the time the last of it ends.
struct PipelineTiming {
  std::vector<double> busy_micros, end_micros;
  bool completed = false;
};
PipelineTiming replay_pipeline(const std::vector<RankTrace>& stages);
// The same on nodes read in place (a role's program, not a per-rank copy):
// peers[i][j] is the stage of node j's send/recv peer on stage i.
PipelineTiming replay_pipeline(const std::vector<const std::vector<TraceNode>*>& stages,
                               const std::vector<std::vector<int64_t>>& peers);
PipelineTiming replay_pipeline(const std::vector<const std::vector<ProgramNode>*>& stages,
                               const std::vector<std::vector<int64_t>>& peers);
// The same on lowered programs, read in place: a send/recv's peer is its
// peer_stage, a ring-attention neighbour its own stage.
PipelineTiming replay_pipeline(const std::vector<const RoleProgram*>& stages);
// replay_pipeline computes the figures as a longest path where the
// programs allow it (lowered programs do: replay.cc says when) and
// otherwise replays events; this always replays events (for tests: both
// must agree).
PipelineTiming replay_pipeline_events(const std::vector<const std::vector<TraceNode>*>& stages,
                                      const std::vector<std::vector<int64_t>>& peers);
PipelineTiming replay_pipeline_events(const std::vector<const std::vector<ProgramNode>*>& stages,
                                      const std::vector<std::vector<int64_t>>& peers);

}  // namespace sc
