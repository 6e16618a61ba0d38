// The symbolic graph view (the teaching centre): one transformer layer
// (forward and/or backward) drawn as a layered DAG of ops, each showing the
// symbolic local shape and sharding of what it produces; tensors entering
// from outside the layer (weights, the previous layer's output) are grey
// pills; inserted collectives are coloured and explain WHY they are there
// (the producer's sharding vs the sharding the consumer needs). Built only
// from graph_json's structures (phase, layer, kind, inputs/outputs), so new
// ops and parallel axes draw without changes here.
import type { ELK, ElkNode, ElkExtendedEdge } from 'elkjs/lib/elk-api';
import type { GraphJson, GraphOp, GraphTensor, StagePart } from '../protocol';
import { h, s, COLL_COLOR, axisColor, axisExplain, REMESH_EXPLAIN } from '../util';

const BOX_W = 210, BOX_H = 46, PILL_H = 30;

// GraphViewState (types.ts): the stage, layer (-1: outside layers,
// ALL_LAYERS: the whole stage by layer), phases, selection.
export const ALL_LAYERS = -2;
export type { GraphViewState } from '../types';
import type { GraphViewState } from '../types';

// "layers 12–17", "layers 2–3 and 6–7" (interleaved chunks), "layer 4", "no layers".
export function layersText(p: StagePart): string {
  if (!p.layers.length) return 'no layers';
  const ranges = p.chunks.filter((c) => c.first_layer >= 0)
    .map((c) => (c.first_layer === c.last_layer ? `${c.first_layer}` : `${c.first_layer}–${c.last_layer}`));
  return `${p.layers.length === 1 ? 'layer' : 'layers'} ${ranges.join(' and ')}`;
}

// "stage 1 of 2: layers 2–3 (MoE: 3), output layer + loss" — the stage
// picker's option; stages count from 0 like the rank's pp coordinate.
export function stageLabel(p: StagePart, numStages: number): string {
  const moe = p.moe_layers.length ? ` (MoE: ${p.moe_layers.length === p.layers.length ? 'all' : p.moe_layers.join(', ')})` : '';
  const parts = [p.has_embedding ? 'embedding' : '', layersText(p) + moe, p.has_loss ? 'output layer + loss' : ''].filter(Boolean);
  return `stage ${p.stage} of ${numStages}: ${parts.join(', ')}`;
}

// What "outside layers" holds on this stage: the embedding on the first
// stage, the output layer + loss on the last, send/recv between stages,
// the optimizer everywhere.
export function outsideLabel(g: GraphJson): string {
  const parts = [g.has_embedding ? 'embedding' : '', g.has_loss ? 'output layer + loss' : '',
    g.num_stages > 1 ? 'send/recv to the other stages' : '', 'optimizer'].filter(Boolean);
  return `outside layers (${parts.join(', ')})`;
}

function shortName(name: string, layer: number): string {
  return layer >= 0 ? name.replace(new RegExp(`^L${layer}\\.`), '') : name;
}

function truncate(t: string, n: number): string {
  return t.length > n ? t.slice(0, n - 1) + '…' : t;
}

export function selectOps(g: GraphJson, st: GraphViewState): GraphOp[] {
  return g.ops.filter((o) => (st.layer === ALL_LAYERS || o.layer === st.layer) && st.phases.has(o.phase));
}

// ---------------------------------------------------------------- layout
// The layered layout is ELK's (elkjs, "layered": Sugiyama-style layers,
// crossing minimisation, orthogonal edges routed around the boxes). It is
// loaded on first use so the first paint does not wait for it.
let elkPromise: Promise<ELK> | null = null;
// ELK runs in its own (classic) Web Worker, served as-is (?url), so a big
// selection (an optimizer phase has hundreds of ops: ~1–2 s of layout)
// never freezes the page.
const elk = () => (elkPromise ??= Promise.all([import('elkjs/lib/elk-api.js'), import('elkjs/lib/elk-worker.min.js?url')])
  .then(([api, worker]) => new api.default({ workerFactory: () => new Worker(worker.default) as never })));

const LAYOUT: Record<string, string> = {
  'elk.algorithm': 'layered', 'elk.direction': 'DOWN', 'elk.edgeRouting': 'ORTHOGONAL',
  'elk.layered.spacing.nodeNodeBetweenLayers': '34', 'elk.spacing.nodeNode': '18', 'elk.spacing.edgeNode': '12',
  'elk.layered.nodePlacement.strategy': 'BRANDES_KOEPF', 'elk.hierarchyHandling': 'INCLUDE_CHILDREN',
  'elk.json.shapeCoords': 'ROOT', 'elk.json.edgeCoords': 'ROOT', 'elk.padding': '[top=16,left=16,bottom=16,right=16]',
};

// What is drawn: op boxes, boundary-tensor pills, and (whole-stage view)
// one box per collapsed layer or a frame around an expanded one.
interface Item { key: string; op?: GraphOp; tensor?: GraphTensor; layer?: number; ops?: GraphOp[] }

// Pan and zoom of the svg's viewBox: wheel zooms at the pointer, dragging
// pans, the toolbar's buttons and + / − / 0 on the focused view do the same.
export class PanZoom {
  private vb = { x: 0, y: 0, w: 1, h: 1 };
  private full = { w: 1, h: 1 };
  private svg: SVGSVGElement | null = null;
  constructor(private root: HTMLElement) {
    root.addEventListener('wheel', (e) => {
      if (!this.svg) return;
      e.preventDefault();
      const r = this.svg.getBoundingClientRect();
      this.zoom(e.deltaY > 0 ? 1.2 : 1 / 1.2, (e.clientX - r.left) / r.width, (e.clientY - r.top) / r.height);
    }, { passive: false });
    let drag: { x: number; y: number; vx: number; vy: number } | null = null;
    root.addEventListener('pointerdown', (e) => {
      if (!this.svg || (e.target as Element).closest('.node')) return;
      drag = { x: e.clientX, y: e.clientY, vx: this.vb.x, vy: this.vb.y };
      root.setPointerCapture(e.pointerId);
    });
    root.addEventListener('pointermove', (e) => {
      if (!drag || !this.svg) return;
      const k = this.vb.w / this.svg.getBoundingClientRect().width;
      this.vb.x = drag.vx - (e.clientX - drag.x) * k;
      this.vb.y = drag.vy - (e.clientY - drag.y) * k;
      this.apply();
    });
    root.addEventListener('pointerup', () => { drag = null; });
    root.addEventListener('keydown', (e) => {
      if ((e.target as Element).closest('.node')) return;
      if (e.key === '+' || e.key === '=') this.zoom(1 / 1.25);
      else if (e.key === '-') this.zoom(1.25);
      else if (e.key === '0') this.fit();
    });
  }
  // The svg keeps one on-screen size (the view's width; the graph's height
  // at 1:1, at most 72 % of the window); zooming and panning move the
  // viewBox inside it. A new graph starts at 1:1 (or smaller to fit the
  // width) from its top; `keep` keeps the view when the same graph redraws.
  attach(svg: SVGSVGElement, w: number, h: number, keep: boolean): void {
    this.svg = svg;
    const cw = this.root.clientWidth || 800;
    const k0 = Math.min(1, cw / w);
    const dispH = Math.max(160, Math.min(h * k0, window.innerHeight * 0.72));
    svg.style.width = '100%';
    svg.style.height = `${dispH}px`;
    const same = keep && this.full.w === w && this.full.h === h;
    this.full = { w, h };
    if (!same) this.vb = { x: Math.min(0, (w - cw / k0) / 2), y: 0, w: cw / k0, h: dispH / k0 };
    this.apply();
  }
  get scale(): number { return this.full.w / this.vb.w; }
  zoom(k: number, fx = 0.5, fy = 0.5): void {
    const w = Math.min(Math.max(this.vb.w * k, 60), Math.max(this.full.w, this.full.h) * 4);
    const hgt = this.vb.h * (w / this.vb.w);
    this.vb.x += (this.vb.w - w) * fx;
    this.vb.y += (this.vb.h - hgt) * fy;
    this.vb.w = w; this.vb.h = hgt;
    this.apply();
  }
  fit(): void {
    // The whole graph, centred, at the element's aspect ratio.
    const r = this.svg ? this.svg.getBoundingClientRect() : { width: 1, height: 1 };
    const k = Math.min(r.width / this.full.w, r.height / this.full.h) || 1;
    const w = r.width / k, hgt = r.height / k;
    this.vb = { x: (this.full.w - w) / 2, y: (this.full.h - hgt) / 2, w, h: hgt };
    this.apply();
  }
  // Brings a node into view (keyboard focus, "why" list) without zooming.
  show(x: number, y: number, w: number, hgt: number): void {
    if (x >= this.vb.x && y >= this.vb.y && x + w <= this.vb.x + this.vb.w && y + hgt <= this.vb.y + this.vb.h) return;
    this.vb.x = x + w / 2 - this.vb.w / 2;
    this.vb.y = y + hgt / 2 - this.vb.h / 2;
    this.apply();
  }
  private apply(): void {
    if (!this.svg) return;
    this.svg.setAttribute('viewBox', `${this.vb.x} ${this.vb.y} ${this.vb.w} ${this.vb.h}`);
    this.svg.dataset.zoom = this.scale.toFixed(3);
  }
}

let renderSeq = 0;
// Lays out and draws the selection. Resolves once drawn; a newer call
// supersedes an older one still waiting for its layout.
export async function renderGraph(root: HTMLElement, g: GraphJson, st: GraphViewState, onChange: () => void, pz: PanZoom): Promise<void> {
  const seq = ++renderSeq;
  const ops = selectOps(g, st);
  const all = st.layer === ALL_LAYERS;
  // Which item draws an op: itself, or its collapsed layer's box.
  const itemOf = new Map<number, string>();
  const items: Item[] = [];
  const groups = new Map<number, GraphOp[]>();
  if (all) {
    for (const o of ops) { if (!groups.has(o.layer)) groups.set(o.layer, []); groups.get(o.layer)!.push(o); }
    // Layers in program order (the ops outside layers first), and ELK told
    // to keep that order when it breaks cycles (forward and backward edges
    // between layers, the loss feeding back): otherwise it may start the
    // stage in the middle (Mixtral stage 0 drew layers 5, 6, 7, then 0–4).
    for (const [layer, gops] of [...groups].sort((a, b) => a[0] - b[0])) {
      const key = `L${layer}`;
      items.push({ key, layer, ops: gops });
      for (const o of gops) itemOf.set(o.id, st.expanded.has(layer) ? `o${o.id}` : key);
    }
  }
  for (const o of ops) {
    if (!all || st.expanded.has(o.layer)) { items.push({ key: `o${o.id}`, op: o }); itemOf.set(o.id, `o${o.id}`); }
  }
  // Boundary tensors (produced outside the selection): one pill each; only
  // for a single layer (the whole-stage view would be all weights).
  if (!all) {
    const seen = new Set<number>();
    for (const o of ops) for (const t of o.inputs) {
      const p = g.tensors[t].producer;
      if ((p >= 0 && itemOf.has(p)) || seen.has(t)) continue;
      seen.add(t);
      items.push({ key: `t${t}`, tensor: g.tensors[t] });
    }
  }
  // Edges: producer item -> consumer item, one per pair.
  const edgeSet = new Map<string, { from: string; to: string; tensor: GraphTensor }>();
  for (const o of ops) {
    const to = itemOf.get(o.id)!;
    for (const t of o.inputs) {
      const p = g.tensors[t].producer;
      const from = p >= 0 && itemOf.has(p) ? itemOf.get(p)! : all ? undefined : `t${t}`;
      if (!from || from === to) continue;
      const k = `${from}>${to}`;
      if (!edgeSet.has(k)) edgeSet.set(k, { from, to, tensor: g.tensors[t] });
    }
  }
  const size = (it: Item) => ({ width: BOX_W, height: it.tensor ? PILL_H : BOX_H });
  const children: ElkNode[] = [];
  const byKey = new Map(items.map((it) => [it.key, it]));
  for (const it of items) {
    if (it.op && all) continue;  // placed inside its layer's frame below
    if (it.layer !== undefined && st.expanded.has(it.layer)) {
      children.push({ id: it.key, layoutOptions: { 'elk.padding': '[top=30,left=12,bottom=12,right=12]' },
        children: it.ops!.map((o) => ({ id: `o${o.id}`, ...size(byKey.get(`o${o.id}`)!) })) });
    } else {
      children.push({ id: it.key, ...size(it) });
    }
  }
  const edges: ElkExtendedEdge[] = [...edgeSet.values()].map((e, i) => ({ id: `e${i}`, sources: [e.from], targets: [e.to] }));
  const root0: ElkNode = { id: 'root', layoutOptions: all ? { ...LAYOUT, 'elk.layered.cycleBreaking.strategy': 'MODEL_ORDER', 'elk.layered.considerModelOrder.strategy': 'NODES_AND_EDGES' } : LAYOUT, children, edges };
  root.setAttribute('aria-busy', 'true');
  const laid: ElkNode = await (await elk()).layout(root0);
  if (seq !== renderSeq) return;
  root.removeAttribute('aria-busy');
  const pos = new Map<string, ElkNode>();
  const walk = (n: ElkNode) => { for (const c of n.children ?? []) { pos.set(c.id, c); walk(c); } };
  walk(laid);
  const width = Math.ceil(laid.width ?? 400), height = Math.ceil(laid.height ?? 200);
  const svg = s('svg', { viewBox: `0 0 ${width} ${height}`, class: 'graph-svg', role: 'group', 'data-layout': 'elk',
    'aria-label': `Graph of ${all ? `the whole stage, by layer` : st.layer >= 0 ? `layer ${st.layer}` : 'the ops outside layers'}${g.num_stages > 1 ? ` on pipeline stage ${g.stage}` : ''}: ${ops.length} ops, ${ops.filter((o) => o.kind === 'collective').length} inserted collectives` }) as SVGSVGElement;
  svg.append(s('defs', {}, s('marker', { id: 'arrow', viewBox: '0 0 8 8', refX: 8, refY: 4, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' }, s('path', { d: 'M0,0 L8,4 L0,8 z', fill: '#6c757d' }))));
  const frames = s('g', { class: 'frames' });
  const edgesEl = s('g', { class: 'edges' });
  const nodesEl = s('g', { class: 'nodes' });
  svg.append(frames, edgesEl, nodesEl);
  (laid.edges ?? []).forEach((e, i) => {
    const info = [...edgeSet.values()][i];
    for (const sec of e.sections ?? []) {
      const pts = [sec.startPoint, ...(sec.bendPoints ?? []), sec.endPoint];
      const path = s('path', { d: pts.map((p, j) => `${j ? 'L' : 'M'}${p.x},${p.y}`).join(' '), fill: 'none', stroke: '#868e96', 'stroke-width': 1.2, 'marker-end': 'url(#arrow)' });
      path.append(s('title', {}, `${info.tensor.name}: ${info.tensor.dtype}${info.tensor.shape} ${info.tensor.sharding}`));
      edgesEl.append(path);
    }
  });
  const focusables: { el: SVGElement; box: ElkNode }[] = [];
  for (const it of items) {
    const p = pos.get(it.key);
    if (!p) continue;
    const gEl = s('g', { transform: `translate(${p.x},${p.y})`, class: 'node', tabindex: 0 });
    if (it.layer !== undefined) {
      const open = st.expanded.has(it.layer);
      const colls = it.ops!.filter((o) => o.kind === 'collective');
      const name = it.layer >= 0 ? `layer ${it.layer}` : 'outside layers';
      const toggle = () => { if (open) st.expanded.delete(it.layer!); else st.expanded.add(it.layer!); onChange(); };
      gEl.setAttribute('role', 'button');
      gEl.setAttribute('aria-expanded', String(open));
      gEl.setAttribute('data-layer', String(it.layer));
      const counts = `${it.ops!.length} ops, ${colls.length} collectives${colls.length ? ` (${[...new Set(colls.map((o) => o.axis))].join(', ')})` : ''}`;
      // The accessible name starts with the visible text (WCAG 2.5.3).
      if (open) {
        gEl.append(s('rect', { width: p.width!, height: p.height!, rx: 8, fill: '#f8f9fa', stroke: '#495057', 'stroke-dasharray': '6 3' }));
        gEl.append(s('text', { x: 10, y: 19, 'font-size': 12, 'font-weight': 700, fill: '#212529', 'aria-hidden': 'true' }, `▾ ${name} (click to collapse)`));
        gEl.setAttribute('aria-label', `${name} (click to collapse): ${counts}`);
        frames.append(gEl);
      } else {
        gEl.append(s('rect', { width: p.width!, height: p.height!, rx: 6, fill: '#e9ecef', stroke: '#495057' }));
        gEl.append(s('text', { x: 8, y: 18, 'font-size': 12, 'font-weight': 700, fill: '#212529', 'aria-hidden': 'true' }, `▸ ${name}`));
        gEl.append(s('text', { x: 8, y: 35, 'font-size': 10.5, fill: '#343a40', 'aria-hidden': 'true' }, counts));
        gEl.setAttribute('aria-label', `${name} ${counts} — expand`);
        nodesEl.append(gEl);
      }
      gEl.addEventListener('click', toggle);
      gEl.addEventListener('keydown', (e) => { if ((e as KeyboardEvent).key === 'Enter' || (e as KeyboardEvent).key === ' ') { e.preventDefault(); toggle(); } });
      focusables.push({ el: gEl, box: p });
      continue;
    }
    if (it.tensor) {
      const t = it.tensor;
      gEl.setAttribute('aria-label', `input ${t.name} ${t.shape} ${t.sharding}`);
      gEl.setAttribute('role', 'img');
      gEl.append(s('rect', { width: p.width!, height: p.height!, rx: 15, fill: t.kind === 'weight' ? '#e7f5ff' : '#f1f3f5', stroke: '#adb5bd' }));
      gEl.append(s('text', { x: 10, y: 13, 'font-size': 10.5, fill: '#343a40' }, truncate(`${t.kind === 'weight' ? '◆ ' : ''}${shortName(t.name, st.layer)}`, 34)));
      gEl.append(s('text', { x: 10, y: 25, 'font-size': 10, fill: '#343a40', class: 'mono' }, truncate(`${t.shape} ${t.sharding}`, 36)));
      gEl.append(s('title', {}, `${t.name} (${t.kind}) ${t.dtype}${t.shape} ${t.sharding}`));
    } else if (it.op) {
      const o = it.op;
      const out = g.tensors[o.outputs[0]];
      const coll = o.kind === 'collective';
      const remesh = o.kind === 'remesh';  // MoE token permutation: local, dashed
      const sel = st.selected === o.id;
      const color = coll ? COLL_COLOR[o.collective ?? ''] ?? '#d9480f' : remesh ? '#fff3bf' : o.phase === 'bwd' ? '#fff4e6' : '#fff';
      const line1 = truncate(shortName(o.name, o.layer), 30), line2 = truncate(out ? `${out.shape} ${out.sharding}` : o.fn, 34);
      gEl.setAttribute('role', 'button');
      // Starts with the visible text (WCAG 2.5.3), then the full name and the why.
      gEl.setAttribute('aria-label', `${line1} ${line2}${coll ? ` ${o.axis}` : ''} — ${o.name}${coll ? ` — ${o.collective} over ${o.axis}: ${o.why?.text ?? ''}` : remesh ? ` — remesh: ${REMESH_EXPLAIN}` : ''}`);
      gEl.setAttribute('data-op', String(o.id));
      if (sel) gEl.setAttribute('aria-pressed', 'true');
      if (remesh) gEl.setAttribute('data-kind', 'remesh');
      gEl.append(s('rect', { width: p.width!, height: p.height!, rx: 6, fill: coll ? '#fff' : color,
        stroke: sel ? '#000' : coll ? color : remesh ? '#a85d00' : '#6c757d', 'stroke-width': sel ? 3 : coll ? 2.5 : remesh ? 1.5 : 1,
        ...(remesh && !sel ? { 'stroke-dasharray': '5 3' } : {}) }));
      if (coll) gEl.append(s('rect', { width: 6, height: p.height!, rx: 3, fill: color }));
      gEl.append(s('text', { x: 10, y: 17, 'font-size': 11.5, 'font-weight': 600, fill: '#212529' }, line1));
      gEl.append(s('text', { x: 10, y: 34, 'font-size': 10.5, class: 'mono', fill: '#343a40' }, line2));
      if (coll) {
        // Badge sized to the axis name ("tp", "dp_replicate"); dark text on
        // white inside the axis colour keeps the contrast above 4.5:1.
        const label = o.axis ?? '', bw = Math.max(32, 7 * label.length + 14);
        gEl.append(s('rect', { x: p.width! + 6 - bw, y: -9, width: bw, height: 18, rx: 9, fill: '#fff', stroke: axisColor(o.axis ?? ''), 'stroke-width': 2 }));
        gEl.append(s('text', { x: p.width! + 6 - bw / 2, y: 4, 'font-size': 11, fill: '#212529', 'text-anchor': 'middle', 'font-weight': 700 }, label));
      }
      gEl.append(s('title', {}, coll && o.why ? `${o.name}\n${o.why.text}${axisExplain(o.axis ?? '') ? `\n${o.axis}: ${axisExplain(o.axis ?? '')}` : ''}` : `${o.name} (${o.kind}${o.fn ? ': ' + o.fn : ''}) flops/rank = ${o.flops}${remesh ? `\n${REMESH_EXPLAIN}` : ''}`));
      const select = () => { st.selected = o.id; onChange(); };
      gEl.addEventListener('click', select);
      gEl.addEventListener('keydown', (e) => { if ((e as KeyboardEvent).key === 'Enter' || (e as KeyboardEvent).key === ' ') { e.preventDefault(); select(); } });
    }
    focusables.push({ el: gEl, box: p });
    nodesEl.append(gEl);
  }
  for (const f of focusables) f.el.addEventListener('focus', () => pz.show(f.box.x!, f.box.y!, f.box.width!, f.box.height!));
  root.replaceChildren(svg);
  root.dataset.items = String(items.length);
  pz.attach(svg, width, height, root.dataset.key === `${g.stage}:${st.layer}:${[...st.phases].join()}`);
  root.dataset.key = `${g.stage}:${st.layer}:${[...st.phases].join()}`;
}

// Scrolls (pans) the view to an op, for the why-list.
export function showOp(root: HTMLElement, id: number): void {
  (root.querySelector(`[data-op="${id}"]`) as SVGElement | null)?.focus();
}

function tensorRow(t: GraphTensor): HTMLElement {
  return h('tr', {}, h('td', {}, t.name), h('td', { class: 'mono' }, `${t.dtype}${t.shape}`), h('td', { class: 'mono' }, t.sharding || 'replicated'));
}

export function renderDetails(el: HTMLElement, g: GraphJson, id: number | null): void {
  const o = id === null ? undefined : g.ops.find((x) => x.id === id);
  if (!o) {
    el.replaceChildren(h('p', { class: 'hint' }, 'Select an op in the graph (click, or Tab + Enter) to see its tensors, their symbolic local shapes and shardings, its FLOPs per rank — and for a coloured collective, why the sharding rules inserted it.'));
    return;
  }
  const tbl = (title: string, ids: number[]) => h('table', { class: 'small' }, h('caption', {}, title),
    h('thead', {}, h('tr', {}, h('th', {}, 'tensor'), h('th', {}, 'local shape (per rank)'), h('th', {}, 'sharding'))),
    h('tbody', {}, ...ids.map((t) => tensorRow(g.tensors[t]))));
  const fa = Object.entries(o.factor_axis);
  const parts: (HTMLElement | null)[] = [
    h('h3', {}, o.name),
    h('p', {}, `${o.kind}${o.fn ? ` · ${o.fn}` : ''} · ${o.phase}${o.layer >= 0 ? ` · layer ${o.layer}` : ''}${o.wgrad ? ' · weight gradient' : ''}${o.sp_region ? ' · sequence-parallel region' : ''}`),
  ];
  if (o.why) {
    parts.push(h('div', { class: 'why', style: `border-color:${COLL_COLOR[o.collective ?? ''] ?? '#d9480f'}` },
      h('strong', {}, `Why a ${o.collective} over ${o.axis}? `), o.why.text,
      h('div', { class: 'mono sharding-change' }, `${o.why.from || 'replicated'}  →  ${o.why.to || 'replicated'}`),
      axisExplain(o.axis ?? '') ? h('div', { class: 'axis-note' }, h('strong', {}, `${o.axis}: `), axisExplain(o.axis ?? '')) : null));
  }
  if (o.kind === 'remesh') {
    // A remesh's input and output shardings differ on purpose: tokens leave
    // the attention layout for the expert layout (or come back).
    parts.push(h('div', { class: 'why remesh-why', style: 'border-color:#f08c00' }, h('strong', {}, 'What is a remesh? '), REMESH_EXPLAIN,
      h('div', { class: 'mono sharding-change' }, `${o.inputs.map((t) => g.tensors[t].sharding || 'replicated').join(', ')}  →  ${o.outputs.map((t) => g.tensors[t].sharding || 'replicated').join(', ')}`)));
  }
  parts.push(h('p', { class: 'mono' }, `FLOPs per rank = ${o.flops}`));
  if (fa.length) parts.push(h('p', {}, 'Factor → axis: ', ...fa.map(([f, a]) => h('span', { class: 'chip', style: `border-color:${axisColor(a)}` }, `${f}:${a}`))));
  parts.push(tbl('inputs', o.inputs), tbl('outputs', o.outputs));
  el.replaceChildren(...parts.filter((x): x is HTMLElement => x !== null));
}

export function renderWhyList(el: HTMLElement, g: GraphJson, st: GraphViewState, onSelect: (id: number) => void): void {
  const sel = selectOps(g, st);
  const colls = sel.filter((o) => o.kind === 'collective');
  const remeshes = sel.filter((o) => o.kind === 'remesh').length;
  const remeshNote = remeshes ? [h('p', { class: 'hint remesh-note' }, `Also ${remeshes} remesh op${remeshes > 1 ? 's' : ''} (dashed yellow): local token permutations between the attention layout and the expert layout, which communicate nothing themselves — the all-to-all over ep beside them moves the tokens.`)] : [];
  if (!colls.length) {
    el.replaceChildren(h('p', { class: 'hint' }, 'No communication in this selection: with tp = 1 and dp = 1 every tensor already has the sharding its consumer needs. Raise tp (or dp, and look at the optimizer phase of “outside layers”; or ep for a mixture-of-experts model) to see collectives appear.'), ...remeshNote);
    return;
  }
  const list = h('ol', { class: 'why-list' });
  for (const o of colls) {
    const b = h('button', { type: 'button', class: 'linklike' }, o.name);
    b.addEventListener('click', () => onSelect(o.id));
    list.append(h('li', {}, h('span', { class: 'chip', style: `border-color:${COLL_COLOR[o.collective ?? ''] ?? '#495057'}`, title: axisExplain(o.axis ?? '') || undefined }, `${o.collective} · ${o.axis}`), ' ', b, h('div', {}, o.why?.text ?? '')));
  }
  el.replaceChildren(h('p', {}, `${colls.length} collectives were inserted here by the sharding rules — none is listed by hand:`), list, ...remeshNote);
}
