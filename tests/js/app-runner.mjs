// The case runner the built-app suites share (app-ux, app-plan,
// app-serving): each case gets a fresh page, fails on any uncaught page
// error, and records {suite, name, status, message, ms} in `results`.
export function check(cond, what) { if (!cond) throw new Error(what); }

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
