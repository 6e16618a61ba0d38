// The latency-throughput curve of a serving job (docs/inference.md,
// docs/web-app.md "Inference mode"): which concurrencies to ask the
// engine's serving_sweep for, and where each answer lands on the chart.
// Plain JS (with serving.d.ts) so that the shared test suite checks it in
// Node and Chromium without a bundler.

// Concurrencies for the sweep: step × 1, 2, 4, … doubling up to `max`
// (the sequences that fit, summary.inference.max_concurrent_sequences), then
// max itself, and the job's own concurrency; sorted, distinct, at most
// `limit` points (the doubling thinned by taking every other power when
// there are more). `step` is the decode pool's attention dp: each dp rank
// decodes concurrency / dp sequences, so every value is a multiple of it
// (max already is). Empty when nothing fits (max < step).
export function sweepConcurrencies(max, own = 0, limit = 12, step = 1) {
  step = Math.max(1, Math.floor(step));
  if (!(max >= step)) return [];
  max = Math.floor(max / step) * step;
  const pow = [];
  for (let c = step; c < max; c *= 2) pow.push(c);
  let picked = pow;
  while (picked.length > limit - 2) picked = picked.filter((_, i) => i % 2 === 0);
  const all = new Set([...picked, max]);
  if (own >= 1 && own <= max && own % step === 0) all.add(own);
  return [...all].sort((a, b) => a - b);
}

// "Nice" axis end: the smallest 1, 2 or 5 × 10^k at or above v.
export function niceCeil(v) {
  if (!(v > 0)) return 1;
  const p = 10 ** Math.floor(Math.log10(v));
  for (const m of [1, 2, 5, 10]) if (m * p >= v * (1 - 1e-12)) return m * p;
  return 10 * p;
}

// Chart geometry: x = tokens/s per GPU (throughput), y = the latency the
// user feels per token, TPOT in ms (or, with y = 'user', tokens/s per
// user = 1 / TPOT). Returns the axis maxima and each point's pixel
// position inside a plot of width w and height h (origin bottom left).
export function curvePoints(sweep, w, h, y = 'tpot') {
  const yv = (p) => (y === 'user' ? p.tokens_per_second_per_user : p.tpot_seconds * 1e3);
  const xMax = niceCeil(Math.max(0, ...sweep.map((p) => p.tokens_per_second_per_gpu)));
  const yMax = niceCeil(Math.max(0, ...sweep.map(yv)));
  return {
    xMax, yMax,
    points: sweep.map((p) => ({ ...p, y: yv(p), px: (p.tokens_per_second_per_gpu / xMax) * w, py: h - (yv(p) / yMax) * h })),
  };
}

// A request mix (serving.requests, docs/inference.md "Request mixes") as the
// job editor shows it: one class a line, "prompt output [weight]"
// (separators: spaces, commas, "+", "x", "×"). A JSON list is taken as is.
// Nothing is validated here: a value that is not a number goes to the
// engine as given, so its error names the class and the field
// (serving.requests[1].output_tokens). Empty text: undefined (no mix).
const MIX_KEYS = ['prompt_tokens', 'output_tokens', 'weight'];
const numOrText = (t) => (/^[0-9]*\.?[0-9]+(e[0-9]+)?$/i.test(t) ? Number(t) : t);

export function parseRequests(text) {
  const t = String(text ?? '').trim();
  if (!t) return undefined;
  if (t.startsWith('[')) { try { return JSON.parse(t); } catch { return t; } }
  return t.split('\n').map((l) => l.trim()).filter((l) => l !== '').map((line) => {
    const w = line.split(/[\s,+×x*]+/i).filter((x) => x !== '');
    const c = {};
    if (w[0] !== undefined) c.prompt_tokens = numOrText(w[0]);
    if (w[1] !== undefined) c.output_tokens = numOrText(w[1]);
    if (w.length > 2) c.weight = w.length === 3 ? numOrText(w[2]) : w.slice(2).join(' ');
    return c;
  });
}

// The inverse: lines for a list of plain numeric classes; anything else
// (extra keys, strings) as JSON, so that nothing is lost on the way back.
export function formatRequests(v) {
  if (v === undefined) return '';
  const plain = Array.isArray(v) && v.length > 0 && v.every((c) => c !== null && typeof c === 'object' && !Array.isArray(c) &&
    Object.keys(c).every((k) => MIX_KEYS.includes(k)) && MIX_KEYS.every((k) => c[k] === undefined || (typeof c[k] === 'number' && Number.isFinite(c[k]))) &&
    c.prompt_tokens !== undefined && c.output_tokens !== undefined);
  if (!plain) return JSON.stringify(v);
  return v.map((c) => [c.prompt_tokens, c.output_tokens, c.weight].filter((x) => x !== undefined).join(' ')).join('\n');
}

// The request-weighted mean of a per-class figure: Σ share_i · f(class_i)
// over summary.inference.requests.
export function mixMean(classes, f) {
  return classes.reduce((a, c) => a + Number(c.share) * f(c), 0);
}
