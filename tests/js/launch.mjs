// What every headless-Chromium script here starts with: a static server on
// 127.0.0.1 over a few URL-prefix -> directory roots (nothing else of the
// machine is served), and Debian's Chromium driven by playwright-core in a
// throw-away profile. Used by run-browser.mjs (the test suite),
// screenshots.mjs and bench-preview.mjs.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { chromium } from 'playwright-core';

const TYPES = {
  '.html': 'text/html', '.js': 'text/javascript', '.mjs': 'text/javascript', '.css': 'text/css',
  '.wasm': 'application/wasm', '.json': 'application/json', '.et': 'application/octet-stream',
};

// roots: [[urlPrefix, dir], ...], first match wins. Resolves to
// { server, base } once listening on an ephemeral port.
export async function serveStatic(roots) {
  const server = http.createServer((req, res) => {
    let url = decodeURIComponent(new URL(req.url, 'http://x').pathname);
    if (url.endsWith('/')) url += 'index.html';
    for (const [prefix, dir] of roots) {
      if (!url.startsWith(prefix)) continue;
      const file = path.join(dir, url.slice(prefix.length));
      if (!file.startsWith(dir + path.sep) || !fs.existsSync(file) || !fs.statSync(file).isFile()) break;
      res.writeHead(200, { 'content-type': TYPES[path.extname(file)] || 'application/octet-stream', 'cache-control': 'no-store' });
      fs.createReadStream(file).pipe(res);
      return;
    }
    res.writeHead(url === '/favicon.ico' ? 204 : 404).end();
  });
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  return { server, base: `http://127.0.0.1:${server.address().port}` };
}

// Resolves to { context, close }: close() closes the browser and deletes
// the profile. options go to launchPersistentContext (e.g. viewport).
export async function launchChromium(options = {}) {
  const profile = fs.mkdtempSync(path.join(os.tmpdir(), 'stagecraft-chromium-'));
  try {
    const context = await chromium.launchPersistentContext(profile, {
      executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking',
             '--disable-component-update', '--disable-sync'],
      ...options,
    });
    return { context, close: async () => { await context.close(); fs.rmSync(profile, { recursive: true, force: true }); } };
  } catch (e) {
    fs.rmSync(profile, { recursive: true, force: true });
    throw e;
  }
}

// A case file run on its own (`node tests/js/app-X.mjs [name prefix]`):
// serve the built app at webRoot, run cases(context, base, prefix) in one
// Chromium, print each result and the count, and fail when a case failed
// or the prefix selected none.
export async function runCasesAlone(cases, webRoot, prefix) {
  const { server, base } = await serveStatic([['/', webRoot]]);
  const browser = await launchChromium();
  try {
    const results = await cases(browser.context, base, prefix ?? '');
    for (const r of results) console.log(`  ${r.status === 'pass' ? 'ok  ' : 'FAIL'}  ${r.name} (${r.ms.toFixed(0)} ms)${r.status === 'pass' ? '' : `\n${r.message.replace(/^/gm, '        ')}`}`);
    const failed = results.filter((r) => r.status !== 'pass').length;
    console.log(`${results.length - failed} passed, ${failed} failed`);
    process.exitCode = failed || !results.length ? 1 : 0;
  } finally {
    await browser.close();
    server.close();
  }
}
