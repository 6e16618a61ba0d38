import type { ChakraNode } from './chakra';
export const COMPUTE: 0;
export const COMM: 1;
export interface GroupLink { size: number; intraNode: boolean }
export interface Schedule { start: Float64Array; end: Float64Array; stream: Uint8Array; makespan: number; busy: [number, number] }
export function schedule(nodes: ChakraNode[], hw: { intra_node_bw?: number; inter_node_bw?: number } | undefined, groups?: Map<string, GroupLink>): Schedule;
export interface LiveTimeline { nodes_per_point: number; bytes: number[] }
export function memoryOverTime(nodes: ChakraNode[], sched: Schedule, staticBytes: number, live: LiveTimeline | undefined): { points: [number, number][]; peak: number };
export function toPerfetto(rank: number, nodes: ChakraNode[], sched: Schedule, meta?: Record<string, unknown>): { traceEvents: Record<string, unknown>[]; displayTimeUnit: string; otherData: Record<string, unknown> };
