// Benchmark (not a test): a 1,024-GPU plan in the browser (issue 12: at most
// 60 s), Llama 3 70B on H100, sequence 8,192, global batch 2,048, run from
// the Plan tab of the built app in headless Chromium (wasm, one thread, in
// the tab's worker), timed from the Run click to the ranked table. The
// baseline, measured in the same run: the native CLI's `stagecraft plan`
// on the same job (all cores), so the ratio is wasm-in-browser / native.
// Also checks both answered the same winner (same layout).
//   node tests/js/bench-plan.mjs   (needs build/web and build/native; CHROMIUM=..., STAGECRAFT_CLI=...)
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { serveStatic, launchChromium } from './launch.mjs';
import { REPO_ROOT, cliPath } from './native.mjs';

const WEB_DIR = path.join(REPO_ROOT, 'build/web');
const GPUS = Number(process.env.PLAN_GPUS || 1024);
const JOB = { model: { preset: 'llama3-70b' }, parallel: { tp: 8, pp: 8, dp: GPUS / 64 },
  training: { seq_len: 8192, global_batch_size: 2048 }, hardware: 'h100' };

const t0 = performance.now();
const native = JSON.parse(execFileSync(cliPath(), ['plan', '--model', 'llama3-70b', '--gpus', String(GPUS), '--hardware', 'h100',
  '--seq-len', '8192', '--global-batch-size', '2048', '--top', '10', '--json'], { maxBuffer: 1 << 28, stdio: ['ignore', 'pipe', 'ignore'] }));
const nativeS = (performance.now() - t0) / 1000;
console.log(`[bench] native plan, ${GPUS} GPUs: ${nativeS.toFixed(1)} s, winner ${JSON.stringify(native.candidates[0]?.layout)}`);

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
  await page.waitForFunction(() => document.body.dataset.plan === 'done' || document.querySelector('#plan-error')?.textContent, null, { timeout: 600_000 });
  const webS = (performance.now() - t1) / 1000;
  const err = await page.textContent('#plan-error');
  if (err) throw new Error(`plan failed in the browser: ${err}`);
  const first = await page.textContent('#plan-table tbody tr td.mono');
  console.log(`[bench] browser plan, ${GPUS} GPUs: ${webS.toFixed(1)} s (target <= 60 s), winner ${first}`);
  console.log(`[bench] ratio browser / native: ${(webS / nativeS).toFixed(2)}`);
} finally {
  await browser.close();
  server.close();
}
