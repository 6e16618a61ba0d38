// Page-side client of the engine worker: one promise per request, matched by
// id; long requests report progress and can be cancelled. If the worker
// dies, every pending request fails with engine_crashed and onCrash fires;
// restart() starts a fresh worker.
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
  onCrash: (message: string) => void = () => {};

  constructor() {
    this.start();
  }

  restart(): void {
    this.worker.terminate();
    this.failAll('engine restarted');
    this.start();
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
    this.worker = new Worker(new URL('./engine.worker.ts', import.meta.url), { type: 'module' });
    this.worker.onmessage = (e: MessageEvent<Response>) => {
      const msg = e.data;
      const p = this.pending.get(msg.id);
      if (!p) return;
      if ('progress' in msg) { p.onProgress?.(msg.progress); return; }
      this.pending.delete(msg.id);
      if (msg.ok) p.resolve(msg.result);
      else p.reject(new EngineRequestError(msg.error));
    };
    this.worker.onerror = (e: ErrorEvent) => {
      const message = e.message || 'the engine worker failed';
      this.failAll(message);
      this.onCrash(message);
    };
  }

  private failAll(message: string): void {
    for (const p of this.pending.values()) {
      p.reject(new EngineRequestError({ code: 'engine_crashed', message, path: '' }));
    }
    this.pending.clear();
  }
}
