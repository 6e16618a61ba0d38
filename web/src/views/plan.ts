// The Plan tab (docs/web-app.md "Plan"): the planner of docs/plan.md run
// on the editor's job in its own engine worker. Inputs: GPUs, an optional
// time limit and the search's constraints (fixed or bounded degrees,
// allowed schedules and recompute modes, memory reserve, objective). While
// it runs: the phase's progress (a total that does not shrink), elapsed
// time and an estimate, Cancel (the worker is terminated and a fresh one
// started: the engine call is synchronous), and the best so far, drawn
// each time the engine reports that it changed. The answer: counts by
// reason, the "why" lines, a scatter of step time against peak memory per
// GPU (both axes from zero) with the Pareto front, the GPU's capacity and
// the editor's own layout, and a sortable table whose Load buttons (first
// column) put a candidate's layout into the editor, with each row's notes
// (same-step alternatives, low confidence, what bounds it). When nothing
// fits, the closest misses in words. The request and its latest answer
// live in sessionStorage: a reload restores a finished plan, or shows the
// best found before the reload and says the search stopped there.
import { EngineRequestError, type Call } from '../client';
import { paretoFront, sortCandidates, layoutText, layoutOfJob, exposedTotal, gapText, secondsText, remainingSeconds, alternativesText, type Plan, type PlanCandidate, type SortKey } from '../lib/plan';
import { fitOf } from '../fit';
import { explain } from '../messages';
import type { JobJson, Progress, Simulation } from '../protocol';
import { planClient, state } from '../state';
import { $, h, s, fmtBytes, fmtCount } from '../util';

// Degrees the search may fix or bound (constraint keys: docs/plan.md).
const DEGREES: [string, string][] = [
  ['tp', 'tensor parallel (tp)'], ['cp', 'context parallel (cp)'], ['pp', 'pipeline stages (pp)'],
  ['vp', 'virtual stages (v)'], ['dp', 'data parallel (dp)'], ['ep', 'expert parallel (ep)'],
  ['mbs', 'micro-batch'],
];
// Allow-lists (all allowed when every box is ticked; nothing is sent then).
const ALLOW: [string, string, string[]][] = [
  ['schedules', 'Pipeline schedules', ['1f1b', 'gpipe', 'interleaved-1f1b', 'zero-bubble']],
  ['recompute', 'Recompute modes', ['none', 'selective', 'full']],
  ['zero', 'ZeRO stages', ['0', '1', '2', '3']],
  ['orders', 'Rank orders', ['megatron', 'llama3']],
];
const GIB = 1024 ** 3;

const sec = (x: number) => (x >= 1 ? `${x.toFixed(2)} s` : `${(x * 1e3).toFixed(1)} ms`);
const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
const PHASES = ['validate', 'estimate', 'simulate'];
const PHASE_WORDS: Record<string, string> = {
  validate: 'checking layouts', estimate: 'estimating memory and bounds', simulate: 'simulating in order of the bound',
};
// sessionStorage key of the plan request and its latest answer (a reload
// restores it; docs/web-app.md "Plan").
const STORE = 'stagecraft.plan.v1';

// The editor's own layout, simulated once per run: a marked point.
interface Yours { layout: string; gpus: number; step: number; mem: number; fits: boolean }
interface Stored {
  request: { job: string; gpus: number; constraints: Record<string, unknown>; time_limit_seconds?: number };
  status: 'running' | 'done' | 'cancelled' | 'failed';
  started: number;  // Date.now() at the start
  seconds?: number; // run time when it ended
  progress?: Progress;
  plan?: Plan;      // the final plan, or the best so far
  yours?: Yours;
}

let onLoad: (job: JobJson, c: PlanCandidate) => void = () => {};
let running: Call<{ plan: Plan }> | null = null;
let shown: Plan | null = null;
let yours: Yours | null = null;
let yoursTried = false;  // a run (or a restored one) tried to simulate it
let sortKey: SortKey = 'rank';
let sortDir: 'asc' | 'desc' = 'asc';
let record: Stored | null = null;
let partials = 0;
let cancelRequested = false;

function save(): void {
  if (!record) return;
  try { sessionStorage.setItem(STORE, JSON.stringify(record)); } catch {
    // Over the quota (a very large plan): keep the request, drop the answer.
    try { sessionStorage.setItem(STORE, JSON.stringify({ ...record, plan: undefined })); } catch { /* storage off */ }
  }
}
function load(): Stored | null {
  try {
    const r = JSON.parse(sessionStorage.getItem(STORE) ?? 'null') as Stored | null;
    return r && typeof r === 'object' && r.request && typeof r.request.gpus === 'number' ? r : null;
  } catch { return null; }
}

// The world size of a job (what the GPUs field starts from).
function worldSize(job: JobJson): number {
  const p = (job.parallel ?? {}) as Record<string, number>;
  return (p.dp ?? 1) * (p.tp ?? 1) * (p.pp ?? 1) * (p.cp ?? 1);
}

// Builds the inputs once; `load` puts a candidate's job into the editor.
// A plan of this tab's session (sessionStorage) is restored.
export function initPlan(loadJob: (job: JobJson, c: PlanCandidate) => void): void {
  onLoad = loadJob;
  const panel = $('#panel-plan');
  const num = (name: string, label: string, attrs: Record<string, string | number | boolean> = {}) =>
    h('label', {}, `${label} `, h('input', { type: 'number', name, min: 1, step: 1, inputmode: 'numeric', ...attrs }));
  const degreeRows = DEGREES.map(([k, t]) => h('tr', {}, h('th', { scope: 'row' }, t),
    h('td', {}, h('input', { type: 'number', name: `fix-${k}`, min: 1, step: 1, inputmode: 'numeric', 'aria-label': `${t}: fixed to` })),
    h('td', {}, h('input', { type: 'number', name: `min-${k}`, min: 1, step: 1, inputmode: 'numeric', 'aria-label': `${t}: at least` })),
    h('td', {}, h('input', { type: 'number', name: `max-${k}`, min: 1, step: 1, inputmode: 'numeric', 'aria-label': `${t}: at most` }))));
  const checks = (name: string, legend: string, values: string[]) => h('fieldset', { class: 'plan-checks' }, h('legend', {}, legend),
    ...values.map((v) => h('label', { class: 'check' }, h('input', { type: 'checkbox', name, value: v, checked: true }), ` ${v}`)));
  const form = h('form', { id: 'plan-form', 'aria-label': 'Plan inputs', novalidate: true },
    h('p', { class: 'hint', id: 'plan-base' }),
    h('div', { class: 'toolbar' },
      num('gpus', 'GPUs', { id: 'plan-gpus', required: true }),
      h('label', {}, 'Rank by ', h('select', { name: 'objective', id: 'plan-objective' },
        h('option', { value: 'step_time' }, 'step time'), h('option', { value: 'tokens_per_gpu' }, 'tokens / s per GPU'))),
      h('label', {}, 'Memory reserve (GiB) ', h('input', { type: 'number', name: 'reserve', min: 0, step: 'any', placeholder: 'derived (h100: 1.8)', inputmode: 'decimal' })),
      num('top', 'Layouts ranked', { value: 10, max: 200 }),
      h('label', {}, 'Time limit (s) ', h('input', { type: 'number', name: 'time_limit', id: 'plan-time-limit', min: 0, step: 'any', placeholder: 'none', inputmode: 'decimal' }))),
    h('details', {}, h('summary', {}, 'constraints: fix or bound degrees, schedules, recompute'),
      h('div', { class: 'table-scroll' }, h('table', { class: 'plan-degrees' },
        h('caption', {}, 'Degrees (empty: searched)'),
        h('thead', {}, h('tr', {}, ...['degree', 'fixed to', 'at least', 'at most'].map((x) => h('th', { scope: 'col' }, x)))),
        h('tbody', {}, ...degreeRows))),
      ...ALLOW.map(([k, t, values]) => checks(k, `${t} allowed`, values))),
    h('p', { class: 'toolbar' },
      h('button', { type: 'submit', id: 'plan-run' }, 'Run plan'),
      h('button', { type: 'button', id: 'plan-cancel', hidden: true }, 'Cancel'),
      h('progress', { id: 'plan-progress', hidden: true, 'aria-label': 'Plan progress' }),
      h('span', { id: 'plan-status', role: 'status' })),
    h('p', { id: 'plan-error', class: 'error', 'aria-live': 'polite' }));
  panel.replaceChildren(form, h('div', { id: 'plan-restored', 'aria-live': 'polite' }), h('div', { id: 'plan-result' }));
  form.addEventListener('submit', (e) => { e.preventDefault(); void run(); });
  $('#plan-cancel').addEventListener('click', cancel);
  restore();
}

// The editor's job changed: the GPUs field follows it until the user
// types their own; the base line names what the search keeps fixed.
export function planJobChanged(jobText: string): void {
  let job: JobJson;
  try { job = JSON.parse(jobText) as JobJson; } catch { return; }
  const gpus = $<HTMLInputElement>('#plan-gpus');
  if (!gpus.dataset.touched) gpus.value = String(worldSize(job));
  gpus.oninput = () => { gpus.dataset.touched = '1'; };
  const m = job.model as JobJson | undefined, t = (job.training ?? {}) as Record<string, unknown>;
  const model = m?.hf_config ? 'the pasted Hugging Face config' : `model ${String(m?.preset ?? 'gpt3-1.7b')}`;
  const hw = typeof job.hardware === 'string' ? job.hardware : String((job.hardware as JobJson | undefined)?.preset ?? 'h100');
  const need = (k: string, words: string) => t[k] === undefined ? `${words} not set (the plan needs it: set it in the editor)` : `${words} ${String(t[k])}`;
  // A restored plan made for another job than the editor's now.
  const note = document.querySelector('#plan-restored');
  if (record && note?.firstChild && !running) {
    document.querySelector('#plan-other-job')?.remove();
    if (record.request.job !== jobText) note.append(h('p', { class: 'hint', id: 'plan-other-job' }, 'The plan above was made for another job than the editor’s now (Run plan plans the editor’s job; Load puts a layout onto it).'));
  }
  $('#plan-base').textContent = `Searches layouts for the editor’s job: ${model}, ${need('seq_len', 'sequence')}, ${need('global_batch_size', 'global batch')}, GPU ${hw}. The model, batch and hardware stay; the parallel layout, micro-batch, schedule and recompute are searched.`;
}

// The request's arguments from the inputs: {gpus, constraints[, time_limit_seconds]}.
// The label of each input of the plan form, by its name and by the
// request path the engine names in its errors (constraints.min_tp, gpus…).
function inputLabels(): Map<string, string> {
  const m = new Map<string, string>([['gpus', 'GPUs'], ['reserve', 'Memory reserve (GiB)'], ['top', 'Layouts ranked'],
    ['time_limit', 'Time limit (s)'], ['objective', 'Rank by']]);
  for (const [k, t] of DEGREES) {
    m.set(`fix-${k}`, `${t}: fixed to`); m.set(`min-${k}`, `${t}: at least`); m.set(`max-${k}`, `${t}: at most`);
  }
  return m;
}
function inputOfPath(path: string): string | undefined {
  // The request door names constraints.<key>, the planner's own checks plan.<key>.
  const p = path.replace(/^(constraints|plan)\./, '');
  if (path === 'gpus') return 'gpus';
  if (path === 'time_limit_seconds') return 'time_limit';
  if (p === 'memory_reserve_gib' || p === 'memory_reserve_fraction') return 'reserve';
  if (p === 'top' || p === 'objective') return p;
  const d = /^(min_|max_)?(\w+)$/.exec(p);
  if (d && DEGREES.some(([k]) => k === d[2])) return `${d[1] ? d[1].slice(0, 3) : 'fix'}-${d[2]}`;
  return undefined;
}
// A number input whose text the browser could not read ("5e", "--3"): its
// value reads as '' and would silently mean "the default".
function unreadableInput(): string | undefined {
  const form = $<HTMLFormElement>('#plan-form');
  for (const el of form.querySelectorAll<HTMLInputElement>('input[type=number]')) if (el.validity.badInput) return el.name;
  return undefined;
}
function markInvalid(name: string | undefined): void {
  const form = $<HTMLFormElement>('#plan-form');
  for (const el of form.querySelectorAll('[aria-invalid]')) el.removeAttribute('aria-invalid');
  if (!name) return;
  const el = form.elements.namedItem(name) as HTMLElement | null;
  el?.setAttribute('aria-invalid', 'true');
  el?.closest('details')?.setAttribute('open', '');
}

export function planArgs(): { gpus: number; constraints: Record<string, unknown>; time_limit_seconds?: number } {
  const form = $<HTMLFormElement>('#plan-form');
  const val = (name: string) => (form.elements.namedItem(name) as HTMLInputElement).value.trim();
  const constraints: Record<string, unknown> = { objective: val('objective') };
  for (const [k] of DEGREES) {
    if (val(`fix-${k}`)) constraints[k] = Number(val(`fix-${k}`));
    if (val(`min-${k}`)) constraints[`min_${k}`] = Number(val(`min-${k}`));
    if (val(`max-${k}`)) constraints[`max_${k}`] = Number(val(`max-${k}`));
  }
  for (const [k, , values] of ALLOW) {
    const on = [...form.querySelectorAll<HTMLInputElement>(`input[name=${k}]:checked`)].map((x) => x.value);
    if (on.length < values.length) constraints[k] = k === 'zero' ? on.map(Number) : on;
  }
  if (val('reserve')) constraints.memory_reserve_gib = Number(val('reserve'));
  if (val('top')) constraints.top = Number(val('top'));
  const out: { gpus: number; constraints: Record<string, unknown>; time_limit_seconds?: number } = { gpus: Number(val('gpus')), constraints };
  if (val('time_limit')) out.time_limit_seconds = Number(val('time_limit'));
  return out;
}

// The inputs of a stored request, back into the form (after a reload).
function fillArgs(gpus: number, constraints: Record<string, unknown>, limit?: number): void {
  const form = $<HTMLFormElement>('#plan-form');
  const set = (name: string, v: unknown) => { const el = form.elements.namedItem(name) as HTMLInputElement | null; if (el) el.value = v === undefined ? '' : String(v); };
  const g = $<HTMLInputElement>('#plan-gpus');
  g.value = String(gpus); g.dataset.touched = '1';
  set('objective', constraints.objective ?? 'step_time');
  for (const [k] of DEGREES) { set(`fix-${k}`, constraints[k]); set(`min-${k}`, constraints[`min_${k}`]); set(`max-${k}`, constraints[`max_${k}`]); }
  for (const [k] of ALLOW) {
    const allowed = constraints[k] as unknown[] | undefined;
    for (const box of form.querySelectorAll<HTMLInputElement>(`input[name=${k}]`)) box.checked = !allowed || allowed.map(String).includes(box.value);
  }
  set('reserve', constraints.memory_reserve_gib);
  if (constraints.top !== undefined) set('top', constraints.top);
  set('time_limit', limit);
}

function setRunning(on: boolean): void {
  // Cancel hides itself when the run ends: the focus goes to Run, not to <body>.
  const cancelHadFocus = document.activeElement === $('#plan-cancel');
  $<HTMLButtonElement>('#plan-run').disabled = on;
  $('#plan-cancel').hidden = !on;
  if (!on && cancelHadFocus) $<HTMLButtonElement>('#plan-run').focus();
  $('#plan-progress').hidden = !on;
  $('#panel-plan').setAttribute('aria-busy', String(on));
  document.body.dataset.plan = on ? 'running' : shown ? 'done' : 'idle';
}

// Counts of layouts are written out in full, however large (exact counts).
const exact = (x: number) => Math.round(x).toLocaleString('en');
const secs = (x: number) => (x < 60 ? `${x.toFixed(x < 10 ? 1 : 0)} s` : `${Math.floor(x / 60)} min ${Math.round(x % 60)} s`);
let phaseStart = 0, phaseName = '', runStart = 0;

// Progress: the phase (1 of 3 ...), done of total (each phase's total does
// not shrink: the engine's), elapsed time and, from the phase's rate so
// far, an estimate of what is left of it. The best so far, when the
// engine sends one, is drawn at once.
function onProgress(p: Progress): void {
  const now = performance.now();
  if (p.phase !== phaseName) { phaseName = p.phase; phaseStart = now; }
  const bar = $<HTMLProgressElement>('#plan-progress');
  if (p.total > 0) { bar.max = p.total; bar.value = p.done; } else bar.removeAttribute('value');
  const step = PHASES.indexOf(p.phase);
  const left = remainingSeconds(p.done, p.total, (now - phaseStart) / 1000);
  // The simulate step's count moves by the layouts the bound cuts (no time
  // each) as much as by those simulated: no time from it, the layouts
  // still to decide instead (as the CLI says it).
  const leftText = p.phase === 'simulate'
    ? (p.total > p.done ? ` · ${exact(p.total - p.done)} left to decide (simulated or cut by the bound)` : '')
    : left === null || now - phaseStart < 1000 ? '' : ` · about ${secs(left)} left in this step at its rate so far`;
  $('#plan-status').textContent = p.phase === 'fit'
    ? `Nothing fits on these GPUs: looking for the smallest GPU count that does (count ${exact(Math.min(p.done + 1, p.total))} of at most ${exact(p.total)}) · ${secs((now - runStart) / 1000)} elapsed`
    : `${step >= 0 ? `step ${step + 1} of 3, ` : ''}${PHASE_WORDS[p.phase] ?? p.phase}: ${exact(p.done)} of ${exact(p.total)} layouts · ${secs((now - runStart) / 1000)} elapsed${leftText}`;
  document.body.dataset.planProgress = String(p.done);
  document.body.dataset.planTotal = String(p.total);
  document.body.dataset.planPhase = p.phase;
  if (record) { record.progress = { done: p.done, total: p.total, phase: p.phase }; }
  if (p.best) {
    partials++;
    document.body.dataset.planPartials = String(partials);
    // For the benchmark (tests/js/bench-plan.mjs): ms from Run to the first best so far.
    if (partials === 1) document.body.dataset.planFirstBestMs = String(Math.round(now - runStart));
    if (record) record.plan = p.best;
    renderPlan(p.best, { running: true, keepSort: true });
  }
  save();
}

// The editor's own layout: step time and peak memory, from the app's
// current answers when they are for this job, else simulated once here.
async function yourLayout(jobText: string): Promise<Yours | null> {
  let job: JobJson;
  try { job = JSON.parse(jobText) as JobJson; } catch { return null; }
  if ((job as { mode?: string }).mode === 'inference') return null;
  let sim: Simulation | null = state.simJob === jobText ? state.simulation : null;
  let summary = state.summaryJob === jobText ? state.summary : null;
  try {
    if (!summary) summary = (await planClient().call('inspect', { job: jobText }).promise).summary;
    if (!sim) sim = (await planClient().call('simulate', { job: jobText }).promise).simulation;
  } catch { return null; }
  const fit = fitOf(summary);
  if (!sim || !fit) return null;
  return { layout: layoutText(layoutOfJob(job) as never), gpus: worldSize(job), step: sim.step_seconds, mem: fit.need, fits: fit.fits };
}

async function run(): Promise<void> {
  if (running) return;
  const args = planArgs();
  $('#plan-error').replaceChildren();
  $('#plan-restored').replaceChildren();
  markInvalid(undefined);
  const unreadable = unreadableInput();
  if (unreadable) {
    markInvalid(unreadable);
    $('#plan-error').textContent = `${inputLabels().get(unreadable) ?? unreadable}: not a number; type digits (e.g. 8 or 2.5), or leave it empty.`;
    return;
  }
  if (!Number.isInteger(args.gpus) || args.gpus < 1) {
    $('#plan-error').textContent = 'GPUs: give a whole number of GPUs, 1 or more.';
    return;
  }
  if (args.time_limit_seconds !== undefined && !(args.time_limit_seconds > 0)) {
    $('#plan-error').textContent = 'Time limit: give a number of seconds above 0, or leave it empty for none.';
    return;
  }
  const jobText = state.jobText;
  record = { request: { job: jobText, ...args }, status: 'running', started: Date.now() };
  save();
  runStart = performance.now(); phaseName = ''; partials = 0;
  delete document.body.dataset.planFirstBestMs;
  shown = null; yours = null;
  $('#plan-result').replaceChildren();
  setRunning(true);
  $('#plan-status').textContent = 'your layout: simulating it once, to mark it on the plot…';
  cancelRequested = false;
  yoursTried = true;
  yours = await yourLayout(jobText);
  if (cancelRequested) {
    record.status = 'cancelled';
    save();
    $('#plan-status').textContent = 'cancelled (nothing simulated yet)';
    setRunning(false);
    return;
  }
  record.yours = yours ?? undefined;
  save();
  const call = planClient().call('plan', { job: jobText, ...args }, onProgress);
  running = call;
  $('#plan-status').textContent = 'starting…';
  try {
    const { plan } = await call.promise;
    if (running !== call) return;
    running = null;
    const t = (performance.now() - runStart) / 1000;
    $('#plan-status').textContent = plan.complete === false ? `stopped at the time limit after ${t.toFixed(1)} s: the best found so far` : `done in ${t.toFixed(1)} s`;
    Object.assign(record, { status: 'done', seconds: t, plan });
    save();
    renderPlan(plan, { keepSort: true });
  } catch (e) {
    if (running !== call) return;
    running = null;
    const err = e instanceof EngineRequestError ? e.error : { code: 'error', message: String(e), path: '' };
    record.status = err.code === 'cancelled' ? 'cancelled' : 'failed';
    record.seconds = (performance.now() - runStart) / 1000;
    save();
    if (err.code === 'cancelled') {
      $('#plan-status').textContent = shown ? `cancelled after ${record.seconds.toFixed(1)} s: the best found until then is shown` : 'cancelled (nothing simulated yet)';
      if (shown) renderPlan(shown, { stopped: 'cancelled', keepSort: true });
    } else {
      // The search's own budget (docs/plan.md "Budget"), not the job's:
      // the job-size hints (micro-batches, dp) do not apply.
      const { lead, text, hint } = err.code === 'too_large' && err.path === 'gpus'
        ? { lead: 'The search is too large for the browser', text: `${err.message}.`, hint: 'Open the constraints below the inputs and fix or bound degrees (for example micro-batch at most 1, fewer ZeRO stages or recompute modes), or run stagecraft plan natively, which has no browser memory limit.' }
        : explain(err);
      // An error on an input of this form names its label, not the request's
      // key (the search's own budget, path gpus, keeps its lead above).
      const budget = err.code === 'too_large' && err.path === 'gpus';
      const input = err.path && !budget ? inputOfPath(err.path) : undefined;
      const label = input ? inputLabels().get(input) : undefined;
      markInvalid(input);
      $('#plan-status').textContent = '';
      $('#plan-error').replaceChildren(h('strong', {}, `${label ?? lead}: `), text, hint ? ` ${hint}` : '');
      $('#plan-error').dataset.code = err.code;
    }
  } finally {
    if (running === null) setRunning(false);
  }
}

// The engine call cannot be interrupted inside the worker: the plan's
// worker is replaced (its pending request fails with `cancelled`).
function cancel(): void {
  if (!running && record?.status !== 'running') return;
  cancelRequested = true;
  planClient().restart('cancelled', 'plan cancelled');
}

// After a reload: the stored request back into the form; a finished plan
// shown as it was; a plan that was running when the page went shows the
// best found before (if any) and says that the search stopped there.
function restore(): void {
  const r = load();
  if (!r) return;
  record = r;
  let constraints = r.request.constraints ?? {};
  if (typeof constraints !== 'object') constraints = {};
  fillArgs(r.request.gpus, constraints, r.request.time_limit_seconds);
  yours = r.yours ?? null;
  yoursTried = true;
  const when = new Date(r.started).toLocaleTimeString('en-GB');
  const note = $('#plan-restored');
  // Whether the editor still holds the planned job is said once the
  // editor's job is known (planJobChanged).
  if (r.status === 'running') {
    const p = r.progress;
    const where = p ? ` at ${PHASE_WORDS[p.phase] ?? p.phase}, ${exact(p.done)} of ${exact(p.total)} layouts` : ' before its first progress report';
    const rerun = h('button', { type: 'button', id: 'plan-rerun' }, 'Run it again');
    rerun.addEventListener('click', () => { void run(); });
    note.replaceChildren(h('div', { class: 'banner', role: 'alert', id: 'plan-lost' },
      h('strong', {}, 'The plan was lost: '), `the page was reloaded while the search (started ${when})${where} was running, and a search cannot survive a reload. `,
      r.plan ? 'Shown below: the best it had found before the reload, not a finished plan. ' : 'Nothing had been simulated yet, so there is no best so far to show. ',
      rerun));
    document.body.dataset.planRestored = 'lost';
    if (r.plan) renderPlan(r.plan, { stopped: 'reload' });
  } else if (r.plan) {
    const how = r.status === 'cancelled' ? 'cancelled' : r.plan.complete === false ? 'stopped at its time limit' : 'finished';
    note.replaceChildren(h('p', { class: 'hint', id: 'plan-restored-note' },
      `Restored from this tab’s session: the plan started at ${when}, ${how}${r.seconds ? ` after ${r.seconds.toFixed(1)} s` : ''}.`));
    document.body.dataset.planRestored = 'restored';
    renderPlan(r.plan, r.status === 'cancelled' ? { stopped: 'cancelled' } : {});
  }
}

// ---------------------------------------------------------------- the answer
interface RenderOpts { running?: boolean; stopped?: 'cancelled' | 'reload'; keepSort?: boolean }

export function renderPlan(plan: Plan, opts: RenderOpts = {}): void {
  shown = plan;
  if (!opts.keepSort) { sortKey = 'rank'; sortDir = 'asc'; }
  const out = $('#plan-result');
  const c = plan.counts;
  const rej = c?.rejected ?? {};
  const n = (x: number | undefined) => exact(x ?? 0);
  const partial = plan.complete === false;
  const state_ = opts.running ? 'Best so far, while the search runs' : opts.stopped === 'cancelled' ? 'Best found before Cancel'
    : opts.stopped === 'reload' ? 'Best found before the reload' : partial ? 'Best found before the time limit' : 'Plan';
  const counts = h('p', { id: 'plan-counts', 'data-simulated': c?.simulated ?? 0, 'data-unexamined': c?.unexamined ?? 0 },
    `Considered ${n(c?.considered)} layouts on ${exact(plan.gpus)} GPUs: `,
    `${n(rej.divisibility)} do not divide the model or the batch, `,
    `${n(rej.memory)} do not fit in memory, `,
    `${n(rej.dominated)} are dominated by another layout, `,
    `${n(rej.bound)} cannot beat the best by a lower bound; `,
    `${n(c?.simulated)} simulated`,
    partial ? `; ${n(c?.unexamined)} not examined yet.` : '.',
    partial ? (opts.running ? ' The search goes on: the rows below can still change.' : ' The search stopped early: this is the best found so far, not a finished plan.') : '');
  const why = plan.why_winner ? [whyText(plan)] : [];
  const parts: (HTMLElement | SVGElement)[] = [h('h3', { id: 'plan-heading', 'data-partial': String(partial) }, state_), counts];
  if (!plan.candidates.length) {
    if (partial) {
      parts.push(h('p', { id: 'plan-nothing-yet' }, `Nothing fits ${c?.simulated ? 'among the layouts simulated so far' : 'yet: nothing simulated yet'}.`));
    } else if (!c?.considered) {
      // Nothing to search (as the CLI says it): the constraints exclude every layout.
      parts.push(h('div', { class: 'banner', role: 'alert', id: 'plan-nothing' },
        h('strong', {}, 'No layout meets the constraints. '),
        `Nothing was searched on ${exact(plan.gpus)} GPUs: the degrees fixed or bounded under “constraints” (a micro-batch above the global batch, a product of fixed degrees that does not divide the GPUs, …) leave no layout. Relax them and run the plan again.`));
    } else {
      const need = plan.min_gpus_lower_bound ? ` The model’s weights, gradients and optimizer state alone need at least ${exact(plan.min_gpus_lower_bound)} GPUs of this kind (a lower bound).` : '';
      // The smallest GPU count that fits, as the search found it (docs/plan.md, "When nothing fits").
      const sf = plan.smallest_fit;
      const fitLine: (HTMLElement | string)[] = [];
      if (sf && sf.gpus > 0 && sf.layout) {
        const again = h('button', { type: 'button', id: 'plan-smallest-fit' }, `Plan on ${exact(sf.gpus)} GPUs`);
        again.addEventListener('click', () => {
          const g = $<HTMLInputElement>('#plan-gpus');
          g.value = String(sf.gpus);
          g.dataset.touched = '1';
          void run();
        });
        fitLine.push(h('p', { id: 'plan-smallest' }, `It fits on ${exact(sf.gpus)} GPUs, e.g. ${layoutText(sf.layout)} at ${fmtBytes(sf.peak_memory_bytes ?? 0)} per GPU: the smallest count tried${sf.every_count ? '' : ' (some counts below it were skipped)'}${sf.largest_without ? `; ${exact(sf.largest_without)} GPUs fit nothing` : ''}. `, again));
      } else if (sf && sf.counts_tried === 0) {
        fitLine.push(h('p', { id: 'plan-smallest' }, `The smallest GPU count that fits was not looked for: the time limit came first.`));
      } else if (sf && !sf.largest_without) {
        fitLine.push(h('p', { id: 'plan-smallest' }, `No GPU count from ${exact(sf.from)} could be searched with these constraints: plan on ${exact(sf.from)} GPUs to see why.`));
      } else if (sf) {
        fitLine.push(h('p', { id: 'plan-smallest' }, `No count from ${exact(sf.from)} to ${exact(sf.largest_without)} GPUs fits (${exact(sf.counts_tried)} tried${sf.stopped ? ', stopped by the time limit' : ''}).`));
      }
      parts.push(h('div', { class: 'banner', role: 'alert', id: 'plan-nothing' },
        h('strong', {}, 'No layout fits. '), ...fitLine, `${need} The closest misses and what they lack:`,
        h('ul', { id: 'plan-misses' }, ...(plan.closest_misses ?? []).map((m) => h('li', {}, h('span', { class: 'mono' }, layoutText(m.layout)), ': ', missText(m))))));
    }
    out.replaceChildren(...parts);
    if (!opts.running) document.body.dataset.plan = 'done';
    return;
  }
  parts.push(h('ul', { id: 'plan-why', class: 'why-lines' }, ...why.map((w) => h('li', {}, w))));
  parts.push(scatter(plan), h('div', { id: 'plan-table', class: 'table-scroll plan-table', tabindex: 0, role: 'region', 'aria-label': 'Ranked layouts' }));
  out.replaceChildren(...parts);
  renderTable();
  if (!opts.running) document.body.dataset.plan = 'done';
}

// A why line in the engine's format before session 24 ("beats #k by X s
// (Y%)", three decimals of a second: "0.000 s" for a gap under half a
// millisecond; a plan stored in the tab from then) said again from the two
// steps: "ties" or the relative gap with sensible precision. The engine
// now writes the gap so itself (plan.cc gap_text); such lines pass as they are.
function whyText(plan: Plan): string {
  const cs = plan.candidates;
  return plan.why_winner
    // "mostly 0.001 s less compute": below 10 ms the three decimals say
    // little (0.001 is anything from 0.5 to 1.5 ms): the part is named alone.
    .replace(/mostly (\d+\.\d{3}) s less/, (m, v: string) => (Number(v) < 0.01 ? 'mostly less' : m))
    .replace(/beats #(\d+) by -?[\d.]+ s \(-?[\d.]+%\)/, (m, k: string) => {
    const b = cs[Number(k) - 1];
    return b ? (gapText(cs[0].step_seconds, b.step_seconds) === 'ties' ? `ties #${k}` : `beats #${k} by ${gapText(cs[0].step_seconds, b.step_seconds)}`) : m;
  });
}

function missText(m: { reason: string; short_by_bytes?: number }): string {
  const short = m.short_by_bytes && m.short_by_bytes > 0 ? ` (short of memory by ${fmtBytes(m.short_by_bytes)} per GPU)` : '';
  return `${m.reason}${short}`;
}

// Round axis ends: the smallest of 1, 2, 2.5, 5 × 10^k at or above x.
function niceCeil(x: number): number {
  if (!(x > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(x));
  for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= x) return m * p;
  return 10 * p;
}

// Step time (y) against peak memory per GPU (x), both from zero (a small
// gap between steps then looks as small as it is: the table gives the
// gaps); the Pareto front (no layout both faster and smaller) joined by a
// step line and drawn filled, the GPU's memory capacity as a dashed
// vertical line, the editor's own layout as an orange diamond. A point's
// click moves the focus to its row's Load button.
function scatter(plan: Plan): SVGElement {
  const cs = plan.candidates;
  const front = paretoFront(cs.map((c) => ({ step: c.step_seconds, mem: c.peak_memory_bytes })));
  const cap = Math.max(...cs.map((c) => c.memory_capacity_bytes || 0));
  const W = 640, H = 300, L = 64, R = 12, T = 12, B = 44;
  const mine = yours && Number.isFinite(yours.step) && yours.step > 0 ? yours : null;
  const mems = cs.map((c) => c.peak_memory_bytes), steps = cs.map((c) => c.step_seconds);
  if (mine) { mems.push(mine.mem); steps.push(mine.step); }
  const x1 = niceCeil(Math.max(...mems, cap) * 1.02 / GIB) * GIB, y1 = niceCeil(Math.max(...steps) * 1.05);
  const x = (b: number) => L + (b / x1) * (W - L - R);
  const y = (t: number) => T + (1 - t / y1) * (H - T - B);
  const g = s('g');
  // Axes from zero, ticks at quarters of the round ends.
  g.append(s('line', { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: '#495057' }), s('line', { x1: L, y1: T, x2: L, y2: H - B, stroke: '#495057' }));
  for (let i = 0; i <= 4; i++) {
    const b = (x1 * i) / 4, t = (y1 * i) / 4;
    g.append(s('text', { x: x(b), y: H - B + 16, 'text-anchor': 'middle', 'font-size': 11 }, `${+(b / GIB).toFixed(1)}`));
    g.append(s('text', { x: L - 4, y: y(t) + 4, 'text-anchor': 'end', 'font-size': 11, class: 'plan-ytick' }, i === 0 ? '0' : secondsText(t)));
  }
  g.append(s('text', { x: (L + W - R) / 2, y: H - 6, 'text-anchor': 'middle', 'font-size': 12 }, 'peak memory per GPU (GiB, from 0)'));
  g.append(s('text', { x: 12, y: (T + H - B) / 2, 'text-anchor': 'middle', 'font-size': 12, transform: `rotate(-90 12 ${(T + H - B) / 2})` }, 'step time (from 0)'));
  if (cap > 0) {
    g.append(s('line', { x1: x(cap), y1: T, x2: x(cap), y2: H - B, stroke: '#c92a2a', 'stroke-dasharray': '5 4', class: 'plan-capacity' }),
      s('text', { x: x(cap) - 4, y: T + 10, 'text-anchor': 'end', 'font-size': 11, fill: '#c92a2a' }, `GPU memory ${fmtBytes(cap)}`));
  }
  // The front as a staircase, in order of memory.
  const fp = cs.filter((_, i) => front[i]).sort((a, b) => a.peak_memory_bytes - b.peak_memory_bytes);
  if (fp.length > 1) {
    let d = `M${x(fp[0].peak_memory_bytes)},${y(fp[0].step_seconds)}`;
    for (const p of fp.slice(1)) d += ` H${x(p.peak_memory_bytes)} V${y(p.step_seconds)}`;
    g.append(s('path', { d, fill: 'none', stroke: '#2b8a3e', 'stroke-width': 1.5, class: 'plan-front-line' }));
  }
  cs.forEach((c, i) => {
    const dot = s('circle', { cx: x(c.peak_memory_bytes), cy: y(c.step_seconds), r: front[i] ? 5 : 3.5,
      fill: front[i] ? '#2b8a3e' : '#fff', stroke: front[i] ? '#1b5e20' : '#1864ab', 'stroke-width': 1.5,
      'data-rank': c.rank, 'data-front': String(front[i]), class: 'plan-dot' },
    s('title', {}, `#${c.rank} ${layoutText(c.layout)}: ${sec(c.step_seconds)}, ${fmtBytes(c.peak_memory_bytes)} per GPU${front[i] ? ' (Pareto front)' : ''}`));
    dot.addEventListener('click', () => document.querySelector<HTMLButtonElement>(`#plan-table button.plan-load[data-rank="${c.rank}"]`)?.focus());
    g.append(dot);
  });
  if (mine) {
    const cx = x(mine.mem), cy = y(mine.step), r = 7;
    g.append(s('path', { d: `M${cx},${cy - r} L${cx + r},${cy} L${cx},${cy + r} L${cx - r},${cy} Z`, fill: '#f08c00', stroke: '#7f4a00', 'stroke-width': 1.5, class: 'plan-yours' },
      s('title', {}, `your layout (the editor’s): ${mine.layout}, ${sec(mine.step)}, ${fmtBytes(mine.mem)} per GPU`)),
    s('text', { x: cx + 10, y: cy - 6, 'font-size': 11, fill: '#7f4a00' }, 'yours'));
  }
  const nf = front.filter(Boolean).length;
  const mineText = mine ? `; orange diamond: your layout (${sec(mine.step)}, ${fmtBytes(mine.mem)})` : '';
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'plan-scatter', role: 'img', id: 'plan-scatter', 'data-y0': 0, 'data-x0': 0,
    'aria-label': `Step time against peak memory per GPU for ${cs.length} layouts, both axes from zero; ${nf} on the Pareto front (filled, joined by the line: no other layout is both faster and smaller)${cap ? `; dashed line: the GPU’s ${fmtBytes(cap)}` : ''}${mineText}. The table below lists the same layouts.` }, g);
  const yoursLine = mine ? ` Orange diamond: your layout in the editor (${mine.layout}${mine.gpus !== plan.gpus ? `, on ${exact(mine.gpus)} GPUs, not ${exact(plan.gpus)}` : ''}): ${sec(mine.step)}${mine.fits ? '' : ', though it does not fit in memory'}; #1 ${mine.step >= cs[0].step_seconds ? `is faster by ${gapText(cs[0].step_seconds, mine.step)}` : `is slower by ${gapText(mine.step, cs[0].step_seconds)}`}.` : yoursTried ? ' Your layout could not be simulated, so it is not marked.' : '';
  return h('figure', { class: 'plan-figure' }, svg,
    h('figcaption', { class: 'hint', id: 'plan-caption' }, `Both axes start at zero, so steps a few per cent apart sit close together; the table gives the gaps. Filled green: the Pareto front (${nf} ${nf === 1 ? 'layout' : 'layouts'} no other beats on both step time and memory). Hollow: dominated. Dashed red: GPU memory.${yoursLine}`)) as unknown as SVGElement;
}

const COLUMNS: [SortKey, string][] = [
  ['rank', '#'], ['layout', 'layout'], ['step', 'step (vs #1)'], ['mfu', 'MFU'], ['tokens', 'tokens / s'],
  ['memory', 'memory / GPU'], ['bubble', 'bubble'], ['exposed', 'exposed comm'],
];

function renderTable(): void {
  if (!shown) return;
  const first = shown.candidates[0];
  const front = paretoFront(shown.candidates.map((c) => ({ step: c.step_seconds, mem: c.peak_memory_bytes })));
  const onFront = new Set(shown.candidates.filter((_, i) => front[i]).map((c) => c.rank));
  const rows = sortCandidates(shown.candidates, sortKey, sortDir);
  const head = h('tr', {}, h('th', { scope: 'col' }, h('span', { class: 'sr-only' }, 'load into the editor')), ...COLUMNS.map(([k, t]) => {
    const th = h('th', { scope: 'col', 'aria-sort': k === sortKey ? (sortDir === 'asc' ? 'ascending' : 'descending') : undefined },
      h('button', { type: 'button', class: 'sort', 'data-sort': k }, t, k === sortKey ? (sortDir === 'asc' ? ' ▲' : ' ▼') : ''));
    th.querySelector('button')!.addEventListener('click', () => {
      if (sortKey === k) sortDir = sortDir === 'asc' ? 'desc' : 'asc';
      else { sortKey = k; sortDir = 'asc'; }
      renderTable();
      document.querySelector<HTMLButtonElement>(`#plan-table button[data-sort="${k}"]`)?.focus();
    });
    return th;
  }), h('th', { scope: 'col' }, 'notes'));
  const body = rows.map((c) => {
    const exposed = Object.entries(c.exposed_comm_seconds ?? {}).filter(([, v]) => v > 0);
    const load = h('button', { type: 'button', class: 'plan-load', 'data-rank': c.rank, 'aria-label': `Load layout #${c.rank} into the editor` }, 'Load');
    load.addEventListener('click', () => {
      onLoad(c.job, c);
      $('#plan-status').textContent = `Loaded layout #${c.rank} into the editor (${layoutText(c.layout)}); the other tabs show it.`;
    });
    const vs = c === first ? '' : gapText(first.step_seconds, c.step_seconds);
    const alt = alternativesText(c);
    const notes = h('td', { class: 'plan-notes' },
      ...(c.low_confidence ?? []).map((w) => h('span', { class: 'plan-low' }, `low confidence: ${w}`)),
      alt ? h('span', { class: 'plan-alt' }, alt) : null,
      c.bound ? h('span', { class: 'plan-bound hint' }, c.bound) : null);
    return h('tr', { 'data-rank': c.rank, class: onFront.has(c.rank) ? 'front' : undefined },
      h('td', {}, load), h('td', { class: 'num' }, String(c.rank)), h('td', { class: 'mono plan-layout' }, layoutText(c.layout)),
      h('td', { class: 'num' }, sec(c.step_seconds), vs ? h('span', { class: 'plan-vs' }, vs === 'ties' ? 'ties #1' : `+${vs}`) : null),
      h('td', { class: 'num' }, pct(c.mfu)),
      h('td', { class: 'num' }, fmtCount(Math.round(c.tokens_per_second))),
      h('td', { class: 'num' }, fmtBytes(c.peak_memory_bytes)), h('td', { class: 'num' }, pct(c.bubble_fraction)),
      h('td', { class: 'num', title: exposed.map(([k, v]) => `${k} ${sec(v)}`).join(', ') }, exposed.length ? `${sec(exposedTotal(c))} (${exposed.map(([k]) => k).join(', ')})` : '—'),
      notes);
  });
  $('#plan-table').replaceChildren(h('table', { class: 'plan' },
    h('caption', {}, 'Ranked layouts (column headers sort; green rows are on the Pareto front; Load puts a layout into the editor)'),
    h('thead', {}, head), h('tbody', {}, ...body)));
}
