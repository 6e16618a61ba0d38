// Compare (issue 25): job A pinned, job B the editor's. One table of the
// figures a layout change moves — step time, MFU, tokens/s, bubble, exposed
// communication by kind, peak memory per stage, buffer bytes per collective
// type — with B against A called out; both stages' memory on one scale;
// both pipeline timelines; and (rank preview) the same rank's trace of
// both jobs as two timelines on one axis, bytes on the wire by group kind. A `Show` toggle picks both
// columns, A only or B only (on a phone A and B stack).
import type { Simulation, RankInfo } from '../protocol';
import type { Summary, Pinned } from '../state';
import { fitOf, IF_IT_FITTED } from '../fit';
import { drawPipeline } from './simulate';
import { h, s, fmtBytes, fmtUs } from '../util';
import { Timeline, type TraceView } from './rank';
import { on } from '../bus';
import type { WireRow } from '../lib/comm';

export interface Side { jobText: string; summary: Summary | null; simulation: Simulation | null }

const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
const sec = (x: number) => fmtUs(x * 1e6);

// The job fields that differ, "parallel.pp: 4 → 8" (flattened JSON paths).
// Only fields one of the two jobs sets are compared, by their resolved
// values (the summary's `job`, every default explicit) when both are known:
// a default written out on one side is not a difference, and derived fields
// (world_size) are not listed.
export function jobDiff(a: string, b: string, aResolved?: unknown, bResolved?: unknown): string[] {
  const flat = (o: unknown, pre = '', out = new Map<string, string>()) => {
    if (o && typeof o === 'object' && !Array.isArray(o)) {
      for (const [k, v] of Object.entries(o)) flat(v, pre ? `${pre}.${k}` : k, out);
    } else out.set(pre, JSON.stringify(o));
    return out;
  };
  // "hardware": "h100" is the short form of {"preset": "h100"} (and so for model).
  const norm = (j: Record<string, unknown>) => {
    for (const k of ['hardware', 'model']) if (typeof j[k] === 'string') j[k] = { preset: j[k] };
    return j;
  };
  let fa: Map<string, string>, fb: Map<string, string>;
  try { fa = flat(norm(JSON.parse(a))); fb = flat(norm(JSON.parse(b))); } catch { return []; }
  const ra = aResolved ? flat(aResolved) : new Map<string, string>(), rb = bResolved ? flat(bResolved) : new Map<string, string>();
  const keys = [...new Set([...fa.keys(), ...fb.keys()])].sort();
  const out: string[] = [];
  const both = ra.size > 0 && rb.size > 0;
  for (const k of keys) {
    let x = fa.get(k), y = fb.get(k);
    if (both && (ra.has(k) || rb.has(k))) { x = ra.get(k); y = rb.get(k); }  // the resolved values
    else if (both && (x === undefined || y === undefined)) continue;       // a short form the resolved job spells otherwise
    if (x !== y) out.push(`${k}: ${x ?? '(default)'} → ${y ?? '(default)'}`);
  }
  return out;
}

// "B is 23.1 % lower", "same"; lowerIsBetter decides the word's class.
function change(a: number | undefined, b: number | undefined, kind: 'ratio' | 'points', lowerIsBetter: boolean): HTMLElement {
  if (a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b)) return h('td', {}, '—');
  if (Math.abs(a - b) <= 1e-12 * Math.max(1, Math.abs(a))) return h('td', { class: 'same' }, 'same');
  let text: string;
  if (kind === 'points') text = `${b > a ? '+' : '−'}${(100 * Math.abs(b - a)).toFixed(1)} points`;
  else if (a === 0) text = 'B only';
  else text = `${b > a ? '+' : '−'}${(100 * Math.abs(b / a - 1)).toFixed(1)} %`;
  const better = lowerIsBetter ? b < a : b > a;
  return h('td', { class: `num ${better ? 'good' : 'bad'}` }, h('strong', {}, text), h('span', { class: 'sr-only' }, better ? ' (better)' : ' (worse)'));
}

function peaks(sum: Summary | null): number[] {
  return ((sum?.stages ?? []) as Summary[]).map((st) => Number(st.memory_bytes?.peak_live) || 0);
}

// The figures table: rows [name, A text, B text, change cell].
function figures(a: Side, b: Side): HTMLElement {
  const rows: HTMLElement[] = [];
  const row = (name: string, av: string, bv: string, diff: HTMLElement, key: string) =>
    rows.push(h('tr', { 'data-row': key }, h('th', { scope: 'row' }, name), h('td', { class: 'num col-a' }, av), h('td', { class: 'num col-b' }, bv), diff));
  const fa = fitOf(a.summary), fb = fitOf(b.summary);
  const sa = a.simulation, sb = b.simulation;
  const timeNote = (f: ReturnType<typeof fitOf>) => (f && !f.fits ? ` (${IF_IT_FITTED})` : '');
  row('Fits in GPU memory', fa ? (fa.fits ? 'yes' : 'no') : '—', fb ? (fb.fits ? 'yes' : 'no') : '—', h('td', {}, fa && fb && fa.fits !== fb.fits ? (fb.fits ? 'B fits, A does not' : 'A fits, B does not') : ''), 'fits');
  if (sa || sb) {
    row('Step time', sa ? sec(sa.step_seconds) + timeNote(fa) : '—', sb ? sec(sb.step_seconds) + timeNote(fb) : '—', change(sa?.step_seconds, sb?.step_seconds, 'ratio', true), 'step');
    row('MFU', sa ? pct(sa.mfu) : '—', sb ? pct(sb.mfu) : '—', change(sa?.mfu, sb?.mfu, 'points', false), 'mfu');
    row('Tokens / s', sa ? Math.round(sa.tokens_per_second).toLocaleString('en') : '—', sb ? Math.round(sb.tokens_per_second).toLocaleString('en') : '—', change(sa?.tokens_per_second, sb?.tokens_per_second, 'ratio', false), 'tokens');
    row('Bubble (simulated, share of the step)', sa ? pct(sa.bubble_fraction) : '—', sb ? pct(sb.bubble_fraction) : '—', change(sa?.bubble_fraction, sb?.bubble_fraction, 'points', true), 'bubble');
    const kinds = [...new Set([...Object.keys(sa?.exposed_comm_seconds ?? {}), ...Object.keys(sb?.exposed_comm_seconds ?? {})])]
      .filter((k) => (sa?.exposed_comm_seconds?.[k] ?? 0) > 0 || (sb?.exposed_comm_seconds?.[k] ?? 0) > 0);
    for (const k of kinds) {
      const x = sa?.exposed_comm_seconds?.[k] ?? 0, y = sb?.exposed_comm_seconds?.[k] ?? 0;
      row(`Exposed ${k} communication${k === 'dp' ? ' (gradient and parameter reductions, the embedding group’s included)' : ''}`, sa ? sec(x) : '—', sb ? sec(y) : '—', change(sa ? x : undefined, sb ? y : undefined, 'ratio', true), `exposed-${k}`);
    }
  }
  // Serving jobs: the figures of the serving summary (a KV cache fills
  // what the weights leave, so its memory is the per-rank total, not a
  // stage's peak of a training step).
  const ia = (a.summary as any)?.inference, ib = (b.summary as any)?.inference;
  if (ia || ib) {
    const num = (o: any, k: string): number | undefined => (o && Number.isFinite(Number(o[k])) ? Number(o[k]) : undefined);
    const int = (x: number) => Math.round(x).toLocaleString('en');
    const tenths = (x: number) => x.toFixed(1);
    // [figure, summary key (inference block; "memory" the per-rank total), format, lower is better, row key]
    const rows: [string, string, (x: number) => string, boolean, string][] = [
      ['Sequences that fit (per instance)', 'max_concurrent_sequences', int, false, 'inf-fit'],
      ['Concurrency used', 'concurrency', int, false, 'inf-concurrency'],
      ['KV cache per sequence', 'kv_cache_bytes_per_sequence', fmtBytes, true, 'inf-kv-seq'],
      ['Weights per GPU', 'weights_bytes_per_rank', fmtBytes, true, 'inf-weights'],
      ['Memory per GPU (weights, activations, KV cache)', 'memory', fmtBytes, true, 'inf-memory'],
      ['Time to first token (TTFT)', 'ttft_seconds', sec, true, 'inf-ttft'],
      ['Time per output token (TPOT)', 'tpot_seconds', sec, true, 'inf-tpot'],
      ['Output tokens / s per GPU', 'tokens_per_second_per_gpu', int, false, 'inf-tps'],
      ['Output tokens / s per user', 'tokens_per_second_per_user', tenths, false, 'inf-user'],
    ];
    const of = (o: any, k: string) => (k === 'memory' ? num(o?.memory_bytes_per_rank, 'total') : num(o, k));
    for (const [name, k, fmt, lower, key] of rows) {
      const x = of(ia, k), y = of(ib, k);
      row(name, x === undefined ? '—' : fmt(x), y === undefined ? '—' : fmt(y), change(x, y, 'ratio', lower), key);
    }
  }
  const pa = ia && ib ? [] : peaks(a.summary), pb = ia && ib ? [] : peaks(b.summary);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    row(Math.max(pa.length, pb.length) > 1 ? `Peak memory, stage ${i}` : 'Peak memory per GPU', pa[i] !== undefined ? fmtBytes(pa[i]) : '—', pb[i] !== undefined ? fmtBytes(pb[i]) : '—', change(pa[i], pb[i], 'ratio', true), `memory-${i}`);
  }
  const ca = (a.summary?.communication?.per_rank_bytes ?? {}) as Record<string, number>;
  const cb = (b.summary?.communication?.per_rank_bytes ?? {}) as Record<string, number>;
  for (const k of [...new Set([...Object.keys(ca), ...Object.keys(cb)])].sort()) {
    row(`${k} buffers per rank`, fmtBytes(Number(ca[k] ?? 0)), fmtBytes(Number(cb[k] ?? 0)), change(Number(ca[k] ?? 0), Number(cb[k] ?? 0), 'ratio', true), `coll-${k}`);
  }
  return h('div', { class: 'table-scroll', tabindex: 0, role: 'region', 'aria-label': 'A and B side by side' },
    h('table', { class: 'compare-table' }, h('caption', {}, 'A (pinned) and B (the editor) side by side; the last column is B against A'),
      h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'figure'), h('th', { scope: 'col', class: 'col-a' }, 'A'), h('th', { scope: 'col', class: 'col-b' }, 'B'), h('th', { scope: 'col' }, 'B vs A'))),
      h('tbody', {}, ...rows)));
}

// Peak memory per stage of both jobs as paired bars on ONE scale (the
// larger of both jobs' peaks and the GPU), with the capacity line.
function memoryPairs(a: Side, b: Side): HTMLElement {
  const pa = peaks(a.summary), pb = peaks(b.summary);
  const cap = Number(b.summary?.stages?.[0]?.memory_bytes?.capacity ?? a.summary?.stages?.[0]?.memory_bytes?.capacity) || 0;
  const n = Math.max(pa.length, pb.length);
  const scale = Math.max(cap, ...pa, ...pb, 1) * 1.04;
  const W = 640, L = 70, rowH = 14, gap = 10;
  const H = n * (2 * rowH + gap) + 18;
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, width: '100%', role: 'img', class: 'compare-mem',
    'aria-label': `Peak memory per stage on one scale: ${Array.from({ length: n }, (_, i) => `stage ${i} A ${pa[i] !== undefined ? fmtBytes(pa[i]) : 'none'}, B ${pb[i] !== undefined ? fmtBytes(pb[i]) : 'none'}`).join('; ')}; GPU ${fmtBytes(cap)}` });
  for (let i = 0; i < n; i++) {
    const y = i * (2 * rowH + gap);
    svg.append(s('text', { x: 0, y: y + rowH + 4, 'font-size': 11, fill: '#212529' }, `stage ${i}`));
    for (const [j, v, color, tag] of [[0, pa[i], '#495057', 'A'], [1, pb[i], '#1864ab', 'B']] as [number, number | undefined, string, string][]) {
      if (v === undefined) continue;
      const w = ((v / scale) * (W - L - 4));
      const r = s('rect', { x: L, y: y + j * rowH, width: Math.max(w, 0), height: rowH - 2, fill: v > cap && cap ? '#c92a2a' : color, 'data-side': tag, 'data-stage': i });
      r.append(s('title', {}, `${tag}, stage ${i}: ${fmtBytes(v)}`));
      svg.append(r, s('text', { x: L + Math.max(w, 0) + 3, y: y + j * rowH + rowH - 4, 'font-size': 10, fill: '#212529' }, `${tag} ${fmtBytes(v)}`));
    }
  }
  if (cap) {
    const cx = L + (cap / scale) * (W - L - 4);
    svg.append(s('line', { x1: cx, x2: cx, y1: 0, y2: H - 14, stroke: '#000', 'stroke-width': 2, 'stroke-dasharray': '4 2' }),
      s('text', { x: Math.min(cx, W - 4), y: H - 2, 'text-anchor': 'end', 'font-size': 11, fill: '#212529' }, `GPU ${fmtBytes(cap)}`));
  }
  return h('figure', { class: 'mem' }, h('figcaption', {}, 'Peak memory per stage, A (grey) and B (blue), on one scale; red: does not fit'), svg);
}

function timeline(side: Side, tag: string): HTMLElement {
  const sim = side.simulation;
  if (!sim) return h('div', { class: `col-${tag.toLowerCase()}` }, h('p', { class: 'hint' }, (side.summary as any)?.inference
    ? `${tag}: a serving job has no training step to draw: its figures are in the table above.`
    : `${tag}: no simulated step yet (still computing).`));
  const c = h('canvas', { class: 'pipechart', role: 'img', 'data-side': tag,
    'aria-label': `${tag}'s pipeline timeline: ${sim.stages.length} stage${sim.stages.length === 1 ? '' : 's'} over ${sec(sim.step_seconds)}` }) as HTMLCanvasElement;
  return h('div', { class: `col-${tag.toLowerCase()}` }, h('h4', {}, `${tag}: step ${sec(sim.step_seconds)}`), c);
}

export function renderCompare(el: HTMLElement, a: Pinned, b: Side): void {
  const diff = jobDiff(a.jobText, b.jobText, a.summary?.job, b.summary?.job);
  const toggle = showToggle(el, () => redraw());
  const head = h('p', {}, diff.length
    ? `B differs from A in: ${diff.join('; ')}.`
    : 'B is the same job as A: edit the job (or follow a lesson step) to see what changes.');
  if (a.error) head.append(` A could not be computed: ${a.error}`);
  const timelines = h('div', { class: 'compare-timelines' }, timeline(a, 'A'), timeline(b, 'B'));
  el.dataset.differences = String(diff.length);
  // Serving jobs on both sides: their memory is in the table (weights,
  // activations and KV cache per GPU); no training step to draw.
  const serving = (a.summary as any)?.inference !== undefined && (b.summary as any)?.inference !== undefined;
  el.replaceChildren(h('h2', {}, 'Compare A (pinned) with B (the editor)'), head, toggle, figures(a, b),
    ...(serving ? [] : [memoryPairs(a, b), h('h3', {}, 'Both pipeline timelines (same colours as the step-time chart below)'), timelines]));
  const redraw = () => {
    for (const [side, sim] of [['A', a.simulation], ['B', b.simulation]] as [string, Simulation | null][]) {
      const c = el.querySelector<HTMLCanvasElement>(`canvas[data-side="${side}"]`);
      if (c && sim && c.offsetParent !== null) drawPipeline(c, sim);
    }
  };
  requestAnimationFrame(redraw);
}

// The same rank of A and B: both traces as the rank preview draws them
// (views/rank.ts's Timeline: compute and communication lanes under the
// same in-order schedule), side by side on ONE time axis (the longer of
// the two iterations), then its nodes and bytes on the wire by group kind
// (lib/comm.js's ring factors). The Show toggle and the phone layout
// stack them as the compare panel does.
export interface RankSide { trace: TraceView; nodes: number; computeUs: number; wire: { rows: WireRow[]; total: { sent: number } } }
const rankTimelines: Timeline[] = [];
export function redrawRankCompare(): void { for (const t of rankTimelines) t.draw(); }
on('tab-shown', (name) => { if (name === 'rank') redrawRankCompare(); });

function showToggle(el: HTMLElement, redraw: () => void): HTMLElement {
  const show = el.dataset.show || 'both';
  el.dataset.show = show;
  const toggle = h('div', { class: 'toggle', role: 'group', 'aria-label': 'Show' }, 'Show ',
    ...(['both', 'a', 'b'] as const).map((v) => {
      const btn = h('button', { type: 'button', 'data-show': v, 'aria-pressed': String(show === v) }, v === 'both' ? 'A and B' : v === 'a' ? 'A only' : 'B only');
      btn.addEventListener('click', () => { el.dataset.show = v; for (const x of toggle.querySelectorAll('button')) x.setAttribute('aria-pressed', String(x === btn)); redraw(); });
      return btn;
    }));
  return toggle;
}

export function renderRankCompare(el: HTMLElement, rank: number, a: RankSide | string, b: RankSide, info?: RankInfo): void {
  rankTimelines.length = 0;
  if (typeof a === 'string') { el.replaceChildren(h('h3', {}, `Rank ${rank} in A and B`), h('p', { class: 'hint' }, a)); return; }
  const kinds = [...new Set([...a.wire.rows.map((r) => r.kind), ...b.wire.rows.map((r) => r.kind)])];
  const sent = (side: RankSide, k: string) => side.wire.rows.find((r) => r.kind === k)?.sent ?? 0;
  const row = (name: string, av: string, bv: string, d: HTMLElement) => h('tr', {}, h('th', { scope: 'row' }, name), h('td', { class: 'num col-a' }, av), h('td', { class: 'num col-b' }, bv), d);
  const span = Math.max(a.trace.sched.makespan, b.trace.sched.makespan);
  const views: [HTMLCanvasElement, RankSide, string][] = [];
  const column = (side: RankSide, tag: 'A' | 'B') => {
    const t = side.trace.sched;
    const canvas = h('canvas', { class: 'rank-timeline', role: 'img', 'data-side': tag, 'data-makespan-us': t.makespan, 'data-span-us': span }) as HTMLCanvasElement;
    views.push([canvas, side, tag]);
    const other = tag === 'A' ? b : a;
    return h('div', { class: `col-${tag.toLowerCase()}` },
      h('h4', {}, `${tag}: rank ${rank}, iteration ≈ ${fmtUs(t.makespan)}`),
      h('p', { class: 'hint' }, `compute busy ${fmtUs(t.busy[0])}, communication busy ${fmtUs(t.busy[1])}; ${side.nodes.toLocaleString('en')} nodes (${tag === 'A' ? 'B' : 'A'}: ${other.nodes.toLocaleString('en')})`),
      h('div', { class: 'timeline-box' }, canvas, h('div', { class: 'tip', hidden: true })));
  };
  const cols = h('div', { class: 'compare-timelines' }, column(a, 'A'), column(b, 'B'));
  el.dataset.rank = String(rank);
  const redraw = () => { for (const t of rankTimelines) t.draw(); };
  el.replaceChildren(h('h3', {}, `Rank ${rank} in A and B${info ? ` (B's coordinates: ${info.axes.map((x) => `${x.name} ${x.coord}`).join(', ')})` : ''}`),
    showToggle(el, redraw),
    h('p', { class: 'hint' }, `Both traces on one time axis, 0 to ${fmtUs(span)} (the longer iteration), scheduled as in the rank preview: a gap in a lane is time that lane waits. Forward = blue, backward = amber, optimizer = grey; collectives in their type’s colour.`),
    cols,
    h('div', { class: 'table-scroll', tabindex: 0, role: 'region', 'aria-label': `Rank ${rank} in A and B` },
      h('table', { class: 'compare-table' }, h('caption', {}, `Rank ${rank}’s trace in A and in B; bytes this rank sends per iteration`),
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'figure'), h('th', { scope: 'col', class: 'col-a' }, 'A'), h('th', { scope: 'col', class: 'col-b' }, 'B'), h('th', { scope: 'col' }, 'B vs A'))),
        h('tbody', {},
          row('Iteration on this schedule', fmtUs(a.trace.sched.makespan), fmtUs(b.trace.sched.makespan), change(a.trace.sched.makespan, b.trace.sched.makespan, 'ratio', true)),
          row('Trace nodes', a.nodes.toLocaleString('en'), b.nodes.toLocaleString('en'), change(a.nodes, b.nodes, 'ratio', true)),
          row('Compute time (sum of node durations)', fmtUs(a.computeUs), fmtUs(b.computeUs), change(a.computeUs, b.computeUs, 'ratio', true)),
          ...kinds.map((k) => row(`Sent on the wire: ${k}`, fmtBytes(sent(a, k)), fmtBytes(sent(b, k)), change(sent(a, k), sent(b, k), 'ratio', true))),
          row('Sent on the wire: total', fmtBytes(a.wire.total.sent), fmtBytes(b.wire.total.sent), change(a.wire.total.sent, b.wire.total.sent, 'ratio', true))))));
  for (const [canvas, side, tag] of views) {
    const t = new Timeline(canvas, canvas.nextElementSibling as HTMLElement, false);
    t.set(side.trace, span, `${tag}'s rank ${rank}: compute lane and communication lane, ${fmtUs(side.trace.sched.makespan)} of a shared ${fmtUs(span)} axis; the table below gives the same figures`);
    rankTimelines.push(t);
  }
  requestAnimationFrame(redraw);
}
