// Benchmark (not a test): `simulate` of a 4,096-GPU job in WebAssembly,
// under Node and inside headless Chromium (in a module Worker, as the app
// runs the engine), against the native CLI on the same job in the same run.
// Prints the best of REPEAT runs of each and the ratios wasm / native
// (docs/performance.md); exits 1 if the step times differ.
//   node tests/js/bench-simulate.mjs [REPEAT]   (needs build/wasm and the native CLI; STAGECRAFT_CLI=...,
//                                                CHROMIUM=...; BENCH_BROWSER=0 skips Chromium)
// The job: Llama-3-405B-class, 126 layers (7, 8 x 14, 7 per stage), tp 8 x
// pp 16 x dp 32 = 4,096 GPUs, seq 8192, 16 micro-batches per pipeline, SP,
// 1F1B, H100. A wasm call builds the job (Generator::create, which runs the
// summary's simulation) and returns the simulation, as the app's call does.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { loadWasmInNode, cliPath, REPO_ROOT } from './native.mjs';
import { serveStatic, launchChromium } from './launch.mjs';

const REPEAT = Number(process.argv[2] || 3);
const layout = [7, ...Array(14).fill(8), 7];
const JOB = {
  model: { preset: 'llama3-405b' },
  parallel: { tp: 8, pp: 16, dp: 32, sequence_parallel: true, pipeline_layout: layout },
  training: { seq_len: 8192, micro_batch_size: 1, global_batch_size: 512, schedule: '1f1b' },
  hardware: 'h100',
};
const text = JSON.stringify(JOB);

const engine = await loadWasmInNode();
let wasmBest = Infinity, step = null;
for (let i = 0; i < REPEAT; i++) {
  const t = performance.now();
  // A distinct text per run: the engine keeps the last job built, keyed by
  // its text, and a repeat of the same text would time that cache, not a build.
  const out = JSON.parse(engine.simulate(text + ' '.repeat(i), '{}'));
  const ms = performance.now() - t;
  if (!out.ok) throw new Error(`wasm simulate failed: ${JSON.stringify(out.error)}`);
  step = out.simulation.step_seconds;
  wasmBest = Math.min(wasmBest, ms);
}

const cli = cliPath();
const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'bench-sim-')), 'job.json');
fs.writeFileSync(file, text);
let nativeBest = Infinity, nativeStep = null;
for (let i = 0; i < REPEAT; i++) {
  const t = performance.now();
  const out = JSON.parse(execFileSync(cli, ['simulate', '--config', file, '--json'], { encoding: 'utf8' }));
  nativeBest = Math.min(nativeBest, performance.now() - t);
  nativeStep = out.step_seconds;
}
fs.rmSync(path.dirname(file), { recursive: true });

// The same call in headless Chromium: the wasm module in a module Worker.
let browserBest = null, browserStep = null;
if (process.env.BENCH_BROWSER !== '0') {
  const wasmDir = process.env.STAGECRAFT_WASM_DIR || path.join(REPO_ROOT, 'build/wasm');
  const { server, base } = await serveStatic([['/build/wasm/', wasmDir], ['/tests/js/', path.join(REPO_ROOT, 'tests/js')]]);
  const browser = await launchChromium();
  try {
    const page = await browser.context.newPage();
    await page.goto(`${base}/tests/js/browser.html`, { waitUntil: 'commit' });  // an origin for the worker
    const r = await page.evaluate(({ text, repeat }) => new Promise((resolve) => {
      const w = new Worker('/tests/js/bench-simulate-worker.mjs', { type: 'module' });
      w.onmessage = (e) => { w.terminate(); resolve(e.data); };
      w.onerror = (e) => { w.terminate(); resolve({ error: `worker error: ${e.message}` }); };
      w.postMessage({ text, repeat });
    }), { text, repeat: REPEAT });
    if (r.error) throw new Error(r.error);
    browserBest = r.best_ms;
    browserStep = r.step;
  } finally {
    await browser.close();
    server.close();
  }
}

console.log(`[bench] load ${os.loadavg().map((x) => x.toFixed(1)).join(' ')}`);
console.log(`[bench] simulate, 4096 GPUs: wasm (Node) ${wasmBest.toFixed(0)} ms, native CLI ${nativeBest.toFixed(0)} ms, ratio ${(wasmBest / nativeBest).toFixed(2)} (target: wasm <= 2000 ms)`);
if (browserBest !== null)
  console.log(`[bench] simulate, 4096 GPUs: wasm (headless Chromium, module Worker) ${browserBest.toFixed(0)} ms, ratio to native CLI ${(browserBest / nativeBest).toFixed(2)} (target <= 2000 ms)`);
console.log(`[bench] step ${step} s (wasm, Node) vs ${browserStep ?? '-'} s (wasm, Chromium) vs ${nativeStep} s (native)`);
if (step !== nativeStep || (browserStep !== null && browserStep !== nativeStep)) {
  console.log('[bench] wasm and native step times differ');
  process.exit(1);
}
