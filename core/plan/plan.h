// `plan`: the fastest parallel layout of a job that fits (docs/plan.md).
// The planner's own layer (core/plan, above the simulator): it builds and
// times layouts through a PlanBackend that the request layer supplies
// (core/api/plan.h, the door: Generator::create and simulate), so this
// layer uses nothing above sim.
//
// Given a base job (model, seq_len, global batch, dtype, hardware,
// network) and a GPU count, enumerates every layout of the search space
// (tp, sequence parallelism, cp, pp, virtual stages, schedule, dp, ZeRO /
// HSDP shard group, ep and expert tp, recompute, micro-batch size, rank
// order), rejects those validate_job refuses, estimates every layout's
// per-rank peak memory and a lower bound of its step time from one small
// "proxy" build per stage-program key (the per-layer weights, saved
// activations and compute durations do not depend on pp, dp, ZeRO or the
// schedule), and times with the simulator only the layouts whose bound
// can still enter the top N. Single-threaded unless PlanOptions::threads
// > 1 (the CLI); the result does not depend on the thread count.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "graph/graph.h"
#include "job/job.h"
#include "symbolic/expr.h"
#include "trace/lower.h"

namespace sc {

// The seven bounded degrees, in this order: tp, pp, cp, dp, ep, vp, mbs.
inline constexpr int kPlanDegrees = 7;
inline constexpr const char* kPlanDegreeNames[kPlanDegrees] = {"tp", "pp", "cp", "dp", "ep", "vp", "mbs"};

struct PlanConstraints {
  std::optional<int64_t> fixed[kPlanDegrees];
  std::optional<int64_t> min[kPlanDegrees];
  std::optional<int64_t> max[kPlanDegrees];
  std::vector<std::string> schedules;  // empty = all
  std::vector<std::string> recompute;  // empty = all
  std::vector<int64_t> zero;           // empty = 0..3
  std::vector<std::string> orders;     // empty = megatron, llama3
  // Neither given: default_memory_reserve(job.hardware).total(), the CUDA
  // context, cuBLAS workspaces and NCCL buffers of the GPU profile
  // (plan/memory_reserve.h; docs/plan.md, "The memory reserve").
  std::optional<double> memory_reserve_gib, memory_reserve_fraction;
  std::string objective = "step_time";  // or "tokens_per_gpu"
  int64_t top = 5;
};

// The "plan" block of a job JSON / the request's args.constraints. Errors
// name "<path>.<key>" and the value; unknown keys are kUnknownField.
Result<PlanConstraints> parse_plan_constraints(const nlohmann::json& j, const std::string& path = "plan");

struct PlanResult;

struct PlanOptions {
  int64_t gpus = 0;
  PlanConstraints constraints;
  int threads = 1;  // > 1 only natively (the CLI); wasm runs single-threaded
  // Stop the search (every phase: enumeration, validation, estimates,
  // simulations) after this many seconds (0: no limit) and return the best
  // so far with complete = false.
  double time_limit_seconds = 0;
  // Memory the search may hold for its layouts (0: no limit): the layouts
  // are counted before any is stored and the search refused (kTooLarge,
  // naming the count and the estimate) when count x plan_bytes_per_layout
  // is over it. The door (core/api/plan.h) sets the engine budget's.
  int64_t max_search_bytes = 0;
  // Tests: simulate every layout that fits, no bound or dominance pruning.
  bool exhaustive = false;
  // Benchmark baseline: false prunes with the previous round's bound only
  // (the closed form without gradient bucket counts, no schedule replay;
  // docs/plan.md, step 5). The result is the same, only slower.
  bool replay_bound = true;
  // Tests and benchmark baseline: false leaves the routed experts'
  // data-parallel collectives (over edp) out of both bounds, as before
  // 2026-11-27 (docs/plan.md, step 5). The result is the same, only slower.
  bool expert_dp_bound = true;
  // The seed step (docs/plan.md, "Anytime"): a first best so far from a
  // few layouts before the estimates of all. false (tests) leaves it out;
  // the result is the same, the first best comes later.
  bool seed = true;
  // Called from the calling thread only: (done, total, phase).
  std::function<void(int64_t, int64_t, const std::string&)> progress;
  // Nothing fits on `gpus` (for memory): look for the smallest GPU count
  // that fits (PlanResult::smallest_fit). false: not looked for.
  bool probe_smallest_fit = true;
  // The probe's own searches: stop at the first layout that fits.
  bool first_fit = false;
  // Called from the calling thread when the ranked rows changed (a layout
  // that fits entered the top N), at most every 250 ms (a change held back
  // is reported after a later simulation), while the search runs: what a stop
  // at that moment would return (complete = false; the layouts not yet
  // decided counted as unexamined, or as cut by the bound when the bound
  // already cuts them). Not called with the final result. The browser's
  // Plan tab streams it (docs/plan.md, "Request op" and "In the browser").
  std::function<void(const PlanResult&)> improved;
};

struct PlanLayout {
  int64_t tp = 1, cp = 1, pp = 1, vp = 1, dp = 1, zero = 0, shard_group = 1, ep = 1, expert_tp = 1, mbs = 1;
  bool sp = false;
  Schedule schedule = Schedule::kOneFOneB;
  Recompute recompute = Recompute::kNone;
  std::vector<std::string> order;
  // Interleaved only: the first virtual stage holds the embedding alone and
  // the last the loss alone (no transformer layers), the others L / (pp x
  // vp - 2) layers each (Llama 3 405B's layout; docs/plan.md).
  bool empty_ends = false;
  // Interleaved only: the embedding and the loss each counted as a layer of
  // the split (Megatron's account_for_embedding_in_pipeline_split and
  // account_for_loss_in_pipeline_split), (L + 2) / (pp x vp) = e >= 2 per
  // chunk, the end chunks e - 1 layers beside them (Megatron-Bridge's
  // Llama 3.1 405B: 1, 2 x 62, 1 over 64 chunks). The job's
  // pipeline_layout is the balanced split layout_job gives any uneven
  // layout; this flag only names it.
  bool counted_ends = false;
};

struct PlanCandidate {
  PlanLayout layout;
  Job job;
  double step_seconds = 0, mfu = 0, tokens_per_second = 0, tokens_per_second_per_gpu = 0, bubble_fraction = 0;
  double exposed[5] = {0, 0, 0, 0, 0};  // tp, cp, ep, pp, dp (seconds)
  int64_t peak_memory_bytes = 0, memory_capacity_bytes = 0, usable_memory_bytes = 0;
  double bound_seconds = 0;  // the lower bound the search used
  std::string bound;         // one line: what bounds it
  // Layouts that differ from this one only in recompute and simulate to
  // the same step: one row names them (ranked by the layout key).
  std::vector<PlanLayout> alternatives;
  // Why the simulator's figure is less sure here (docs/plan.md,
  // "Confidence"); empty when nothing applies.
  std::vector<std::string> low_confidence;
};

// The thresholds of PlanCandidate::low_confidence (docs/plan.md,
// "Confidence", says where each comes from).
inline constexpr double kLowConfidenceExposedShare = 0.25;
// The shortest sequence chunk per cp rank among the checked runs, per
// algorithm: all-gather, Llama 3 405B's 131,072 tokens over cp 16
// (tests/fidelity/llama3-2024-table4.json); ring, NVIDIA's Megatron-Core
// Llama 3 and 3.1 runs at 8,192 tokens over cp 2 (Transformer Engine's p2p,
// tests/fidelity/megatron-h100-*.json and nemo-2407-h100-fp8.json). The
// all-gather figure also sets the default search's cp ceiling (enumerate).
inline constexpr int64_t kLowConfidenceCpTokensPerRank = 8192;
inline constexpr int64_t kLowConfidenceCpRingTokensPerRank = 4096;
inline constexpr int64_t kLowConfidencePipelineStages = 16;
// ZeRO-3's per-layer gathers as checked (docs/fidelity.md): dense, over 8
// ranks of one node (Megatron-Bridge's Llama 3 8B FSDP run); across nodes
// only in one MoE run (Megatron-MoE-ModelZoo's Qwen3 235B-A22B with
// Megatron-FSDP: dense parameters over 128 ranks, routed experts over 32).
// A ZeRO-3 candidate whose shard group is larger, or holds ranks of more
// than one node, gets the note.
inline constexpr int64_t kLowConfidenceZero3Group = 8;

struct PlanMiss {
  PlanLayout layout;
  std::string reason;
  int64_t short_by_bytes = 0;  // memory misses; 0 for divisibility
};

struct PlanCounts {
  int64_t considered = 0, divisibility = 0, memory = 0, dominated = 0, bound = 0, simulated = 0;
  // Layouts a stopped search (interrupt, time limit) never decided on; 0
  // when complete. In the JSON only when > 0.
  int64_t unexamined = 0;
  // Not in the JSON: layouts whose schedule replay was computed (they
  // reached the front of the bound order), for the benchmark.
  int64_t replayed = 0;
};

struct PlanResult {
  int64_t gpus = 0;
  std::string objective;
  PlanCounts counts;
  std::vector<PlanCandidate> candidates;  // ranked
  std::string why_winner;
  std::vector<PlanMiss> closest_misses;
  bool complete = true;
  // A stop came during the enumeration: counts.considered is the layouts
  // enumerated until then, not the whole space (not in the JSON).
  bool enumeration_stopped = false;
  // Nothing fits for memory: at least this many GPUs are needed (the
  // weights, gradients and optimizer state sharded over all of them fill
  // the usable memory of fewer); 0 otherwise. JSON only when > 0.
  int64_t min_gpus_lower_bound = 0;
  // Nothing fits on `gpus` for memory: the smallest GPU count found that
  // fits, by searches at more GPUs (docs/plan.md, "When nothing fits"):
  // every count from `from` (the lower bound above, or gpus + 1) up to the
  // GPUs of a node, then whole nodes; after 16 nodes tried the steps grow
  // by an eighth (every_count false once a count was skipped). gpus 0:
  // none within the probe's 40 counts or its time (stopped). In the JSON
  // as "smallest_fit" whenever it was looked for.
  struct SmallestFit {
    int64_t from = 0;         // 0: not looked for
    int64_t gpus = 0;         // 0: none found
    PlanLayout layout;        // a layout that fits there (the fastest by the bound of those tried)
    int64_t peak_memory_bytes = 0;
    int64_t largest_without = 0;  // the largest count tried where nothing fits (0: none)
    int64_t counts_tried = 0;
    bool every_count = true;  // no count of the scheme (each up to a node, then whole nodes) skipped
    bool stopped = false;     // the time limit or an interrupt ended the probe
  } smallest_fit;
  // Wall seconds per phase (not in the JSON; the benchmark prints them):
  // enumerate, validate, proxies, estimates, dominance + simulate.
  double phase_seconds[5] = {0, 0, 0, 0, 0};
  int64_t usable_memory_bytes = 0, memory_capacity_bytes = 0;
  // Not in the JSON: the seed step's simulations (docs/plan.md,
  // "Anytime") and the seconds from the start to its best so far (0 when
  // none of them fit or the seed was left out).
  int64_t seed_simulated = 0;
  double first_best_seconds = 0;
};

// What the planner needs from the layer above (core/api/plan.h supplies
// it): a job built into its stage graphs and programs, and its simulation.
struct PlanTiming {
  double step_seconds = 0, mfu = 0, tokens_per_second = 0, bubble_fraction = 0;
  double exposed[5] = {0, 0, 0, 0, 0};  // tp, cp, ep, pp, dp (seconds)
};
class PlanBuild {
 public:
  virtual ~PlanBuild() = default;
  virtual int64_t num_stages() const = 0;
  virtual const Graph& graph_of(int64_t stage) const = 0;
  virtual const RoleProgram& program_of(int64_t stage) const = 0;
  virtual const Bindings& bindings() const = 0;
  // The simulator's figures with default options (sim/simulate.h).
  virtual Result<PlanTiming> simulate() const = 0;
};
struct PlanBackend {
  // summary: also build summary.json (Generator::create's default).
  std::function<Result<std::unique_ptr<const PlanBuild>>(const Job&, bool summary)> build;
};

// Errors: impossible constraints (naming the conflicting keys), a GPU
// count the fixed degrees do not divide. Cancellation (base/cancel.h)
// returns the best so far with complete = false.
Result<PlanResult> plan(const Job& base, const PlanOptions& options, const PlanBackend& backend);

// docs/plan.md's JSON, stable key order, one line per candidate's job.
std::string plan_json(const PlanResult& r);
// A plan's rank order by name: "llama3" (tp, cp, pp, dp) or "megatron".
std::string order_name(const std::vector<std::string>& order);
// "tp8 sp cp1 pp8 v5 interleaved-1f1b dp64 z1 ..." for tables and messages.
std::string layout_label(const PlanLayout& l, bool moe);
// The candidate's job JSON (canonical, feedable to generate).
nlohmann::ordered_json layout_json(const PlanLayout& l);

// The memory one layout holds while the search runs (its record and job).
int64_t plan_bytes_per_layout(const Job& base);

// Internals exposed for tests (tests/unit/plan/plan_test.cc): the estimate of one
// layout of base, computed as the search does.
struct PlanEstimate {
  bool ok = false;
  Error error;
  int64_t peak_lower_bytes = 0;  // max over stages of weights+grads+optimizer+saved activations
  int64_t peak_upper_bytes = 0;  // ... plus the proxy's transient activations
  double bound_seconds = 0;      // lower bound of the simulated step: the larger of both below
  double first_bound_seconds = 0;  // the closed-form bound every layout gets (docs/plan.md step 5)
};
PlanEstimate estimate_layout(const Job& job, const PlanBackend& backend);
// The step-time bound's collective term (docs/plan.md, step 5): a lower
// bound of k collectives of `bytes` in all (any split) on g, from
// collective_concave_lower_micros (sim/network.h).
struct NetworkModel;
struct GroupShape;
double collectives_us(const NetworkModel& net, const GroupShape& g, CollectiveType t, int64_t bytes, int64_t k);
// The job of a layout over base.
Job layout_job(const Job& base, const PlanLayout& l);

}  // namespace sc
