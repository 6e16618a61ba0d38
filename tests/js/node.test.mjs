// Node entry: the shared suite (./suite) under node:test, against the wasm
// module in build/wasm (or $STAGECRAFT_WASM_DIR). Run: node --test tests/js/
import { describe, test, before } from 'node:test';
import { assert } from './harness.mjs';
import { loadWasmInNode, nodeNativeProvider } from './native.mjs';
import { suites } from './suite/index.mjs';
import { Worker } from 'node:worker_threads';
import { importGraph, cycles, layerViolations } from './import-cycles.mjs';
import strict from 'node:assert/strict';

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

// Issue 25: web/src's modules import in one direction (no cycle; nothing
// below the views imports a view). The detector is first shown to find a
// hand-made cycle, so the check cannot pass by finding nothing.
describe('web/src imports', () => {
  test('the detector finds a hand-made cycle and a view imported from below', () => {
    const g = new Map([['a.ts', ['b.ts']], ['b.ts', ['c.ts']], ['c.ts', ['a.ts']], ['state.ts', ['views/x.ts']], ['views/x.ts', []]]);
    strict.deepEqual(cycles(g), [['a.ts', 'b.ts', 'c.ts']]);
    strict.deepEqual(layerViolations(g), ['state.ts -> views/x.ts']);
  });
  test('no import cycle in web/src, and no view imported from below', () => {
    const g = importGraph();
    strict.ok(g.has('state.ts') && g.get('main.ts').includes('state.ts'), 'the import graph was read');
    strict.deepEqual(cycles(g), []);
    strict.deepEqual(layerViolations(g), []);
  });
});
