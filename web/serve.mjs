// Serves the built app (build/web) on 127.0.0.1 (`npm start`, .ci/serve).
// Compressible files (the wasm module above all: ~1.1 MB raw, ~380 KB gzip)
// are gzipped once, at first request, into a cache next to them
// (<file>.gz, left out of the build's own files) and sent with
// Content-Encoding: gzip to clients that accept it; everyone else gets the
// raw bytes. Only GET/HEAD under the build directory are answered.
//   node web/serve.mjs [--dir build/web] [--host 127.0.0.1] [--port 5173]
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import zlib from 'node:zlib';
import { fileURLToPath } from 'node:url';

const TYPES = {
  '.html': 'text/html; charset=utf-8', '.js': 'text/javascript; charset=utf-8', '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8', '.wasm': 'application/wasm', '.json': 'application/json', '.svg': 'image/svg+xml',
  '.png': 'image/png', '.ico': 'image/x-icon',
};
const COMPRESS = new Set(['.html', '.js', '.mjs', '.css', '.wasm', '.json', '.svg']);

// The gzip of `file`, made when missing or older than the file.
function gzipped(file) {
  const gz = `${file}.gz`;
  const st = fs.statSync(file);
  if (!fs.existsSync(gz) || fs.statSync(gz).mtimeMs < st.mtimeMs) {
    const tmp = `${gz}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, zlib.gzipSync(fs.readFileSync(file), { level: 9 }));
    fs.renameSync(tmp, gz);  // never a half-written .gz
  }
  return gz;
}

// A request handler over `dir`; used by main() and by the browser suite.
export function handler(dir) {
  const root = path.resolve(dir);
  return (req, res) => {
    if (req.method !== 'GET' && req.method !== 'HEAD') { res.writeHead(405).end(); return; }
    let url;
    try { url = decodeURIComponent(new URL(req.url, 'http://x').pathname); } catch { res.writeHead(400).end(); return; }
    if (url.endsWith('/')) url += 'index.html';
    const file = path.join(root, url);
    if (!file.startsWith(root + path.sep) || file.endsWith('.gz') || !fs.existsSync(file) || !fs.statSync(file).isFile()) {
      res.writeHead(url === '/favicon.ico' ? 204 : 404).end();
      return;
    }
    const ext = path.extname(file);
    const headers = { 'content-type': TYPES[ext] || 'application/octet-stream', vary: 'accept-encoding',
      'cache-control': url === '/index.html' ? 'no-cache' : 'public, max-age=300' };
    let body = file;
    if (COMPRESS.has(ext) && /\bgzip\b/.test(String(req.headers['accept-encoding'] || ''))) {
      body = gzipped(file);
      headers['content-encoding'] = 'gzip';
    }
    headers['content-length'] = String(fs.statSync(body).size);
    res.writeHead(200, headers);
    if (req.method === 'HEAD') res.end();
    else fs.createReadStream(body).pipe(res);
  };
}

async function main() {
  const args = process.argv.slice(2);
  const opt = (name, dflt) => { const i = args.indexOf(`--${name}`); return i >= 0 ? args[i + 1] : dflt; };
  const here = path.dirname(fileURLToPath(import.meta.url));
  const dir = opt('dir', path.join(here, '../build/web'));
  const host = opt('host', process.env.HOST || '127.0.0.1');
  const port = Number(opt('port', process.env.PORT || 5173));
  if (!fs.existsSync(path.join(dir, 'index.html'))) { console.error(`${dir}/index.html missing: run .ci/build first`); process.exit(1); }
  const server = http.createServer(handler(dir));
  server.listen(port, host, () => console.log(`\nstagecraft web app: http://${host}:${port}/ (gzip for clients that accept it)\n`));
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) void main();
