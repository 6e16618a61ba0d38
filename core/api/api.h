// The one façade over the core: job in, summary / graph text / per-rank
// traces out. No transport and no files: the CLI (cli/) does filesystem
// work, the wasm bridge (wasm/) moves strings and bytes to JS.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

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
  // summary = false leaves summary_json() empty (its bubble replay and
  // simulation are most of a build's time): for callers that read the
  // programs and simulate themselves (the planner, api/plan.cc).
  struct CreateOptions {
    bool summary = true;
    // false: skip check_budget (api/budget.h): only for the budget's own
    // small builds (estimate_job_counted), which check their quick bound.
    bool check_budget = true;
    // Threads for the pipeline stages' graphs and lowering and the budget
    // estimate's stage counts (each stage into its own slot: the same bytes
    // at any count). 1 in the library and the wasm module; the CLI passes
    // the machine's cores (at most 4).
    int threads = 1;
  };
  static Result<Generator> create(const Job& job, const CreateOptions& options);

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

  // The sharded graph of pipeline stage `stage` (the program its ranks run)
  // as JSON for drawing and teaching (core/api/explain.cc): the stage, its
  // layers and chunks, tensors with symbolic local shapes and shardings, ops
  // with phase/layer, and for each inserted collective why it is there
  // (which sharding the producer has and which the consumer needs). A stage
  // outside [0, pp) is an invalid_argument error with path "stage". See
  // docs/wasm-bridge.md.
  Result<std::string> graph_json(int64_t stage = 0) const;

  // A rank's coordinates on every parallel axis and the groups it belongs
  // to (axis -> group key and members), as JSON (core/api/explain.cc).
  Result<std::string> rank_info_json(int64_t rank) const;
  // The rank at the given coordinates ({"tp":1,"dp":3}); missing axes are 0.
  Result<int64_t> rank_at(const std::string& coords_json) const;

  Result<RankTrace> rank_trace(int64_t rank) const;
  // Complete bytes of prefix.<rank>.et.
  Result<std::string> rank_trace_bytes(int64_t rank) const;

  // Inference jobs (docs/inference.md): the Generator of an iteration kind,
  // "prefill", "decode" (this one) or "mixed" (colocated jobs); nullptr for
  // another name or a training job. phase_names(): those that exist ({} for
  // a training job).
  const Generator* phase(const std::string& name) const;
  std::vector<std::string> phase_names() const;

  const GroupTable& groups() const;
  std::string groups_json() const;  // the communicator-group file
  TraceMetadata metadata() const;

 private:
  explicit Generator(std::unique_ptr<GeneratorState> state);
  friend struct GeneratorAccess;  // internal views (explain.cc)
  std::unique_ptr<GeneratorState> state_;
};

// {"code": "...", "message": "...", "path": "..."}
std::string error_to_json(const Error& e);

const char* stagecraft_version();  // e.g. "0.1.0"

}  // namespace sc
