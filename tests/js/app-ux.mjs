// The web app tried as a new user would (issue 14), in headless Chromium:
// typing into a field while the engine is busy (superseded work dropped,
// final-summary latency printed), an engine abort, a pasted HF config, a
// 390 px phone, bytes on the wire, memory views, the ELK graph, messages in
// words, an axe-core WCAG 2.1 AA audit and keyboard tabs, the first-visit
// panel, loading a model by Hugging Face id from a fixture hub on
// 127.0.0.1, and the gzip-served wasm module. Run by app-cases.mjs.
import http from 'node:http';
import path from 'node:path';
import { handler as serveApp } from '../../web/serve.mjs';
import { REPO_ROOT } from './native.mjs';
import { caseRunner, check, checkAxe } from './app-runner.mjs';

const WEB_DIR = path.join(REPO_ROOT, 'build/web');

const ready = (page, timeout = 60_000) => page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout });
const jobUrl = (base, job, query = '') => `${base}/${query}#job=${encodeURIComponent(JSON.stringify(job))}`;
const TEACH = { model: { preset: 'gpt3-1.7b', num_layers: 2 }, parallel: { dp: 2, tp: 2, sequence_parallel: true }, training: { seq_len: 256, micro_batch_size: 1, global_batch_size: 4 } };

// A Llama-shaped config.json (transformers' field names).
const HF_CONFIG = { architectures: ['LlamaForCausalLM'], model_type: 'llama', hidden_size: 1024, intermediate_size: 2816,
  num_attention_heads: 16, num_key_value_heads: 4, num_hidden_layers: 4, vocab_size: 32000, max_position_embeddings: 2048,
  rms_norm_eps: 1e-5, tie_word_embeddings: false, hidden_act: 'silu' };

async function listen(server) {
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return `http://127.0.0.1:${server.address().port}`;
}

// only: run the cases whose name starts with it (while developing).
export async function uxCases(context, base, only = '') {
  const results = [];
  const run = caseRunner(context, 'app-ux', results, only);

  await run('1. typing into dp while the engine is busy: superseded jobs never shown, the final summary arrives (latency printed)', async (page) => {
    // Llama 3 70B, 80 layers, tp 8 × pp 8, global batch 2048. Typing "1024"
    // into dp passes dp 1 (2,048 micro-batches per rank: minutes of engine
    // time), 10 and 102 (not divisors), then 1024 (2 per rank).
    const job = { model: { preset: 'llama3-70b', num_layers: 80 }, parallel: { dp: 64, tp: 8, pp: 8 }, training: { global_batch_size: 2048 } };
    await page.goto(jobUrl(base, job));
    await ready(page, 120_000);
    await page.evaluate(() => {
      const log = (window.__shown = []);
      const el = document.querySelector('#summary');
      new MutationObserver(() => log.push({ t: performance.now(), job: el.dataset.job ?? '', world: el.dataset.worldSize }))
        .observe(el, { attributes: true, attributeFilter: ['data-job'] });
      window.__inputs = [];
      document.querySelector('#job-form').addEventListener('input', () => window.__inputs.push(performance.now()));
    });
    const spawned0 = await page.evaluate(() => window.stagecraftApp.engine().spawned);
    const dp = 'input[name="parallel.dp"]';
    await page.fill(dp, '');
    // 300 ms between keys: longer than the editor's 200 ms debounce, so
    // every intermediate job reaches the engine.
    await page.type(dp, '1', { delay: 0 });
    await page.waitForTimeout(450);
    // dp 1 is now running in the engine — or, with the core's work budget,
    // already refused as too large (17M nodes); either way nothing piles up.
    const mid = await page.evaluate(() => document.body.dataset.state);
    if (mid === 'working') {
      check(await page.$eval('#summary', (el) => el.classList.contains('stale')), 'the previous summary is marked stale');
      check(/working/.test(await page.textContent('#job-status')), 'a working… line');
    } else {
      check(mid === 'error' && await page.getAttribute('#too-big-job', 'data-code') === 'too_large', `dp 1: working, or refused as too large (state ${mid})`);
    }
    await page.type(dp, '024', { delay: 300 });
    await page.waitForFunction(() => (document.querySelector('#summary').dataset.job ?? '').includes('"dp":1024') && document.body.dataset.state === 'ready', null, { timeout: 60_000 });
    const { shown, last } = await page.evaluate(() => ({ shown: window.__shown, last: window.__inputs[window.__inputs.length - 1] }));
    const stale = shown.filter((s) => !s.job.includes('"dp":1024'));
    check(stale.length === 0, `only the final job's summary is shown after the edits began: ${JSON.stringify(stale.map((s) => s.world))}`);
    const final = shown.find((s) => s.job.includes('"dp":1024'));
    check(final && final.world === String(1024 * 64), `final summary: ${JSON.stringify(final)}`);
    const spawned = await page.evaluate(() => window.stagecraftApp.engine().spawned);
    check(mid !== 'working' || spawned > spawned0, `the busy worker was replaced (${spawned0} -> ${spawned})`);
    console.log(`[app-ux] typing 1024 into dp (llama3-70b, tp 8, pp 8, gbs 2048): final summary ${(final.t - last).toFixed(0)} ms after the last key; dp 1 was ${mid === 'working' ? 'running' : 'refused as too large'}; ${spawned - spawned0} workers replaced`);

    // A job within the budget (dp 8: 256 micro-batches per rank, about a
    // second of engine time), superseded by typing 512 while it runs. The
    // worker is held 10 s before each request (selfTestHold), so the job is
    // still running whatever the machine's speed: checked 700 ms after the
    // edit (past the editor's 200 ms debounce); the replacement worker starts
    // without the hold.
    // The dp 1024 job's graph and simulation requests follow its summary
    // (chained without a frame between them): wait until the worker is idle,
    // or the next edit would replace the held worker.
    // The worker is idle for a moment between the graph and the simulation
    // (the graph's layout runs on the page): wait for the simulation's answer
    // too (#simulation[data-fresh=current]), the last request of a job.
    await page.waitForFunction(() => document.body.dataset.state === 'ready' && window.stagecraftApp.engine().busy === 0 &&
      document.querySelector('#simulation')?.dataset.fresh === 'current', null, { timeout: 60_000 });
    await page.evaluate(() => { window.__shown.length = 0; window.__inputs.length = 0; });
    await page.evaluate(() => window.stagecraftApp.selfTestHold(10_000));
    check(await page.evaluate(() => window.stagecraftApp.engine().busy) === 0, 'nothing else queued behind the hold');
    const spawned1 = await page.evaluate(() => window.stagecraftApp.engine().spawned);
    await page.fill(dp, '8');
    await page.waitForTimeout(700);
    check(await page.evaluate(() => document.body.dataset.state) === 'working', 'dp 8 is running');
    check(await page.$eval('#summary', (el) => el.classList.contains('stale')), 'the dp 1024 summary is marked stale meanwhile');
    check(/working/.test(await page.textContent('#job-status')), 'a working… line');
    await page.fill(dp, '');
    await page.type(dp, '512', { delay: 300 });
    await page.waitForFunction(() => (document.querySelector('#summary').dataset.job ?? '').includes('"dp":512') && document.body.dataset.state === 'ready', null, { timeout: 60_000 });
    const r2 = await page.evaluate(() => ({ shown: window.__shown, last: window.__inputs[window.__inputs.length - 1] }));
    check(r2.shown.every((x) => x.job.includes('"dp":512')), `dp 8's summary never shown: ${JSON.stringify(r2.shown.map((x) => x.world))}`);
    const spawned2 = await page.evaluate(() => window.stagecraftApp.engine().spawned);
    check(spawned2 > spawned1, `the worker running dp 8 was replaced (${spawned1} -> ${spawned2})`);
    console.log(`[app-ux] dp 8 (256 micro-batches per rank, running) superseded by typing 512: final summary ${(r2.shown[0].t - r2.last).toFixed(0)} ms after the last key`);
  });

  await run('2. an engine abort: the worker is replaced, the message is in words next to the job, editing goes on', async (page) => {
    await page.goto(jobUrl(base, TEACH));
    await ready(page);
    const spawned0 = await page.evaluate(() => window.stagecraftApp.engine().spawned);
    const err = await page.evaluate(() => window.stagecraftApp.selfTestAbort());
    check(err.code === 'engine_aborted', `abort code: ${JSON.stringify(err)}`);
    await page.waitForSelector('#form-error[data-code="engine_aborted"]', { timeout: 10_000 });
    const text = await page.textContent('#form-error');
    check(/ran out of memory/.test(text) && /raise data parallel/.test(text), `message: ${text}`);
    check(/too large|out of memory/.test(await page.textContent('#summary')), 'the summary area says so too');
    check(await page.evaluate(() => window.stagecraftApp.engine().spawned) === spawned0 + 1, 'a fresh worker');
    await page.fill('input[name="parallel.dp"]', '4');
    await page.fill('input[name="training.global_batch_size"]', '8');
    await page.waitForFunction(() => document.querySelector('#summary')?.dataset.worldSize === '8' && document.body.dataset.state === 'ready', null, { timeout: 30_000 });
    check((await page.textContent('#form-error')).trim() === '', 'the message goes once the engine answers again');
  });

  await run('2b. a big-but-valid job (Llama 3 70B, dp 1, global batch 4,096) is refused in words, quickly; the app goes on', async (page) => {
    const job = { model: { preset: 'llama3-70b' }, parallel: { dp: 1, tp: 8, pp: 8 }, training: { global_batch_size: 4096 } };
    const t0 = performance.now();
    await page.goto(jobUrl(base, job));
    await page.waitForSelector('#too-big-job', { timeout: 60_000 });
    const ms = performance.now() - t0;
    const code = await page.getAttribute('#too-big-job', 'data-code');
    const text = await page.textContent('#too-big-job');
    check(code === 'too_large', `code: ${code}: ${text}`);
    // What to change, once (the engine's message names the knobs; the hint adds only the CLI's way out).
    check(/too large/i.test(text) && /a larger Data parallel \(dp\)/.test(text) && /CLI|Downloads/.test(text), `message: ${text}`);
    check((text.match(/micro-batches/g) ?? []).length <= 2 && !/raise data parallel/.test(text), `advice not repeated: ${text}`);
    check(await page.evaluate(() => document.body.dataset.state) === 'error', 'error state, not stuck working');
    const near = await page.textContent('#job-form');
    check(/too large/i.test(near), 'the message is next to the job too');
    console.log(`[app-ux] Llama 3 70B, dp 1, global batch 4,096: refused in ${ms.toFixed(0)} ms (page load included): ${text.slice(0, 160)}`);
    await page.fill('input[name="parallel.dp"]', '512');
    await page.waitForFunction(() => document.querySelector('#summary')?.dataset.worldSize === String(512 * 64) && document.body.dataset.state === 'ready', null, { timeout: 60_000 });
  });

  await run('3. a pasted Hugging Face config wins over the preset and clears leftover overrides; the editor says what applies', async (page) => {
    await page.goto(jobUrl(base, TEACH));  // preset gpt3-1.7b with Layers = 2
    await ready(page);
    await page.fill('textarea[name="model.hf_config"]', JSON.stringify(HF_CONFIG, null, 2));
    await page.waitForFunction(() => (document.querySelector('#summary').dataset.job ?? '').includes('hf_config') && document.body.dataset.state === 'ready', null, { timeout: 30_000 });
    check(await page.inputValue('select[name="model.preset"]') === '', 'the preset select shows the HF config');
    check(await page.inputValue('input[name="model.num_layers"]') === '', 'the leftover Layers override is cleared');
    const src = await page.textContent('#model-source');
    check(/pasted Hugging Face config/.test(src) && /4 layers, hidden 1024, 16 heads/.test(src) && /Cleared the previous model’s overrides \(Layers \(L\)\)/.test(src), `model source: ${src}`);
    check(!decodeURIComponent(page.url()).includes('"preset":"gpt3-1.7b"'), 'the job no longer names the preset');
    // An override set afterwards applies, and says so.
    await page.fill('input[name="model.num_layers"]', '2');
    await page.waitForFunction(() => /2 layers, hidden 1024/.test(document.querySelector('#model-source').textContent) && document.body.dataset.state === 'ready', null, { timeout: 30_000 });
    check(/Overrides on top: Layers \(L\) = 2/.test(await page.textContent('#model-source')), 'override listed');
    // Picking a preset makes it the model again.
    await page.selectOption('select[name="model.preset"]', 'llama3-8b');
    await page.waitForFunction(() => /preset llama3-8b/.test(document.querySelector('#model-source').textContent) && document.body.dataset.state === 'ready', null, { timeout: 30_000 });
    check(await page.inputValue('textarea[name="model.hf_config"]') === '', 'the pasted config is removed');
  });

  await run('4. a 390 px phone: no horizontal page scroll on any tab; wide tables scroll inside themselves', async (page) => {
    await page.setViewportSize({ width: 390, height: 844 });
    // Llama 2 70B on 128 GPUs: long group lists, a wide node table.
    await page.goto(jobUrl(base, { model: { preset: 'llama2-70b', num_layers: 4 }, parallel: { dp: 16, tp: 8, sequence_parallel: true, pp: 1 }, training: { seq_len: 4096, micro_batch_size: 1, global_batch_size: 16 } }));
    await ready(page);
    const widths = {};
    for (const tab of ['summary', 'graph', 'rank', 'downloads', 'plan']) {
      await page.click(`#tab-${tab}`);
      if (tab === 'graph') await page.waitForSelector('#graph svg [data-op]', { timeout: 30_000 });
      await page.waitForTimeout(100);
      widths[tab] = await page.evaluate(() => Math.max(document.documentElement.scrollWidth, document.body.scrollWidth));
    }
    check(Object.values(widths).every((w) => w <= 390), `page widths at 390 px: ${JSON.stringify(widths)}`);
    await page.click('#tab-rank');
    const table = await page.$eval('#node-table', (el) => ({ sw: el.scrollWidth, cw: el.clientWidth, ov: getComputedStyle(el).overflowX }));
    check(table.sw > table.cw && table.ov === 'auto', `the node table scrolls inside itself: ${JSON.stringify(table)}`);
  });

  await run('5. bytes on the wire per rank by group kind, pipeline send/recv included, with the definition', async (page) => {
    await page.goto(jobUrl(base, { model: { preset: 'gpt3-1.7b', num_layers: 4 }, parallel: { dp: 2, tp: 2, pp: 2 }, training: { seq_len: 256, micro_batch_size: 1, global_batch_size: 4 } }));
    await ready(page);
    await page.waitForSelector('#wire table', { timeout: 20_000 });
    const kinds = await page.$$eval('#wire tbody tr', (rows) => rows.map((r) => r.dataset.kind));
    check(kinds.includes('pp (send/recv)') && kinds.includes('tp') && kinds.includes('dp'), `group kinds: ${kinds}`);
    // 2 micro-batches per rank, activations 1·256·2304 bf16 each way.
    const pp = await page.$$eval('#wire tbody tr[data-kind="pp (send/recv)"] td', (tds) => tds.map((t) => t.textContent));
    check(pp[1] === '4' && pp[2] === '4.50 MiB' && pp[3] === '2.25 MiB' && pp[4] === '2.25 MiB', `pp row (g, ops, buffer, sent, received): ${pp}`);
    const def = await page.textContent('#wire');
    check(/2\(g−1\)\/g/.test(def) && /all-gather g−1 × the rank’s shard/.test(def) && /send\/recv/.test(def), `definition: ${def.slice(-600)}`);
    check(/only the rank’s own shard for all-gather/.test(await page.textContent('#summary')), 'comm_size explained under the buffer tables');
  });

  await run('6. memory: one peak in the summary and the chart, job-scaled bars, advice when activations dominate', async (page) => {
    await page.goto(jobUrl(base, TEACH));
    await ready(page);
    const summaryPeak = Number(await page.$eval('#summary figure.mem', (el) => el.dataset.peak));
    const chartPeak = Number(await page.$eval('#memory', (el) => el.dataset.peak));
    check(summaryPeak > 0 && summaryPeak === chartPeak, `summary peak ${summaryPeak} = rank 0 chart peak ${chartPeak}`);
    // A 2-layer job uses a few GiB of 80: the bar is drawn to the job's scale.
    const filled = await page.$$eval('#summary figure.mem rect[data-part]', (rs) => rs.reduce((a, r) => a + Number(r.getAttribute('width')), 0));
    check(filled > 0.9 * 640 / 1.04, `the bar fills its width: ${filled} of 640`);
    check(/off to the right/.test(await page.textContent('#summary figure.mem')), 'the capacity is stated in words');
    const min = Number(await page.$eval('#memory', (el) => el.dataset.min));
    check(min < chartPeak, `memory over time varies: ${min} .. ${chartPeak}`);
    check(!(await page.$('[data-advice="activations"]')), 'no activation advice for this job');
    // Micro-batches of 8 full sequences, no recompute: activations dominate.
    await page.goto('about:blank');
    await page.goto(jobUrl(base, { ...TEACH, training: { seq_len: 2048, micro_batch_size: 8, global_batch_size: 16 } }));
    await ready(page);
    const advice = await page.textContent('[data-advice="activations"]');
    check(/recompute/.test(advice) && /context parallelism/.test(advice) && /pipeline/.test(advice), `advice: ${advice}`);
  });

  await run('7. graph: ELK layout with edges around boxes, pan/zoom, whole stage collapsed by layer', async (page) => {
    await page.goto(jobUrl(base, TEACH));
    await ready(page);
    await page.click('#tab-graph');
    await page.waitForSelector('#graph svg[data-layout="elk"] [data-op]', { timeout: 30_000 });
    // No edge segment may cross a box it does not start or end at.
    const crossings = await page.evaluate(() => {
      const boxes = [...document.querySelectorAll('#graph svg .nodes > g')].map((g) => {
        const [x, y] = /translate\(([-\d.]+),([-\d.]+)\)/.exec(g.getAttribute('transform')).slice(1).map(Number);
        const r = g.querySelector('rect');
        return { x, y, w: Number(r.getAttribute('width')), h: Number(r.getAttribute('height')) };
      });
      let bad = 0;
      for (const p of document.querySelectorAll('#graph svg .edges path')) {
        const pts = p.getAttribute('d').split(/(?=[ML])/).map((s) => s.slice(1).split(',').map(Number));
        for (let i = 1; i < pts.length; i++) {
          const [x1, y1] = pts[i - 1], [x2, y2] = pts[i];
          for (const b of boxes) {
            const ix = Math.min(x1, x2) < b.x + b.w - 1 && Math.max(x1, x2) > b.x + 1;
            const iy = Math.min(y1, y2) < b.y + b.h - 1 && Math.max(y1, y2) > b.y + 1;
            if (ix && iy) bad++;
          }
        }
      }
      return { bad, boxes: boxes.length, edges: document.querySelectorAll('#graph svg .edges path').length };
    });
    check(crossings.boxes > 10 && crossings.edges > 10 && crossings.bad === 0, `edges through boxes: ${JSON.stringify(crossings)}`);
    const z0 = Number(await page.getAttribute('#graph svg', 'data-zoom'));
    await page.click('#graph-zoom-in');
    const z1 = Number(await page.getAttribute('#graph svg', 'data-zoom'));
    check(z1 > z0, `zoom in: ${z0} -> ${z1}`);
    await page.focus('#graph');
    await page.keyboard.press('-');
    check(Number(await page.getAttribute('#graph svg', 'data-zoom')) < z1, 'keyboard zoom out');
    const vb0 = await page.getAttribute('#graph svg', 'viewBox');
    const box = await page.$eval('#graph', (el) => { const r = el.getBoundingClientRect(); return { x: r.x + 5, y: r.y + 5 }; });
    await page.mouse.move(box.x, box.y);
    await page.mouse.down();
    await page.mouse.move(box.x + 60, box.y + 40, { steps: 4 });
    await page.mouse.up();
    check(await page.getAttribute('#graph svg', 'viewBox') !== vb0, 'dragging pans');
    // The whole stage: one box per layer, expanded and collapsed on demand.
    await page.selectOption('#layer', '-2');
    await page.waitForSelector('#graph svg [data-layer="0"][aria-expanded="false"]', { timeout: 30_000 });
    check(!(await page.$('#graph svg [data-op]')), 'collapsed layers show no ops');
    await page.click('#graph svg [data-layer="0"]');
    await page.waitForSelector('#graph svg [data-layer="0"][aria-expanded="true"]', { timeout: 30_000 });
    const ops = await page.$$eval('#graph svg [data-op]', (els) => els.map((e) => e.getAttribute('aria-label')));
    check(ops.length > 5 && ops.every((l) => l.includes(" — L0.")), `layer 0 expanded: ${ops.slice(0, 5)}`);
    await page.focus('#graph svg [data-layer="0"]');
    await page.keyboard.press('Enter');
    await page.waitForSelector('#graph svg [data-layer="0"][aria-expanded="false"]', { timeout: 30_000 });
  });

  await run('stretch. simulated step time: cards and one pipeline row per stage, F/B blocks for every micro-batch', async (page) => {
    // 4 stages, 8 micro-batches of 1 × 256 tokens on dp 1.
    const job = { model: { preset: 'gpt3-1.7b', num_layers: 8 }, parallel: { pp: 4, dp: 1, tp: 1 }, training: { seq_len: 256, micro_batch_size: 1, global_batch_size: 8 } };
    await page.goto(jobUrl(base, job));
    await ready(page);
    await page.waitForSelector('#simulation[data-step]:not([hidden])', { timeout: 60_000 });
    const d = await page.$eval('#simulation', (el) => ({ ...el.dataset, text: el.textContent }));
    const step = Number(d.step);
    check(step > 0 && d.stages === '4', `step ${d.step} s, stages ${d.stages}`);
    check(d.forwardMicroBatches === '8,8,8,8', `every stage runs a forward block for each of the 8 micro-batches: ${d.forwardMicroBatches}`);
    // Tokens per second = global batch × sequence ÷ step time.
    const tps = Math.round((8 * 256) / step).toLocaleString('en');
    check(d.text.includes(`Tokens / s${tps}`), `tokens/s ${tps} in: ${d.text.slice(0, 300)}`);
    check(/Bubble/.test(d.text) && /stage 3 \(rank 3\)/.test(d.text), 'bubble card and per-stage table');
    console.log(`[app-ux] simulated step of the 4-stage teaching pipeline: ${(step * 1e3).toFixed(2)} ms`);
  });

  await run('8. engine messages in words next to their field (no field paths or codes)', async (page) => {
    await page.goto(jobUrl(base, TEACH));
    await ready(page);
    await page.fill('input[name="training.global_batch_size"]', '5');
    await page.waitForSelector('label[data-path="training.global_batch_size"].invalid', { timeout: 20_000 });
    const slot = 'label[data-path="training.global_batch_size"] .error';
    const text = await page.textContent(slot);
    check(await page.getAttribute(slot, 'data-code') === 'not_divisible', 'code kept as data');
    check(/Does not divide evenly/.test(text) && /Global batch \(5\)/.test(text) && /Micro-batch \(b\)/.test(text), `words: ${text}`);
    check(!/[a-z]+_[a-z_]+|training\.|\[|not_divisible/.test(text), `no identifiers or codes: ${text}`);
    check(await page.getAttribute('input[name="training.global_batch_size"]', 'aria-invalid') === 'true', 'aria-invalid on the field');
  });

  await run('9. accessibility: axe-core finds no WCAG 2.1 A/AA violation on any tab; tabs work with the arrow keys', async (page) => {
    await page.goto(jobUrl(base, { ...TEACH, parallel: { ...TEACH.parallel, pp: 1 } }));
    await ready(page);
    await page.evaluate(() => { document.querySelector('#welcome').hidden = false; });  // audit the first-visit panel too
    await checkAxe(page, 'summary');
    await page.click('#tab-graph');
    await page.waitForSelector('#graph svg [data-op]', { timeout: 30_000 });
    await page.click('#graph svg [data-op]');
    await checkAxe(page, 'graph');
    await page.click('#tab-rank');
    await checkAxe(page, 'rank preview');
    await page.click('#tab-downloads');
    await checkAxe(page, 'downloads');
    await page.click('#tab-plan');
    await checkAxe(page, 'plan (before a run)');
    await page.fill('input[name="parallel.tp"]', '3');
    await page.waitForSelector('label[data-path="parallel.tp"].invalid', { timeout: 20_000 });
    await checkAxe(page, 'an error shown');
    // Keyboard: one tab stop for the tab list, arrows move and select.
    await page.focus('#tab-plan');
    await page.keyboard.press('ArrowRight');
    check(await page.evaluate(() => document.activeElement.id) === 'tab-summary', 'ArrowRight wraps to the first tab');
    check(await page.getAttribute('#tab-summary', 'aria-selected') === 'true' && !(await page.$eval('#panel-summary', (el) => el.hidden)), 'and selects it');
    await page.keyboard.press('End');
    check(await page.evaluate(() => document.activeElement.id) === 'tab-plan', 'End');
    await page.keyboard.press('ArrowLeft');
    check(await page.getAttribute('#tab-downloads', 'aria-selected') === 'true', 'ArrowLeft');
    const stops = await page.$$eval('[role=tab]', (ts) => ts.filter((t) => t.tabIndex === 0).length);
    check(stops === 1, `one tab stop in the tab list: ${stops}`);
  });

  await run('10a. first visit: a getting-started panel with four example jobs (one serving); closing it is remembered', async (page) => {
    await page.goto(`${base}/`);
    await page.evaluate(() => localStorage.removeItem('stagecraft.welcome.closed'));
    await page.goto('about:blank');
    await page.goto(`${base}/`);  // no #job=: a first visit
    await ready(page);
    check(!(await page.$eval('#welcome', (el) => el.hidden)), 'shown on a first visit');
    const examples = await page.$$eval('#welcome-examples button', (bs) => bs.map((b) => b.dataset.example));
    check(examples.length === 4 && examples.includes('llama3-70b-serve'), `four examples, one serving: ${examples}`);
    await page.click('#welcome-examples button[data-example="pipeline"]');
    await page.waitForFunction(() => document.querySelector('#summary')?.dataset.worldSize === '4' && document.body.dataset.state === 'ready', null, { timeout: 30_000 });
    check(/"pp":4/.test(decodeURIComponent(page.url())), 'the pipeline example is loaded');
    await page.click('#welcome-close');
    await page.goto(`${base}/`);
    await ready(page);
    check(await page.$eval('#welcome', (el) => el.hidden), 'closed stays closed');
    await page.click('#show-welcome');
    check(!(await page.$eval('#welcome', (el) => el.hidden)), 'the header button brings it back');
    await page.evaluate(() => localStorage.removeItem('stagecraft.welcome.closed'));
  });

  await run('10d. a shared link the editor cannot show as given says so, with the engine\'s reason; a good one says nothing', async (page) => {
    await page.goto(`${base}/#job=${encodeURIComponent('{not json')}`);
    await ready(page);
    await page.waitForSelector('#link-note:not([hidden])', { timeout: 20_000 });
    check(/not valid JSON/.test(await page.textContent('#link-note')), `malformed link: ${await page.textContent('#link-note')}`);
    await page.goto('about:blank');
    await page.goto(jobUrl(base, { ...TEACH, model: { preset: 'nope' } }));
    await ready(page);
    await page.waitForSelector('#link-note:not([hidden])', { timeout: 20_000 });
    const note = await page.textContent('#link-note');
    check(/not valid as given/.test(note) && /nope/.test(note), `unknown preset in a link: ${note}`);
    await page.goto('about:blank');
    await page.goto(jobUrl(base, TEACH));
    await ready(page);
    await page.waitForTimeout(300);
    check(await page.$eval('#link-note', (el) => el.hidden), 'a link the editor shows as given: no note');
  });

  await run('10b. load a model by Hugging Face id from a hub on 127.0.0.1; clear messages when it cannot', async (page) => {
    const hub = http.createServer((req, res) => {
      const cors = { 'access-control-allow-origin': '*' };
      if (req.url === '/test-org/tiny-llama/resolve/main/config.json') res.writeHead(200, { ...cors, 'content-type': 'application/json' }).end(JSON.stringify(HF_CONFIG));
      else if (req.url.startsWith('/gated-org/')) res.writeHead(401, cors).end('gated');
      else res.writeHead(404, cors).end('not found');
    });
    const hubBase = await listen(hub);
    const closed = http.createServer();
    const closedBase = await listen(closed);
    await new Promise((r) => closed.close(r));  // nothing listens there now
    try {
      await page.goto(jobUrl(base, TEACH, `?hub=${encodeURIComponent(hubBase)}`));
      await ready(page);
      await page.fill('#hf-id', 'test-org/tiny-llama');
      await page.click('#hf-load');
      await page.waitForFunction(() => /4 layers, hidden 1024/.test(document.querySelector('#model-source').textContent) && document.body.dataset.state === 'ready', null, { timeout: 30_000 });
      check(/loaded test-org\/tiny-llama/.test(await page.textContent('#hf-status')), 'status line');
      check(JSON.parse(await page.inputValue('textarea[name="model.hf_config"]')).hidden_size === 1024, 'the config is in the box');
      const tryId = async (id, re) => {
        await page.fill('#hf-id', id);
        await page.click('#hf-load');
        await page.waitForFunction((r) => new RegExp(r).test(document.querySelector('#hf-status').textContent), re.source, { timeout: 10_000 });
      };
      await tryId('test-org/missing', /has no config\.json for “test-org\/missing”/);
      await tryId('gated-org/model', /gated or private/);
      await tryId('not an id!', /is not a Hugging Face model id/);
      await page.goto(jobUrl(base, TEACH, `?hub=${encodeURIComponent(closedBase)}`));
      await ready(page);
      await tryId('test-org/tiny-llama', /could not reach/);
    } finally {
      hub.close();
    }
  });

  await run('10c. the wasm module is served gzip-compressed (web/serve.mjs) and the app runs from it', async (page) => {
    const server = http.createServer(serveApp(WEB_DIR));
    const appBase = await listen(server);
    try {
      const head = (enc) => new Promise((resolve, reject) => {
        http.get(`${appBase}/wasm/stagecraft_wasm.wasm`, { headers: enc ? { 'accept-encoding': enc } : {} }, (res) => {
          let n = 0;
          res.on('data', (c) => { n += c.length; });
          res.on('end', () => resolve({ enc: res.headers['content-encoding'], type: res.headers['content-type'], bytes: n }));
        }).on('error', reject);
      });
      const gz = await head('gzip, deflate, br'), raw = await head('');
      check(gz.enc === 'gzip' && gz.type === 'application/wasm' && raw.enc === undefined, `headers: ${JSON.stringify({ gz, raw })}`);
      check(gz.bytes < raw.bytes * 0.5, `compressed ${gz.bytes} B vs raw ${raw.bytes} B`);
      console.log(`[app-ux] wasm module served: ${raw.bytes} B raw, ${gz.bytes} B gzip`);
      await page.goto(jobUrl(appBase, TEACH));
      await ready(page);
    } finally {
      server.close();
    }
  });

  await run('11. the Hugging Face card shows the family and features of the newer families; a multimodal Gemma-3 is refused until Strict HF import is off, then runs as its text model with the warning in words', async (page) => {
    const olmo2 = { architectures: ['Olmo2ForCausalLM'], model_type: 'olmo2', hidden_size: 4096, intermediate_size: 11008,
      num_attention_heads: 32, num_key_value_heads: 32, num_hidden_layers: 32, vocab_size: 100352, rms_norm_eps: 1e-6,
      tie_word_embeddings: false, max_position_embeddings: 4096 };
    await page.goto(jobUrl(base, { model: { hf_config: olmo2, num_layers: 2 }, training: { seq_len: 256, global_batch_size: 1 } }));
    await ready(page);
    const card = async () => page.textContent('#summary [data-card="hf-import"]');
    const c1 = await card();
    check(/olmo2/.test(c1) && /post-sublayer norms \(no pre-norm\)/.test(c1) && /q\/k RMSNorm over all heads/.test(c1), `olmo2 card: ${c1}`);
    const gemma3 = { architectures: ['Gemma3ForConditionalGeneration'], model_type: 'gemma3',
      text_config: { hidden_size: 2560, intermediate_size: 10240, model_type: 'gemma3_text', num_hidden_layers: 34, sliding_window: 1024 },
      vision_config: { hidden_size: 1152, intermediate_size: 4304, model_type: 'siglip_vision_model', num_hidden_layers: 27, patch_size: 14 } };
    await page.fill('textarea[name="model.hf_config"]', JSON.stringify(gemma3, null, 2));
    await page.waitForFunction(() => /vision/.test(document.querySelector('#hf-drop-err')?.textContent ?? ''), null, { timeout: 30_000 });
    await page.fill('input[name="model.num_layers"]', '2');
    await page.selectOption('select[name="model.strict"]', 'false');
    await page.waitForFunction(() => /gemma3/.test(document.querySelector('#summary [data-card="hf-import"]')?.textContent ?? '') && document.body.dataset.state === 'ready', null, { timeout: 60_000 });
    const c2 = await card();
    check(/text model of a multimodal config/.test(c2) && /warning: vision_config = .*vision tower \(siglip_vision_model, 27 layers\)/.test(c2), `gemma3 card: ${c2}`);
  });

  return results;
}
