export interface PlanLayout {
  tp: number; sp: boolean; cp: number; pp: number; vp: number; schedule: string; dp: number;
  zero: number; shard_group?: number; ep: number; expert_tp?: number; recompute: string;
  micro_batch_size: number; order?: string[] | string;  // innermost first
  empty_end_chunks?: boolean;          // the embedding and the loss alone in the end chunks
  embedding_loss_in_split?: boolean;   // the embedding and the loss counted as layers of the split
}
export interface PlanCandidate {
  rank: number; layout: PlanLayout; step_seconds: number; mfu: number; tokens_per_second: number;
  tokens_per_second_per_gpu: number; peak_memory_bytes: number; memory_capacity_bytes: number;
  bubble_fraction: number; exposed_comm_seconds: Record<string, number>; bound: string;
  job: Record<string, unknown>;
  alternatives?: PlanLayout[];   // same step, differing only in recompute
  low_confidence?: string[];     // why the simulator's figure is less sure here
}
export interface PlanMiss { layout: PlanLayout; reason: string; short_by_bytes?: number }
export interface Plan {
  gpus: number; objective: string;
  counts: { considered: number; rejected: Record<string, number>; simulated: number; unexamined?: number };
  min_gpus_lower_bound?: number;
  // Nothing fits: the smallest GPU count found that does (docs/plan.md, "When nothing fits").
  smallest_fit?: { gpus: number; layout?: PlanLayout; peak_memory_bytes?: number; from: number; largest_without: number;
    counts_tried: number; every_count: boolean; stopped: boolean };
  candidates: PlanCandidate[]; why_winner: string; closest_misses: PlanMiss[]; complete: boolean;
  [k: string]: unknown;
}
export type SortKey = 'rank' | 'layout' | 'step' | 'mfu' | 'tokens' | 'memory' | 'bubble' | 'exposed';
export function paretoFront(points: { step: number; mem: number }[]): boolean[];
export function exposedTotal(c: PlanCandidate): number;
export const SORT_KEYS: Record<SortKey, (c: PlanCandidate) => number | string>;
export function sortCandidates(cands: PlanCandidate[], key: SortKey, dir?: 'asc' | 'desc'): PlanCandidate[];
export function layoutText(l: PlanLayout | undefined): string;
export function layoutOfJob(job: Record<string, any>): Partial<PlanLayout>;
export function gapText(a: number, b: number): string;
export function secondsText(x: number): string;
export function remainingSeconds(done: number, total: number, elapsed: number): number | null;
export function alternativesText(c: PlanCandidate): string;
