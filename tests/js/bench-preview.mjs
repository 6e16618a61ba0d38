// Benchmark (not a test): how long the web app takes to preview ranks of a
// 32,768-rank job (GPT-3 175B, tp 8 x dp 4096, SP) in headless Chromium,
// measured from the job having settled (summary shown, the engine's
// generator built) to the rank's groups, node table, timeline and memory
// chart being drawn. Prints one line per rank and the worst case.
//   node tests/js/bench-preview.mjs        (needs build/web; CHROMIUM=...)
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { REPO_ROOT } from './native.mjs';

const WEB_DIR = path.join(REPO_ROOT, 'build/web');
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm', '.css': 'text/css' };
const JOB = { model: { preset: 'gpt3-175b' }, parallel: { dp: 4096, tp: 8, sequence_parallel: true }, training: { seq_len: 2048, micro_batch_size: 1, global_batch_size: 4096 } };
const RANKS = [0, 1, 4095, 16383, 20000, 32767];

const server = http.createServer((req, res) => {
  let url = new URL(req.url, 'http://x').pathname;
  if (url.endsWith('/')) url += 'index.html';
  const file = path.join(WEB_DIR, url);
  if (!file.startsWith(WEB_DIR) || !fs.existsSync(file)) return res.writeHead(404).end();
  res.writeHead(200, { 'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream' });
  fs.createReadStream(file).pipe(res);
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'stagecraft-bench-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  viewport: { width: 1440, height: 900 },
});
try {
  const page = await context.newPage();
  const t0 = Date.now();
  await page.goto(`http://127.0.0.1:${server.address().port}/#job=${encodeURIComponent(JSON.stringify(JOB))}`);
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
  await context.close();
  server.close();
  fs.rmSync(profile, { recursive: true, force: true });
}
