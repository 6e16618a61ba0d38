// Benchmark (not a test): a 1,024-GPU plan in the browser (issue 12: at most
// 60 s), Llama 3 70B on H100, sequence 8,192, global batch 2,048, run from
// the Plan tab of the built app in headless Chromium (wasm, one thread, in
// the tab's worker), timed from the Run click to the ranked table. The
// baseline, measured in the same run: the native CLI's `stagecraft plan`
// on the same job (all cores), so the ratio is wasm-in-browser / native.
// Also checks both answered the same winner (same layout).
//   node tests/js/bench-plan.mjs   (needs build/web and build/native; CHROMIUM=..., STAGECRAFT_CLI=...)
//   PLAN_MODEL=llama3-8b PLAN_GPUS=64 PLAN_GBS=512 node tests/js/bench-plan.mjs   (a smaller plan)
// Prints wall times and the native run's CPU time (on a shared machine the
// wall time of both sides grows with the load; the load average is printed).
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import fs from 'node:fs';
import path from 'node:path';
import { serveStatic, launchChromium } from './launch.mjs';
import { REPO_ROOT, cliPath } from './native.mjs';

const WEB_DIR = path.join(REPO_ROOT, 'build/web');
const GPUS = Number(process.env.PLAN_GPUS || 1024);
const MODEL = process.env.PLAN_MODEL || 'llama3-70b';
const SEQ = Number(process.env.PLAN_SEQ || 8192), GBS = Number(process.env.PLAN_GBS || 2048);
// The editor's job (its layout is not searched from; it only sets the GPUs field).
const JOB = { model: { preset: MODEL }, parallel: { tp: 8, dp: GPUS / 8 },
  training: { seq_len: SEQ, global_batch_size: GBS }, hardware: 'h100' };
const load = () => os.loadavg()[0].toFixed(1);

console.log(`[bench] ${MODEL}, ${GPUS} H100, sequence ${SEQ}, global batch ${GBS}, top 10; load average ${load()}`);
let native = null, nativeS = 0;
if (process.env.PLAN_NATIVE !== '0') {  // PLAN_NATIVE=0: the browser side only
const t0 = performance.now();
native = JSON.parse(execFileSync(cliPath(), ['plan', '--model', MODEL, '--gpus', String(GPUS), '--hardware', 'h100',
  '--seq-len', String(SEQ), '--global-batch-size', String(GBS), '--top', '10', '--threads', '1', '--quiet', '--json'], { maxBuffer: 1 << 28, stdio: ['ignore', 'pipe', 'ignore'] }));
nativeS = (performance.now() - t0) / 1000;
// Children's CPU time is not in process.resourceUsage(); read it from /proc/self/stat (cutime, field 16, in clock ticks).
const cutime = Number(fs.readFileSync('/proc/self/stat', 'utf8').split(') ')[1].split(' ')[13]) / 100;
console.log(`[bench] native plan (1 thread): ${nativeS.toFixed(1)} s wall, ${cutime.toFixed(1)} s CPU; ${native.counts.simulated} simulated of ${native.counts.considered}; winner ${JSON.stringify(native.candidates[0]?.layout)}`);
}

const { server, base } = await serveStatic([['/', WEB_DIR]]);
const browser = await launchChromium({ viewport: { width: 1440, height: 900 } });
try {
  const page = await browser.context.newPage();
  await page.goto(`${base}/#job=${encodeURIComponent(JSON.stringify(JOB))}`);
  await page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout: 300_000 });
  await page.click('#tab-plan');
  await page.fill('#plan-gpus', String(GPUS));
  await page.fill('#plan-form input[name=top]', '10');
  const t1 = performance.now();
  await page.click('#plan-run');
  // The progress line every 30 s (a rate to extrapolate from if it runs long).
  const tick = setInterval(async () => {
    const s = await page.textContent('#plan-status').catch(() => '');
    console.log(`[bench]   ${((performance.now() - t1) / 1000).toFixed(0)} s: ${s}; load average ${load()}`);
  }, 30_000);
  await page.waitForFunction(() => document.body.dataset.plan === 'done' || document.querySelector('#plan-error')?.textContent, null, { timeout: 3_600_000 });
  clearInterval(tick);
  const webS = (performance.now() - t1) / 1000;
  const err = await page.textContent('#plan-error');
  if (err) throw new Error(`plan failed in the browser: ${err}`);
  const first = await page.textContent('#plan-table tbody tr td.mono');
  console.log(`[bench] browser plan (wasm, 1 thread, in the Plan tab's worker): ${webS.toFixed(1)} s wall (target <= 60 s for 1,024 GPUs); winner ${first}; load average ${load()}`);
  // The Plan tab draws the best so far as it improves (issue 25 item 5):
  // from Run to the first one (it includes simulating the editor's own
  // layout once), and how many it drew.
  const firstBest = await page.evaluate(() => document.body.dataset.planFirstBestMs);
  const partials = await page.evaluate(() => document.body.dataset.planPartials ?? '0');
  console.log(`[bench] first best so far on screen after ${firstBest === undefined ? 'none' : `${(Number(firstBest) / 1000).toFixed(1)} s`}; ${partials} best-so-far updates drawn`);
  if (native) console.log(`[bench] ratio browser / native: ${(webS / nativeS).toFixed(2)}`);
} finally {
  await browser.close();
  server.close();
}
