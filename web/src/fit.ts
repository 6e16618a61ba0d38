// Does the job fit in GPU memory? From the engine's summary (docs/summary.md):
// a training job's every pipeline stage's `peak_live` (what the GPU must hold
// at the worst moment) against the GPU's `capacity`; a serving job's
// `inference.memory_bytes_per_rank` total against its capacity, or no
// sequence fitting beside the weights. A job that does not fit still gets a
// step time from the simulator: every view that shows a time marks it as
// what it would be, if it fitted (issue 25).
export interface Fit {
  fits: boolean;
  /** The stage with the highest peak (training) or -1 (serving). */
  stage: number;
  need: number;      // bytes per GPU at the worst stage
  capacity: number;  // bytes per GPU
  text: string;      // one sentence, in words
}

type Summary = Record<string, any>;

const gib = (b: number) => `${(b / 2 ** 30).toFixed(b < 10 * 2 ** 30 ? 2 : 1)} GiB`;

export function fitOf(summary: Summary | null | undefined): Fit | null {
  if (!summary) return null;
  const inf = summary.inference;
  if (inf) {
    const m = inf.memory_bytes_per_rank ?? {};
    const need = Number(m.total) || 0, capacity = Number(m.capacity) || 0;
    const noSeq = Number(inf.max_concurrent_sequences) === 0;
    const fits = !noSeq && (!capacity || need <= capacity);
    return { fits, stage: -1, need, capacity,
      text: fits ? `Fits: ${gib(need)} of ${gib(capacity)} per GPU.`
        : noSeq ? `Does not fit: no sequence fits beside the weights (${gib(Number(m.weights) || 0)} of ${gib(capacity)} per GPU).`
        : `Does not fit: ${gib(need)} per GPU, the GPU has ${gib(capacity)}.` };
  }
  const stages: Summary[] = summary.stages ?? [];
  let stage = 0, need = 0, capacity = 0;
  stages.forEach((st, i) => {
    const mem = st.memory_bytes ?? {};
    const peak = Number(mem.peak_live) || 0;
    if (peak > need) { need = peak; stage = i; capacity = Number(mem.capacity) || 0; }
  });
  if (!capacity) capacity = Number(stages[0]?.memory_bytes?.capacity) || 0;
  const fits = !capacity || need <= capacity;
  const where = stages.length > 1 ? ` (pipeline stage ${stage}, the fullest)` : '';
  return { fits, stage, need, capacity,
    text: fits ? `Fits: ${gib(need)} of ${gib(capacity)} per GPU${where}.`
      : `Does not fit: ${gib(need)} per GPU${where}, the GPU has ${gib(capacity)}.` };
}

/** The label a time carries when its job does not fit. */
export const IF_IT_FITTED = 'would be, if it fitted';
