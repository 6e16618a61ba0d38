// Small DOM and number-formatting helpers shared by the views.
export const $ = <T extends Element = HTMLElement>(sel: string, root: ParentNode = document) => root.querySelector(sel) as T;

// h('div', {class: 'x'}, 'text', child): a tiny element builder.
export function h(tag: string, attrs: Record<string, string | number | boolean | undefined> = {}, ...children: (Node | string | null | undefined)[]): HTMLElement {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === undefined || v === false) continue;
    el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children) if (c !== null && c !== undefined) el.append(c);
  return el;
}

const SVGNS = 'http://www.w3.org/2000/svg';
export function s(tag: string, attrs: Record<string, string | number> = {}, ...children: (Node | string)[]): SVGElement {
  const el = document.createElementNS(SVGNS, tag);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, String(v));
  for (const c of children) el.append(c);
  return el;
}

export function fmtBytes(n: number): string {
  if (!Number.isFinite(n)) return '—';
  const u = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];
  let i = 0;
  while (Math.abs(n) >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return `${n.toFixed(i === 0 ? 0 : n < 10 ? 2 : 1)} ${u[i]}`;
}

// Whole numbers below a million are written out ("1,024", not "1.02K"):
// a rounded count of GPUs or micro-batches reads as a different number.
export function fmtCount(n: number): string {
  if (!Number.isFinite(n)) return '—';
  if (Number.isInteger(n) && Math.abs(n) < 1e6) return n.toLocaleString('en');
  const u = ['', 'K', 'M', 'G', 'T', 'P', 'E', 'Z'];
  let i = 0;
  while (Math.abs(n) >= 1000 && i < u.length - 1) { n /= 1000; i++; }
  return `${n.toFixed(i === 0 ? 0 : n < 10 ? 2 : 1)}${u[i]}`;
}

export function fmtUs(us: number): string {
  if (us >= 1e6) return `${(us / 1e6).toFixed(2)} s`;
  if (us >= 1e3) return `${(us / 1e3).toFixed(2)} ms`;
  // Below 0.05 µs "0.0 µs" would read as nothing at all (a 1 ns target).
  if (us > 0 && us < 0.05) return `${+(us * 1e3).toPrecision(2)} ns`;
  return `${us.toFixed(us < 10 ? 1 : 0)} µs`;
}

export function download(name: string, data: Blob | string, type = 'application/octet-stream'): void {
  const blob = typeof data === 'string' ? new Blob([data], { type }) : data;
  const url = URL.createObjectURL(blob);
  const a = h('a', { href: url, download: name }) as HTMLAnchorElement;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000);
}

// Colours per collective and per axis, shared by every view and legend.
export const COLL_COLOR: Record<string, string> = {
  all_reduce: '#d9480f', reduce_scatter: '#7048e8', all_gather: '#0c8599', all_to_all: '#c2255c',
  ALL_REDUCE: '#d9480f', REDUCE_SCATTER: '#7048e8', ALL_GATHER: '#0c8599', ALL_TO_ALL: '#c2255c',
};
export const AXIS_COLOR: Record<string, string> = {
  tp: '#1971c2', dp: '#2f9e44', pp: '#e8590c', cp: '#9c36b5', 'dp+cp': '#5c940d', embd: '#862e9c',
  ep: '#f08c00', etp: '#1098ad', edp: '#66a80f', dp_shard: '#087f5b', dp_replicate: '#74b816',
};
export const axisColor = (a: string) => AXIS_COLOR[a] ?? '#495057';

// What each communication axis is, in one teaching sentence. The MoE axes
// (etp, ep, edp) re-divide a pipeline stage's tp × cp × dp ranks for the
// expert layers (Megatron-LM); the HSDP axes (dp_shard, dp_replicate)
// re-divide its dp × cp ranks. Shown in legends, tooltips and group lists.
export const AXIS_EXPLAIN: Record<string, string> = {
  tp: 'tensor parallel: weights split inside each layer; activations all-reduced (or reduce-scattered + all-gathered with SP) every layer',
  cp: 'context parallel: the sequence split; attention all-gathers K and V',
  dp: 'data parallel: replicas on different batch slices; gradients all-reduced (or sharded by ZeRO) once per iteration',
  'dp+cp': 'data and context parallel together: the ranks that hold the same weights, over which dense gradients are reduced',
  pp: 'pipeline parallel: layers split into stages; activations sent stage to stage',
  embd: 'embedding group: the first and last pipeline stages, which both hold the tied word embedding; its gradient is all-reduced between them',
  ep: 'expert parallel: each rank holds E/ep of a layer’s experts; tokens go to their experts by all-to-all (dispatch) and come back by all-to-all (combine)',
  etp: 'expert tensor parallel: each expert’s weights split over etp ranks; dispatched tokens all-gathered, expert outputs reduce-scattered',
  edp: 'expert data parallel: ranks holding the same experts (the stage’s ranks left after etp × ep); expert gradients reduced over edp',
  dp_shard: 'HSDP shard group: ZeRO/FSDP state sharded over these ranks (gradient reduce-scatter, parameter all-gather)',
  dp_replicate: 'HSDP replicas: the sharded state is replicated across these ranks; gradient shards all-reduced over them',
};
export const axisExplain = (a: string) => AXIS_EXPLAIN[a] ?? '';

// Op kinds that need a word beyond their name.
export const REMESH_EXPLAIN = 'The MoE token permutation between the attention layout (tokens split over dp/cp/tp) and the expert layout (per-expert buffers on etp × ep × edp). It is local work — sorting tokens into per-expert buffers (dispatch side) or weighting and summing the k expert outputs per token (combine side); the all-to-all over ep next to it moves the data.';
