// The Plan tab (docs/web-app.md "Plan") in headless Chromium, run by
// app-cases.mjs: a real plan in the tab's worker with progress, Cancel
// mid-run (the worker is replaced) and a new run; and, on the hand-made
// plan of suite/plan-fixture.mjs drawn through stagecraftApp.showPlan: the
// Pareto front marked in the scatter, header clicks sorting the table in
// the hand-derived orders, Load putting the layout into the editor, the
// closest misses in words when nothing fits, a 390 px phone and axe-core.
// Issue 25 item 5: the best so far drawn while the search runs, with
// counts and per-phase totals that never go back; the editor's own layout
// on the plot; axes from zero; gaps as "ties" or a relative figure; Load
// and every column without horizontal scroll at 1440 px; the alternatives
// and low-confidence notes beside their rows; a reload that restores a
// finished plan or says that a running one was lost.
//   alone: node tests/js/app-plan.mjs [case name prefix]  (needs build/web)
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { PLAN_FIXTURE, PLAN_FRONT_RANKS, PLAN_SORTS, PLAN_NOTHING_FITS, PLAN_NOTE_ALT, PLAN_NOTE_LOW, PLAN_TINY_GAP, PLAN_TINY_GAP_TEXT } from './suite/plan-fixture.mjs';
import { caseRunner, check, checkAxe } from './app-runner.mjs';

const ready = (page, timeout = 60_000) => page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout });
const jobUrl = (base, job) => `${base}/#job=${encodeURIComponent(JSON.stringify(job))}`;
// The fixture's base job: 2 layers of GPT-3 1.7B (8 GPUs: dp 8).
const BASE = { model: { preset: 'gpt3-1.7b', num_layers: 2 }, parallel: { dp: 8 }, training: { seq_len: 256, global_batch_size: 16 } };
// A larger space for Cancel: progress arrives long before the end.
const BIG = { model: { preset: 'gpt3-1.7b', num_layers: 8 }, parallel: { dp: 64 }, training: { seq_len: 1024, global_batch_size: 64 } };
// A mid-size space: a search of several seconds in the worker, so that
// the best so far arrives well before the end.
const MID = { model: { preset: 'gpt3-1.7b', num_layers: 4 }, parallel: { dp: 16 }, training: { seq_len: 1024, global_batch_size: 32 } };
const rowRanks = (page) => page.$$eval('#plan-table tbody tr', (rs) => rs.map((r) => Number(r.dataset.rank)));

// Records, on every DOM change of the page, what the Plan tab shows: the
// phase's done/total, whether a best so far is drawn while it runs, the
// simulated count and the ranked rows. Read back with planLog(page).
function recordPlan() {
  window.__planLog = [];
  const snap = () => {
    const b = document.body.dataset, counts = document.querySelector('#plan-counts');
    window.__planLog.push({ plan: b.plan, phase: b.planPhase, done: Number(b.planProgress ?? -1), total: Number(b.planTotal ?? -1),
      partial: document.querySelector('#plan-heading')?.dataset.partial === 'true',
      simulated: counts ? Number(counts.dataset.simulated) : -1, rows: document.querySelectorAll('#plan-table tbody tr').length });
  };
  new MutationObserver(snap).observe(document.body, { attributes: true, childList: true, subtree: true });
}
const planLog = (page) => page.evaluate(() => window.__planLog);
// Page width and the table's own scroll at the current viewport.
const widths = (page) => page.evaluate(() => {
  const t = document.querySelector('#plan-table');
  return { page: Math.max(document.documentElement.scrollWidth, document.body.scrollWidth), sw: t.scrollWidth, cw: t.clientWidth };
});

// only: run the cases whose name starts with it (while developing).
export async function planCases(context, base, only = '') {
  const results = [];
  const run = caseRunner(context, 'app-plan', results, only);

  await run('a plan runs in its worker with progress; Cancel mid-run replaces the worker; a new run answers', async (page) => {
    await page.goto(jobUrl(base, BIG));
    await ready(page);
    await page.click('#tab-plan');
    check(await page.inputValue('#plan-gpus') === '64', 'GPUs prefilled from the editor job (dp 64)');
    check(/gpt3-1\.7b/.test(await page.textContent('#plan-base')), 'the base job is named');
    const spawned0 = await page.evaluate(() => window.stagecraftApp.planEngine().spawned);
    await page.click('#plan-run');
    await page.waitForFunction(() => document.body.dataset.planProgress !== undefined, null, { timeout: 60_000 });
    check(await page.evaluate(() => document.body.dataset.plan) === 'running', 'still running when progress arrives');
    check(!(await page.$eval('#plan-progress', (el) => el.hidden)), 'progress bar shown');
    // Cancel from the keyboard: it hides itself, and the focus goes to Run.
    await page.focus('#plan-cancel');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.body.dataset.plan !== 'running', null, { timeout: 10_000 });
    check(/cancelled/.test(await page.textContent('#plan-status')), `status: ${await page.textContent('#plan-status')}`);
    check(await page.evaluate(() => document.activeElement?.id === 'plan-run'), `focus after Cancel: ${await page.evaluate(() => document.activeElement?.id || document.activeElement?.tagName)}`);
    const after = await page.evaluate(() => window.stagecraftApp.planEngine());
    check(after.spawned === spawned0 + 1 && after.busy === 0, `a fresh worker: ${JSON.stringify(after)} (was ${spawned0})`);
    // A small run in the fresh worker answers, with progress seen.
    await page.evaluate(() => { delete document.body.dataset.planProgress; });
    await page.fill('#plan-gpus', '4');
    await page.click('#plan-run');
    await page.waitForFunction(() => document.body.dataset.plan === 'done', null, { timeout: 120_000 });
    check(await page.evaluate(() => document.body.dataset.planProgress !== undefined), 'progress reported');
    const rows = await rowRanks(page);
    check(rows.length > 0 && rows[0] === 1, `ranked rows: ${rows}`);
    check(await page.$$eval('#plan-scatter circle.plan-dot', (cs) => cs.length) === rows.length, 'one dot per layout');
    check(/Considered \d/.test(await page.textContent('#plan-counts')), 'counts in words');
  });

  await run('hand-made plan: Pareto front marked, header clicks sort as derived by hand, Load puts the layout into the editor', async (page) => {
    await page.goto(jobUrl(base, BASE));
    await ready(page);
    await page.click('#tab-plan');
    await page.evaluate((plan) => window.stagecraftApp.showPlan(plan), PLAN_FIXTURE);
    const front = await page.$$eval('#plan-scatter circle[data-front="true"]', (cs) => cs.map((c) => Number(c.dataset.rank)).sort((a, b) => a - b));
    check(JSON.stringify(front) === JSON.stringify(PLAN_FRONT_RANKS), `front dots: ${front}`);
    check(await page.$$eval('#plan-scatter .plan-front-line', (x) => x.length) === 1, 'the front is joined');
    check(await page.$$eval('#plan-scatter .plan-capacity', (x) => x.length) === 1, 'capacity line');
    const frontRows = await page.$$eval('#plan-table tbody tr.front', (rs) => rs.map((r) => Number(r.dataset.rank)));
    check(JSON.stringify(frontRows) === JSON.stringify(PLAN_FRONT_RANKS), `front rows: ${frontRows}`);
    check(JSON.stringify(await rowRanks(page)) === '[1,2,3,4,5,6,7,8]', 'rank order first');
    const sortBy = async (key) => page.click(`#plan-table button[data-sort="${key}"]`);
    await sortBy('memory');
    check(JSON.stringify(await rowRanks(page)) === JSON.stringify(PLAN_SORTS['memory asc']), `memory asc: ${await rowRanks(page)}`);
    check(await page.getAttribute('#plan-table th:has(button[data-sort="memory"])', 'aria-sort') === 'ascending', 'aria-sort');
    await sortBy('memory');
    check(JSON.stringify(await rowRanks(page)) === JSON.stringify(PLAN_SORTS['memory desc']), `memory desc: ${await rowRanks(page)}`);
    await sortBy('exposed');
    check(JSON.stringify(await rowRanks(page)) === JSON.stringify(PLAN_SORTS['exposed asc']), `exposed asc: ${await rowRanks(page)}`);
    check(await page.evaluate(() => document.activeElement?.dataset.sort) === 'exposed', 'focus stays on the header');
    // Load #4 (tp 2 + sp, dp 4, ZeRO 1): the editor's fields, then its job.
    await page.click('#plan-table button.plan-load[data-rank="4"]');
    check(await page.inputValue('input[name="parallel.tp"]') === '2', 'tp in the editor');
    check(await page.inputValue('input[name="parallel.dp"]') === '4', 'dp in the editor');
    check(await page.isChecked('input[name="parallel.sequence_parallel"]'), 'sp in the editor');
    await page.waitForFunction(() => document.querySelector('#summary')?.dataset.worldSize === '8' && document.body.dataset.state === 'ready', null, { timeout: 60_000 });
    const job = await page.evaluate(() => window.stagecraftApp.job());
    const want = PLAN_FIXTURE.candidates[3].layout;
    check(job.parallel.tp === want.tp && job.parallel.dp === want.dp && job.parallel.sequence_parallel === true && job.parallel.zero === want.zero,
      `editor job: ${JSON.stringify(job.parallel)}`);
    check(job.model.preset === 'gpt3-1.7b' && job.model.num_layers === 2, `model kept: ${JSON.stringify(job.model)}`);
    check(/"tp":2/.test(decodeURIComponent(page.url())), 'the URL carries it');
    check(/Loaded layout #4/.test(await page.textContent('#plan-status')), 'says so');
  });

  await run('nothing fits: the closest misses in words; phone width and axe-core on the Plan tab', async (page) => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(jobUrl(base, BASE));
    await ready(page);
    await page.click('#tab-plan');
    await page.click('#plan-form summary');  // the constraints open
    await page.evaluate((plan) => window.stagecraftApp.showPlan(plan), PLAN_FIXTURE);
    const width = await page.evaluate(() => Math.max(document.documentElement.scrollWidth, document.body.scrollWidth));
    check(width <= 390, `page width at 390 px: ${width}`);
    const t = await page.$eval('#plan-table', (el) => ({ sw: el.scrollWidth, cw: el.clientWidth, ov: getComputedStyle(el).overflowX }));
    check(t.sw <= t.cw || t.ov === 'auto', `the table scrolls inside itself: ${JSON.stringify(t)}`);
    await checkAxe(page, 'the plan tab with a plan');
    await page.evaluate((plan) => window.stagecraftApp.showPlan(plan), PLAN_NOTHING_FITS);
    const text = await page.textContent('#plan-nothing');
    check(/No layout fits/.test(text) && /short of memory by 3\.00 GiB/.test(text) && /tp 3 does not divide/.test(text), `misses: ${text}`);
    check(await page.$$eval('#plan-misses li', (x) => x.length) === 2, 'two misses');
    await checkAxe(page, 'nothing fits');
  });

  await run('the best so far streams while the plan runs: counts and totals never go back; your layout on the plot; a reload restores the finished plan', async (page) => {
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.goto(jobUrl(base, MID));
    await ready(page);
    await page.click('#tab-plan');
    await page.evaluate(recordPlan);
    await page.click('#plan-run');
    await page.waitForFunction(() => document.body.dataset.plan === 'done', null, { timeout: 300_000 });
    const log = await planLog(page);
    const early = log.filter((e) => e.plan === 'running' && e.partial && e.rows > 0);
    check(early.length > 0, `a best so far was drawn while the search ran (${log.length} DOM changes seen)`);
    // Per phase: the total never changes, done never falls; the simulated
    // count never falls from one best so far to the next and the end.
    const byPhase = {};
    let sim = 0;
    for (const e of log) {
      if (e.phase && e.total >= 0) {
        const q = byPhase[e.phase];
        if (q) check(e.total === q.total && e.done >= q.done, `${e.phase}: ${q.done}/${q.total} then ${e.done}/${e.total}`);
        byPhase[e.phase] = e;
      }
      if (e.simulated >= 0) { check(e.simulated >= sim, `simulated went back: ${sim} then ${e.simulated}`); sim = e.simulated; }
    }
    check(byPhase.simulate, `the simulate phase was reported: ${Object.keys(byPhase)}`);
    check(!(await page.$eval('#plan-heading', (el) => el.dataset.partial === 'true')), 'the final plan is not marked partial');
    const status = await page.textContent('#plan-status');
    check(/done in \d/.test(status), `status: ${status}`);
    // The editor's own layout (dp 16) is marked and named.
    check(await page.$$eval('#plan-scatter .plan-yours', (x) => x.length) === 1, 'your layout on the plot');
    check(/your layout in the editor \(dp 16/.test(await page.textContent('#plan-caption')), `caption: ${await page.textContent('#plan-caption')}`);
    const w = await widths(page);
    check(w.page <= 1440 && w.sw <= w.cw, `no horizontal scroll at 1440 px: ${JSON.stringify(w)}`);
    await checkAxe(page, 'the plan tab after a real plan at 1440 px');
    const rows = await rowRanks(page);
    const counts = await page.textContent('#plan-counts');
    // Reload: the finished plan comes back as it was, and says so.
    await page.reload();
    await ready(page);
    await page.click('#tab-plan');
    check(/Restored from this tab’s session/.test(await page.textContent('#plan-restored')), `restored note: ${await page.textContent('#plan-restored')}`);
    check(JSON.stringify(await rowRanks(page)) === JSON.stringify(rows), 'the same rows');
    check(await page.textContent('#plan-counts') === counts, 'the same counts');
    check(await page.inputValue('#plan-gpus') === '16', 'the request back in the form');
    check(await page.$$eval('#plan-scatter .plan-yours', (x) => x.length) === 1, 'your layout still marked');
    check(!(await page.$('#plan-other-job')), 'the editor still holds the planned job: no note');
    // An edit after the reload: the restored plan says it was for another job.
    await page.fill('input[name="parallel.dp"]', '8');
    await page.waitForSelector('#plan-other-job', { timeout: 30_000 });
  });

  await run('a reload while the plan runs says it was lost and shows the best found before; axe on it at 390 px', async (page) => {
    await page.goto(jobUrl(base, BIG));
    await ready(page);
    await page.click('#tab-plan');
    await page.click('#plan-run');
    await page.waitForFunction(() => Number(document.body.dataset.planPartials ?? 0) >= 1, null, { timeout: 300_000 });
    check(await page.evaluate(() => document.body.dataset.plan) === 'running', 'the search was still running at the reload');
    const simulated = Number(await page.$eval('#plan-counts', (el) => el.dataset.simulated));
    await page.setViewportSize({ width: 390, height: 844 });
    await page.reload();
    await ready(page);
    await page.click('#tab-plan');
    const lost = await page.textContent('#plan-lost');
    check(/The plan was lost/.test(lost) && /reloaded while the search/.test(lost) && /best it had found before the reload/.test(lost), `lost: ${lost}`);
    check(/Best found before the reload/.test(await page.textContent('#plan-heading')), 'the heading says what the rows are');
    check(Number(await page.$eval('#plan-counts', (el) => el.dataset.simulated)) >= simulated, 'counts of the last best so far');
    check((await rowRanks(page)).length > 0, 'the rows found before the reload');
    check(await page.evaluate(() => document.body.dataset.plan) !== 'running', 'nothing claims to run');
    check(await page.inputValue('#plan-gpus') === '64', 'the request back in the form');
    const w = await widths(page);
    check(w.page <= 390, `page width at 390 px: ${w.page}`);
    await checkAxe(page, 'a plan lost to a reload at 390 px');
  });

  // Session 24's audit: a number input the browser cannot read ("e") was
  // sent as "the default"; the engine's errors named request keys (top,
  // constraints.tp), not the form's labels; constraints that leave nothing
  // to search read "No layout fits" with an empty list of misses.
  await run('bad inputs name their fields; constraints that leave nothing to search say so', async (page) => {
    await page.goto(jobUrl(base, BASE));
    await ready(page);
    await page.click('#tab-plan');
    const errAfterRun = async () => {
      await page.evaluate(() => { document.querySelector('#plan-error').textContent = ''; });
      await page.click('#plan-run');
      await page.waitForFunction(() => document.querySelector('#plan-error')?.textContent || document.body.dataset.plan === 'done', null, { timeout: 60_000 });
      return page.textContent('#plan-error');
    };
    // Text a number input cannot hold (type="number" reads it as '').
    await page.fill('input[name="top"]', '');
    await page.type('input[name="top"]', 'e');
    let err = await errAfterRun();
    check(/^Layouts ranked: not a number/.test(err), `unreadable Layouts ranked: ${err}`);
    check(await page.getAttribute('input[name="top"]', 'aria-invalid') === 'true', 'the input is marked invalid');
    check(await page.evaluate(() => document.body.dataset.plan) !== 'running', 'nothing ran');
    // An engine error on an input: the label, not the request key.
    await page.fill('input[name="top"]', '0');
    err = await errAfterRun();
    check(/^Layouts ranked: /.test(err) && /got 0/.test(err), `top 0: ${err}`);
    await page.fill('input[name="top"]', '10');
    await page.click('#plan-form summary');
    await page.fill('input[name="fix-tp"]', '-2');
    err = await errAfterRun();
    check(/^tensor parallel \(tp\): fixed to: /.test(err) && /-2/.test(err), `tp -2: ${err}`);
    check(await page.getAttribute('input[name="fix-tp"]', 'aria-invalid') === 'true', 'the tp input is marked invalid');
    await page.fill('input[name="fix-tp"]', '');
    // A micro-batch above the global batch: nothing to search, said so.
    await page.fill('input[name="fix-mbs"]', '999999');
    await page.click('#plan-run');
    await page.waitForFunction(() => document.body.dataset.plan === 'done', null, { timeout: 60_000 });
    const nothing = await page.textContent('#plan-nothing');
    check(/No layout meets the constraints/.test(nothing) && /Nothing was searched on 8 GPUs/.test(nothing), `nothing searched: ${nothing}`);
    check(await page.$$eval('#plan-misses', (x) => x.length) === 0, 'no empty list of misses');
  });

  // Issue 23 item 6: an impossible request says the smallest GPU count that fits.
  await run('nothing fits: the smallest GPU count that does, and a button that plans there', async (page) => {
    await page.goto(jobUrl(base, { model: { preset: 'llama3-8b' }, parallel: { dp: 1 }, training: { seq_len: 4096, global_batch_size: 8 } }));
    await ready(page);
    await page.click('#tab-plan');
    await page.fill('#plan-gpus', '1');
    // Every status line shown while it runs (the probe's "count k of at most n" among them).
    await page.evaluate(() => {
      window.__statuses = [];
      const el = document.querySelector('#plan-status');
      new MutationObserver(() => window.__statuses.push(el.textContent)).observe(el, { childList: true, characterData: true, subtree: true });
    });
    await page.click('#plan-run');
    await page.waitForFunction(() => document.body.dataset.plan === 'done', null, { timeout: 120_000 });
    const statuses = await page.evaluate(() => window.__statuses);
    const counts = statuses.map((t) => /count ([\d,]+) of at most ([\d,]+)/.exec(t)).filter(Boolean);
    check(counts.length > 0, `the probe said what it does: ${statuses.join(' | ')}`);
    for (const m of counts) check(Number(m[1].replace(/,/g, '')) <= Number(m[2].replace(/,/g, '')), `a count past its total: ${m[0]}`);
    const text = await page.textContent('#plan-smallest');
    const m = /It fits on (\d+) GPUs, e\.g\. .* per GPU: the smallest count tried/.exec(text);
    check(m, `the smallest count in words: ${text}`);
    const n = Number(m[1]);
    check(n >= 2 && n <= 8, `a count between 2 and a node: ${n}`);
    await page.click('#plan-smallest-fit');
    await page.waitForFunction((want) => document.body.dataset.plan === 'done' && document.querySelector('#plan-gpus')?.value === String(want) &&
      document.querySelectorAll('#plan-table tbody tr').length > 0, n, { timeout: 120_000 });
    check(/GPUs/.test(await page.textContent('#plan-counts')), 'the new plan is shown');
  });

  await run('a search over the browser budget says so with the plan\'s own hint', async (page) => {
    // DeepSeek-V3 with 8 of its layers (quick to load in the editor) on
    // 16,384 GPUs: 2,948,427 layouts, over 1.2 GiB of search state (at
    // least 464 bytes a layout in wasm32), over the browser's 1.0 GiB
    // (docs/plan.md "Budget"). (Llama 3 70B on 1,024 GPUs, refused before
    // the layouts stopped holding their jobs, now fits: about 0.13 GiB.)
    await page.goto(jobUrl(base, { model: { preset: 'deepseek-v3', num_layers: 8 }, parallel: { tp: 8, sequence_parallel: true, dp: 960 }, training: { seq_len: 4096, global_batch_size: 15360 } }));
    await ready(page);
    await page.click('#tab-plan');
    await page.fill('#plan-gpus', '16384');
    await page.click('#plan-run');
    await page.waitForFunction(() => document.querySelector('#plan-error')?.textContent, null, { timeout: 120_000 });
    const err = await page.textContent('#plan-error');
    check(/too large for the browser/.test(err) && /2,?948,?427 layouts/.test(err) && /constraints/.test(err) && !/micro-batches per rank/.test(err), `error: ${err}`);
    check(await page.evaluate(() => document.body.dataset.plan) !== 'running', 'not running');
  });

  await run('hand-made plans: axes from zero, ties and tiny gaps in words, notes beside rows, Load first, no scroll at 1440 px', async (page) => {
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.goto(jobUrl(base, BASE));
    await ready(page);
    await page.click('#tab-plan');
    await page.evaluate((plan) => window.stagecraftApp.showPlan(plan), PLAN_FIXTURE);
    // Both axes start at zero: the lowest tick of each reads 0, and the
    // bottom of the plot is step 0 (the dots sit above it in proportion:
    // 1.0 s and 2.0 s, so #8 is twice as far from the axis as #1).
    const ys = await page.$$eval('#plan-scatter circle.plan-dot', (cs) => Object.fromEntries(cs.map((c) => [c.dataset.rank, Number(c.getAttribute('cy'))])));
    const axisY = await page.$eval('#plan-scatter line', (l) => Number(l.getAttribute('y1')));
    const r = (axisY - ys[8]) / (axisY - ys[1]);
    check(Math.abs(r - 2) < 1e-6, `step 2.0 s twice as high as 1.0 s above the axis: ${r}`);
    check(await page.$eval('#plan-scatter .plan-ytick', (t) => t.textContent) === '0', 'y from 0');
    check(/Both axes start at zero/.test(await page.textContent('#plan-caption')), 'said in the caption');
    // #2 ties #1 (the same 1.0 s): no "+0.000".
    check(/ties #1/.test(await page.textContent('#plan-table tr[data-rank="2"]')), 'row 2 ties #1');
    // #3: 1.1 vs 1.0 = 0.1 / 1.1 = 9.1 %, 100 ms.
    check(/\+9\.1 % \(100 ms\)/.test(await page.textContent('#plan-table tr[data-rank="3"]')), `row 3: ${await page.textContent('#plan-table tr[data-rank="3"]')}`);
    check((await page.textContent('#plan-table tr[data-rank="1"] .plan-notes')).includes(PLAN_NOTE_ALT), 'alternatives beside #1');
    check((await page.textContent('#plan-table tr[data-rank="3"] .plan-notes')).includes(PLAN_NOTE_LOW), 'low confidence beside #3');
    // Load is in each row's first cell; nothing scrolls sideways at 1440 px.
    check(await page.$$eval('#plan-table tbody tr', (rs) => rs.every((r) => r.cells[0].querySelector('button.plan-load'))), 'Load first in every row');
    const w = await widths(page);
    check(w.page <= 1440 && w.sw <= w.cw, `no horizontal scroll at 1440 px: ${JSON.stringify(w)}`);
    const right = await page.evaluate(() => {
      const t = document.querySelector('#plan-table').getBoundingClientRect().right;
      return [...document.querySelectorAll('#plan-table tbody tr:first-child td')].every((td) => td.getBoundingClientRect().right <= t + 0.5);
    });
    check(right, 'every column, memory included, inside the table box');
    await checkAxe(page, 'the plan tab with a hand-made plan at 1440 px');
    // The engine's "by 0.000 s (0.0%)" said with sensible precision.
    await page.evaluate((plan) => window.stagecraftApp.showPlan(plan), PLAN_TINY_GAP);
    const why = await page.textContent('#plan-why');
    check(why.includes(PLAN_TINY_GAP_TEXT) && !/0\.00\d s/.test(why), `why: ${why}`);
  });

  return results;
}

// Alone: node tests/js/app-plan.mjs [case name prefix]
if (import.meta.url === `file://${process.argv[1]}`) {
  const { runCasesAlone } = await import('./launch.mjs');
  await runCasesAlone(planCases, path.join(path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..'), 'build/web'), process.argv[2]);
}
