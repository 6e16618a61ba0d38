// Summary view: parameters, FLOPs, per-rank memory against the GPU's
// capacity (one stacked bar per pipeline stage), communication volume by
// collective type and by parallel dimension. Plain SVG bars: a handful of
// rectangles with <title>s and text labels, which no chart library would
// make simpler, and which stay crisp on a projector.
import { h, s, fmtBytes, fmtCount, COLL_COLOR, axisColor, axisExplain } from '../util';

type Summary = Record<string, any>;  // docs/summary.md

const MEM_PARTS: [string, string, string][] = [
  ['weights', 'Weights', '#1971c2'],
  ['gradients', 'Gradients', '#2f9e44'],
  ['optimizer', 'Optimizer state', '#f08c00'],
  ['activations_peak', 'Activations (peak)', '#c2255c'],
];

function card(title: string, value: string, note: string): HTMLElement {
  return h('div', { class: 'card' }, h('div', { class: 'card-title' }, title), h('div', { class: 'card-value' }, value), h('div', { class: 'card-note' }, note));
}

function memoryBar(mem: Record<string, number>, label: string): HTMLElement {
  const W = 640, H = 56;
  const cap = mem.capacity || 0;
  const total = mem.peak || MEM_PARTS.reduce((a, [k]) => a + (mem[k] || 0), 0);
  const scale = Math.max(cap, total) || 1;
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, width: '100%', role: 'img', 'aria-label': `${label}: ${fmtBytes(total)} of ${fmtBytes(cap)} GPU memory` });
  let x = 0;
  for (const [k, name, color] of MEM_PARTS) {
    const w = ((mem[k] || 0) / scale) * W;
    const r = s('rect', { x, y: 8, width: Math.max(w, 0), height: 28, fill: color });
    r.append(s('title', {}, `${name}: ${fmtBytes(mem[k] || 0)}`));
    svg.append(r);
    x += w;
  }
  if (cap) {
    const cx = (cap / scale) * W;
    svg.append(s('line', { x1: cx - 1, x2: cx - 1, y1: 2, y2: 42, stroke: '#000', 'stroke-width': 2, 'stroke-dasharray': '4 2' }));
    svg.append(s('text', { x: Math.min(cx - 4, W - 4), y: 54, 'text-anchor': 'end', 'font-size': 11 }, `GPU capacity ${fmtBytes(cap)}`));
  }
  const over = cap && total > cap;
  const legend = h('ul', { class: 'legend' }, ...MEM_PARTS.map(([k, name, color]) =>
    h('li', {}, h('span', { class: 'swatch', style: `background:${color}` }), `${name} ${fmtBytes(mem[k] || 0)}`)));
  return h('figure', { class: 'mem' },
    h('figcaption', {}, `${label}: `, h('strong', { class: over ? 'bad' : 'good' }, `${fmtBytes(total)} of ${fmtBytes(cap)}`), over ? ' — does not fit: raise tp or pp (ep for experts), use ZeRO or recompute' : ` (${((total / (cap || 1)) * 100).toFixed(0)}%)`),
    svg, legend);
}

function barTable(title: string, rows: [string, number, string][], unit: (n: number) => string, caption: string, explain: (name: string) => string = () => ''): HTMLElement {
  const max = Math.max(1, ...rows.map((r) => r[1]));
  const table = h('table', { class: 'bars' }, h('caption', {}, caption),
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, title), h('th', { scope: 'col' }, 'per rank per iteration'), h('th', { scope: 'col', class: 'barcol' }, ''))));
  const body = h('tbody');
  for (const [name, v, color] of rows) {
    body.append(h('tr', {}, h('th', { scope: 'row', title: explain(name) || undefined }, name), h('td', { class: 'num' }, unit(v)),
      h('td', { class: 'barcol' }, h('span', { class: 'bar', style: `width:${(v / max) * 100}%;background:${color}` }))));
  }
  table.append(body);
  return table;
}

export function renderSummary(el: HTMLElement, summary: Summary): void {
  const p = summary.parameters ?? {};
  const f = summary.flops ?? {};
  const comm = summary.communication ?? {};
  const layout = summary.layout ?? {};
  const axes: string[] = layout.order_inner_first ?? [];
  const job = summary.job ?? {};
  const model = job.model ?? {};
  const par = job.parallel ?? {};
  const moe = Number(layout.expert_dp) > 0;  // 0 for dense models
  const cards = h('div', { class: 'cards' },
    card('Ranks', fmtCount(summary.world_size), axes.map((a) => `${a} ${layout[a]}`).join(' × ') + ' (innermost first)'),
    card('Parameters', fmtCount(p.total), `${fmtCount(p.per_rank)} held per rank`),
  );
  if (moe || (p.active !== undefined && p.active !== p.total)) {
    // Mixture of experts: a token is routed to k of the E experts, so it
    // uses (and costs FLOPs for) only the active parameters.
    cards.append(card('Active parameters', fmtCount(p.active),
      `per token: top-${model.experts_per_token} of ${model.num_experts} routed experts${model.shared_experts ? ` + ${model.shared_experts} shared` : ''} per MoE layer; ${(100 * Number(p.active) / Number(p.total || 1)).toFixed(0)} % of the total`));
  }
  if (moe) {
    const stageRanks = Number(layout.tp) * Number(layout.cp) * Number(layout.dp);
    cards.append(h('div', { class: 'card', 'data-card': 'expert-layout' }, h('div', { class: 'card-title' }, 'Expert layout (MoE layers)'),
      h('div', { class: 'card-value', style: 'font-size:1.2rem' }, `etp ${layout.expert_tp} × ep ${layout.ep} × edp ${layout.expert_dp}`),
      h('div', { class: 'card-note' }, `the stage’s tp·cp·dp = ${stageRanks} ranks re-divided: ${Number(model.num_experts) / Number(layout.ep)} experts per rank` +
        `${Number(layout.expert_tp) > 1 ? `, each split ${layout.expert_tp} ways` : ''}, reached by all-to-all over ep` +
        (Number(layout.expert_dp) > 1 ? `; ${layout.expert_dp} replicas (edp)` : ''))));
  }
  const dpcp = Number(layout.dp) * Number(layout.cp);
  if (Number(par.zero) > 0 && Number(layout.shard_group) > 0 && Number(layout.shard_group) < dpcp) {
    cards.append(card('ZeRO sharding (HSDP)', `shard ${layout.shard_group} × replicate ${dpcp / Number(layout.shard_group)}`,
      `ZeRO-${par.zero} state sharded over ${layout.shard_group} of the ${dpcp} data-parallel ranks (dp_shard) and replicated across ${dpcp / Number(layout.shard_group)} (dp_replicate): smaller groups for the frequent collectives, more memory per rank`));
  }
  cards.append(
    card('Model FLOPs / iteration', fmtCount(f.model_per_iteration), 'GEMMs fwd + bwd, Megatron-LM definition'),
    card('Executed FLOPs / rank', fmtCount(f.executed_per_rank), 'everything one trace runs'),
    card('Micro-batches', String(summary.micro_batches_per_iteration), 'per iteration (gradient accumulation)'),
    card('Trace', `${fmtCount(summary.trace?.nodes_per_rank)} nodes`, `${fmtCount(summary.trace?.compute_nodes)} compute, ${fmtCount(summary.trace?.collective_nodes)} collectives per rank`),
  );
  const hf = summary.hf_import;  // HF config imports only (docs/hf-import.md)
  if (hf) {
    const warn: string[] = hf.warnings ?? [];
    cards.append(h('div', { class: 'card', 'data-card': 'hf-import' }, h('div', { class: 'card-title' }, 'Hugging Face config'),
      h('div', { class: 'card-value', style: 'font-size:1.2rem' }, String(hf.family)),
      h('div', { class: 'card-note' }, (hf.features ?? []).join(', ') || 'no optional features'),
      ...warn.map((w) => h('div', { class: 'card-note bad' }, `not modelled: ${w}`))));
  }
  const pipe = summary.pipeline ?? {};
  if ((pipe.stages ?? 1) > 1) {
    cards.append(card('Pipeline bubble', `${(100 * Number(pipe.bubble_fraction ?? 0)).toFixed(1)} %`,
      `measured on the traces (${pipe.schedule}, ${pipe.stages} stages, ${pipe.micro_batches} micro-batches); ` +
      `formula (p−1)/(v·m) = ${(100 * Number(pipe.bubble_fraction_formula ?? 0)).toFixed(1)} %`));
  }
  const stages: Summary[] = summary.stages ?? [];
  const mems = stages.map((st, i) => memoryBar(st.memory_bytes ?? {}, stages.length > 1 ? `Stage ${i} memory per rank` : 'Memory per rank'));
  const byType = Object.entries(comm.per_rank_bytes ?? {}).map(([k, v]) =>
    [`${k} (×${comm.per_rank_collectives?.[k] ?? '?'})`, Number(v), COLL_COLOR[k] ?? '#495057'] as [string, number, string]);
  const byAxis = Object.entries(comm.per_rank_bytes_by_axis ?? {}).map(([k, v]) => [k, Number(v), axisColor(k)] as [string, number, string]);
  // One line per axis with traffic: what it is and why it communicates.
  const glossary = h('ul', { class: 'axis-glossary hint' }, ...byAxis.filter(([k]) => axisExplain(k)).map(([k, , color]) =>
    h('li', { 'data-axis': k }, h('span', { class: 'chip', style: `border-color:${color}` }, k), axisExplain(k))));
  el.replaceChildren(
    cards,
    h('h3', {}, 'Memory per rank (weights, gradients, optimizer, activations) vs the GPU'),
    ...mems,
    h('div', { class: 'two' },
      barTable('Collective', byType, fmtBytes, 'Communication by collective type (Chakra comm_size)'),
      h('div', {}, barTable('Parallel dimension', byAxis, fmtBytes, 'Communication by parallel dimension: tp traffic is per layer, dp traffic is the gradient all-reduce', axisExplain), glossary)),
  );
}
