// Runs the suite inside a module Worker, where the web app runs the engine.
import { runInThisRealm } from './browser-suite.mjs';

runInThisRealm(() => {}).then(
  (results) => postMessage({ results }),
  (e) => postMessage({ fatal: String(e && e.stack ? e.stack : e) }),
);
