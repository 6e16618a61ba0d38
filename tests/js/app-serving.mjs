// The web app's inference mode end to end (docs/web-app.md "Inference
// mode"), in headless Chromium, run by app-cases.mjs: the mode switch and
// the serving fields, the serving summary (KV cache per token, sequences
// that fit, TTFT, TPOT, tokens/s per GPU, the per-rank memory bar), the
// latency-throughput curve, the latency-rate curve of the capacity search
// and a workload's percentiles (equal to the native CLI's), the rank
// preview per phase, the archive (equal, file for file, to what the native
// CLI writes for the same job), a 390 px phone and an axe-core audit.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { unzipSync } from 'fflate';
import { decodeTrace } from '../../web/src/lib/chakra.js';
import { cliPath } from './native.mjs';
import { caseRunner, check, checkAxe } from './app-runner.mjs';

const ready = (page, timeout = 60_000) => page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout });
const jobUrl = (base, job) => `${base}/#job=${encodeURIComponent(JSON.stringify(job))}`;

// A small serving job: Llama 3 8B cut to 4 layers on tp 2.
export const SERVE_JOB = { mode: 'inference', model: { preset: 'llama3-8b', num_layers: 4 }, parallel: { tp: 2 },
  serving: { prompt_tokens: 1000, output_tokens: 200, concurrency: 8 } };

// Disaggregated: prefill tp 2 dp 2, decode tp 2 dp 2 (4 ranks each): the
// prompt of prefill dp rank j goes to decode dp rank j, so every rank of the
// KV transfer sends or receives.
const SERVE_DIS_JOB = { mode: 'inference', model: { preset: 'llama3-8b', num_layers: 2 }, parallel: { tp: 2 },
  serving: { prompt_tokens: 100, output_tokens: 20, concurrency: 2, disaggregated: { prefill: { tp: 2, dp: 2 }, decode: { tp: 2, dp: 2 } } } };

// A request mix (docs/inference.md "Request mixes"): 3 in 4 requests
// 1,000 + 100 tokens, 1 in 4 3,000 + 300.
const SERVE_MIX_JOB = { mode: 'inference', model: { preset: 'llama3-8b', num_layers: 4 }, parallel: { tp: 2 },
  serving: { requests: [{ prompt_tokens: 1000, output_tokens: 100, weight: 3 }, { prompt_tokens: 3000, output_tokens: 300, weight: 1 }], concurrency: 8 } };

// A seeded workload with latency targets (docs/inference.md "Workload",
// "Capacity"): the workload's percentiles and the capacity search.
const SERVE_SLO_JOB = { mode: 'inference', model: { preset: 'llama3-8b', num_layers: 4 }, parallel: { tp: 2 },
  serving: { prompt_tokens: 1000, output_tokens: 200,
    workload: { arrival: 'poisson', rate: 40, requests: 200, seed: 3 },
    slo: { ttft_seconds_p99: 0.2, tpot_seconds_p99: 0.02 } } };

// A burst of 200 requests into a cache of 4,568 pages (6 % of the GPU's
// memory), prefill first: the cache runs out, so the admission policy
// (docs/inference.md "Admission") decides how many requests are preempted.
const SERVE_BURST_JOB = { mode: 'inference', model: { preset: 'llama3-8b', num_layers: 4 }, parallel: { tp: 1 },
  serving: { prompt_tokens: 512, output_tokens: 256, gpu_memory_utilization: 0.06,
    workload: { arrival: 'burst', requests: 200, seed: 1 }, scheduler: { policy: 'prefill_first' } } };

// Llama 3 8B, 4,000 + 50 tokens, 300 requests, P99 TTFT 1 s and TPOT 50 ms:
// a prefill-bound capacity (the layout search's best per GPU).
const SERVE_PREFILL_JOB = { mode: 'inference', model: { preset: 'llama3-8b' }, parallel: { tp: 1 },
  serving: { prompt_tokens: 4000, output_tokens: 50, workload: { arrival: 'poisson', rate: 40, requests: 300, seed: 3 },
    slo: { ttft_seconds_p99: 1, tpot_seconds_p99: 0.05 } } };

// The native CLI's `serve-capacity --json` for `job`, with more arguments.
function nativeCapacityArgs(job, args) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stagecraft-cap-'));
  try {
    fs.writeFileSync(path.join(dir, 'job.json'), JSON.stringify(job));
    return JSON.parse(execFileSync(cliPath(), ['serve-capacity', '--config', path.join(dir, 'job.json'), '--json', ...args], { stdio: ['ignore', 'pipe', 'inherit'] }).toString());
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

// The native CLI's `serve-capacity --json` for `job`.
function nativeCapacity(job) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stagecraft-cap-'));
  try {
    fs.writeFileSync(path.join(dir, 'job.json'), JSON.stringify(job));
    return JSON.parse(execFileSync(cliPath(), ['serve-capacity', '--config', path.join(dir, 'job.json'), '--json'], { stdio: ['ignore', 'pipe', 'inherit'] }).toString());
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

const summaryText = (page) => page.$eval('#summary', (el) => el.textContent);

// Every file the native CLI writes for `job` (relative path -> bytes),
// subdirectories included.
function nativeFiles(job) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stagecraft-serve-'));
  try {
    fs.writeFileSync(path.join(dir, 'job.json'), JSON.stringify(job));
    execFileSync(cliPath(), ['generate', '--config', path.join(dir, 'job.json'), '-o', path.join(dir, 'out')], { stdio: ['ignore', 'ignore', 'inherit'] });
    const files = new Map();
    const walk = (d, rel) => {
      for (const name of fs.readdirSync(d).sort()) {
        const p = path.join(d, name), r = rel ? `${rel}/${name}` : name;
        if (fs.statSync(p).isDirectory()) walk(p, r);
        else files.set(r, new Uint8Array(fs.readFileSync(p)));
      }
    };
    walk(path.join(dir, 'out'), '');
    return files;
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

export async function servingCases(context, base, only = '') {
  const results = [];
  const run = caseRunner(context, 'app-serving', results, only);

  await run('mode switch: serving fields replace the training ones; the Llama 3 70B example shows the KV cache, TTFT, TPOT and the curve', async (page) => {
    await page.goto(`${base}/`);
    await ready(page);
    check(await page.$eval('fieldset[data-group="serving"]', (el) => el.hidden), 'training mode: serving fields hidden');
    await page.selectOption('#f-mode', 'inference');
    await page.waitForFunction(() => document.body.dataset.mode === 'inference', null, { timeout: 10_000 });
    check(await page.$eval('fieldset[data-group="training"]', (el) => el.hidden), 'inference mode: training fields hidden');
    check(await page.isVisible('input[name="serving.prompt_tokens"]') && await page.isVisible('select[name="serving.kv_dtype"]'), 'serving fields shown');
    check(!(await page.isVisible('input[name="parallel.cp"]')), 'training-only parallel fields hidden (cp)');
    const help = await page.getAttribute('label[data-path="serving.concurrency"]', 'title');
    check(/as many as fit/.test(help ?? ''), `concurrency explains 0: ${help}`);

    const t0 = performance.now();
    await page.selectOption('#job-preset', 'llama3-70b-serve');
    await page.waitForFunction(() => document.querySelector('#summary')?.dataset.mode === 'inference' && document.querySelector('#summary')?.dataset.worldSize === '8' && document.body.dataset.state === 'ready', null, { timeout: 120_000 });
    const ms = performance.now() - t0;
    check(decodeURIComponent(page.url()).includes('"mode":"inference"'), `URL carries the mode: ${page.url()}`);
    // 2 x 80 layers x 8 KV heads x 128 x 2 bytes = 327,680 B = 320 KiB.
    const kv = await page.textContent('[data-card="kv-per-token"] .card-value');
    check(kv === '320.0 KiB', `KV per token: ${kv}`);
    const fit = Number((await page.textContent('[data-card="max-seqs"] .card-value')).replace(/,/g, ''));
    // By hand (docs/inference.md): at most 200 8K sequences fit beside 17.64 GB of bf16 weights per rank
    // in the H100's 85.02 GB as CUDA reports it.
    check(fit > 100 && fit <= 200, `8K-token sequences that fit: ${fit}`);
    for (const k of ['ttft', 'tpot', 'tps']) check(/\d/.test(await page.textContent(`[data-card="${k}"] .card-value`)), `${k} card has a number`);
    for (const part of ['weights', 'kv_cache', 'workspace', 'free']) check(await page.$(`#summary figure.mem rect[data-part="${part}"]`), `memory bar part ${part}`);
    const weights = Number(await page.getAttribute('#summary figure.mem', 'data-weights'));
    check(Math.abs(weights - 17640734720) < 1, `weights per rank ${weights} (hand: 17,640,734,720 B)`);
    await page.waitForFunction(() => Number(document.querySelector('#sweep')?.dataset.points) > 2, null, { timeout: 120_000 });
    const points = await page.$$eval('#sweep svg circle', (cs) => cs.map((c) => Number(c.getAttribute('data-concurrency'))));
    const rows = await page.$$eval('#sweep tbody tr', (rs) => rs.map((r) => Number(r.getAttribute('data-concurrency'))));
    check(points.length === rows.length && points.join() === rows.join() && points[0] === 1, `one point and one row per concurrency: ${points} / ${rows}`);
    const tps = await page.$$eval('#sweep tbody tr td:last-child', (tds) => tds.map((td) => Number(td.textContent.replace(/,/g, ''))));
    check(tps[tps.length - 1] > tps[0], `throughput rises with concurrency: ${tps}`);
    check(await page.$('#simulation[hidden]'), 'the training step-time section is hidden');
    console.log(`[app-serving] llama3-70b-serve ready in ${ms.toFixed(0)} ms; ${fit} sequences fit; sweep ${points.join(', ')}`);
  });

  await run('rank preview per phase: prefill and decode programs of a rank', async (page) => {
    await page.goto(jobUrl(base, SERVE_JOB));
    await ready(page);
    await page.click('#tab-rank');
    check(await page.isVisible('#phase-picker'), 'phase picker shown for a serving job');
    await page.waitForFunction(() => document.querySelector('#rank-stats')?.dataset.phase === 'decode', null, { timeout: 30_000 });
    const decodeNodes = await page.$$eval('#node-table tbody tr', (r) => r.length);
    await page.selectOption('#rank-phase', 'prefill');
    await page.waitForFunction(() => document.querySelector('#rank-stats')?.dataset.phase === 'prefill', null, { timeout: 30_000 });
    await page.fill('#rank', '1');
    await page.dispatchEvent('#rank', 'change');
    await page.waitForFunction(() => document.querySelector('#rank-stats')?.dataset.rank === '1', null, { timeout: 30_000 });
    check(await page.$eval('#rank-stats', (el) => el.dataset.phase) === 'prefill', 'the phase stays when the rank changes');
    check(decodeNodes > 0, `decode program has nodes (${decodeNodes})`);
    await page.click('#tab-downloads');
    check(/trace\.1\.et/.test(await page.textContent('#dl-rank')), 'the rank download names the rank');
    // The graph of a serving job: forward only, the cache written and read.
    await page.click('#tab-graph');
    await page.waitForSelector('#graph svg [data-op]', { timeout: 30_000 });
    const labels = await page.$$eval('#graph [data-op]', (els) => els.map((el) => el.getAttribute('aria-label') ?? ''));
    check(labels.some((l) => /kv_cache_write/.test(l)) && labels.some((l) => /paged/.test(l)), `decode graph writes and reads the KV cache: ${labels.slice(0, 12)}`);
  });

  await run('DeepSeek-V3 disaggregated example: pools in words, a sweep in multiples of the decode dp, no mixed phase', async (page) => {
    await page.goto(`${base}/`);
    await ready(page);
    await page.selectOption('#job-preset', 'deepseek-v3-serve');
    await page.waitForFunction(() => document.querySelector('#summary')?.dataset.mode === 'inference' && document.body.dataset.state === 'ready', null, { timeout: 120_000 });
    const gpus = await page.textContent('[data-card="gpus"]');
    // Decode pool dp 16 (ep 16), prefill pool dp 8: 24 GPUs.
    check(/24/.test(gpus) && /decode pool 16 ranks/.test(gpus) && /prefill pool 8 ranks/.test(gpus) && /ep 16/.test(gpus), `GPUs card: ${gpus}`);
    check(/decode pool/.test(await page.textContent('[data-card="ttft"]')), 'TTFT includes the KV transfer to the decode pool');
    await page.waitForFunction(() => Number(document.querySelector('#sweep')?.dataset.points) > 2, null, { timeout: 120_000 });
    const cs = await page.$$eval('#sweep tbody tr', (rs) => rs.map((r) => Number(r.getAttribute('data-concurrency'))));
    check(cs.every((c) => c % 16 === 0) && cs.includes(32), `every concurrency a multiple of the decode dp 16, the job's 32 among them: ${cs}`);
    await page.click('#tab-rank');
    await page.waitForFunction(() => document.querySelector('#rank-stats')?.dataset.phase === 'decode', null, { timeout: 60_000 });
    check(await page.$eval('#rank-phase option[value="mixed"]', (o) => o.disabled), 'no mixed iteration in a disaggregated job');
    check(await page.getAttribute('#rank', 'max') === '15', 'decode pool: ranks 0-15');
    await page.selectOption('#rank-phase', 'prefill');
    await page.waitForFunction(() => document.querySelector('#rank-stats')?.dataset.phase === 'prefill', null, { timeout: 60_000 });
    check(await page.getAttribute('#rank', 'max') === '7', 'prefill pool: ranks 0-7');
    // The KV transfer: both pools' ranks, prefill first; a decode-pool rank receives.
    check(!(await page.$eval('#rank-phase option[value="kv_transfer"]', (o) => o.disabled)), 'kv_transfer offered for disaggregated pools');
    await page.selectOption('#rank-phase', 'kv_transfer');
    await page.waitForFunction(() => document.querySelector('#rank-stats')?.dataset.phase === 'kv_transfer', null, { timeout: 60_000 });
    check(await page.getAttribute('#rank', 'max') === '23', 'kv_transfer: 8 prefill + 16 decode ranks');
    await page.fill('#rank', '8');
    await page.dispatchEvent('#rank', 'change');
    await page.waitForFunction(() => document.querySelector('#rank-stats')?.dataset.rank === '8', null, { timeout: 60_000 });
    const groups = await page.textContent('#groups');
    check(/rank 0 of the decode pool/.test(groups), `kv_transfer rank 8 is the decode pool's rank 0: ${groups}`);
  });

  for (const [what, job] of [['a serving job', SERVE_JOB], ['a disaggregated serving job (kv_transfer/ too)', SERVE_DIS_JOB]]) await run(`archive of ${what} equals the native CLI output file for file`, async (page) => {
    await page.goto(jobUrl(base, job));
    await ready(page);
    await page.click('#tab-downloads');
    const [dl] = await Promise.all([page.waitForEvent('download', { timeout: 120_000 }), page.click('#dl-archive')]);
    const zip = unzipSync(new Uint8Array(fs.readFileSync(await dl.path())));
    const want = nativeFiles(job);
    const got = Object.keys(zip).filter((n) => !n.endsWith('/')).sort();
    check(got.join() === [...want.keys()].sort().join(), `archive files ${got} vs the CLI's ${[...want.keys()]}`);
    let traces = 0;
    for (const [name, bytes] of want) {
      if (name.endsWith('summary.json')) {
        check(JSON.stringify(JSON.parse(new TextDecoder().decode(zip[name]))) === JSON.stringify(JSON.parse(new TextDecoder().decode(bytes))), `${name} equals the CLI's`);
        continue;
      }
      check(zip[name].length === bytes.length && zip[name].every((b, i) => b === bytes[i]), `${name} differs from the CLI's`);
      if (name.endsWith('.et')) { traces++; check(decodeTrace(zip[name]).nodes.length > 0, `${name} decodes`); }
    }
    check(traces >= 4, `traces of both phases for both ranks (${traces})`);
    if (job === SERVE_DIS_JOB) check([...want.keys()].filter((n) => n.startsWith('kv_transfer/') && n.endsWith('.et')).length === 8, 'kv_transfer/: 4 prefill + 4 decode ranks');
  });

  await run('serving views at 390 px and under axe-core (WCAG 2.1 AA)', async (page) => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(jobUrl(base, SERVE_JOB));
    await ready(page);
    await page.waitForFunction(() => Number(document.querySelector('#sweep')?.dataset.points) > 0, null, { timeout: 60_000 });
    const widths = {};
    for (const tab of ['summary', 'rank', 'downloads']) {
      await page.click(`#tab-${tab}`);
      await page.waitForTimeout(100);
      widths[tab] = await page.evaluate(() => Math.max(document.documentElement.scrollWidth, document.body.scrollWidth));
    }
    check(Object.values(widths).every((w) => w <= 390), `page widths at 390 px: ${JSON.stringify(widths)}`);
    await page.click('#tab-summary');
    await checkAxe(page, 'the serving summary');
  });
  await run('request mix: classes equal to the engine summary (from the archive), ITL beside TPOT, no NaN; the editor keeps the mix and names a bad class', async (page) => {
    await page.goto(jobUrl(base, SERVE_MIX_JOB));
    await ready(page);
    await page.waitForFunction(() => document.querySelector('#summary')?.dataset.mix === '2', null, { timeout: 60_000 });
    await page.waitForFunction(() => Number(document.querySelector('#sweep')?.dataset.points) > 0, null, { timeout: 60_000 });
    const text = await summaryText(page);
    check(!/NaN|undefined|Infinity/.test(text), `no NaN / undefined on the page: ${text.slice(0, 400)}`);
    // The engine's own summary, as the archive carries it.
    await page.click('#tab-downloads');
    const [dl] = await Promise.all([page.waitForEvent('download', { timeout: 120_000 }), page.click('#dl-archive')]);
    const zip = unzipSync(new Uint8Array(fs.readFileSync(await dl.path())));
    const inf = JSON.parse(new TextDecoder().decode(zip['summary.json'])).inference;
    check(Array.isArray(inf.requests) && inf.requests.length === 2, `engine summary has 2 classes: ${JSON.stringify(inf.requests)}`);
    await page.click('#tab-summary');
    const rows = await page.$$eval('#mix tbody tr', (rs) => rs.map((r) => ({ share: Number(r.querySelector('[data-share]').dataset.share),
      secs: [...r.querySelectorAll('[data-seconds]')].map((td) => Number(td.dataset.seconds)), tokens: r.children[2].textContent })));
    check(rows.length === 2, `one row per class: ${rows.length}`);
    rows.forEach((r, i) => {
      const c = inf.requests[i];
      check(r.share === c.share && r.secs[0] === c.prefill_seconds && r.secs[1] === c.ttft_seconds, `class ${i + 1} row ${JSON.stringify(r)} vs engine ${JSON.stringify(c)}`);
      check(r.tokens === `${c.prompt_tokens.toLocaleString('en')} + ${c.output_tokens.toLocaleString('en')}`, `class ${i + 1} tokens: ${r.tokens}`);
    });
    check(rows[0].share === 0.75 && rows[1].share === 0.25, 'weights 3 : 1 are shares 75 % / 25 %');
    const itl = await page.textContent('[data-card="itl"]');
    check(/\d/.test(await page.textContent('[data-card="itl"] .card-value')) && /prefill/.test(itl), `ITL card: ${itl}`);
    check(inf.itl_seconds > inf.tpot_seconds, `engine: ITL ${inf.itl_seconds} > TPOT ${inf.tpot_seconds} at concurrency 8`);
    check(/mean/.test(await page.textContent('[data-card="max-seqs"]')) && /mean over requests/.test(await page.textContent('[data-card="ttft"]')), 'the fit and TTFT say what they mean under a mix');
    // The editor: the mix survives the form (the job read back is the job given), the fixed lengths are off.
    const job = await page.evaluate(() => window.stagecraftApp.job());
    check(JSON.stringify(job.serving.requests) === JSON.stringify(SERVE_MIX_JOB.serving.requests) && job.serving.prompt_tokens === undefined && job.serving.output_tokens === undefined,
      `the job keeps the mix: ${JSON.stringify(job.serving)}`);
    check(await page.$eval('input[name="serving.prompt_tokens"]', (el) => el.disabled), 'prompt tokens disabled while a mix is given');
    check(await page.inputValue('textarea[name="serving.requests"]') === '1000 100 3\n3000 300 1', 'the mix shown one class a line');
    await checkAxe(page, 'the mix summary');
    // A bad class: the engine's error lands on the mix box, naming the class.
    await page.fill('textarea[name="serving.requests"]', '1000 100 3\n3000 lots');
    await page.waitForFunction(() => document.querySelector('label[data-path="serving.requests"]')?.classList.contains('invalid'), null, { timeout: 30_000 });
    const err = await page.textContent('label[data-path="serving.requests"] .error');
    check(/class 2, output_tokens/.test(err), `error names the class and field: ${err}`);
    // No mix: back to the fixed lengths.
    await page.fill('textarea[name="serving.requests"]', '');
    await page.fill('input[name="serving.prompt_tokens"]', '500');
    await page.fill('input[name="serving.output_tokens"]', '50');
    await ready(page);
    await page.waitForFunction(() => document.querySelector('#summary')?.dataset.mix === '0', null, { timeout: 30_000 });
    const fixed = await page.evaluate(() => window.stagecraftApp.job());
    check(fixed.serving.requests === undefined && fixed.serving.prompt_tokens === 500, `fixed lengths again: ${JSON.stringify(fixed.serving)}`);
    check(!(await page.$('#mix')), 'no mix table without a mix');
  });

  await run('capacity: the latency–rate curve (P99 TTFT and TPOT) with the SLO lines and the capacity point, as the native CLI finds it; the workload\'s percentiles as generate writes them; axe at 1440 and 390 px', async (page) => {
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.goto(jobUrl(base, SERVE_SLO_JOB));
    await ready(page);
    await page.waitForFunction(() => Number(document.querySelector('#capacity')?.dataset.points) > 0, null, { timeout: 120_000 });
    const native = nativeCapacity(SERVE_SLO_JOB);
    const cap = Number(await page.getAttribute('#capacity', 'data-capacity'));
    check(cap === native.capacity_requests_per_second && cap > 0, `capacity ${cap} req/s, native serve-capacity ${native.capacity_requests_per_second}`);
    check(/Capacity: /.test(await page.textContent('#capacity .capacity-result')), 'the capacity in words');
    // 200 requests at that rate arrive in 200 / capacity s; under two P99
    // end-to-end latencies the run is a burst and the view says the
    // capacity is not measured, exactly when the CLI flags it.
    const shortNote = await page.$('#capacity .capacity-short');
    check(Boolean(native.short_run) === (200 / native.capacity_requests_per_second < 2 * native.e2e_seconds_p99_at_capacity) && Boolean(shortNote) === Boolean(native.short_run),
      `short-run note ${Boolean(shortNote)}, native short_run ${native.short_run} (${200 / native.capacity_requests_per_second} s of arrivals, P99 E2E ${native.e2e_seconds_p99_at_capacity} s)`);
    if (shortNote) check(/Not measured/.test(await shortNote.textContent()), 'the note says the capacity is not measured');
    const rows = await page.$$eval('#capacity tbody tr', (rs) => rs.map((r) => Number(r.getAttribute('data-rate'))));
    check(rows.join() === native.curve.map((c) => c.requests_per_second).join(), `one row per rate of the native curve: ${rows}`);
    for (const [metric, target] of [['ttft', SERVE_SLO_JOB.serving.slo.ttft_seconds_p99], ['tpot', SERVE_SLO_JOB.serving.slo.tpot_seconds_p99]]) {
      const chart = `#capacity svg.rate-chart[data-metric="${metric}"]`;
      check(await page.$(chart), `${metric} chart drawn`);
      const slo = await page.$eval(`${chart} line.slo`, (l) => ({ v: Number(l.dataset.slo), y: Number(l.getAttribute('y1')) }));
      check(Math.abs(slo.v - target) < 1e-12, `${metric} SLO line at the job's target ${target}: ${slo.v}`);
      const capLine = await page.$eval(`${chart} line.capacity`, (l) => ({ rate: Number(l.dataset.rate), x: Number(l.getAttribute('x1')) }));
      check(capLine.rate === cap, `${metric}: the capacity line at ${cap}: ${capLine.rate}`);
      const pts = await page.$$eval(`${chart} circle`, (cs) => cs.map((c) => ({ rate: Number(c.dataset.rate), p99: Number(c.dataset.p99), x: Number(c.getAttribute('cx')), y: Number(c.getAttribute('cy')), cls: c.getAttribute('class') })));
      check(pts.length === native.curve.length, `${metric}: one point per rate (${pts.length})`);
      pts.forEach((p, i) => {
        const n = native.curve[i];
        check(p.rate === n.requests_per_second && Math.abs(p.p99 - n[`${metric}_seconds_p99`]) <= 1e-12 * Math.max(1, p.p99), `${metric} point ${i}: ${JSON.stringify(p)} vs native ${JSON.stringify(n)}`);
        // Drawn where it is: under the SLO line (SVG y grows downwards) iff within the target.
        check((p.y >= slo.y - 1e-9) === (n[`${metric}_seconds_p99`] <= target), `${metric} point ${i} (P99 ${n[`${metric}_seconds_p99`]}) on the right side of the line`);
        if (i > 0) check(p.x > pts[i - 1].x, `${metric}: rates grow to the right`);
      });
      const mine = pts.filter((p) => p.cls === 'capacity-point');
      check(mine.length === 1 && mine[0].rate === cap && Math.abs(mine[0].x - capLine.x) < 1e-9, `${metric}: the capacity point on the capacity line: ${JSON.stringify(mine)}`);
    }
    // The workload's percentiles: the engine's summary.json as generate writes it.
    const sum = JSON.parse(new TextDecoder().decode(nativeFiles(SERVE_SLO_JOB).get('summary.json'))).inference;
    for (const m of ['ttft', 'tpot', 'itl', 'e2e', 'queue'])
      for (const k of ['mean', 'p50', 'p90', 'p99']) {
        const shown = Number(await page.getAttribute(`#workload tr[data-metric="${m}_seconds"] td[data-stat="${k}"]`, 'data-seconds'));
        check(shown === sum[`${m}_seconds_${k}`], `workload ${m} ${k}: shown ${shown}, generate's summary.json ${sum[`${m}_seconds_${k}`]}`);
      }
    check(await page.getAttribute('#workload', 'data-requests') === '200', 'the workload\'s 200 requests');
    check(/Goodput/.test(await page.textContent('#workload')), 'goodput shown with SLO targets');
    // KV cache over time: one step per bucket of the summary's 100 (docs/inference.md), from 0 to the makespan.
    const kvPts = (await page.getAttribute('#workload svg.kv-time polygon', 'points')).trim().split(/\s+/);
    check(sum.workload.kv_cache_utilization.length === 100 && kvPts.length === 2 * 100 + 2, `KV cache over time: ${kvPts.length} vertices for ${sum.workload.kv_cache_utilization.length} buckets`);
    // The sweep: TTFT says it has no queueing; a user's rate is 1 / ITL, not 1 / TPOT.
    await page.waitForFunction(() => Number(document.querySelector('#sweep')?.dataset.points) > 1, null, { timeout: 60_000 });
    const heads = await page.$$eval('#sweep thead th', (ths) => ths.map((t) => t.textContent));
    check(heads.includes('TTFT without queueing') && heads.includes('tokens/s per user (1 / ITL)'), `sweep headers: ${heads}`);
    const users = await page.$$eval('#sweep tbody tr', (rs) => rs.map((r) => [Number(r.querySelector('[data-itl]').dataset.itl), Number(r.querySelector('[data-per-user]').dataset.perUser)]));
    check(users.every(([itl, u]) => Math.abs(itl * u - 1) < 1e-9), `per-user tokens/s × ITL = 1: ${JSON.stringify(users)}`);
    check(/without queueing/.test(await page.textContent('[data-card="ttft"]')), 'the TTFT card says it has no queueing');
    await checkAxe(page, 'the capacity curve at 1440 px');
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(100);
    const width = await page.evaluate(() => Math.max(document.documentElement.scrollWidth, document.body.scrollWidth));
    check(width <= 390, `page width at 390 px: ${width}`);
    await checkAxe(page, 'the capacity curve at 390 px');
    // No targets: a hint says how to get the curve.
    await page.goto('about:blank');  // a new hash alone would not reload the app
    await page.goto(jobUrl(base, SERVE_JOB));
    await ready(page);
    await page.waitForFunction(() => document.querySelector('#capacity')?.dataset.points === '0', null, { timeout: 60_000 });
    check(/latency target/.test(await page.textContent('#capacity')), 'without an SLO: how to get the curve');
    check(await page.isVisible('input[name="serving.slo.ttft_seconds_p99"]') && await page.isVisible('select[name="serving.workload.arrival"]'), 'SLO and workload fields in the editor');
    // A target no rate meets: said in words, and the chart's scale holds
    // the lone requests' latencies (no point pinned off scale).
    const unmet = { ...SERVE_SLO_JOB, serving: { ...SERVE_SLO_JOB.serving, slo: { ttft_seconds_p99: 0.000001 } } };
    await page.goto('about:blank');
    await page.goto(jobUrl(base, unmet));
    await ready(page);
    await page.waitForFunction(() => Number(document.querySelector('#capacity')?.dataset.points) > 0, null, { timeout: 120_000 });
    check(/No rate meets the targets/.test(await page.textContent('#capacity .capacity-result')), 'no capacity, in words');
    const off = await page.$$eval('#capacity svg.rate-chart[data-metric="ttft"] circle', (cs) => cs.filter((c) => c.dataset.offScale).length);
    check(off === 0, `no rate meets: every point on the chart's scale (${off} off scale)`);
    // Messages keep ordinary words: the engine's "requests" is not turned
    // into a field label (it named the request mix).
    const burst = { ...SERVE_SLO_JOB, serving: { ...SERVE_SLO_JOB.serving, workload: { arrival: 'burst', seed: 3 } } };
    await page.goto('about:blank');
    await page.goto(jobUrl(base, burst));
    await page.waitForSelector('label[data-path="serving.workload.requests"].invalid', { timeout: 60_000 });
    const burstErr = await page.textContent('label[data-path="serving.workload.requests"] .error');
    check(/requests arriving at once/.test(burstErr) && !/Request mix/.test(burstErr), `burst message in words: ${burstErr}`);
  });

  await run('scheduler fields: a job that sets none has no scheduler key; SGLang\'s admission chosen in the form reaches the engine (preemptions as the native CLI counts them, fewer than greedy\'s)', async (page) => {
    await page.goto(jobUrl(base, SERVE_SLO_JOB));
    await ready(page);
    const plain = await page.evaluate(() => window.stagecraftApp.job());
    check(plain.serving.scheduler === undefined && plain.serving.gpu_memory_utilization === undefined, `no scheduler settings unless given: ${JSON.stringify(plain.serving)}`);
    await page.goto('about:blank');
    await page.goto(jobUrl(base, SERVE_BURST_JOB));
    await ready(page);
    const nativePreemptions = (job) => JSON.parse(new TextDecoder().decode(nativeFiles(job).get('summary.json'))).inference.workload.preemptions;
    const greedy = nativePreemptions(SERVE_BURST_JOB);
    const reserveJob = { ...SERVE_BURST_JOB, serving: { ...SERVE_BURST_JOB.serving, scheduler: { policy: 'prefill_first', admission: 'reserve' } } };
    const reserve = nativePreemptions(reserveJob);
    check(reserve < greedy, `the reserve holds requests back: ${reserve} preemptions against greedy's ${greedy}`);
    const shown = () => page.evaluate(() => {
      const m = /([\d,]+) preemptions/.exec(document.querySelector('[data-card="wl-kv"] .card-note')?.textContent ?? '');
      return m ? Number(m[1].replace(/,/g, '')) : -1;
    });
    await page.waitForFunction(() => document.querySelector('[data-card="wl-kv"]'), null, { timeout: 60_000 });
    check(await shown() === greedy, `greedy: ${await shown()} preemptions shown, the CLI's ${greedy}`);
    check(await page.$eval('select[name="serving.scheduler.policy"]', (el) => el.value) === 'prefill_first', 'the job\'s policy in its select');
    await page.click('fieldset[data-group="serving"] details > summary');  // the advanced fields
    await page.selectOption('select[name="serving.scheduler.admission"]', 'reserve');
    await page.waitForFunction((want) => {
      const m = /([\d,]+) preemptions/.exec(document.querySelector('[data-card="wl-kv"] .card-note')?.textContent ?? '');
      return m && Number(m[1].replace(/,/g, '')) === want;
    }, reserve, { timeout: 60_000 });
    const job = await page.evaluate(() => window.stagecraftApp.job());
    check(job.serving.scheduler.admission === 'reserve' && job.serving.scheduler.policy === 'prefill_first', `the form's scheduler in the job: ${JSON.stringify(job.serving.scheduler)}`);
  });

  // Session 24's audit: "5e" in a number field read as '' (the browser's
  // badInput), so the job silently fell back to the default prompt length.
  await run('a number field holding text that is not a number is an error naming the field, not the default', async (page) => {
    await page.goto(jobUrl(base, SERVE_JOB));
    await ready(page);
    const sel = 'input[name="serving.prompt_tokens"]';
    await page.fill(sel, '');
    await page.type(sel, '5e');
    await page.waitForFunction(() => document.body.dataset.state === 'error', null, { timeout: 30_000 });
    const msg = await page.textContent('[data-path="serving.prompt_tokens"] .error');
    check(/Prompt tokens.* is not a number/.test(msg), `the field's error: ${msg}`);
    check(await page.getAttribute(sel, 'aria-invalid') === 'true', 'the input is marked invalid');
    // Digits again: the error goes, the job has the value typed.
    await page.fill(sel, '1500');
    await ready(page);
    const job = await page.evaluate(() => window.stagecraftApp.job());
    check(job.serving.prompt_tokens === 1500, `the typed value: ${JSON.stringify(job.serving)}`);
    check(!(await page.textContent('[data-path="serving.prompt_tokens"] .error')), 'the error cleared');
  });

  await run('capacity across layouts: one search per tp and replica count as serve-capacity --tp-list --replicas-list, rows streamed as each ends, the best per GPU marked, an impossible layout in words; axe at 1440 and 390 px', async (page) => {
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.goto(jobUrl(base, SERVE_SLO_JOB));
    await ready(page);
    await page.waitForSelector('#layouts-run');
    // Bad lists: the field named, nothing searched.
    await page.fill('#layouts-tp', '0,x');
    await page.click('#layouts-run');
    check(/tp values: 1 to 16 positive whole numbers/.test(await page.textContent('#layouts [role=alert]')), 'a bad tp list is explained');
    check(await page.getAttribute('#layouts-tp', 'aria-invalid') === 'true', 'the tp field marked invalid');
    // Every state the section passes through (rows so far, done) in order.
    await page.evaluate(() => {
      const el = document.getElementById('layouts');
      window.layoutStates = [];
      new MutationObserver(() => {
        const s = `${el.dataset.layouts}/${el.dataset.done}`;
        if (el.dataset.layouts !== undefined && window.layoutStates[window.layoutStates.length - 1] !== s) window.layoutStates.push(s);
      }).observe(el, { attributes: true });
    });
    await page.fill('#layouts-tp', '1, 2,3');
    await page.fill('#layouts-replicas', '1,2');
    await page.click('#layouts-run');
    await page.waitForFunction(() => document.getElementById('layouts')?.dataset.done === '1', null, { timeout: 300_000 });
    const states = await page.evaluate(() => window.layoutStates);
    // Streamed: 0, 1, ... 5 rows while running, then all 6 done.
    check(states.join() === '0/0,1/0,2/0,3/0,4/0,5/0,6/1' || states.join() === '0/0,1/0,2/0,3/0,4/0,5/0,6/0,6/1', `rows appear one search at a time: ${states}`);
    const rows = await page.$$eval('#layouts tbody tr', (rs) => rs.map((r) => ({ tp: Number(r.dataset.tp), replicas: Number(r.dataset.replicas), cap: r.dataset.capacity === undefined ? null : Number(r.dataset.capacity),
      gpus: Number(r.dataset.gpus), error: r.dataset.error === '1', best: r.classList.contains('best'), short: r.dataset.shortRun === '1', text: r.textContent })));
    check(rows.map((r) => `${r.tp}x${r.replicas}`).join() === '1x1,1x2,2x1,2x2,3x1,3x2', `tp outer, replicas inner, as the CLI: ${rows.map((r) => `${r.tp}x${r.replicas}`)}`);
    // tp 3 does not divide Llama 3 8B's 32 heads: refused, in words, per row.
    for (const r of rows.filter((x) => x.tp === 3)) check(r.error && /Not possible: .*\S/.test(r.text) && /3/.test(r.text), `tp 3 refused in its row: ${r.text}`);
    const native = nativeCapacityArgs(SERVE_SLO_JOB, ['--tp-list', '1,2', '--replicas-list', '1,2']).layouts;
    check(native.length === 4, `native: four layouts (${native.length})`);
    native.forEach((n, i) => {
      const r = rows[i];
      check(r.tp === n.tp && r.replicas === n.replicas && r.cap === n.capacity_requests_per_second && r.gpus === n.gpus && !r.error,
        `layout ${n.tp}x${n.replicas}: browser ${r.cap} req/s on ${r.gpus} GPUs, native serve-capacity ${n.capacity_requests_per_second} on ${n.gpus}`);
    });
    // short_run per layout as the native JSON has it (200 requests of a
    // 4-layer model: a burst at the rates found), said in the row and once
    // above the table; by hand: requests / capacity < 2 x P99 E2E.
    native.forEach((n, i) => {
      const byHand = 200 / n.capacity_requests_per_second < 2 * n.e2e_seconds_p99_at_capacity;
      check(rows[i].short === Boolean(n.short_run) && byHand === Boolean(n.short_run) && rows[i].short === /short run: not measured/.test(rows[i].text),
        `layout ${n.tp}x${n.replicas}: short run shown ${rows[i].short}, native ${n.short_run}, by hand ${byHand}`);
    });
    const shortNote = await page.$('#layouts .layouts-short');
    check(Boolean(shortNote) === native.some((n) => n.short_run), `one note above the table when a layout ran short (${Boolean(shortNote)})`);
    // GPUs by hand: tp x replicas.
    check(rows.slice(0, 4).every((r) => r.gpus === r.tp * r.replicas), `GPUs = tp x replicas: ${rows.map((r) => r.gpus)}`);
    // The best: the most requests/s per GPU among the native answers (ties: fewer GPUs).
    let want = -1;
    native.forEach((n, i) => {
      if (!(n.capacity_requests_per_second > 0)) return;
      const b = native[want];
      if (want < 0 || n.capacity_requests_per_second_per_gpu > b.capacity_requests_per_second_per_gpu || (n.capacity_requests_per_second_per_gpu === b.capacity_requests_per_second_per_gpu && n.gpus < b.gpus)) want = i;
    });
    check(want >= 0 && rows.filter((r) => r.best).length === 1 && rows[want].best, `the best row is ${JSON.stringify(native[want])}: ${rows.map((r) => r.best)}`);
    const headline = await page.textContent('#layouts .layouts-best');
    check(headline.includes(`tp ${native[want].tp} × ${native[want].replicas} replica`), `the best in words: ${headline}`);
    check(!/NaN|undefined|Infinity/.test(await page.textContent('#layouts')), 'no NaN in the layouts section');
    await checkAxe(page, 'the capacity across layouts at 1440 px');
    await page.setViewportSize({ width: 390, height: 844 });
    await page.waitForTimeout(100);
    const width = await page.evaluate(() => Math.max(document.documentElement.scrollWidth, document.body.scrollWidth));
    check(width <= 390, `page width at 390 px: ${width}`);
    await checkAxe(page, 'the capacity across layouts at 390 px');
    // Where the most requests/s per GPU is not the most requests/s: Llama 3 8B
    // with 4,000-token prompts under a 1 s P99 TTFT (prefill-bound: tp's
    // all-reduces cost more per GPU as tp grows) — the best is the native
    // answers' most per GPU, not their largest capacity.
    await page.setViewportSize({ width: 1440, height: 900 });
    await page.goto('about:blank');
    await page.goto(jobUrl(base, SERVE_PREFILL_JOB));
    await ready(page);
    await page.waitForSelector('#layouts-run');
    await page.fill('#layouts-tp', '1,2,4,8');
    await page.fill('#layouts-replicas', '1');
    await page.click('#layouts-run');
    await page.waitForFunction(() => document.getElementById('layouts')?.dataset.done === '1', null, { timeout: 300_000 });
    const wide = nativeCapacityArgs(SERVE_PREFILL_JOB, ['--tp-list', '1,2,4,8']).layouts;
    const shown = await page.$$eval('#layouts tbody tr', (rs) => rs.map((r) => ({ tp: Number(r.dataset.tp), cap: Number(r.dataset.capacity), best: r.classList.contains('best') })));
    wide.forEach((n, i) => check(shown[i].tp === n.tp && shown[i].cap === n.capacity_requests_per_second, `tp ${n.tp}: browser ${shown[i].cap} req/s, native ${n.capacity_requests_per_second}`));
    const perGpu = wide.reduce((b, n, i) => (n.capacity_requests_per_second_per_gpu > wide[b].capacity_requests_per_second_per_gpu ? i : b), 0);
    const total = wide.reduce((b, n, i) => (n.capacity_requests_per_second > wide[b].capacity_requests_per_second ? i : b), 0);
    check(perGpu !== total, `the case tells per GPU from total: most per GPU tp ${wide[perGpu].tp}, most in all tp ${wide[total].tp}`);
    check(shown.filter((r) => r.best).length === 1 && shown[perGpu].best, `best = tp ${wide[perGpu].tp} (${wide[perGpu].capacity_requests_per_second_per_gpu} per GPU): ${JSON.stringify(shown)}`);
    // Stop: the search in flight ends, no further one starts.
    await page.fill('#layouts-tp', '1,2');
    await page.fill('#layouts-replicas', '1,2,3,4');
    await page.click('#layouts-run');
    await page.waitForFunction(() => Number(document.getElementById('layouts')?.dataset.layouts) >= 1, null, { timeout: 120_000 });
    check(await page.textContent('#layouts-run') === 'Stop', 'the button is Stop while searching');
    await page.click('#layouts-run');
    await page.waitForFunction(() => document.getElementById('layouts')?.dataset.done === '1', null, { timeout: 120_000 });
    const stopped = Number(await page.getAttribute('#layouts', 'data-layouts'));
    check(stopped >= 1 && stopped < 8 && /of 8 layouts searched/.test(await page.textContent('#layouts .layouts-status')), `stopped after ${stopped} of 8 layouts`);
    check(await page.textContent('#layouts-run') === 'Search layouts', 'the button is back');
  });

  for (const id of ['llama3-8b-serve-mix', 'mixtral-8x7b-serve', 'llama3-70b-serve-workload']) await run(`example ${id} loads and renders: no NaN, no page error, the sweep drawn`, async (page) => {
    await page.goto(`${base}/`);
    await ready(page);
    await page.selectOption('#job-preset', id);
    await page.waitForFunction(() => document.querySelector('#summary')?.dataset.mode === 'inference' && document.body.dataset.state === 'ready', null, { timeout: 180_000 });
    await page.waitForFunction(() => Number(document.querySelector('#sweep')?.dataset.points) > 1, null, { timeout: 180_000 });
    const text = await summaryText(page);
    check(!/NaN|undefined|Infinity/.test(text), `no NaN / undefined: ${text.slice(0, 400)}`);
    for (const k of ['ttft', 'tpot', 'itl', 'tps', 'max-seqs']) check(/\d/.test(await page.textContent(`[data-card="${k}"] .card-value`)), `${k} card has a number`);
    if (id === 'llama3-70b-serve-workload') {
      // Issue 26's workload: 10 requests/s for 600 s is about 6,000 requests;
      // above this deployment's capacity at the targets, so P99 TTFT misses 1 s.
      await page.waitForFunction(() => Number(document.querySelector('#capacity')?.dataset.points) > 0, null, { timeout: 180_000 });
      const n = Number(await page.getAttribute('#workload', 'data-requests'));
      check(n > 5700 && n < 6300, `about 6,000 requests: ${n}`);
      const cap = Number(await page.getAttribute('#capacity', 'data-capacity'));
      check(cap > 0 && cap < 10, `capacity below the workload's 10 requests/s: ${cap}`);
      const p99 = Number(await page.getAttribute('#workload tr[data-metric="ttft_seconds"] td[data-stat="p99"]', 'data-seconds'));
      check(p99 > 1, `overloaded: P99 TTFT ${p99} s past the 1 s target`);
      check(!/NaN|undefined|Infinity/.test(await page.textContent('#capacity')), 'no NaN in the capacity section');
    } else if (id === 'mixtral-8x7b-serve') {
      const gpus = await page.textContent('[data-card="gpus"]');
      check(/^GPUs8/.test(gpus) && /tp 8/.test(gpus) && /ep 8/.test(gpus), `8 GPUs, tp 8, experts over ep 8: ${gpus}`);
    } else {
      check(await page.$$eval('#mix tbody tr', (rs) => rs.length) === 2, 'two classes in the table');
    }
  });
  return results;
}

// Alone: node tests/js/app-serving.mjs [case name prefix]
if (import.meta.url === `file://${process.argv[1]}`) {
  const { runCasesAlone } = await import('./launch.mjs');
  await runCasesAlone(servingCases, path.join(path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..'), 'build/web'), process.argv[2]);
}
