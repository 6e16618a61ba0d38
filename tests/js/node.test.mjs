// Node entry: the shared suite (./suite) under node:test, against the wasm
// module in build/wasm (or $STAGECRAFT_WASM_DIR). Run: node --test tests/js/
import { describe, test, before } from 'node:test';
import { assert } from './harness.mjs';
import { loadWasmInNode, nodeNativeProvider } from './native.mjs';
import { suites } from './suite/index.mjs';

let ctx;
before(async () => {
  ctx = { engine: await loadWasmInNode(), native: nodeNativeProvider(), log: console.log };
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
