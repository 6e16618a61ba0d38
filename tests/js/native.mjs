// Node side of the native-vs-wasm identity check: runs the native CLI for
// IDENTITY_CLI_ARGS into a temp dir and returns its files. Used by the Node
// suite directly and by the browser runner (which serves the files).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { IDENTITY_CLI_ARGS, NATIVE_JOBS } from './suite/jobs.mjs';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export function cliPath() {
  return process.env.STAGECRAFT_CLI || path.join(REPO_ROOT, 'build/native/stagecraft');
}

// Runs the CLI once into a fresh temp dir; returns { dir, files: Map }.
// spec (a NATIVE_JOBS entry): an argument '@job' is a file holding
// spec.job's JSON (for jobs no flags describe); with spec.stdout the
// command's standard output is the one file, under that name (no -o).
export function runNativeIdentityJob(args = IDENTITY_CLI_ARGS, spec = {}) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'stagecraft-native-'));
  let jobFile = null;
  if (args.includes('@job')) {
    jobFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'stagecraft-job-')), 'job.json');
    fs.writeFileSync(jobFile, JSON.stringify(spec.job));
    args = args.map((a) => (a === '@job' ? jobFile : a));
  }
  try {
    if (spec.stdout) {
      const out = execFileSync(cliPath(), args, { stdio: ['ignore', 'pipe', 'inherit'] });
      fs.writeFileSync(path.join(dir, spec.stdout), out);
    } else {
      execFileSync(cliPath(), [...args, '-o', dir], { stdio: ['ignore', 'ignore', 'inherit'] });
    }
  } finally {
    if (jobFile) fs.rmSync(path.dirname(jobFile), { recursive: true, force: true });
  }
  const files = new Map();
  for (const name of fs.readdirSync(dir).sort()) {
    const p = path.join(dir, name);
    if (fs.statSync(p).isFile()) files.set(name, new Uint8Array(fs.readFileSync(p)));
  }
  return { dir, files };
}

// The ctx.native object of the harness.
export function nodeNativeProvider() {
  const cli = cliPath();
  if (!fs.existsSync(cli)) {
    return { available: false, reason: `native CLI not found at ${cli} (set STAGECRAFT_CLI)` };
  }
  const cached = new Map();
  return {
    available: true,
    reason: '',
    // name: a key of NATIVE_JOBS (default: the identity job).
    async files(name = 'identity') {
      if (!cached.has(name)) {
        const { dir, files } = runNativeIdentityJob(NATIVE_JOBS[name].args, NATIVE_JOBS[name]);
        fs.rmSync(dir, { recursive: true, force: true });
        cached.set(name, files);
      }
      return cached.get(name);
    },
  };
}

// Instantiates the wasm module in Node. Emscripten 3.1.6's loader would
// fetch() the .wasm by file path (fails under Node 20), so hand it the bytes.
export async function loadWasmInNode() {
  const dir = process.env.STAGECRAFT_WASM_DIR || path.join(REPO_ROOT, 'build/wasm');
  const { default: createStagecraft } = await import(path.join(dir, 'stagecraft_wasm.js'));
  return createStagecraft({ wasmBinary: fs.readFileSync(path.join(dir, 'stagecraft_wasm.wasm')) });
}
