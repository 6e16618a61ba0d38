// Step time (the engine's simulator, docs/simulate.md): step time, MFU,
// tokens per second, bubble and exposed communication, and rank 0's
// pipeline as one row per stage — compute blocks F (forward), B (backward),
// W (weight gradients, zero-bubble), O (optimizer), gaps = waits — with
// that stage's communication on a thin lane under it: solid where it was
// exposed (no compute beside it), striped where compute hid it (the
// engine's 5th timeline field: 1 exposed, 0 hidden). Canvas (a pipeline
// has thousands of blocks); the per-stage table is the text alternative.
import type { Simulation } from '../protocol';
import { h, fmtUs, AXIS_COLOR } from '../util';

const COMPUTE: Record<string, [string, string]> = {
  F: ['#1c7ed6', 'forward'], B: ['#e67700', 'backward'], W: ['#7048e8', 'weight gradients'], O: ['#495057', 'optimizer'],
};
// Communication entries carry a 5th field: 1 exposed, 0 hidden under compute.
const exposedOf = (e: readonly unknown[]) => (e.length > 4 ? e[4] === 1 : true);
const pct = (x: number) => `${(100 * x).toFixed(1)} %`;
const sec = (s: number) => fmtUs(s * 1e6);

// The three bubble figures a pipelined job shows, side by side with why
// they differ (issue 25): the formula assumes equal stages and compares the
// idle slots with the compute; the trace replay compares the makespan with
// the busiest stage's compute; the simulation is the mean stage's waiting
// share of the whole step (lighter stages wait on the busiest, and the
// optimizer step and communication are in the step). The stage imbalance
// part is computed from the per-stage busy times on screen.
function bubbleNote(sim: Simulation, pipe: Record<string, any> | undefined): HTMLElement | null {
  if (!pipe || sim.stages.length < 2) return null;
  const busiest = Math.max(...sim.stages.map((st) => st.busy_seconds));
  const imbalance = sim.stages.reduce((a, st) => a + (busiest - st.busy_seconds), 0) / sim.stages.length / (sim.step_seconds || 1);
  const p = Number(pipe.stages), m = Number(pipe.micro_batches);
  const zb = /zero/.test(String(pipe.schedule));
  return h('div', { class: 'bubble-note', id: 'bubble-note' },
    h('h4', {}, 'Three bubble figures, and why they differ'),
    h('ul', {},
      h('li', {}, h('strong', {}, `Formula ${pct(Number(pipe.bubble_fraction_formula))}`), `: (p−1)/(v·m) with p = ${p} stages and m = ${m} micro-batches — idle slots ÷ busy slots, assuming every stage takes the same time and communication is free.`),
      h('li', {}, h('strong', {}, `Traces ${pct(Number(pipe.bubble_fraction))}`), ': one pipeline replayed from the traces with free communication, (makespan − the busiest stage’s compute) ÷ that compute. Lower than the formula when the stages differ: the busiest stage (the one with the output layer and loss, or the embedding) sets the pace, and the formula’s idle slots are measured against it.'),
      h('li', {}, h('strong', {}, `Simulated ${pct(sim.bubble_fraction)}`), `: the mean over stages of the time each stage’s compute waits with nothing in flight, ÷ the whole step (optimizer and communication included). It counts the lighter stages waiting on the busiest one: that stage imbalance alone is ${pct(imbalance)} of the step here (the busiest stage computes ${sec(busiest)}; the others less, see the table).`)),
    zb ? h('p', { class: 'hint' }, 'Zero-bubble schedules split the backward pass into the input gradient (B) and the weight gradient (W) and fill the drain with W blocks: they remove the schedule’s idle slots, not the waits caused by unequal stages, so with unequal stages the simulated bubble stays near the other schedules’ — the imbalance above is what remains.') : '');
}

export function renderSimulation(el: HTMLElement, sim: Simulation, ctx: { fit?: { fits: boolean } | null; pipeline?: Record<string, any> } = {}): void {
  const card = (t: string, v: string, n: string) => h('div', { class: 'card' }, h('div', { class: 'card-title' }, t), h('div', { class: 'card-value' }, v), h('div', { class: 'card-note' }, n));
  const exposed = Object.entries(sim.exposed_comm_seconds ?? {}).filter(([, v]) => v > 0);
  const unfit = ctx.fit && !ctx.fit.fits;
  const ifFit = unfit ? ' — would be, if it fitted (it does not fit in GPU memory)' : '';
  const cards = h('div', { class: 'cards' },
    card(unfit ? 'Step time (would be, if it fitted)' : 'Step time', sec(sim.step_seconds), `one optimizer step, simulated from the ranks’ programs${ifFit}`),
    card(unfit ? 'MFU (would be, if it fitted)' : 'MFU', pct(sim.mfu), 'model FLOPs ÷ (GPUs × peak FLOP/s × step time)'),
    card(unfit ? 'Tokens / s (would be, if it fitted)' : 'Tokens / s', Math.round(sim.tokens_per_second).toLocaleString('en'), 'global batch × sequence ÷ step time'),
    card('Bubble', pct(sim.bubble_fraction), 'share of the step the pipeline stages wait (simulated)'),
    card('Exposed communication', exposed.length ? exposed.map(([k, v]) => `${k} ${sec(v)}`).join(', ') : 'none', 'communication time not hidden behind compute, by kind'));
  const rows = sim.stages.map((st) => h('tr', {}, h('th', { scope: 'row' }, `stage ${st.stage} (rank ${st.rank})`),
    h('td', { class: 'num' }, sec(st.busy_seconds)), h('td', { class: 'num' }, sec(st.bubble_seconds)),
    h('td', { class: 'num' }, Object.entries(st.exposed_comm_seconds ?? {}).filter(([, v]) => v > 0).map(([k, v]) => `${k} ${sec(v)}`).join(', ') || '—'),
    h('td', { class: 'num' }, sec(st.end_seconds))));
  const table = h('div', { class: 'table-scroll', tabindex: 0, role: 'region', 'aria-label': 'Pipeline stages' },
    h('table', {}, h('caption', {}, 'Per stage (rank 0’s pipeline)'),
      h('thead', {}, h('tr', {}, ...['stage', 'compute busy', 'waiting (bubble)', 'exposed communication', 'done at'].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, ...rows)));
  // Communication hidden under compute vs exposed, summed over the stages (accessible text).
  let hiddenUs = 0, exposedUs = 0;
  for (const st of sim.stages) for (const e of st.timeline) if (!COMPUTE[e[2]]) { if (exposedOf(e)) exposedUs += e[1] - e[0]; else hiddenUs += e[1] - e[0]; }
  const canvas = h('canvas', { class: 'pipechart', role: 'img', 'aria-label': `Pipeline timeline: ${sim.stages.length} stages over ${sec(sim.step_seconds)}; communication hidden under compute ${fmtUs(hiddenUs)}, exposed ${fmtUs(exposedUs)} (summed over stages); the table below gives each stage’s busy, waiting and communication time` }) as HTMLCanvasElement;
  // The legend names the kinds this pipeline has.
  const kinds = new Set(sim.stages.flatMap((st) => st.timeline.map((e) => e[2])));
  const legend = h('ul', { class: 'legend' },
    ...Object.entries(COMPUTE).filter(([k]) => kinds.has(k)).map(([k, [c, name]]) => h('li', {}, h('span', { class: 'swatch', style: `background:${c}` }), `${k} ${name}`)),
    h('li', {}, h('span', { class: 'swatch', style: 'background:#f1f3f5;border:1px solid #868e96' }), 'gap: waiting'),
    ...['tp', 'cp', 'ep', 'pp', 'dp'].filter((k) => kinds.has(k)).map((k) => h('li', {}, h('span', { class: 'swatch', style: `background:${AXIS_COLOR[k]}` }), `${k} communication (thin lane under the stage)`)),
    ...(hiddenUs + exposedUs > 0 ? [
      h('li', {}, h('span', { class: 'swatch', style: 'background:#495057' }), 'communication solid: exposed (no compute beside it)'),
      h('li', {}, h('span', { class: 'swatch', style: 'background:repeating-linear-gradient(90deg,#495057 0 2px,#fff 2px 4px)' }), 'communication striped: hidden under compute')] : []));
  el.replaceChildren(h('h3', {}, 'Step time (simulated)'), cards, canvas, legend, table, bubbleNote(sim, ctx.pipeline) ?? '');
  el.dataset.fits = unfit ? 'false' : 'true';
  if (unfit) cards.classList.add('unfit');
  el.dataset.step = String(sim.step_seconds);
  el.dataset.stages = String(sim.stages.length);
  // Per stage: how many micro-batches run a forward block (for tests).
  el.dataset.forwardMicroBatches = sim.stages.map((st) => new Set(st.timeline.filter((e) => e[2] === 'F').map((e) => e[3])).size).join();
  drawPipeline(canvas, sim);
}

export function drawPipeline(c: HTMLCanvasElement, sim: Simulation): void {
  const rowH = 22, commH = 6, gap = 8, L = 70, top = 4;
  const W = c.clientWidth || 800, H = top + sim.stages.length * (rowH + commH + gap) + 18;
  const dpr = window.devicePixelRatio || 1;
  c.style.height = `${H}px`;
  c.width = W * dpr; c.height = H * dpr;
  const ctx = c.getContext('2d')!;
  ctx.scale(dpr, dpr);
  const T = Math.max(sim.step_seconds * 1e6, ...sim.stages.map((s) => s.end_seconds * 1e6), 1);
  const PW = W - L - 8, x = (us: number) => L + (us / T) * PW;
  ctx.font = '12px system-ui, sans-serif';
  sim.stages.forEach((st, i) => {
    const y = top + i * (rowH + commH + gap);
    ctx.fillStyle = '#212529';
    ctx.fillText(`stage ${st.stage}`, 4, y + 15);
    ctx.fillStyle = '#f1f3f5';
    ctx.fillRect(L, y, PW, rowH);
    for (const e of st.timeline) {
      const [a, b, kind] = e;
      const comp = COMPUTE[kind];
      ctx.fillStyle = comp ? comp[0] : AXIS_COLOR[kind] ?? '#868e96';
      const x0 = x(a), w = Math.max(1, x(b) - x0);
      if (comp) ctx.fillRect(x0, y, w, rowH);
      else if (exposedOf(e)) ctx.fillRect(x0, y + rowH + 1, w, commH);
      else hatch(ctx, x0, y + rowH + 1, w, commH);  // hidden under compute
    }
  });
  ctx.fillStyle = '#343a40';
  const yb = H - 4;
  ctx.fillText('0', L, yb);
  const end = sec(T / 1e6);
  ctx.fillText(end, W - 8 - ctx.measureText(end).width, yb);
}

// A hidden transfer: vertical stripes of the current colour (1.5 px every 3 px).
function hatch(ctx: CanvasRenderingContext2D, x0: number, y0: number, w: number, hh: number): void {
  ctx.save();
  ctx.beginPath();
  ctx.rect(x0, y0, w, hh);
  ctx.clip();
  for (let s = x0 - hh; s < x0 + w; s += 3) { ctx.fillRect(s, y0, 1.5, hh); }
  ctx.restore();
}
