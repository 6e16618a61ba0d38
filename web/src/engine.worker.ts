/// <reference lib="webworker" />
// The engine worker: owns the wasm module and answers protocol requests.
// Engine calls are synchronous and can take a while on large jobs, which is
// why they run here and not on the page.
import { PROTOCOL_VERSION, type EngineError, type Request, type Response } from './protocol';

// The Embind functions of wasm/bridge.cc.
interface WasmEngine {
  version(): string;
  presets(): string;
  inspect(job: string): string;
  graph(job: string): string;
  groups(job: string): string;
  rankTrace(job: string, rank: number): { ok: true; bytes: Uint8Array } | { ok: false; error: EngineError };
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

async function handle(req: Request): Promise<{ reply: Reply; transfer: Transferable[] }> {
  const wasm = await loadEngine();
  const payload = (req.payload ?? {}) as { job?: unknown; rank?: unknown };
  const job = typeof payload.job === 'string' ? payload.job : JSON.stringify(payload.job ?? null);
  switch (req.type) {
    case 'version': return { reply: { ok: true, result: { version: wasm.version() } }, transfer: [] };
    case 'presets': return { reply: fromJson(wasm.presets()), transfer: [] };
    case 'inspect': return { reply: fromJson(wasm.inspect(job)), transfer: [] };
    case 'graph': return { reply: fromJson(wasm.graph(job)), transfer: [] };
    case 'groups': return { reply: fromJson(wasm.groups(job)), transfer: [] };
    case 'rankTrace': {
      if (typeof payload.rank !== 'number') return { reply: fail('bad_request', 'rank must be a number', 'rank'), transfer: [] };
      const r = wasm.rankTrace(job, payload.rank);
      if (!r.ok) return { reply: r, transfer: [] };
      const bytes = r.bytes.buffer as ArrayBuffer;  // a fresh copy: safe to transfer
      return { reply: { ok: true, result: { bytes } }, transfer: [bytes] };
    }
    default:
      return { reply: fail('bad_request', `unknown request type ${JSON.stringify((req as { type: unknown }).type)}`), transfer: [] };
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
      // A JS-side failure (module failed to load, Embind type error). A wasm
      // abort also lands here; the module is then unusable, so drop it.
      engine = null;
      out = { reply: fail('engine_unavailable', e instanceof Error ? e.message : String(e)), transfer: [] };
    }
  }
  self.postMessage({ v: PROTOCOL_VERSION, id, ...out.reply } as Response, out.transfer);
};
