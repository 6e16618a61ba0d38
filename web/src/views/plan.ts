// The Plan tab (docs/web-app.md "Plan"): the planner of docs/plan.md run
// on the editor's job in its own engine worker. Inputs: GPUs and the
// search's constraints (fixed or bounded degrees, allowed schedules and
// recompute modes, memory reserve, objective). While it runs: a progress
// bar and Cancel (the worker is terminated and a fresh one started: the
// engine call is synchronous). The answer: counts by reason, the "why"
// lines, a scatter of step time against peak memory per GPU with the
// Pareto front and the GPU's capacity, and a sortable table whose Load
// buttons put a candidate's layout into the editor. When nothing fits, the
// closest misses in words.
import { EngineRequestError, type Call } from '../client';
import { paretoFront, sortCandidates, layoutText, exposedTotal, type Plan, type PlanCandidate, type SortKey } from '../lib/plan';
import { explain } from '../messages';
import type { JobJson, Progress } from '../protocol';
import { planClient, state } from '../state';
import { $, h, s, fmtBytes } from '../util';

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

let onLoad: (job: JobJson, c: PlanCandidate) => void = () => {};
let running: Call<{ plan: Plan }> | null = null;
let shown: Plan | null = null;
let sortKey: SortKey = 'rank';
let sortDir: 'asc' | 'desc' = 'asc';

// The world size of a job (what the GPUs field starts from).
function worldSize(job: JobJson): number {
  const p = (job.parallel ?? {}) as Record<string, number>;
  return (p.dp ?? 1) * (p.tp ?? 1) * (p.pp ?? 1) * (p.cp ?? 1);
}

// Builds the inputs once; `load` puts a candidate's job into the editor.
export function initPlan(load: (job: JobJson, c: PlanCandidate) => void): void {
  onLoad = load;
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
      h('label', {}, 'Memory reserve (GiB) ', h('input', { type: 'number', name: 'reserve', min: 0, step: 'any', placeholder: '10 % of GPU', inputmode: 'decimal' })),
      num('top', 'Layouts ranked', { value: 10, max: 200 })),
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
  panel.replaceChildren(form, h('div', { id: 'plan-result' }));
  form.addEventListener('submit', (e) => { e.preventDefault(); void run(); });
  $('#plan-cancel').addEventListener('click', cancel);
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
  $('#plan-base').textContent = `Searches layouts for the editor’s job: ${model}, sequence ${String(t.seq_len ?? 2048)}, global batch ${String(t.global_batch_size ?? '(default)')}, GPU ${hw}. The model, batch and hardware stay; the parallel layout, micro-batch, schedule and recompute are searched.`;
}

// The request's arguments from the inputs: {gpus, constraints}.
export function planArgs(): { gpus: number; constraints: Record<string, unknown> } {
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
  return { gpus: Number(val('gpus')), constraints };
}

function setRunning(on: boolean): void {
  $<HTMLButtonElement>('#plan-run').disabled = on;
  $('#plan-cancel').hidden = !on;
  $('#plan-progress').hidden = !on;
  $('#panel-plan').setAttribute('aria-busy', String(on));
  document.body.dataset.plan = on ? 'running' : shown ? 'done' : 'idle';
}

function onProgress(p: Progress): void {
  const bar = $<HTMLProgressElement>('#plan-progress');
  if (p.total > 0) { bar.max = p.total; bar.value = p.done; } else bar.removeAttribute('value');
  $('#plan-status').textContent = `${p.phase}: ${p.done.toLocaleString('en')} of ${p.total.toLocaleString('en')}`;
  document.body.dataset.planProgress = String(p.done);
}

async function run(): Promise<void> {
  if (running) return;
  const args = planArgs();
  $('#plan-error').replaceChildren();
  if (!Number.isInteger(args.gpus) || args.gpus < 1) {
    $('#plan-error').textContent = 'GPUs: give a whole number of GPUs, 1 or more.';
    return;
  }
  const t0 = performance.now();
  const call = planClient().call('plan', { job: state.jobText, ...args }, onProgress);
  running = call;
  setRunning(true);
  $('#plan-status').textContent = 'starting…';
  try {
    const { plan } = await call.promise;
    if (running !== call) return;
    running = null;
    $('#plan-status').textContent = `done in ${((performance.now() - t0) / 1000).toFixed(1)} s`;
    renderPlan(plan);
  } catch (e) {
    if (running !== call) return;
    running = null;
    const err = e instanceof EngineRequestError ? e.error : { code: 'error', message: String(e), path: '' };
    if (err.code === 'cancelled') $('#plan-status').textContent = 'cancelled';
    else {
      const { lead, text, hint } = explain(err);
      $('#plan-status').textContent = '';
      $('#plan-error').replaceChildren(h('strong', {}, `${lead}: `), text, hint ? ` ${hint}` : '');
      $('#plan-error').dataset.code = err.code;
    }
  } finally {
    if (running === null) setRunning(false);
  }
}

// The engine call cannot be interrupted inside the worker: the plan's
// worker is replaced (its pending request fails with `cancelled`).
function cancel(): void {
  if (!running) return;
  planClient().restart('cancelled', 'plan cancelled');
}

// ---------------------------------------------------------------- the answer
export function renderPlan(plan: Plan): void {
  shown = plan;
  sortKey = 'rank'; sortDir = 'asc';
  const out = $('#plan-result');
  const c = plan.counts;
  const rej = c?.rejected ?? {};
  const counts = h('p', { id: 'plan-counts' },
    `Considered ${(c?.considered ?? 0).toLocaleString('en')} layouts on ${plan.gpus} GPUs: `,
    `${(rej.divisibility ?? 0).toLocaleString('en')} do not divide the model or the batch, `,
    `${(rej.memory ?? 0).toLocaleString('en')} do not fit in memory, `,
    `${(rej.dominated ?? 0).toLocaleString('en')} are dominated by another layout, `,
    `${(rej.bound ?? 0).toLocaleString('en')} cannot beat the best by a lower bound; `,
    `${(c?.simulated ?? 0).toLocaleString('en')} simulated.`,
    plan.complete === false ? ' The search stopped early: this is the best found so far.' : '');
  const why = plan.why_winner ? [plan.why_winner] : [];
  const parts: (HTMLElement | SVGElement)[] = [h('h3', {}, 'Plan'), counts];
  if (!plan.candidates.length) {
    parts.push(h('div', { class: 'banner', role: 'alert', id: 'plan-nothing' },
      h('strong', {}, 'No layout fits. '), 'The closest misses and what they lack:',
      h('ul', { id: 'plan-misses' }, ...(plan.closest_misses ?? []).map((m) => h('li', {}, h('span', { class: 'mono' }, layoutText(m.layout)), ': ', missText(m))))));
    out.replaceChildren(...parts);
    document.body.dataset.plan = 'done';
    return;
  }
  parts.push(h('ul', { id: 'plan-why', class: 'why-lines' }, ...why.map((w) => h('li', {}, w)),
    ...plan.candidates.slice(0, 3).filter((x) => x.bound).map((x) => h('li', {}, `#${x.rank}: ${x.bound}`))));
  parts.push(scatter(plan), h('div', { id: 'plan-table', class: 'table-scroll', tabindex: 0, role: 'region', 'aria-label': 'Ranked layouts (scrolls)' }));
  out.replaceChildren(...parts);
  renderTable();
  document.body.dataset.plan = 'done';
}

function missText(m: { reason: string; short_by_bytes?: number }): string {
  const short = m.short_by_bytes && m.short_by_bytes > 0 ? ` (short of memory by ${fmtBytes(m.short_by_bytes)} per GPU)` : '';
  return `${m.reason}${short}`;
}

// Step time (y) against peak memory per GPU (x); the Pareto front (no
// layout both faster and smaller) joined by a step line and drawn filled,
// the GPU's memory capacity as a dashed vertical line. A point's click
// moves the focus to its row's Load button.
function scatter(plan: Plan): SVGElement {
  const cs = plan.candidates;
  const front = paretoFront(cs.map((c) => ({ step: c.step_seconds, mem: c.peak_memory_bytes })));
  const cap = Math.max(...cs.map((c) => c.memory_capacity_bytes || 0));
  const W = 640, H = 300, L = 64, R = 12, T = 12, B = 44;
  const mems = cs.map((c) => c.peak_memory_bytes), steps = cs.map((c) => c.step_seconds);
  const x1 = Math.max(...mems, cap) * 1.05, y0 = Math.min(...steps), y1 = Math.max(...steps);
  const ylo = y0 - (y1 - y0) * 0.08 || y0 * 0.9, yhi = y1 + (y1 - y0) * 0.08 || y1 * 1.1;
  const x = (b: number) => L + (b / x1) * (W - L - R);
  const y = (t: number) => T + (1 - (t - ylo) / (yhi - ylo)) * (H - T - B);
  const g = s('g');
  // Axes and ticks (4 per axis).
  g.append(s('line', { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: '#495057' }), s('line', { x1: L, y1: T, x2: L, y2: H - B, stroke: '#495057' }));
  for (let i = 0; i <= 4; i++) {
    const b = (x1 * i) / 4, t = ylo + ((yhi - ylo) * i) / 4;
    g.append(s('text', { x: x(b), y: H - B + 16, 'text-anchor': 'middle', 'font-size': 11 }, `${(b / GIB).toFixed(0)}`));
    g.append(s('text', { x: L - 4, y: y(t) + 4, 'text-anchor': 'end', 'font-size': 11 }, sec(t)));
  }
  g.append(s('text', { x: (L + W - R) / 2, y: H - 6, 'text-anchor': 'middle', 'font-size': 12 }, 'peak memory per GPU (GiB)'));
  g.append(s('text', { x: 12, y: (T + H - B) / 2, 'text-anchor': 'middle', 'font-size': 12, transform: `rotate(-90 12 ${(T + H - B) / 2})` }, 'step time'));
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
    dot.addEventListener('click', () => document.querySelector<HTMLButtonElement>(`#plan-table button[data-rank="${c.rank}"]`)?.focus());
    g.append(dot);
  });
  const n = front.filter(Boolean).length;
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, class: 'plan-scatter', role: 'img', id: 'plan-scatter',
    'aria-label': `Step time against peak memory per GPU for ${cs.length} layouts; ${n} on the Pareto front (filled, joined by the line: no other layout is both faster and smaller)${cap ? `; dashed line: the GPU’s ${fmtBytes(cap)}` : ''}. The table below lists the same layouts.` }, g);
  return h('figure', { class: 'plan-figure' }, svg,
    h('figcaption', { class: 'hint' }, `Filled green: the Pareto front (${n} layouts no other beats on both step time and memory). Hollow: dominated. Dashed red: GPU memory.`)) as unknown as SVGElement;
}

const COLUMNS: [SortKey, string][] = [
  ['rank', '#'], ['layout', 'layout'], ['step', 'step'], ['mfu', 'MFU'], ['tokens', 'tokens / s'],
  ['memory', 'peak memory / GPU'], ['bubble', 'bubble'], ['exposed', 'exposed comm'],
];

function renderTable(): void {
  if (!shown) return;
  const front = paretoFront(shown.candidates.map((c) => ({ step: c.step_seconds, mem: c.peak_memory_bytes })));
  const onFront = new Set(shown.candidates.filter((_, i) => front[i]).map((c) => c.rank));
  const rows = sortCandidates(shown.candidates, sortKey, sortDir);
  const head = h('tr', {}, ...COLUMNS.map(([k, t]) => {
    const th = h('th', { scope: 'col', 'aria-sort': k === sortKey ? (sortDir === 'asc' ? 'ascending' : 'descending') : undefined },
      h('button', { type: 'button', class: 'sort', 'data-sort': k }, t, k === sortKey ? (sortDir === 'asc' ? ' ▲' : ' ▼') : ''));
    th.querySelector('button')!.addEventListener('click', () => {
      if (sortKey === k) sortDir = sortDir === 'asc' ? 'desc' : 'asc';
      else { sortKey = k; sortDir = 'asc'; }
      renderTable();
      document.querySelector<HTMLButtonElement>(`#plan-table button[data-sort="${k}"]`)?.focus();
    });
    return th;
  }), h('th', { scope: 'col' }, 'bound by'), h('th', { scope: 'col' }, 'editor'));
  const body = rows.map((c) => {
    const exposed = Object.entries(c.exposed_comm_seconds ?? {}).filter(([, v]) => v > 0);
    const load = h('button', { type: 'button', class: 'plan-load', 'data-rank': c.rank, 'aria-label': `Load layout #${c.rank} into the editor` }, 'Load');
    load.addEventListener('click', () => {
      onLoad(c.job, c);
      $('#plan-status').textContent = `Loaded layout #${c.rank} into the editor (${layoutText(c.layout)}); the other tabs show it.`;
    });
    return h('tr', { 'data-rank': c.rank, class: onFront.has(c.rank) ? 'front' : undefined },
      h('td', { class: 'num' }, String(c.rank)), h('td', { class: 'mono' }, layoutText(c.layout)),
      h('td', { class: 'num' }, sec(c.step_seconds)), h('td', { class: 'num' }, pct(c.mfu)),
      h('td', { class: 'num' }, Math.round(c.tokens_per_second).toLocaleString('en')),
      h('td', { class: 'num' }, fmtBytes(c.peak_memory_bytes)), h('td', { class: 'num' }, pct(c.bubble_fraction)),
      h('td', { class: 'num', title: exposed.map(([k, v]) => `${k} ${sec(v)}`).join(', ') }, exposed.length ? `${sec(exposedTotal(c))} (${exposed.map(([k]) => k).join(', ')})` : '—'),
      h('td', {}, c.bound ?? ''), h('td', {}, load));
  });
  $('#plan-table').replaceChildren(h('table', { class: 'plan' },
    h('caption', {}, 'Ranked layouts (column headers sort; green rows are on the Pareto front)'),
    h('thead', {}, head), h('tbody', {}, ...body)));
}
