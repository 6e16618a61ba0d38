// Takes the screenshots of docs/web-app.md (docs/screenshots/*.png) from the
// built app (build/web) in headless Chromium at a laptop/projector size.
//   node tests/js/screenshots.mjs             (all of them)
//   node tests/js/screenshots.mjs --serving   (only serving.png)
//   node tests/js/screenshots.mjs --learn     (only compare*.png, compare-rank*.png, lesson*.png)
import fs from 'node:fs';
import path from 'node:path';
import { serveStatic, launchChromium } from './launch.mjs';
import { REPO_ROOT } from './native.mjs';

const WEB_DIR = path.join(REPO_ROOT, 'build/web');
const OUT = path.join(REPO_ROOT, 'docs/screenshots');
const JOB = { model: { preset: 'gpt3-1.7b', num_layers: 2 }, parallel: { dp: 2, tp: 2, sequence_parallel: true }, training: { seq_len: 256, micro_batch_size: 1, global_batch_size: 8 } };

fs.mkdirSync(OUT, { recursive: true });
const { server, base } = await serveStatic([['/', WEB_DIR]]);
const browser = await launchChromium({ viewport: { width: 1440, height: 900 } });
const { context } = browser;
const SERVE = { mode: 'inference', model: { preset: 'llama3-70b' }, parallel: { tp: 8 }, serving: { prompt_tokens: 7680, output_tokens: 512 } };
async function serving(page) {
  // Inference mode: Llama 3 70B on 8 H100s, the memory bar and the curve.
  await page.goto('about:blank');
  await page.goto(`${base}/#job=${encodeURIComponent(JSON.stringify(SERVE))}`);
  await page.waitForFunction(() => Number(document.querySelector('#sweep')?.dataset.points) > 0, null, { timeout: 120_000 });
  await page.evaluate(() => { document.querySelector('#welcome').hidden = true; });
  await page.screenshot({ path: path.join(OUT, 'serving.png'), fullPage: true });
}
// Issue 25: a comparison (dp 2 × pp 2 pinned as A, dp 1 × pp 2 as B), the
// same rank of both (the Rank preview tab) and a lesson step (the pipeline lesson's first step, revealed), at 1440 and 390 px.
async function learn(page) {
  const A = { model: { preset: 'gpt3-1.7b', num_layers: 4 }, parallel: { dp: 2, pp: 2 }, training: { seq_len: 256, micro_batch_size: 1, global_batch_size: 4 } };
  const B = { ...A, parallel: { dp: 1, pp: 2 } };
  const settled = () => page.waitForFunction(() => document.body.dataset.state === 'ready' && document.querySelector('#simulation')?.dataset.fresh === 'current', null, { timeout: 120_000 });
  for (const [w, suffix] of [[1440, ''], [390, '-phone']]) {
    await page.setViewportSize({ width: w, height: w > 400 ? 900 : 844 });
    await page.goto('about:blank');
    await page.goto(`${base}/#job=${encodeURIComponent(JSON.stringify(B))}&a=${encodeURIComponent(JSON.stringify(A))}`);
    await settled();
    await page.waitForFunction(() => /s$/.test(document.querySelector('#compare [data-row=step] .col-a')?.textContent ?? ''), null, { timeout: 120_000 });
    await page.evaluate(() => { document.querySelector('#welcome').hidden = true; });
    await page.waitForTimeout(300);
    await page.locator('#compare').screenshot({ path: path.join(OUT, `compare${suffix}.png`) });
    // The same rank of A and B: both traces on one time axis (Rank preview tab).
    await page.click('#tab-rank');
    await page.waitForFunction(() => document.querySelectorAll('#rank-compare canvas.rank-timeline').length === 2, null, { timeout: 120_000 });
    await page.waitForTimeout(300);
    await page.locator('#rank-compare').screenshot({ path: path.join(OUT, `compare-rank${suffix}.png`) });
    await page.goto('about:blank');
    await page.goto(`${base}/#lesson=pipeline-bubble.0`);
    await settled();
    await page.evaluate(() => { document.querySelector('#welcome').hidden = true; });
    await page.check('input[name="lesson-predict"][value="0"]');
    await page.click('#lesson-reveal');
    await page.waitForFunction(() => document.querySelector('#lessons')?.dataset.revealed === '1', null, { timeout: 120_000 });
    await page.evaluate(() => window.scrollTo(0, 0));
    await page.screenshot({ path: path.join(OUT, `lesson${suffix}.png`), fullPage: false });
  }
  await page.setViewportSize({ width: 1440, height: 900 });
}
try {
  const page = await context.newPage();
  if (process.argv.includes('--learn')) {
    await learn(page);
    throw new Error('done');
  }
  if (process.argv.includes('--serving')) {
    await serving(page);
    throw new Error('done');  // only serving.png: skip the others (caught below)
  }
  // First visit: the getting-started panel.
  await page.goto(`${base}/`);
  await page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout: 120_000 });
  await page.screenshot({ path: path.join(OUT, 'welcome.png') });
  await page.click('#welcome-close');
  await page.goto('about:blank');
  await page.goto(`${base}/#job=${encodeURIComponent(JSON.stringify(JOB))}`);
  await page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout: 120_000 });
  await page.screenshot({ path: path.join(OUT, 'summary.png') });
  await page.click('#tab-graph');
  await page.waitForSelector('#graph svg [data-op]');
  await page.click('#why-list button');
  await page.screenshot({ path: path.join(OUT, 'graph.png') });
  await page.selectOption('#layer', '-2');
  await page.waitForSelector('#graph svg [data-layer="0"]');
  await page.click('#graph svg [data-layer="1"]');
  await page.waitForSelector('#graph svg [data-layer="1"][aria-expanded="true"]');
  await page.evaluate(() => window.scrollTo(0, 0));
  await page.screenshot({ path: path.join(OUT, 'graph-stage.png') });
  await page.click('#tab-rank');
  await page.fill('input[name="coord-tp"]', '1');
  await page.dispatchEvent('input[name="coord-tp"]', 'change');
  await page.waitForFunction(() => document.querySelector('#rank-stats')?.dataset.rank === '1');
  await page.screenshot({ path: path.join(OUT, 'rank.png'), fullPage: true });
  await page.click('#tab-downloads');
  await page.screenshot({ path: path.join(OUT, 'downloads.png') });
  // The simulated step time of the 4-stage teaching pipeline.
  const PIPE = { model: { preset: 'gpt3-1.7b', num_layers: 8 }, parallel: { pp: 4, dp: 1, tp: 1 }, training: { seq_len: 256, micro_batch_size: 1, global_batch_size: 8 } };
  await page.goto('about:blank');
  await page.goto(`${base}/#job=${encodeURIComponent(JSON.stringify(PIPE))}`);
  await page.waitForSelector('#simulation[data-step]:not([hidden])', { timeout: 120_000 });
  await page.locator('#simulation').scrollIntoViewIfNeeded();
  await page.locator('#simulation').screenshot({ path: path.join(OUT, 'simulation.png') });
  await page.goto('about:blank');
  await page.goto(`${base}/#job=${encodeURIComponent(JSON.stringify(JOB))}`);
  await page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout: 120_000 });
  // A phone: one column, nothing wider than the screen.
  await page.setViewportSize({ width: 390, height: 844 });
  await page.click('#tab-summary');
  await page.locator('#panel-summary').scrollIntoViewIfNeeded();
  await page.screenshot({ path: path.join(OUT, 'phone.png') });
  await page.setViewportSize({ width: 1440, height: 900 });
  await serving(page);
  await learn(page);
  console.log(`screenshots written to ${OUT}`);
} catch (e) {
  if (e.message !== 'done') throw e;
  console.log(`${process.argv.includes('--learn') ? 'compare and lesson screenshots' : 'serving.png'} written to ${OUT}`);
} finally {
  await browser.close();
  server.close();
}
