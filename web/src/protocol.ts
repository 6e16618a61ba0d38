// The page <-> engine-worker message protocol (docs/wasm-bridge.md).
// Versioned so that a stale cached worker and a new page fail loudly:
//   request  {v: 1, id, type, payload}
//   response {v: 1, id, ok: true, result} | {v: 1, id, ok: false, error}
// Errors travel as data; the UI branches on error.code, never on message.

export const PROTOCOL_VERSION = 1;

// A job JSON object (schema: core/job/job.h).
export type JobJson = Record<string, unknown>;

export interface EngineError {
  code: string;     // core codes (invalid_argument, not_divisible, ...) or
                    // protocol codes: protocol_version, bad_request,
                    // engine_unavailable, engine_crashed
  message: string;
  path: string;     // job path of the field at fault ("parallel.tp"), or ""
}

// type -> [payload, result]
export interface Methods {
  version: [Record<string, never>, { version: string }];
  presets: [Record<string, never>, { presets: string[] }];
  inspect: [{ job: JobJson }, { summary: Record<string, unknown> }];
  graph: [{ job: JobJson }, { text: string }];
  groups: [{ job: JobJson }, { worldSize: number; text: string }];
  // bytes: the complete .et file, transferred (not copied) to the page.
  rankTrace: [{ job: JobJson; rank: number }, { bytes: ArrayBuffer }];
}
export type MethodName = keyof Methods;

export interface Request<T extends MethodName = MethodName> {
  v: typeof PROTOCOL_VERSION;
  id: number;
  type: T;
  payload: Methods[T][0];
}

export type Response<T extends MethodName = MethodName> =
  | { v: typeof PROTOCOL_VERSION; id: number; ok: true; result: Methods[T][1] }
  | { v: typeof PROTOCOL_VERSION; id: number; ok: false; error: EngineError };
