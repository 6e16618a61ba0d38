// Module Worker for tests/js/bench-simulate.mjs: the wasm `simulate` call
// timed inside headless Chromium, in a worker as the app runs the engine.
// Message in: { text, repeat }; out: { best_ms, step } or { error }.
onmessage = async (e) => {
  try {
    const { default: createStagecraft } = await import('/build/wasm/stagecraft_wasm.js');
    const engine = await createStagecraft();
    let best = Infinity, step = null;
    for (let i = 0; i < e.data.repeat; i++) {
      const t = performance.now();
      // A distinct text per run (see bench-simulate.mjs): no cache hit.
      const out = JSON.parse(engine.simulate(e.data.text + ' '.repeat(i), '{}'));
      const ms = performance.now() - t;
      if (!out.ok) throw new Error(`wasm simulate failed: ${JSON.stringify(out.error)}`);
      step = out.simulation.step_seconds;
      best = Math.min(best, ms);
    }
    postMessage({ best_ms: best, step });
  } catch (err) {
    postMessage({ error: String(err && err.stack ? err.stack : err) });
  }
};
