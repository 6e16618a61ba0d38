// Pre-serialised trace of one rank role, for exporting many ranks fast.
//
// All ranks of a role write the same bytes except in a few places: the
// metadata's `rank`, each collective's `pg_name`, and each send/recv's peer
// and tag. A TraceTemplate keeps the role's bytes as written by
// write_chakra_trace once, with those places as holes; a rank's file is then
// memcpy of the constant runs plus a few hand-encoded attributes, with the
// frame lengths (varints) recomputed for the nodes whose size changes.
// The bytes are identical to write_chakra_trace's for the same trace
// (tests/unit/export/trace_template_test.cc checks every rank of the golden
// jobs); create() also checks that the hand-encoded parts match protobuf's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "trace/rank_trace.h"

namespace sc {

class TraceTemplate {
 public:
  // `sample` is one rank's complete trace of the role; every node that is a
  // collective, send or recv becomes a hole (its group, peer and tag are
  // taken per rank); everything else must be the same for every rank of the
  // role. Errors are write_chakra_trace's (kInternal).
  static Result<TraceTemplate> create(const RankTrace& sample, const TraceMetadata& meta);

  // Indices into the role's node list whose bytes depend on the rank, ascending.
  const std::vector<uint32_t>& hole_nodes() const { return hole_nodes_; }
  size_t num_nodes() const { return num_nodes_; }

  // An upper bound on the bytes of any rank's file (for sizing a buffer).
  size_t max_size() const { return max_size_; }

  // Writes rank's complete file to dst (room for max_size() bytes) and
  // returns its length. holes[i] holds the per-rank fields of node
  // hole_nodes()[i] (group for a collective; peer and tag for send/recv;
  // other fields are ignored). Checks those values like write_chakra_trace
  // does (kInternal); on error dst holds garbage.
  Result<size_t> encode(int64_t rank, const TraceNode* holes, size_t num_holes, char* dst) const;

  // Appends rank's file to *out (all or nothing).
  Status append(int64_t rank, const std::vector<TraceNode>& holes, std::string* out) const;

 private:
  struct Hole {
    TraceNodeKind kind;
    uint64_t id;             // for error messages
    uint32_t gap_off, gap_len;    // constant framed nodes before this one, in const_
    uint32_t head_off, head_len;  // this node's body up to the per-rank attributes
    int64_t comm_size;            // send/recv: the constant last attribute
  };
  std::string const_;       // every constant byte, in file order
  std::string meta_head_;   // GlobalMetadata body up to the rank attribute
  std::string meta_tail_;   // the world_size attribute
  std::vector<Hole> holes_;
  std::vector<uint32_t> hole_nodes_;
  std::vector<std::string> hole_names_;  // node names, for error messages only
  uint32_t end_off_ = 0, end_len_ = 0;   // constant framed nodes after the last hole
  size_t num_nodes_ = 0;
  size_t max_size_ = 0;
  int64_t world_size_ = 0;
};

}  // namespace sc
