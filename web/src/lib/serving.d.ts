import type { SweepPoint } from '../protocol';
export function sweepConcurrencies(max: number, own?: number, limit?: number, step?: number): number[];
export function niceCeil(v: number): number;
export function curvePoints(sweep: SweepPoint[], w: number, h: number, y?: 'tpot' | 'user'):
  { xMax: number; yMax: number; points: (SweepPoint & { y: number; px: number; py: number })[] };
