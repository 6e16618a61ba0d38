// Byte-compares every bridge function of two wasm builds over a corpus of
// jobs, bad inputs included (the wasm side of compare_outputs.sh).
// Usage: node tests/tools/compare_wasm.mjs BASELINE_WASM_DIR NEW_WASM_DIR
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

async function load(dir) {
  const { default: create } = await import(pathToFileURL(path.resolve(dir, 'stagecraft_wasm.js')).href);
  return create({ wasmBinary: fs.readFileSync(path.resolve(dir, 'stagecraft_wasm.wasm')) });
}

const src = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const jobs = fs.readdirSync(path.join(src, 'tests/golden/cases')).sort()
  .map((f) => [f, fs.readFileSync(path.join(src, 'tests/golden/cases', f), 'utf8')]);
jobs.push(['zero3-hsdp', JSON.stringify({ model: { preset: 'llama3-8b', num_layers: 2 }, parallel: { dp: 8, zero: 3, shard_group: 4 } })]);
jobs.push(['deepseek-pp2', JSON.stringify({ model: { preset: 'deepseek-v3', num_layers: 4 }, parallel: { tp: 2, ep: 4, expert_tp: 1, dp: 4, pp: 2 }, training: { global_batch_size: 8 } })]);
jobs.push(['bad-tp', JSON.stringify({ model: { preset: 'gpt3-1.7b' }, parallel: { tp: 7 } })]);
jobs.push(['not-json', '{model:']);

const [a, b] = await Promise.all([load(process.argv[2]), load(process.argv[3])]);
let calls = 0, diffs = 0;
const same = (what, x, y) => {
  calls++;
  const bx = x instanceof Uint8Array ? Buffer.from(x) : null, by = y instanceof Uint8Array ? Buffer.from(y) : null;
  const eq = bx || by ? bx && by && bx.equals(by) : x === y;
  if (!eq) { diffs++; console.log(`DIFF ${what}\n  base: ${String(x).slice(0, 200)}\n  new:  ${String(y).slice(0, 200)}`); }
};
const both = (what, f) => same(what, f(a), f(b));
both('version', (m) => m.version());
both('presets', (m) => m.presets());
for (const [name, job] of jobs) {
  for (const fn of ['inspect', 'graph', 'groups']) both(`${name} ${fn}`, (m) => m[fn](job));
  both(`${name} graphJson`, (m) => m.graphJson(job));
  const world = (() => { const g = JSON.parse(a.groups(job)); return g.ok ? g.worldSize : 4; })();
  for (const s of [0, 1, 2, 0.5, -1, NaN, 1e300]) both(`${name} graphJson ${s}`, (m) => m.graphJson(job, s));
  for (const r of [0, 1, world - 1, world, -1, 1.5, NaN, 1e300, -1e300]) {
    both(`${name} rankInfo ${r}`, (m) => m.rankInfo(job, r));
    both(`${name} rankTrace ${r}`, (m) => { const t = m.rankTrace(job, r); return t.ok ? t.bytes : JSON.stringify(t); });
  }
  for (const c of ['{"tp":1}', '{"dp":1,"pp":1}', '{"zz":1}', '{"tp":99}', '[', '{"tp":0.5}'])
    both(`${name} rankAt ${c}`, (m) => m.rankAt(job, c));
}
console.log(`compare_wasm: ${calls - diffs} of ${calls} calls identical`);
process.exit(diffs ? 1 : 0);
