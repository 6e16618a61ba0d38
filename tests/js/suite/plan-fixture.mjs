// TEST FIXTURE ONLY: a hand-made plan answer in the shape of docs/plan.md
// (`stagecraft plan --json`), not engine output. Eight layouts of the 2-layer
// GPT-3 1.7B job on 8 GPUs with invented times and memory, chosen so that
// the Pareto front and every sort order can be worked out by hand (below).
// Used by suite/plan.mjs (pure helpers) and app-ux.mjs (the Plan tab draws
// it through stagecraftApp.showPlan).
//
//   rank  step s  peak GiB   Pareto front (minimise both)?
//    1    1.0     70        yes
//    2    1.0     75        no: #1 is as fast and smaller
//    3    1.1     60        yes
//    4    1.2     50        yes
//    5    1.2     50        yes (equal to #4: equal points do not dominate)
//    6    1.3     55        no: #4 is faster and smaller
//    7    1.5     40        yes
//    8    2.0     40        no: #7 is faster with the same memory
export const PLAN_FRONT_RANKS = [1, 3, 4, 5, 7];

const GIB = 1024 ** 3;
const BASE = { model: { preset: 'gpt3-1.7b', num_layers: 2 }, training: { seq_len: 256, global_batch_size: 16 } };
const TOKENS = 16 * 256;  // global batch × sequence

function candidate(rank, step, gib, mfu, bubble, exposed, p) {
  const layout = { tp: p.tp ?? 1, sp: p.sp ?? false, cp: 1, pp: p.pp ?? 1, vp: 1, schedule: '1f1b', dp: p.dp, zero: p.zero ?? 0,
    shard_group: 0, ep: 1, expert_tp: p.tp ?? 1, recompute: p.recompute ?? 'none', micro_batch_size: p.mbs ?? 1, order: ['tp', 'cp', 'dp', 'pp'] };
  const job = {
    ...BASE,
    parallel: { tp: layout.tp, sequence_parallel: layout.sp, pp: layout.pp, dp: layout.dp, zero: layout.zero },
    training: { ...BASE.training, micro_batch_size: layout.micro_batch_size, recompute: layout.recompute, schedule: '1f1b' },
  };
  return { rank, layout, step_seconds: step, mfu, tokens_per_second: TOKENS / step, tokens_per_second_per_gpu: TOKENS / step / 8,
    peak_memory_bytes: gib * GIB, memory_capacity_bytes: 80 * GIB, bubble_fraction: bubble, exposed_comm_seconds: exposed,
    bound: bubble > 0 ? 'bubble' : 'compute', job };
}

const PLAN_BASE_FIXTURE = {
  gpus: 8,
  objective: 'step_time',
  counts: { considered: 40, rejected: { divisibility: 20, memory: 6, dominated: 4, bound: 2 }, simulated: 8 },
  candidates: [
    candidate(1, 1.0, 70, 0.40, 0, { dp: 0.05 }, { dp: 8, mbs: 2 }),
    candidate(2, 1.0, 75, 0.40, 0, { dp: 0.05 }, { dp: 8, mbs: 2, recompute: 'selective' }),
    candidate(3, 1.1, 60, 0.36, 0, { tp: 0.02, dp: 0.04 }, { tp: 2, dp: 4 }),
    candidate(4, 1.2, 50, 0.33, 0, { tp: 0.04 }, { tp: 2, sp: true, dp: 4, zero: 1 }),
    candidate(5, 1.2, 50, 0.33, 0, { tp: 0.10 }, { tp: 4, dp: 2 }),
    candidate(6, 1.3, 55, 0.31, 0.2, { pp: 0.01, dp: 0.02 }, { pp: 2, dp: 4 }),
    candidate(7, 1.5, 40, 0.27, 0, { tp: 0.2 }, { tp: 8, dp: 1 }),
    candidate(8, 2.0, 40, 0.20, 0.25, { tp: 0.1, pp: 0.05 }, { tp: 4, pp: 2, dp: 1 }),
  ],
  why_winner: '#1 beats #2: the same step time with 5 GiB less memory (hand-made fixture).',
  closest_misses: [],
  complete: true,
};
// #1 names a same-step alternative (recompute full) and #3 a low-confidence
// note, as the planner's JSON does (docs/plan.md).
export const PLAN_FIXTURE = {
  ...PLAN_BASE_FIXTURE,
  candidates: PLAN_BASE_FIXTURE.candidates.map((c) => (c.rank === 1 ? { ...c, alternatives: [{ ...c.layout, recompute: 'full' }] }
    : c.rank === 3 ? { ...c, low_confidence: ['hand-made note: exposed communication is 30 % of the step'] } : c)),
};
export const PLAN_NOTE_ALT = 'same step with recompute full';
export const PLAN_NOTE_LOW = 'low confidence: hand-made note: exposed communication is 30 % of the step';

// Two layouts 40 µs apart on a 1 s step, with the engine's three-decimal
// why line ("by 0.000 s (0.0%)"): the tab says 0.00004 / 1.00004 =
// 0.0040 % (two significant digits) and 40.0 µs instead.
export const PLAN_TINY_GAP = {
  ...PLAN_BASE_FIXTURE,
  candidates: [candidate(1, 1.0, 70, 0.40, 0, { dp: 0.05 }, { dp: 8, mbs: 2 }), candidate(2, 1.00004, 60, 0.40, 0, { dp: 0.05 }, { tp: 2, dp: 4 })],
  why_winner: 'beats #2 by 0.000 s (0.0%) with tp 1 instead of 2: mostly 0.000 s less compute',
};
export const PLAN_TINY_GAP_TEXT = 'beats #2 by 0.0040 % (40.0 µs) with tp 1 instead of 2: mostly less compute';

// Hand-derived orders (ties keep the rank order).
export const PLAN_SORTS = {
  'memory asc': [7, 8, 4, 5, 6, 3, 1, 2],   // 40 40 50 50 55 60 70 75 GiB
  'memory desc': [2, 1, 3, 6, 4, 5, 7, 8],
  'tokens asc': [8, 7, 6, 4, 5, 3, 1, 2],   // tokens/s = 4096 / step
  'exposed asc': [6, 4, 1, 2, 3, 5, 8, 7],  // 0.03 0.04 0.05 0.05 0.06 0.10 0.15 0.20 s
  'bubble desc': [8, 6, 1, 2, 3, 4, 5, 7],  // 0.25 0.2, then zeros by rank
};

// The same job when nothing fits: the shape of the "closest misses".
export const PLAN_NOTHING_FITS = {
  gpus: 8, objective: 'step_time',
  counts: { considered: 40, rejected: { divisibility: 30, memory: 10, dominated: 0, bound: 0 }, simulated: 0 },
  candidates: [], why_winner: '',
  closest_misses: [
    { layout: PLAN_FIXTURE.candidates[6].layout, reason: 'does not fit in memory', short_by_bytes: 3 * GIB },
    { layout: { ...PLAN_FIXTURE.candidates[6].layout, tp: 3, dp: 1 }, reason: 'tp 3 does not divide the 32 attention heads' },
  ],
  complete: true,
};
