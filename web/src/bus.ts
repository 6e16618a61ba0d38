// A tiny event bus: how one view reaches another without importing it
// (the web code's modules form one direction: protocol, util, lib, state
// and this bus at the bottom, views above them, main.ts on top; a view that
// must make another act emits an event the other listens to, so no two
// views import each other). tests/js/import-cycles.mjs fails on a cycle.
export interface Events {
  /** A view tab was shown (tabs.ts): views with canvases redraw. */
  'tab-shown': string;
  /** A pipeline stage's graph was loaded (graph-panel.ts). */
  'graph-loaded': number;
  /** Show this pipeline stage in the graph view (rank-panel.ts asks). */
  'show-stage': number;
  /** A rank's preview was drawn (rank-panel.ts). */
  'rank-shown': number;
  /** Show this view tab (any view may ask). */
  'select-tab': string;
}

type Listener<K extends keyof Events> = (value: Events[K]) => void;
const listeners = new Map<keyof Events, Listener<any>[]>();

export function on<K extends keyof Events>(event: K, fn: Listener<K>): void {
  listeners.set(event, [...(listeners.get(event) ?? []), fn]);
}

export function emit<K extends keyof Events>(event: K, value: Events[K]): void {
  for (const fn of listeners.get(event) ?? []) fn(value);
}
