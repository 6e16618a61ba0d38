// The job editor: every field comes from JOB_SCHEMA (job-schema.ts); the
// form is read into a job JSON and written back from one. The model comes
// from exactly one source, shown under the model fields: a preset, or a
// pasted / dropped / downloaded Hugging Face config.json — the latest one
// the user gave wins, and giving a config clears model overrides left over
// from the previous model (they would silently reshape the new one).
// Engine errors land next to the field named by their path, in words
// (messages.ts).
import { JOB_SCHEMA, inMode, type FieldSchema, type JobMode } from '../job-schema';
import type { EngineError, JobJson } from '../protocol';
import { explain } from '../messages';
import { $, h } from '../util';
import { parseRequests, formatRequests } from '../lib/serving';

const form = () => $<HTMLFormElement>('#job-form');
const field = <T extends Element>(name: string) => form().elements.namedItem(name) as unknown as T;
export const presetSelect = () => field<HTMLSelectElement>('model.preset');
export const hfText = () => field<HTMLTextAreaElement>('model.hf_config');
export const modeSelect = () => field<HTMLSelectElement>('mode');
export const jobMode = (): JobMode => (modeSelect()?.value === 'inference' ? 'inference' : 'training');

// Training or inference (docs/inference.md): each mode shows only the
// fields a job of that mode takes (the engine refuses training settings in
// an inference job, naming the field).
export function applyMode(mode: JobMode = jobMode()): void {
  document.body.dataset.mode = mode;
  for (const f of JOB_SCHEMA) {
    const label = form().querySelector<HTMLElement>(`label[data-path="${f.path}"]`);
    if (label) label.hidden = !inMode(f, mode);
  }
  for (const fs of form().querySelectorAll<HTMLElement>('fieldset[data-group]')) {
    const g = fs.dataset.group;
    fs.hidden = (g === 'training' && mode === 'inference') || (g === 'serving' && mode === 'training');
  }
  for (const d of form().querySelectorAll<HTMLElement>('details')) {
    d.hidden = ![...d.children].some((c) => c.tagName !== 'SUMMARY' && !(c as HTMLElement).hidden);
  }
  syncMix();
}

// ---- the request mix (serving.requests; docs/inference.md "Request mixes")
// Edited as text, one class a line (lib/serving.js parseRequests /
// formatRequests); the engine validates, naming the class and field.
const mixText = () => field<HTMLTextAreaElement>('serving.requests');
const FIXED_LENGTHS = ['serving.prompt_tokens', 'serving.output_tokens'];
// With a mix, the fixed lengths are off (the engine takes one or the
// other): disabled and left out of the job.
export function syncMix(): void {
  const mix = mixText();
  const on = !!mix && mix.value.trim() !== '' && jobMode() === 'inference';
  for (const p of FIXED_LENGTHS) {
    const el = field<HTMLInputElement>(p);
    if (!el) continue;
    el.disabled = on;
    el.closest('label')?.classList.toggle('off', on);
    el.title = on ? 'the request mix below sets the lengths' : '';
  }
}

const get = (o: JobJson, path: string): unknown => path.split('.').reduce<unknown>((a, k) => (a && typeof a === 'object' ? (a as JobJson)[k] : undefined), o);
function set(o: JobJson, path: string, v: unknown): void {
  const ks = path.split('.');
  let cur = o;
  for (const k of ks.slice(0, -1)) cur = (cur[k] ??= {}) as JobJson;
  cur[ks[ks.length - 1]] = v;
}

function fieldControl(f: FieldSchema): HTMLElement {
  const name = f.path;
  const id = `f-${f.path.replace(/\./g, '-')}`;
  const described = `${id}-err`;
  let control: HTMLElement;
  if (f.type === 'requests') {
    control = h('textarea', { name, id, rows: 3, spellcheck: 'false', placeholder: 'e.g. 1000 100 3\n3000 300 1' });
    control.addEventListener('input', () => syncMix());
  } else if (f.type === 'list') {
    control = h('input', { type: 'text', name, id, spellcheck: 'false', placeholder: f.enum ? f.enum.slice(0, 2).join(',') : '' });
  } else if (f.type === 'boolean' && f.default !== undefined) {
    control = h('input', { type: 'checkbox', name, id });
  } else if (f.type === 'boolean') {
    control = h('select', { name, id }, h('option', { value: '' }, f.group === 'model' ? '(model default)' : '(default)'), h('option', { value: 'true' }, 'on'), h('option', { value: 'false' }, 'off'));
  } else if (f.enum) {
    control = h('select', { name, id }, ...(f.default === undefined ? [h('option', { value: '' }, '(default)')] : []), ...f.enum.map((v) => h('option', { value: v }, v)));
  } else {
    control = h('input', { type: 'number', name, id, min: f.minimum, max: f.maximum, step: f.step ?? (f.type === 'integer' ? 1 : 'any'),
      placeholder: f.default !== undefined ? String(f.default) : 'default', inputmode: 'numeric' });
  }
  control.setAttribute('aria-describedby', described);
  const check = f.type === 'boolean' && f.default !== undefined;
  return h('label', { 'data-path': f.path, class: check ? 'check' : undefined, title: f.description },
    ...(check ? [control, ` ${f.title}`] : [`${f.title} `, control]),
    h('span', { class: 'error', id: described, 'aria-live': 'polite' }));
}

export function buildEditor(modelPresets: string[]): void {
  const groups: Record<string, HTMLElement> = {};
  for (const fs of form().querySelectorAll<HTMLElement>('fieldset[data-group]')) groups[fs.dataset.group!] = fs;
  for (const fs of Object.values(groups)) fs.querySelectorAll('.generated').forEach((x) => x.remove());
  presetSelect().replaceChildren(h('option', { value: '' }, '(Hugging Face config below)'), ...modelPresets.map((p) => h('option', { value: p }, p)));
  for (const f of JOB_SCHEMA) {
    const el = fieldControl(f);
    el.classList.add('generated');
    const fs = groups[f.group];
    if (f.advanced) fs.querySelector('details')!.append(el);
    else fs.querySelector('details')!.before(el);
  }
  applyMode();
}

// A number field whose text the browser could not read as a number ("5e",
// "--3"): its value reads as '' (validity.badInput), which would silently
// mean "the default". The first such field of the job's mode, if any.
export function unreadableNumber(): { path: string; title: string } | null {
  const mode = jobMode();
  for (const f of JOB_SCHEMA) {
    if (!inMode(f, mode)) continue;
    const el = field<HTMLInputElement | HTMLSelectElement>(f.path);
    if (el instanceof HTMLInputElement && el.type === 'number' && el.validity.badInput) return { path: f.path, title: f.title };
  }
  return null;
}

export function readJob(): JobJson {
  const job: JobJson = {};
  const preset = presetSelect().value;
  const hf = hfText().value.trim();
  // A pasted config wins: the preset select is emptied when one is given
  // (useHfConfig), and a config left in the box is used even if not.
  if (hf) set(job, 'model.hf_config', hf);
  else set(job, 'model.preset', preset || 'gpt3-1.7b');
  const mode = jobMode();
  if (mode === 'inference') job.mode = 'inference';
  const mix = mode === 'inference' ? parseRequests(mixText()?.value ?? '') : undefined;
  for (const f of JOB_SCHEMA) {
    if (!inMode(f, mode)) continue;
    const el = field<HTMLInputElement | HTMLSelectElement>(f.path);
    if (!el) continue;
    if (f.path === 'model.strict' && !hf) continue;  // applies to a pasted HF config only
    if (f.type === 'requests') { if (mix !== undefined) set(job, f.path, mix); continue; }
    if (mix !== undefined && FIXED_LENGTHS.includes(f.path)) continue;
    if (el instanceof HTMLInputElement && el.type === 'checkbox') { if (el.checked) set(job, f.path, true); continue; }
    const v = el.value.trim();
    if (v === '') continue;
    if (f.type === 'boolean') set(job, f.path, v === 'true');
    else if (f.type === 'list') set(job, f.path, v.split(',').map((x) => x.trim()));
    else if (f.type === 'string') set(job, f.path, v);
    else set(job, f.path, Number(v));
  }
  // The hardware preset alone is written as a string, the CLI's short form.
  const hw = job.hardware as JobJson | undefined;
  if (hw && Object.keys(hw).length === 1 && hw.preset) job.hardware = hw.preset;
  return job;
}

export function writeJob(job: JobJson): void {
  lastCleared = [];
  const model = (typeof job.model === 'string' ? { preset: job.model } : job.model ?? {}) as JobJson;
  const hf = model.hf_config;
  presetSelect().value = typeof model.preset === 'string' && hf === undefined ? model.preset : '';
  hfText().value = hf === undefined ? '' : typeof hf === 'string' ? hf : JSON.stringify(hf, null, 2);
  hfText().dataset.active = hf === undefined ? '' : '1';
  const norm: JobJson = { ...job, model };
  if (typeof job.hardware === 'string') norm.hardware = { preset: job.hardware };
  modeSelect().value = job.mode === 'inference' ? 'inference' : 'training';
  applyMode();
  for (const f of JOB_SCHEMA) {
    const el = field<HTMLInputElement | HTMLSelectElement>(f.path);
    if (!el) continue;
    const v = get(norm, f.path);
    if (f.type === 'requests') { el.value = formatRequests(v); continue; }
    if (f.type === 'list') { el.value = Array.isArray(v) ? v.join(',') : ''; continue; }
    if (el instanceof HTMLInputElement && el.type === 'checkbox') el.checked = v === true;
    else el.value = v === undefined ? (f.enum && f.default !== undefined ? String(f.default) : '') : String(v);
  }
  syncMix();
}

// Model overrides set in the form: [title, value].
function modelOverrides(): [string, string][] {
  const out: [string, string][] = [];
  for (const f of JOB_SCHEMA) {
    if (f.group !== 'model') continue;
    const el = field<HTMLInputElement | HTMLSelectElement>(f.path);
    if (!el) continue;
    const v = el instanceof HTMLInputElement && el.type === 'checkbox' ? (el.checked ? 'on' : '') : el.value.trim();
    if (v) out.push([f.title, v]);
  }
  return out;
}

// A Hugging Face config was given (pasted, dropped, fetched, or typed into
// an empty box): it becomes the model, and the previous model's overrides
// are cleared (overrides set afterwards stay). Returns their titles.
export const hfActive = () => hfText().dataset.active === '1';
let lastCleared: string[] = [];
export function useHfConfig(text?: string): string[] {
  if (text !== undefined) hfText().value = text;
  hfText().dataset.active = '1';
  presetSelect().value = '';
  const cleared = modelOverrides().map(([t]) => t);
  if (cleared.length) lastCleared = cleared;
  for (const f of JOB_SCHEMA) {
    if (f.group !== 'model') continue;
    const el = field<HTMLInputElement | HTMLSelectElement>(f.path);
    if (el instanceof HTMLInputElement && el.type === 'checkbox') el.checked = false;
    else if (el) el.value = '';
  }
  renderModelSource(null);
  return cleared;
}

// A preset was picked: it becomes the model (the pasted config is removed).
// The previous model's overrides (a 2-layer cut of the teaching job) are
// cleared and listed, as for a Hugging Face config: picking llama3-70b
// must give Llama 3 70B, not 2 of its layers.
export function usePreset(): void {
  if (presetSelect().value) { hfText().value = ''; hfText().dataset.active = ''; }
  lastCleared = modelOverrides().map(([t]) => t);
  for (const f of JOB_SCHEMA) {
    if (f.group !== 'model') continue;
    const el = field<HTMLInputElement | HTMLSelectElement>(f.path);
    if (el instanceof HTMLInputElement && el.type === 'checkbox') el.checked = false;
    else if (el) el.value = '';
  }
  renderModelSource(null);
}

// "Model in use": the source, its resolved size once the engine answered,
// and the overrides applied on top.
// hfWarnings: the summary's hf_import.warnings (keys the import did not
// read, fields it could not model; docs/hf-import.md), shown under the
// config box; cleared (null model) while a new job is read.
export function renderModelSource(model: Record<string, any> | null, hfWarnings: string[] = []): void {
  const cleared = lastCleared;
  const el = $('#model-source');
  const hf = hfText().value.trim() !== '';
  const src = hf ? 'the pasted Hugging Face config' : `preset ${presetSelect().value || 'gpt3-1.7b'}`;
  const size = model ? ` — ${model.name ?? ''} ${model.num_layers} layers, hidden ${model.hidden}, ${model.num_heads} heads${model.num_experts ? `, ${model.num_experts} experts` : ''}` : '';
  const ov = modelOverrides();
  el.replaceChildren(h('strong', {}, 'Model in use: '), `${src}${size}.`,
    ov.length ? ` Overrides on top: ${ov.map(([t, v]) => `${t} = ${v}`).join(', ')}.` : ' No overrides.',
    cleared.length ? ` Cleared the previous model’s overrides (${cleared.join(', ')}).` : '');
  el.dataset.source = hf ? 'hf' : 'preset';
  const warn = $('#hf-warnings');
  const shown = hf && model ? hfWarnings : [];
  warn.hidden = shown.length === 0;
  warn.replaceChildren(...(shown.length ? [
    h('strong', {}, `The Hugging Face config: ${shown.length} warning${shown.length > 1 ? 's' : ''}. `),
    'Keys the import did not read are left out of every number here; check that none changes the model.',
    h('ul', {}, ...shown.map((w) => h('li', {}, w)))] : []));
}

export function clearErrors(): void {
  for (const label of form().querySelectorAll<HTMLElement>('[data-path]')) {
    label.classList.remove('invalid');
    label.querySelector(':is(input,select,textarea)')?.removeAttribute('aria-invalid');
    const e = label.querySelector('.error');
    if (e) { e.textContent = ''; e.removeAttribute('data-code'); }
  }
  const fe = $('#form-error');
  fe.replaceChildren();
  fe.removeAttribute('data-code');
}

// The message goes next to the field whose path is the error's path or its
// closest ancestor (model.hf_config.hidden_size lands on the HF box); with
// no such field, under the job editor.
export function showError(err: EngineError): void {
  const { lead, text, hint } = explain(err);
  let best: HTMLElement | null = null, bestLen = -1;
  for (const label of form().querySelectorAll<HTMLElement>('[data-path]')) {
    const p = label.dataset.path!;
    if (err.path && (err.path === p || err.path.startsWith(`${p}.`) || err.path.startsWith(`${p}[`)) && p.length > bestLen) { best = label; bestLen = p.length; }
  }
  const slot = best ? best.querySelector<HTMLElement>('.error')! : $('#form-error');
  // serving.requests[1].output_tokens on the mix box: "class 2, output_tokens"
  const rest = best && err.path !== best.dataset.path ? err.path.slice(bestLen).replace(/^\./, '') : '';
  const cls = /^\[(\d+)\]\.?(.*)$/.exec(rest);
  // A list field's entry (training.recompute_modules[1]): "entry 2".
  const item = best?.dataset.path === 'serving.requests' ? 'class' : 'entry';
  const sub = !rest ? '' : cls ? ` (${item} ${Number(cls[1]) + 1}${cls[2] ? `, ${cls[2]}` : ''})` : ` (${rest})`;
  slot.replaceChildren(h('strong', {}, `${lead}${sub}: `), text, hint ? h('span', { class: 'error-hint' }, ` ${hint}`) : '');
  slot.dataset.code = err.code;
  slot.title = `engine code: ${err.code}${err.path ? `, field ${err.path}` : ''}`;
  if (best) {
    best.classList.add('invalid');
    best.querySelector(':is(input,select,textarea)')?.setAttribute('aria-invalid', 'true');
    best.closest('details')?.setAttribute('open', '');
  }
}
