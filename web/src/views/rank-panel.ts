// The rank preview's controller: a rank by index or coordinates -> its
// groups, decoded trace, timeline, memory over time, node table, and the
// summary's bytes-on-the-wire table (which needs a rank's trace).
import { EngineRequestError } from '../client';
import type { EngineError, RankInfo } from '../protocol';
import { decodeTrace, type ChakraNode } from '../lib/chakra';
import { schedule, memoryOverTime } from '../lib/schedule';
import { wireByGroupKind } from '../lib/comm';
import { renderWire } from './summary';
import { stageLabel } from './graph';
import { renderGroups, renderStats, renderTable, renderMemory, Timeline, type GroupOfRank } from './rank';
import { explain } from '../messages';
import { state, current, client } from '../state';
import { renderDownloads } from './downloads';
import { $, h } from '../util';
import { servingMemory, isDisaggregated } from './serving';
import { emit, on } from '../bus';

export const rankInput = () => $<HTMLInputElement>('#rank');
// Inference jobs: the phase whose program is previewed (prefill, decode,
// mixed); undefined for training jobs.
export function rankPhase(): string | undefined {
  const inference = state.summary?.inference !== undefined;
  $('#phase-picker').hidden = !inference;
  if (!inference) return undefined;
  // A disaggregated job has no mixed iteration but a KV transfer between
  // its pools (docs/inference.md); a colocated one the other way round.
  const sel = $<HTMLSelectElement>('#rank-phase');
  const disaggregated = isDisaggregated(state.summary!);
  const mixed = sel.querySelector<HTMLOptionElement>('option[value="mixed"]')!;
  const kv = sel.querySelector<HTMLOptionElement>('option[value="kv_transfer"]')!;
  mixed.hidden = mixed.disabled = disaggregated;
  kv.hidden = kv.disabled = !disaggregated;
  if ((mixed.disabled && sel.value === 'mixed') || (kv.disabled && sel.value === 'kv_transfer')) sel.value = 'decode';
  // Each phase has its own world (a disaggregated job's pools differ; the
  // KV transfer's is both pools: prefill ranks first, then decode ranks).
  const it = state.summary?.inference?.iterations ?? {};
  const world = sel.value === 'kv_transfer' ? Number(it.prefill?.world_size) + Number(it.decode?.world_size) : Number(it[sel.value]?.world_size);
  if (world > 0) rankInput().max = String(world - 1);
  return sel.value;
}

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
export function renderRankStage(info: RankInfo): void {
  const el = $('#rank-stage');
  const pp = info.axes.find((a) => a.name === 'pp');
  if (!pp || pp.degree <= 1) { el.hidden = true; return; }
  el.hidden = false;
  const part = state.graph && state.graphJob === state.jobText ? state.graph.stages[pp.coord] : undefined;
  const link = h('button', { type: 'button', class: 'linklike', id: 'show-rank-stage' }, 'show this rank’s stage in the graph');
  link.addEventListener('click', () => { emit('select-tab', 'graph'); emit('show-stage', pp.coord); });
  el.replaceChildren(`Rank ${info.rank} has pp coordinate ${pp.coord}, so it runs pipeline ${part ? stageLabel(part, pp.degree) : `stage ${pp.coord} of ${pp.degree}`}. `, link);
  el.dataset.stage = String(pp.coord);
}

// Groups the rank's trace uses that rankInfo does not list: it gives the
// coordinate axes and the derived ones (MoE etp/ep/edp, HSDP dp_shard/
// dp_replicate), not combined ones such as dp+cp or the embedding group.
// Their members come from the group file (fetched once per job, only when
// needed), their axis from the collective's name, which ends in "(axis)".
let groupFile: { job: string; phase?: string; table: Record<string, number[]> } | null = null;
async function extraGroups(nodes: ChakraNode[], info: RankInfo, phase?: string): Promise<GroupOfRank[]> {
  const known = new Set(info.groups.map((g) => String(g.key)));
  const axisOf = new Map<string, string>();
  for (const n of nodes) {
    const pg = n.attrs.pg_name;
    if (pg === undefined || known.has(String(pg)) || axisOf.has(String(pg))) continue;
    axisOf.set(String(pg), /\(([^()]+)\)$/.exec(n.name)?.[1] ?? '?');
  }
  if (!axisOf.size) return [];
  if (groupFile?.job !== state.jobText || groupFile.phase !== phase) {
    const job = state.jobText;
    const { text } = await client.request('groups', phase ? { job, phase } : { job });
    groupFile = { job, phase, table: JSON.parse(text) as Record<string, number[]> };
  }
  const table = groupFile.table;
  return [...axisOf].filter(([key]) => table[key]).map(([key, axis]) => ({ axis, key: Number(key), members: table[key] }))
    .sort((a, b) => a.key - b.key);
}

// Decode + schedule + draw one rank. Returns the elapsed ms. Only the
// latest request draws: answers may arrive out of order.
let rankSeq = 0;
export async function showRank(rank: number, mine = state.generation): Promise<number> {
  const t0 = performance.now();
  const seq = ++rankSeq;
  const phase = rankPhase();
  if (phase && rank > Number(rankInput().max)) rank = 0;  // this phase's pool is smaller
  const [{ info }, { bytes }] = await Promise.all([
    client.request('rankInfo', phase ? { job: state.jobText, rank, phase } : { job: state.jobText, rank }),
    client.request('rankTrace', phase ? { job: state.jobText, rank, phase } : { job: state.jobText, rank }),
  ]);
  if (!current(mine) || seq !== rankSeq) return performance.now() - t0;
  const u8 = new Uint8Array(bytes);
  const trace = decodeTrace(u8);
  const extra = await extraGroups(trace.nodes, info, phase);
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
  // A serving rank holds its weights and its sequences' KV cache for the
  // whole run (summary.inference, docs/inference.md); a training rank its
  // weights, gradients and optimizer state.
  const inf = summary?.inference;
  const served = inf ? servingMemory(inf) : null;
  const staticBytes = served ? served.weights + served.kv_cache : (st.weights ?? 0) + (st.gradients ?? 0) + (st.optimizer ?? 0);
  const preview = { rank, phase, info, nodes: trace.nodes, sched, memory: memoryOverTime(trace.nodes, sched, staticBytes, stage?.live_activation_timeline),
    capacity: served ? served.capacity : st.capacity ?? 0, staticBytes, bytes: u8.length, raw: u8 };
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
  $('#rank-stats').dataset.phase = phase ?? '';
  const byKey = new Map(groups.map((g) => [String(g.key), { axis: g.axis, size: g.members.length }]));
  const wire = document.getElementById('wire');
  if (wire) renderWire(wire, rank, wireByGroupKind(trace.nodes, (pg) => byKey.get(pg)));
  renderDownloads();
  emit('rank-shown', rank);
  return performance.now() - t0;
}
const timeline = new Timeline($<HTMLCanvasElement>('#timeline'), $('#timeline-tip'));

// The rank preview could not be built: say why where it would have been.
export function previewUnavailable(err: EngineError): void {
  const { lead, text, hint } = explain(err);
  state.preview = null;
  const msg = () => h('p', { class: 'banner', 'data-code': err.code }, h('strong', {}, `${lead}: `), text, hint ? ` ${hint}` : '');
  $('#rank-stats').replaceChildren(msg());
  $('#rank-stats').dataset.rank = '';
  const wire = document.getElementById('wire');
  if (wire) wire.replaceChildren(h('p', { class: 'hint' }, 'Bytes on the wire need a rank’s trace, which could not be built: ', text));
  renderDownloads();
}

function rankError(e: unknown, fallbackPath: string): void {
  showRankError(e instanceof EngineRequestError ? e.error : { code: 'error', message: String(e), path: fallbackPath });
}
function showRankError(err: EngineError): void {
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
    if (t.id === 'rank' && !/^\s*\d+\s*$/.test(rankInput().value)) {
      // "1.5" or "abc" is no rank: said, not rounded or read as 0.
      const n = Number(rankInput().max) + 1;
      showRankError({ code: 'invalid_argument', message: `rank must be an integer in [0, ${n}) (got ${rankInput().value})`, path: 'rank' });
    } else if (t.id === 'rank' || t.id === 'rank-phase') {
      await showRank(Number(rankInput().value) || 0);
    } else if (t.name?.startsWith('coord-')) {
      const coords: Record<string, number> = {};
      for (const inp of $('#coords').querySelectorAll<HTMLInputElement>('input')) coords[inp.name.slice(6)] = Number(inp.value);
      const { rank } = await client.request('rankAt', { job: state.jobText, coords });  // rank_at: the decode layout
      await showRank(rank);
    }
  } catch (err) { rankError(err, t.id === 'rank' ? 'rank' : `coords.${t.name.slice(6)}`); }
});
// The rank field applies as it is typed (a short pause first), not only on
// Enter or blur.
let rankTimer: ReturnType<typeof setTimeout> | undefined;
rankInput().addEventListener('input', () => {
  clearTimeout(rankTimer);
  rankTimer = setTimeout(() => {
    const v = rankInput().value;
    if (v === '' || !/^\d+$/.test(v)) return;
    rankInput().dispatchEvent(new Event('change', { bubbles: true }));
  }, 300);
});
$('#node-search').addEventListener('input', () => { if (state.preview) renderTable($('#node-table'), state.preview, $<HTMLInputElement>('#node-search').value); });
$('#zoom-in').onclick = () => timeline.zoom(0.5);
$('#zoom-out').onclick = () => timeline.zoom(2);
$('#zoom-fit').onclick = () => timeline.fit();

// Redraws the canvases (they need their on-screen size) when the tab shows.
on('tab-shown', (name) => { if (name === 'rank') redrawRank(); });
// The graph of a stage arrived: the rank's stage line names its layers.
on('graph-loaded', () => { if (state.preview) renderRankStage(state.preview.info); });
export function redrawRank(): void {
  if (state.preview) { timeline.draw(); renderMemory($('#memory'), state.preview); }
}

