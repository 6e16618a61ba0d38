// Types the state and several views share (kept below the views so that
// state.ts needs no view module).
import type { ChakraNode } from './lib/chakra';
import type { Schedule } from './lib/schedule';
import type { RankInfo } from './protocol';

// The graph view's selection. stage: the pipeline stage whose graph is
// shown (graph_json is per stage). layer: a layer, -1 for the ops outside
// layers, ALL_LAYERS (views/graph.ts) for the whole stage with one box per
// layer (expanded: the layers in `expanded`).
export interface GraphViewState { stage: number; layer: number; phases: Set<string>; selected: number | null; expanded: Set<number> }

// One rank's decoded trace, schedule and memory (the rank preview).
export interface Preview {
  rank: number;
  phase?: string;  // inference jobs: prefill | decode | mixed
  info: RankInfo;
  nodes: ChakraNode[];
  sched: Schedule;
  memory: { points: [number, number][]; peak: number };
  capacity: number;
  staticBytes: number;  // weights + gradients + optimizer state of the rank's stage
  bytes: number;  // size of the .et file
}
