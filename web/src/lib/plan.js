// Pure helpers of the Plan tab (web/src/views/plan.ts), in plain JS so that
// the shared JS suite (tests/js/suite/plan.mjs) runs them unchanged in Node
// and in headless Chromium. Input: the candidates of a plan answer
// (docs/plan.md: rank, layout, step_seconds, mfu, tokens_per_second,
// peak_memory_bytes, memory_capacity_bytes, bubble_fraction,
// exposed_comm_seconds {tp, cp, ep, pp, dp}, bound, job).

// The Pareto front of step time against peak memory per GPU, both to be
// minimised: a point is on the front when no other point is at least as
// good on both and strictly better on one. Equal points do not dominate
// each other, so duplicates of a front point are all on it. Returns one
// boolean per point, in input order. O(n log n): sort by time (then
// memory), sweep keeping the least memory seen among strictly faster
// points.
export function paretoFront(points) {
  const idx = points.map((_, i) => i);
  idx.sort((a, b) => points[a].step - points[b].step || points[a].mem - points[b].mem);
  const on = new Array(points.length).fill(false);
  let bestMem = Infinity;  // least memory among points strictly faster than the current group
  for (let i = 0; i < idx.length;) {
    // A group of equal step times: inside it only the least memory can be
    // on the front (the others are dominated by it at equal time).
    let j = i;
    while (j < idx.length && points[idx[j]].step === points[idx[i]].step) j++;
    const groupMin = points[idx[i]].mem;  // sorted by memory within the group
    for (let k = i; k < j; k++) {
      const p = points[idx[k]];
      on[idx[k]] = p.mem === groupMin && p.mem < bestMem;
    }
    bestMem = Math.min(bestMem, groupMin);
    i = j;
  }
  return on;
}

// Exposed communication of a candidate, all kinds together (seconds).
export function exposedTotal(c) {
  return Object.values(c.exposed_comm_seconds ?? {}).reduce((a, v) => a + (Number(v) || 0), 0);
}

// Sortable columns: key -> the value compared (numbers ascending; the
// layout column compares its text).
export const SORT_KEYS = {
  rank: (c) => c.rank,
  layout: (c) => layoutText(c.layout),
  step: (c) => c.step_seconds,
  mfu: (c) => c.mfu,
  tokens: (c) => c.tokens_per_second,
  memory: (c) => c.peak_memory_bytes,
  bubble: (c) => c.bubble_fraction,
  exposed: (c) => exposedTotal(c),
};

// A sorted copy; ties keep the plan's rank order (so a sort is stable and
// repeatable whatever order the rows were in before).
export function sortCandidates(cands, key, dir = 'asc') {
  const get = SORT_KEYS[key];
  if (!get) throw new Error(`unknown sort key ${key}`);
  const sign = dir === 'desc' ? -1 : 1;
  return [...cands].sort((a, b) => {
    const x = get(a), y = get(b);
    const d = typeof x === 'string' ? x.localeCompare(y) : x - y;
    return sign * d || a.rank - b.rank;
  });
}

// One line per layout, degrees of 1 and defaults left out:
// "tp 8 + sp · pp 4 × v 2 (interleaved-1f1b) · dp 16 · ZeRO 1 · mbs 1 · recompute selective"
// (a split other than the even one named after the pipeline).
export function layoutText(l) {
  if (!l) return '';
  const parts = [];
  if ((l.tp ?? 1) > 1) parts.push(`tp ${l.tp}${l.sp ? ' + sp' : ''}`);
  if ((l.cp ?? 1) > 1) parts.push(`cp ${l.cp}`);
  if ((l.pp ?? 1) > 1) parts.push(`pp ${l.pp}${(l.vp ?? 1) > 1 ? ` × v ${l.vp}` : ''}${l.schedule ? ` (${l.schedule})` : ''}`);
  // The pipeline split, when not the even (or balanced) one: the
  // embedding and the loss alone in the end chunks (Llama 3's), or counted
  // as layers of the split (Megatron's account_for_*_in_pipeline_split).
  if (l.empty_end_chunks) parts.push('embedding/loss-only end chunks');
  if (l.embedding_loss_in_split) parts.push('embedding + loss counted in the split');
  parts.push(`dp ${l.dp ?? 1}`);
  if ((l.ep ?? 1) > 1) parts.push(`ep ${l.ep}${l.expert_tp !== undefined && l.expert_tp !== l.tp ? ` etp ${l.expert_tp}` : ''}`);
  // The shard group is dp·cp unless HSDP shards over fewer ranks.
  const hsdp = l.shard_group > 0 && l.shard_group < (l.dp ?? 1) * (l.cp ?? 1);
  if ((l.zero ?? 0) > 0) parts.push(`ZeRO ${l.zero}${hsdp ? ` (HSDP, shard ${l.shard_group})` : ''}`);
  parts.push(`mbs ${l.micro_batch_size ?? 1}`);
  if (l.recompute && l.recompute !== 'none') parts.push(`recompute ${l.recompute}`);
  // Rank order, innermost first; Megatron's [tp, cp, dp, pp] is the default.
  const order = Array.isArray(l.order) ? l.order.join('-') : l.order;
  const named = { 'tp-cp-dp-pp': 'megatron', 'tp-cp-pp-dp': 'llama3' }[order] ?? order;
  if (named && named !== 'megatron') parts.push(`order ${named}`);
  return parts.join(' · ');
}

// The parallel/training fields of the job the editor shows, replaced by a
// candidate's layout. The planner hands each candidate's full job (the one
// to load); this is for checking that the job it hands is that layout.
export function layoutOfJob(job) {
  const p = job.parallel ?? {}, t = job.training ?? {};
  return {
    tp: p.tp ?? 1, sp: p.sequence_parallel ?? false, cp: p.cp ?? 1, pp: p.pp ?? 1, vp: p.virtual_stages ?? 1,
    dp: p.dp ?? 1, ep: p.ep ?? 1, zero: p.zero ?? 0, micro_batch_size: t.micro_batch_size ?? 1,
    recompute: t.recompute ?? 'none',
  };
}

// How much slower step b is than step a, in words with a precision that
// means something: "ties" when the steps are equal (or differ by less
// than 1e-9 of a step: float noise), else the relative gap with two
// significant digits (at least one decimal: "0.41 %", "12 %", "0.0032 %")
// and the absolute one in the unit that suits it ("12.3 ms", "1.25 s").
export function gapText(a, b) {
  const d = b - a;
  if (!(Math.abs(d) > 1e-9 * Math.max(Math.abs(a), Math.abs(b)))) return 'ties';
  const rel = (100 * Math.abs(d)) / Math.abs(b || a);
  const digits = Math.max(1, 1 - Math.floor(Math.log10(rel)));
  return `${d > 0 ? '' : '−'}${rel.toFixed(digits)} % (${secondsText(Math.abs(d))})`;
}

// Seconds with three significant digits in s, ms or µs.
export function secondsText(x) {
  const sig = (v) => {
    const r = Number(v.toPrecision(3));  // rounded first: 9.9999 is "10.0", not "10.00"
    return r.toFixed(r >= 100 ? 0 : r >= 10 ? 1 : 2);
  };
  if (x >= 1) return `${sig(x)} s`;
  if (x >= 1e-3) return `${sig(x * 1e3)} ms`;
  return `${sig(x * 1e6)} µs`;
}

// Seconds left in a phase at its rate so far: elapsed × (total − done) /
// done; null before anything is done or when the phase is done.
export function remainingSeconds(done, total, elapsed) {
  if (!(done > 0) || !(total > done) || !(elapsed >= 0)) return null;
  return (elapsed * (total - done)) / done;
}

// One line naming the layouts that simulate exactly as a row's own
// (the planner's `alternatives`: they differ only in recompute).
export function alternativesText(c) {
  const alts = c.alternatives ?? [];
  if (!alts.length) return '';
  return `same step with ${alts.map((a) => `recompute ${a.recompute}`).join(', ')}`;
}
