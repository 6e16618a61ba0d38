// The import graph of web/src (every `import … from`, `export … from` and
// `import('…')` between its own modules, type-only imports included: a
// type cycle is still two modules that each need the other) and its cycles
// (strongly connected components of more than one module, or a module that
// imports itself). Issue 25: state and protocol at the bottom, views on
// top, events (web/src/bus.ts) where a view must reach another.
//   node tests/js/import-cycles.mjs   prints the cycles, exits 1 on any
// Run in the Node suite by node.test.mjs.
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../web/src');
// Statements at the start of a line (so comments and strings that mention
// an import are not read as one); a statement may span lines up to its ';'.
const SPEC = /^[ \t]*(?:import|export)\b[^;'"`]*?\bfrom\s*['"]([^'"]+)['"]|^[ \t]*import\s*['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/gm;

function files(dir) {
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return files(p);
    return /\.(ts|js|mjs)$/.test(e.name) && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

function resolve(from, spec) {
  if (!spec.startsWith('.')) return null;  // packages, not our modules
  const base = path.resolve(path.dirname(from), spec);
  for (const c of [base, `${base}.ts`, `${base}.js`, `${base}.mjs`, path.join(base, 'index.ts')]) {
    if (fs.existsSync(c) && fs.statSync(c).isFile()) return c;
  }
  // `import … from './lib/chakra'` typed by chakra.d.ts: the .js module.
  return fs.existsSync(`${base}.d.ts`) ? `${base}.js` : null;
}

// module (path relative to web/src) -> the modules it imports.
export function importGraph(root = ROOT) {
  const graph = new Map();
  for (const f of files(root)) {
    const text = fs.readFileSync(f, 'utf8');
    const deps = new Set();
    for (const m of text.matchAll(SPEC)) {
      const r = resolve(f, m[1] ?? m[2] ?? m[3]);
      if (r && r.endsWith('.css') === false) deps.add(path.relative(root, r));
    }
    graph.set(path.relative(root, f), [...deps].sort());
  }
  return graph;
}

// Tarjan's strongly connected components; those that are cycles.
export function cycles(graph) {
  let index = 0;
  const idx = new Map(), low = new Map(), on = new Set(), stack = [], out = [];
  const visit = (v) => {
    idx.set(v, index); low.set(v, index); index++;
    stack.push(v); on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!idx.has(w)) { visit(w); low.set(v, Math.min(low.get(v), low.get(w))); }
      else if (on.has(w)) low.set(v, Math.min(low.get(v), idx.get(w)));
    }
    if (low.get(v) === idx.get(v)) {
      const comp = [];
      let w;
      do { w = stack.pop(); on.delete(w); comp.push(w); } while (w !== v);
      if (comp.length > 1 || (graph.get(v) ?? []).includes(v)) out.push(comp.sort());
    }
  };
  for (const v of [...graph.keys()].sort()) if (!idx.has(v)) visit(v);
  return out;
}

// Imports against the direction: a module below the views (anything but
// main.ts and views/*) that imports a view.
export function layerViolations(graph) {
  const out = [];
  for (const [m, deps] of graph) {
    if (m === 'main.ts' || m.startsWith('views/')) continue;
    for (const d of deps) if (d.startsWith('views/')) out.push(`${m} -> ${d}`);
  }
  return out;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const graph = importGraph();
  const found = cycles(graph);
  console.log(`${graph.size} modules, ${[...graph.values()].reduce((a, d) => a + d.length, 0)} imports, ${found.length} cycle(s)`);
  for (const c of found) console.log(`  cycle: ${c.join(' <-> ')}`);
  const up = layerViolations(graph);
  for (const v of up) console.log(`  imports a view from below: ${v}`);
  process.exit(found.length || up.length ? 1 : 0);
}
