// Inference mode (docs/inference.md, docs/web-app.md "Inference mode"):
// what a serving job costs per rank and what it delivers — the KV-cache
// memory bar (weights / KV cache / activations + workspace / free), the
// KV cache per token and the sequences that fit, TTFT, TPOT, ITL and
// tokens/s per GPU, a request mix's classes, the latency-throughput curve over concurrency (the
// engine's serving_sweep), a workload's percentiles (serving.workload) and
// the latency-rate curve of the capacity search (serving_capacity, with the
// SLO lines and the capacity point). Plain SVG with <title>s and a table as
// the text alternative.
import type { Capacity, CapacityPoint, EngineError, SweepPoint } from '../protocol';
import { curvePoints, mixMean, niceCeil, type RequestClassFigures } from '../lib/serving';
import { h, s, fmtBytes, fmtCount, fmtUs } from '../util';

type Summary = Record<string, any>;  // docs/summary.md, docs/inference.md

const sec = (x: number) => (Number.isFinite(x) ? fmtUs(x * 1e6) : '—');
const rate = (x: number) => (Number.isFinite(x) ? `${x >= 100 ? Math.round(x).toLocaleString('en') : x.toFixed(1)}` : '—');

// The per-rank memory of a serving job, in the bar's order.
export const SERVING_PARTS: [string, string, string][] = [
  ['weights', 'Weights', '#1864ab'],
  ['kv_cache', 'KV cache', '#2b8a3e'],
  ['workspace', 'Activations + workspace', '#c2255c'],
  ['free', 'Free', '#e9ecef'],
];

// summary.inference's per-rank breakdown, normalised to SERVING_PARTS
// (bytes). `free` is what the GPU has left; negative when the job does not
// fit.
export function servingMemory(inf: Summary): Record<string, number> {
  const m = (inf.memory_bytes_per_rank ?? inf.memory_per_rank ?? inf.memory ?? {}) as Record<string, number>;
  const num = (v: unknown) => (Number.isFinite(Number(v)) ? Number(v) : 0);
  const weights = num(m.weights ?? inf.weights_bytes_per_rank);
  const kv = num(m.kv_cache ?? m.kv);
  const workspace = num(m.workspace ?? 0) + num(m.activations ?? 0);
  const capacity = num(m.capacity ?? inf.capacity_bytes);
  const free = m.free !== undefined ? num(m.free) : capacity - weights - kv - workspace;
  return { weights, kv_cache: kv, workspace, free, capacity };
}

// Disaggregated prefill and decode pools: summary.job is the decode pool's
// job, so the pools show in summary.inference (a KV transfer, no mixed
// iteration).
export const isDisaggregated = (summary: Summary): boolean =>
  summary.inference?.kv_transfer_seconds !== undefined || (summary.inference?.iterations !== undefined && summary.inference.iterations.mixed === undefined);

// How the GPUs are laid out: tp × pp × dp (attention data parallelism),
// the experts re-dividing the same ranks by ep, and for a disaggregated job
// each pool's ranks.
function ranksNote(summary: Summary): string {
  const layout = summary.layout ?? {};
  const it = summary.inference?.iterations ?? {};
  const sv = summary.job?.serving ?? {};
  const axes = ['tp', 'pp', 'dp'].filter((k) => Number(layout[k]) > 1).map((k) => `${k === 'dp' ? 'dp (attention)' : k} ${layout[k]}`);
  let note = `${axes.join(' × ') || 'one rank'}${Number(layout.ep) > 1 ? `; experts over ep ${layout.ep} of the same ranks` : ''}`;
  if (isDisaggregated(summary)) note = `decode pool ${it.decode?.world_size ?? summary.world_size} ranks (${note}), prefill pool ${it.prefill?.world_size ?? '?'} ranks`;
  if (Number(sv.replicas) > 1) note += `; × ${sv.replicas} replicas`;
  return note;
}

function card(title: string, value: string, note: string, key?: string): HTMLElement {
  return h('div', { class: 'card', 'data-card': key }, h('div', { class: 'card-title' }, title), h('div', { class: 'card-value' }, value), h('div', { class: 'card-note' }, note));
}

function memoryBar(mem: Record<string, number>, label: string): HTMLElement {
  const W = 640, H = 44;
  const cap = mem.capacity || mem.weights + mem.kv_cache + mem.workspace + Math.max(0, mem.free);
  const used = mem.weights + mem.kv_cache + mem.workspace;
  const scale = Math.max(cap, used) || 1;
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, width: '100%', role: 'img', 'aria-label': `${label}: weights ${fmtBytes(mem.weights)}, KV cache ${fmtBytes(mem.kv_cache)}, activations and workspace ${fmtBytes(mem.workspace)}, free ${fmtBytes(Math.max(0, mem.free))} of ${fmtBytes(cap)}` });
  let x = 0;
  for (const [k, name, color] of SERVING_PARTS) {
    const v = Math.max(0, mem[k] || 0);
    const w = (v / scale) * W;
    const r = s('rect', { x, y: 6, width: w, height: 28, fill: color, 'data-part': k, stroke: k === 'free' ? '#adb5bd' : 'none' });
    r.append(s('title', {}, `${name}: ${fmtBytes(v)}`));
    svg.append(r);
    x += w;
  }
  const over = used > cap;
  const legend = h('ul', { class: 'legend' }, ...SERVING_PARTS.map(([k, name, color]) =>
    h('li', {}, h('span', { class: 'swatch', style: `background:${color};${k === 'free' ? 'border:1px solid #adb5bd' : ''}` }), `${name} ${fmtBytes(Math.max(0, mem[k] || 0))}`)));
  return h('figure', { class: 'mem', 'data-kv': String(mem.kv_cache), 'data-weights': String(mem.weights), 'data-free': String(mem.free) },
    h('figcaption', {}, `${label}: `, h('strong', { class: over ? 'bad' : 'good' }, `${fmtBytes(used)} of ${fmtBytes(cap)}`),
      over ? ' — does not fit: more tp (or ep for experts), fp8 weights, fp8 KV cache, fewer or shorter sequences' : ''),
    svg, legend);
}

// A request mix (serving.requests): summary.inference.requests has one
// entry per class, in the job's order (docs/inference.md "Request mixes").
export const requestClasses = (summary: Summary): RequestClassFigures[] | null =>
  Array.isArray(summary.inference?.requests) && summary.inference.requests.length ? summary.inference.requests as RequestClassFigures[] : null;

// Exact token counts in the mix table (a class is named by them).
const tokens = (x: unknown) => Number(x).toLocaleString('en');
const pct = (x: number) => `${+(x * 100).toFixed(1)} %`;

function mixTable(classes: RequestClassFigures[]): HTMLElement {
  const table = h('table', { class: 'mix' }, h('caption', {}, 'Request mix: one row per class of requests'),
    h('thead', {}, h('tr', {}, ...['class', 'share of requests', 'prompt + output tokens', 'KV cache per sequence', 'prefill', 'TTFT'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, ...classes.map((c, i) => h('tr', { 'data-class': String(i) },
      h('th', { scope: 'row' }, String(i + 1)), h('td', { class: 'num', 'data-share': String(c.share) }, pct(Number(c.share))),
      h('td', { class: 'num' }, `${tokens(c.prompt_tokens)} + ${tokens(c.output_tokens)}`),
      h('td', { class: 'num' }, fmtBytes(Number(c.kv_cache_bytes_per_sequence))),
      h('td', { class: 'num', 'data-seconds': String(c.prefill_seconds) }, sec(Number(c.prefill_seconds))),
      h('td', { class: 'num', 'data-seconds': String(c.ttft_seconds) }, sec(Number(c.ttft_seconds)))))));
  return h('section', { id: 'mix', 'aria-label': 'Request mix' }, h('h3', {}, 'Request mix'),
    h('div', { class: 'table-scroll', tabindex: 0, role: 'region', 'aria-label': 'Request mix table' }, table),
    h('p', { class: 'hint' }, 'Each class gets its own prefill, so its own TTFT; the TTFT card is their mean over requests. Decode steps mix the classes: a class holds a slot for as many steps as it has output tokens, so one step (TPOT) is the same for all. The traces’ prefill and mixed iterations are the longest prompt’s class.'));
}

export function renderServingSummary(el: HTMLElement, summary: Summary): void {
  const inf = summary.inference ?? {};
  const job = summary.job ?? {};
  const sv = job.serving ?? {};
  const classes = requestClasses(summary);
  const kvTok = Number(inf.kv_cache_bytes_per_token);
  const used = Number(inf.concurrency ?? inf.concurrency_used ?? sv.concurrency);
  const mem = servingMemory(inf);
  const disagg = isDisaggregated(summary);
  const tpot = Number(inf.tpot_seconds), itl = Number(inf.itl_seconds);
  let kvNote: string, fitNote: string, ttftNote: string, tpsNote: string;
  if (classes) {
    // Means over requests (shares p_i): E[P + O] and E[O].
    const mean = (f: (c: RequestClassFigures) => number) => mixMean(classes, f);
    const eo = mean((c) => Number(c.output_tokens));
    const longest = classes.reduce((a, c) => (Number(c.kv_cache_bytes_per_sequence) > Number(a.kv_cache_bytes_per_sequence) ? c : a));
    kvNote = `whole model, all layers, ${sv.kv_dtype ?? 'bf16'}; ${fmtBytes(Number(inf.kv_cache_bytes_per_sequence))} per sequence on average over the mix of ${classes.length} classes (paged; ${tokens(Math.round(mean((c) => Number(c.prompt_tokens) + Number(c.output_tokens))))} tokens on average)`;
    fitNote = `sequences of the mix whose expected cache (the mean, ${fmtBytes(Number(inf.kv_cache_bytes_per_sequence))}) fits beside weights, activations and workspace on every rank; not a guarantee: a batch of only the longest class (${tokens(longest.prompt_tokens)} + ${tokens(longest.output_tokens)}, ${fmtBytes(Number(longest.kv_cache_bytes_per_sequence))} each) needs more`;
    ttftNote = `TTFT without queueing: the mean over requests of each class’s prefill${disagg ? ' plus its KV cache sent to the decode pool' : ''}; per class in the table below`;
    tpsNote = `output tokens per second per GPU in steady state: ${Number.isFinite(used) ? used : ''} slots, each serving requests back to back, ${tokens(Math.round(eo))} decode steps per request on average`;
  } else {
    const context = Number(sv.prompt_tokens) + Number(sv.output_tokens);
    kvNote = `whole model, all layers, ${sv.kv_dtype ?? 'bf16'}; ${fmtBytes(kvTok * context)} per sequence of ${fmtCount(context)} tokens`;
    fitNote = `of ${fmtCount(context)} tokens (prompt ${fmtCount(Number(sv.prompt_tokens))} + output ${fmtCount(Number(sv.output_tokens))}), beside weights, activations and workspace on every rank`;
    ttftNote = `TTFT without queueing: prefill of a ${fmtCount(Number(sv.prompt_tokens))}-token prompt that starts at once${disagg ? ', plus its KV cache sent to the decode pool' : ''}; requests that arrive and wait: the workload and capacity below`;
    tpsNote = `output tokens per second per GPU in steady state: ${Number.isFinite(used) ? used : ''} sequences, each prefilled once and decoded for ${fmtCount(Number(sv.output_tokens))} steps`;
  }
  const cards = h('div', { class: 'cards' },
    card('GPUs', fmtCount(Number(inf.gpus ?? summary.world_size)), ranksNote(summary), 'gpus'),
    card('KV cache per token', fmtBytes(kvTok), kvNote, 'kv-per-token'),
    card('Sequences that fit', fmtCount(Number(inf.max_concurrent_sequences)), fitNote, 'max-seqs'),
    card('Weights per rank', fmtBytes(Number(inf.weights_bytes_per_rank)), `${sv.weights_dtype ?? 'bf16'}, the largest rank`, 'weights'),
    card('Time to first token', sec(Number(inf.ttft_seconds)), ttftNote, 'ttft'),
    card('Time per output token', sec(tpot), `TPOT: one decode step at concurrency ${Number.isFinite(used) ? used : '?'}; a user’s tokens come every ITL${Number.isFinite(itl) ? '' : ` (${rate(1 / tpot)} tokens/s)`}`, 'tpot'),
    ...(Number.isFinite(itl) ? [card('Inter-token latency', sec(itl), `ITL: the gap a user sees between tokens: TPOT plus the stalls while other requests’ prefills join the batch (continuous batching)${disagg ? '; none here: the decode pool runs no prefills' : ''}; ${rate(1 / itl)} tokens/s per user`, 'itl')] : []),
    card('Tokens / s per GPU', rate(Number(inf.tokens_per_second_per_gpu)), tpsNote, 'tps'),
  );
  el.replaceChildren(
    cards,
    ...(classes ? [mixTable(classes)] : []),
    h('h3', {}, 'Memory per rank: weights, KV cache, activations + workspace, free'),
    memoryBar(mem, 'Per rank'),
    h('p', { class: 'hint' }, 'Decode is memory-bound: every step reads the rank’s weights and the KV cache of every sequence it decodes, so a step can never take less than those bytes ÷ the GPU’s memory bandwidth. More sequences per step share one read of the weights (throughput grows) but add their cache to each read (latency grows): the curve below.'),
    ...(workloadStats(inf) ? [workloadSection(inf, sv.workload ?? {})] : []),
    h('section', { id: 'capacity', 'aria-label': 'Latency against request rate' }, h('h3', {}, 'Latency against request rate: capacity'),
      h('p', { class: 'hint' }, hasSlo(sv) ? 'waiting for the engine’s capacity search…' : noSloHint)),
    h('section', { id: 'layouts', 'aria-label': 'Capacity across layouts' }, h('h3', {}, 'Capacity across layouts')),
    h('section', { id: 'sweep', 'aria-label': 'Latency against throughput' }, h('h3', {}, 'Latency against throughput'), h('p', { class: 'hint' }, 'waiting for the engine’s sweep…')),
  );
  el.dataset.inference = '1';
  el.dataset.mix = classes ? String(classes.length) : '0';
}

// A chart's plot area: white frame, four grid lines each way and their
// tick labels (x by xLabel, y to 3 significant figures), from 0 to xMax / yMax.
function plotFrame(g: SVGElement, pw: number, ph: number, xMax: number, yMax: number, xLabel: (v: number) => string): void {
  g.append(s('rect', { x: 0, y: 0, width: pw, height: ph, fill: '#fff', stroke: '#adb5bd' }));
  for (let i = 0; i <= 4; i++) {
    const gx = (i / 4) * pw, gy = ph - (i / 4) * ph;
    g.append(s('line', { x1: gx, x2: gx, y1: 0, y2: ph, stroke: '#f1f3f5' }), s('line', { x1: 0, x2: pw, y1: gy, y2: gy, stroke: '#f1f3f5' }));
    g.append(s('text', { x: gx, y: ph + 16, 'text-anchor': 'middle', 'font-size': 11, fill: '#343a40' }, xLabel((i / 4) * xMax)));
    g.append(s('text', { x: -6, y: gy + 4, 'text-anchor': 'end', 'font-size': 11, fill: '#343a40' }, `${+((i / 4) * yMax).toPrecision(3)}`));
  }
}

// The latency-throughput curve: one point per concurrency; x = tokens/s per
// GPU, y = TPOT (ms). The job's own concurrency is the filled point.
export function renderSweep(el: HTMLElement, sweep: SweepPoint[], own: number): void {
  const W = 640, H = 300, L = 56, B = 40, T = 12, R = 16;
  const pw = W - L - R, ph = H - T - B;
  const { xMax, yMax, points } = curvePoints(sweep, pw, ph, 'tpot');
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, width: '100%', role: 'img', class: 'sweep-chart',
    'aria-label': `Time per output token against tokens per second per GPU, ${sweep.length} concurrencies from ${sweep[0]?.concurrency ?? 0} to ${sweep[sweep.length - 1]?.concurrency ?? 0}; the table below lists them` });
  const g = s('g', { transform: `translate(${L},${T})` });
  svg.append(g);
  plotFrame(g, pw, ph, xMax, yMax, rate);
  g.append(s('text', { x: pw / 2, y: ph + 34, 'text-anchor': 'middle', 'font-size': 12, fill: '#212529' }, 'output tokens / s per GPU (throughput) →'));
  g.append(s('text', { x: -44, y: ph / 2, 'text-anchor': 'middle', 'font-size': 12, fill: '#212529', transform: `rotate(-90 -44 ${ph / 2})` }, 'TPOT, ms (latency) →'));
  if (points.length > 1) g.append(s('polyline', { points: points.map((p) => `${p.px},${p.py}`).join(' '), fill: 'none', stroke: '#1864ab', 'stroke-width': 2 }));
  for (const p of points) {
    const mine = p.concurrency === own;
    const c = s('circle', { cx: p.px, cy: p.py, r: mine ? 6 : 4, fill: mine ? '#c2255c' : '#1864ab', 'data-concurrency': p.concurrency });
    c.append(s('title', {}, `concurrency ${p.concurrency}: ${rate(p.tokens_per_second_per_gpu)} tokens/s per GPU, TPOT ${sec(p.tpot_seconds)}${p.itl_seconds !== undefined ? `, ITL ${sec(p.itl_seconds)}` : ''}, TTFT without queueing ${sec(p.ttft_seconds)}`));
    g.append(c, s('text', { x: p.px + 6, y: p.py - 6, 'font-size': 10, fill: '#495057' }, String(p.concurrency)));
  }
  // A user's tokens come one ITL apart (TPOT plus the stalls of the other
  // requests' prefills), so their rate is 1 / ITL, not 1 / TPOT; an engine
  // without the ITL per point gives 1 / TPOT, labelled as the step rate.
  const withItl = sweep.every((p) => p.itl_seconds !== undefined);
  const perUser = (p: SweepPoint) => (withItl ? 1 / Number(p.itl_seconds) : p.tokens_per_second_per_user);
  const table = h('table', { class: 'sweep' }, h('caption', {}, 'Serving sweep: one row per concurrency (sequences the instance decodes together), every slot busy, no request waiting'),
    h('thead', {}, h('tr', {}, ...['concurrency', 'TTFT without queueing', 'TPOT (one decode step)', ...(withItl ? ['ITL (with other prefills)'] : []), withItl ? 'tokens/s per user (1 / ITL)' : 'decode steps/s (1 / TPOT)', 'tokens/s per GPU'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, ...sweep.map((p) => h('tr', { 'data-concurrency': String(p.concurrency), class: p.concurrency === own ? 'own' : undefined },
      h('th', { scope: 'row' }, String(p.concurrency)), h('td', { class: 'num' }, sec(p.ttft_seconds)), h('td', { class: 'num' }, sec(p.tpot_seconds)),
      ...(withItl ? [h('td', { class: 'num', 'data-itl': String(p.itl_seconds) }, sec(Number(p.itl_seconds)))] : []),
      h('td', { class: 'num', 'data-per-user': String(perUser(p)) }, rate(perUser(p))), h('td', { class: 'num' }, rate(p.tokens_per_second_per_gpu))))));
  el.replaceChildren(h('h3', {}, 'Latency against throughput'), svg,
    h('p', { class: 'hint' }, 'Each point is one concurrency (labelled). Going right, more sequences share each step: tokens/s per GPU rise while the weights dominate the bytes a step reads, then flatten as the KV cache read (and compute) grows; going up, each decode step takes longer. The filled point is this job. The TTFT here is a prefill that starts at once: with every slot busy, a real request first waits for one — the latency–rate curve above has the queueing. A user’s tokens come one ITL apart: the decode step plus the stalls while other requests’ prefills join the batch.'),
    h('div', { class: 'table-scroll', tabindex: 0, role: 'region', 'aria-label': 'Serving sweep table' }, table));
  el.dataset.points = String(sweep.length);
}

export function sweepUnavailable(el: HTMLElement, why: string): void {
  el.replaceChildren(h('h3', {}, 'Latency against throughput'), h('p', { class: 'hint' }, why));
  el.dataset.points = '0';
}

// ---------------------------------------------------------------- workload
// summary.inference with serving.workload (docs/inference.md "Workload"):
// `<metric>_mean|_p50|_p90|_p99` and inference.workload's counts.
const METRICS: [string, string, string][] = [
  ['ttft_seconds', 'TTFT', 'arrival to first token: queueing + prefill'],
  ['tpot_seconds', 'TPOT', 'per request: (finish − first token) / (output − 1)'],
  ['itl_seconds', 'ITL', 'every gap between two tokens of a request'],
  ['e2e_seconds', 'end to end', 'arrival to last token'],
  ['queue_seconds', 'queue', 'arrival to first scheduled'],
];
const STATS = ['mean', 'p50', 'p90', 'p99'];

export const workloadStats = (inf: Summary): boolean => inf.ttft_seconds_p99 !== undefined && inf.workload !== undefined;

function workloadSection(inf: Summary, w: Summary): HTMLElement {
  const wl = inf.workload ?? {};
  const arrival = w.arrival ?? (w.trace ? 'trace' : 'poisson');
  const what = arrival === 'burst' ? `a burst of ${fmtCount(Number(wl.requests))} requests at once`
    : arrival === 'trace' ? `${fmtCount(Number(wl.requests))} requests of a trace`
    : `${fmtCount(Number(wl.requests))} requests, ${arrival} arrivals at ${w.rate} per second${w.duration_seconds !== undefined ? ` for ${w.duration_seconds} s` : ''}, seed ${w.seed ?? 0}`;
  const table = h('table', { class: 'workload' }, h('caption', {}, `Per-request latencies of the simulated workload (${what})`),
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'latency'), ...STATS.map((k) => h('th', { scope: 'col' }, k === 'mean' ? 'mean' : k.toUpperCase())))),
    h('tbody', {}, ...METRICS.map(([key, name, note]) => h('tr', { 'data-metric': key },
      h('th', { scope: 'row', title: note }, name),
      ...STATS.map((k) => h('td', { class: 'num', 'data-stat': k, 'data-seconds': String(inf[`${key}_${k}`]) }, sec(Number(inf[`${key}_${k}`]))))))));
  const goodput = wl.goodput_requests_per_second;
  const cards = h('div', { class: 'cards' },
    card('P99 TTFT', sec(Number(inf.ttft_seconds_p99)), 'with queueing: 99 % of the workload’s requests got their first token within this', 'wl-ttft-p99'),
    card('P99 TPOT', sec(Number(inf.tpot_seconds_p99)), 'time per output token after the first, 99 % of requests at or under this', 'wl-tpot-p99'),
    card('Throughput', `${rate(Number(wl.requests_per_second))} req/s`, `${rate(Number(wl.output_tokens_per_second))} output tokens/s over the ${sec(Number(wl.makespan_seconds))} until the last request finished`, 'wl-throughput'),
    ...(goodput !== undefined ? [card('Goodput', `${rate(Number(goodput))} req/s`, 'requests per second meeting both SLO targets (vLLM’s benchmark_serving goodput)', 'wl-goodput')] : []),
    card('KV cache in use', `${pct(Number(wl.kv_cache_utilization_mean))} mean`, `${pct(Number(wl.kv_cache_utilization_max))} at the fullest iteration; ${fmtCount(Number(wl.preemptions))} preemptions (a request evicted to make room, recomputed later)`, 'wl-kv'),
  );
  return h('section', { id: 'workload', 'aria-label': 'Workload', 'data-requests': String(wl.requests) },
    h('h3', {}, 'Workload: requests that arrive, queue and finish'), cards,
    ...(Array.isArray(wl.kv_cache_utilization) && wl.kv_cache_utilization.length ? [kvOverTime(wl.kv_cache_utilization as [number, number][], Number(wl.makespan_seconds))] : []),
    h('div', { class: 'table-scroll', tabindex: 0, role: 'region', 'aria-label': 'Workload latency table' }, table),
    h('p', { class: 'hint' }, 'A request-level simulation of the engine’s scheduler (continuous batching, chunked prefill, preemption when the KV cache is full), each iteration timed by this job’s own cost model; percentiles over the requests (ITL: over every gap). Unlike the cards above, TTFT includes the time a request waits for room.'));
}

// inference.workload.kv_cache_utilization: [bucket start (s), mean share of
// the KV pages in use] over 100 equal buckets of the makespan.
function kvOverTime(buckets: [number, number][], makespan: number): HTMLElement {
  const W = 640, H = 120, L = 44, B = 30, T = 8, R = 12;
  const pw = W - L - R, ph = H - T - B;
  const w = makespan / buckets.length;
  const X = (t: number) => (makespan > 0 ? (t / makespan) * pw : 0);
  const Y = (u: number) => ph - Math.max(0, Math.min(1, u)) * ph;
  const peak = buckets.reduce((a, [, u]) => Math.max(a, u), 0);
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, width: '100%', role: 'img', class: 'kv-time',
    'aria-label': `KV cache in use over the run: ${buckets.length} intervals of ${sec(w)}, the fullest interval at ${pct(peak)} of the pages on average (a single iteration may be fuller)` });
  const g = s('g', { transform: `translate(${L},${T})` });
  svg.append(g);
  g.append(s('rect', { x: 0, y: 0, width: pw, height: ph, fill: '#fff', stroke: '#adb5bd' }));
  for (const f of [0, 0.5, 1]) g.append(s('text', { x: -6, y: Y(f) + 4, 'text-anchor': 'end', 'font-size': 11, fill: '#343a40' }, `${f * 100} %`));
  for (const f of [0, 0.5, 1]) g.append(s('text', { x: f * pw, y: ph + 16, 'text-anchor': f === 0 ? 'start' : f === 1 ? 'end' : 'middle', 'font-size': 11, fill: '#343a40' }, f === 0 ? '0 s' : sec(f * makespan)));
  const pts = buckets.flatMap(([t, u]) => [`${X(t)},${Y(u)}`, `${X(t + w)},${Y(u)}`]);
  g.append(s('polygon', { points: [`0,${ph}`, ...pts, `${pw},${ph}`].join(' '), fill: '#b2f2bb', stroke: '#2b8a3e', 'stroke-width': 1 }));
  return h('figure', { class: 'kv-time' }, h('figcaption', {}, 'KV cache pages in use over the run (share of the pages, averaged over each interval)'), svg);
}

// ---------------------------------------------------------------- capacity
const hasTarget = (v: unknown) => Number(v) > 0;
// Request rates: three significant digits (a capacity may be 0.35 requests/s).
const rps = (x: number) => (Number.isFinite(x) ? (x >= 1000 ? Math.round(x).toLocaleString('en') : `${+x.toPrecision(3)}`) : '—');
export const hasSlo = (sv: Summary): boolean => hasTarget(sv.slo?.ttft_seconds_p99) || hasTarget(sv.slo?.tpot_seconds_p99);
const noSloHint = 'Give a latency target (SLO: P99 TTFT and/or P99 TPOT, in the serving fields) to find the highest request rate this deployment holds and draw P99 latency against the rate.';

// One panel: P50 and P99 of a latency against the request rate, the SLO as
// a horizontal line, the capacity as a vertical line and its point.
function ratePanel(cap: Capacity, metric: 'ttft' | 'tpot', title: string): SVGElement {
  const W = 640, H = 240, L = 60, B = 40, T = 12, R = 16;
  const pw = W - L - R, ph = H - T - B;
  const curve = cap.curve;
  const p99 = (c: CapacityPoint) => Number(c[`${metric}_seconds_p99`]) * 1e3;
  const p50 = (c: CapacityPoint) => Number(c[`${metric}_seconds_p50`]) * 1e3;
  const slo = Number(cap.slo[`${metric}_seconds_p99`]) * 1e3;
  const xMax = niceCeil(Math.max(...curve.map((c) => c.requests_per_second)));
  // Past the capacity the queue grows without bound: keep the SLO line in
  // view (up to 3 × the target) and mark points above the axis as off scale.
  const top = Math.max(...curve.map(p99));
  // When no rate meets the targets the curve is the latencies of requests
  // nearly alone, all above a line they cannot reach: show them all.
  const none = !(cap.capacity_requests_per_second > 0);
  const yMax = niceCeil(slo > 0 && !none ? Math.max(Math.min(top, 3 * slo), 1.1 * slo) : Math.max(top, 1.1 * slo));
  const X = (r: number) => (r / xMax) * pw;
  const Y = (v: number) => ph - (Math.min(v, yMax) / yMax) * ph;
  const capRate = cap.capacity_requests_per_second;
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, width: '100%', role: 'img', class: 'rate-chart', 'data-metric': metric,
    'aria-label': `${title} against requests per second, ${curve.length} rates from ${rps(curve[0]?.requests_per_second)} to ${rps(curve[curve.length - 1]?.requests_per_second)}${slo > 0 ? `; target ${+slo.toPrecision(3)} ms` : ''}; capacity ${rps(capRate)} requests/s; the table below lists them` });
  const g = s('g', { transform: `translate(${L},${T})` });
  svg.append(g);
  plotFrame(g, pw, ph, xMax, yMax, (v) => `${+v.toPrecision(3)}`);
  g.append(s('text', { x: pw / 2, y: ph + 34, 'text-anchor': 'middle', 'font-size': 12, fill: '#212529' }, 'requests / s (arrival rate, whole deployment) →'));
  g.append(s('text', { x: -48, y: ph / 2, 'text-anchor': 'middle', 'font-size': 12, fill: '#212529', transform: `rotate(-90 -48 ${ph / 2})` }, `${title}, ms →`));
  if (slo > 0) {
    const l = s('line', { x1: 0, x2: pw, y1: Y(slo), y2: Y(slo), stroke: '#c92a2a', 'stroke-width': 1.5, 'stroke-dasharray': '6 4', class: 'slo', 'data-slo': String(slo / 1e3) });
    l.append(s('title', {}, `target: P99 ${title} ≤ ${+slo.toPrecision(4)} ms`));
    g.append(l, s('text', { x: pw - 4, y: Y(slo) - 5, 'text-anchor': 'end', 'font-size': 11, fill: '#a51d1d' }, `SLO ${+slo.toPrecision(4)} ms`));
  }
  if (capRate > 0) {
    const v = s('line', { x1: X(capRate), x2: X(capRate), y1: 0, y2: ph, stroke: '#2b8a3e', 'stroke-width': 1.5, 'stroke-dasharray': '2 3', class: 'capacity', 'data-rate': String(capRate) });
    v.append(s('title', {}, `capacity: ${rps(capRate)} requests/s`));
    g.append(v, s('text', { x: Math.min(X(capRate) + 4, pw - 4), y: 12, 'text-anchor': X(capRate) + 4 > pw - 80 ? 'end' : 'start', 'font-size': 11, fill: '#2b6e35' }, `capacity ${rps(capRate)} req/s`));
  }
  const line = (f: (c: CapacityPoint) => number, color: string, width: number, dash?: string) =>
    s('polyline', { points: curve.map((c) => `${X(c.requests_per_second)},${Y(f(c))}`).join(' '), fill: 'none', stroke: color, 'stroke-width': width, ...(dash ? { 'stroke-dasharray': dash } : {}) });
  if (curve.length > 1) g.append(line(p50, '#74c0fc', 1.5, '4 3'), line(p99, '#1864ab', 2));
  for (const c of curve) {
    const mine = c.requests_per_second === capRate;
    const off = p99(c) > yMax;
    const dot = s('circle', { cx: X(c.requests_per_second), cy: Y(p99(c)), r: mine ? 6 : 4, fill: mine ? '#2b8a3e' : off ? '#fff' : '#1864ab', stroke: mine ? '#2b8a3e' : '#1864ab', 'stroke-width': 1.5,
      class: mine ? 'capacity-point' : 'point', 'data-rate': String(c.requests_per_second), 'data-p99': String(p99(c) / 1e3), 'data-meets': String(c.meets_slo), ...(off ? { 'data-off-scale': '1' } : {}) });
    dot.append(s('title', {}, `${rps(c.requests_per_second)} requests/s: P99 ${title} ${sec(p99(c) / 1e3)}, P50 ${sec(p50(c) / 1e3)}${off ? ' (above the chart)' : ''}; ${c.meets_slo ? 'meets' : 'misses'} the targets`));
    g.append(dot);
  }
  return svg;
}

export function renderCapacity(el: HTMLElement, cap: Capacity): void {
  const curve = cap.curve;
  const slo = cap.slo;
  const targets = [hasTarget(slo.ttft_seconds_p99) ? `P99 TTFT ≤ ${sec(slo.ttft_seconds_p99)}` : '', hasTarget(slo.tpot_seconds_p99) ? `P99 TPOT ≤ ${sec(slo.tpot_seconds_p99)}` : ''].filter(Boolean).join(' and ');
  const capRate = cap.capacity_requests_per_second;
  const headline = capRate > 0
    ? h('p', { class: 'capacity-result' }, 'Capacity: ', h('strong', {}, `${rps(capRate)} requests/s`), ` (${+cap.capacity_requests_per_second_per_gpu.toPrecision(3)} per GPU, ${fmtCount(cap.gpus)} GPUs) at ${targets}`)
    : h('p', { class: 'capacity-result' }, h('strong', { class: 'bad' }, 'No rate meets the targets'), ` (${targets}): even a trickle of requests misses them; the curve shows the latencies at the lowest rates tried`);
  const table = h('table', { class: 'capacity' }, h('caption', {}, `Latency against request rate at ${curve.length} rates (the search simulated ${cap.simulations} runs of ${fmtCount(cap.requests_per_run)} requests each)`),
    h('thead', {}, h('tr', {}, ...['requests/s', 'TTFT P50', 'TTFT P99', 'TPOT P50', 'TPOT P99', 'output tokens/s', 'meets targets'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, ...curve.map((c) => h('tr', { 'data-rate': String(c.requests_per_second), class: c.requests_per_second === capRate ? 'own' : undefined },
      h('th', { scope: 'row' }, rps(c.requests_per_second)), h('td', { class: 'num' }, sec(c.ttft_seconds_p50)), h('td', { class: 'num' }, sec(c.ttft_seconds_p99)),
      h('td', { class: 'num' }, sec(c.tpot_seconds_p50)), h('td', { class: 'num' }, sec(c.tpot_seconds_p99)), h('td', { class: 'num' }, rate(c.output_tokens_per_second)),
      h('td', {}, c.meets_slo ? 'yes' : 'no')))));
  const shortRun = cap.short_run
    ? h('p', { class: 'capacity-short', role: 'note' }, h('strong', { class: 'bad' }, 'Not measured: '),
      `at this rate the run’s ${fmtCount(cap.requests_per_run)} requests arrive within ${sec(cap.run_seconds_at_capacity ?? 0)}, under two P99 end-to-end latencies (${sec(cap.e2e_seconds_p99_at_capacity ?? 0)}): a burst, not a steady state. Raise the workload’s request count.`)
    : null;
  el.replaceChildren(h('h3', {}, 'Latency against request rate: capacity'), headline, ...(shortRun ? [shortRun] : []),
    ratePanel(cap, 'ttft', 'P99 TTFT'), ratePanel(cap, 'tpot', 'P99 TPOT'),
    h('ul', { class: 'legend' },
      h('li', {}, h('span', { class: 'swatch', style: 'background:#1864ab' }), 'P99'),
      h('li', {}, h('span', { class: 'swatch', style: 'background:#74c0fc' }), 'P50'),
      h('li', {}, h('span', { class: 'swatch', style: 'background:#c92a2a' }), 'SLO target'),
      h('li', {}, h('span', { class: 'swatch', style: 'background:#2b8a3e' }), 'capacity')),
    h('p', { class: 'hint' }, 'Each point is a simulated run of requests arriving at that rate (the job’s workload with its rate varied, or Poisson arrivals of its request lengths), through the engine’s scheduler. Below the capacity requests rarely wait; past it the queue grows for as long as requests keep coming and P99 TTFT climbs steeply (points above the chart are hollow). The capacity is the highest rate (to 0.5 %) whose P99s meet every target.'),
    h('div', { class: 'table-scroll', tabindex: 0, role: 'region', 'aria-label': 'Capacity table' }, table));
  el.dataset.capacity = String(capRate);
  el.dataset.points = String(curve.length);
}

export function capacityUnavailable(el: HTMLElement, why: string): void {
  el.replaceChildren(h('h3', {}, 'Latency against request rate: capacity'), h('p', { class: 'hint' }, why));
  el.dataset.points = '0';
}

// Runs the capacity search for the job shown (its serving.slo targets) and
// draws it into #capacity; `request` is the engine client's call, `current`
// whether this job is still the one shown, `explain` turns an engine error
// into a sentence.
export async function loadCapacity(summary: Summary, job: string, request: (job: string) => Promise<{ capacity: Capacity }>,
  current: () => boolean, explainError: (e: EngineError) => string): Promise<void> {
  const el = document.getElementById('capacity');
  if (!el) return;
  const sv = summary.job?.serving ?? {};
  if (!hasSlo(sv)) { capacityUnavailable(el, noSloHint); return; }
  if (isDisaggregated(summary)) { capacityUnavailable(el, 'The capacity search simulates colocated serving only (one engine runs prefill and decode); this job has disaggregated pools.'); return; }
  try {
    const { capacity } = await request(job);
    if (!current()) return;
    renderCapacity(el, capacity);
  } catch (e) {
    if (!current()) return;
    const err = (e as { error?: EngineError }).error ?? { code: 'error', message: String(e), path: '' };
    if (err.code === 'superseded') return;
    capacityUnavailable(el, `Not available for this job: ${explainError(err)}`);
  }
}

// ---------------------------------------------------------------- layouts
// The capacity across layouts and replica counts, as `stagecraft
// serve-capacity --tp-list ... --replicas-list ...` (docs/inference.md
// "Capacity"): one search per (tp, replicas), each the job with
// parallel.tp and serving.replicas set and parallel.expert_tp left to its
// default (tp / gcd(tp, ep), the CLI's rule), in the CLI's order (tp
// outer, replicas inner). The searches run one after another in the engine
// worker; each row appears when its search ends.
export interface LayoutResult { tp: number; replicas: number; capacity?: Capacity; error?: string }

// A comma list of 1 to 16 positive integers (the CLI's --tp-list and
// --replicas-list); a sentence when it is not one.
export function parseLayoutList(text: string, what: string): number[] | string {
  const parts = text.split(',').map((p) => p.trim());
  if (parts.length < 1 || parts.length > 16 || parts.some((p) => !/^[1-9][0-9]{0,5}$/.test(p)))
    return `${what}: 1 to 16 positive whole numbers separated by commas, e.g. 1,2,4,8 (got “${text}”)`;
  return parts.map(Number);
}

// The job of one layout: JOB (canonical JSON text) with tp and replicas set.
export function layoutJob(job: string, tp: number, replicas: number): string {
  const j = JSON.parse(job) as Summary;
  j.parallel = { ...(j.parallel ?? {}), tp };
  delete j.parallel.expert_tp;
  j.serving = { ...(j.serving ?? {}), replicas };
  return JSON.stringify(j);
}

// The best layout: the most requests/s per GPU (what a deployment of a
// given size serves); ties: fewer GPUs. -1 when none meets the targets.
export function bestLayout(rows: LayoutResult[]): number {
  let best = -1;
  rows.forEach((r, i) => {
    const c = r.capacity;
    if (!c || !(c.capacity_requests_per_second > 0)) return;
    const b = best < 0 ? undefined : rows[best].capacity!;
    if (!b || c.capacity_requests_per_second_per_gpu > b.capacity_requests_per_second_per_gpu ||
        (c.capacity_requests_per_second_per_gpu === b.capacity_requests_per_second_per_gpu && c.gpus < b.gpus)) best = i;
  });
  return best;
}

const layoutName = (r: LayoutResult) => `tp ${r.tp} × ${r.replicas} replica${r.replicas === 1 ? '' : 's'}`;

// The table of the layouts searched so far (TOTAL of them in all); the best
// marked once the search is over (DONE).
export function renderLayouts(el: HTMLElement, rows: LayoutResult[], total: number, done: boolean, targets: string): void {
  const best = done ? bestLayout(rows) : -1;
  const status = h('p', { class: 'layouts-status', role: 'status' },
    done ? `${rows.length} of ${total} layouts searched.` : `Searching: ${rows.length} of ${total} layouts done…`);
  const headline = !done ? null : best >= 0
    ? h('p', { class: 'layouts-best' }, 'Best: ', h('strong', {}, layoutName(rows[best])), ` (${fmtCount(rows[best].capacity!.gpus)} GPUs): ${rps(rows[best].capacity!.capacity_requests_per_second)} requests/s, ${rps(rows[best].capacity!.capacity_requests_per_second_per_gpu)} per GPU, the most per GPU at ${targets}`)
    : h('p', { class: 'layouts-best' }, h('strong', { class: 'bad' }, 'No layout meets the targets'), ` (${targets}).`);
  const table = h('table', { class: 'layouts' }, h('caption', {}, `Capacity per layout at ${targets}`),
    h('thead', {}, h('tr', {}, ...['layout', 'GPUs', 'capacity, requests/s', 'per GPU', 'TTFT P99 at capacity', 'TPOT P99 at capacity', 'best'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, ...rows.map((r, i) => {
      const c = r.capacity;
      const at = c?.curve.find((p) => p.requests_per_second === c.capacity_requests_per_second);
      const attrs = { 'data-tp': String(r.tp), 'data-replicas': String(r.replicas), class: i === best ? 'own best' : undefined,
        'data-capacity': c ? String(c.capacity_requests_per_second) : undefined, 'data-gpus': c ? String(c.gpus) : undefined,
        'data-short-run': c?.short_run ? '1' : undefined };
      if (!c) return h('tr', { ...attrs, 'data-error': '1' }, h('th', { scope: 'row' }, layoutName(r)), h('td', { colspan: 6, class: 'bad' }, `Not possible: ${r.error ?? 'no answer'}`));
      return h('tr', attrs, h('th', { scope: 'row' }, layoutName(r)), h('td', { class: 'num' }, fmtCount(c.gpus)),
        h('td', { class: 'num' }, c.capacity_requests_per_second > 0 ? rps(c.capacity_requests_per_second) : 'none',
          ...(c.short_run ? [' ', h('strong', { class: 'bad', title: `the run's ${fmtCount(c.requests_per_run)} requests arrive within ${sec(c.run_seconds_at_capacity ?? 0)}, under two P99 end-to-end latencies (${sec(c.e2e_seconds_p99_at_capacity ?? 0)})` }, 'short run: not measured')] : [])),
        h('td', { class: 'num' }, c.capacity_requests_per_second > 0 ? rps(c.capacity_requests_per_second_per_gpu) : '—'),
        h('td', { class: 'num' }, at ? sec(at.ttft_seconds_p99) : '—'), h('td', { class: 'num' }, at ? sec(at.tpot_seconds_p99) : '—'),
        h('td', {}, i === best ? 'best' : ''));
    })));
  // A layout whose run at its capacity arrives in under two P99 end-to-end
  // latencies (serve-capacity's short_run): a burst, not a steady state.
  const shorts = rows.filter((r) => r.capacity?.short_run).length;
  const shortNote = shorts > 0
    ? h('p', { class: 'layouts-short', role: 'note' }, h('strong', { class: 'bad' }, 'Not measured: '),
      `${shorts} of these layouts ran too short a run at their capacity (its requests arrive within two P99 end-to-end latencies: a burst, not a steady state; “short run” in the table). Raise the workload’s request count.`)
    : null;
  const out = el.querySelector('.layouts-out') ?? el;
  out.replaceChildren(status, ...(headline ? [headline] : []), ...(shortNote ? [shortNote] : []),
    h('div', { class: 'table-scroll', tabindex: 0, role: 'region', 'aria-label': 'Capacity per layout table' }, table));
  el.dataset.layouts = String(rows.length);
  el.dataset.done = done ? '1' : '0';
  el.dataset.best = best >= 0 ? `${rows[best].tp}x${rows[best].replicas}` : '';
}

// The form of the layout search in #layouts, for the job shown: `request`
// is the engine client's servingCapacity, `current` whether this job is
// still the one shown, `explain` an engine error in words.
export function loadLayouts(summary: Summary, job: string, request: (job: string) => Promise<{ capacity: Capacity }>,
  current: () => boolean, explainError: (e: EngineError) => string): void {
  const el = document.getElementById('layouts');
  if (!el) return;
  const sv = summary.job?.serving ?? {};
  const head = h('h3', {}, 'Capacity across layouts');
  if (!hasSlo(sv) || isDisaggregated(summary)) {
    el.replaceChildren(head, h('p', { class: 'hint' }, isDisaggregated(summary) ? 'The capacity search simulates colocated serving only; this job has disaggregated pools.' : noSloHint));
    return;
  }
  const slo = sv.slo ?? {};
  const targets = [hasTarget(slo.ttft_seconds_p99) ? `P99 TTFT ≤ ${sec(Number(slo.ttft_seconds_p99))}` : '', hasTarget(slo.tpot_seconds_p99) ? `P99 TPOT ≤ ${sec(Number(slo.tpot_seconds_p99))}` : ''].filter(Boolean).join(' and ');
  const tpIn = h('input', { type: 'text', id: 'layouts-tp', name: 'layouts-tp', value: '1,2,4,8', inputmode: 'numeric', autocomplete: 'off', 'aria-describedby': 'layouts-msg' }) as HTMLInputElement;
  const repIn = h('input', { type: 'text', id: 'layouts-replicas', name: 'layouts-replicas', value: String(Math.max(1, Number(sv.replicas) || 1)), inputmode: 'numeric', autocomplete: 'off', 'aria-describedby': 'layouts-msg' }) as HTMLInputElement;
  const go = h('button', { type: 'submit', id: 'layouts-run' }, 'Search layouts') as HTMLButtonElement;
  const msg = h('p', { id: 'layouts-msg', class: 'hint' }, `One capacity search per tensor-parallel degree and replica count (as stagecraft serve-capacity --tp-list … --replicas-list …), the rest of the job as it is; the best layout serves the most requests per second per GPU.`);
  const out = h('div', { class: 'layouts-out' });
  const form = h('form', { class: 'layouts-form', 'aria-label': 'Capacity across layouts' },
    h('label', { for: 'layouts-tp' }, 'tp values '), tpIn, ' ', h('label', { for: 'layouts-replicas' }, 'replica counts '), repIn, ' ', go);
  el.replaceChildren(head, form, msg, out);
  delete el.dataset.layouts;
  let stop = false, running = false;
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    if (running) { stop = true; go.textContent = 'Stopping…'; return; }
    const tps = parseLayoutList(tpIn.value, 'tp values'), reps = parseLayoutList(repIn.value, 'replica counts');
    tpIn.setAttribute('aria-invalid', String(typeof tps === 'string'));
    repIn.setAttribute('aria-invalid', String(typeof reps === 'string'));
    if (typeof tps === 'string' || typeof reps === 'string') {
      out.replaceChildren(h('p', { class: 'bad', role: 'alert' }, [tps, reps].filter((x) => typeof x === 'string').join('; ')));
      return;
    }
    const todo = tps.flatMap((tp) => reps.map((replicas) => ({ tp, replicas })));
    const rows: LayoutResult[] = [];
    running = true; stop = false;
    go.textContent = 'Stop';
    renderLayouts(el, rows, todo.length, false, targets);
    try {
      for (const l of todo) {
        if (stop || !current()) break;
        try {
          const { capacity } = await request(layoutJob(job, l.tp, l.replicas));
          rows.push({ ...l, capacity });
        } catch (e) {
          const err = (e as { error?: EngineError }).error ?? { code: 'error', message: String(e), path: '' };
          if (err.code === 'superseded' || !current()) return;
          rows.push({ ...l, error: explainError(err) });
        }
        if (!current()) return;
        renderLayouts(el, rows, todo.length, false, targets);
      }
      if (current()) renderLayouts(el, rows, todo.length, true, targets);
    } finally {
      running = false;
      go.textContent = 'Search layouts';
    }
  });
}
