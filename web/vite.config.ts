// Vite config for the placeholder web app. Root is web/; the build goes to
// build/web. The wasm module (build/wasm/stagecraft_wasm.{js,wasm}) is
// copied into web/public/wasm/ by .ci/build and served as a static file:
// the worker imports it at runtime by URL, so Vite never bundles it.
import { defineConfig } from 'vite';
import { fileURLToPath } from 'node:url';

const here = fileURLToPath(new URL('.', import.meta.url));

export default defineConfig({
  root: here,
  base: '/',
  build: {
    outDir: fileURLToPath(new URL('../build/web', import.meta.url)),
    emptyOutDir: true,
    target: 'es2022',
  },
  worker: { format: 'es' },
  server: { host: '127.0.0.1', port: 5173, strictPort: true },
  preview: { host: '127.0.0.1', port: 5173, strictPort: true },
});
