import type { SweepPoint } from '../protocol';
export function sweepConcurrencies(max: number, own?: number, limit?: number, step?: number): number[];
export function niceCeil(v: number): number;
export function curvePoints(sweep: SweepPoint[], w: number, h: number, y?: 'tpot' | 'user'):
  { xMax: number; yMax: number; points: (SweepPoint & { y: number; px: number; py: number })[] };
export interface RequestClassFigures { prompt_tokens: number; output_tokens: number; share: number; kv_cache_bytes_per_sequence: number; prefill_seconds: number; ttft_seconds: number }
export function parseRequests(text: string): unknown;
export function formatRequests(v: unknown): string;
export function mixMean(classes: RequestClassFigures[], f: (c: RequestClassFigures) => number): number;
