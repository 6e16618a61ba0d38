// Runs the shared JS suite in real headless Chromium (Debian's
// /usr/bin/chromium driven by playwright-core; `npx playwright install`
// cannot download browsers here). Serves the repo's build/wasm and tests/js
// plus the native CLI's identity-job output (/fixtures/) from a local static
// server on 127.0.0.1. Runs the suite on a page and in a module Worker, then
// smoke-tests the built web app (build/web, served at /). Prints one line per
// case and "N passed, N failed"; exits non-zero on any failure.
//   node tests/js/run-browser.mjs    (env: STAGECRAFT_CLI, STAGECRAFT_WASM_DIR,
//                                     CHROMIUM=/path/to/chromium)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { serveStatic, launchChromium } from './launch.mjs';
import { REPO_ROOT, cliPath, runNativeIdentityJob } from './native.mjs';
import { NATIVE_JOBS } from './suite/jobs.mjs';
import { appCases as fullAppCases } from './app-cases.mjs';

const WASM_DIR = process.env.STAGECRAFT_WASM_DIR || path.join(REPO_ROOT, 'build/wasm');
const WEB_DIR = path.join(REPO_ROOT, 'build/web');
const TIMEOUT_MS = 120_000;

// URL prefix -> directory. Nothing else of the machine is served.
function roots(fixturesDir) {
  return [
    ['/build/wasm/', WASM_DIR],
    ['/tests/js/', path.join(REPO_ROOT, 'tests/js')],
    ['/fixtures/', fixturesDir],
    ['/web/src/lib/', path.join(REPO_ROOT, 'web/src/lib')],  // the shared decoder
    ['/', WEB_DIR],  // the built web app (its wasm/ holds a copy of build/wasm)
  ];
}

function prepareFixtures() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stagecraft-fixtures-'));
  let manifest;
  if (!fs.existsSync(cliPath())) {
    manifest = { available: false, reason: `native CLI not found at ${cliPath()} (set STAGECRAFT_CLI)` };
  } else {
    // The identity job's files at the top (the app's archive case reads
    // them too), every other NATIVE_JOBS entry under <name>/.
    const native = runNativeIdentityJob();
    for (const [name, bytes] of native.files) fs.writeFileSync(path.join(dir, name), bytes);
    fs.rmSync(native.dir, { recursive: true, force: true });
    manifest = { available: true, files: [...native.files.keys()], jobs: {} };
    for (const [job, spec] of Object.entries(NATIVE_JOBS)) {
      if (job === 'identity') continue;
      try {
        const out = runNativeIdentityJob(spec.args, spec);
        fs.mkdirSync(path.join(dir, job));
        for (const [name, bytes] of out.files) fs.writeFileSync(path.join(dir, job, name), bytes);
        fs.rmSync(out.dir, { recursive: true, force: true });
        manifest.jobs[job] = { files: [...out.files.keys()] };
      } catch (e) {
        manifest.jobs[job] = { error: `native CLI failed on ${job}: ${e.message}` };
      }
    }
  }
  fs.writeFileSync(path.join(dir, 'manifest.json'), JSON.stringify(manifest));
  return dir;
}

// The web app end to end: ./app-cases.mjs.

async function appCasesIfBuilt(context, base, fixtures) {
  if (!fs.existsSync(path.join(WEB_DIR, 'index.html'))) {
    return [{ suite: 'app', name: 'web app', status: 'skip', message: 'build/web not built', ms: 0 }];
  }
  return fullAppCases(context, base, fixtures);
}

async function main() {
  for (const f of ['stagecraft_wasm.js', 'stagecraft_wasm.wasm']) {
    if (!fs.existsSync(path.join(WASM_DIR, f))) throw new Error(`${path.join(WASM_DIR, f)} missing: build the wasm tree first`);
  }
  const fixtures = prepareFixtures();
  const { server, base } = await serveStatic(roots(fixtures));
  let browser;
  try {
    browser = await launchChromium();
    const { context } = browser;
    const page = await context.newPage();
    const pageErrors = [];
    page.on('pageerror', (e) => pageErrors.push(String(e)));
    page.on('console', (m) => { if (m.type() === 'error') pageErrors.push(`console: ${m.text()}`); });
    console.log(`[browser] ${await context.browser()?.version() ?? 'chromium'} at ${base}/tests/js/browser.html`);
    await page.goto(`${base}/tests/js/browser.html`);
    await page.waitForFunction(() => window.__stagecraft && window.__stagecraft.done, null, { timeout: TIMEOUT_MS });
    const out = await page.evaluate(() => window.__stagecraft);
    if (out.fatal) {
      console.log(`[browser] fatal: ${out.fatal}`);
      for (const e of pageErrors) console.log(`[browser] ${e}`);
      console.log('0 passed, 1 failed');
      return 1;
    }
    await page.close();
    const results = [...out.results, ...await appCasesIfBuilt(context, base, fixtures)];
    let passed = 0, failed = 0, skipped = 0;
    // Under CI (CI=true) a case that skips itself (fixture or build absent)
    // fails: a skipped suite would otherwise pass CI unnoticed.
    if (process.env.CI === 'true') {
      for (const r of results) {
        if (r.status === 'skip') { r.status = 'fail'; r.message = `would skip, but CI=true: ${r.message}`; }
      }
    }
    for (const r of results) {
      const label = `${r.suite} > ${r.name}`;
      if (r.status === 'pass') { passed++; console.log(`  ok    ${label} (${r.ms.toFixed(0)} ms)`); }
      else if (r.status === 'skip') { skipped++; console.log(`  skip  ${label}: ${r.message}`); }
      else { failed++; console.log(`  FAIL  ${label}\n${r.message.replace(/^/gm, '        ')}`); }
    }
    if (failed) for (const e of pageErrors) console.log(`[browser] ${e}`);
    console.log(`[browser] ${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
    return failed === 0 && passed > 0 ? 0 : 1;
  } finally {
    if (browser) await browser.close();
    server.close();
    fs.rmSync(fixtures, { recursive: true, force: true });
  }
}

main().then((code) => process.exit(code), (e) => {
  console.error(`[browser] ${e && e.stack ? e.stack : e}`);
  console.log('[browser] 0 passed, 1 failed');
  process.exit(1);
});
