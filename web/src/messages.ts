// Engine errors in words. The engine answers {code, message, path} with the
// message written for the CLI ("training.global_batch_size: global_batch_size
// (16) is not divisible by dp (3) x micro_batch_size (1) = 3"); the editor
// shows it next to the field named by `path`, with the job's identifiers
// replaced by the editor's labels and the code turned into a lead sentence.
// The code stays available (data-code, tooltip) for anyone who reports a bug.
import { JOB_SCHEMA } from './job-schema';
import type { EngineError } from './protocol';

const LEAD: Record<string, string> = {
  not_divisible: 'Does not divide evenly',
  invalid_argument: 'Not a valid value',
  parse_error: 'Could not read this',
  unknown_field: 'Not a known setting',
  world_size_mismatch: 'The parallel sizes do not multiply to the number of GPUs',
  unsupported: 'Not supported yet',
  internal: 'The engine hit a bug (please report it with the job link)',
  too_large: 'This job is too large to build in the browser',
  engine_aborted: 'The engine ran out of memory on this job',
  engine_crashed: 'The engine stopped',
  engine_unavailable: 'The engine could not run',
};

// Identifiers the engine writes in messages that are not editor fields.
const EXTRA_WORDS: Record<string, string> = {
  micro_batch_size: 'micro-batch size', global_batch_size: 'global batch', num_heads: 'attention heads',
  num_kv_heads: 'KV heads', num_layers: 'layers', num_experts: 'experts', hidden_size: 'hidden size',
  num_hidden_layers: 'num_hidden_layers', world_size: 'number of GPUs', seq_len: 'sequence length',
  // No editor field: say where it is set.
  'parallel.pipeline_layout': 'the layers per pipeline stage (parallel.pipeline_layout, set in the job JSON: the editor has no field for it)',
};

// "model.num_experts" / "num_experts" -> "Experts (E)"; longest names first.
const WORDS: [RegExp, string][] = (() => {
  const m = new Map<string, string>();
  for (const f of JOB_SCHEMA) {
    const leaf = f.path.split('.').pop()!;
    m.set(f.path, f.title);
    // A bare leaf only when it is an identifier (micro_batch_size), not an
    // English word the message uses as such ("requests", "rate", "order").
    if (!m.has(leaf) && leaf.length > 2 && leaf.includes('_')) m.set(leaf, f.title);
  }
  for (const [k, v] of Object.entries(EXTRA_WORDS)) if (!m.has(k)) m.set(k, v);
  return [...m].sort((a, b) => b[0].length - a[0].length)
    .map(([k, v]) => [new RegExp(`(?<![\\w.])${k.replace(/\./g, '\\.')}(?![\\w.])`, 'g'), v] as [RegExp, string]);
})();

// Identifiers to words, "4125000" to "4,125,000" (whole numbers of five or
// more digits that are not part of a name or a decimal), and a full stop at
// the end, so a hint after it does not run on.
export function humanize(text: string): string {
  let out = text;
  for (const [re, words] of WORDS) out = out.replace(re, words);
  out = out.replace(/ x /g, ' × ').replace(/(?<![\w.,])\d{5,}(?!\w|[.,]\d)/g, (n) => Number(n).toLocaleString('en'));
  return out && !/[.!?]$/.test(out.trim()) ? `${out.trim()}.` : out;
}

// Codes of a job that is valid but too large for a browser tab: the core's
// budget check (any code naming a budget or a size limit) and an abort.
export function isTooBig(e: EngineError): boolean {
  return e.code === 'engine_aborted' || /budget|too_large|too_big|resource|exhausted|limit/.test(e.code);
}

// The sentence shown next to the field (or the job when no field applies).
export function explain(e: EngineError): { lead: string; text: string; hint: string } {
  const fieldPrefix = e.path ? new RegExp(`^${e.path.replace(/[.[\]]/g, '\\$&')}:\\s*`) : null;
  const raw = fieldPrefix ? e.message.replace(fieldPrefix, '') : e.message;
  const lead = LEAD[e.code] ?? (isTooBig(e) ? 'This job is too large to build in the browser' : 'The engine refused this job');
  let hint = '';
  if (isTooBig(e)) {
    // The engine's message already says which knobs shrink the job when it
    // names the micro-batches: then only the CLI's way out is added.
    hint = /micro-batches/.test(e.message)
      ? 'The CLI (Downloads tab) has no browser memory limit.'
      : 'Fewer micro-batches per rank make it smaller: raise data parallel (dp) or lower the global batch; ' +
        'more pipeline or tensor parallelism shrinks each rank too. The CLI (Downloads tab) has no browser memory limit.';
  } else if (e.code === 'not_divisible') {
    hint = 'Pick a value that divides the number it names.';
  }
  const text = e.code === 'engine_aborted' ? 'the wasm module stopped (out of memory) and was restarted.' : humanize(raw);
  return { lead, text: e.path || !text ? text : text[0].toUpperCase() + text.slice(1), hint };
}
