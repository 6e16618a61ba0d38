// The stagecraft web app (docs/web-app.md): job editor -> engine worker ->
// summary, symbolic graph (why each collective is there), rank preview
// (groups, node table, timeline, memory), downloads. State lives in the job
// JSON, which is mirrored in the URL (#job=...) so a view can be shared.
import './style.css';
import { EngineClient, EngineRequestError, type Call } from './client';
import { JOB_PRESETS, JOB_SCHEMA, type FieldSchema } from './job-schema';
import type { GraphJson, JobJson, RankInfo } from './protocol';
import { decodeTrace, type ChakraNode } from './lib/chakra';
import { schedule, memoryOverTime, toPerfetto } from './lib/schedule';
import { renderSummary } from './views/summary';
import { renderGraph, renderDetails, renderWhyList, stageLabel, outsideLabel, type GraphViewState } from './views/graph';
import { renderGroups, renderStats, renderTable, renderMemory, Timeline, type Preview, type GroupOfRank } from './views/rank';
import { $, h, download, fmtBytes, axisColor, axisExplain, REMESH_EXPLAIN } from './util';

const ARCHIVE_LIMIT = 1.5e9;  // bytes the browser is asked to hold at most

const form = $<HTMLFormElement>('#job-form');
const statusEl = $('#engine-status');
const crashEl = $('#crash');
const formErrorEl = $('#form-error');

const client = new EngineClient();
client.onCrash = (message) => {
  statusEl.textContent = `engine crashed: ${message}`;
  crashEl.hidden = false;
};
$<HTMLButtonElement>('#restart').onclick = () => {
  crashEl.hidden = true;
  client.restart();
  void boot();
};

// ---------------------------------------------------------------- editor
const get = (o: JobJson, path: string): unknown => path.split('.').reduce<unknown>((a, k) => (a && typeof a === 'object' ? (a as JobJson)[k] : undefined), o);
function set(o: JobJson, path: string, v: unknown): void {
  const ks = path.split('.');
  let cur = o;
  for (const k of ks.slice(0, -1)) cur = (cur[k] ??= {}) as JobJson;
  cur[ks[ks.length - 1]] = v;
}

function fieldControl(f: FieldSchema): HTMLElement {
  const name = f.path;
  let control: HTMLElement;
  if (f.type === 'boolean' && f.default !== undefined) {
    control = h('input', { type: 'checkbox', name });
  } else if (f.type === 'boolean') {
    control = h('select', { name }, h('option', { value: '' }, '(model default)'), h('option', { value: 'true' }, 'on'), h('option', { value: 'false' }, 'off'));
  } else if (f.enum) {
    control = h('select', { name }, ...(f.default === undefined ? [h('option', { value: '' }, '(default)')] : []), ...f.enum.map((v) => h('option', { value: v }, v)));
  } else {
    control = h('input', { type: 'number', name, min: f.minimum, max: f.maximum, step: f.step ?? (f.type === 'integer' ? 1 : 'any'),
      placeholder: f.default !== undefined ? String(f.default) : 'default', inputmode: 'numeric' });
  }
  const check = f.type === 'boolean' && f.default !== undefined;
  return h('label', { 'data-path': f.path, class: check ? 'check' : undefined, title: f.description },
    ...(check ? [control, ` ${f.title}`] : [`${f.title} `, control]),
    h('span', { class: 'error', role: 'alert' }));
}

function buildEditor(modelPresets: string[]): void {
  const groups: Record<string, HTMLElement> = {};
  for (const fs of form.querySelectorAll<HTMLElement>('fieldset[data-group]')) groups[fs.dataset.group!] = fs;
  for (const fs of Object.values(groups)) fs.querySelectorAll('.generated').forEach((x) => x.remove());
  const msel = form.elements.namedItem('model.preset') as HTMLSelectElement;
  msel.replaceChildren(h('option', { value: '' }, '(Hugging Face config below)'), ...modelPresets.map((p) => h('option', { value: p }, p)));
  for (const f of JOB_SCHEMA) {
    const el = fieldControl(f);
    el.classList.add('generated');
    const fs = groups[f.group];
    if (f.advanced) fs.querySelector('details')!.append(el);
    else fs.querySelector('details')!.before(el);
  }
  for (const d of form.querySelectorAll('details')) if (d.children.length <= 1) d.hidden = true;
}

function readJob(): JobJson {
  const job: JobJson = {};
  const preset = (form.elements.namedItem('model.preset') as HTMLSelectElement).value;
  const hf = (form.elements.namedItem('model.hf_config') as HTMLTextAreaElement).value.trim();
  if (hf && !preset) set(job, 'model.hf_config', hf);
  else set(job, 'model.preset', preset || 'gpt3-1.7b');
  for (const f of JOB_SCHEMA) {
    const el = form.elements.namedItem(f.path) as HTMLInputElement | HTMLSelectElement;
    if (!el) continue;
    if (el instanceof HTMLInputElement && el.type === 'checkbox') { if (el.checked) set(job, f.path, true); continue; }
    const v = el.value.trim();
    if (v === '') continue;
    if (f.type === 'boolean') set(job, f.path, v === 'true');
    else if (f.type === 'string') set(job, f.path, v);
    else set(job, f.path, Number(v));
  }
  // The hardware preset alone is written as a string, the CLI's short form.
  const hw = job.hardware as JobJson | undefined;
  if (hw && Object.keys(hw).length === 1 && hw.preset) job.hardware = hw.preset;
  return job;
}

function writeJob(job: JobJson): void {
  const model = (typeof job.model === 'string' ? { preset: job.model } : job.model ?? {}) as JobJson;
  (form.elements.namedItem('model.preset') as HTMLSelectElement).value = typeof model.preset === 'string' ? model.preset : '';
  const hf = model.hf_config;
  (form.elements.namedItem('model.hf_config') as HTMLTextAreaElement).value = hf === undefined ? '' : typeof hf === 'string' ? hf : JSON.stringify(hf, null, 2);
  const norm: JobJson = { ...job, model };
  if (typeof job.hardware === 'string') norm.hardware = { preset: job.hardware };
  for (const f of JOB_SCHEMA) {
    const el = form.elements.namedItem(f.path) as HTMLInputElement | HTMLSelectElement;
    if (!el) continue;
    const v = get(norm, f.path);
    if (el instanceof HTMLInputElement && el.type === 'checkbox') el.checked = v === true;
    else el.value = v === undefined ? (f.enum && f.default !== undefined ? String(f.default) : '') : String(v);
  }
}

function clearErrors(): void {
  for (const label of form.querySelectorAll<HTMLElement>('[data-path]')) {
    label.classList.remove('invalid');
    const e = label.querySelector('.error');
    if (e) e.textContent = '';
  }
  formErrorEl.textContent = '';
}

// The field whose path is the error's path or its closest ancestor.
function showError(err: EngineRequestError): void {
  const { code, message, path } = err.error;
  let best: HTMLElement | null = null, bestLen = -1;
  for (const label of form.querySelectorAll<HTMLElement>('[data-path]')) {
    const p = label.dataset.path!;
    if ((path === p || path.startsWith(`${p}.`)) && p.length > bestLen) { best = label; bestLen = p.length; }
  }
  const text = `${message} (${code})`;
  if (best) {
    best.classList.add('invalid');
    best.closest('details')?.setAttribute('open', '');
    best.querySelector('.error')!.textContent = text;
  } else {
    formErrorEl.textContent = path ? `${path}: ${text}` : text;
  }
}

// ---------------------------------------------------------------- URL
function jobFromUrl(): JobJson | null {
  const m = /[#&]job=([^&]*)/.exec(location.hash);
  if (!m) return null;
  try { return JSON.parse(decodeURIComponent(m[1])) as JobJson; } catch { return null; }
}
function jobToUrl(job: JobJson): void {
  history.replaceState(null, '', `#job=${encodeURIComponent(JSON.stringify(job))}`);
}

// ---------------------------------------------------------------- state
let jobText = '';
let summary: Record<string, any> | null = null;
let graph: GraphJson | null = null;
let preview: Preview | null = null;
const gstate: GraphViewState = { stage: 0, layer: 0, phases: new Set(['fwd']), selected: null };
let graphJob = '';  // the job text `graph` belongs to
const timeline = new Timeline($<HTMLCanvasElement>('#timeline'), $('#timeline-tip'));

function setBusy(what: string): void { document.body.dataset.state = what; }

let generation = 0;
async function update(): Promise<void> {
  const mine = ++generation;
  const job = readJob();
  jobToUrl(job);
  jobText = JSON.stringify(job);
  setBusy('working');
  try {
    const r = await client.request('inspect', { job: jobText });
    if (mine !== generation) return;
    clearErrors();
    summary = r.summary;
    renderSummary($('#summary'), summary);
    $('#summary').dataset.worldSize = String(summary.world_size);
    rankInput().max = String(summary.world_size - 1);
    if (Number(rankInput().value) >= summary.world_size) rankInput().value = '0';
    await showRank(Number(rankInput().value) || 0, mine);
    if (mine !== generation) return;
    setBusy('ready');
    void loadGraph(mine);
  } catch (e) {
    if (mine !== generation) return;
    clearErrors();
    summary = null;
    $('#summary').replaceChildren(h('p', { class: 'hint' }, 'Fix the highlighted field to see the summary.'));
    if (e instanceof EngineRequestError) showError(e);
    else formErrorEl.textContent = String(e);
    setBusy('error');
  }
}

// Requests the graph of gstate.stage (a stage beyond this job's pp falls
// back to stage 0) and rebuilds the stage and layer pickers.
let graphSeq = 0;
async function loadGraph(mine: number): Promise<void> {
  const seq = ++graphSeq;
  const pp = Number(summary?.layout?.pp) || 1;
  if (gstate.stage >= pp) gstate.stage = 0;
  const job = jobText;
  try {
    const r = await client.request('graphJson', { job, stage: gstate.stage });
    if (mine !== generation || seq !== graphSeq) return;
    graph = r.graph;
    graphJob = job;
    renderStagePicker(graph);
    const sel = $<HTMLSelectElement>('#layer');
    const prev = sel.value;
    const moe = new Set(graph.moe_layers);
    sel.replaceChildren(...graph.layers.map((i) => h('option', { value: String(i) }, `layer ${i}${moe.has(i) ? ' (MoE)' : ''}`)),
      h('option', { value: '-1' }, outsideLabel(graph)));
    sel.value = [...sel.options].some((o) => o.value === prev) ? prev : sel.options[0].value;
    gstate.layer = Number(sel.value);
    drawGraph();
    if (preview) renderRankStage(preview.info);
  } catch (e) {
    if (mine === generation && seq === graphSeq) $('#graph').replaceChildren(h('p', { class: 'error' }, String(e)));
  }
}

// The pipeline-stage picker (only with pp > 1), before the layer picker,
// and a note on what a stage is. Options come from graph.stages, so every
// stage is labelled with its layers without fetching its graph.
function renderStagePicker(g: GraphJson): void {
  let label = document.getElementById('stage-picker');
  if (!label) {
    const sel = h('select', { id: 'stage', 'aria-label': 'Pipeline stage' });
    sel.addEventListener('change', () => showStage(Number((sel as HTMLSelectElement).value)));
    label = h('label', { id: 'stage-picker', title: 'Each pipeline stage is a different rank role: its ranks run this graph' }, 'Pipeline ', sel);
    $('#layer').closest('label')!.before(label);
    $('#panel-graph .toolbar').after(h('p', { id: 'stage-note', class: 'hint' }));
  }
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

function showStage(stage: number): void {
  if (stage === gstate.stage && graph?.stage === stage && graphJob === jobText) return;
  gstate.stage = stage;
  gstate.selected = null;
  void loadGraph(generation);
}

function drawGraph(): void {
  if (!graph) return;
  const axes = graph.axes.map((a) => `${a.name} = ${a.degree}`).join(', ');
  const b = graph.bindings;
  $('#graph-legend-symbols').textContent = `Symbols in this job: ${Object.entries(b).map(([k, v]) => `${k} = ${v}`).join(', ')} (${axes}). Shapes are per rank: s/tp means this rank holds 1/tp of the sequence.`;
  renderAxisLegend(graph);
  renderGraph($('#graph'), graph, gstate, drawGraph);
  renderDetails($('#op-details'), graph, gstate.selected);
  renderWhyList($('#why-list'), graph, gstate, (id) => { gstate.selected = id; drawGraph(); document.querySelector(`[data-op="${id}"]`)?.scrollIntoView({ block: 'center', inline: 'center' }); });
}

// The axes that re-divide the base ones (MoE: etp, ep, edp; HSDP: dp_shard,
// dp_replicate) are not rank coordinates, so the legend explains those this
// job binds (or graph_json marks derived), and the remesh op kind when the
// graph has one.
const DERIVED_AXES = ['etp', 'ep', 'edp', 'dp_shard', 'dp_replicate'];
function renderAxisLegend(g: GraphJson): void {
  let el = document.getElementById('graph-legend-axes');
  if (!el) {
    el = h('ul', { id: 'graph-legend-axes', class: 'axis-glossary hint' });
    $('#graph-legend-symbols').after(el);
  }
  const degree = new Map<string, number>();
  for (const a of DERIVED_AXES) if (a in g.bindings) degree.set(a, g.bindings[a]);
  for (const a of g.axes) if (a.derived) degree.set(a.name, a.degree);
  const items = [...degree].map(([a, d]) =>
    h('li', { 'data-axis': a }, h('span', { class: 'chip', style: `border-color:${axisColor(a)}` }, `${a} = ${d}`), axisExplain(a)));
  if (g.ops.some((o) => o.kind === 'remesh')) {
    items.push(h('li', { 'data-kind': 'remesh' }, h('span', { class: 'chip', style: 'border-color:#f08c00;border-style:dashed;background:#fff3bf' }, 'remesh'), REMESH_EXPLAIN));
  }
  el.replaceChildren(...items);
  el.hidden = items.length === 0;
}

// ---------------------------------------------------------------- rank
const rankInput = () => $<HTMLInputElement>('#rank');

function renderCoords(info: RankInfo): void {
  const box = $('#coords');
  if (box.dataset.axes !== info.axes.map((a) => `${a.name}${a.degree}`).join()) {
    box.dataset.axes = info.axes.map((a) => `${a.name}${a.degree}`).join();
    box.replaceChildren(...info.axes.map((a) => h('label', { 'data-path': `coords.${a.name}` }, `${a.name} `,
      h('input', { type: 'number', name: `coord-${a.name}`, min: 0, max: a.degree - 1, 'aria-label': `${a.name} coordinate (0 to ${a.degree - 1})` }),
      h('small', {}, ` / ${a.degree}`), h('span', { class: 'error', role: 'alert' }))));
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
  let el = document.getElementById('rank-stage');
  if (!el) {
    el = h('p', { id: 'rank-stage', class: 'hint' });
    $('#rank-picker').after(el);
  }
  const pp = info.axes.find((a) => a.name === 'pp');
  if (!pp || pp.degree <= 1) { el.hidden = true; return; }
  el.hidden = false;
  const part = graph && graphJob === jobText ? graph.stages[pp.coord] : undefined;
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
  if (groupFile?.job !== jobText) {
    const job = jobText;
    const { text } = await client.request('groups', { job });
    groupFile = { job, table: JSON.parse(text) as Record<string, number[]> };
  }
  const table = groupFile.table;
  return [...axisOf].filter(([key]) => table[key]).map(([key, axis]) => ({ axis, key: Number(key), members: table[key] }))
    .sort((a, b) => a.key - b.key);
}

// Decode + schedule + draw one rank. Returns the elapsed ms. Only the
// latest request draws: quick edits (tp, then dp) send several, and their
// answers may arrive out of order.
let rankSeq = 0;
async function showRank(rank: number, mine = generation): Promise<number> {
  const t0 = performance.now();
  const seq = ++rankSeq;
  const [{ info }, { bytes }] = await Promise.all([
    client.request('rankInfo', { job: jobText, rank }),
    client.request('rankTrace', { job: jobText, rank }),
  ]);
  if (mine !== generation || seq !== rankSeq) return performance.now() - t0;
  const u8 = new Uint8Array(bytes);
  const trace = decodeTrace(u8);
  const extra = await extraGroups(trace.nodes, info);
  if (mine !== generation || seq !== rankSeq) return performance.now() - t0;
  const hw = (summary?.job?.hardware ?? {}) as { intra_node_bw?: number; inter_node_bw?: number; gpus_per_node?: number };
  const perNode = Number(hw.gpus_per_node) || 8;
  const links = new Map([...info.groups, ...extra].map((g) => [String(g.key), { size: g.members.length,
    intraNode: Math.floor(g.members[0] / perNode) === Math.floor(g.members[g.members.length - 1] / perNode) }]));
  const sched = schedule(trace.nodes, hw, links);
  // The rank runs its pipeline stage's program: that stage's memory figures.
  const stage = summary?.stages?.[Number(info.coords?.pp ?? 0)] ?? summary?.stages?.[0];
  const st = stage?.memory_bytes ?? {};
  const staticBytes = (st.weights ?? 0) + (st.gradients ?? 0) + (st.optimizer ?? 0);
  preview = { rank, info, nodes: trace.nodes, sched, memory: memoryOverTime(trace.nodes, sched, staticBytes, stage?.live_activation_timeline), capacity: st.capacity ?? 0, bytes: u8.length };
  (preview as Preview & { raw?: Uint8Array }).raw = u8;
  if (rankInput() !== document.activeElement) rankInput().value = String(rank);
  renderCoords(info);
  renderRankStage(info);
  renderGroups($('#groups'), info, extra);
  renderStats($('#rank-stats'), preview);
  timeline.set(preview);
  renderMemory($('#memory'), preview);
  renderTable($('#node-table'), preview, $<HTMLInputElement>('#node-search').value);
  $('#rank-stats').dataset.rank = String(rank);
  renderDownloads();
  return performance.now() - t0;
}

function rankError(e: unknown, fallbackPath: string): void {
  const err = e instanceof EngineRequestError ? e.error : { code: 'error', message: String(e), path: fallbackPath };
  const label = document.querySelector(`#rank-picker [data-path="${err.path}"]`) ?? document.querySelector('#rank-picker [data-path="rank"]');
  label?.classList.add('invalid');
  const slot = label?.querySelector('.error');
  if (slot) slot.textContent = `${err.message} (${err.code})`;
}
function clearRankErrors(): void {
  for (const l of document.querySelectorAll('#rank-picker [data-path]')) { l.classList.remove('invalid'); const e = l.querySelector('.error'); if (e) e.textContent = ''; }
}

$('#rank-picker').addEventListener('change', async (e) => {
  const t = e.target as HTMLInputElement;
  clearRankErrors();
  try {
    if (t.id === 'rank') {
      const r = Number(t.value);
      await showRank(r);
    } else if (t.name?.startsWith('coord-')) {
      const coords: Record<string, number> = {};
      for (const inp of $('#coords').querySelectorAll<HTMLInputElement>('input')) coords[inp.name.slice(6)] = Number(inp.value);
      const { rank } = await client.request('rankAt', { job: jobText, coords });
      await showRank(rank);
    }
  } catch (err) { rankError(err, t.id === 'rank' ? 'rank' : `coords.${t.name.slice(6)}`); }
});
$('#node-search').addEventListener('input', () => { if (preview) renderTable($('#node-table'), preview, $<HTMLInputElement>('#node-search').value); });
$('#zoom-in').onclick = () => timeline.zoom(0.5);
$('#zoom-out').onclick = () => timeline.zoom(2);
$('#zoom-fit').onclick = () => timeline.fit();

// ---------------------------------------------------------------- downloads
function cliCommand(): string {
  const job = JSON.stringify(JSON.parse(jobText), null, 2);
  return `cat > job.json <<'EOF'\n${job}\nEOF\nstagecraft generate --config job.json -o out`;
}

let archiveCall: Call<{ blob: Blob; bytes: number; files: number }> | null = null;
function renderDownloads(): void {
  if (!summary || !preview) return;
  const world = Number(summary.world_size);
  const estimate = preview.bytes * world;
  const tooBig = estimate > ARCHIVE_LIMIT;
  $('#archive-estimate').textContent = `Estimated archive: ${fmtBytes(estimate)} (${world} traces of about ${fmtBytes(preview.bytes)} each, + comm_groups.json, summary.json).`;
  $<HTMLButtonElement>('#dl-archive').disabled = tooBig;
  $('#too-big').hidden = !tooBig;
  $('#cli').textContent = cliCommand();
  $<HTMLButtonElement>('#dl-rank').textContent = `trace.${preview.rank}.et (rank ${preview.rank})`;
  $<HTMLButtonElement>('#dl-perfetto').textContent = `rank ${preview.rank} as Perfetto / Chrome JSON`;
}
$('#dl-rank').onclick = () => {
  const p = preview as (Preview & { raw?: Uint8Array }) | null;
  if (p?.raw) download(`trace.${p.rank}.et`, new Blob([p.raw as BlobPart]));
};
$('#dl-perfetto').onclick = () => {
  if (!preview) return;
  const json = toPerfetto(preview.rank, preview.nodes, preview.sched, { config_hash: summary?.config_hash, world_size: summary?.world_size });
  download(`rank${preview.rank}.perfetto.json`, JSON.stringify(json), 'application/json');
};
$('#dl-job').onclick = () => download('job.json', JSON.stringify(JSON.parse(jobText), null, 2) + '\n', 'application/json');
$('#copy-cli').onclick = () => { void navigator.clipboard?.writeText($('#cli').textContent ?? ''); $('#copy-cli').textContent = 'copied'; setTimeout(() => { $('#copy-cli').textContent = 'copy'; }, 1500); };
$('#dl-archive').onclick = async () => {
  const bar = $<HTMLProgressElement>('#archive-progress');
  const cancel = $<HTMLButtonElement>('#cancel-archive');
  const msg = $('#archive-status');
  bar.hidden = false; cancel.hidden = false; bar.value = 0;
  msg.textContent = 'building the archive in the engine worker…';
  archiveCall = client.call('archive', { job: jobText }, (p) => { bar.max = p.total; bar.value = p.done; msg.textContent = `${p.done} / ${p.total} traces`; });
  try {
    const r = await archiveCall.promise;
    download('stagecraft-traces.zip', r.blob);
    msg.textContent = `done: ${r.files} files, ${fmtBytes(r.bytes)}`;
  } catch (e) {
    msg.textContent = e instanceof EngineRequestError && e.error.code === 'cancelled' ? 'cancelled' : `failed: ${String(e)}`;
  } finally {
    cancel.hidden = true; bar.hidden = true; archiveCall = null;
  }
};
$('#cancel-archive').onclick = () => archiveCall?.cancel();

// ---------------------------------------------------------------- wiring
for (const tab of document.querySelectorAll<HTMLButtonElement>('[role=tab]')) {
  tab.addEventListener('click', () => selectTab(tab.id.replace(/^tab-/, '')));
}
function selectTab(name: string): void {
  for (const tab of document.querySelectorAll<HTMLButtonElement>('[role=tab]')) {
    const on = tab.id === `tab-${name}`;
    tab.setAttribute('aria-selected', String(on));
    document.getElementById(tab.getAttribute('aria-controls')!)!.hidden = !on;
  }
  if (name === 'rank' && preview) { timeline.draw(); renderMemory($('#memory'), preview); }
}
$('#layer').addEventListener('change', () => { gstate.layer = Number($<HTMLSelectElement>('#layer').value); gstate.selected = null; drawGraph(); });
for (const cb of document.querySelectorAll<HTMLInputElement>('input[name=phase]')) {
  cb.addEventListener('change', () => { if (cb.checked) gstate.phases.add(cb.value); else gstate.phases.delete(cb.value); drawGraph(); });
}

let timer: ReturnType<typeof setTimeout> | undefined;
form.addEventListener('input', (e) => {
  if ((e.target as HTMLElement).id === 'job-preset') return;
  clearTimeout(timer);
  timer = setTimeout(() => void update(), 200);
});
$('#job-preset').addEventListener('change', () => {
  const p = JOB_PRESETS.find((x) => x.id === $<HTMLSelectElement>('#job-preset').value);
  if (p) { writeJob(p.job); void update(); }
});
// A Hugging Face config.json dropped on the drop zone (or pasted).
const drop = $('#hf-drop');
drop.addEventListener('dragover', (e) => { e.preventDefault(); drop.classList.add('over'); });
drop.addEventListener('dragleave', () => drop.classList.remove('over'));
drop.addEventListener('drop', async (e) => {
  e.preventDefault();
  drop.classList.remove('over');
  const file = e.dataTransfer?.files[0];
  if (!file) return;
  (form.elements.namedItem('model.hf_config') as HTMLTextAreaElement).value = await file.text();
  (form.elements.namedItem('model.preset') as HTMLSelectElement).value = '';
  void update();
});

// For the benchmark and tests: preview a rank and report the milliseconds.
(window as unknown as { stagecraftApp: unknown }).stagecraftApp = {
  preview: (rank: number) => showRank(rank),
  state: () => document.body.dataset.state,
};

async function boot(): Promise<void> {
  try {
    const [{ version }, { presets }] = await Promise.all([client.request('version', {}), client.request('presets', {})]);
    statusEl.textContent = `engine ${version} (wasm, in a worker)`;
    if (!form.querySelector('.generated')) buildEditor(presets);
    $<HTMLSelectElement>('#job-preset').replaceChildren(h('option', { value: '' }, 'choose a job preset…'), ...JOB_PRESETS.map((p) => h('option', { value: p.id }, p.title)));
    writeJob(jobFromUrl() ?? JOB_PRESETS[0].job);
    await update();
  } catch (e) {
    statusEl.textContent = `engine unavailable: ${e instanceof Error ? e.message : String(e)}`;
  }
}
void boot();
