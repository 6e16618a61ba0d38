// The one façade over the core: job in, summary / graph text / per-rank
// traces out. No transport and no files: the CLI (cli/) does filesystem
// work, the wasm bridge (wasm/) moves strings and bytes to JS.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"
#include "job/job.h"
#include "trace/rank_trace.h"

namespace sc {

struct GeneratorState;  // graph, shardings, per-role programs (api.cc)

class Generator {
 public:
  // Builds the symbolic graph, shards it, inserts communication and lowers
  // one program per distinct rank role. Errors name the job field.
  static Result<Generator> create(const Job& job);

  Generator(Generator&&) noexcept;
  Generator& operator=(Generator&&) noexcept;
  ~Generator();

  const Job& job() const;
  int64_t world_size() const;

  // summary.json (see docs/summary.md): parameters, FLOPs, memory per
  // rank, communication bytes per collective type. Pretty-printed, stable.
  std::string summary_json() const;

  // Canonical text of the sharded symbolic graph (fwd, bwd, optimizer,
  // with inserted collectives). Stable: used by golden tests.
  std::string graph_text() const;

  Result<RankTrace> rank_trace(int64_t rank) const;
  // Complete bytes of prefix.<rank>.et.
  Result<std::string> rank_trace_bytes(int64_t rank) const;

  const GroupTable& groups() const;
  std::string groups_json() const;  // the communicator-group file
  TraceMetadata metadata() const;

 private:
  explicit Generator(std::unique_ptr<GeneratorState> state);
  std::unique_ptr<GeneratorState> state_;
};

// {"code": "...", "message": "...", "path": "..."}
std::string error_to_json(const Error& e);

const char* stagecraft_version();  // e.g. "0.1.0"

}  // namespace sc
