// A job: model + parallelism + training settings + hardware. Parsed from a
// job JSON (the CLI's flags are mapped onto the same JSON, so there is one
// validation path). Every error names the JSON path of the field at fault.
//
// Job JSON (all sections optional except model; defaults shown):
// {
//   "model": {"preset": "gpt3-175b"}            // or {"hf_config": {...}}
//            // or explicit fields: {"num_layers":..,"hidden":..,...}
//            // preset/hf plus overrides: {"preset":"llama3-8b","num_layers":2}
//   "parallel": {"dp": 1, "tp": 1, "pp": 1, "cp": 1, "virtual_stages": 1, "zero": 0,
//                "sequence_parallel": false, "pipeline_layout": [layers...],
//                "order": "megatron" | "llama3" | ["tp","cp","dp","pp"],
//                "cp_algorithm": "allgather", "ep": 1, "expert_tp": <tp>,
//                "shard_group": <dp*cp>,
//                "world_size": <optional, must equal dp*tp*pp*cp>},
//   "training": {"seq_len": 2048, "micro_batch_size": 1,
//                "global_batch_size": <default dp*micro_batch_size>,
//                "dtype": "bf16", "grad_reduce_dtype": "fp32",
//                "dp_bucket_mb": 25, "optimizer": "adamw",
//                "optimizer_bytes_per_param": 12,
//                "schedule": "1f1b" | "gpipe" | "interleaved-1f1b" | "zero-bubble",
//                "recompute": "none" | "selective" | "full",
//                "recompute_modules": ["layernorm", "moe_act", ...],  // with "selective"
//                "tp_comm_overlap": false, "overlap_grad_reduce": false,
//                "overlap_param_gather": false},
//   "hardware": "h100"                  // or {"preset":"h100", overrides}
//   "mode": "training" | "inference",   // inference: a "serving" section instead of
//   "serving": {...}                    // "training" (docs/inference.md, job_serving.cc)
// }
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "graph/autodiff.h"  // kRecomputeModules
#include "graph/dtype.h"
#include "hw/hardware.h"
#include "model/model_config.h"
#include "parallel/schedule_kind.h"  // Schedule, schedule_name

namespace sc {

struct ParallelConfig {
  int64_t dp = 1;  // data-parallel degree
  int64_t tp = 1;  // tensor-parallel degree
  int64_t pp = 1;  // pipeline stages
  int64_t cp = 1;  // context parallelism: the sequence split over cp ranks
  std::string cp_algorithm = "allgather";  // K/V all-gathered (Llama 3); "ring": K/V blocks around the cp ring (TE's p2p)
  int64_t virtual_stages = 1;  // model chunks per pipeline rank (interleaved 1F1B)
  // ZeRO over the data-parallel group: 1 shards the optimizer state, 2 also
  // the gradients, 3 also the parameters (FSDP full sharding).
  int64_t zero = 0;
  bool sequence_parallel = false;  // Megatron SP (needs tp > 1 to matter)
  // Expert parallelism, folded into the other axes as Megatron-LM does: the
  // tp x cp x dp ranks of a pipeline stage run the MoE layers as
  // expert_tp x ep x expert-dp (inner first). Attention keeps tp, cp, dp.
  int64_t ep = 1;
  int64_t expert_tp = 0;  // expert tensor parallelism; 0 = tp (Megatron's default)
  // How the MoE layers move tokens to their experts (docs/parallelism.md):
  // "alltoall" (MoEAlltoAllTokenDispatcher), "allgather" (its all-gather /
  // reduce-scatter pair over ep in the traces) or "deepep" (DeepEP's normal
  // kernels; all-to-alls in the traces). simulate times the exchange so.
  std::string moe_dispatcher = "alltoall";
  // Router imbalance: tokens of the busiest expert rank over the mean (>= 1,
  // <= ep; 1 = uniform). The busiest rank's expert GEMMs and all-to-all
  // take this much longer, and every rank waits for it.
  double moe_imbalance = 1.0;
  // ZeRO/FSDP sharding group (HSDP): parameters, gradients and optimizer
  // state are sharded over this many data-parallel ranks (the inner part of
  // dp x cp) and replicated across the rest; 0 = all of them.
  int64_t shard_group = 0;
  // Layers per virtual stage (pp * virtual_stages entries, in pipeline
  // order); empty = even split.
  std::vector<int64_t> pipeline_layout;
  // Rank layout, innermost (fastest-varying) axis first; a permutation of
  // {tp, cp, dp, pp}. Megatron-LM's order [tp, cp, (ep,) dp, pp] is the
  // default; Llama 3's is [tp, cp, pp, dp].
  std::vector<std::string> order = {"tp", "cp", "dp", "pp"};
  int64_t world_size() const { return dp * tp * pp * cp; }
  int64_t expert_tp_degree() const { return expert_tp > 0 ? expert_tp : tp; }
  // Expert data parallelism: the rest of a stage's ranks in the MoE layers.
  int64_t expert_dp() const { return tp * cp * dp / (expert_tp_degree() * ep); }
  int64_t shard_degree() const { return shard_group > 0 ? shard_group : dp * cp; }
};

enum class Recompute { kNone, kSelective, kFull };
const char* recompute_name(Recompute r);  // "none", "selective", "full"

enum class OptimizerKind { kAdam, kAdamW, kSGD };

struct TrainingConfig {
  int64_t seq_len = 2048;
  int64_t micro_batch_size = 1;
  int64_t global_batch_size = 0;  // sequences per iteration (all dp ranks)
  DType dtype = DType::kBF16;     // activations/weights for compute (GEMMs)
  DType grad_reduce_dtype = DType::kFP32;  // main grads + DP reduction
  double dp_bucket_mb = 25.0;     // DDP gradient bucket size, MiB
  OptimizerKind optimizer = OptimizerKind::kAdamW;
  int64_t optimizer_bytes_per_param = 12;  // fp32 master + 2 moments
  Schedule schedule = Schedule::kOneFOneB;  // pipeline schedule (pp > 1)
  Recompute recompute = Recompute::kNone;   // activation recomputation
  // Megatron-Core's recompute_modules (with recompute "selective";
  // transformer_config.py): a bit per kRecomputeModules entry
  // (graph/autodiff.h; docs/parallelism.md, "Recomputation"). 0 is
  // Megatron's default, {"core_attn"} (what "selective" alone means).
  uint32_t recompute_modules = 0;
  // Megatron-LM's overlap options (docs/parallelism.md, "Communication
  // overlap"; docs/simulate.md). tp_comm_overlap: Transformer Engine
  // userbuffers (tp > 1 with sequence parallelism only; elsewhere no
  // effect). overlap_grad_reduce: gradient buckets reduced during backward
  // (false: one reduction after backward). overlap_param_gather: the
  // distributed optimizer's (ZeRO 1/2) parameter all-gather overlapped
  // with the next forward (needs overlap_grad_reduce). All three default to
  // false, Megatron-LM's own defaults (megatron/training/arguments.py:
  // store_true flags; DistributedDataParallelConfig, ModelParallelConfig).
  bool tp_comm_overlap = false;
  bool overlap_grad_reduce = false;
  bool overlap_param_gather = false;
  // Megatron-LM's pipeline send/recv overlap (--no-overlap-p2p-communication
  // turns it off; docs/parallelism.md, "Pipeline send/recv overlap"): in the
  // steady 1F1B phase of the interleaved schedule the activations and
  // gradients are sent and received asynchronously, on NCCL's stream beside
  // the next chunk's compute, and waited for only where they are needed.
  // Default true, Megatron-LM's (a store_false flag; Megatron-Bridge's
  // CommOverlapConfig sets it whenever pp > 1 and vp > 1). Megatron-LM
  // turns it off for non-interleaved pipelines, so it has no effect there.
  bool overlap_p2p_comm = true;
  // Megatron-Core's --moe-shared-expert-overlap: the shared experts run on
  // a stream of their own, fc1 beside the dispatch all-to-all and fc2
  // beside the combine (docs/parallelism.md, "Shared-expert overlap"). No
  // effect on a model without shared experts; refused with the allgather
  // dispatcher (Megatron-Core: alltoall or flex only).
  bool moe_shared_expert_overlap = false;
  // Megatron-Core's --moe-pad-expert-input-to-capacity (with a capacity
  // factor: token drop and pad): every expert's buffer is padded to its
  // capacity, so the token dispatcher knows its sizes on the host and does
  // not copy the tokens per expert to it; false (dropless, the default)
  // copies them and the host waits for the device in every MoE layer's
  // forward (docs/simulate.md, "The host"). Only simulate reads it.
  bool moe_pad_expert_input_to_capacity = false;
  // Megatron's --cross-entropy-loss-fusion: true (the default here, and
  // Megatron-Bridge's: GPTModelProvider.cross_entropy_loss_fusion) runs the
  // vocabulary-parallel cross entropy as a fused kernel over the bf16
  // logits; false is Megatron-LM's own default without the flag
  // (megatron/core/tensor_parallel/cross_entropy.py): the logits copied to
  // fp32, then max, subtract, exp, sum and divide each a pass over them
  // (docs/parallelism.md, "The loss").
  bool cross_entropy_loss_fusion = true;
  // Megatron-Core's batch-level EP all-to-all overlap
  // (--overlap-moe-expert-parallel-comm, MCore v0.14+; docs/parallelism.md,
  // "EP all-to-all overlap"): the forward of one micro-batch and the
  // backward of another run as one combined step, layer by layer, the
  // expert-parallel all-to-alls on a communication stream of their own.
  // delay_wgrad_compute (--delay-wgrad-compute, needs the overlap): the
  // weight-gradient GEMMs leave the backward nodes so that the dispatch's
  // backward all-to-all does not wait for them. Both default false.
  bool overlap_moe_expert_parallel_comm = false;
  bool delay_wgrad_compute = false;
  Fp8Recipe fp8_recipe = Fp8Recipe::kNone;  // FP8 linear-layer GEMMs (docs/hardware.md)
  // fp8_params (Megatron-Core --fp8-param-gather, TE fp8_model_init, NeMo
  // fp8_params): the FP8 linears' weights are kept only as FP8 (their
  // row- and column-wise copies), with no bf16 copy beside them; the
  // optimizer keeps the fp32 master. Memory only (docs/job-format.md).
  bool fp8_params = false;

  // Micro-batches per iteration per dp rank = B / (dp * b).
  int64_t num_micro_batches(const ParallelConfig& p) const {
    return global_batch_size / (p.dp * micro_batch_size);
  }
  // Whether gradient buckets are reduced during backward. ZeRO 2 and 3
  // always do: sharded gradients are reduce-scattered as they are produced
  // (Megatron-FSDP turns overlap_grad_reduce on for its optim_grads and
  // optim_grads_params strategies and asserts it; DeepSpeed's stage 2/3
  // reduce bucket by bucket in backward), whatever overlap_grad_reduce says.
  bool grad_reduce_overlapped(const ParallelConfig& p) const { return overlap_grad_reduce || p.zero >= 2; }
};

// The network `simulate` times communication on (docs/simulate.md; parsed
// in job/job_network.cc). 0 = the hardware profile's default. It changes no
// trace byte, so it is not part of the canonical job or its hash. Latencies
// < 0 = the default.
struct NetworkConfig {
  int64_t domain_size = 0;             // GPUs per NVLink domain (node)
  double domain_bandwidth_gbs = 0;     // GB/s per GPU reached by NCCL inside a domain
  double domain_latency_us = -1;       // per algorithm step inside a domain
  double scale_out_bandwidth_gbs = 0;  // GB/s per GPU between domains (its NIC)
  double scale_out_latency_us = -1;    // per algorithm step between domains
  double oversubscription = 1;         // scale-out bandwidth divided by this (>= 1)
  std::string algorithm = "nccl";      // "nccl" (NCCL's choice) | "ring" | "tree" | "hierarchical"
  // "nccl": ring collectives run the fastest of NCCL's protocols (LL,
  // LL128, Simple) with their latencies and bandwidths; "simple": one
  // protocol at full bandwidth, every step at the per-step latency
  // (docs/simulate.md, "Small messages").
  std::string protocols = "nccl";
  int64_t nodes = 0;                   // domains available; 0 = as many as the job needs
  // Fraction of compute speed a rank loses while a transfer of another
  // stream runs beside it (docs/simulate.md, "Streams"), in [0, 1); < 0 =
  // the default (0.15 inside a domain, 0.02 across domains).
  double comm_sm_share_domain = -1;
  double comm_sm_share_scale_out = -1;
};

// Serving (docs/inference.md, "Job"; parsed in job/job_serving.cc).
enum class JobMode { kTraining, kInference };

// One pool's layout in a disaggregated serving job: attention tp, pipeline
// stages, attention data parallelism (DP attention), expert parallelism,
// expert tp, and independent replicas of the pool.
struct PoolLayout {
  int64_t tp = 1, pp = 1, dp = 1, ep = 1, expert_tp = 0, replicas = 1;
};

// One class of a request mix (serving.requests): its lengths and its
// share of the requests (weight, relative to the others').
struct RequestClass {
  int64_t prompt_tokens = 0, output_tokens = 0;
  double weight = 1;
};

// A request-length distribution of a serving workload (docs/inference.md,
// "Workload"): fixed at `a`; uniform integers in [a, b]; normal with mean a
// and standard deviation b, rounded and clamped to [1, the context left];
// or the job's request classes (kDefault: prompt_tokens/output_tokens or
// the `requests` mix, drawn by weight).
struct LengthDist {
  enum class Kind { kDefault, kFixed, kUniform, kNormal } kind = Kind::kDefault;
  double a = 0, b = 0;
};

// One request of a trace workload: when it arrives and its lengths.
struct TraceRequest {
  double arrival_seconds = 0;
  int64_t prompt_tokens = 1, output_tokens = 1;
};

// serving.workload: requests that arrive over time (docs/inference.md,
// "Workload"). present = false: no workload (the fixed-concurrency figures).
struct WorkloadConfig {
  bool present = false;
  enum class Arrival { kPoisson, kFixed, kBurst, kTrace } arrival = Arrival::kPoisson;
  double rate = 0;              // requests per second (poisson, fixed)
  double duration_seconds = 0;  // arrivals in [0, duration); 0 = by `requests`
  int64_t requests = 0;         // at most this many; 0 = by duration
  uint64_t seed = 0;
  LengthDist prompt, output;
  std::vector<TraceRequest> trace;  // arrival "trace": the requests as given
  double prefix_cache_hit_rate = 0;  // share of each prompt found in the prefix cache, in [0, 1)
};
inline constexpr int64_t kMaxWorkloadRequests = 200000;

// serving.scheduler: the engine's batching policy (docs/inference.md,
// "Scheduler"). present = false keeps the canonical job unchanged.
struct SchedulerConfig {
  bool present = false;
  enum class Policy { kVllm, kSarathi, kPrefillFirst } policy = Policy::kVllm;
  int64_t max_num_batched_tokens = 8192;  // token budget per iteration (vllm)
  int64_t max_num_seqs = 256;             // running sequences per attention-dp rank
  int64_t chunk_tokens = 512;             // sarathi: the token budget per iteration
  double step_overhead_seconds = 0;       // host time per iteration (scheduling, launch)
  double token_overhead_seconds = 0;      // host time per sampled token (sampling, detokenization)
  double request_overhead_seconds = 0;    // per request outside the iterations (HTTP, tokenization, streaming)
  int64_t speculative_tokens = 0;         // draft tokens verified per decode step (0 = none)
  double acceptance_rate = 0;             // chance each draft token is accepted, in [0, 1]
  int64_t scheduler_steps = 1;            // decode steps per scheduling decision (vLLM --num-scheduler-steps)
  // prefill_first only: false = a prompt is never split over iterations
  // (vLLM V0 without --enable-chunked-prefill): it joins a prefill batch
  // whole or waits for the next one.
  bool chunked_prefill = true;
  // serving.scheduler.admission: kGreedy (vLLM's) admits on the pages of
  // what runs now and preempts the newest when short; kReserve (SGLang's)
  // also needs a share of every running request's remaining output
  // (new_token_ratio) and its own output free, and retracts when a decode
  // step is short; kGuaranteed (TensorRT-LLM's GUARANTEED_NO_EVICT) takes
  // the pages of the request's whole sequence when it is admitted.
  enum class Admission { kGreedy, kReserve, kGuaranteed } admission = Admission::kGreedy;
};

// "greedy", "reserve", "guaranteed" (serving.scheduler.admission).
const char* admission_name(SchedulerConfig::Admission a);

// serving.slo: latency targets of the capacity search and of goodput.
struct SloConfig {
  bool present = false;
  double ttft_seconds_p99 = 0, tpot_seconds_p99 = 0;  // 0 = no target
};

struct ServingConfig {
  int64_t prompt_tokens = 1024;  // per request; with `requests`: the longest prompt's class (its traces)
  int64_t output_tokens = 256;   // per request; with `requests`: that class's
  std::vector<RequestClass> requests;  // a mix of lengths; empty = every request prompt_tokens + output_tokens
  int64_t concurrency = 0;       // sequences decoded together per attention-dp rank; 0 = as many as fit
  int64_t chunk_tokens = 0;      // chunked prefill: prompt tokens per iteration; 0 = the whole prompt
  DType kv_dtype = DType::kBF16;       // KV cache: bf16 | fp8
  DType weights_dtype = DType::kBF16;  // weights and GEMMs: bf16 | fp8
  int64_t page_tokens = 16;      // paged KV cache block size (tokens)
  int64_t replicas = 1;          // independent copies of the serving instance
  bool disaggregated = false;    // separate prefill and decode pools
  PoolLayout prefill, decode;    // their layouts (disaggregated only)
  double gpu_memory_utilization = 0;  // share of memory the engine may use; 0 = not given (all of it)
  // SGLang's --enable-two-batch-overlap (MoE with ep > 1): each iteration
  // runs as two micro-batches of half its tokens, one's expert all-to-alls
  // beside the other's compute (docs/inference.md, "Two-batch overlap").
  bool two_batch_overlap = false;
  WorkloadConfig workload;
  SchedulerConfig scheduler;
  SloConfig slo;
};

struct Job {
  ModelConfig model;
  ParallelConfig parallel;
  TrainingConfig training;
  HardwareProfile hardware;
  NetworkConfig network;
  JobMode mode = JobMode::kTraining;
  ServingConfig serving;  // mode == kInference only
  bool inference() const { return mode == JobMode::kInference; }
  // Whether the job's MoE token dispatcher copies the tokens per expert to
  // the host in every layer's forward: dropless routing over ep > 1 in a
  // training job (Megatron-Core's alltoall and allgather dispatchers, DeepEP
  // and HybridEP alike; padding the experts' inputs to capacity skips it).
  // simulate then runs a host timeline (docs/simulate.md, "The host").
  bool dispatcher_syncs_host() const {
    return model.is_moe() && parallel.ep > 1 && !inference() && !training.moe_pad_expert_input_to_capacity;
  }
};

// The job one pool of an inference job runs: its layout in `parallel`
// (disaggregated: that pool's; else the job's own). prefill selects the pool.
Job serving_pool_job(const Job& job, bool prefill);
// The request classes of a serving job: `requests`, or the one class of
// prompt_tokens + output_tokens (weight 1).
std::vector<RequestClass> serving_requests(const ServingConfig& s);
inline constexpr size_t kMaxRequestClasses = 16;

// Parses and validates a job JSON text. Malformed JSON reports line and
// column; unknown keys are errors (kUnknownField) naming the full path.
Result<Job> parse_job(const std::string& json_text);

// Validates cross-field constraints: divisibility (heads by tp, kv heads by
// tp, ffn by tp, vocab by tp, global batch by dp*micro_batch, seq by tp with
// SP), world size, absurd sizes. Called by parse_job; exposed for tests.
Status validate_job(const Job& job);

// Canonical JSON of the fully-resolved job (every field explicit, keys
// sorted): used for the config hash and the summary. Stable across runs
// and platforms.
std::string job_to_canonical_json(const Job& job);

}  // namespace sc
