// The page <-> engine-worker message protocol (docs/wasm-bridge.md).
// Versioned so that a stale cached worker and a new page fail loudly:
//   request  {v: 2, id, type, payload}
//   progress {v: 2, id, progress: {done, total, phase[, best]}}   (archive, plan)
//   response {v: 2, id, ok: true, result} | {v: 2, id, ok: false, error}
//   cancel   {v: 2, id: <new>, type: 'cancel', payload: {target: <id>}}
// Errors travel as data; the UI branches on error.code, never on message.

import type { Plan } from './lib/plan';
export type { Plan };

export const PROTOCOL_VERSION = 2;

// A job JSON object (schema: core/job/job.h; the editor's table: job-schema.ts).
export type JobJson = Record<string, unknown>;

export interface EngineError {
  code: string;     // core codes (invalid_argument, not_divisible, ...) or
                    // protocol codes: protocol_version, bad_request,
                    // engine_unavailable, engine_crashed, cancelled,
                    // engine_aborted (the wasm instance aborted: the client
                    // replaces the worker), superseded (dropped for a newer
                    // request: not an error to show)
  message: string;
  path: string;     // job path of the field at fault ("parallel.tp"), or ""
}

// plan only: `best`, the best so far (the plan a stop now would give,
// complete false), sent each time it changes while the search runs.
export interface Progress { done: number; total: number; phase: string; best?: Plan }

export interface GraphTensor {
  id: number; name: string; kind: string; dtype: string; shape: string;
  dims: { label: string; size: string }[]; sharding: string; partial: string[];
  layer: number; producer: number; bytes: number;
}
export interface CollectiveWhy {
  axis: string; collective: string; tensor: string; from: string; to: string; required: string;
  producer: string; producer_id: number; consumers: string[]; reason: string; text: string;
}
export interface GraphOp {
  id: number; name: string; kind: string; fn: string; phase: string; layer: number;
  inputs: number[]; outputs: number[]; flops: string; factor_axis: Record<string, string>;
  sp_region?: boolean; wgrad?: boolean; collective?: string; axis?: string; why?: CollectiveWhy;
}
// The part of the model one pipeline stage holds (graph_json's stage fields,
// and each entry of its `stages`): layers in program order (not contiguous
// with interleaving), one chunk per virtual stage, and whether the stage
// runs the embedding (first virtual stage) and the output layer + loss (last).
export interface StagePart {
  stage: number;
  first_layer: number; last_layer: number;   // -1 when the stage has no layers
  layers: number[];
  moe_layers: number[];                      // those of `layers` with experts
  has_embedding: boolean; has_loss: boolean;
  chunks: { virtual_stage: number; first_layer: number; last_layer: number; has_embedding: boolean; has_loss: boolean }[];
}
// The graph of one pipeline stage (the program every rank of that stage runs).
export interface GraphJson extends StagePart {
  num_stages: number;        // pp
  virtual_stages: number;    // chunks per stage (interleaved 1F1B)
  ranks_per_stage: number;
  stages: StagePart[];       // every stage's part, to label a stage picker
  axes: { name: string; degree: number; derived?: boolean }[];  // derived: MoE etp/ep/edp, HSDP dp_shard/dp_replicate
  bindings: Record<string, number>;
  num_layers: number;        // the model's layers (all stages)
  tensors: GraphTensor[];
  ops: GraphOp[];
}
export interface RankInfo {
  rank: number; world_size: number; coords: Record<string, number>;
  axes: { name: string; degree: number; coord: number }[];
  // Axes that re-divide the same ranks (MoE's etp/ep/edp, HSDP's
  // dp_shard/dp_replicate): not coordinates one picks a rank by.
  derived_axes?: { name: string; degree: number; coord: number }[];
  groups: { axis: string; key: number; members: number[]; derived?: boolean }[];
  // phase "kv_transfer" (disaggregated serving): the transfer's world is the
  // prefill pool's ranks, then the decode pool's; no axes, no groups.
  pool?: 'prefill' | 'decode'; pool_rank?: number;
}

// simulate's answer (docs/wasm-bridge.md "simulate"): times in seconds,
// timeline entries [start_us, end_us, kind, micro_batch] with kinds F, B,
// W, O (compute) and tp, cp, ep, pp, dp (communication).
export interface SimStage {
  stage: number; rank: number; busy_seconds: number; bubble_seconds: number; end_seconds: number;
  exposed_comm_seconds: Record<string, number>;
  timeline: [number, number, string, number][];
}
export interface Simulation {
  step_seconds: number; mfu: number; tokens_per_second: number; bubble_fraction: number;
  exposed_comm_seconds: Record<string, number>;
  stages: SimStage[];
  [k: string]: unknown;
}

// One point of serving_sweep (docs/inference.md): seconds and tokens/s.
export interface SweepPoint {
  concurrency: number; ttft_seconds: number; tpot_seconds: number;
  tokens_per_second_per_gpu: number; tokens_per_second_per_user: number;
  // The gap a request sees between its tokens: TPOT plus the stalls of the
  // other requests' prefills (absent from engines before it was added).
  itl_seconds?: number;
}

// serving_capacity (docs/inference.md "Capacity"): the highest request rate
// whose simulated workload meets the P99 targets, and the latency-rate
// curve around it (0.25 … 1.5 × the capacity, ascending).
export interface CapacityPoint {
  requests_per_second: number;
  ttft_seconds_p50: number; ttft_seconds_p99: number;
  tpot_seconds_p50: number; tpot_seconds_p99: number;
  output_tokens_per_second: number; meets_slo: boolean;
}
export interface Capacity {
  capacity_requests_per_second: number; capacity_requests_per_second_per_gpu: number;
  slo: { ttft_seconds_p99: number; tpot_seconds_p99: number };  // 0 = no target
  requests_per_run: number; gpus: number; simulations: number;
  curve: CapacityPoint[];
  // Present when the run at the capacity arrives in under two P99
  // end-to-end latencies: a burst, the capacity not measured (docs/inference.md).
  short_run?: boolean; run_seconds_at_capacity?: number; e2e_seconds_p99_at_capacity?: number;
}

// type -> [payload, result]
export interface Methods {
  version: [Record<string, never>, { version: string }];
  presets: [Record<string, never>, { presets: string[] }];
  inspect: [{ job: JobJson | string }, { summary: Record<string, unknown> }];
  graph: [{ job: JobJson | string }, { text: string }];
  // stage: the pipeline stage, 0 when left out; outside [0, pp): invalid_argument, path "stage".
  graphJson: [{ job: JobJson | string; stage?: number }, { graph: GraphJson }];
  // phase: inference jobs only ("prefill" | "decode" | "mixed", or
  // "kv_transfer" with disaggregated pools; docs/inference.md).
  groups: [{ job: JobJson | string; phase?: string }, { worldSize: number; text: string }];
  rankInfo: [{ job: JobJson | string; rank: number; phase?: string }, { info: RankInfo }];
  rankAt: [{ job: JobJson | string; coords: Record<string, number> }, { rank: number }];
  // bytes: the complete .et file, transferred (not copied) to the page.
  rankTrace: [{ job: JobJson | string; rank: number; phase?: string }, { bytes: ArrayBuffer }];
  // Inference jobs: TTFT, TPOT and throughput at each concurrency (the
  // latency-throughput curve); docs/inference.md.
  servingSweep: [{ job: JobJson | string; concurrency: number[] }, { sweep: SweepPoint[] }];
  // The capacity search (docs/inference.md "Capacity"): targets in seconds,
  // each optional (neither: the job's serving.slo); requests per simulated
  // run (default: the workload's count, else 1,000).
  servingCapacity: [{ job: JobJson | string; ttft_seconds_p99?: number; tpot_seconds_p99?: number; requests?: number }, { capacity: Capacity }];
  // The Chakra archive (zip of the engine's archive list, layout "files":
  // trace.<r>.et for every rank, comm_groups.json, summary.json, the bytes of
  // `stagecraft generate -o DIR`; an inference job: one folder per part,
  // prefill/ decode/ and mixed/ or kv_transfer/, and summary.json on top —
  // the engine's list of the CLI's layout), built in the worker with fflate; reports
  // progress and can be cancelled. The Blob is assembled from streamed zip chunks.
  archive: [{ job: JobJson | string; prefix?: string }, { blob: Blob; bytes: number; files: number }];
  cancel: [{ target: number }, { cancelled: boolean }];
  // The step time of the whole job (docs/simulate.md), with rank 0's
  // pipeline as one timeline per stage; `unsupported` from an engine
  // built without the simulator.
  simulate: [{ job: JobJson | string }, { simulation: Simulation }];
  // The planner (docs/plan.md) on the job as the base: gpus and constraints
  // as `stagecraft plan`; progress {done, total, phase} while it runs. The
  // engine call is synchronous: cancel by replacing the worker
  // (EngineClient.restart), not with a `cancel` message. `unsupported` from
  // an engine without the planner.
  // The best so far arrives as progress.best while it runs;
  // time_limit_seconds stops the search (complete false), as the CLI's.
  plan: [{ job: JobJson | string; gpus: number; constraints?: Record<string, unknown>; time_limit_seconds?: number }, { plan: Plan }];
  // Test hook: fails like a wasm abort (engine_aborted); the client then
  // replaces the worker.
  selfTestAbort: [Record<string, never>, Record<string, never>];
  // Test hook: every later request of this worker first holds it busy for
  // `ms` (a worker replaced meanwhile starts without the hold), so a test of
  // superseding a running job does not race the engine's speed.
  selfTestHold: [{ ms: number }, { ms: number }];
}
export type MethodName = keyof Methods;

export interface Request<T extends MethodName = MethodName> {
  v: typeof PROTOCOL_VERSION;
  id: number;
  type: T;
  payload: Methods[T][0];
}

export type Response<T extends MethodName = MethodName> =
  | { v: typeof PROTOCOL_VERSION; id: number; ok: true; result: Methods[T][1] }
  | { v: typeof PROTOCOL_VERSION; id: number; ok: false; error: EngineError }
  | { v: typeof PROTOCOL_VERSION; id: number; progress: Progress };
