// A tiny assertion + runner harness shared by the Node and the browser entry
// points, so that one suite (./suite/*.mjs) runs unchanged in both.
//
// A suite module exports `name` and `cases`: [{ name, run(ctx) }], where
// ctx = { engine, assert, native, log }:
//   engine  the instantiated wasm module (version, inspect, graph, groups,
//           rankTrace: see docs/wasm-bridge.md)
//   native  { available, reason, files(job?): Promise<Map<name, Uint8Array>> }:
//           the native CLI's output for NATIVE_JOBS[job] (suite/jobs.mjs;
//           default 'identity', i.e. IDENTITY_JOB), see suite/identity.mjs
//   log     prints a line (e.g. why a case was skipped)
//   spawnWorker()  the engine in a fresh worker (./plan-worker.mjs):
//           { post(msg), onMessage(f), onError(f), terminate() }
// A case skips itself by returning the string "skip: <reason>".

export class AssertionError extends Error {
  constructor(message) {
    super(message);
    this.name = 'AssertionError';
  }
}

const show = (v) => {
  if (v instanceof Uint8Array) return `Uint8Array(${v.length})`;
  try {
    const s = JSON.stringify(v);
    return s.length > 300 ? s.slice(0, 300) + '…' : s;
  } catch {
    return String(v);
  }
};

function fail(message, what) {
  throw new AssertionError(what ? `${what}: ${message}` : message);
}

export const assert = {
  ok(value, what) {
    if (!value) fail(`expected a truthy value, got ${show(value)}`, what);
  },
  equal(actual, expected, what) {
    if (!Object.is(actual, expected)) fail(`expected ${show(expected)}, got ${show(actual)}`, what);
  },
  match(text, re, what) {
    if (typeof text !== 'string' || !re.test(text)) fail(`expected ${show(text)} to match ${re}`, what);
  },
  type(value, type, what) {
    if (typeof value !== type) fail(`expected a ${type}, got ${show(value)}`, what);
  },
  // Byte identity; on mismatch names the first differing offset.
  bytesEqual(actual, expected, what) {
    if (!(actual instanceof Uint8Array)) fail(`expected a Uint8Array, got ${show(actual)}`, what);
    const n = Math.min(actual.length, expected.length);
    for (let i = 0; i < n; i++) {
      if (actual[i] !== expected[i]) {
        fail(`bytes differ at offset ${i} (${actual[i]} vs ${expected[i]}); lengths ${actual.length} vs ${expected.length}`, what);
      }
    }
    if (actual.length !== expected.length) fail(`lengths differ: ${actual.length} vs ${expected.length}`, what);
  },
  // The bridge's error envelope: {ok:false, error:{code, message, path}}.
  error(result, code, path, what) {
    if (!result || result.ok !== false || !result.error) fail(`expected {ok:false,error}, got ${show(result)}`, what);
    const e = result.error;
    if (e.code !== code) fail(`expected error.code ${show(code)}, got ${show(e.code)} (${show(e.message)})`, what);
    if (path !== undefined && e.path !== path) fail(`expected error.path ${show(path)}, got ${show(e.path)} (${show(e.message)})`, what);
    if (typeof e.message !== 'string' || e.message.length === 0) fail('error.message is empty', what);
  },
};

// Runs every case of every suite in order; used by the browser entry (Node
// uses node:test directly). Returns [{ suite, name, status, message, ms }].
export async function runSuites(suites, ctxBase) {
  const results = [];
  for (const suite of suites) {
    for (const c of suite.cases) {
      const t0 = performance.now();
      let status = 'pass';
      let message = '';
      try {
        const r = await c.run({ ...ctxBase, assert });
        if (typeof r === 'string' && r.startsWith('skip:')) {
          status = 'skip';
          message = r.slice(5).trim();
        }
      } catch (e) {
        status = 'fail';
        message = e && e.stack ? String(e.stack) : String(e);
      }
      results.push({ suite: suite.name, name: c.name, status, message, ms: performance.now() - t0 });
    }
  }
  return results;
}
