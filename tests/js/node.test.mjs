// Node entry: the shared suite (./suite) under node:test, against the wasm
// module in build/wasm (or $STAGECRAFT_WASM_DIR). Run: node --test tests/js/
import { describe, test, before } from 'node:test';
import { assert } from './harness.mjs';
import { loadWasmInNode, nodeNativeProvider } from './native.mjs';
import { suites } from './suite/index.mjs';
import { Worker } from 'node:worker_threads';

// ctx.spawnWorker(): the engine in a worker thread (./plan-worker.mjs), with
// the same interface as the browser's (browser-suite.mjs).
function spawnWorker() {
  const w = new Worker(new URL('./plan-worker.mjs', import.meta.url));
  return { post: (m) => w.postMessage(m), onMessage: (f) => w.on('message', f), onError: (f) => w.on('error', f), terminate: () => w.terminate() };
}

let ctx;
before(async () => {
  ctx = { engine: await loadWasmInNode(), native: nodeNativeProvider(), log: console.log, spawnWorker };
});

for (const suite of suites) {
  describe(suite.name, () => {
    for (const c of suite.cases) {
      test(c.name, async (t) => {
        const r = await c.run({ ...ctx, assert });
        if (typeof r === 'string' && r.startsWith('skip:')) {
          // Under CI a missing fixture is a broken setup, not a pass.
          if (process.env.CI === 'true') throw new Error(`would skip, but CI=true: ${r.slice(5).trim()}`);
          t.skip(r.slice(5).trim());
        }
      });
    }
  });
}
