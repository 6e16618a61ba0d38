// Page entry: runs the suite on the page, then in a module Worker, and
// publishes window.__stagecraft = { done, results, fatal } for the runner.
import { runInThisRealm } from './browser-suite.mjs';

const logEl = document.getElementById('log');
const lines = [];
const log = (s) => { lines.push(s); logEl.textContent = lines.join('\n'); };

function inWorker() {
  return new Promise((resolve) => {
    const w = new Worker(new URL('./browser-worker.mjs', import.meta.url), { type: 'module' });
    w.onmessage = (e) => { w.terminate(); resolve(e.data); };
    w.onerror = (e) => { w.terminate(); resolve({ fatal: `worker error: ${e.message}` }); };
  });
}

const tag = (realm, results) => results.map((r) => ({ ...r, suite: `${realm}/${r.suite}` }));

try {
  const results = tag('page', await runInThisRealm(log));
  const w = await inWorker();
  if (w.fatal) throw new Error(w.fatal);
  results.push(...tag('worker', w.results));
  for (const r of results) log(`${r.status} ${r.suite} > ${r.name}`);
  window.__stagecraft = { done: true, results };
} catch (e) {
  log(String(e && e.stack ? e.stack : e));
  window.__stagecraft = { done: true, fatal: String(e && e.stack ? e.stack : e) };
}
