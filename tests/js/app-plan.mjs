// The Plan tab (docs/web-app.md "Plan") in headless Chromium, run by
// app-cases.mjs: a real plan in the tab's worker with progress, Cancel
// mid-run (the worker is replaced) and a new run; and, on the hand-made
// plan of suite/plan-fixture.mjs drawn through stagecraftApp.showPlan: the
// Pareto front marked in the scatter, header clicks sorting the table in
// the hand-derived orders, Load putting the layout into the editor, the
// closest misses in words when nothing fits, a 390 px phone and axe-core.
import { PLAN_FIXTURE, PLAN_FRONT_RANKS, PLAN_SORTS, PLAN_NOTHING_FITS } from './suite/plan-fixture.mjs';
import { caseRunner, check, checkAxe } from './app-runner.mjs';

const ready = (page, timeout = 60_000) => page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout });
const jobUrl = (base, job) => `${base}/#job=${encodeURIComponent(JSON.stringify(job))}`;
// The fixture's base job: 2 layers of GPT-3 1.7B (8 GPUs: dp 8).
const BASE = { model: { preset: 'gpt3-1.7b', num_layers: 2 }, parallel: { dp: 8 }, training: { seq_len: 256, global_batch_size: 16 } };
// A larger space for Cancel: progress arrives long before the end.
const BIG = { model: { preset: 'gpt3-1.7b', num_layers: 8 }, parallel: { dp: 64 }, training: { seq_len: 1024, global_batch_size: 64 } };
const rowRanks = (page) => page.$$eval('#plan-table tbody tr', (rs) => rs.map((r) => Number(r.dataset.rank)));

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
    await page.click('#plan-cancel');
    await page.waitForFunction(() => document.body.dataset.plan !== 'running', null, { timeout: 10_000 });
    check(/cancelled/.test(await page.textContent('#plan-status')), `status: ${await page.textContent('#plan-status')}`);
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

  return results;
}
