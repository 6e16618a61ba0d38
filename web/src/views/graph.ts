// The symbolic graph view (the teaching centre): one transformer layer
// (forward and/or backward) drawn as a layered DAG of ops, each showing the
// symbolic local shape and sharding of what it produces; tensors entering
// from outside the layer (weights, the previous layer's output) are grey
// pills; inserted collectives are coloured and explain WHY they are there
// (the producer's sharding vs the sharding the consumer needs). Built only
// from graph_json's structures (phase, layer, kind, inputs/outputs), so new
// ops and parallel axes draw without changes here.
import type { GraphJson, GraphOp, GraphTensor, StagePart } from '../protocol';
import { h, s, COLL_COLOR, axisColor, axisExplain, REMESH_EXPLAIN } from '../util';

const BOX_W = 210, BOX_H = 46, PILL_H = 30, GAP_X = 18, GAP_Y = 34, PAD = 16;

interface Placed { key: string; x: number; y: number; w: number; hgt: number; op?: GraphOp; tensor?: GraphTensor }

// stage: the pipeline stage whose graph is shown (graph_json is per stage).
export interface GraphViewState { stage: number; layer: number; phases: Set<string>; selected: number | null }

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
  return g.ops.filter((o) => o.layer === st.layer && st.phases.has(o.phase));
}

export function renderGraph(root: HTMLElement, g: GraphJson, st: GraphViewState, onChange: () => void): void {
  const ops = selectOps(g, st);
  const inSel = new Map(ops.map((o) => [o.id, o]));
  const level = new Map<number, number>();
  // Program order is a topological order: one pass gives longest-path levels.
  for (const o of ops) {
    let lv = 1;
    for (const t of o.inputs) {
      const p = g.tensors[t]?.producer;
      if (p !== undefined && inSel.has(p)) lv = Math.max(lv, (level.get(p) ?? 1) + 1);
    }
    level.set(o.id, lv);
  }
  // Boundary tensors (produced outside the selection): one pill each, one
  // level above their first reader.
  const pills = new Map<number, number>();
  for (const o of ops) {
    for (const t of o.inputs) {
      const p = g.tensors[t].producer;
      if (p >= 0 && inSel.has(p)) continue;
      const lv = (level.get(o.id) ?? 1) - 1;
      pills.set(t, Math.min(pills.get(t) ?? Infinity, lv));
    }
  }
  const rows = new Map<number, Placed[]>();
  const push = (lv: number, p: Placed) => { if (!rows.has(lv)) rows.set(lv, []); rows.get(lv)!.push(p); };
  for (const [t, lv] of pills) push(lv, { key: `t${t}`, x: 0, y: 0, w: BOX_W, hgt: PILL_H, tensor: g.tensors[t] });
  for (const o of ops) push(level.get(o.id)!, { key: `o${o.id}`, x: 0, y: 0, w: BOX_W, hgt: BOX_H, op: o });
  const levels = [...rows.keys()].sort((a, b) => a - b);
  let width = 0, y = PAD;
  const placed = new Map<string, Placed>();
  for (const lv of levels) {
    const row = rows.get(lv)!;
    row.forEach((p, i) => { p.x = PAD + i * (BOX_W + GAP_X); p.y = y; placed.set(p.key, p); });
    width = Math.max(width, PAD * 2 + row.length * (BOX_W + GAP_X));
    y += Math.max(...row.map((p) => p.hgt)) + GAP_Y;
  }
  const height = y + PAD;
  const svg = s('svg', { width, height, viewBox: `0 0 ${width} ${height}`, class: 'graph-svg', role: 'group',
    'aria-label': `Graph of ${st.layer >= 0 ? `layer ${st.layer}` : 'the ops outside layers'}${g.num_stages > 1 ? ` on pipeline stage ${g.stage}` : ''}: ${ops.length} ops, ${ops.filter((o) => o.kind === 'collective').length} inserted collectives` });
  svg.append(s('defs', {}, s('marker', { id: 'arrow', viewBox: '0 0 8 8', refX: 8, refY: 4, markerWidth: 7, markerHeight: 7, orient: 'auto-start-reverse' }, s('path', { d: 'M0,0 L8,4 L0,8 z', fill: '#868e96' }))));
  const edges = s('g', { class: 'edges' });
  svg.append(edges);
  for (const o of ops) {
    const to = placed.get(`o${o.id}`)!;
    for (const t of o.inputs) {
      const p = g.tensors[t].producer;
      const from = placed.get(inSel.has(p) ? `o${p}` : `t${t}`);
      if (!from) continue;
      const x1 = from.x + from.w / 2, y1 = from.y + from.hgt, x2 = to.x + to.w / 2, y2 = to.y;
      const path = s('path', { d: `M${x1},${y1} C${x1},${y1 + 24} ${x2},${y2 - 24} ${x2},${y2 - 2}`, fill: 'none', stroke: '#adb5bd', 'stroke-width': 1.2, 'marker-end': 'url(#arrow)' });
      const tt = g.tensors[t];
      path.append(s('title', {}, `${tt.name}: ${tt.dtype}${tt.shape} ${tt.sharding}`));
      edges.append(path);
    }
  }
  for (const p of placed.values()) {
    const gEl = s('g', { transform: `translate(${p.x},${p.y})`, class: 'node', tabindex: 0 });
    if (p.tensor) {
      const t = p.tensor;
      gEl.setAttribute('aria-label', `input ${t.name} ${t.shape} ${t.sharding}`);
      gEl.append(s('rect', { width: p.w, height: p.hgt, rx: 15, fill: t.kind === 'weight' ? '#e7f5ff' : '#f1f3f5', stroke: '#ced4da' }));
      gEl.append(s('text', { x: 10, y: 13, 'font-size': 10.5, fill: '#495057' }, truncate(`${t.kind === 'weight' ? '◆ ' : ''}${shortName(t.name, st.layer)}`, 34)));
      gEl.append(s('text', { x: 10, y: 25, 'font-size': 10, fill: '#495057', class: 'mono' }, truncate(`${t.shape} ${t.sharding}`, 36)));
      gEl.append(s('title', {}, `${t.name} (${t.kind}) ${t.dtype}${t.shape} ${t.sharding}`));
    } else if (p.op) {
      const o = p.op;
      const out = g.tensors[o.outputs[0]];
      const coll = o.kind === 'collective';
      const remesh = o.kind === 'remesh';  // MoE token permutation: local, dashed
      const sel = st.selected === o.id;
      const color = coll ? COLL_COLOR[o.collective ?? ''] ?? '#d9480f' : remesh ? '#fff3bf' : o.phase === 'bwd' ? '#fff4e6' : '#fff';
      gEl.setAttribute('role', 'button');
      gEl.setAttribute('aria-label', `${o.name}${coll ? ` — ${o.collective} over ${o.axis}: ${o.why?.text ?? ''}` : remesh ? ` — remesh: ${REMESH_EXPLAIN}` : ''}`);
      gEl.setAttribute('data-op', String(o.id));
      if (remesh) gEl.setAttribute('data-kind', 'remesh');
      gEl.append(s('rect', { width: p.w, height: p.hgt, rx: 6, fill: color, 'fill-opacity': coll ? 0.16 : 1,
        stroke: sel ? '#000' : coll ? color : remesh ? '#f08c00' : '#868e96', 'stroke-width': sel ? 3 : coll ? 2.5 : remesh ? 1.5 : 1,
        ...(remesh && !sel ? { 'stroke-dasharray': '5 3' } : {}) }));
      if (coll) {
        // Badge sized to the axis name ("tp", "dp_replicate").
        const label = `${o.axis} ?`, bw = Math.max(40, 7 * label.length + 12);
        gEl.append(s('rect', { x: p.w + 6 - bw, y: -9, width: bw, height: 18, rx: 9, fill: axisColor(o.axis ?? '') }));
        gEl.append(s('text', { x: p.w + 6 - bw / 2, y: 4, 'font-size': 11, fill: '#fff', 'text-anchor': 'middle', 'font-weight': 700 }, label));
      }
      gEl.append(s('text', { x: 8, y: 17, 'font-size': 11.5, 'font-weight': 600 }, truncate(shortName(o.name, st.layer), 30)));
      gEl.append(s('text', { x: 8, y: 34, 'font-size': 10.5, class: 'mono', fill: '#343a40' }, truncate(out ? `${out.shape} ${out.sharding}` : o.fn, 34)));
      gEl.append(s('title', {}, coll && o.why ? `${o.name}\n${o.why.text}${axisExplain(o.axis ?? '') ? `\n${o.axis}: ${axisExplain(o.axis ?? '')}` : ''}` : `${o.name} (${o.kind}${o.fn ? ': ' + o.fn : ''}) flops/rank = ${o.flops}${remesh ? `\n${REMESH_EXPLAIN}` : ''}`));
      const select = () => { st.selected = o.id; onChange(); };
      gEl.addEventListener('click', select);
      gEl.addEventListener('keydown', (e) => { if ((e as KeyboardEvent).key === 'Enter') select(); });
    }
    svg.append(gEl);
  }
  root.replaceChildren(svg);
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
    list.append(h('li', {}, h('span', { class: 'chip', style: `background:${COLL_COLOR[o.collective ?? '']};color:#fff`, title: axisExplain(o.axis ?? '') || undefined }, `${o.collective} · ${o.axis}`), ' ', b, h('div', {}, o.why?.text ?? '')));
  }
  el.replaceChildren(h('p', {}, `${colls.length} collectives were inserted here by the sharding rules — none is listed by hand:`), list, ...remeshNote);
}
