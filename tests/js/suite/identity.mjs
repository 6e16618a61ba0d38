// Native-vs-wasm byte identity: the CLI's trace.<rank>.et files and
// comm_groups.json must equal (and its summary.json match) what the wasm
// bridge returns for the equivalent job JSON (NATIVE_JOBS in jobs.mjs: the
// dense IDENTITY_JOB <-> IDENTITY_CLI_ARGS, a mixture-of-experts job
// <-> the --ep / --expert-tp flags, and DeepSeek-V3 with its MTP module
// <-> --mtp-num-layers).
import { NATIVE_JOBS, json } from './jobs.mjs';

export const name = 'identity';

async function compare(name, { engine, assert, native }) {
  if (!native.available) return `skip: ${native.reason}`;
  const files = await native.files(name);
  const traces = [...files.keys()].filter((f) => /^trace\.\d+\.et$/.test(f));
  const job = json(NATIVE_JOBS[name].job);
  const groups = JSON.parse(engine.groups(job));
  assert.equal(groups.ok, true, 'groups ok');
  assert.equal(traces.length, groups.worldSize, `one trace per rank (native wrote ${[...files.keys()].join(', ')})`);
  for (let rank = 0; rank < groups.worldSize; rank++) {
    const native_bytes = files.get(`trace.${rank}.et`);
    assert.ok(native_bytes, `native wrote trace.${rank}.et`);
    const r = engine.rankTrace(job, rank);
    assert.equal(r.ok, true, `wasm rank ${rank}`);
    assert.bytesEqual(r.bytes, native_bytes, `trace.${rank}.et`);
  }
  assert.ok(files.has('comm_groups.json'), 'native wrote comm_groups.json');
  assert.bytesEqual(new TextEncoder().encode(groups.text), files.get('comm_groups.json'), 'comm_groups.json');
  // summary.json: the same document as inspect()'s summary (compared as
  // JSON text with key order kept; the file's whitespace may differ).
  if (files.has('summary.json')) {
    const native_summary = JSON.parse(new TextDecoder().decode(files.get('summary.json')));
    const summary = JSON.parse(engine.inspect(job));
    assert.equal(summary.ok, true, 'inspect ok');
    assert.equal(JSON.stringify(summary.summary), JSON.stringify(native_summary), 'summary.json vs inspect()');
  }
  return undefined;
}

export const cases = [
  {
    name: 'native CLI and wasm produce identical traces and groups',
    run: (ctx) => compare('identity', ctx),
  },
  {
    name: 'native CLI and wasm agree on a mixture-of-experts job (--ep, --expert-tp)',
    run: (ctx) => compare('moe', ctx),
  },
  {
    name: 'native CLI and wasm agree on a job with a multi-token-prediction module (--mtp-num-layers)',
    run: (ctx) => compare('mtp', ctx),
  },
];
