// The case runner the built-app suites share (app-ux, app-plan,
// app-serving): each case gets a fresh page, fails on any uncaught page
// error, and records {suite, name, status, message, ms} in `results`.
import { createRequire } from 'node:module';

export function check(cond, what) { if (!cond) throw new Error(what); }

const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');

// axe-core's WCAG 2.1 A/AA violations on the page as it is now, one line
// each (rule, impact, the first three nodes with their failure summary).
// axe is loaded into the page on the first call.
export async function axeViolations(page) {
  if (!(await page.evaluate(() => Boolean(window.axe)))) await page.addScriptTag({ path: AXE });
  return page.evaluate(async () => {
    const out = await window.axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] }, resultTypes: ['violations'] });
    return out.violations.map((v) => `${v.id} (${v.impact}): ${v.nodes.slice(0, 3).map((n) => `${n.target.join(' ')} ${n.failureSummary?.split('\n')[1] ?? ''}`).join(' | ')}`);
  });
}

// Fails the case when axe finds a violation; `where` names the view.
export async function checkAxe(page, where) {
  const r = await axeViolations(page);
  check(r.length === 0, `axe on ${where}:\n${r.join('\n')}`);
}

// only: run the cases whose name starts with it (while developing).
export function caseRunner(context, suite, results, only = '') {
  return async (name, fn) => {
    if (only && !name.startsWith(only)) return;
    const t0 = performance.now();
    const page = await context.newPage();
    const errors = [];
    page.on('pageerror', (e) => errors.push(String(e)));
    try {
      await fn(page);
      check(errors.length === 0, `page errors: ${errors.join('; ')}`);
      results.push({ suite, name, status: 'pass', message: '', ms: performance.now() - t0 });
    } catch (e) {
      results.push({ suite, name, status: 'fail', message: String(e && e.stack ? e.stack : e), ms: performance.now() - t0 });
    } finally {
      await page.close();
    }
  };
}
