// Shared by the validator's tests (validate_test.cc, validate_stream_test.cc):
// a generated job's traces after a round trip through the real writer and
// reader, and small helpers to break them on purpose.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../test_jobs.h"
#include "check/validate.h"
#include "emit/chakra_writer.h"

namespace sc::testing {

struct Archive {
  std::vector<DecodedTrace> ranks;
  GroupTable groups;
};

// Every rank of g written by the Chakra writer and read back.
inline Archive through_reader(const Generator& g) {
  Archive a;
  a.groups = g.groups();
  for (int64_t r = 0; r < g.world_size(); ++r) {
    std::string bytes;
    REQUIRE(write_chakra_trace(g.rank_trace(r).value(), g.metadata(), &bytes).ok());
    auto t = read_chakra_trace(bytes);
    REQUIRE(t.ok());
    a.ranks.push_back(std::move(t).value());
  }
  return a;
}

// 4 ranks (tp 2 x dp 2, SP): TP and DP groups, every collective type.
inline Archive tp_dp() { return through_reader(make(gpt_job(2, 512, 8, 2, 2, true, 1, 256, 4))); }

inline std::vector<TraceNode>& nodes(Archive& a, int64_t r) { return a.ranks[static_cast<size_t>(r)].trace.nodes; }

inline TraceNode* nth_collective(Archive& a, int64_t r, int k) {
  for (auto& n : nodes(a, r))
    if (n.kind == TraceNodeKind::kCollective && k-- == 0) return &n;
  return nullptr;
}

inline TraceNode p2p(TraceNodeKind kind, uint64_t id, int32_t peer, int32_t tag, int64_t size) {
  TraceNode n;
  n.id = id;
  n.name = kind == TraceNodeKind::kSend ? "test.send" : "test.recv";
  n.kind = kind;
  n.peer = peer;
  n.tag = tag;
  n.comm_size = size;
  return n;
}

}  // namespace sc::testing
