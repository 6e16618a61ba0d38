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

export function fmtCount(n: number): string {
  if (!Number.isFinite(n)) return '—';
  const u = ['', 'K', 'M', 'G', 'T', 'P', 'E', 'Z'];
  let i = 0;
  while (Math.abs(n) >= 1000 && i < u.length - 1) { n /= 1000; i++; }
  return `${n.toFixed(i === 0 ? 0 : n < 10 ? 2 : 1)}${u[i]}`;
}

export function fmtUs(us: number): string {
  if (us >= 1e6) return `${(us / 1e6).toFixed(2)} s`;
  if (us >= 1e3) return `${(us / 1e3).toFixed(2)} ms`;
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
export const AXIS_COLOR: Record<string, string> = { tp: '#1971c2', dp: '#2f9e44', pp: '#e8590c', cp: '#9c36b5', ep: '#f08c00' };
export const axisColor = (a: string) => AXIS_COLOR[a] ?? '#495057';
