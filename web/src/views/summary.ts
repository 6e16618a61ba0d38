// Summary view: parameters, FLOPs, per-rank memory against the GPU's
// capacity (one stacked bar per pipeline stage), communication volume by
// collective type and by parallel dimension. Plain SVG bars: a handful of
// rectangles with <title>s and text labels, which no chart library would
// make simpler, and which stay crisp on a projector.
import { h, s, fmtBytes, fmtCount, COLL_COLOR, axisColor, axisExplain } from '../util';
import { WIRE_FACTOR, type WireRow } from '../lib/comm';

type Summary = Record<string, any>;  // docs/summary.md

// The bar shows what the GPU must hold at the worst moment (`peak_live`):
// resident state plus every activation buffer alive at the busiest node
// (the liveness analysis). The rank preview's memory-over-time curve peaks
// at the same figure, so both views quote one number.
const MEM_PARTS: [string, string, string][] = [
  ['weights', 'Weights', '#1864ab'],
  ['gradients', 'Gradients', '#2b8a3e'],
  ['optimizer', 'Optimizer state', '#a85d00'],
  ['activations_live_peak', 'Activations (live at peak)', '#c2255c'],
];

function card(title: string, value: string, note: string): HTMLElement {
  return h('div', { class: 'card' }, h('div', { class: 'card-title' }, title), h('div', { class: 'card-value' }, value), h('div', { class: 'card-note' }, note));
}

export const peakOf = (mem: Record<string, number>) =>
  mem.peak_live || MEM_PARTS.reduce((a, [k]) => a + (mem[k] || 0), 0);

// Scaled to the job (not to the GPU), so a small job is not an empty bar;
// the capacity is a dashed line when it is within 1.5× the peak, a sentence
// otherwise.
// With pipeline stages every bar uses the same scale (the largest stage's),
// so stages compare by length (issue 25).
const barScale = (mem: Record<string, number>) => {
  const cap = mem.capacity || 0, total = peakOf(mem);
  return (cap && cap <= 1.5 * total ? Math.max(cap, total) : total) * 1.04 || 1;
};
function memoryBar(mem: Record<string, number>, label: string, sharedScale = 0, advice = true): HTMLElement {
  const W = 640, H = 56;
  const cap = mem.capacity || 0;
  const total = peakOf(mem);
  const scale = sharedScale || barScale(mem);
  const svg = s('svg', { viewBox: `0 0 ${W} ${H}`, width: '100%', role: 'img', 'aria-label': `${label}: ${fmtBytes(total)} of ${fmtBytes(cap)} GPU memory` });
  let x = 0;
  for (const [k, name, color] of MEM_PARTS) {
    const w = ((mem[k] || 0) / scale) * W;
    const r = s('rect', { x, y: 8, width: Math.max(w, 0), height: 28, fill: color, 'data-part': k });
    r.append(s('title', {}, `${name}: ${fmtBytes(mem[k] || 0)}`));
    svg.append(r);
    x += w;
  }
  const capOnScale = cap > 0 && cap <= scale;
  if (capOnScale) {
    const cx = (cap / scale) * W;
    svg.append(s('line', { x1: cx - 1, x2: cx - 1, y1: 2, y2: 42, stroke: '#000', 'stroke-width': 2, 'stroke-dasharray': '4 2' }));
    svg.append(s('text', { x: Math.min(cx - 4, W - 4), y: 54, 'text-anchor': 'end', 'font-size': 11, fill: '#212529' }, `GPU capacity ${fmtBytes(cap)}`));
  }
  const over = cap && total > cap;
  const acts = mem.activations_live_peak || 0;
  const actShare = total ? acts / total : 0;
  const legend = h('ul', { class: 'legend' }, ...MEM_PARTS.map(([k, name, color]) =>
    h('li', {}, h('span', { class: 'swatch', style: `background:${color}` }), `${name} ${fmtBytes(mem[k] || 0)}`)));
  const notes: (HTMLElement | string)[] = [];
  if (cap && !capOnScale) notes.push(h('p', { class: 'hint' }, `Drawn to this job’s scale: the GPU’s ${fmtBytes(cap)} is off to the right (this rank uses ${((total / cap) * 100).toFixed(1)} % of it).`));
  notes.push(h('p', { class: 'hint small' }, `Peak = weights + gradients + optimizer + every activation buffer alive at the busiest moment of the rank’s trace (${fmtBytes(acts)}); the papers’ estimate of saved activations alone (Korthikanti et al.) is ${fmtBytes(mem.activations_peak || 0)}.`));
  if (advice && actShare > 0.5) {
    notes.push(h('p', { class: 'advice', 'data-advice': 'activations' }, h('strong', {}, `Activations are ${(actShare * 100).toFixed(0)} % of this rank’s memory. `),
      'To shrink them: recompute (selective drops the attention scores, full keeps only each layer’s input), context parallelism (cp splits the sequence), sequence parallelism with tp, a smaller micro-batch, or more pipeline stages (each holds fewer layers’ activations).'));
  }
  return h('figure', { class: 'mem', 'data-peak': String(total) },
    h('figcaption', {}, `${label}: `, h('strong', { class: over ? 'bad' : 'good' }, `peak ${fmtBytes(total)} of ${fmtBytes(cap)}`), over ? ' — does not fit: raise tp or pp (ep for experts), use ZeRO or recompute' : ` (${((total / (cap || 1)) * 100).toFixed(0)}%)`),
    svg, legend, ...notes);
}

function barTable(title: string, rows: [string, number, string][], unit: (n: number) => string, caption: string, explain: (name: string) => string = () => '', column = 'per rank per iteration'): HTMLElement {
  const max = Math.max(1, ...rows.map((r) => r[1]));
  const table = h('table', { class: 'bars' }, h('caption', {}, caption),
    h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, title), h('th', { scope: 'col' }, column), h('th', { scope: 'col', class: 'barcol' }, h('span', { class: 'sr-only' }, 'bar')))));
  const body = h('tbody');
  for (const [name, v, color] of rows) {
    body.append(h('tr', {}, h('th', { scope: 'row', title: explain(name) || undefined }, name), h('td', { class: 'num' }, unit(v)),
      h('td', { class: 'barcol' }, h('span', { class: 'bar', style: `width:${(v / max) * 100}%;background:${color}` }))));
  }
  table.append(body);
  return h('div', { class: 'table-scroll', tabindex: 0, role: 'region', 'aria-label': caption }, table);
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
    card('Parameters', fmtCount(p.total), Number(par.zero) >= 3
      ? `${fmtCount(p.per_rank)} per rank while a layer runs (its tp/pp/ep shard); ZeRO-3 stores only 1/${Number(layout.shard_group) || Number(layout.dp) * Number(layout.cp)} of them between uses (the weights bar below) and all-gathers each layer’s before it runs`
      : `${fmtCount(p.per_rank)} held per rank`),
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
      ...warn.map((w) => h('div', { class: 'card-note bad' }, `warning: ${w}`))));
  }
  const pipe = summary.pipeline ?? {};
  if ((pipe.stages ?? 1) > 1) {
    cards.append(card('Pipeline bubble', `${(100 * Number(pipe.bubble_fraction ?? 0)).toFixed(1)} %`,
      `measured on the traces (${pipe.schedule}, ${pipe.stages} stages, ${pipe.micro_batches} micro-batches); ` +
      `formula (p−1)/(v·m) = ${(100 * Number(pipe.bubble_fraction_formula ?? 0)).toFixed(1)} %; the simulated step below has a third figure — “Three bubble figures” there says why they differ`));
  }
  const stages: Summary[] = summary.stages ?? [];
  const scale = Math.max(...stages.map((st) => barScale(st.memory_bytes ?? {})), 1);
  const mems = stages.map((st, i) => memoryBar(st.memory_bytes ?? {}, stages.length > 1 ? `Stage ${i} memory per rank` : 'Memory per rank', scale, stages.length === 1));
  // The activations advice once, naming the stages it applies to.
  const heavy = stages.map((st, i) => [i, st.memory_bytes ?? {}] as [number, Record<string, number>])
    .filter(([, m]) => peakOf(m) > 0 && (m.activations_live_peak || 0) / peakOf(m) > 0.5);
  if (stages.length > 1 && heavy.length) {
    mems.push(h('p', { class: 'advice', 'data-advice': 'activations' }, h('strong', {}, `Activations are more than half the memory on ${heavy.length === stages.length ? 'every stage' : `stage${heavy.length > 1 ? 's' : ''} ${heavy.map(([i]) => i).join(', ')}`}. `),
      'To shrink them: recompute (selective drops the attention scores, full keeps only each layer’s input), context parallelism (cp splits the sequence), sequence parallelism with tp, a smaller micro-batch, or more pipeline stages (each holds fewer layers’ activations).'));
  }
  if (stages.length > 1) mems.unshift(h('p', { class: 'hint' }, 'All stages are drawn on one scale, so their bars compare by length.'));
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
      barTable('Collective', byType, fmtBytes, 'Buffers handed to collectives, by type (Chakra comm_size)', undefined, 'buffer bytes per rank per iteration'),
      h('div', {}, barTable('Parallel dimension', byAxis, fmtBytes, 'Buffers handed to collectives, by parallel dimension: tp traffic is per layer, dp traffic is the gradient reduction', axisExplain, 'buffer bytes per rank per iteration'), glossary)),
    h('p', { class: 'hint' }, 'These two tables sum Chakra’s comm_size, which is the full buffer for all-reduce, reduce-scatter and all-to-all but only the rank’s own shard for all-gather, and leaves out pipeline send/recv. The table below counts what actually crosses the wire.'),
    h('div', { id: 'wire' }, h('p', { class: 'hint' }, 'Bytes on the wire: waiting for the rank preview…')),
  );
}

// Bytes on the wire per rank per iteration by group kind (lib/comm.js),
// from one rank's trace: every collective with its ring-algorithm factor,
// plus pipeline send/recv.
export function renderWire(el: HTMLElement, rank: number, r: { rows: WireRow[]; total: { ops: number; buffer: number; sent: number; received: number } }): void {
  const num = (v: number) => h('td', { class: 'num' }, fmtBytes(v));
  const table = h('table', { class: 'wire' },
    h('caption', {}, `Bytes on the wire, rank ${rank}, per iteration, by group kind`),
    h('thead', {}, h('tr', {}, ...['group kind', 'group size g', 'operations', 'buffer bytes (comm_size)', 'sent on the wire', 'received'].map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, ...r.rows.map((w) => h('tr', { 'data-kind': w.kind },
      h('th', { scope: 'row', title: axisExplain(w.kind.split(' ')[0]) || undefined }, w.kind), h('td', { class: 'num' }, String(w.size)), h('td', { class: 'num' }, fmtCount(w.ops)),
      num(w.buffer), num(w.sent), num(w.received)))),
    h('tfoot', {}, h('tr', {}, h('th', { scope: 'row' }, 'total'), h('td', {}, ''), h('td', { class: 'num' }, fmtCount(r.total.ops)), num(r.total.buffer), num(r.total.sent), num(r.total.received))));
  el.dataset.rank = String(rank);
  el.dataset.sent = String(r.total.sent);
  el.replaceChildren(h('div', { class: 'table-scroll', tabindex: 0, role: 'region', 'aria-label': 'Bytes on the wire by group kind' }, table),
    h('p', { class: 'hint' }, 'On the wire = what this rank sends with the ring algorithm NCCL uses for large messages (g = the group’s size): ',
      `all-reduce ${WIRE_FACTOR[0]} × the buffer (a reduce-scatter then an all-gather); reduce-scatter ${WIRE_FACTOR[7]} × the full input; `,
      `all-gather ${WIRE_FACTOR[2]} × the rank’s shard (comm_size is the shard); all-to-all ${WIRE_FACTOR[6]} × the buffer (the rank’s own part stays local); `,
      'pipeline send/recv the message itself (counted where it is sent). A ring rank receives as much as it sends. Per iteration = one optimizer step.'));
}
