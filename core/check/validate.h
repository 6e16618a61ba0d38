// Cross-rank validation of a decoded Chakra archive (all ranks + the group
// file) against what the simulator needs to run it to completion
// (../shared/docs/chakra-format.md, "How the simulator executes a rank").
// Hangs from generated traces are silent in the simulator, so every rule
// reports the rank, node and values at fault rather than just "invalid".
// Rules (docs/validate.md):
//  R0  the file decodes (framing, protobuf)             (CLI, reader errors)
//  R1  unique node ids within a file
//  R2  every dependency names a node of the same file
//  R3  no dependency cycle
//  R4  only COMP/SEND/RECV/COLL nodes; only ALL_REDUCE, ALL_GATHER,
//      REDUCE_SCATTER, ALL_TO_ALL collectives
//  R5  attribute kinds and values (reader), tensor_size >= 1, sizes >= 0
//  R6  group file sane; every pg_name is a group the rank belongs to
//  R7  every member issues the same (type, size) sequence on a group
//  R7b (warning) collectives on one group not chained by dependencies, so
//      the issue order is not fixed by ids alone
//  R8  sends and recvs pair up on (src, dst, tag, size); peers, tags valid
//  R9  ranks 0..N-1 all present, world_size and config_hash agree
// Works on in-memory data only: the CLI (cli/cmd_validate.cc) reads files,
// maps reader errors to rules and adds the file-level findings.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "emit/chakra_writer.h"
#include "trace/rank_trace.h"

namespace sc {

enum class Severity { kError, kWarning };

struct Violation {
  int64_t rank = -1;        // -1: not about one rank (group file, archive)
  bool has_node = false;    // node_id / node_name are meaningful
  uint64_t node_id = 0;
  std::string node_name;
  std::string rule;         // "R1" ... "R9", "R7b"
  Severity severity = Severity::kError;
  std::string message;      // names the values at fault
};

// All findings. Counts are exact; the list keeps the first kMaxKept errors
// and the first kMaxKept warnings, so a broken 100K-node archive does not
// build millions of strings.
class ValidationReport {
 public:
  static constexpr size_t kMaxKept = 1000;

  void add(Violation v);
  // Appends another report's findings after this one's (counts summed).
  void append(const ValidationReport& other);

  bool ok() const { return errors_ == 0; }  // warnings allowed
  int64_t errors() const { return errors_; }
  int64_t warnings() const { return warnings_; }
  const std::map<std::string, int64_t>& counts() const { return counts_; }  // rule -> count
  // Errors first, then warnings, each in the order found.
  std::vector<Violation> listed() const;

  // "error R8 rank 1 node 42 (pp.send): <message>", one line per finding.
  static std::string format(const Violation& v);
  // Human report: up to `limit` findings, then counts per rule.
  std::string text(size_t limit = 50) const;
  // {"ok":..,"errors":..,"warnings":..,"counts":{..},"violations":[..],
  //  "violations_listed":.., "truncated":..}: every kept finding.
  std::string json() const;

 private:
  std::vector<Violation> errs_, warns_;
  std::map<std::string, int64_t> counts_;
  int64_t errors_ = 0, warnings_ = 0;
};

struct ValidateOptions {
  // Ranks whose file exists but did not decode (the caller reported why):
  // not "missing" under R9, and cross-rank checks that would need their
  // nodes (R7, R8) skip them rather than report noise.
  std::set<int64_t> undecodable_ranks;
  // The group file is missing or malformed (reported by the caller): skip
  // the per-collective group checks instead of failing each collective.
  bool groups_unavailable = false;
  // Expected world size when the caller knows it; 0: take it from the
  // metadata of the lowest rank given.
  int64_t world_size = 0;
};

// Checks R1-R9 on decoded traces (any order; identified by DecodedTrace::
// rank) and the group table. Never throws; cost is linear in nodes and
// edges, times the number of groups a rank belongs to (R7b).
ValidationReport validate_traces(const std::vector<DecodedTrace>& ranks, const GroupTable& groups,
                                 const ValidateOptions& options = {});

}  // namespace sc
