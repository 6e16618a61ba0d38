// A request-level simulator of a serving engine's scheduler (docs/inference.md,
// "Workload" and "Scheduler"): requests arrive, wait, are batched with
// continuous batching (vLLM's V1 policy: running requests first, then
// waiting ones first-come first-served, under a token budget per iteration
// with chunked prefill and a cap on running sequences; preemption by
// recompute when the paged KV cache is full), and each iteration takes the
// time the cost model gives for its composition.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "serve/workload.h"

namespace sc::serve {

// What one attention-dp rank runs in an iteration: tokens through the
// linear layers, rows sampled, query-key pairs and KV entries attention reads.
struct IterationShape {
  int64_t tokens = 0, sampled = 0;
  bool prefill = false;  // holds prompt tokens (a chunk or a recompute): not a decode-only batch
  double prefill_pairs = 0, decode_pairs = 0, cached = 0;
};

// An iteration's seconds as a function of its shape, from a few simulated
// iterations of the job (serve/serving.cc fills it): base(tokens, sampled) +
// max(prefill pairs x its seconds + decode pairs x theirs, cached x
// seconds_per_cached) (attention: compute-bound over its query-key pairs,
// prefill in the prompt's form, decode in the cache's (MLA: absorbed), or
// bound by reading the cache), base
// interpolated linearly between grid points of prefill-like (1 row
// sampled) and decode-like (every row sampled) iterations, plus fixed
// per-iteration and per-sampled-row host costs. docs/inference.md, "Cost
// of an iteration".
// Host time per simulated node (kernel or collective) of an iteration run
// eagerly from Python, measured on the lent H100's host: a whole Llama 3
// decode step issued eagerly (tests/bench/gpu/results/
// h100-sxm-2026-11-27-decode-step.json, eager_ms) over the step's nodes
// here (70B tp-4 shard: 1,043; 8B: 419), lowest on the host-bound rows:
// 22.7 ms / 1,043 = 21.8 us (70B shard, batch 1, against 16.5 ms as a
// CUDA graph; 8B, batch 1, 2,048: 24.6 us). A bare tiny op costs 12.0 us
// (skinny-fp8.json, `floor`; 1.18 us inside a graph): a layer's Python
// issues more ops than the engine has nodes. A host cost, not a GPU one:
// one constant for every profile. docs/inference.md, "Cost of an iteration".
inline constexpr double kEagerLaunchSeconds = 21.8e-6;

struct CostModel {
  std::vector<int64_t> grid;        // token counts, ascending, grid[0] = 1
  std::vector<double> prefill_base;  // seconds at grid[i] tokens, 1 sampled, 1 pair, 1 cached
  std::vector<double> decode_base;   // seconds at grid[i] tokens, all sampled
  double seconds_per_prefill_pair = 0, seconds_per_decode_pair = 0, seconds_per_cached = 0;
  double step_overhead = 0, per_sampled_overhead = 0;  // host: scheduler, sampling, detokenization
  // An iteration that holds prompt tokens and runs eagerly (the engine
  // captures CUDA graphs for decode batches only) lasts at least its
  // kernel launches from Python: launches x kEagerLaunchSeconds, the GPU
  // work overlapping them (0: every iteration graphed). docs/inference.md,
  // "Cost of an iteration".
  double eager_floor = 0;
  double seconds(const IterationShape& s) const;
};

struct SchedulerParams {
  // kVllm: vLLM V1 (running requests first, new prompts joined to the same
  // iteration); kSarathi: the same under a chunk-sized budget;
  // kPrefillFirst: vLLM V0 without chunked prefill and SGLang <= 0.3 (a
  // batch of prompts runs alone, before any decode step, whenever a waiting
  // request can be admitted; decode batches hold only decodes).
  enum class Policy { kVllm, kSarathi, kPrefillFirst } policy = Policy::kVllm;
  int64_t token_budget = 8192;  // tokens per iteration per rank
  int64_t max_num_seqs = 256;   // running sequences per rank
  int64_t page_tokens = 16;
  int64_t blocks_per_rank = 0;  // KV cache pages each rank holds
  int64_t state_blocks = 0;     // pages a running sequence holds beside its KV (a hybrid model's Mamba state)
  int64_t dp = 1;               // attention-dp ranks of one instance
  bool lockstep = false;        // dp ranks step together (MoE: the all-to-all waits for the slowest)
  int64_t replicas = 1;
  int64_t max_iterations = 20000000;
  double slo_ttft = 0, slo_tpot = 0;  // goodput targets (0 = none)
  // Prefix caching: the first floor(rate x prompt / page) pages of every
  // prompt are found cached (shared pages: computed by no one, held apart).
  double prefix_hit_rate = 0;
  // Speculative decoding: each decode step verifies up to this many draft
  // tokens beside its own, each accepted with `acceptance_rate` until the
  // first rejection (drawn from the seeded stream).
  int64_t speculative_tokens = 0;
  double acceptance_rate = 0;
  // Multi-step scheduling (vLLM's --num-scheduler-steps): a decode-only
  // batch runs this many steps on one decision (fewer when its longest
  // request ends sooner), with no admission in between; its tokens are
  // streamed at the end of the run, one burst per request (ITL: the gap
  // between bursts). Prefill iterations stay single steps.
  int64_t scheduler_steps = 1;
  // Prefill first only: false = prompts are admitted whole or not at all
  // (vLLM V0 without chunked prefill: a prompt that overflows the budget
  // left waits for the next prefill batch); every sequence must then fit
  // the budget (vLLM V0 requires max_num_batched_tokens >= max_model_len).
  bool chunked_prefill = true;
  // Prompts go into a prefill batch whole, never split (the case above).
  bool whole_prompts() const { return policy == Policy::kPrefillFirst && !chunked_prefill; }
  // Admission (docs/inference.md, "Admission"). kGreedy, vLLM's: a request
  // takes the pages of what it runs now; short of pages, the newest running
  // request is preempted. kReserve, SGLang's (its PrefillAdder and
  // retract_decode, read in its v0.3 source): a waiting request joins only
  // while prompt + min(output, kReserveClip) < the free cache's tokens less
  // min(output left, kReserveClip) x ratio of every running request (and
  // the tokens this iteration schedules and admits before it); the ratio
  // starts at kReserveInitRatio and falls by kReserveDecay each decode step
  // to kReserveMinRatio; a decode step short of pages retracts running
  // requests (fewest outputs first, then the longest prompt) to the end of
  // the queue until the free cache holds kRetractSteps tokens per request
  // left, and sets the ratio to (their outputs so far + kRetractSteps x
  // their count) / their outputs, at most 1. kGuaranteed, TensorRT-LLM's
  // GUARANTEED_NO_EVICT capacity scheduler: a request is admitted only
  // with the pages of its whole sequence (prompt + output), held from then
  // on, so nothing running is ever evicted.
  enum class Admission { kGreedy, kReserve, kGuaranteed } admission = Admission::kGreedy;
  // Per-request time outside the engine's iterations (HTTP server,
  // tokenization, the first token's detokenization and streaming): added
  // to every request's first token and finish, as a fixed delay of its
  // arrival at the engine would be (the schedule is the same, shifted).
  double request_overhead = 0;
  uint64_t seed = 0;
};

// SGLang's constants for Admission::kReserve (python/sglang/global_config.py:
// init_new_token_ratio, base_min_new_token_ratio, new_token_ratio_decay,
// retract_decode_steps; CLIP_MAX_NEW_TOKENS in its policy scheduler).
inline constexpr double kReserveInitRatio = 0.7, kReserveMinRatio = 0.1, kReserveDecay = 0.001;
inline constexpr int64_t kRetractSteps = 20, kReserveClip = 4096;

struct RequestResult {
  double arrival = 0, scheduled = -1, first_token = -1, finish = -1;
  int64_t prompt = 0, output = 0, preemptions = 0;
  double ttft() const { return first_token - arrival; }
  double e2e() const { return finish - arrival; }
  double queue() const { return scheduled - arrival; }
  double tpot() const { return output > 1 ? (finish - first_token) / static_cast<double>(output - 1) : 0; }
};

struct Percentiles {
  double mean = 0, p50 = 0, p90 = 0, p99 = 0;
};
// Linear interpolation between order statistics (rank p x (n - 1), numpy's default).
Percentiles percentiles(std::vector<double> v);

struct WorkloadResult {
  std::vector<RequestResult> requests;  // arrival order
  Percentiles ttft, tpot, itl, e2e, queue;
  double makespan = 0;  // last finish (the first arrival at 0 or later)
  int64_t iterations = 0, preemptions = 0, output_tokens = 0;
  double request_throughput = 0, output_tokens_per_second = 0;
  double goodput = 0;  // requests per second meeting the SLOs (all of them when none)
  double kv_utilization_mean = 0, kv_utilization_max = 0;  // time-weighted over the makespan
  std::vector<std::pair<double, double>> kv_utilization;   // (bucket start, mean) over <= 100 buckets
};

// Every request can finish on an idle rank: its whole sequence's KV pages
// fit a rank, and without chunked prefill it fits the token budget (an
// error naming the field otherwise). simulate_workload checks it first;
// the capacity search checks it before any run.
Status check_requests(const std::vector<Request>& requests, const SchedulerParams& p);

Result<WorkloadResult> simulate_workload(const std::vector<Request>& requests, const CostModel& cost,
                                         const SchedulerParams& p);

}  // namespace sc::serve
