// The engine in a worker, for the plan suite's cancel case
// (suite/plan.mjs): a Node worker_threads worker or a browser module
// Worker, same script. Message in: {job, args}; out: {progress:{done,total,
// phase}} per progress call (unthrottled), then {reply} (the bridge's
// envelope, parsed). Cancel = terminate(), as the web app does.
const isNode = typeof process !== 'undefined' && !!process.versions?.node;

let post, onMessage;
if (isNode) {
  const { parentPort } = await import('node:worker_threads');
  post = (m) => parentPort.postMessage(m);
  onMessage = (f) => parentPort.on('message', f);
} else {
  post = (m) => self.postMessage(m);
  onMessage = (f) => { self.onmessage = (e) => f(e.data); };
}

let engine;
if (isNode) {
  const { loadWasmInNode } = await import('./native.mjs');
  engine = await loadWasmInNode();
} else {
  const { default: createStagecraft } = await import('/build/wasm/stagecraft_wasm.js');
  engine = await createStagecraft();
}

onMessage(({ job, args }) => {
  const text = engine.plan(job, args, (done, total, phase) => post({ progress: { done, total, phase } }));
  post({ reply: JSON.parse(text) });
});
post({ ready: true });
