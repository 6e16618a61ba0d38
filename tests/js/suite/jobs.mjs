// Job JSONs shared by the suites (job schema: core/job/job.h).

// Small and fast: 2 layers of GPT-3 1.7B on dp=2 x tp=2.
export const SMALL_JOB = {
  model: { preset: 'gpt3-1.7b', num_layers: 2 },
  parallel: { dp: 2, tp: 2 },
  training: { seq_len: 256, micro_batch_size: 1, global_batch_size: 4 },
};

// The job equivalent to the native CLI invocation below; the two must
// produce byte-identical traces and group files.
export const IDENTITY_JOB = SMALL_JOB;
export const IDENTITY_CLI_ARGS = [
  'generate', '--model', 'gpt3-1.7b', '--layers', '2', '--tp', '2', '--dp', '2',
  '--seq-len', '256', '--micro-batch-size', '1', '--global-batch-size', '4',
];

export const json = (job) => JSON.stringify(job);

// Deep copy with a patch applied per section: withPatch(SMALL_JOB, {parallel: {tp: 7}}).
export function withPatch(job, patch) {
  const out = JSON.parse(JSON.stringify(job));
  for (const [section, fields] of Object.entries(patch)) {
    out[section] = { ...(out[section] ?? {}), ...fields };
  }
  return out;
}

// First value in a nested object whose key satisfies pred (depth-first).
export function findKey(obj, pred) {
  if (obj === null || typeof obj !== 'object') return undefined;
  for (const [k, v] of Object.entries(obj)) {
    if (pred(k, v)) return v;
  }
  for (const v of Object.values(obj)) {
    const r = findKey(v, pred);
    if (r !== undefined) return r;
  }
  return undefined;
}

// Mixture of experts: 2 layers of Mixtral 8x7B (E = 8, top-2, SwiGLU experts
// of width 14336) on tp 2 x dp 4 = 8 ranks, whose MoE layers re-divide those
// 8 ranks as expert_tp 1 x ep 4 x expert_dp 2 (Megatron's folding, inner
// first): rank r's ep group is the 4 ranks with the same r div 4, its edp
// group {r mod 4, r mod 4 + 4}. MoE with tp > 1 needs sequence parallelism.
export const MOE_JOB = {
  model: { preset: 'mixtral-8x7b', num_layers: 2 },
  parallel: { dp: 4, tp: 2, ep: 4, expert_tp: 1, sequence_parallel: true },
  training: { seq_len: 256, micro_batch_size: 1, global_batch_size: 4 },
};

export const MOE_CLI_ARGS = [
  'generate', '--model', 'mixtral-8x7b', '--layers', '2', '--tp', '2', '--dp', '4', '--ep', '4', '--expert-tp', '1',
  '--sequence-parallel', '--seq-len', '256', '--micro-batch-size', '1', '--global-batch-size', '4',
];

// Multi-token prediction (model.mtp_num_layers): DeepSeek-V3 cut to 4
// layers (3 dense, 1 MoE) with its MTP module on the last of 2 stages,
// tp 2 + SP (the module's gather to the stream), ep 2: 8 ranks.
export const MTP_JOB = {
  model: { preset: 'deepseek-v3', num_layers: 4, mtp_num_layers: 1 },
  parallel: { tp: 2, pp: 2, dp: 2, ep: 2, expert_tp: 1, sequence_parallel: true },
  training: { seq_len: 256, micro_batch_size: 1, global_batch_size: 4 },
};

export const MTP_CLI_ARGS = [
  'generate', '--model', 'deepseek-v3', '--layers', '4', '--mtp-num-layers', '1', '--tp', '2', '--pp', '2', '--dp', '2',
  '--ep', '2', '--expert-tp', '1', '--sequence-parallel', '--seq-len', '256', '--micro-batch-size', '1',
  '--global-batch-size', '4',
];

// HSDP: ZeRO-3 sharded over 2 of dp 4 ranks, replicated across 2.
export const HSDP_JOB = {
  model: { preset: 'gpt3-1.7b', num_layers: 2 },
  parallel: { dp: 4, zero: 3, shard_group: 2 },
  training: { seq_len: 256, micro_batch_size: 1, global_batch_size: 4 },
};

// A seeded serving workload (docs/inference.md "Workload"): Llama 3 8B cut
// to 4 layers on tp 2, 300 Poisson arrivals at 40 requests/s, normal prompt
// and uniform output lengths (every draw of the seeded stream used), with
// SLO targets (goodput, and the capacity search's default targets).
export const SERVE_WORKLOAD_JOB = {
  mode: 'inference', model: { preset: 'llama3-8b', num_layers: 4 }, parallel: { tp: 2 },
  serving: {
    prompt_tokens: 1000, output_tokens: 200,
    workload: { arrival: 'poisson', rate: 40, requests: 300, seed: 7,
      prompt_tokens: { distribution: 'normal', mean: 800, std: 300 }, output_tokens: { distribution: 'uniform', min: 20, max: 300 } },
    slo: { ttft_seconds_p99: 0.2, tpot_seconds_p99: 0.02 },
  },
};

// The jobs the identity suite runs through the native CLI and the wasm
// module: name -> { job, args } (the CLI flags equivalent to the job JSON;
// '@job' is a file holding the job, and with `stdout` the command's output
// is the one file: tests/js/native.mjs).
export const NATIVE_JOBS = {
  identity: { job: IDENTITY_JOB, args: IDENTITY_CLI_ARGS },
  moe: { job: MOE_JOB, args: MOE_CLI_ARGS },
  mtp: { job: MTP_JOB, args: MTP_CLI_ARGS },
  workload: { job: SERVE_WORKLOAD_JOB, args: ['generate', '--config', '@job'] },
  capacity: { job: SERVE_WORKLOAD_JOB, args: ['serve-capacity', '--config', '@job', '--requests', '200', '--json'], stdout: 'capacity.json' },
};
