import type { ChakraNode } from './chakra';
export const COMM_COLL: 7, COMM_SEND: 5, COMM_RECV: 6;
export function wireBytes(commType: number, commSize: number, g: number): number;
export const WIRE_FACTOR: Record<number, string>;
export interface WireRow { kind: string; size: number; ops: number; buffer: number; sent: number; received: number }
export function wireByGroupKind(nodes: ChakraNode[], groupOf: (pg: string) => { axis: string; size: number } | undefined):
  { rows: WireRow[]; total: { ops: number; buffer: number; sent: number; received: number } };
