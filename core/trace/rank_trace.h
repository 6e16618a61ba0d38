// One rank's lowered execution trace: the contract between lowering
// (trace/lower.h) and the Chakra writer (emit/). Plain data in Chakra's
// vocabulary: node kinds, collective types (Chakra enum values), bytes,
// FLOPs and microseconds. Node ids are the issue order (ascending), and
// every scheduling edge is a dependency (written as data_deps).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "graph/collective.h"  // CollectiveType
#include "parallel/groups.h"   // GroupTable

namespace sc {

enum class TraceNodeKind : int { kCompute = 4, kSend = 5, kRecv = 6, kCollective = 7 };  // Chakra NodeType

struct TraceNode {
  uint64_t id = 0;
  std::string name;
  TraceNodeKind kind = TraceNodeKind::kCompute;
  // kCollective (next to kind: no padding; programs hold millions of nodes)
  CollectiveType coll = CollectiveType::kAllReduce;
  std::vector<uint64_t> deps;  // ids of nodes that must finish first

  // kCompute
  int64_t num_ops = 0;           // FLOPs
  uint64_t tensor_size = 0;      // bytes read + written (>= 1)
  uint64_t duration_micros = 0;  // roofline time under the hardware profile

  // kCollective / kSend / kRecv
  int64_t comm_size = 0;   // bytes, Chakra semantics (see docs/trace-format.md)
  int64_t group = 0;       // group-file key (kCollective), >= 1
  int32_t peer = -1;       // kSend: comm_dst, kRecv: comm_src (global rank)
  int32_t tag = 0;         // kSend/kRecv, >= 0

  // Bytes this node writes (its output tensor; 0 for a send): the
  // `outputs` attribute ASTRA-sim's local-memory tracking reads, and the
  // `inputs` of the nodes that depend on it (docs/trace-format.md).
  uint64_t output_bytes = 0;
};

struct RankTrace {
  int64_t rank = 0;
  std::vector<TraceNode> nodes;
};

// Provenance written into each file's GlobalMetadata.
struct TraceMetadata {
  std::string generator = "stagecraft";
  std::string generator_version;
  std::string config_hash;  // hex digest of the canonical job JSON
  int64_t world_size = 0;
};

}  // namespace sc
