// The graph view's controller: fetches a pipeline stage's graph, fills the
// stage and layer pickers, draws the selection (views/graph.ts) and its
// legends; pan/zoom buttons.
import { EngineRequestError } from '../client';
import type { GraphJson } from '../protocol';
import { renderGraph, renderDetails, renderWhyList, stageLabel, outsideLabel, showOp, PanZoom, ALL_LAYERS } from './graph';
import { explain } from '../messages';
import { state, current, client } from '../state';
import { $, h, axisColor, axisExplain, REMESH_EXPLAIN } from '../util';
import { emit, on } from '../bus';

const pz = new PanZoom($('#graph'));
let graphSeq = 0;
// Requests the graph of gstate.stage (a stage beyond this job's pp falls
// back to stage 0) and rebuilds the stage and layer pickers.
export async function loadGraph(mine: number): Promise<void> {
  const seq = ++graphSeq;
  const gs = state.gstate;
  const pp = Number(state.summary?.layout?.pp) || 1;
  if (gs.stage >= pp) gs.stage = 0;
  const job = state.jobText;
  try {
    const r = await client.request('graphJson', { job, stage: gs.stage });
    if (!current(mine) || seq !== graphSeq) return;
    state.graph = r.graph;
    state.graphJob = job;
    renderStagePicker(r.graph);
    const sel = $<HTMLSelectElement>('#layer');
    const prev = sel.value;
    const moe = new Set(r.graph.moe_layers);
    sel.replaceChildren(...r.graph.layers.map((i) => h('option', { value: String(i) }, `layer ${i}${moe.has(i) ? ' (MoE)' : ''}`)),
      h('option', { value: '-1' }, outsideLabel(r.graph)),
      h('option', { value: String(ALL_LAYERS) }, 'whole stage, by layer (expand / collapse)'));
    sel.value = [...sel.options].some((o) => o.value === prev) ? prev : sel.options[0].value;
    gs.layer = Number(sel.value);
    await drawGraph();
    emit('graph-loaded', r.graph.stage);
  } catch (e) {
    if (current(mine) && seq === graphSeq && !(e instanceof EngineRequestError && e.error.code === 'superseded')) {
      $('#graph').replaceChildren(h('p', { class: 'error' }, e instanceof EngineRequestError ? explain(e.error).text : String(e)));
    }
  }
}

// The pipeline-stage picker (only with pp > 1), before the layer picker,
// and a note on what a stage is. Options come from graph.stages, so every
// stage is labelled with its layers without fetching its graph.
function renderStagePicker(g: GraphJson): void {
  const label = $('#stage-picker');
  const note = $('#stage-note');
  const multi = g.num_stages > 1;
  label.hidden = !multi;
  note.hidden = !multi;
  if (!multi) return;
  const sel = $<HTMLSelectElement>('#stage');
  sel.replaceChildren(...g.stages.map((p) => h('option', { value: String(p.stage) }, stageLabel(p, g.num_stages))));
  sel.value = String(g.stage);
  const chunks = g.virtual_stages > 1
    ? ` With interleaving (${g.virtual_stages} virtual stages per rank) a stage holds ${g.virtual_stages} separate chunks of layers: stage k runs virtual stages k, k + ${g.num_stages}, …, so this one holds ${g.chunks.map((c) => c.first_layer < 0 ? 'an empty chunk' : `${c.first_layer}–${c.last_layer}`).join(' and ')}.`
    : '';
  note.replaceChildren(
    h('strong', {}, `Pipeline stage ${g.stage} of ${g.num_stages}. `),
    `Pipeline parallelism (pp = ${g.num_stages}) splits the model's layers over ${g.num_stages} stages; activations go to the next stage and their gradients come back by send/recv, once per micro-batch. `,
    `Each stage is a different rank role: the ${g.ranks_per_stage} rank${g.ranks_per_stage === 1 ? '' : 's'} with pp coordinate ${g.stage} run this graph — only this stage's layers` +
      `${g.has_embedding ? ', plus the embedding' : ''}${g.has_loss ? ', plus the output layer and the loss' : ''} — and the other stages' ranks run theirs. Pick a stage to see its graph.${chunks}`);
}
$('#stage').addEventListener('change', () => showStage(Number($<HTMLSelectElement>('#stage').value)));

on('show-stage', (stage) => showStage(stage));
export function showStage(stage: number): void {
  const gs = state.gstate;
  if (stage === gs.stage && state.graph?.stage === stage && state.graphJob === state.jobText) return;
  gs.stage = stage;
  gs.selected = null;
  gs.expanded.clear();
  void loadGraph(state.generation);
}

async function drawGraph(): Promise<void> {
  const g = state.graph;
  if (!g) return;
  const gs = state.gstate;
  const axes = g.axes.map((a) => `${a.name} = ${a.degree}`).join(', ');
  $('#graph-legend-symbols').textContent = `Symbols in this job: ${Object.entries(g.bindings).map(([k, v]) => `${k} = ${v}`).join(', ')} (${axes}). Shapes are per rank: s/tp means this rank holds 1/tp of the sequence.`;
  renderAxisLegend(g);
  renderDetails($('#op-details'), g, gs.selected);
  renderWhyList($('#why-list'), g, gs, (id) => {
    gs.selected = id;
    const op = g.ops.find((o) => o.id === id);
    if (gs.layer === ALL_LAYERS && op) gs.expanded.add(op.layer);
    void drawGraph().then(() => showOp($('#graph'), id));
  });
  await renderGraph($('#graph'), g, gs, () => void drawGraph(), pz);
}

// The axes that re-divide the base ones (MoE: etp, ep, edp; HSDP: dp_shard,
// dp_replicate) are not rank coordinates, so the legend explains those this
// job binds (or graph_json marks derived), and the remesh op kind when the
// graph has one.
const DERIVED_AXES = ['etp', 'ep', 'edp', 'dp_shard', 'dp_replicate'];
function renderAxisLegend(g: GraphJson): void {
  const el = $('#graph-legend-axes');
  const degree = new Map<string, number>();
  for (const a of DERIVED_AXES) if (a in g.bindings) degree.set(a, g.bindings[a]);
  for (const a of g.axes) if (a.derived) degree.set(a.name, a.degree);
  const items = [...degree].map(([a, d]) =>
    h('li', { 'data-axis': a }, h('span', { class: 'chip', style: `border-color:${axisColor(a)}` }, `${a} = ${d}`), axisExplain(a)));
  if (g.ops.some((o) => o.kind === 'remesh')) {
    items.push(h('li', { 'data-kind': 'remesh' }, h('span', { class: 'chip', style: 'border-color:#a85d00;border-style:dashed;background:#fff3bf' }, 'remesh'), REMESH_EXPLAIN));
  }
  el.replaceChildren(...items);
  el.hidden = items.length === 0;
}

$('#layer').addEventListener('change', () => { state.gstate.layer = Number($<HTMLSelectElement>('#layer').value); state.gstate.selected = null; void drawGraph(); });
for (const cb of document.querySelectorAll<HTMLInputElement>('input[name=phase]')) {
  cb.addEventListener('change', () => { if (cb.checked) state.gstate.phases.add(cb.value); else state.gstate.phases.delete(cb.value); void drawGraph(); });
}
$('#graph-zoom-in').onclick = () => pz.zoom(1 / 1.25);
$('#graph-zoom-out').onclick = () => pz.zoom(1.25);
$('#graph-fit').onclick = () => pz.fit();

