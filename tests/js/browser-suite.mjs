// Browser side of the shared suite, usable on the page and in a module
// Worker: loads the wasm module as the web app does and runs every case.
import { runSuites } from './harness.mjs';
import { suites } from './suite/index.mjs';

// The runner (run-browser.mjs) serves the native CLI's output for the
// identity job under /fixtures/ with a manifest; absent fixtures mean skip.
function fixtureNativeProvider(manifest) {
  if (!manifest.available) return { available: false, reason: manifest.reason };
  return {
    available: true,
    reason: '',
    // name: a key of NATIVE_JOBS; the identity job's files are at the top.
    async files(job = 'identity') {
      const entry = job === 'identity' ? { files: manifest.files } : manifest.jobs?.[job];
      if (!entry || entry.error) throw new Error(entry ? entry.error : `no native fixtures for ${job}`);
      const dir = job === 'identity' ? '/fixtures/' : `/fixtures/${job}/`;
      const files = new Map();
      for (const name of entry.files) {
        const res = await fetch(`${dir}${name}`);
        if (!res.ok) throw new Error(`fixture ${name}: HTTP ${res.status}`);
        files.set(name, new Uint8Array(await res.arrayBuffer()));
      }
      return files;
    },
  };
}

// ctx.spawnWorker(): the engine in a module Worker (./plan-worker.mjs;
// from the suite's own Worker too: Chromium nests dedicated workers).
function spawnWorker() {
  const w = new Worker('/tests/js/plan-worker.mjs', { type: 'module' });
  return { post: (m) => w.postMessage(m), onMessage: (f) => w.addEventListener('message', (e) => f(e.data)),
    onError: (f) => w.addEventListener('error', (e) => f(new Error(e.message))), terminate: () => w.terminate() };
}

export async function runInThisRealm(log) {
  const { default: createStagecraft } = await import('/build/wasm/stagecraft_wasm.js');
  // In the browser the loader fetches stagecraft_wasm.wasm next to the .js.
  const engine = await createStagecraft();
  const manifest = await (await fetch('/fixtures/manifest.json')).json();
  return runSuites(suites, { engine, native: fixtureNativeProvider(manifest), log, spawnWorker });
}
