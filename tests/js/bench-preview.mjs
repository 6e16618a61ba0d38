// Benchmark (not a test): how long the web app takes to preview ranks of a
// 32,768-rank job (GPT-3 175B, tp 8 x dp 4096, SP) in headless Chromium,
// measured from the job having settled (summary shown, the engine's
// generator built) to the rank's groups, node table, timeline and memory
// chart being drawn. Prints one line per rank and the worst case.
//   node tests/js/bench-preview.mjs        (needs build/web; CHROMIUM=...)
import path from 'node:path';
import { serveStatic, launchChromium } from './launch.mjs';
import { REPO_ROOT } from './native.mjs';

const WEB_DIR = path.join(REPO_ROOT, 'build/web');
const JOB = { model: { preset: 'gpt3-175b' }, parallel: { dp: 4096, tp: 8, sequence_parallel: true }, training: { seq_len: 2048, micro_batch_size: 1, global_batch_size: 4096 } };
const RANKS = [0, 1, 4095, 16383, 20000, 32767];

const { server, base } = await serveStatic([['/', WEB_DIR]]);
const browser = await launchChromium({ viewport: { width: 1440, height: 900 } });
const { context } = browser;
try {
  const page = await context.newPage();
  const t0 = Date.now();
  await page.goto(`${base}/#job=${encodeURIComponent(JSON.stringify(JOB))}`);
  await page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout: 300_000 });
  console.log(`[bench] job settled (32768 ranks, first preview included) after ${Date.now() - t0} ms`);
  await page.click('#tab-rank');
  let worst = 0;
  for (const r of RANKS) {
    const ms = await page.evaluate((rank) => window.stagecraftApp.preview(rank), r);
    const nodes = await page.textContent('#rank-stats');
    worst = Math.max(worst, ms);
    console.log(`[bench] rank ${r}: preview ${ms.toFixed(0)} ms — ${nodes.trim().slice(0, 60)}`);
  }
  console.log(`[bench] worst preview of a 32768-rank job: ${worst.toFixed(0)} ms (target < 1000 ms)`);
} finally {
  await browser.close();
  server.close();
}
