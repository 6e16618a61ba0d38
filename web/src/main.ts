// The stagecraft web app (docs/web-app.md): job editor -> engine worker ->
// summary, symbolic graph (why each collective is there), rank preview
// (groups, node table, timeline, memory), downloads. This file is the
// controller: it wires the views (views/*) to the engine and writes the
// state (state.ts). The job is mirrored in the URL (#job=...) so a view can
// be shared.
import './style.css';
import { EngineRequestError } from './client';
import { JOB_PRESETS } from './job-schema';
import type { EngineError, JobJson } from './protocol';
import { renderSummary } from './views/summary';
import { renderSimulation } from './views/simulate';
import { renderServingSummary, renderSweep, sweepUnavailable, loadCapacity, loadLayouts } from './views/serving';
import { sweepConcurrencies } from './lib/serving';
import { loadGraph } from './views/graph-panel';
import { showRank, previewUnavailable, rankInput } from './views/rank-panel';
import './views/tabs';
import { initPlan, planJobChanged, renderPlan } from './views/plan';
import type { Plan } from './lib/plan';
import { buildEditor, readJob, writeJob, clearErrors, showError, unreadableNumber, useHfConfig, usePreset, renderModelSource, hfText, presetSelect, hfActive, applyMode, modeSelect } from './views/editor';
import { initWelcome, fetchHfConfig } from './views/welcome';
import { explain, isTooBig } from './messages';
import { state, current, client, planClient, compareClient, type Pinned, type Summary } from './state';
import { $, h } from './util';
import { fitOf, IF_IT_FITTED } from './fit';
import { renderCompare, renderRankCompare, type RankSide } from './views/compare';
import { initLessons, openFromUrl } from './views/lessons';
import { decodeTrace } from './lib/chakra';
import { schedule } from './lib/schedule';
import { wireByGroupKind } from './lib/comm';
import { on } from './bus';

const form = $<HTMLFormElement>('#job-form');
const statusEl = $('#engine-status');
const jobStatus = $('#job-status');
const summaryEl = $('#summary');

// A worker that died or whose wasm aborted has already been replaced by the
// client; say so next to the job, in words.
client.onCrash = (error) => {
  statusEl.textContent = `engine restarted after: ${error.message}`;
  if (error.code === 'engine_aborted') {
    clearErrors();
    showError(error);
    showTooBig(error);
  }
};

// ---------------------------------------------------------------- URL
function jobFromUrl(): JobJson | null {
  const m = /[#&]job=([^&]*)/.exec(location.hash);
  if (!m) return null;
  try { return JSON.parse(decodeURIComponent(m[1])) as JobJson; } catch { return null; }
}
// Deep equality of two JSON values, key order aside.
function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a as object), kb = Object.keys(b as object);
  return ka.length === kb.length && ka.every((k) => sameJson((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
}
// A link whose job the editor cannot show as given (malformed JSON, an
// unknown preset or key, a value of the wrong type: the form would drop
// or replace it) says so, with the engine's reason, instead of silently
// showing another job.
async function checkLinkJob(hadJob: boolean, fromUrl: JobJson | null): Promise<void> {
  const note = $<HTMLElement>('#link-note');
  let text = '';
  if (hadJob && fromUrl === null) {
    text = 'The link\u2019s job could not be read (it is not valid JSON): the editor shows the first example job instead.';
  } else if (fromUrl !== null && !sameJson(fromUrl, readJob())) {
    // Only when the form did not keep the job as given (the usual link is
    // the editor's own job, read back the same): then the engine says why.
    try {
      await client.request('inspect', { job: JSON.stringify(fromUrl) });
    } catch (e) {
      if (e instanceof EngineRequestError && !isTooBig(e.error)) {
        const x = explain(e.error);
        text = `The link\u2019s job is not valid as given (${x.lead.toLowerCase()}: ${e.error.path ? `${e.error.path}: ` : ''}${x.text}) The editor shows what it could read of it.`;
      }
    }
  }
  note.textContent = text;
  note.hidden = text === '';
}
// Compare: job A rides in the URL beside the editor's job (#job=B&a=A), so
// a link opens the same comparison; a lesson step as &lesson=<id>.<step>.
function pinnedFromUrl(): string | null {
  const m = /[#&]a=([^&]*)/.exec(location.hash);
  if (!m) return null;
  try { return JSON.stringify(JSON.parse(decodeURIComponent(m[1]))); } catch { return null; }
}
function jobToUrl(job: JobJson): void {
  const a = state.pinned ? `&a=${encodeURIComponent(state.pinned.jobText)}` : '';
  const m = /[#&]lesson=([^&]*)/.exec(location.hash);
  const lesson = m ? `&lesson=${m[1]}` : '';
  history.replaceState(null, '', `${location.search}#job=${encodeURIComponent(JSON.stringify(job))}${a}${lesson}`);
}

// ---------------------------------------------------------------- working / stale
// While the engine works on an edit, the views keep the previous job's
// results, greyed and labelled as such, with the elapsed time and a Stop
// button (which drops the request by replacing the worker).
let workingSince = 0;
let tick: ReturnType<typeof setInterval> | undefined;
// body[data-fresh]: current (the views show the editor's job), working (a
// newer job computes), stopped (Stop pressed: the form holds a job the
// views do not show), invalid (the editor's job has an error). Anything but
// current greys the result views (style.css) and says why in #job-status.
function setBusy(what: 'working' | 'ready' | 'error' | 'stopped'): void {
  document.body.dataset.state = what;
  const stale = what !== 'ready' && state.summary !== null;
  document.body.dataset.fresh = what === 'ready' ? 'current' : what === 'working' ? 'working' : what === 'stopped' ? 'stopped' : 'invalid';
  summaryEl.classList.toggle('stale', stale);
  $('main').setAttribute('aria-busy', String(what === 'working'));
  clearInterval(tick);
  if (what === 'working') {
    workingSince = performance.now();
    const show = () => {
      const s = (performance.now() - workingSince) / 1000;
      $('#job-status-text').textContent = `working… ${s >= 1 ? `${s.toFixed(0)} s` : ''}${stale ? ' — the views still show the previous job' : ''}${s >= 8 ? largeJobHint() : ''}`;
    };
    show();
    tick = setInterval(show, 500);
    jobStatus.hidden = false;
    $<HTMLButtonElement>('#stop').hidden = false;
  } else if (what === 'stopped') {
    $('#job-status-text').textContent = 'stopped — the views show the previous job; edit the job to try again';
    $<HTMLButtonElement>('#stop').hidden = true;
    jobStatus.hidden = false;
  } else if (what === 'error' && state.summary !== null) {
    $('#job-status-text').textContent = 'The job in the editor has an error (see the highlighted field): the views, greyed, still show the last job that computed.';
    $<HTMLButtonElement>('#stop').hidden = true;
    jobStatus.hidden = false;
  } else {
    jobStatus.hidden = true;
  }
}
// After a few seconds of engine time: why this job may be slow (the work
// grows with the micro-batches each rank runs), and what makes it smaller.
function largeJobHint(): string {
  try {
    const job = JSON.parse(state.jobText) as { parallel?: Record<string, number>; training?: Record<string, number> };
    const dp = Number(job.parallel?.dp ?? 1), mbs = Number(job.training?.micro_batch_size ?? 1), gbs = Number(job.training?.global_batch_size ?? 0);
    const m = gbs && dp && mbs ? gbs / (dp * mbs) : 0;
    return m >= 64 ? `. This job runs ${m.toLocaleString('en')} micro-batches per rank: raise data parallel (dp) or lower the global batch to make it smaller, or Stop.` : '. Stop drops it.';
  } catch { return ''; }
}
$('#stop').addEventListener('click', () => {
  clearTimeout(timer);  // an edit's update still waiting to start is dropped too
  state.generation++;
  client.supersede();
  setBusy('stopped');
});

function showTooBig(e: EngineError): void {
  const { lead, text, hint } = explain(e);
  summaryEl.classList.remove('stale');
  summaryEl.replaceChildren(h('div', { class: 'banner', role: 'alert', 'data-code': e.code, id: 'too-big-job' },
    h('strong', {}, `${lead}. `), text.charAt(0).toUpperCase() + text.slice(1), ' ', hint,
    h('p', {}, 'The command on the Downloads tab generates the same traces natively.')));
  state.summary = null;
}

// ---------------------------------------------------------------- update
// Every edit bumps the generation and drops whatever the engine was still
// doing for earlier edits (supersede: the worker is replaced), so the
// answer for the last edit never waits behind stale ones.
let timer: ReturnType<typeof setTimeout> | undefined;
function edited(delay = 200): void {
  state.generation++;
  client.supersede();
  setBusy('working');
  clearTimeout(timer);
  timer = setTimeout(() => void update(), delay);
}

async function update(): Promise<void> {
  const mine = ++state.generation;
  client.supersede();
  const job = readJob();
  jobToUrl(job);
  state.jobText = JSON.stringify(job);
  planJobChanged(state.jobText);
  setBusy('working');
  renderModelSource(null);
  try {
    // Text a number field cannot hold is the user's error, not the default.
    const bad = unreadableNumber();
    if (bad) throw new EngineRequestError({ code: 'invalid_argument', path: bad.path, message: `“${bad.title}” is not a number: type digits, e.g. 2048 or 0.5` });
    const r = await client.request('inspect', { job: state.jobText });
    if (!current(mine)) return;
    clearErrors();
    state.summary = r.summary;
    state.summaryJob = state.jobText;
    const inference = (r.summary as any).inference !== undefined;
    if (inference) {
      renderServingSummary(summaryEl, r.summary);
      loadLayouts(r.summary, state.jobText, (job) => client.request('servingCapacity', { job }), () => current(mine), (e) => explain(e).text);
    }
    else renderSummary(summaryEl, r.summary);
    summaryEl.dataset.mode = inference ? 'inference' : 'training';
    summaryEl.classList.remove('stale');
    summaryEl.dataset.worldSize = String(r.summary.world_size);
    summaryEl.dataset.job = state.jobText;
    renderModelSource((r.summary as any).job?.model ?? null, (r.summary as any).hf_import?.warnings ?? []);
    renderFit();
    // The step time below is the previous job's until this job's arrives.
    $('#simulation').dataset.fresh = state.simJob === state.jobText ? 'current' : 'pending';
    rankInput().max = String(Number(r.summary.world_size) - 1);
    if (Number(rankInput().value) >= Number(r.summary.world_size)) rankInput().value = '0';
    try {
      await showRank(Number(rankInput().value) || 0, mine);
    } catch (e) {
      // The summary stands on its own: a rank the browser cannot build
      // (too big, engine aborted) degrades to the summary without preview.
      if (!current(mine)) return;
      const err = e instanceof EngineRequestError ? e.error : { code: 'error', message: String(e), path: '' };
      if (err.code === 'superseded') return;
      previewUnavailable(err);
    }
    if (!current(mine)) return;
    setBusy('ready');
    if (inference) void loadGraph(mine).then(() => loadSweep(mine)).then(() => {
      if (current(mine) && state.summary) return loadCapacity(state.summary, state.jobText, (job) => client.request('servingCapacity', { job }), () => current(mine), (e) => explain(e).text);
    });
    else void loadGraph(mine).then(() => loadSimulation(mine));
  } catch (e) {
    if (!current(mine)) return;
    const err = e instanceof EngineRequestError ? e.error : { code: 'error', message: String(e), path: '' };
    if (err.code === 'superseded') return;
    clearErrors();
    showError(err);
    if (isTooBig(err)) showTooBig(err);
    else if (state.summary === null) {
      summaryEl.replaceChildren(h('p', { class: 'hint' }, 'Fix the highlighted field to see the summary.'));
    }
    // Otherwise the last valid job's views stay, greyed and labelled.
    setBusy('error');
  }
}

// ---------------------------------------------------------------- editor wiring
form.addEventListener('input', (e) => {
  const t = e.target as HTMLElement;
  if (t.id === 'job-preset' || t.id === 'hf-id') return;
  if (t === hfText()) {
    // Pasting or typing a config makes it the model (overrides cleared).
    if (!hfText().value.trim()) hfText().dataset.active = '';
    else if (!hfActive()) useHfConfig();
    renderModelSource(null);
  } else if (t === presetSelect()) {
    usePreset();
  } else if (t === modeSelect()) {
    applyMode();
  }
  edited();
});
function loadPreset(id: string): void {
  const p = JOB_PRESETS.find((x) => x.id === id);
  if (!p) return;
  $<HTMLSelectElement>('#job-preset').value = id;
  writeJob(p.job);
  renderModelSource(null);
  edited(0);
}
$('#job-preset').addEventListener('change', () => loadPreset($<HTMLSelectElement>('#job-preset').value));
// A Hugging Face config.json dropped on the box.
const drop = $('#hf-drop');
drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('over'); });
drop.addEventListener('dragleave', () => drop.classList.remove('over'));
drop.addEventListener('drop', async (e) => {
  e.preventDefault();
  drop.classList.remove('over');
  const file = e.dataTransfer?.files[0];
  if (!file) return;
  useHfConfig(await file.text());
  edited(0);
});
// A model by Hugging Face id, fetched from the hub by the browser.
$('#hf-load').addEventListener('click', async () => {
  const id = $<HTMLInputElement>('#hf-id').value;
  const msg = $('#hf-status');
  msg.textContent = `fetching ${id.trim()}’s config.json…`;
  msg.classList.remove('error');
  try {
    const text = await fetchHfConfig(id);
    useHfConfig(text);
    msg.textContent = `loaded ${id.trim()}’s config.json from the hub.`;
    edited(0);
  } catch (e) {
    msg.textContent = e instanceof Error ? e.message : String(e);
    msg.classList.add('error');
  }
});
$('#hf-id').addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); $<HTMLButtonElement>('#hf-load').click(); } });

// The simulated step time, after the graph (an engine without the
// simulator answers `unsupported`: the section stays hidden).
async function loadSimulation(mine: number): Promise<void> {
  const el = $('#simulation');
  try {
    const { simulation } = await client.request('simulate', { job: state.jobText });
    if (!current(mine)) return;
    el.hidden = false;
    state.simulation = simulation;
    state.simJob = state.jobText;
    renderSimulation(el, simulation, { fit: state.fit, pipeline: (state.summary as any)?.pipeline });
    el.dataset.fresh = 'current';
    renderComparison();
  } catch (e) {
    if (!current(mine)) return;
    const err = e instanceof EngineRequestError ? e.error : { code: 'error', message: String(e), path: '' };
    if (err.code === 'superseded') return;
    el.hidden = err.code === 'unsupported';
    el.dataset.step = '';
    el.dataset.fresh = 'current';
    state.simulation = null;
    state.simJob = state.jobText;
    el.replaceChildren(h('h3', {}, 'Step time (simulated)'), h('p', { class: 'hint' }, `Not available for this job: ${explain(err).text}`));
  }
}

// Inference jobs: the latency-throughput curve from the engine's
// serving_sweep, over 1, 2, 4, … up to the sequences that fit.
async function loadSweep(mine: number): Promise<void> {
  $('#simulation').hidden = true;
  state.simulation = null;
  state.simJob = state.jobText;
  renderComparison();
  const el = document.getElementById('sweep');
  const inf = (state.summary as any)?.inference;
  if (!el || !inf) return;
  const own = Number(inf.concurrency ?? inf.concurrency_used ?? 0);
  // Multiples of the decode iteration's attention dp (summary.layout).
  const list = sweepConcurrencies(Number(inf.max_concurrent_sequences), own, 12, Number((state.summary as any)?.layout?.dp) || 1);
  if (!list.length) { sweepUnavailable(el, 'No sequence fits beside the weights on every rank, so there is no curve: raise tp (or ep), use fp8 weights or an fp8 KV cache, or shorten the sequences.'); return; }
  try {
    const { sweep } = await client.request('servingSweep', { job: state.jobText, concurrency: list });
    if (!current(mine)) return;
    renderSweep(el, sweep, own);
  } catch (e) {
    if (!current(mine)) return;
    const err = e instanceof EngineRequestError ? e.error : { code: 'error', message: String(e), path: '' };
    if (err.code === 'superseded') return;
    sweepUnavailable(el, `Not available for this job: ${explain(err).text}`);
  }
}

// A planned layout into the editor: its parallel and training fields over
// the editor's job (the model source and hardware stay as the user gave
// them; the planner kept them too).
initPlan((planned) => {
  const base = readJob();
  writeJob({ ...base, parallel: planned.parallel ?? {}, training: { ...(base.training as JobJson ?? {}), ...(planned.training as JobJson ?? {}) } });
  renderModelSource(null);
  edited(0);
});

// ---------------------------------------------------------------- fit
// A layout that does not fit in GPU memory still gets a step time from the
// simulator: the banner above the views (shown on every tab) and the step
// time's card say it is what the time would be, if it fitted.
function renderFit(): void {
  const fit = fitOf(state.summary);
  state.fit = fit;
  const el = $('#fit-banner');
  document.body.dataset.fits = fit ? String(fit.fits) : '';
  if (!fit || fit.fits) { el.hidden = true; el.replaceChildren(); return; }
  el.hidden = false;
  el.replaceChildren(h('strong', {}, 'This layout does not fit in GPU memory. '), fit.text.replace(/^Does not fit: /, 'It needs '),
    ` Every time and throughput shown for it (step time, MFU, tokens/s, the timelines) is what it ${IF_IT_FITTED}. `,
    state.summary?.inference ? 'Raise tp (or ep), use fp8 weights or an fp8 KV cache, or shorten the sequences.'
      : 'Raise tp or pp (ep for experts), use ZeRO, recompute activations, or a smaller micro-batch.');
}

// ---------------------------------------------------------------- compare
// Pin the job shown as A; the editor's job is B. A's figures come from its
// own worker (compareClient) so B's edits never supersede them.
async function computeSide(jobText: string): Promise<Pinned> {
  const side: Pinned = { jobText, summary: null, simulation: null };
  try {
    const { summary } = await compareClient().request('inspect', { job: jobText });
    side.summary = summary;
    if ((summary as any).inference === undefined) {
      try { side.simulation = (await compareClient().request('simulate', { job: jobText })).simulation; } catch { /* no simulator: figures without times */ }
    }
  } catch (e) {
    side.error = e instanceof EngineRequestError ? explain(e.error).text : String(e);
  }
  return side;
}
// A is the job in the editor now (the form, even before its own answers
// arrive: a lesson pins its step's job the moment it loads it). Its figures
// are the editor's when they belong to that job, else computed on the
// compare worker (`computing` until they are: settled() waits for them).
function pin(on: boolean): void {
  if (!on) {
    state.pinned = null;
  } else {
    const jobText = JSON.stringify(readJob());
    const summary = state.summaryJob === jobText ? state.summary : null;
    const simulation = state.simJob === jobText ? state.simulation : null;
    state.pinned = { jobText, summary, simulation };
    const training = summary ? (summary as any).inference === undefined : true;
    if (!summary || (training && !simulation)) {
      state.pinned.computing = true;
      void computeSide(jobText).then((p) => { if (state.pinned?.jobText === p.jobText) { state.pinned = p; renderComparison(); } });
    }
  }
  jobToUrl(readJob());
  renderComparison();
  if (state.preview) void rankComparison(state.preview.rank);
}
$('#pin').addEventListener('click', () => pin(true));
// "Stop comparing" hides itself: the focus goes to the pin button.
$('#unpin').addEventListener('click', () => { pin(false); $('#pin').focus(); });
function renderComparison(): void {
  const el = $('#compare');
  const a = state.pinned;
  $('#unpin').hidden = !a;
  $('#pin').textContent = a ? 'Pin this job as A instead' : 'Pin this job as A, to compare';
  document.body.dataset.compare = a ? 'on' : '';
  $('#pin-status').textContent = a ? 'Comparing: A is pinned, B is the editor’s job.' : '';
  if (!a) { el.hidden = true; el.replaceChildren(); $('#rank-compare').hidden = true; return; }
  if (a.jobText === state.simJob && !a.simulation && state.simulation) a.simulation = state.simulation;
  el.hidden = false;
  renderCompare(el, a, { jobText: state.jobText, summary: state.summaryJob === state.jobText ? state.summary : null,
    simulation: state.simJob === state.jobText ? state.simulation : null });
}
// One side of the rank comparison: the rank's trace, scheduled as the
// rank preview schedules it (lib/schedule.js under the job's hardware;
// groups inside one node use the intra-node bandwidth).
// summary: the job's, when known (else asked for: the hardware profile).
async function rankSide(jobText: string, rank: number, known: Summary | null): Promise<RankSide> {
  const [{ bytes }, { text }, summary] = await Promise.all([
    compareClient().request('rankTrace', { job: jobText, rank }),
    compareClient().request('groups', { job: jobText }),
    known ?? compareClient().request('inspect', { job: jobText }).then((r) => r.summary as Summary)]);
  const table = JSON.parse(text) as Record<string, number[]>;
  const nodes = decodeTrace(new Uint8Array(bytes)).nodes;
  const computeUs = nodes.filter((n) => n.type !== 5 && n.type !== 6 && n.type !== 7).reduce((a, n) => a + n.duration, 0);
  // A group's axis is the end of its collectives' names ("…all_reduce(tp)").
  const axisOf = new Map<string, string>();
  for (const n of nodes) if (n.attrs.pg_name !== undefined) axisOf.set(String(n.attrs.pg_name), /\(([^()]+)\)$/.exec(n.name)?.[1] ?? '?');
  const wire = wireByGroupKind(nodes, (pg) => (table[pg] ? { axis: axisOf.get(pg) ?? '?', size: table[pg].length } : undefined));
  const hw = (summary?.job?.hardware ?? {}) as { intra_node_bw?: number; inter_node_bw?: number; gpus_per_node?: number };
  const perNode = Number(hw.gpus_per_node) || 8;
  const links = new Map(Object.entries(table).map(([pg, m]) => [pg, { size: m.length,
    intraNode: Math.floor(m[0] / perNode) === Math.floor(m[m.length - 1] / perNode) }]));
  return { trace: { rank, nodes, sched: schedule(nodes, hw, links) }, nodes: nodes.length, computeUs, wire };
}
let rankCmpSeq = 0;
async function rankComparison(rank: number): Promise<void> {
  const el = $('#rank-compare');
  const a = state.pinned;
  if (!a || state.summary?.inference !== undefined || a.summary?.inference !== undefined) { el.hidden = true; return; }
  const seq = ++rankCmpSeq;
  el.hidden = false;
  const aWorld = Number(a.summary?.world_size);
  try {
    const b = await rankSide(state.jobText, rank, state.summaryJob === state.jobText ? state.summary : null);
    const aSide = aWorld && rank >= aWorld ? `A has ${aWorld} ranks: rank ${rank} is not one of them.` : await rankSide(a.jobText, rank, a.summary);
    if (seq !== rankCmpSeq) return;
    renderRankCompare(el, rank, aSide, b, state.preview?.info);
  } catch (e) {
    if (seq !== rankCmpSeq) return;
    renderRankCompare(el, rank, `Could not build rank ${rank} of both jobs: ${e instanceof EngineRequestError ? explain(e.error).text : String(e)}`, { trace: { rank, nodes: [], sched: schedule([], undefined) }, nodes: 0, computeUs: 0, wire: { rows: [], total: { sent: 0 } } });
  }
}
on('rank-shown', (rank) => void rankComparison(rank));

// ---------------------------------------------------------------- lessons
function settled(): Promise<void> {
  return new Promise((resolve) => {
    const check = () => {
      const done = document.body.dataset.state === 'ready' && state.summaryJob === state.jobText &&
        (state.summary?.inference !== undefined || state.simJob === state.jobText) && !state.pinned?.computing;
      if (done) resolve(); else setTimeout(check, 100);
    };
    check();
  });
}
function setPath(job: JobJson, path: string, v: unknown): void {
  const keys = path.split('.');
  let o = job as Record<string, unknown>;
  for (const k of keys.slice(0, -1)) o = (o[k] ??= {}) as Record<string, unknown>;
  o[keys[keys.length - 1]] = v;
}
initLessons($('#lessons'), $<HTMLButtonElement>('#show-lessons'), {
  loadJob: (job) => { writeJob(job); renderModelSource(null); edited(0); },
  setFields: (set) => { const job = readJob(); for (const [p, v] of Object.entries(set)) setPath(job, p, v); writeJob(job); renderModelSource(null); edited(0); },
  job: () => readJob(),
  pin,
  settled,
});

// ---------------------------------------------------------------- explain
// Field help in words, under each field (touch cannot open a tooltip).
$('#explain-fields').addEventListener('click', () => {
  const on = !form.classList.contains('explain');
  form.classList.toggle('explain', on);
  $('#explain-fields').setAttribute('aria-pressed', String(on));
  for (const label of form.querySelectorAll<HTMLElement>('label[title]')) {
    label.querySelector(':scope > .field-help')?.remove();
    if (on) label.append(h('span', { class: 'field-help' }, label.title));
  }
});
$('#panel-plan').prepend(h('h2', { class: 'sr-only' }, 'Plan'));

// For the benchmark and tests.
(window as unknown as { stagecraftApp: unknown }).stagecraftApp = {
  preview: (rank: number) => showRank(rank),
  state: () => document.body.dataset.state,
  engine: () => ({ spawned: client.spawned, busy: client.busy }),
  selfTestAbort: () => client.request('selfTestAbort', {}).catch((e: EngineRequestError) => e.error),
  selfTestHold: (ms: number) => client.request('selfTestHold', { ms }),
  planEngine: () => ({ spawned: planClient().spawned, busy: planClient().busy }),
  // Draws a plan answer without running the search (hand-made plans in tests).
  showPlan: (plan: Plan) => renderPlan(plan),
  job: () => readJob(),
  pinned: () => state.pinned,
};

async function boot(): Promise<void> {
  try {
    const [{ version }, { presets }] = await Promise.all([client.request('version', {}), client.request('presets', {})]);
    statusEl.textContent = `engine ${version} (wasm, in a worker)`;
    if (!form.querySelector('.generated')) buildEditor(presets);
    $<HTMLSelectElement>('#job-preset').replaceChildren(h('option', { value: '' }, 'choose a job preset…'), ...JOB_PRESETS.map((p) => h('option', { value: p.id }, p.title)));
    const hadJob = /[#&]job=/.test(location.hash);
    const fromUrl = jobFromUrl();
    initWelcome(new Map(JOB_PRESETS.map((p) => [p.id, p.title])), loadPreset, fromUrl === null && !/[#&]lesson=/.test(location.hash));
    writeJob(fromUrl ?? JOB_PRESETS[0].job);
    const a = pinnedFromUrl();
    if (a) { state.pinned = { jobText: a, summary: null, simulation: null, computing: true }; void computeSide(a).then((p) => { if (state.pinned?.jobText === a) { state.pinned = p; renderComparison(); } }); }
    await update();
    void checkLinkJob(hadJob, fromUrl);
    openFromUrl();
  } catch (e) {
    statusEl.textContent = `engine unavailable: ${e instanceof Error ? e.message : String(e)}`;
  }
}
void boot();
