/// <reference lib="webworker" />
// The engine worker: owns the wasm module and answers protocol requests
// (protocol.ts). Engine calls are synchronous and can take a while on large
// jobs, which is why they run here and not on the page. The archive request
// is the one long loop over the engine's archive entries: it yields between
// ranks so that a cancel message can arrive, and posts progress.
import { Zip, ZipPassThrough } from 'fflate';
import { PROTOCOL_VERSION, type EngineError, type Plan, type Request, type Response } from './protocol';

// The Embind functions of wasm/bridge.cc.
interface WasmEngine {
  version(): string;
  presets(): string;
  inspect(job: string, phase?: string): string;  // overloaded: an inference job's phase
  graph(job: string): string;
  graphJson(job: string, stage?: number): string;  // overloaded: (job) is stage 0
  groups(job: string, phase?: string): string;  // overloaded: phase for inference jobs
  rankInfo(job: string, rank: number, phase?: string): string;
  rankAt(job: string, coords: string): string;
  rankTrace(job: string, rank: number, phase?: string): { ok: true; bytes: Uint8Array } | { ok: false; error: EngineError };
  servingSweep?(job: string, args: string): string;  // inference jobs (docs/inference.md)
  servingCapacity?(job: string, args: string): string;  // inference jobs: the capacity search
  simulate?(job: string, options: string): string;  // engines with core/sim (docs/simulate.md)
  archiveManifest(job: string, layout: string, prefix: string, sizes: boolean, phase?: string): string;  // overloaded: an inference job's phase
  archiveEntry(job: string, layout: string, prefix: string, name: string, phase?: string): { ok: true; bytes: Uint8Array } | { ok: false; error: EngineError };
  // The planner (docs/plan.md): args is {"gpus","constraints"} as JSON text;
  // onProgress is called synchronously from inside the search.
  // onPartial(planJson), overload of 4 arguments: the best so far each time
  // it changes (complete false), also from inside the search.
  plan?(job: string, args: string, onProgress: (done: number, total: number, phase: string) => void,
    onPartial?: (planJson: string) => void): string;
}

declare const self: DedicatedWorkerGlobalScope;

// Served from public/wasm/ (copied there by .ci/build); imported by URL at
// run time so that Vite leaves Emscripten's loader alone.
const wasmUrl = new URL(`${import.meta.env.BASE_URL}wasm/stagecraft_wasm.js`, self.location.href).href;
let engine: Promise<WasmEngine> | null = null;

function loadEngine(): Promise<WasmEngine> {
  engine ??= import(/* @vite-ignore */ wasmUrl).then((m) =>
    m.default({ locateFile: (file: string) => new URL(file, wasmUrl).href }));
  return engine;
}

type Reply = { ok: true; result: unknown } | { ok: false; error: EngineError };

const fail = (code: string, message: string, path = ''): { ok: false; error: EngineError } =>
  ({ ok: false, error: { code, message, path } });

// The bridge answers JSON strings: {"ok":true,...} or {"ok":false,"error"}.
function fromJson(text: string): Reply {
  const parsed = JSON.parse(text) as { ok: boolean; error?: EngineError } & Record<string, unknown>;
  if (!parsed.ok) return { ok: false, error: parsed.error! };
  const { ok: _ok, ...result } = parsed;
  return { ok: true, result };
}

const cancelled = new Set<number>();
const post = (msg: Response, transfer: Transferable[] = []) => self.postMessage(msg, transfer);
// Lets queued messages (cancel) run between ranks.
const yieldToEvents = () => new Promise<void>((r) => setTimeout(r, 0));

interface ArchiveManifest { entries: { name: string; kind: 'trace' | 'file' | 'manifest'; rank?: number; part?: string }[] }

// The zip is the engine's archive list (archiveManifest, layout "files":
// core/api/export.h), each entry's bytes from archiveEntry: the same files,
// in the same order, as `stagecraft generate -o DIR`. For an inference job
// that list is already the whole archive (docs/export.md "Inference jobs"):
// one folder per part (prefill/, decode/, mixed/ or kv_transfer/), then the
// job's summary.json.
async function archive(wasm: WasmEngine, id: number, job: string, prefix: string): Promise<Reply> {
  const m = fromJson(wasm.archiveManifest(job, 'files', prefix, false));
  if (!m.ok) return m;
  const entries = (m.result as { manifest: ArchiveManifest }).manifest.entries;
  const total = entries.filter((e) => e.kind === 'trace').length;
  const chunks: Uint8Array[] = [];
  let bytes = 0, files = 0, zipError: Error | null = null, finished = false;
  const zip = new Zip((err, chunk, final) => {
    if (err) { zipError = err; return; }
    chunks.push(chunk);
    bytes += chunk.length;
    if (final) finished = true;
  });
  const add = (name: string, data: Uint8Array) => {
    // Stored, not deflated: protobuf traces compress poorly and storing keeps
    // the archive fast; the files are byte-identical to the CLI's.
    const f = new ZipPassThrough(name);
    zip.add(f);
    f.push(data, true);
    files++;
  };
  let last = 0, done = 0;
  for (const e of entries) {
    if (cancelled.delete(id)) { zip.terminate(); return fail('cancelled', 'archive cancelled'); }
    const r = wasm.archiveEntry(job, 'files', prefix, e.name);
    if (!r.ok) return { ok: false, error: r.error };
    add(e.name, r.bytes);
    if (zipError) return fail('engine_unavailable', String(zipError));
    if (e.kind !== 'trace') continue;
    done++;
    const now = performance.now();
    if (now - last > 50 || done === total) {
      last = now;
      post({ v: PROTOCOL_VERSION, id, progress: { done, total, phase: e.part ?? 'traces' } });
      await yieldToEvents();
    }
  }
  zip.end();
  if (zipError || !finished) return fail('engine_unavailable', `zip failed: ${String(zipError)}`);
  const blob = new Blob(chunks as BlobPart[], { type: 'application/zip' });
  return { ok: true, result: { blob, bytes, files } };
}

// selfTestHold: how long each later request holds this worker busy (ms).
let holdMs = 0;

async function handle(req: Request): Promise<{ reply: Reply; transfer: Transferable[] }> {
  const payload = (req.payload ?? {}) as { job?: unknown; rank?: unknown; stage?: unknown; coords?: unknown; target?: unknown; prefix?: unknown; phase?: unknown; concurrency?: unknown; ms?: unknown };
  if (req.type === 'cancel') {
    if (typeof payload.target === 'number') cancelled.add(payload.target);
    return { reply: { ok: true, result: { cancelled: true } }, transfer: [] };
  }
  if (req.type === 'selfTestHold') {
    if (typeof payload.ms !== 'number' || !(payload.ms >= 0 && payload.ms <= 60_000)) return { reply: fail('bad_request', 'ms must be a number in [0, 60000]', 'ms'), transfer: [] };
    holdMs = payload.ms;
    return { reply: { ok: true, result: { ms: holdMs } }, transfer: [] };
  }
  // Synchronous, as the engine's own calls are: the worker answers nothing
  // else meanwhile.
  for (const end = performance.now() + holdMs; performance.now() < end;);
  const wasm = await loadEngine();
  const job = typeof payload.job === 'string' ? payload.job : JSON.stringify(payload.job ?? null);
  const none: Transferable[] = [];
  switch (req.type) {
    case 'version': return { reply: { ok: true, result: { version: wasm.version() } }, transfer: none };
    case 'presets': return { reply: fromJson(wasm.presets()), transfer: none };
    case 'inspect': return { reply: fromJson(wasm.inspect(job)), transfer: none };
    case 'graph': return { reply: fromJson(wasm.graph(job)), transfer: none };
    case 'graphJson':
      if (payload.stage === undefined) return { reply: fromJson(wasm.graphJson(job)), transfer: none };
      if (typeof payload.stage !== 'number') return { reply: fail('bad_request', 'stage must be a number', 'stage'), transfer: none };
      return { reply: fromJson(wasm.graphJson(job, payload.stage)), transfer: none };
    case 'groups':
      if (payload.phase === undefined) return { reply: fromJson(wasm.groups(job)), transfer: none };
      if (typeof payload.phase !== 'string') return { reply: fail('bad_request', 'phase must be a string', 'phase'), transfer: none };
      return { reply: fromJson(wasm.groups(job, payload.phase)), transfer: none };
    case 'rankInfo':
      if (typeof payload.rank !== 'number') return { reply: fail('bad_request', 'rank must be a number', 'rank'), transfer: none };
      if (payload.phase === undefined) return { reply: fromJson(wasm.rankInfo(job, payload.rank)), transfer: none };
      if (typeof payload.phase !== 'string') return { reply: fail('bad_request', 'phase must be a string', 'phase'), transfer: none };
      return { reply: fromJson(wasm.rankInfo(job, payload.rank, payload.phase)), transfer: none };
    case 'rankAt':
      if (typeof payload.coords !== 'object' || payload.coords === null) return { reply: fail('bad_request', 'coords must be an object', 'coords'), transfer: none };
      return { reply: fromJson(wasm.rankAt(job, JSON.stringify(payload.coords))), transfer: none };
    case 'rankTrace': {
      if (typeof payload.rank !== 'number') return { reply: fail('bad_request', 'rank must be a number', 'rank'), transfer: none };
      if (payload.phase !== undefined && typeof payload.phase !== 'string') return { reply: fail('bad_request', 'phase must be a string', 'phase'), transfer: none };
      const r = payload.phase === undefined ? wasm.rankTrace(job, payload.rank) : wasm.rankTrace(job, payload.rank, payload.phase);
      if (!r.ok) return { reply: r, transfer: none };
      const bytes = r.bytes.buffer as ArrayBuffer;  // a fresh copy: safe to transfer
      return { reply: { ok: true, result: { bytes } }, transfer: [bytes] };
    }
    case 'simulate':
      if (typeof wasm.simulate !== 'function') return { reply: fail('unsupported', 'this engine build has no simulator'), transfer: none };
      return { reply: fromJson(wasm.simulate(job, JSON.stringify({ timeline: true }))), transfer: none };
    case 'plan': {
      if (typeof wasm.plan !== 'function') return { reply: fail('unsupported', 'this engine build has no planner'), transfer: none };
      const { gpus, constraints, time_limit_seconds } = payload as { gpus?: unknown; constraints?: unknown; time_limit_seconds?: unknown };
      if (typeof gpus !== 'number') return { reply: fail('bad_request', 'gpus must be a number', 'gpus'), transfer: none };
      // The search runs synchronously inside this call; progress messages
      // leave the worker at once (the page is free to draw them), at most
      // every 50 ms, and always the last one. The best so far (the engine
      // sends it at most every 250 ms) goes out with the latest counts.
      let last = 0, done0 = 0, total0 = 0, phase0 = 'simulate';
      const onProgress = (done: number, total: number, phase: string) => {
        done0 = done; total0 = total; phase0 = phase;
        const now = performance.now();
        if (now - last < 50 && done < total) return;
        last = now;
        post({ v: PROTOCOL_VERSION, id: req.id, progress: { done, total, phase } });
      };
      const onPartial = (text: string) => {
        post({ v: PROTOCOL_VERSION, id: req.id, progress: { done: done0, total: total0, phase: phase0, best: JSON.parse(text) as Plan } });
      };
      const args = { gpus, constraints: constraints ?? {}, ...(time_limit_seconds === undefined ? {} : { time_limit_seconds }) };
      return { reply: fromJson(wasm.plan(job, JSON.stringify(args), onProgress, onPartial)), transfer: none };
    }
    case 'servingSweep':
      if (typeof wasm.servingSweep !== 'function') return { reply: fail('unsupported', 'this engine build has no serving sweep'), transfer: none };
      if (!Array.isArray(payload.concurrency)) return { reply: fail('bad_request', 'concurrency must be an array of numbers', 'concurrency'), transfer: none };
      return { reply: fromJson(wasm.servingSweep(job, JSON.stringify({ concurrency: payload.concurrency }))), transfer: none };
    case 'servingCapacity': {
      if (typeof wasm.servingCapacity !== 'function') return { reply: fail('unsupported', 'this engine build has no capacity search'), transfer: none };
      // Only the arguments given travel (the engine checks their values).
      const p = payload as Record<string, unknown>;
      const args: Record<string, unknown> = {};
      for (const k of ['ttft_seconds_p99', 'tpot_seconds_p99', 'requests']) if (p[k] !== undefined) args[k] = p[k];
      return { reply: fromJson(wasm.servingCapacity(job, JSON.stringify(args))), transfer: none };
    }
    case 'selfTestAbort':
      // Test hook: the path a real abort takes (Emscripten's abort() throws
      // a WebAssembly.RuntimeError out of the engine call), without a
      // multi-GB job to provoke one.
      throw new WebAssembly.RuntimeError('Aborted(self-test)');
    case 'archive':
      return { reply: await archive(wasm, req.id, job, typeof payload.prefix === 'string' ? payload.prefix : 'trace'), transfer: none };
    default:
      return { reply: fail('bad_request', `unknown request type ${JSON.stringify((req as { type: unknown }).type)}`), transfer: none };
  }
}

self.onmessage = async (event: MessageEvent<Request>) => {
  const req = event.data;
  const id = typeof req?.id === 'number' ? req.id : -1;
  let out: { reply: Reply; transfer: Transferable[] };
  if (req?.v !== PROTOCOL_VERSION) {
    out = { reply: fail('protocol_version', `expected protocol v${PROTOCOL_VERSION}, got v${String(req?.v)}`), transfer: [] };
  } else {
    try {
      out = await handle(req);
    } catch (e) {
      // A JS-side failure (module failed to load, Embind type error), or a
      // wasm abort (out of memory, a trap): the module is then unusable.
      // `engine_aborted` makes the page replace this worker, which frees the
      // instance's memory; anything else only drops the module.
      engine = null;
      const message = e instanceof Error ? e.message : String(e);
      const aborted = e instanceof WebAssembly.RuntimeError || /Aborted|out of memory|memory access out of bounds|unreachable/i.test(message);
      out = { reply: fail(aborted ? 'engine_aborted' : 'engine_unavailable', message), transfer: [] };
    }
  }
  post({ v: PROTOCOL_VERSION, id, ...out.reply } as Response, out.transfer);
};
