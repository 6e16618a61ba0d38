// Page-side client of the engine worker: one promise per request, matched by
// id; long requests report progress and can be cancelled.
//
// Engine calls are synchronous inside the worker, so a request that is no
// longer wanted (the user typed another digit) cannot be interrupted there:
// supersede() terminates the worker and starts a fresh one, failing what was
// pending with code `superseded` (callers drop those). A worker that dies
// (uncaught error) or whose wasm instance aborted (`engine_aborted`) is
// replaced the same way, so the app never stays without an engine; onCrash
// tells the page why.
import { PROTOCOL_VERSION, type EngineError, type MethodName, type Methods, type Progress, type Response } from './protocol';

export class EngineRequestError extends Error {
  constructor(readonly error: EngineError) {
    super(error.path ? `${error.path}: ${error.message}` : error.message);
  }
}

type Pending = { resolve: (r: unknown) => void; reject: (e: EngineRequestError) => void; onProgress?: (p: Progress) => void };

export interface Call<R> { id: number; promise: Promise<R>; cancel(): void }

export class EngineClient {
  private worker!: Worker;
  private nextId = 1;
  private pending = new Map<number, Pending>();
  /** Workers started so far (1 + respawns); for tests and the status line. */
  spawned = 0;
  onCrash: (error: EngineError) => void = () => {};

  constructor() {
    this.start();
  }

  /** Requests sent and not yet answered. */
  get busy(): number { return this.pending.size; }

  restart(code = 'engine_restarted', message = 'engine restarted'): void {
    this.worker.terminate();
    this.failAll(code, message);
    this.start();
  }

  // Drops every request in flight (their promises reject with `superseded`)
  // by replacing the worker; a no-op when it is idle. Returns whether it had
  // to replace it.
  supersede(): boolean {
    if (this.pending.size === 0) return false;
    this.restart('superseded', 'a newer request replaced this one');
    return true;
  }

  request<T extends MethodName>(type: T, payload: Methods[T][0]): Promise<Methods[T][1]> {
    return this.call(type, payload).promise;
  }

  // Like request(), with progress reports and a cancel() handle.
  call<T extends MethodName>(type: T, payload: Methods[T][0], onProgress?: (p: Progress) => void): Call<Methods[T][1]> {
    const id = this.nextId++;
    const promise = new Promise<Methods[T][1]>((resolve, reject) => {
      this.pending.set(id, { resolve: resolve as (r: unknown) => void, reject, onProgress });
      this.worker.postMessage({ v: PROTOCOL_VERSION, id, type, payload });
    });
    const cancel = () => {
      if (this.pending.has(id)) this.worker.postMessage({ v: PROTOCOL_VERSION, id: this.nextId++, type: 'cancel', payload: { target: id } });
    };
    return { id, promise, cancel };
  }

  private start(): void {
    this.spawned++;
    const worker = new Worker(new URL('./engine.worker.ts', import.meta.url), { type: 'module' });
    this.worker = worker;
    worker.onmessage = (e: MessageEvent<Response>) => {
      if (worker !== this.worker) return;  // a replaced worker's late answer
      const msg = e.data;
      const p = this.pending.get(msg.id);
      if (!p) return;
      if ('progress' in msg) { p.onProgress?.(msg.progress); return; }
      this.pending.delete(msg.id);
      if (msg.ok) { p.resolve(msg.result); return; }
      p.reject(new EngineRequestError(msg.error));
      // The wasm instance is unusable after an abort: start a fresh worker
      // (and so a fresh instance with its memory released).
      if (msg.error.code === 'engine_aborted') { this.restart('engine_aborted', msg.error.message); this.onCrash(msg.error); }
    };
    worker.onerror = (e: ErrorEvent) => {
      if (worker !== this.worker) return;
      e.preventDefault();
      const error = { code: 'engine_crashed', message: e.message || 'the engine worker stopped', path: '' };
      this.restart(error.code, error.message);
      this.onCrash(error);
    };
  }

  private failAll(code: string, message: string): void {
    for (const p of this.pending.values()) p.reject(new EngineRequestError({ code, message, path: '' }));
    this.pending.clear();
  }
}
