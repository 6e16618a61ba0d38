// The app's mutable state, in one place: the job being shown, what the
// engine answered for it, and the generation counter that tells a stale
// answer from a current one. Views read it; main.ts (the controller) writes it.
import { EngineClient } from './client';
import type { GraphJson, Simulation } from './protocol';
import type { Fit } from './fit';
import type { GraphViewState, Preview } from './types';

export type Summary = Record<string, any>;  // docs/summary.md
export interface Pinned { jobText: string; summary: Summary | null; simulation: Simulation | null; error?: string;
  /** Its figures are being computed on the compare worker. */
  computing?: boolean }

export const state = {
  /** The job JSON text of the latest edit (what the URL carries). */
  jobText: '',
  /** Bumped by every edit; an answer for an older generation is dropped. */
  generation: 0,
  /** The summary shown, and the job text it belongs to. */
  summary: null as Summary | null,
  summaryJob: '',
  graph: null as GraphJson | null,
  graphJob: '',
  preview: null as (Preview & { raw?: Uint8Array }) | null,
  /** The simulated step of `simJob` (training jobs), and whether it fits. */
  simulation: null as Simulation | null,
  simJob: '',
  fit: null as Fit | null,
  /** Compare: job A, pinned (its text, summary and simulation). */
  pinned: null as Pinned | null,
  gstate: { stage: 0, layer: 0, phases: new Set(['fwd']), selected: null, expanded: new Set<number>() } as GraphViewState,
};

/** True while `gen` is the latest edit. */
export const current = (gen: number) => gen === state.generation;

// The engine for the views (one request at a time matters: an edit drops
// what the previous edit started). Archives get their own worker, created
// on first use, so an edit never kills a download in progress.
export const client = new EngineClient();
let archiveEngine: EngineClient | null = null;
export const archiveClient = () => (archiveEngine ??= new EngineClient());
// The Plan tab's own worker: a plan runs for seconds to a minute, so edits
// must not kill it, and its Cancel (a worker restart) must not kill theirs.
let planEngine: EngineClient | null = null;
export const planClient = () => (planEngine ??= new EngineClient());
// Compare's own worker: job A's figures are computed beside B's edits,
// which must not supersede them.
let compareEngine: EngineClient | null = null;
export const compareClient = () => (compareEngine ??= new EngineClient());
