// Takes the screenshots of docs/web-app.md (docs/screenshots/*.png) from the
// built app (build/web) in headless Chromium at a laptop/projector size.
//   node tests/js/screenshots.mjs
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';
import { REPO_ROOT } from './native.mjs';

const WEB_DIR = path.join(REPO_ROOT, 'build/web');
const OUT = path.join(REPO_ROOT, 'docs/screenshots');
const TYPES = { '.html': 'text/html', '.js': 'text/javascript', '.wasm': 'application/wasm', '.css': 'text/css' };
const JOB = { model: { preset: 'gpt3-1.7b', num_layers: 2 }, parallel: { dp: 2, tp: 2, sequence_parallel: true }, training: { seq_len: 256, micro_batch_size: 1, global_batch_size: 8 } };

const server = http.createServer((req, res) => {
  let url = new URL(req.url, 'http://x').pathname;
  if (url.endsWith('/')) url += 'index.html';
  const file = path.join(WEB_DIR, url);
  if (!file.startsWith(WEB_DIR) || !fs.existsSync(file)) return res.writeHead(404).end();
  res.writeHead(200, { 'content-type': TYPES[path.extname(file)] ?? 'application/octet-stream' });
  fs.createReadStream(file).pipe(res);
});
await new Promise((r) => server.listen(0, '127.0.0.1', r));
fs.mkdirSync(OUT, { recursive: true });
const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'stagecraft-shots-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium', headless: true,
  args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  viewport: { width: 1440, height: 900 },
});
try {
  const page = await context.newPage();
  await page.goto(`http://127.0.0.1:${server.address().port}/#job=${encodeURIComponent(JSON.stringify(JOB))}`);
  await page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout: 120_000 });
  await page.screenshot({ path: path.join(OUT, 'summary.png') });
  await page.click('#tab-graph');
  await page.waitForSelector('#graph svg [data-op]');
  await page.click('#why-list button');
  await page.screenshot({ path: path.join(OUT, 'graph.png') });
  await page.click('#tab-rank');
  await page.fill('input[name="coord-tp"]', '1');
  await page.dispatchEvent('input[name="coord-tp"]', 'change');
  await page.waitForFunction(() => document.querySelector('#rank-stats')?.dataset.rank === '1');
  await page.screenshot({ path: path.join(OUT, 'rank.png'), fullPage: true });
  await page.click('#tab-downloads');
  await page.screenshot({ path: path.join(OUT, 'downloads.png') });
  console.log(`screenshots written to ${OUT}`);
} finally {
  await context.close();
  server.close();
  fs.rmSync(profile, { recursive: true, force: true });
}
