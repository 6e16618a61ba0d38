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
//  R8  sends and recvs pair up on (src, dst, tag, size); peers valid and
//      never the rank itself, tags valid
//  R9  ranks 0..N-1 all present, world_size and config_hash agree
// Works on decoded data only, streamed one rank at a time (StreamingValidator)
// or all at once (validate_traces): the CLI (cli/cmd_validate.cc) reads the
// files one by one, maps reader errors to rules and adds the file-level
// findings.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
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
  // Counts n findings of `rule` without listing them: for a streaming
  // check that knows they come after the first kMaxKept.
  void add_unlisted(const std::string& rule, Severity severity, int64_t n);
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
  // metadata of the lowest rank given (streaming: of the first rank fed).
  int64_t world_size = 0;
  // When neither world_size nor that metadata gives one: the world assumed
  // (reported as "world_size unknown; assuming N"). 0: the first rank fed
  // + 1. validate_traces passes the highest rank given + 1.
  int64_t assumed_world_size = 0;
};

// Checks R1-R9 on decoded traces (any order; identified by DecodedTrace::
// rank) and the group table. Never throws; cost is linear in nodes and
// edges, times the number of groups a rank belongs to (R7b). A thin wrapper
// over StreamingValidator: feeds the ranks in ascending order (the report
// lists findings in that order), and its loader hands them back.
ValidationReport validate_traces(const std::vector<DecodedTrace>& ranks, const GroupTable& groups,
                                 const ValidateOptions& options = {});

// What StreamingValidator::check keeps of one rank once its nodes are
// gone: its per-rank findings and its compact share of the cross-rank
// state. Opaque to callers; hand it to StreamingValidator::take.
struct RankCheck {
  struct Sequence {     // R7: the rank's (type, size) sequence on a group
    int64_t group = 0;
    uint64_t hash = 0;  // of the id-ordered (coll, comm_size) pairs
    uint64_t count = 0;
  };
  struct Message {      // R8: sends (+1) minus recvs (-1) of one key
    int64_t src = 0, dst = 0;
    int32_t tag = 0;
    int64_t size = 0;
    int64_t delta = 0;
  };
  int64_t rank = -1;
  int64_t world_size = 0;  // from the metadata (R9)
  std::string config_hash;
  int64_t nodes = 0;
  ValidationReport findings;  // R1-R6, per-node R8, R7b
  std::vector<Sequence> sequences;
  std::vector<Message> messages;
};

// The streaming form of validate_traces: ranks are fed one at a time and
// dropped; memory is one rank's working set plus compact cross-rank state
// (about 24 bytes per group membership for R7, one counter per send/recv
// key whose other end has not been fed yet for R8, the kept findings). See
// docs/validate.md, "Streaming".
//   StreamingValidator v(groups, options, loader);
//   for each rank, ascending: v.add_rank(trace);   // then drop trace
//   ValidationReport report = v.finish();
// Ranks may come in any order, but world_size and the config_hash
// reference are taken from the first rank fed, and the report lists
// per-rank findings in feed order: feed ascending ranks to get
// validate_traces' report.
class StreamingValidator {
 public:
  // Hands a rank that was fed back, for the report only: R7 and R8 know a
  // mismatch from counts and hashes but name the node at fault (id, name,
  // position) by reading the rank's nodes again. Called at most twice per
  // rank named by a kept R7 or R8 finding (none for a valid archive).
  // Returns the trace (it may live in *scratch) or nullptr when it cannot,
  // which leaves those findings without a node.
  using RankLoader = std::function<const DecodedTrace*(int64_t rank, DecodedTrace* scratch)>;

  // groups must outlive the validator.
  StreamingValidator(const GroupTable& groups, ValidateOptions options = {}, RankLoader loader = {});
  ~StreamingValidator();
  StreamingValidator(const StreamingValidator&) = delete;
  StreamingValidator& operator=(const StreamingValidator&) = delete;

  // check() + take(): all rules on one rank; the trace can be dropped after.
  void add_rank(const DecodedTrace& trace);
  // The rank's file exists but did not decode (as ValidateOptions::
  // undecodable_ranks, known only while streaming).
  void add_undecodable(int64_t rank);

  // add_rank in two halves, for callers that check ranks on several
  // threads: check() is const and thread-safe once world_size() > 0 (set at
  // construction from options.world_size, else by the first add_rank);
  // take() folds results in, in feed order, on one thread.
  RankCheck check(const DecodedTrace& trace) const;
  void take(RankCheck&& result);
  int64_t world_size() const;  // 0 until known

  // The cross-rank rules (R7, R8, the rest of R9 and R6); call once.
  ValidationReport finish();

  struct State;  // implementation (validate.cc)

 private:
  std::unique_ptr<State> s_;
};

}  // namespace sc
