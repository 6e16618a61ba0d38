// Issue 25 in headless Chromium (the built app): compare two layouts,
// every step of every guided lesson (data-driven over web/src/lessons/*.json),
// the fit and freshness marks, the phone layout, and axe-core on each new
// view. Run by app-cases.mjs; alone while developing:
//   node tests/js/app-learn.mjs [name prefix]
import fs from 'node:fs';
import path from 'node:path';
import { REPO_ROOT } from './native.mjs';
import { caseRunner, check, checkAxe } from './app-runner.mjs';

const LESSON_DIR = path.join(REPO_ROOT, 'web/src/lessons');
export const lessonFiles = () => fs.readdirSync(LESSON_DIR).filter((f) => f.endsWith('.json')).sort()
  .map((f) => ({ file: f, lesson: JSON.parse(fs.readFileSync(path.join(LESSON_DIR, f), 'utf8')) }));

const ready = (page, timeout = 60_000) => page.waitForFunction(() => document.body.dataset.state === 'ready', null, { timeout });
// The summary and (training) the simulated step are the editor's job's.
const settled = (page, timeout = 90_000) => page.waitForFunction(() => {
  const s = document.querySelector('#summary');
  const sim = document.querySelector('#simulation');
  return document.body.dataset.state === 'ready' && s?.dataset.job && (s.dataset.mode === 'inference' || sim?.dataset.fresh === 'current');
}, null, { timeout });
const jobUrl = (base, job, extra = '') => `${base}/#job=${encodeURIComponent(JSON.stringify(job))}${extra}`;
const TEACH = { model: { preset: 'gpt3-1.7b', num_layers: 2 }, parallel: { dp: 2, tp: 2 }, training: { seq_len: 256, micro_batch_size: 1, global_batch_size: 4 } };

export async function learnCases(context, base, only = '') {
  const results = [];
  const run = caseRunner(context, 'app-learn', results, only);

  // ------------------------------------------------------------ lessons
  const lessons = lessonFiles();
  await run('lessons: at least eight lesson files, each well formed, on the eight topics', async () => {
    check(lessons.length >= 8, `${lessons.length} lesson files`);
    const ids = new Set();
    for (const { file, lesson: l } of lessons) {
      check(typeof l.id === 'string' && !ids.has(l.id), `${file}: id`);
      ids.add(l.id);
      check(typeof l.title === 'string' && typeof l.goal === 'string' && Array.isArray(l.steps) && l.steps.length >= 2, `${file}: title, goal, 2+ steps`);
      check(l.steps.some((s) => s.predict), `${file}: at least one step asks for a prediction`);
      check(l.steps[0].job, `${file}: the first step sets a job`);
      for (const s of l.steps) {
        check(typeof s.title === 'string' && typeof s.text === 'string' && typeof s.explain === 'string', `${file}: step fields`);
        if (s.predict) check(s.predict.answer >= 0 && s.predict.answer < s.predict.choices.length, `${file}: answer index`);
        if (s.change) check(s.set && Object.keys(s.set).length > 0, `${file}: a change says what to set`);
      }
    }
    const text = lessons.map(({ lesson: l }) => `${l.title} ${l.goal}`).join(' ').toLowerCase();
    for (const topic of ['data parallel', 'zero', 'tensor', 'pipeline', 'recomput', 'context parallel', 'expert', 'kv cache']) {
      check(text.includes(topic), `a lesson on ${topic}`);
    }
  });

  for (const { file, lesson } of lessons) {
    await run(`lesson ${lesson.id}: every step sets its job, highlights, asks, reveals the numbers`, async (page) => {
      await page.goto(`${base}/`);
      await ready(page);
      await page.click('#show-lessons');
      await page.click(`button[data-lesson="${lesson.id}"]`);
      for (let i = 0; i < lesson.steps.length; i++) {
        const step = lesson.steps[i];
        const where = `${file} step ${i + 1}`;
        await page.waitForFunction((n) => document.querySelector('#lessons')?.dataset.step === String(n), i, { timeout: 10_000 });
        check((await page.textContent('#lesson-step-title')).includes(step.title), `${where}: title`);
        check(await page.evaluate(() => document.activeElement?.id === 'lesson-step-title'), `${where}: the step's heading has the focus`);
        if (step.job) {
          await settled(page);
          const job = await page.evaluate(() => window.stagecraftApp.job());
          for (const [k, v] of Object.entries(step.job.parallel ?? {})) check(job.parallel?.[k] === v || (v === 1 && job.parallel?.[k] === undefined), `${where}: job parallel.${k} = ${v}: ${JSON.stringify(job.parallel)}`);
        }
        if (step.pin) {
          await page.waitForFunction(() => window.stagecraftApp.pinned() !== null, null, { timeout: 60_000 });
          check(/[#&]a=/.test(page.url()), `${where}: the pinned job rides in the URL`);
        }
        if (step.predict) {
          const radios = await page.$$('input[name="lesson-predict"]');
          check(radios.length === step.predict.choices.length, `${where}: ${radios.length} choices`);
          check(await page.$eval('#lesson-reveal', (b) => b.disabled), `${where}: reveal waits for a prediction`);
          await radios[step.predict.answer].check();
        }
        if (step.set) {
          // Revealing before the change asks for the change.
          await page.click('#lesson-reveal');
          await page.waitForFunction(() => /Make the change first/.test(document.querySelector('#lesson-explain')?.textContent ?? ''), null, { timeout: 5_000 });
          await page.click('#lesson-do');
          await page.waitForFunction((set) => {
            const job = window.stagecraftApp.job();
            return Object.entries(set).every(([p, v]) => JSON.stringify(p.split('.').reduce((o, k) => o?.[k], job)) === JSON.stringify(v));
          }, step.set, { timeout: 10_000 });
        }
        await page.click('#lesson-reveal');
        await page.waitForFunction(() => document.querySelector('#lessons')?.dataset.revealed === '1', null, { timeout: 120_000 });
        const text = await page.textContent('#lesson-explain');
        check(!/\?|NaN|undefined|Infinity|\{|\}/.test(text), `${where}: a number is missing from the explanation: ${text}`);
        if (step.predict) check(/Your prediction was right/.test(text), `${where}: the right answer is called right: ${text.slice(0, 200)}`);
        for (const c of step.check?.contains ?? []) check(text.includes(c), `${where}: the explanation shows ${c} (${step.check.why}): ${text}`);
        if (step.watch) {
          const n = await page.$$eval('.lesson-watch', (els) => els.filter((e) => e.getClientRects().length > 0).length);
          check(n > 0, `${where}: what to watch (${step.watch}) is outlined on the page`);
        }
        if (i === 0 || step.pin) await checkAxe(page, `${where} (revealed)`);
        await page.click('#lesson-next');
      }
      // Finish returns to the list.
      await page.waitForSelector('button[data-lesson]', { timeout: 5_000 });
    });
  }

  await run('lessons: keyboard only, and a lesson step in the URL reopens it', async (page) => {
    const l = lessons[0].lesson;
    await page.goto(`${base}/`);
    await ready(page);
    await page.focus('#show-lessons');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.activeElement?.id === 'lessons-title', null, { timeout: 5_000 });
    await checkAxe(page, 'the lesson list');
    await page.keyboard.press('Tab');  // Close lessons
    await page.keyboard.press('Tab');  // the first lesson
    check(await page.evaluate(() => document.activeElement?.dataset.lesson), 'Tab reaches the lesson list');
    await page.keyboard.press('Enter');
    await page.waitForFunction(() => document.querySelector('#lessons')?.dataset.step === '0', null, { timeout: 5_000 });
    await page.click('#lesson-next');
    await page.waitForFunction(() => /lesson=[\w-]+\.1/.test(location.hash), null, { timeout: 5_000 });
    const url = page.url();
    const page2 = await context.newPage();
    await page2.goto(url);
    await page2.waitForFunction((id) => document.querySelector('#lessons')?.dataset.lesson === id && document.querySelector('#lessons').dataset.step === '1', l.id, { timeout: 30_000 });
    // The step's own job is in the editor (not the default job), and the
    // engine answered for it.
    await settled(page2);
    const job = await page2.evaluate(() => window.stagecraftApp.job());
    check(JSON.stringify(job.model) === JSON.stringify(l.steps[1].job.model), `the step's model: ${JSON.stringify(job.model)}`);
    check(!/unavailable|replaced/.test(await page2.textContent('#engine-status')), `engine status: ${await page2.textContent('#engine-status')}`);
    await page2.close();
  });

  // Session 24's audit: A is the step's own job even when the change is
  // made at once (it was pinned only after the engine answered, so a quick
  // "Do it for me" landed in A too); a step without a job opened from a
  // link (or Back) inherits the job and A of the steps before it.
  await run('lessons: "Do it for me" at once compares against the step\'s own job; a jobless step from a link rebuilds its job and A', async (page) => {
    const dpl = lessons.find((x) => x.lesson.id === 'data-parallel').lesson;
    await page.goto(`${base}/#lesson=data-parallel.1`);
    await page.waitForFunction(() => document.querySelector('#lessons')?.dataset.step === '1', null, { timeout: 60_000 });
    await page.click('#lesson-do');  // at once: the engine has not answered yet
    const pinned = await page.evaluate(() => window.stagecraftApp.pinned());
    check(pinned && JSON.parse(pinned.jobText).parallel?.dp === dpl.steps[1].job.parallel.dp, `A is the step's job: ${pinned?.jobText}`);
    await page.check(`input[name="lesson-predict"][value="${dpl.steps[1].predict.answer}"]`);
    await page.click('#lesson-reveal');
    await page.waitForFunction(() => document.querySelector('#lessons')?.dataset.revealed === '1', null, { timeout: 120_000 });
    const text = await page.textContent('#lesson-explain');
    check(/Your prediction was right/.test(text) && !/\?/.test(text), `explained with both jobs' numbers: ${text}`);
    check(/parallel\.dp: 1 → 4/.test(await page.textContent('#compare')), `A dp 1, B dp 4: ${(await page.textContent('#compare')).slice(0, 200)}`);
    // A jobless step in a fresh page: the zero-fsdp lesson's ZeRO-3 step
    // (A: step 2's plain data parallelism; B: its ZeRO-1 change, then ZeRO-3).
    const zl = lessons.find((x) => x.lesson.id === 'zero-fsdp').lesson;
    const k = zl.steps.findIndex((st, i) => i > 0 && !st.job);
    check(k > 0, 'zero-fsdp has a step without a job');
    const page2 = await context.newPage();
    await page2.goto(`${base}/#lesson=zero-fsdp.${k}`);
    await page2.waitForFunction((n) => document.querySelector('#lessons')?.dataset.step === String(n), k, { timeout: 60_000 });
    await page2.click('#lesson-do');
    const st = zl.steps[k];
    if (st.predict) await page2.check(`input[name="lesson-predict"][value="${st.predict.answer}"]`);
    await page2.click('#lesson-reveal');
    await page2.waitForFunction(() => document.querySelector('#lessons')?.dataset.revealed === '1', null, { timeout: 120_000 });
    const t2 = await page2.textContent('#lesson-explain');
    check(!/\?|NaN|undefined/.test(t2), `every number filled from the rebuilt A and B: ${t2}`);
    const a2 = await page2.evaluate(() => window.stagecraftApp.pinned());
    const b2 = await page2.evaluate(() => window.stagecraftApp.job());
    check(JSON.parse(a2.jobText).parallel?.zero === 0 && b2.parallel?.zero === 3, `A plain dp, B ZeRO-3: ${a2.jobText} / ${JSON.stringify(b2.parallel)}`);
    check(b2.model?.num_layers === zl.steps[0].job.model.num_layers, `the lesson's model, not the default job: ${JSON.stringify(b2.model)}`);
    // Finish and All lessons leave the focus on the lesson list, not <body>.
    await page2.focus('#lesson-all');
    await page2.keyboard.press('Enter');
    await page2.waitForSelector('button[data-lesson]', { timeout: 5_000 });
    check(await page2.evaluate(() => document.activeElement?.dataset?.lesson !== undefined), `focus after All lessons: ${await page2.evaluate(() => document.activeElement?.tagName)}`);
    await page2.close();
  });

  await run('compare: two serving jobs side by side by their serving figures', async (page) => {
    const job = { mode: 'inference', model: { preset: 'llama3-8b', num_layers: 4 }, parallel: { tp: 1 }, serving: { prompt_tokens: 2048, output_tokens: 128 } };
    await page.goto(jobUrl(base, job));
    await settled(page);
    await page.click('#pin');
    await page.waitForSelector('#compare:not([hidden])', { timeout: 10_000 });
    await page.fill('input[name="serving.prompt_tokens"]', '7680');
    await page.waitForFunction(() => document.querySelector('#compare')?.dataset.differences === '1', null, { timeout: 30_000 });
    await settled(page);
    await page.waitForFunction(() => /\d/.test(document.querySelector('#compare [data-row=inf-ttft] .col-b')?.textContent ?? ''), null, { timeout: 30_000 });
    const rows = await page.$$eval('#compare tbody tr', (trs) => trs.map((tr) => tr.dataset.row));
    for (const r of ['inf-fit', 'inf-kv-seq', 'inf-memory', 'inf-ttft', 'inf-tpot', 'inf-tps']) check(rows.includes(r), `serving compare row ${r}: ${rows}`);
    check(!rows.some((r) => r.startsWith('memory-')), `no training-step memory rows: ${rows}`);
    check(await page.$$eval('#compare svg.compare-mem', (x) => x.length) === 0, 'no per-stage memory chart');
    // A longer prompt: a longer TTFT and a bigger KV cache per sequence, both worse.
    for (const r of ['inf-ttft', 'inf-kv-seq']) {
      const d = await page.textContent(`#compare [data-row=${r}] td:last-child`);
      check(/^\+\d/.test(d) && /worse/.test(d), `${r}: ${d}`);
    }
    // Stop comparing keeps the focus on the page's controls.
    await page.focus('#unpin');
    await page.keyboard.press('Enter');
    check(await page.evaluate(() => document.activeElement?.id === 'pin'), `focus after Stop comparing: ${await page.evaluate(() => document.activeElement?.id)}`);
    await checkAxe(page, 'serving compare');
  });

  // ------------------------------------------------------------ compare
  await run('compare: pin A, edit B, every figure side by side, the pair in the URL, A/B toggle, the same rank of both', async (page) => {
    await page.goto(jobUrl(base, { ...TEACH, parallel: { dp: 2, pp: 2 }, model: { preset: 'gpt3-1.7b', num_layers: 4 } }));
    await settled(page);
    const stepA = Number(await page.getAttribute('#simulation', 'data-step'));
    await page.click('#pin');
    await page.waitForSelector('#compare:not([hidden])', { timeout: 10_000 });
    check(/same job as A/.test(await page.textContent('#compare')), 'B = A at first');
    await page.fill('input[name="parallel.dp"]', '1');
    await page.waitForFunction(() => document.querySelector('#compare')?.dataset.differences === '1', null, { timeout: 30_000 });
    await settled(page);
    await page.waitForFunction(() => /ms|µs|s$/.test(document.querySelector('#compare [data-row=step] .col-b')?.textContent ?? ''), null, { timeout: 30_000 });
    const stepB = Number(await page.getAttribute('#simulation', 'data-step'));
    check(stepA > 0 && stepB > 0 && stepA !== stepB, `step times A ${stepA}, B ${stepB}`);
    const rows = await page.$$eval('#compare tbody tr', (trs) => trs.map((tr) => tr.dataset.row));
    for (const r of ['fits', 'step', 'mfu', 'tokens', 'bubble', 'memory-0', 'memory-1']) check(rows.includes(r), `compare row ${r}: ${rows}`);
    check(rows.some((r) => r.startsWith('coll-')), `bytes per collective rows: ${rows}`);
    // B vs A in words: dp 2 -> 1 with the same global batch doubles each
    // rank's micro-batches, so B's step is longer: "+…%" and marked worse.
    const diff = await page.textContent('#compare [data-row=step] td:last-child');
    check(/^\+\d/.test(diff) && /worse/.test(diff), `step time change: ${diff}`);
    check(/parallel\.dp: 2 → 1/.test(await page.textContent('#compare')), 'the changed field is named');
    check(await page.$$eval('#compare canvas.pipechart', (cs) => cs.length) === 2, 'both pipeline timelines');
    check(await page.$$eval('#compare svg.compare-mem rect', (rs) => rs.length) === 4, 'memory of 2 stages × 2 jobs on one chart');
    await checkAxe(page, 'compare');
    // The toggle: A only hides B's column.
    await page.click('#compare button[data-show="a"]');
    check(await page.$eval('#compare [data-row=step] .col-b', (td) => getComputedStyle(td).display === 'none'), 'A only hides B');
    await page.click('#compare button[data-show="both"]');
    // The same rank of A and B.
    await page.click('#tab-rank');
    await page.waitForSelector('#rank-compare table', { timeout: 30_000 });
    const rc = await page.textContent('#rank-compare');
    check(/Rank 0 in A and B/.test(rc) && /Sent on the wire: total/.test(rc), `rank compare: ${rc.slice(0, 200)}`);
    // Both traces as the rank preview draws them, side by side at 1440 px,
    // on ONE time axis: each lane's last drawn pixel sits where the rank's
    // iteration ends on the shared axis (lanes from x = 100 to width − 8),
    // and the longer job's reaches the end.
    await page.waitForFunction(() => document.querySelectorAll('#rank-compare canvas.rank-timeline').length === 2, null, { timeout: 30_000 });
    const tl = await page.$$eval('#rank-compare canvas.rank-timeline', (cs) => cs.map((c) => {
      const r = c.getBoundingClientRect();
      const ctx = c.getContext('2d');
      const dpr = c.width / r.width;
      let last = -1;
      for (const y of [27, 71]) {  // the middle of the compute and communication lanes
        const row = ctx.getImageData(0, Math.round(y * dpr), c.width, 1).data;
        for (let x = Math.round(100 * dpr); x < c.width; x++) {
          const [R, G, B] = [row[4 * x], row[4 * x + 1], row[4 * x + 2]];
          if (!(R === 0xf1 && G === 0xf3 && B === 0xf5) && row[4 * x + 3] > 0) last = Math.max(last, x);
        }
      }
      return { side: c.dataset.side, top: r.top, left: r.left, w: r.width, last: (last + 1) / dpr, mk: Number(c.dataset.makespanUs), span: Number(c.dataset.spanUs), label: c.getAttribute('aria-label'), role: c.getAttribute('role') };
    }));
    check(tl[0].side === 'A' && tl[1].side === 'B' && Math.abs(tl[0].top - tl[1].top) < 1 && tl[1].left > tl[0].left, `side by side: ${JSON.stringify(tl)}`);
    check(tl.every((t) => t.role === 'img' && /shared .* axis/.test(t.label)), `labelled images: ${tl.map((t) => t.label)}`);
    check(tl[0].span === tl[1].span && tl[0].span === Math.max(tl[0].mk, tl[1].mk), `one axis: ${JSON.stringify(tl)}`);
    for (const t of tl) {
      const want = 100 + (t.w - 108) * (t.mk / t.span);
      check(Math.abs(t.last - want) < 3, `${t.side}'s lanes end at ${t.last.toFixed(1)} px, its iteration at ${want.toFixed(1)} px: ${JSON.stringify(tl)}`);
    }
    await page.click('#rank-compare button[data-show="b"]');
    check(await page.$eval('#rank-compare canvas[data-side="A"]', (c) => c.offsetParent === null), 'B only hides A\'s trace');
    await page.click('#rank-compare button[data-show="both"]');
    await checkAxe(page, 'rank compare');
    // The link opens the same comparison.
    check(/&a=/.test(page.url()), `URL has A: ${page.url()}`);
    const page2 = await context.newPage();
    await page2.goto(page.url());
    await page2.waitForFunction(() => document.querySelector('#compare')?.dataset.differences === '1' && /ms|µs|s$/.test(document.querySelector('#compare [data-row=step] .col-a')?.textContent ?? ''), null, { timeout: 60_000 });
    const a2 = await page2.textContent('#compare [data-row=step] .col-a');
    const a1 = await page.textContent('#compare [data-row=step] .col-a');
    check(a1 === a2, `A's step time through the link: ${a1} vs ${a2}`);
    await page2.close();
    await page.click('#unpin');
    check(await page.$eval('#compare', (el) => el.hidden), 'Stop comparing hides it');
    check(!/&a=/.test(page.url()), 'and drops A from the URL');
  });

  await run('compare on a 390 px phone: A and B stack, the toggle works, nothing widens the page', async (page) => {
    await page.setViewportSize({ width: 390, height: 844 });
    const a = { ...TEACH, model: { preset: 'gpt3-1.7b', num_layers: 4 }, parallel: { dp: 2, pp: 2 } };
    const b = { ...a, parallel: { dp: 1, pp: 2 } };
    await page.goto(jobUrl(base, b, `&a=${encodeURIComponent(JSON.stringify(a))}`));
    await settled(page);
    await page.waitForFunction(() => /ms|µs|s$/.test(document.querySelector('#compare [data-row=step] .col-a')?.textContent ?? ''), null, { timeout: 60_000 });
    const [ya, yb] = await page.$$eval('#compare canvas.pipechart', (cs) => cs.map((c) => c.getBoundingClientRect().top));
    check(yb > ya, `timelines stack: A at ${ya}, B at ${yb}`);
    await page.click('#compare button[data-show="b"]');
    check(await page.$eval('#compare [data-row=step] .col-a', (td) => getComputedStyle(td).display === 'none'), 'B only hides A');
    const w = await page.evaluate(() => document.scrollingElement.scrollWidth);
    check(w <= 390, `page width ${w}`);
    await checkAxe(page, 'compare at 390 px');
    // The same rank's two traces stack too, with their own toggle.
    await page.click('#compare button[data-show="both"]');
    await page.click('#tab-rank');
    await page.waitForFunction(() => document.querySelectorAll('#rank-compare canvas.rank-timeline').length === 2, null, { timeout: 30_000 });
    const [ra, rb] = await page.$$eval('#rank-compare canvas.rank-timeline', (cs) => cs.map((c) => c.getBoundingClientRect().top));
    check(rb > ra, `rank traces stack: A at ${ra}, B at ${rb}`);
    await page.click('#rank-compare button[data-show="a"]');
    check(await page.$eval('#rank-compare canvas[data-side="B"]', (c) => c.offsetParent === null), 'A only hides B\'s trace');
    const w2 = await page.evaluate(() => document.scrollingElement.scrollWidth);
    check(w2 <= 390, `page width with the rank comparison ${w2}`);
    await checkAxe(page, 'rank compare at 390 px');
  });

  // ------------------------------------------------------------ fit, freshness
  await run('fit: a layout that does not fit is marked on every view with its time', async (page) => {
    // Three layers of Llama 3 8B on one 65,536-token sequence, one GPU (the
    // context-parallel lesson's first step, which does not fit: 88.3 GiB of
    // the H100's 79.18; two layers, 75.5 GiB, fit it). What is
    // tested is the marking: the page must mark the job as not fitting
    // exactly when the memory bars' peak exceeds the GPU's capacity.
    const job = { model: { preset: 'llama3-8b', num_layers: 3 }, parallel: { cp: 1 }, training: { seq_len: 65536, micro_batch_size: 1, global_batch_size: 2 } };
    await page.goto(jobUrl(base, job));
    await settled(page);
    const peaks = await page.$$eval('#summary figure.mem', (fs) => fs.map((f) => Number(f.dataset.peak)));
    const cap = await page.$eval('#summary figure.mem svg', (s) => s.getAttribute('aria-label'));
    check(/of 79\.2 GiB GPU memory/.test(cap) && Math.max(...peaks) > 85017493504, `the bar: ${cap}, peak ${Math.max(...peaks)} bytes over an H100's 79.18 GiB`);
    check(await page.evaluate(() => document.body.dataset.fits) === 'false', 'body marks the job as not fitting');
    const banner = await page.textContent('#fit-banner');
    // The banner's figure is the peak the memory bar shows (GiB, 1 decimal).
    const gib = (Math.max(...peaks) / 2 ** 30).toFixed(1);
    check(banner.includes(`${gib} GiB`) && /does not fit/.test(banner) && /would be, if it fitted/.test(banner), `banner: ${banner} (peak ${gib} GiB)`);
    check(/would be, if it fitted/.test(await page.textContent('#simulation .cards')), 'the step time card says so');
    for (const tab of ['graph', 'rank', 'downloads']) {
      await page.click(`#tab-${tab}`);
      check(await page.$eval('#fit-banner', (el) => el.getClientRects().length > 0), `the banner shows on the ${tab} tab`);
    }
    // The phase picker stays hidden on a training job ([hidden] wins).
    check(await page.$eval('#phase-picker', (el) => getComputedStyle(el).display === 'none'), 'no Phase picker on a training job');
    await checkAxe(page, 'a job that does not fit');
    // A job that fits has no banner.
    await page.goto('about:blank');
    await page.goto(jobUrl(base, TEACH));
    await settled(page);
    check(await page.$eval('#fit-banner', (el) => el.hidden), 'no banner when it fits');
    check(await page.evaluate(() => document.body.dataset.fits) === 'true', 'body marks it as fitting');
  });

  await run('examples: every example fits in GPU memory, or its title says it does not, on purpose', async (page) => {
    await page.goto(`${base}/`);
    await ready(page);
    const options = await page.$$eval('#job-preset option', (os) => os.filter((o) => o.value).map((o) => ({ id: o.value, title: o.textContent })));
    check(options.length >= 10, `${options.length} examples`);
    const marked = options.filter((o) => /does not fit, on purpose/.test(o.title));
    check(marked.length === 2, `examples labelled as not fitting: ${marked.map((o) => o.id)}`);
    for (const o of options) {
      if (marked.includes(o)) continue;
      await page.evaluate(() => { document.body.dataset.fits = ''; });
      await page.selectOption('#job-preset', o.id);
      await page.waitForFunction(() => document.body.dataset.fits !== '' && document.body.dataset.state !== 'working', null, { timeout: 120_000 });
      check(await page.evaluate(() => document.body.dataset.fits) === 'true', `example ${o.id} fits: ${await page.textContent('#fit-banner')}`);
    }
  });

  await run('freshness: greyed and labelled while a newer job computes, after Stop, and under a validation error', async (page) => {
    await page.goto(jobUrl(base, TEACH));
    await settled(page);
    check(await page.evaluate(() => document.body.dataset.fresh) === 'current', 'current at first');
    const grey = () => page.$eval('#panel-summary', (el) => getComputedStyle(el).filter);
    check(await grey() === 'none', 'not greyed when current');
    await page.evaluate(() => window.stagecraftApp.selfTestHold(3000));
    await page.fill('input[name="parallel.dp"]', '4');
    await page.waitForFunction(() => document.body.dataset.fresh === 'working', null, { timeout: 5_000 });
    check(/grayscale/.test(await grey()), 'greyed while working');
    check(/previous job/.test(await page.textContent('#job-status')), 'labelled while working');
    await page.click('#stop');
    check(await page.evaluate(() => document.body.dataset.fresh) === 'stopped', 'stopped');
    check(/grayscale/.test(await grey()), 'greyed after Stop');
    check(/stopped/.test(await page.textContent('#job-status')), 'labelled after Stop');
    await page.fill('input[name="parallel.tp"]', '3');
    await page.waitForSelector('label[data-path="parallel.tp"].invalid', { timeout: 30_000 });
    check(await page.evaluate(() => document.body.dataset.fresh) === 'invalid', 'invalid');
    check(/grayscale/.test(await grey()), 'greyed under a validation error');
    check(/error/.test(await page.textContent('#job-status')) && await page.$eval('#job-status', (el) => !el.hidden), 'labelled under a validation error');
    await page.fill('input[name="parallel.tp"]', '2');
    await settled(page);
    check(await grey() === 'none', 'fresh again after a valid edit');
  });

  await run('hf import: keys the import does not read are listed beside the config box (role=status) and on the card; known-irrelevant keys are not', async (page) => {
    // A Llama-3.2-3B-shaped config (2 layers) with a vision tower and a
    // made-up key the llama reader does not read, and keys known to have no
    // cost (docs/hf-import.md): only the two unknown ones may be named.
    const cfg = { architectures: ['LlamaForCausalLM'], model_type: 'llama', hidden_size: 3072, intermediate_size: 8192,
      num_attention_heads: 24, num_key_value_heads: 8, num_hidden_layers: 2, vocab_size: 128256, max_position_embeddings: 131072,
      rms_norm_eps: 1e-5, rope_theta: 500000, tie_word_embeddings: true, torch_dtype: 'bfloat16', transformers_version: '4.45.0',
      _name_or_path: 'someone/llama', bos_token_id: 128000, eos_token_id: 128001,
      vision_config: { model_type: 'mllama_vision_model', num_hidden_layers: 32 }, made_up_field: 7 };
    await page.goto(jobUrl(base, { model: { hf_config: cfg }, training: { seq_len: 256, global_batch_size: 1 } }));
    await page.waitForFunction(() => !document.querySelector('#hf-warnings')?.hidden && document.body.dataset.state === 'ready', null, { timeout: 60_000 });
    const box = await page.$eval('#hf-warnings', (el) => ({ role: el.getAttribute('role'), text: el.textContent, items: [...el.querySelectorAll('li')].map((li) => li.textContent) }));
    check(box.role === 'status', `role ${box.role}`);
    check(box.items.length === 2, `two warnings: ${JSON.stringify(box.items)}`);
    check(/^made_up_field = 7: not read by the llama import/.test(box.items[0]), box.items[0]);
    check(/^vision_config = \{.*mllama_vision_model/.test(box.items[1]) && /not read by the llama import/.test(box.items[1]), box.items[1]);
    for (const quiet of ['torch_dtype', 'transformers_version', 'architectures', '_name_or_path', 'bos_token_id', 'rope_theta']) {
      check(!box.text.includes(quiet), `${quiet} is not warned about`);
    }
    // The box sits right under the config box (beside the import).
    const [taBottom, boxTop] = await page.evaluate(() => [document.querySelector('#hf-drop').getBoundingClientRect().bottom, document.querySelector('#hf-warnings').getBoundingClientRect().top]);
    check(boxTop > taBottom && boxTop - taBottom < 200, `under the config box: ${taBottom} → ${boxTop}`);
    const card = await page.textContent('#summary [data-card="hf-import"]');
    check(/warning: made_up_field = 7/.test(card) && /warning: vision_config/.test(card), `card: ${card}`);
    await checkAxe(page, 'hf import warnings');
    // The same config without the two keys: no warning left on screen.
    delete cfg.vision_config; delete cfg.made_up_field;
    await page.fill('textarea[name="model.hf_config"]', JSON.stringify(cfg));
    await page.waitForFunction(() => document.body.dataset.state === 'ready' && !/warning/.test(document.querySelector('#summary [data-card="hf-import"]')?.textContent ?? 'warning'), null, { timeout: 60_000 });
    check(await page.$eval('#hf-warnings', (el) => el.hidden), 'no warnings: the box is hidden');
  });

  await run('graph: the whole stage of Mixtral stage 0 draws its layers in program order', async (page) => {
    // Issue 25: ELK broke the cycles between layer boxes anywhere, drawing
    // layers 5, 6, 7, then 0–4. Stage 0 of pp 4 holds layers 0–7 (32 ÷ 4).
    await page.goto(`${base}/`);
    await ready(page);
    await page.selectOption('#job-preset', 'mixtral-8x7b');
    await page.waitForFunction(() => document.querySelector('#summary')?.dataset.worldSize === '32' && document.body.dataset.state === 'ready', null, { timeout: 120_000 });
    await page.click('#tab-graph');
    await page.waitForSelector('#graph svg [data-op]', { timeout: 60_000 });
    await page.selectOption('#layer', '-2');
    await page.waitForSelector('#graph svg [data-layer="0"]', { timeout: 60_000 });
    const order = await page.$$eval('#graph svg [data-layer]', (els) => els.map((e) => [Number(e.dataset.layer), e.getBoundingClientRect().top])
      .sort((a, b) => a[1] - b[1]).map((x) => x[0]).filter((l) => l >= 0));
    check(order.join() === '0,1,2,3,4,5,6,7', `layers top to bottom: ${order}`);
  });

  // ------------------------------------------------------------ phone, a11y
  await run('390 px phone: results before the editor, skip link, h1 → h2 → h3, 24 px targets, explain the fields', async (page) => {
    await page.setViewportSize({ width: 390, height: 844 });
    await page.goto(jobUrl(base, TEACH));
    await settled(page);
    const [mainTop, formTop] = await page.evaluate(() => [document.querySelector('main').getBoundingClientRect().top, document.querySelector('#job-form').getBoundingClientRect().top]);
    check(mainTop < formTop, `results (${mainTop}) above the editor (${formTop})`);
    check(mainTop < 844, `results start on the first screen: ${mainTop}`);
    await page.keyboard.press('Tab');
    check(await page.evaluate(() => document.activeElement?.classList.contains('skip-link')), 'the first Tab stop is the skip link');
    await page.keyboard.press('Enter');
    check(await page.evaluate(() => document.activeElement?.id === 'main'), 'the skip link moves focus to the results');
    // Headings never skip a level, on every tab.
    for (const tab of ['summary', 'graph', 'rank', 'downloads', 'plan']) {
      await page.click(`#tab-${tab}`);
      const levels = await page.$$eval('h1, h2, h3, h4, h5, h6', (hs) => hs.filter((x) => !x.closest('[hidden]')).map((x) => Number(x.tagName[1])));
      for (let i = 1; i < levels.length; i++) check(levels[i] <= levels[i - 1] + 1, `${tab}: heading levels ${levels.join(' ')}`);
    }
    await page.click('#tab-summary');
    // Every visible control of the editor and the views is at least 24 px
    // both ways (links inside sentences are exempt). A checkbox or radio
    // button's target is its whole label (a click on the text toggles it).
    const small = await page.$$eval('button, select, input:not([type=hidden]), [role=tab], summary', (els) => els
      .filter((e) => e.getClientRects().length > 0 && !e.closest('[hidden]'))
      .map((e) => (/^(checkbox|radio)$/.test(e.type) && e.closest('label')) || e)
      .map((e) => { const r = e.getBoundingClientRect(); return { id: e.id || e.name || e.textContent.trim().slice(0, 20), w: r.width, h: r.height }; })
      .filter((r) => r.w < 24 || r.h < 24));
    check(small.length === 0, `controls under 24 px: ${JSON.stringify(small.slice(0, 8))}`);
    // Explain the fields: the help shows under the fields, no hover needed.
    await page.click('#explain-fields');
    const help = await page.$$eval('.field-help', (els) => els.filter((e) => e.getClientRects().length > 0).length);
    check(help >= 5, `${help} field explanations shown`);
    check(await page.getAttribute('#explain-fields', 'aria-pressed') === 'true', 'the toggle says it is on');
    await checkAxe(page, 'phone with explanations');
  });

  return results;
}

// Alone: node tests/js/app-learn.mjs [name prefix]
if (import.meta.url === `file://${process.argv[1]}`) {
  const { runCasesAlone } = await import('./launch.mjs');
  await runCasesAlone(learnCases, path.join(REPO_ROOT, 'build/web'), process.argv[2]);
}
