export interface ChakraNode {
  id: number;
  name: string;
  type: number;
  typeName: string;
  deps: number[];
  duration: number;
  attrs: Record<string, number | string | boolean | undefined>;
}
export interface ChakraTrace {
  version: string;
  metadata: Record<string, number | string | boolean | undefined>;
  nodes: ChakraNode[];
}
export const COMM_TYPE_NAMES: Record<number, string>;
export function decodeTrace(bytes: Uint8Array): ChakraTrace;
