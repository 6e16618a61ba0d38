// The stagecraft web app (docs/web-app.md): job editor -> engine worker ->
// summary, symbolic graph (why each collective is there), rank preview
// (groups, node table, timeline, memory), downloads. This file is the
// controller: it wires the views (views/*) to the engine and writes the
// state (state.ts). The job is mirrored in the URL (#job=...) so a view can
// be shared.
import './style.css';
import { EngineRequestError, type Call } from './client';
import { JOB_PRESETS } from './job-schema';
import type { EngineError, GraphJson, JobJson, RankInfo } from './protocol';
import { decodeTrace, type ChakraNode } from './lib/chakra';
import { schedule, memoryOverTime, toPerfetto } from './lib/schedule';
import { wireByGroupKind } from './lib/comm';
import { renderSummary, renderWire } from './views/summary';
import { renderGraph, renderDetails, renderWhyList, stageLabel, outsideLabel, showOp, PanZoom, ALL_LAYERS } from './views/graph';
import { renderGroups, renderStats, renderTable, renderMemory, Timeline, type GroupOfRank } from './views/rank';
import { buildEditor, readJob, writeJob, clearErrors, showError, useHfConfig, usePreset, renderModelSource, hfText, presetSelect, hfActive } from './views/editor';
import { initWelcome, fetchHfConfig } from './views/welcome';
import { explain, isTooBig } from './messages';
import { state, current, client, archiveClient } from './state';
import { $, h, download, fmtBytes, axisColor, axisExplain, REMESH_EXPLAIN } from './util';

const ARCHIVE_LIMIT = 1.5e9;  // bytes the browser is asked to hold at most

const form = $<HTMLFormElement>('#job-form');
const statusEl = $('#engine-status');
const jobStatus = $('#job-status');
const summaryEl = $('#summary');

// A worker that died or whose wasm aborted has already been replaced by the
// client; say so next to the job, in words.
client.onCrash = (error) => {
  statusEl.textContent = `engine restarted after: ${error.message}`;
  if (error.code === 'engine_aborted') {
    clearErrors();
    showError(error);
    showTooBig(error);
  }
};

// ---------------------------------------------------------------- URL
function jobFromUrl(): JobJson | null {
  const m = /[#&]job=([^&]*)/.exec(location.hash);
  if (!m) return null;
  try { return JSON.parse(decodeURIComponent(m[1])) as JobJson; } catch { return null; }
}
function jobToUrl(job: JobJson): void {
  history.replaceState(null, '', `${location.search}#job=${encodeURIComponent(JSON.stringify(job))}`);
}

// ---------------------------------------------------------------- working / stale
// While the engine works on an edit, the views keep the previous job's
// results, greyed and labelled as such, with the elapsed time and a Stop
// button (which drops the request by replacing the worker).
let workingSince = 0;
let tick: ReturnType<typeof setInterval> | undefined;
function setBusy(what: 'working' | 'ready' | 'error' | 'stopped'): void {
  document.body.dataset.state = what;
  const stale = what === 'working' && state.summary !== null;
  summaryEl.classList.toggle('stale', stale);
  $('main').setAttribute('aria-busy', String(what === 'working'));
  clearInterval(tick);
  if (what === 'working') {
    workingSince = performance.now();
    const show = () => {
      const s = (performance.now() - workingSince) / 1000;
      $('#job-status-text').textContent = `working… ${s >= 1 ? `${s.toFixed(0)} s` : ''}${stale ? ' — the views still show the previous job' : ''}`;
    };
    show();
    tick = setInterval(show, 500);
    jobStatus.hidden = false;
    $<HTMLButtonElement>('#stop').hidden = false;
  } else if (what === 'stopped') {
    $('#job-status-text').textContent = 'stopped — the views show the previous job; edit the job to try again';
    $<HTMLButtonElement>('#stop').hidden = true;
    jobStatus.hidden = false;
  } else {
    jobStatus.hidden = true;
  }
}
$('#stop').addEventListener('click', () => {
  state.generation++;
  client.supersede();
  setBusy('stopped');
});

function showTooBig(e: EngineError): void {
  const { lead, text, hint } = explain(e);
  summaryEl.classList.remove('stale');
  summaryEl.replaceChildren(h('div', { class: 'banner', role: 'alert', 'data-code': e.code, id: 'too-big-job' },
    h('strong', {}, `${lead}. `), text, ' ', hint,
    h('p', {}, 'The command on the Downloads tab generates the same traces natively.')));
  state.summary = null;
}

// ---------------------------------------------------------------- update
// Every edit bumps the generation and drops whatever the engine was still
// doing for earlier edits (supersede: the worker is replaced), so the
// answer for the last edit never waits behind stale ones.
let timer: ReturnType<typeof setTimeout> | undefined;
function edited(delay = 200): void {
  state.generation++;
  client.supersede();
  setBusy('working');
  clearTimeout(timer);
  timer = setTimeout(() => void update(), delay);
}

async function update(): Promise<void> {
  const mine = ++state.generation;
  client.supersede();
  const job = readJob();
  jobToUrl(job);
  state.jobText = JSON.stringify(job);
  setBusy('working');
  renderModelSource(null);
  try {
    const r = await client.request('inspect', { job: state.jobText });
    if (!current(mine)) return;
    clearErrors();
    state.summary = r.summary;
    state.summaryJob = state.jobText;
    renderSummary(summaryEl, r.summary);
    summaryEl.classList.remove('stale');
    summaryEl.dataset.worldSize = String(r.summary.world_size);
    summaryEl.dataset.job = state.jobText;
    renderModelSource((r.summary as any).job?.model ?? null);
    rankInput().max = String(Number(r.summary.world_size) - 1);
    if (Number(rankInput().value) >= Number(r.summary.world_size)) rankInput().value = '0';
    await showRank(Number(rankInput().value) || 0, mine);
    if (!current(mine)) return;
    setBusy('ready');
    void loadGraph(mine);
  } catch (e) {
    if (!current(mine)) return;
    const err = e instanceof EngineRequestError ? e.error : { code: 'error', message: String(e), path: '' };
    if (err.code === 'superseded') return;
    clearErrors();
    showError(err);
    if (isTooBig(err)) showTooBig(err);
    else {
      state.summary = null;
      summaryEl.classList.remove('stale');
      summaryEl.replaceChildren(h('p', { class: 'hint' }, 'Fix the highlighted field to see the summary.'));
    }
    setBusy('error');
  }
}

// ---------------------------------------------------------------- graph
const pz = new PanZoom($('#graph'));
let graphSeq = 0;
// Requests the graph of gstate.stage (a stage beyond this job's pp falls
// back to stage 0) and rebuilds the stage and layer pickers.
async function loadGraph(mine: number): Promise<void> {
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
    if (state.preview) renderRankStage(state.preview.info);
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

function showStage(stage: number): void {
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

// ---------------------------------------------------------------- rank
const rankInput = () => $<HTMLInputElement>('#rank');

function renderCoords(info: RankInfo): void {
  const box = $('#coords');
  if (box.dataset.axes !== info.axes.map((a) => `${a.name}${a.degree}`).join()) {
    box.dataset.axes = info.axes.map((a) => `${a.name}${a.degree}`).join();
    box.replaceChildren(...info.axes.map((a) => h('label', { 'data-path': `coords.${a.name}` }, `${a.name} `,
      h('input', { type: 'number', name: `coord-${a.name}`, min: 0, max: a.degree - 1, 'aria-label': `${a.name} coordinate (0 to ${a.degree - 1})` }),
      h('small', {}, ` / ${a.degree}`), h('span', { class: 'error', 'aria-live': 'polite' }))));
  }
  // Never overwrite the field being edited: a draw for an earlier edit
  // would otherwise reset what the user is typing.
  for (const a of info.axes) {
    const inp = box.querySelector(`input[name="coord-${a.name}"]`) as HTMLInputElement;
    if (inp !== document.activeElement) inp.value = String(a.coord);
  }
}

// With pp > 1: which pipeline stage the rank runs, and a link that shows
// that stage's graph in the graph view.
function renderRankStage(info: RankInfo): void {
  const el = $('#rank-stage');
  const pp = info.axes.find((a) => a.name === 'pp');
  if (!pp || pp.degree <= 1) { el.hidden = true; return; }
  el.hidden = false;
  const part = state.graph && state.graphJob === state.jobText ? state.graph.stages[pp.coord] : undefined;
  const link = h('button', { type: 'button', class: 'linklike', id: 'show-rank-stage' }, 'show this rank’s stage in the graph');
  link.addEventListener('click', () => { selectTab('graph'); showStage(pp.coord); });
  el.replaceChildren(`Rank ${info.rank} has pp coordinate ${pp.coord}, so it runs pipeline ${part ? stageLabel(part, pp.degree) : `stage ${pp.coord} of ${pp.degree}`}. `, link);
  el.dataset.stage = String(pp.coord);
}

// Groups the rank's trace uses that rankInfo does not list: it gives the
// coordinate axes and the derived ones (MoE etp/ep/edp, HSDP dp_shard/
// dp_replicate), not combined ones such as dp+cp or the embedding group.
// Their members come from the group file (fetched once per job, only when
// needed), their axis from the collective's name, which ends in "(axis)".
let groupFile: { job: string; table: Record<string, number[]> } | null = null;
async function extraGroups(nodes: ChakraNode[], info: RankInfo): Promise<GroupOfRank[]> {
  const known = new Set(info.groups.map((g) => String(g.key)));
  const axisOf = new Map<string, string>();
  for (const n of nodes) {
    const pg = n.attrs.pg_name;
    if (pg === undefined || known.has(String(pg)) || axisOf.has(String(pg))) continue;
    axisOf.set(String(pg), /\(([^()]+)\)$/.exec(n.name)?.[1] ?? '?');
  }
  if (!axisOf.size) return [];
  if (groupFile?.job !== state.jobText) {
    const job = state.jobText;
    const { text } = await client.request('groups', { job });
    groupFile = { job, table: JSON.parse(text) as Record<string, number[]> };
  }
  const table = groupFile.table;
  return [...axisOf].filter(([key]) => table[key]).map(([key, axis]) => ({ axis, key: Number(key), members: table[key] }))
    .sort((a, b) => a.key - b.key);
}

// Decode + schedule + draw one rank. Returns the elapsed ms. Only the
// latest request draws: answers may arrive out of order.
let rankSeq = 0;
async function showRank(rank: number, mine = state.generation): Promise<number> {
  const t0 = performance.now();
  const seq = ++rankSeq;
  const [{ info }, { bytes }] = await Promise.all([
    client.request('rankInfo', { job: state.jobText, rank }),
    client.request('rankTrace', { job: state.jobText, rank }),
  ]);
  if (!current(mine) || seq !== rankSeq) return performance.now() - t0;
  const u8 = new Uint8Array(bytes);
  const trace = decodeTrace(u8);
  const extra = await extraGroups(trace.nodes, info);
  if (!current(mine) || seq !== rankSeq) return performance.now() - t0;
  const summary = state.summary;
  const hw = (summary?.job?.hardware ?? {}) as { intra_node_bw?: number; inter_node_bw?: number; gpus_per_node?: number };
  const perNode = Number(hw.gpus_per_node) || 8;
  const groups = [...info.groups, ...extra];
  const links = new Map(groups.map((g) => [String(g.key), { size: g.members.length,
    intraNode: Math.floor(g.members[0] / perNode) === Math.floor(g.members[g.members.length - 1] / perNode) }]));
  const sched = schedule(trace.nodes, hw, links);
  // The rank runs its pipeline stage's program: that stage's memory figures.
  const stage = summary?.stages?.[Number(info.coords?.pp ?? 0)] ?? summary?.stages?.[0];
  const st = stage?.memory_bytes ?? {};
  const staticBytes = (st.weights ?? 0) + (st.gradients ?? 0) + (st.optimizer ?? 0);
  const preview = { rank, info, nodes: trace.nodes, sched, memory: memoryOverTime(trace.nodes, sched, staticBytes, stage?.live_activation_timeline),
    capacity: st.capacity ?? 0, staticBytes, bytes: u8.length, raw: u8 };
  state.preview = preview;
  if (rankInput() !== document.activeElement) rankInput().value = String(rank);
  renderCoords(info);
  renderRankStage(info);
  renderGroups($('#groups'), info, extra);
  renderStats($('#rank-stats'), preview);
  timeline.set(preview);
  renderMemory($('#memory'), preview);
  renderTable($('#node-table'), preview, $<HTMLInputElement>('#node-search').value);
  $('#rank-stats').dataset.rank = String(rank);
  const byKey = new Map(groups.map((g) => [String(g.key), { axis: g.axis, size: g.members.length }]));
  const wire = document.getElementById('wire');
  if (wire) renderWire(wire, rank, wireByGroupKind(trace.nodes, (pg) => byKey.get(pg)));
  renderDownloads();
  return performance.now() - t0;
}
const timeline = new Timeline($<HTMLCanvasElement>('#timeline'), $('#timeline-tip'));

function rankError(e: unknown, fallbackPath: string): void {
  const err = e instanceof EngineRequestError ? e.error : { code: 'error', message: String(e), path: fallbackPath };
  if (err.code === 'superseded') return;
  const label = document.querySelector(`#rank-picker [data-path="${err.path}"]`) ?? document.querySelector('#rank-picker [data-path="rank"]');
  label?.classList.add('invalid');
  const slot = label?.querySelector<HTMLElement>('.error');
  if (slot) { const x = explain(err); slot.textContent = `${x.lead}: ${x.text}`; slot.dataset.code = err.code; }
}
function clearRankErrors(): void {
  for (const l of document.querySelectorAll('#rank-picker [data-path]')) { l.classList.remove('invalid'); const e = l.querySelector('.error'); if (e) e.textContent = ''; }
}

$('#rank-picker').addEventListener('change', async (e) => {
  const t = e.target as HTMLInputElement;
  clearRankErrors();
  try {
    if (t.id === 'rank') {
      await showRank(Number(t.value));
    } else if (t.name?.startsWith('coord-')) {
      const coords: Record<string, number> = {};
      for (const inp of $('#coords').querySelectorAll<HTMLInputElement>('input')) coords[inp.name.slice(6)] = Number(inp.value);
      const { rank } = await client.request('rankAt', { job: state.jobText, coords });
      await showRank(rank);
    }
  } catch (err) { rankError(err, t.id === 'rank' ? 'rank' : `coords.${t.name.slice(6)}`); }
});
$('#node-search').addEventListener('input', () => { if (state.preview) renderTable($('#node-table'), state.preview, $<HTMLInputElement>('#node-search').value); });
$('#zoom-in').onclick = () => timeline.zoom(0.5);
$('#zoom-out').onclick = () => timeline.zoom(2);
$('#zoom-fit').onclick = () => timeline.fit();

// ---------------------------------------------------------------- downloads
function cliCommand(): string {
  const job = JSON.stringify(JSON.parse(state.jobText), null, 2);
  return `cat > job.json <<'EOF'\n${job}\nEOF\nstagecraft generate --config job.json -o out`;
}

let archiveCall: Call<{ blob: Blob; bytes: number; files: number }> | null = null;
function renderDownloads(): void {
  $('#cli').textContent = cliCommand();
  const { summary, preview } = state;
  if (!summary || !preview) return;
  const world = Number(summary.world_size);
  const estimate = preview.bytes * world;
  const tooBig = estimate > ARCHIVE_LIMIT;
  $('#archive-estimate').textContent = `Estimated archive: ${fmtBytes(estimate)} (${world} traces of about ${fmtBytes(preview.bytes)} each, + comm_groups.json, summary.json).`;
  $<HTMLButtonElement>('#dl-archive').disabled = tooBig;
  $('#too-big').hidden = !tooBig;
  $<HTMLButtonElement>('#dl-rank').textContent = `trace.${preview.rank}.et (rank ${preview.rank})`;
  $<HTMLButtonElement>('#dl-perfetto').textContent = `rank ${preview.rank} as Perfetto / Chrome JSON`;
}
$('#dl-rank').onclick = () => {
  const p = state.preview;
  if (p?.raw) download(`trace.${p.rank}.et`, new Blob([p.raw as BlobPart]));
};
$('#dl-perfetto').onclick = () => {
  const p = state.preview;
  if (!p) return;
  const json = toPerfetto(p.rank, p.nodes, p.sched, { config_hash: state.summary?.config_hash, world_size: state.summary?.world_size });
  download(`rank${p.rank}.perfetto.json`, JSON.stringify(json), 'application/json');
};
$('#dl-job').onclick = () => download('job.json', JSON.stringify(JSON.parse(state.jobText), null, 2) + '\n', 'application/json');
$('#copy-cli').onclick = () => { void navigator.clipboard?.writeText($('#cli').textContent ?? ''); $('#copy-cli').textContent = 'copied'; setTimeout(() => { $('#copy-cli').textContent = 'copy'; }, 1500); };
$('#dl-archive').onclick = async () => {
  const bar = $<HTMLProgressElement>('#archive-progress');
  const cancel = $<HTMLButtonElement>('#cancel-archive');
  const msg = $('#archive-status');
  bar.hidden = false; cancel.hidden = false; bar.value = 0;
  msg.textContent = 'building the archive in the engine worker…';
  archiveCall = archiveClient().call('archive', { job: state.jobText }, (p) => { bar.max = p.total; bar.value = p.done; msg.textContent = `${p.done} / ${p.total} traces`; });
  try {
    const r = await archiveCall.promise;
    download('stagecraft-traces.zip', r.blob);
    msg.textContent = `done: ${r.files} files, ${fmtBytes(r.bytes)}`;
  } catch (e) {
    msg.textContent = e instanceof EngineRequestError && e.error.code === 'cancelled' ? 'cancelled' : `failed: ${e instanceof EngineRequestError ? explain(e.error).text : String(e)}`;
  } finally {
    cancel.hidden = true; bar.hidden = true; archiveCall = null;
  }
};
$('#cancel-archive').onclick = () => archiveCall?.cancel();

// ---------------------------------------------------------------- tabs
// WAI-ARIA tabs: one tab in the tab order (roving tabindex), arrow keys,
// Home and End move between tabs and select them.
const tabs = [...document.querySelectorAll<HTMLButtonElement>('[role=tab]')];
function selectTab(name: string, focus = false): void {
  for (const tab of tabs) {
    const on = tab.id === `tab-${name}`;
    tab.setAttribute('aria-selected', String(on));
    tab.tabIndex = on ? 0 : -1;
    document.getElementById(tab.getAttribute('aria-controls')!)!.hidden = !on;
    if (on && focus) tab.focus();
  }
  if (name === 'rank' && state.preview) { timeline.draw(); renderMemory($('#memory'), state.preview); }
}
for (const tab of tabs) {
  tab.addEventListener('click', () => selectTab(tab.id.replace(/^tab-/, '')));
  tab.addEventListener('keydown', (e) => {
    const i = tabs.indexOf(tab);
    const next = e.key === 'ArrowRight' ? (i + 1) % tabs.length : e.key === 'ArrowLeft' ? (i - 1 + tabs.length) % tabs.length
      : e.key === 'Home' ? 0 : e.key === 'End' ? tabs.length - 1 : -1;
    if (next < 0) return;
    e.preventDefault();
    selectTab(tabs[next].id.replace(/^tab-/, ''), true);
  });
}

// ---------------------------------------------------------------- editor wiring
form.addEventListener('input', (e) => {
  const t = e.target as HTMLElement;
  if (t.id === 'job-preset' || t.id === 'hf-id') return;
  if (t === hfText()) {
    // Pasting or typing a config makes it the model (overrides cleared).
    if (!hfText().value.trim()) hfText().dataset.active = '';
    else if (!hfActive()) useHfConfig();
    renderModelSource(null);
  } else if (t === presetSelect()) {
    usePreset();
  }
  edited();
});
function loadPreset(id: string): void {
  const p = JOB_PRESETS.find((x) => x.id === id);
  if (!p) return;
  $<HTMLSelectElement>('#job-preset').value = id;
  writeJob(p.job);
  renderModelSource(null);
  edited(0);
}
$('#job-preset').addEventListener('change', () => loadPreset($<HTMLSelectElement>('#job-preset').value));
// A Hugging Face config.json dropped on the box.
const drop = $('#hf-drop');
drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('over'); });
drop.addEventListener('dragleave', () => drop.classList.remove('over'));
drop.addEventListener('drop', async (e) => {
  e.preventDefault();
  drop.classList.remove('over');
  const file = e.dataTransfer?.files[0];
  if (!file) return;
  useHfConfig(await file.text());
  edited(0);
});
// A model by Hugging Face id, fetched from the hub by the browser.
$('#hf-load').addEventListener('click', async () => {
  const id = $<HTMLInputElement>('#hf-id').value;
  const msg = $('#hf-status');
  msg.textContent = `fetching ${id.trim()}’s config.json…`;
  msg.classList.remove('error');
  try {
    const text = await fetchHfConfig(id);
    useHfConfig(text);
    msg.textContent = `loaded ${id.trim()}’s config.json from the hub.`;
    edited(0);
  } catch (e) {
    msg.textContent = e instanceof Error ? e.message : String(e);
    msg.classList.add('error');
  }
});
$('#hf-id').addEventListener('keydown', (e) => { if (e.key === 'Enter') { e.preventDefault(); $<HTMLButtonElement>('#hf-load').click(); } });

// For the benchmark and tests.
(window as unknown as { stagecraftApp: unknown }).stagecraftApp = {
  preview: (rank: number) => showRank(rank),
  state: () => document.body.dataset.state,
  engine: () => ({ spawned: client.spawned, busy: client.busy }),
  selfTestAbort: () => client.request('selfTestAbort', {}).catch((e: EngineRequestError) => e.error),
};

async function boot(): Promise<void> {
  try {
    const [{ version }, { presets }] = await Promise.all([client.request('version', {}), client.request('presets', {})]);
    statusEl.textContent = `engine ${version} (wasm, in a worker)`;
    if (!form.querySelector('.generated')) buildEditor(presets);
    $<HTMLSelectElement>('#job-preset').replaceChildren(h('option', { value: '' }, 'choose a job preset…'), ...JOB_PRESETS.map((p) => h('option', { value: p.id }, p.title)));
    const fromUrl = jobFromUrl();
    initWelcome(new Map(JOB_PRESETS.map((p) => [p.id, p.title])), loadPreset, fromUrl === null);
    writeJob(fromUrl ?? JOB_PRESETS[0].job);
    await update();
  } catch (e) {
    statusEl.textContent = `engine unavailable: ${e instanceof Error ? e.message : String(e)}`;
  }
}
void boot();
