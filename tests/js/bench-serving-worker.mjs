// Module Worker for tests/js/bench-serving.mjs: the wasm calls timed inside
// headless Chromium, in a worker as the app runs the engine.
// Message in: { text, repeat }; out: { inspect_ms, capacity_ms, summary, capacity } or { error }.
onmessage = async (e) => {
  try {
    const { default: createStagecraft } = await import('/build/wasm/stagecraft_wasm.js');
    const engine = await createStagecraft();
    let inspectMs = Infinity, capacityMs = Infinity, summary = null, capacity = null;
    for (let i = 0; i < e.data.repeat; i++) {
      // A distinct text per run (see bench-serving.mjs): no cache hit.
      const text = e.data.text + ' '.repeat(i);
      let t = performance.now();
      const s = JSON.parse(engine.inspect(text));
      inspectMs = Math.min(inspectMs, performance.now() - t);
      if (!s.ok) throw new Error(`wasm inspect failed: ${JSON.stringify(s.error)}`);
      summary = JSON.stringify(s.summary);
      t = performance.now();
      const c = JSON.parse(engine.servingCapacity(text + '\t', e.data.capacityArgs));
      capacityMs = Math.min(capacityMs, performance.now() - t);
      if (!c.ok) throw new Error(`wasm servingCapacity failed: ${JSON.stringify(c.error)}`);
      capacity = JSON.stringify(c.capacity);
    }
    postMessage({ inspect_ms: inspectMs, capacity_ms: capacityMs, summary, capacity });
  } catch (err) {
    postMessage({ error: String(err && err.stack ? err.stack : err) });
  }
};
