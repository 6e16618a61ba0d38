// Chakra execution-trace writer and reader (protobuf-lite, delimited
// framing: varint(len) GlobalMetadata, then varint(len) Node ...).
// See docs/trace-format.md and ../shared/docs/chakra-format.md.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "trace/rank_trace.h"

namespace sc {

// Appends the complete bytes of one rank's .et file to *out.
Status write_chakra_trace(const RankTrace& trace, const TraceMetadata& meta,
                          std::string* out);

// Decodes a .et byte string back into a RankTrace (+ metadata). Errors on
// truncated frames, unknown node types, or attributes of the wrong kind.
struct DecodedTrace {
  std::string version;
  TraceMetadata meta;
  int64_t rank = -1;  // from the metadata attr "rank" if present
  RankTrace trace;
};
Result<DecodedTrace> read_chakra_trace(const std::string& bytes);

// Canonical text of a .et file: a header line, then one node per line
// with id, name, type, deps and attributes in a fixed order. Stable.
Result<std::string> dump_chakra_trace(const std::string& bytes);

// The communicator-group JSON: {"1": [0, 1], "2": [2, 3]} with keys in
// ascending numeric order and no whitespace beyond single spaces.
std::string group_table_json(const GroupTable& groups);

}  // namespace sc
