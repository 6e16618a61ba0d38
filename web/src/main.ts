// The placeholder UI: a job form -> inspect() in the engine worker -> the
// summary JSON, or the error shown next to the field its path names.
import './style.css';
import { EngineClient, EngineRequestError } from './client';
import type { JobJson } from './protocol';

const $ = <T extends HTMLElement>(sel: string) => document.querySelector(sel) as T;
const form = $<HTMLFormElement>('#job-form');
const summaryEl = $<HTMLPreElement>('#summary');
const formErrorEl = $<HTMLParagraphElement>('#form-error');
const statusEl = $<HTMLSpanElement>('#engine-status');
const crashEl = $<HTMLDivElement>('#crash');

const DEFAULT_PRESET = 'gpt3-1.7b';
const client = new EngineClient();
client.onCrash = (message) => {
  statusEl.textContent = `engine crashed: ${message}`;
  crashEl.hidden = false;
};
$<HTMLButtonElement>('#restart').onclick = () => {
  crashEl.hidden = true;
  client.restart();
  void boot();
};

const num = (name: string): number | undefined => {
  const el = form.elements.namedItem(name) as HTMLInputElement;
  return el.value.trim() === '' ? undefined : Number(el.value);
};

// Empty optional fields are left out so the engine applies its defaults.
function readJob(): JobJson {
  const field = (name: string) => form.elements.namedItem(name) as HTMLInputElement;
  const model: JobJson = { preset: (form.elements.namedItem('preset') as HTMLSelectElement).value };
  if (num('num_layers') !== undefined) model.num_layers = num('num_layers');
  const training: JobJson = {};
  for (const k of ['seq_len', 'micro_batch_size', 'global_batch_size']) {
    if (num(k) !== undefined) training[k] = num(k);
  }
  return {
    model,
    parallel: { dp: num('dp') ?? 1, tp: num('tp') ?? 1, sequence_parallel: field('sequence_parallel').checked },
    training,
  };
}

function clearErrors(): void {
  for (const label of form.querySelectorAll<HTMLLabelElement>('label[data-path]')) {
    label.classList.remove('invalid');
    label.querySelector('.error')!.textContent = '';
  }
  formErrorEl.textContent = '';
}

// The field whose path is the error's path or its closest ancestor
// ("training.global_batch_size" for itself, "model.preset" for "model.preset.x").
function showError(err: EngineRequestError): void {
  const { code, message, path } = err.error;
  let best: HTMLLabelElement | null = null;
  for (const label of form.querySelectorAll<HTMLLabelElement>('label[data-path]')) {
    const p = label.dataset.path!;
    if (path === p || path.startsWith(`${p}.`)) best = label;
  }
  const text = `${message} (${code})`;
  if (best) {
    best.classList.add('invalid');
    best.querySelector('.error')!.textContent = text;
  } else {
    formErrorEl.textContent = path ? `${path}: ${text}` : text;
  }
}

let generation = 0;
async function update(): Promise<void> {
  const mine = ++generation;
  try {
    const { summary } = await client.request('inspect', { job: readJob() });
    if (mine !== generation) return;  // a newer edit superseded this one
    clearErrors();
    summaryEl.textContent = JSON.stringify(summary, null, 2);
  } catch (e) {
    if (mine !== generation) return;
    clearErrors();
    summaryEl.textContent = '';
    if (e instanceof EngineRequestError) showError(e);
    else formErrorEl.textContent = String(e);
  }
}

let timer: ReturnType<typeof setTimeout> | undefined;
form.addEventListener('input', () => {
  clearTimeout(timer);
  timer = setTimeout(() => void update(), 150);
});

async function boot(): Promise<void> {
  try {
    const [{ version }, { presets }] = await Promise.all([
      client.request('version', {}),
      client.request('presets', {}),
    ]);
    statusEl.textContent = `engine ${version} (wasm, in a worker)`;
    const select = form.elements.namedItem('preset') as HTMLSelectElement;
    const current = select.value || DEFAULT_PRESET;
    select.replaceChildren(...presets.map((p) => new Option(p, p, false, p === current)));
    await update();
  } catch (e) {
    statusEl.textContent = `engine unavailable: ${e instanceof Error ? e.message : String(e)}`;
  }
}
void boot();
