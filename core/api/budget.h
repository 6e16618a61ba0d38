// The work budget and cancellation of Generator::create (docs/promises.md).
//
// A valid job can still be too big to build: the rank programs hold one
// node per op per micro-batch, so a job with 4,096 micro-batches and 80
// layers per stage needs ~10^7 nodes and gigabytes before its first trace.
// estimate_job() predicts, from the job's numbers alone and without
// building anything (microseconds, even for 10^6 ranks), the nodes of the
// largest rank program, the memory the engine peaks at and the bytes of
// all traces. check_budget() refuses a job past the budget with
// ErrorCode::kTooLarge, naming the estimate and what to change.
// Cancellation of the build: base/cancel.h.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>
#include <string>

#include "base/bytes.h"
#include "base/cancel.h"
#include "base/status.h"
#include "job/job.h"
#include "parallel/mesh.h"
#include "trace/rank_trace.h"

namespace sc {

struct JobEstimate {
  int64_t micro_batches = 0;     // per iteration per dp rank
  int64_t max_stage_layers = 0;  // layers of the largest pipeline stage (all its chunks)
  int64_t nodes_per_rank = 0;    // trace nodes of the largest rank program
  int64_t program_nodes = 0;     // nodes of all stage programs (what the engine holds)
  int64_t engine_bytes = 0;      // peak memory of Generator::create
  int64_t trace_bytes_per_rank = 0;  // .et bytes of the largest rank
  int64_t trace_bytes_total = 0;     // .et bytes of all world_size ranks
  int64_t stage_trace_bytes = 0;     // .et bytes of one rank of every stage, summed (the exporter's templates)
  bool counted = false;              // from estimate_job_counted (else the arithmetic bound)
};

// The quick bound: from the job's numbers alone, nothing built
// (microseconds, even for 10^6 ranks). Never under the truth and within 4x
// of it (tests/unit/api/budget_test.cc). Saturates at INT64_MAX / 4
// instead of overflowing.
JobEstimate estimate_job(const Job& job);


// Serialised .et bytes per node (protobuf: id, name, type, deps, attrs,
// and the inputs/outputs tensor lists ASTRA-sim's memory tracking reads):
// measured 93-104 before those lists, ~180 with them (llama3-8b 4 layers,
// tp 4 cp 2 SP dp 2 ZeRO-3: 363,675 bytes for 2,026 nodes; Llama-3-70B tp 8
// pp 8, 2 micro-batches: 163,014 bytes for 912 and for 938 nodes).
inline constexpr int64_t kTraceBytesPerNode = 240;

struct Budget {
  // 2 GiB of estimated engine memory (the estimate is 1-2x the measured
  // peak): leaves room in the 4 GiB wasm heap for growth and the JS side.
  int64_t max_engine_bytes = int64_t{2} << 30;
};
// The native CLI's default (cli/args.cc); docs/promises.md.
constexpr int64_t kCliEngineBudgetBytes = int64_t{8} << 30;
// The process-wide budget Generator::create enforces (the CLI's
// --allow-large raises it after checking free memory).
Budget engine_budget();
void set_engine_budget(const Budget& b);

// The tight estimate (docs/promises.md, "Budgets"): the job is built with
// two small micro-batch counts m1 < m2 (1 and 2, or pp and 2 pp for
// interleaved-1f1b; the job itself when it has at most m2), without its
// summary; each stage's program nodes and dependencies and its highest
// rank's encoded .et bytes are counted, and extrapolated to the job's m
// micro-batches (a stage's nodes, dependencies and bytes are affine in m:
// every micro-batch adds the same nodes). On top of the extrapolated bytes,
// what grows with m besides the nodes is added as an upper bound: node ids
// and dependency ids in varints and as "t<id>" tensor names, the
// micro-batch number in node names, pipeline message tags, and the nested
// length prefixes. Engine memory: 400 B per node of every stage program +
// 160 kB per layer + 300 B per rank + 14 MiB (fitted upper bounds,
// budget.cc). Never under the truth and within
// 1.5x of it (trace bytes and nodes: budget_test.cc over a corpus of built
// jobs; engine memory: the measured table in docs/promises.md).
// Cost: two builds of at most 2 (2 pp) micro-batches. A mini-build whose
// quick bound is over `b` is not attempted: kTooLarge. Inference jobs: the
// quick bound (their generators build each iteration kind once).
Result<JobEstimate> estimate_job_counted(const Job& job, const Budget& b = engine_budget());

// One pipeline stage's counts in a job built at some micro-batch count:
// its program's nodes and dependencies, and the .et bytes of its highest
// rank (every other axis at its last coordinate: the largest peer ranks
// and group ids of the stage).
struct StageCount {
  int64_t nodes = 0, deps = 0, bytes = 0;
};
StageCount count_stage_trace(const RankTrace& highest_rank, const TraceMetadata& meta, Status* status);
// That rank of pipeline stage `stage`: pp at `stage`, tp, dp and cp at
// their last coordinate, every other axis at 0.
int64_t stage_highest_rank(const RankLayout& layout, int64_t stage);
// Counts every stage of `mini`: `job` with another training.global_batch_size
// (the micro-batch count the estimate samples; `job` itself when it has at
// most m2 micro-batches).
using StageCounter = std::function<Result<std::vector<StageCount>>(const Job& mini)>;
// The same estimate, same numbers, with the stages counted by `count`
// instead of by building each small job: Generator::create, which holds
// the job's stage graphs (they do not depend on the micro-batch count),
// lowers them again at m1 and m2 micro-batches (api.cc). No quick-bound
// refusal of the small builds (nothing is built but their programs).
Result<JobEstimate> estimate_job_counted(const Job& job, const StageCounter& count);

// Peak memory of `generate` writing `ranks` ranks with `threads` worker
// threads (to an archive when `archive`): the build and its summary
// (engine_bytes) plus the exporter (core/api/export.cc, cli/export.cc):
// each stage's pre-serialised template and the transients of making and
// self-checking it (a rank's RankTrace, reference bytes, scratch buffers),
// the stages' bytes + 2.5 x the largest rank's + 2.5 x the first 64 MiB of
// it + 1.5 MiB (the first
// worker's buffer fits in what those transients leave); each further
// directory worker (one per 16 ranks, at most `threads`) 1.5 x the largest
// rank's bytes (its encoding buffer and the rank's holes); an archive's
// workers hold up to 4 encoded ranks in flight + one scratch buffer each.
// Fitted as upper bounds to the peak RSS of `generate` in docs/promises.md
// "Budgets" (1.1-1.45x it).
int64_t generate_bytes(const JobEstimate& e, int threads, int64_t ranks, bool archive);

// kTooLarge past the budget: "this job needs about N nodes per rank
// program (M micro-batches x L layers) and X GiB of engine memory; the
// budget is Y GiB: ...what to change". Path "training.global_batch_size".
// The quick bound decides when it is within the budget, or when even a
// quarter of it is over (then refused in microseconds); in between the
// counted estimate decides (estimate_job_counted).
Status check_budget(const Job& job, const Budget& b = engine_budget());

// human_bytes ("12.3 GiB"): base/bytes.h.

}  // namespace sc
