// End-to-end cases of the web app (build/web) in headless Chromium, run by
// run-browser.mjs: presets, parallelism edits, inline errors, rank by
// coordinates, the graph's why, the Chakra archive (unzipped and compared
// byte for byte with the native CLI's output for the same job) and the
// Perfetto export.
import fs from 'node:fs';
import path from 'node:path';
import { unzipSync } from 'fflate';
import { decodeTrace } from '../../web/src/lib/chakra.js';
import { IDENTITY_JOB } from './suite/jobs.mjs';
import { uxCases } from './app-ux.mjs';
import { servingCases } from './app-serving.mjs';
import { planCases } from './app-plan.mjs';
import { learnCases } from './app-learn.mjs';

const ready = (page) => page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout: 60_000 });
const jobUrl = (base, job) => `${base}/#job=${encodeURIComponent(JSON.stringify(job))}`;
function check(cond, what) { if (!cond) throw new Error(what); }

export async function appCases(context, base, fixturesDir) {
  const results = [];
  const run = async (name, fn) => {
    const t0 = performance.now();
    const page = await context.newPage();
    try {
      await fn(page);
      results.push({ suite: 'app', name, status: 'pass', message: '', ms: performance.now() - t0 });
    } catch (e) {
      results.push({ suite: 'app', name, status: 'fail', message: String(e && e.stack ? e.stack : e), ms: performance.now() - t0 });
    } finally {
      await page.close();
    }
  };

  await run('preset, parallelism change, inline error, URL sharing', async (page) => {
    await page.goto(`${base}/`);
    await ready(page);
    await page.selectOption('#job-preset', 'llama3-8b');
    await page.waitForFunction(() => document.querySelector('#summary')?.dataset.worldSize === '16' && document.body.dataset.state === 'ready', null, { timeout: 60_000 });
    await page.fill('input[name="parallel.dp"]', '4');
    await page.waitForFunction(() => document.querySelector('#summary')?.dataset.worldSize === '8' && document.body.dataset.state === 'ready', null, { timeout: 60_000 });
    check(decodeURIComponent(page.url()).includes('"dp":4'), `URL carries the job: ${page.url()}`);
    await page.fill('input[name="parallel.tp"]', '3');
    await page.waitForSelector('label[data-path="parallel.tp"].invalid', { timeout: 20_000 });
    const text = await page.textContent('label[data-path="parallel.tp"] .error');
    const code = await page.getAttribute('label[data-path="parallel.tp"] .error', 'data-code');
    check(code === 'not_divisible' && /divide/.test(text), `tp error: ${code}: ${text}`);
    // The shared URL reproduces the job (tp 3 included) in a fresh page.
    const page2 = await context.newPage();
    await page2.goto(page.url());
    await page2.waitForSelector('label[data-path="parallel.tp"].invalid', { timeout: 30_000 });
    await page2.close();
  });

  await run('graph view explains a collective', async (page) => {
    await page.goto(jobUrl(base, { ...IDENTITY_JOB, parallel: { dp: 2, tp: 2, sequence_parallel: true } }));
    await ready(page);
    await page.click('#tab-graph');
    await page.waitForSelector('#graph svg [data-op]', { timeout: 30_000 });
    const why = await page.textContent('#why-list');
    check(/reduce_scatter/.test(why) && /partial sum over tp/.test(why), `why list: ${why.slice(0, 300)}`);
    await page.click('#why-list button');
    const details = await page.textContent('#op-details');
    check(/Why a/.test(details), `details: ${details.slice(0, 200)}`);
    check(await page.$eval('#stage-picker', (el) => el.hidden), 'no stage picker without pipeline parallelism');
  });

  await run('graph view: pick a pipeline stage (loss, DeepSeek-V3 MoE layer on stage 1), from the rank view too', async (page) => {
    // DeepSeek-V3 cut to 4 layers (the first 3 dense) over pp 2 x dp 4, ep 4:
    // stage 0 holds dense layers 0-1, stage 1 dense layer 2, MoE layer 3, the loss.
    const job = { model: { preset: 'deepseek-v3', num_layers: 4 }, parallel: { dp: 4, pp: 2, ep: 4, expert_tp: 1 },
      training: { seq_len: 64, micro_batch_size: 1, global_batch_size: 8 } };
    await page.goto(jobUrl(base, job));
    await ready(page);
    await page.click('#tab-graph');
    await page.waitForSelector('#graph svg [data-op]', { timeout: 30_000 });
    check(!(await page.$eval('#stage-picker', (el) => el.hidden)), 'stage picker shown with pp 2');
    const options = await page.$$eval('#stage option', (os) => os.map((o) => o.textContent));
    check(options.length === 2 && /^stage 0 of 2: embedding, layers 0–1$/.test(options[0]) &&
      /^stage 1 of 2: layers 2–3 \(MoE: 3\), output layer \+ loss$/.test(options[1]), `stage options: ${options}`);
    const note = await page.textContent('#stage-note');
    check(/rank role/.test(note) && /4 ranks with pp coordinate 0 run this graph/.test(note), `stage note: ${note}`);
    const layers0 = await page.$$eval('#layer option', (os) => os.map((o) => o.value));
    check(layers0.join() === '0,1,-1,-2', `stage 0 layers (and the whole-stage view): ${layers0}`);

    // The rank view links a stage-1 rank to its stage. A rank that is not
    // an integer is said to be, not read as another rank.
    await page.click('#tab-rank');
    await page.fill('#rank', '1.5');
    await page.dispatchEvent('#rank', 'change');
    await page.waitForSelector('#rank-picker [data-path="rank"].invalid', { timeout: 20_000 });
    check(/must be an integer/.test(await page.textContent('#rank-picker [data-path="rank"] .error')), 'rank 1.5 refused in words');
    await page.fill('#rank', '4');
    await page.dispatchEvent('#rank', 'change');
    await page.waitForFunction(() => document.querySelector('#rank-stats')?.dataset.rank === '4', null, { timeout: 20_000 });
    check(await page.getAttribute('#rank-stage', 'data-stage') === '1', 'rank 4 is on stage 1');
    check(/output layer \+ loss/.test(await page.textContent('#rank-stage')), 'rank stage label');
    await page.click('#show-rank-stage');
    await page.waitForFunction(() => [...document.querySelectorAll('#layer option')].some((o) => o.value === '3'), null, { timeout: 30_000 });
    check(await page.getAttribute('#tab-graph', 'aria-selected') === 'true', 'the link opens the graph view');
    check(await page.inputValue('#stage') === '1', 'stage 1 selected');
    const layers1 = await page.$$eval('#layer option', (os) => os.map((o) => o.textContent));
    check(layers1.length === 4 && layers1[1] === 'layer 3 (MoE)' && /output layer \+ loss/.test(layers1[2]) && /whole stage/.test(layers1[3]), `stage 1 layers: ${layers1}`);

    await page.selectOption('#layer', '3');
    await page.waitForSelector('#graph svg [data-kind="remesh"]', { timeout: 30_000 });
    const why = await page.textContent('#why-list');
    check(/all_to_all · ep/.test(why) && /MoE token dispatch/.test(why), `stage 1 why list: ${why.slice(0, 400)}`);
    await page.focus('#graph svg [data-kind="remesh"]');  // focus pans the view to it
    await page.keyboard.press('Enter');
    check(/What is a remesh\?/.test(await page.textContent('#op-details')), 'remesh details');
    check(/remesh/.test(await page.textContent('#graph-legend-axes')), 'legend explains remesh');

    await page.selectOption('#layer', '-1');
    await page.waitForFunction(() => [...document.querySelectorAll('#graph [data-op]')].some((el) => /^loss\b/.test(el.getAttribute('aria-label') ?? '')), null, { timeout: 10_000 });

    // Back to stage 0: no MoE layer there, the embedding instead of the loss.
    await page.selectOption('#stage', '0');
    await page.waitForFunction(() => [...document.querySelectorAll('#layer option')].map((o) => o.value).join() === '0,1,-1,-2', null, { timeout: 30_000 });
    // The ELK layout runs in its own worker: the stage-0 drawing replaces
    // stage 1's asynchronously, after the layer list.
    await page.waitForFunction(() => [...document.querySelectorAll('#graph [data-op]')].some((el) => /^embedding/.test(el.getAttribute('aria-label') ?? '')), null, { timeout: 30_000 })
      .catch(() => {});
    const labels = await page.$$eval('#graph [data-op]', (els) => els.map((el) => el.getAttribute('aria-label') ?? ''));
    check(labels.some((l) => /^embedding/.test(l)) && !labels.some((l) => /^loss\b/.test(l)), `stage 0 outside layers: ${labels.slice(0, 10)}`);
  });

  await run('rank by coordinates, groups, timeline, Perfetto export', async (page) => {
    await page.goto(jobUrl(base, IDENTITY_JOB));
    await ready(page);
    await page.click('#tab-rank');
    await page.fill('input[name="coord-tp"]', '1');
    await page.fill('input[name="coord-dp"]', '1');
    await page.dispatchEvent('input[name="coord-dp"]', 'change');
    await page.waitForFunction(() => document.querySelector('#rank-stats')?.dataset.rank === '3', null, { timeout: 20_000 });
    check(await page.inputValue('#rank') === '3', 'rank index follows the coordinates');
    const groups = await page.textContent('#groups');
    check(/\[2, 3\]/.test(groups) && /\[1, 3\]/.test(groups), `groups: ${groups}`);
    await page.fill('input[name="coord-tp"]', '5');
    await page.dispatchEvent('input[name="coord-tp"]', 'change');
    await page.waitForSelector('#rank-picker [data-path="coords.tp"].invalid', { timeout: 10_000 });
    await page.fill('#node-search', 'all_gather');
    await page.click('#tab-downloads');
    const [dl] = await Promise.all([page.waitForEvent('download'), page.click('#dl-perfetto')]);
    const json = JSON.parse(fs.readFileSync(await dl.path(), 'utf8'));
    const xs = json.traceEvents.filter((e) => e.ph === 'X');
    check(xs.length > 0 && xs.every((e) => e.pid === 3 && typeof e.ts === 'number' && typeof e.dur === 'number' && [1, 2].includes(e.tid)), 'Perfetto X events');
    check(json.traceEvents.some((e) => e.ph === 'M' && e.args?.name === 'communication stream'), 'thread names');
  });

  await run('memory view: each rank shows its own pipeline stage\'s live-buffer curve', async (page) => {
    // pp 2: stage 1 holds the output layer and the loss, stage 0 the
    // embedding, so their resident state and activation curves differ.
    await page.goto(jobUrl(base, { model: { preset: 'gpt3-1.7b', num_layers: 4 }, parallel: { pp: 2 },
      training: { seq_len: 256, micro_batch_size: 1, global_batch_size: 4 } }));
    await ready(page);
    await page.click('#tab-rank');
    const peakOf = async (rank) => {
      await page.fill('#rank', String(rank));
      await page.dispatchEvent('#rank', 'change');
      await page.waitForFunction((r) => document.querySelector('#memory')?.dataset.rank === String(r), rank, { timeout: 20_000 });
      return Number(await page.$eval('#memory', (el) => el.dataset.peak));
    };
    const p0 = await peakOf(0), p1 = await peakOf(1);
    check(p0 > 0 && p1 > 0, `peaks ${p0} ${p1}`);
    check(p0 !== p1, `stage 0 and stage 1 peaks differ: ${p0} vs ${p1}`);
  });

  await run('Chakra archive equals the native CLI output', async (page) => {
    await page.goto(jobUrl(base, IDENTITY_JOB));
    await ready(page);
    await page.click('#tab-downloads');
    const [dl] = await Promise.all([page.waitForEvent('download', { timeout: 60_000 }), page.click('#dl-archive')]);
    const files = unzipSync(new Uint8Array(fs.readFileSync(await dl.path())));
    const names = Object.keys(files).sort();
    check(names.includes('comm_groups.json') && names.includes('summary.json') && names.filter((n) => n.endsWith('.et')).length === 4, `archive: ${names}`);
    // Members in the order of the engine's archive list (core/api/export.h, layout "files").
    check(Object.keys(files).join(' ') === 'trace.0.et trace.1.et trace.2.et trace.3.et comm_groups.json summary.json',
      `zip order: ${Object.keys(files)}`);
    for (let r = 0; r < 4; r++) {
      const t = decodeTrace(files[`trace.${r}.et`]);
      check(t.metadata.rank === r && t.nodes.length > 0, `trace.${r}.et decodes`);
    }
    const manifest = JSON.parse(fs.readFileSync(path.join(fixturesDir, 'manifest.json'), 'utf8'));
    if (!manifest.available) return;
    // The zip is the engine's archive list: every file byte for byte, summary.json included.
    check(names.join(' ') === [...manifest.files].sort().join(' '), `zip members ${names} = the CLI's files ${manifest.files}`);
    for (const name of manifest.files) {
      const want = new Uint8Array(fs.readFileSync(path.join(fixturesDir, name)));
      const got = files[name];
      check(got && got.length === want.length && got.every((b, i) => b === want[i]), `${name} differs from the CLI's`);
    }
  });
  await run('MoE and HSDP: new fields in the form, examples run and explain ep / remesh / dp_shard', async (page) => {
    await page.goto(`${base}/`);
    await ready(page);
    // The fields come from job-schema.ts: parallelism and the model's MoE / MLA settings.
    for (const name of ['parallel.ep', 'parallel.expert_tp', 'parallel.shard_group', 'model.num_experts', 'model.experts_per_token',
      'model.moe_ffn_hidden', 'model.shared_experts', 'model.first_dense_layers', 'model.capacity_factor', 'model.router_bias',
      'model.kv_lora_rank', 'model.q_lora_rank', 'model.qk_rope_head_dim', 'model.v_head_dim', 'model.mtp_num_layers']) {
      check(await page.$(`#job-form [name="${name}"]`), `form field ${name}`);
      const help = await page.getAttribute(`#job-form label[data-path="${name}"]`, 'title');
      check(help && help.length > 20, `${name} has an explanation: ${help}`);
    }
    check(/all-to-all/.test(await page.getAttribute('label[data-path="parallel.ep"]', 'title')), 'ep help names the all-to-all');

    // DeepSeek-V3 cut to 4 layers: MLA + 256 experts, ep 8 over tp 2 x dp 8.
    let t0 = performance.now();
    await page.selectOption('#job-preset', 'deepseek-v3-small');
    await page.waitForFunction(() => document.querySelector('#summary')?.dataset.worldSize === '16' && document.body.dataset.state === 'ready', null, { timeout: 60_000 });
    const dsMs = performance.now() - t0;
    check(await page.inputValue('input[name="parallel.ep"]') === '8', 'ep written into the form');
    check(await page.inputValue('input[name="model.first_dense_layers"]') === '1', 'first_dense_layers written into the form');
    check(decodeURIComponent(page.url()).includes('"ep":8'), `URL carries ep: ${page.url()}`);
    let summary = await page.textContent('#summary');
    check(/Active parameters/.test(summary) && /etp 1 × ep 8 × edp 2/.test(summary), `summary: ${summary.slice(0, 400)}`);
    check(await page.$('#summary .axis-glossary [data-axis="ep"]'), 'summary explains the ep axis');
    await page.click('#tab-graph');
    await page.waitForSelector('#graph svg [data-op]', { timeout: 30_000 });
    await page.selectOption('#layer', '1');  // layer 0 is dense, 1 is MoE
    await page.waitForSelector('#graph svg [data-kind="remesh"]', { timeout: 30_000 });
    const why = await page.textContent('#why-list');
    check(/all_to_all · ep/.test(why) && /remesh/.test(why), `why list: ${why.slice(0, 400)}`);
    const legend = await page.textContent('#graph-legend-axes');
    check(/ep = 8/.test(legend) && /edp = 2/.test(legend) && /remesh/.test(legend), `axis legend: ${legend}`);
    await page.focus('#graph svg [data-kind="remesh"]');  // focus pans the view to it
    await page.keyboard.press('Enter');
    check(/What is a remesh\?/.test(await page.textContent('#op-details')), 'remesh details');
    await page.click('#tab-rank');
    await page.waitForSelector('#groups li[data-axis="ep"]', { timeout: 30_000 });
    // etp 1 x ep 8 x edp 2 re-divide the 16 ranks, inner first: ep groups are 8 consecutive ranks.
    const ep = await page.textContent('#groups li[data-axis="ep"]');
    check(/all-to-all/.test(ep) && /\[0, 1, 2, 3, 4, 5, 6, 7\]/.test(ep), `rank 0's ep group: ${ep}`);

    // Mixtral 8x7B, the full model on 32 GPUs.
    await page.click('#tab-summary');
    t0 = performance.now();
    await page.selectOption('#job-preset', 'mixtral-8x7b');
    await page.waitForFunction(() => document.querySelector('#summary')?.dataset.worldSize === '32' && document.body.dataset.state === 'ready', null, { timeout: 60_000 });
    const mixMs = performance.now() - t0;
    summary = await page.textContent('#summary');
    check(/etp 2 × ep 4 × edp 1/.test(summary) && /top-2 of 8/.test(summary), `Mixtral summary: ${summary.slice(0, 400)}`);

    // The same parallelism on a dense model: the engine's error lands on ep.
    await page.selectOption('select[name="model.preset"]', 'llama3-8b');
    await page.waitForSelector('label[data-path="parallel.ep"].invalid', { timeout: 30_000 });
    const err = await page.textContent('label[data-path="parallel.ep"] .error');
    const code = await page.getAttribute('label[data-path="parallel.ep"] .error', 'data-code');
    check(/Experts \(E\)/.test(err) && code === 'invalid_argument', `ep error: ${code}: ${err}`);

    // HSDP: ZeRO-3 over a shard group of 4 of dp 8.
    await page.selectOption('#job-preset', 'teach-hsdp');
    await page.waitForFunction(() => document.querySelector('#summary')?.dataset.worldSize === '8' && document.body.dataset.state === 'ready', null, { timeout: 60_000 });
    check(/shard 4 × replicate 2/.test(await page.textContent('#summary')), 'HSDP card');
    await page.click('#tab-rank');
    await page.waitForSelector('#groups li[data-axis="dp_replicate"]', { timeout: 30_000 });
    check(/\[0, 1, 2, 3\]/.test(await page.textContent('#groups li[data-axis="dp_shard"]')), 'rank 0 shard group');
    console.log(`[app] example jobs ready in the worker: deepseek-v3-small ${dsMs.toFixed(0)} ms, mixtral-8x7b ${mixMs.toFixed(0)} ms`);
  });
  await run('recompute modules: a list field read into the job, shared by URL, its errors on the field', async (page) => {
    await page.goto(`${base}/`);
    await ready(page);
    await page.selectOption('#job-preset', 'llama3-8b');  // selective recompute already
    await page.waitForFunction(() => document.querySelector('#summary')?.dataset.worldSize === '16' && document.body.dataset.state === 'ready', null, { timeout: 60_000 });
    const help = await page.getAttribute('label[data-path="training.recompute_modules"]', 'title');
    check(/layernorm/.test(help) && /core_attn/.test(help), `help names the modules: ${help}`);
    await page.click('fieldset[data-group="training"] details > summary');  // the advanced fields
    await page.fill('input[name="training.recompute_modules"]', 'layernorm, moe_act');
    await page.waitForFunction(() => decodeURIComponent(location.href).includes('"recompute_modules":["layernorm","moe_act"]') && document.body.dataset.state === 'ready', null, { timeout: 60_000 });
    // The shared URL puts the list back into the field.
    const page2 = await context.newPage();
    await page2.goto(page.url());
    await page2.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout: 60_000 });
    check(await page2.inputValue('input[name="training.recompute_modules"]') === 'layernorm,moe_act', 'list written back into the form');
    await page2.close();
    // A name the engine does not know: its error lands on the field, with the entry's place.
    await page.fill('input[name="training.recompute_modules"]', 'layernorm,attn');
    await page.waitForSelector('label[data-path="training.recompute_modules"].invalid', { timeout: 30_000 });
    const err = await page.textContent('label[data-path="training.recompute_modules"] .error');
    check(/unknown module "attn"/.test(err) && /entry 2/.test(err), `recompute_modules error: ${err}`);
  });
  // Issue 14: the app tried as a new user would.
  results.push(...await uxCases(context, base));
  // Issue 16: inference mode.
  results.push(...await servingCases(context, base));
  results.push(...await planCases(context, base));
  // Issue 25: compare, lessons, fit and freshness marks, phone layout.
  results.push(...await learnCases(context, base));
  return results;
}
