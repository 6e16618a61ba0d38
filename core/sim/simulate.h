// The whole job's step time, from the per-rank programs the traces hold
// (docs/simulate.md). Issue rules of ASTRA-sim (one node in flight per
// stream of a rank, receives outstanding in any number, ready nodes issued
// in ascending id, the k-th collective on a group joins the k-th of every
// member, a send matches the receive with the same (source, destination,
// tag)); the streams are ASTRA-sim's (one compute, one communication) or
// Megatron-LM's (SimStreams); times from the network model (sim/network.h).
//
// Symmetry: ranks are partitioned into classes that run the same program
// and whose groups and peers are alike — the coarsest partition stable
// under "same stage, same group shapes and link classes, members and peers
// in the same classes" — and one representative per class is simulated. A
// collective's start is the latest issue among the classes of the
// representative's group. Exhaustive mode makes every rank its own class.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "parallel/mesh.h"
#include "sim/network.h"
#include "trace/lower.h"

namespace sc {

// What a compute node is, for the timeline and the critical path.
enum class SimPhase : uint8_t { kForward = 0, kBackward = 1, kWeight = 2, kOptimizer = 3 };

struct SimStage {
  const RoleProgram* program = nullptr;
  std::vector<SimPhase> phase;  // per node (compute nodes; others ignored)
  std::vector<int32_t> micro_batch;  // per node, -1 when not per micro-batch; only read (and filled) for a timeline
  // Per node (empty when none): 1 where the host waits for the device
  // before issuing the node (a dropless token dispatcher copying the
  // tokens per expert to the host before its all-to-all): the host issues
  // it, and every node after it, only once its dependencies have finished
  // (docs/simulate.md, "The host").
  std::vector<uint8_t> host_sync;
};

// Which CUDA stream a node runs on (docs/simulate.md, "Execution model").
enum class SimStreams : uint8_t {
  // ASTRA-sim's rule: one compute and one communication stream per rank.
  kAstra = 0,
  // Megatron-LM's: tp, cp and ep collectives run on the compute stream
  // (the next kernel waits for them); sends (pipeline, ring attention) on
  // a point-to-point stream; dp/ZeRO reductions on their own stream.
  kMegatron = 1,
};

struct SimOptions {
  bool exhaustive = false;
  bool timeline = false;  // per-stage intervals in the result
  SimStreams streams = SimStreams::kAstra;
  // The host's time at a host_sync node (µs; 0: no host timeline): the host
  // issues a rank's nodes in id order, ahead of the device, except at a
  // host_sync node, where it waits until the node's dependencies have
  // finished and then spends host_sync_micros before issuing it; no node
  // after it starts before that issue. Receives are posted at once. Only
  // with SimStreams::kMegatron (docs/simulate.md, "The host").
  double host_sync_micros = 0;
  // The host's time to issue each node (µs; 0: none): with it the host
  // issues a rank's nodes (receives excepted) each host_launch_micros after
  // the previous one, in every training job, not only at host_sync nodes.
  double host_launch_micros = 0;
};

// Kinds of communication, by the group's parallel dimension.
inline constexpr const char* kCommKinds[] = {"tp", "cp", "ep", "pp", "dp"};
inline constexpr int kNumCommKinds = 5;
int comm_kind_of_axis(const std::string& axis);  // index into kCommKinds

struct SimInterval {
  double start = 0, end = 0;  // µs
  // "F", "B", "W", "O" (compute phases) or a comm kind ("tp", ... "dp")
  const char* kind = "F";
  int32_t micro_batch = -1;
  // Communication only: 1 when no compute ran beside it (exposed), 0 when
  // compute ran all along (hidden); a transfer partly hidden is split into
  // such pieces. -1 for compute.
  int8_t exposed = -1;
};

struct SimStageResult {
  int64_t stage = 0, rank = 0;  // the simulated rank of rank 0's pipeline
  double busy = 0, bubble = 0;  // µs: compute stream busy / idle without communication in flight
  double exposed[kNumCommKinds] = {0, 0, 0, 0, 0};  // µs idle while that kind's communication is in flight
  double end = 0;               // µs: this rank's last node ends
  int64_t host_syncs = 0;       // the host's waits for the device in one step (docs/simulate.md, "The host")
  std::vector<SimInterval> timeline;
};

struct SimResult {
  double step = 0;  // µs: the last node of any rank ends
  int64_t world = 0, classes = 0, nodes_simulated = 0;
  std::vector<SimStageResult> stages;
  std::vector<std::string> critical_path;  // a few lines
};

// stages[i]: the program of pipeline stage i. max_group_key: the largest
// group key of the layout. A run that does not complete is an error that
// names the stuck rank and node.
Result<SimResult> simulate_programs(const std::vector<SimStage>& stages, const RankLayout& layout,
                                    int64_t max_group_key, const NetworkModel& net, const SimOptions& opt);

}  // namespace sc
