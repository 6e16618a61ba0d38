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
