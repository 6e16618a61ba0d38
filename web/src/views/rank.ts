// Rank preview: the rank's coordinates and groups, its decoded trace as a
// searchable node table, a timeline of the compute and communication
// streams (lib/schedule.js: a simple in-order two-stream schedule under the
// hardware profile; overlap is where both lanes are busy), and its
// memory over time (the engine's live-buffer curve). Canvas for the timeline: one rank can have
// tens of thousands of nodes, too many for SVG elements.
import { COMM_TYPE_NAMES } from '../lib/chakra';
import type { RankInfo } from '../protocol';
import { h, fmtBytes, fmtCount, fmtUs, COLL_COLOR, axisColor, axisExplain } from '../util';

export type { Preview } from '../types';
import type { Preview } from '../types';

export type GroupOfRank = RankInfo['groups'][number];

// extra: groups the rank's trace uses that rankInfo does not list (e.g.
// dp+cp, embd), from the group file. Groups over axes that are not rank
// coordinates (those and the derived MoE / HSDP axes) say what the axis is.
export function renderGroups(el: HTMLElement, info: RankInfo, extra: GroupOfRank[] = []): void {
  const members = (g: GroupOfRank) => g.members.slice(0, 24).join(', ') + (g.members.length > 24 ? `, … (${g.members.length} ranks)` : '');
  const chip = (axis: string) => h('span', { class: 'chip', style: `border-color:${axisColor(axis)}`, title: axisExplain(axis) || undefined }, axis);
  const coordinate = new Set(info.axes.map((a) => a.name));
  const all = [...info.groups, ...extra];
  const items = all.map((g) => h('li', { 'data-axis': g.axis }, chip(g.axis), ` group ${g.key} (pg_name "${g.key}"): `,
    coordinate.has(g.axis) && !g.derived
      ? `ranks that differ from ${info.rank} only in their ${g.axis} coordinate — `
      : `${axisExplain(g.axis) || `the ${g.axis} group this rank’s collectives use`} — `,
    h('span', { class: 'mono' }, `[${members(g)}]`)));
  const other = all.filter((g) => g.derived || !coordinate.has(g.axis));
  if (info.pool) {  // the KV transfer between disaggregated pools: send/recv only
    el.replaceChildren(h('p', {}, `Rank ${info.rank} of ${info.world_size} in the KV transfer is `, h('strong', {}, `rank ${info.pool_rank} of the ${info.pool} pool`),
      ` (the prefill pool's ranks come first, then the decode pool's). It ${info.pool === 'prefill' ? 'sends' : 'receives'} the KV cache of the layers and heads it holds point to point: no communicator groups.`));
    return;
  }
  el.replaceChildren(
    h('p', {}, `Rank ${info.rank} of ${info.world_size} sits at `, h('strong', { class: 'mono' },
      info.axes.map((a) => `${a.name}=${a.coord}`).join(', ')),
      ` (axes innermost first: rank = ${info.axes.map((a, i) => i === 0 ? a.name : `${a.name}·${info.axes.slice(0, i).map((b) => b.degree).reduce((x, y) => x * y, 1)}`).join(' + ')}).`),
    items.length ? h('ul', { class: 'groups' }, ...items) : h('p', { class: 'hint' }, 'No communicator groups: every axis has degree 1.'),
    ...(other.length ? [h('p', { class: 'hint' }, otherNote(other, info))] : []),
  );
}

function otherNote(other: GroupOfRank[], info: RankInfo): string {
  const axes = [...new Set(other.map((g) => g.axis))];
  const moe = axes.filter((a) => ['etp', 'ep', 'edp'].includes(a)), hsdp = axes.filter((a) => a.startsWith('dp_'));
  const why = [
    moe.length ? `${moe.join(', ')} re-divide the tp × cp × dp ranks of a stage for the expert layers` : '',
    hsdp.length ? `${hsdp.join(', ')} re-divide the dp × cp ranks for ZeRO’s sharding` : '',
  ].filter(Boolean).join('; ');
  const derived = (info.derived_axes ?? []).filter((a) => a.degree > 1 || (moe.length > 0 && ['etp', 'ep', 'edp'].includes(a.name)));
  return `${axes.join(', ')}: not coordinates one picks a rank by${why ? ` (${why})` : ''}` +
    (derived.length ? `; this rank’s place on them: ${derived.map((a) => `${a.name} ${a.coord} of ${a.degree}`).join(', ')}` : '') + '.';
}

export function renderStats(el: HTMLElement, p: Preview): void {
  const comp = p.sched.busy[0], comm = p.sched.busy[1];
  let overlap = 0;
  // Overlap = compute busy + comm busy - union; union by sweeping intervals.
  const iv: [number, number][] = [];
  for (let i = 0; i < p.nodes.length; i++) if (p.sched.end[i] > p.sched.start[i]) iv.push([p.sched.start[i], p.sched.end[i]]);
  iv.sort((a, b) => a[0] - b[0]);
  let union = 0, cs = -1, ce = -1;
  for (const [a, b] of iv) { if (a > ce) { union += ce - cs; cs = a; ce = b; } else if (b > ce) ce = b; }
  union += ce - cs;
  overlap = Math.max(0, comp + comm - union);
  el.replaceChildren(h('p', {},
    `${fmtCount(p.nodes.length)} nodes (${fmtBytes(p.bytes)} .et). Iteration ≈ ${fmtUs(p.sched.makespan)} on this schedule; compute busy ${fmtUs(comp)}, communication busy ${fmtUs(comm)}, of which ${fmtUs(overlap)} overlaps compute (hidden). Peak memory ≈ ${fmtBytes(p.memory.peak)}.`));
}

// What a timeline draws: one rank's nodes and their schedule (the rank
// preview's, or one side of a comparison).
export type TraceView = Pick<Preview, 'rank' | 'nodes' | 'sched'>;

// legend: the colour key under the lanes (a comparison prints it once, in
// HTML, under both timelines instead).
export class Timeline {
  private view0 = 0;
  private view1 = 1;
  private extent = 1;  // the time axis' end: the makespan, or a longer shared one
  private p: TraceView | null = null;
  constructor(private canvas: HTMLCanvasElement, private tip: HTMLElement, private legend = true) {
    canvas.addEventListener('wheel', (e) => {
      if (!this.p) return;
      e.preventDefault();
      const r = canvas.getBoundingClientRect();
      const f = (e.clientX - r.left) / r.width;
      const t = this.view0 + f * (this.view1 - this.view0);
      const k = e.deltaY > 0 ? 1.25 : 0.8;
      this.view0 = Math.max(0, t - (t - this.view0) * k);
      this.view1 = Math.min(this.extent, t + (this.view1 - t) * k);
      this.draw();
    }, { passive: false });
    canvas.addEventListener('mousemove', (e) => this.hover(e));
    canvas.addEventListener('mouseleave', () => { this.tip.hidden = true; });
  }
  // extent: draw on a time axis from 0 to this (two ranks compared on one
  // axis), at least the rank's own makespan.
  set(p: TraceView, extent = 0, label?: string): void {
    this.p = p;
    this.view0 = 0;
    this.extent = Math.max(extent, p.sched.makespan) || 1;
    this.view1 = this.extent;
    this.canvas.setAttribute('aria-label', label ?? `Timeline of rank ${p.rank}: compute lane and communication lane over ${fmtUs(p.sched.makespan)}; the node table below lists the same nodes`);
    this.draw();
  }
  zoom(k: number): void {
    if (!this.p) return;
    const c = (this.view0 + this.view1) / 2, half = (this.view1 - this.view0) / 2 * k;
    this.view0 = Math.max(0, c - half);
    this.view1 = Math.min(this.extent, c + half);
    this.draw();
  }
  fit(): void { if (this.p) { this.view0 = 0; this.view1 = this.extent; this.draw(); } }
  private x(t: number, w: number): number { return ((t - this.view0) / (this.view1 - this.view0)) * w; }
  draw(): void {
    const p = this.p;
    const c = this.canvas;
    const dpr = window.devicePixelRatio || 1;
    const W = c.clientWidth || 800, H = 120;
    c.width = W * dpr; c.height = H * dpr;
    const ctx = c.getContext('2d')!;
    ctx.scale(dpr, dpr);
    ctx.clearRect(0, 0, W, H);
    ctx.font = '12px system-ui, sans-serif';
    ctx.fillStyle = '#343a40';
    ctx.fillText('compute', 4, 26);
    ctx.fillText('communication', 4, 70);
    if (!p) return;
    const L = 100, PW = W - L - 8;
    const lanes = [[12, 30], [56, 30]];
    ctx.fillStyle = '#f1f3f5';
    for (const [y, hh] of lanes) ctx.fillRect(L, y, PW, hh);
    for (let i = 0; i < p.nodes.length; i++) {
      const a = p.sched.start[i], b = p.sched.end[i];
      if (b < this.view0 || a > this.view1) continue;
      const x0 = L + this.x(a, PW), x1 = L + this.x(b, PW);
      const n = p.nodes[i];
      const lane = lanes[p.sched.stream[i]];
      ctx.fillStyle = n.type === 4 ? (/\.bwd\./.test(n.name) ? '#f59f00' : /^opt\./.test(n.name) ? '#868e96' : '#1c7ed6') : COLL_COLOR[COMM_TYPE_NAMES[Number(n.attrs.comm_type)]] ?? '#d9480f';
      ctx.fillRect(x0, lane[0], Math.max(1, x1 - x0), lane[1]);
    }
    ctx.fillStyle = '#495057';
    ctx.fillText(fmtUs(this.view0), L, 104);
    const end = fmtUs(this.view1);
    ctx.fillText(end, W - 8 - ctx.measureText(end).width, 104);
    if (this.legend) ctx.fillText('forward = blue, backward = amber, optimizer = grey; collectives by type; wheel to zoom', L + 80, 104);
  }
  private hover(e: MouseEvent): void {
    const p = this.p;
    if (!p) return;
    const r = this.canvas.getBoundingClientRect();
    const W = r.width, L = 100, PW = W - L - 8;
    const x = e.clientX - r.left - L, y = e.clientY - r.top;
    const stream = y >= 12 && y < 42 ? 0 : y >= 56 && y < 86 ? 1 : -1;
    if (stream < 0 || x < 0) { this.tip.hidden = true; return; }
    const t = this.view0 + (x / PW) * (this.view1 - this.view0);
    const slack = (2 / PW) * (this.view1 - this.view0);
    for (let i = 0; i < p.nodes.length; i++) {
      if (p.sched.stream[i] !== stream || p.sched.start[i] > t + slack || p.sched.end[i] < t - slack) continue;
      const n = p.nodes[i];
      this.tip.textContent = `#${n.id} ${n.name} · ${fmtUs(p.sched.start[i])} → ${fmtUs(p.sched.end[i])}` +
        (n.type === 4 ? ` · ${fmtCount(Number(n.attrs.num_ops))}FLOP` : ` · ${COMM_TYPE_NAMES[Number(n.attrs.comm_type)]} ${fmtBytes(Number(n.attrs.comm_size))} group ${n.attrs.pg_name}`);
      this.tip.hidden = false;
      this.tip.style.left = `${e.clientX - r.left + 12}px`;
      return;
    }
    this.tip.hidden = true;
  }
}

// The curve's y axis starts at the resident state (weights + gradients +
// optimizer, constant over the iteration), so the activations' rise and
// fall fills the chart instead of a thin line on top of a tall constant.
export function renderMemory(el: HTMLElement, p: Preview): void {
  el.dataset.peak = String(p.memory.peak);
  el.dataset.rank = String(p.rank);
  const base = p.staticBytes;
  const lo = Math.min(...p.memory.points.map(([, v]) => v));
  el.dataset.min = String(lo);
  const capNear = p.capacity > 0 && p.capacity <= p.memory.peak * 1.5;
  const c = h('canvas', { role: 'img', class: 'memchart', 'aria-label': `Memory of rank ${p.rank} over the iteration: ${fmtBytes(base)} resident (weights, gradients, optimizer state) plus activations, peak ${fmtBytes(p.memory.peak)} of ${fmtBytes(p.capacity)}` }) as HTMLCanvasElement;
  el.replaceChildren(c, h('p', { class: 'hint' }, `Vertical axis from ${fmtBytes(base)}: the weights + gradients + optimizer state that stay resident all the time. Above it, every activation buffer alive at each node of this rank’s trace (the engine’s liveness analysis: a buffer lives from the node that writes it to the last node that reads it — saved activations, gradients, a recomputed layer, gathered parameters, communication buffers), placed on this simple schedule’s time axis. The peak is the summary’s peak for this stage.` +
    (capNear ? ' Dashed: GPU capacity.' : ` The GPU’s ${fmtBytes(p.capacity)} is above the chart (${((p.memory.peak / (p.capacity || 1)) * 100).toFixed(1)} % used at the peak).`)));
  const dpr = window.devicePixelRatio || 1, W = c.clientWidth || 800, H = 110;
  c.width = W * dpr; c.height = H * dpr;
  const ctx = c.getContext('2d')!;
  ctx.scale(dpr, dpr);
  const T = p.sched.makespan || 1;
  const top = (capNear ? Math.max(p.memory.peak, p.capacity) : p.memory.peak);
  const span = Math.max(top - base, 1) * 1.08;
  const L = 100, PW = W - L - 8, y = (v: number) => 8 + (1 - (v - base) / span) * 80;
  ctx.fillStyle = 'rgba(194,37,92,0.18)'; ctx.strokeStyle = '#c2255c'; ctx.lineWidth = 2; ctx.beginPath();
  ctx.moveTo(L, y(base));
  for (const [t, v] of p.memory.points) ctx.lineTo(L + (t / T) * PW, y(v));
  ctx.lineTo(L + PW, y(p.memory.points[p.memory.points.length - 1]?.[1] ?? base));
  ctx.lineTo(L + PW, y(base));
  ctx.closePath(); ctx.fill();
  ctx.beginPath();
  p.memory.points.forEach(([t, v], i) => { const x = L + (t / T) * PW; if (i) ctx.lineTo(x, y(v)); else ctx.moveTo(x, y(v)); });
  ctx.stroke();
  if (capNear) { ctx.setLineDash([5, 3]); ctx.strokeStyle = '#000'; ctx.lineWidth = 1; ctx.beginPath(); ctx.moveTo(L, y(p.capacity)); ctx.lineTo(L + PW, y(p.capacity)); ctx.stroke(); ctx.setLineDash([]); }
  ctx.fillStyle = '#343a40'; ctx.font = '12px system-ui, sans-serif';
  ctx.fillText(`peak ${fmtBytes(p.memory.peak)}`, 4, y(p.memory.peak) + 4);
  ctx.fillText(`${fmtBytes(base)}`, 4, y(base));
}

export function renderTable(el: HTMLElement, p: Preview, query: string): void {
  const q = query.trim().toLowerCase();
  const LIMIT = 300;
  const rows: HTMLElement[] = [];
  let matched = 0;
  for (let i = 0; i < p.nodes.length; i++) {
    const n = p.nodes[i];
    const kind = n.type === 4 ? 'compute' : COMM_TYPE_NAMES[Number(n.attrs.comm_type)] ?? n.typeName;
    if (q && !n.name.toLowerCase().includes(q) && !kind.toLowerCase().includes(q) && String(n.id) !== q) continue;
    if (++matched > LIMIT) continue;
    rows.push(h('tr', {}, h('td', { class: 'num' }, String(n.id)), h('td', { class: 'mono' }, n.name), h('td', {}, kind),
      h('td', { class: 'num' }, n.type === 4 ? `${fmtCount(Number(n.attrs.num_ops))}FLOP` : fmtBytes(Number(n.attrs.comm_size))),
      h('td', { class: 'num' }, n.type === 4 ? `${n.duration} µs` : `group ${n.attrs.pg_name}`),
      h('td', { class: 'num' }, fmtUs(p.sched.start[i])), h('td', { class: 'num' }, fmtUs(p.sched.end[i] - p.sched.start[i])),
      h('td', { class: 'mono small' }, n.deps.length > 4 ? `${n.deps.slice(0, 4).join(',')},…` : n.deps.join(','))));
  }
  el.replaceChildren(
    h('table', { class: 'nodes' }, h('caption', {}, `${matched} of ${p.nodes.length} nodes match${matched > LIMIT ? ` (first ${LIMIT} shown)` : ''}`),
      h('thead', {}, h('tr', {}, ...['id', 'name', 'kind', 'work', 'duration / group', 'start', 'length', 'deps'].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, ...rows)));
}
