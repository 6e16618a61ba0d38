// Guided lessons (issue 25): each lesson is a data file,
// web/src/lessons/<id>.json (format: docs/web-app.md "Writing a lesson"),
// bundled into the app so lessons work offline. A step sets a job, says
// what to change (with a "do it for me" button), highlights what to watch,
// asks the learner to predict before revealing, and explains the result
// with the numbers on screen ({sim.step_seconds|time} placeholders filled
// from the engine's answers for the job shown).
import type { JobJson } from '../protocol';
import { h, fmtBytes, fmtUs } from '../util';
import { emit } from '../bus';
import { state } from '../state';

export interface LessonStep {
  title: string;
  text: string;
  job?: JobJson;                     // loaded into the editor when the step opens
  pin?: boolean;                     // pin the step's job as A (compare) before the change
  change?: string;                   // what to change, in words
  set?: Record<string, unknown>;     // the change as job paths -> values ("do it for me")
  tab?: string;                      // the view to show: summary, graph, rank, downloads
  watch?: string;                    // CSS selector of what to watch (highlighted)
  watchText?: string;                // what to watch, in words
  predict?: { question: string; choices: string[]; answer: number };
  explain: string;                   // shown on reveal; {source.path|format} placeholders
}
export interface Lesson { id: string; order: number; title: string; goal: string; steps: LessonStep[] }

const files = import.meta.glob('../lessons/*.json', { eager: true, import: 'default' }) as Record<string, Lesson>;
export const LESSONS: Lesson[] = Object.values(files).sort((a, b) => a.order - b.order || a.id.localeCompare(b.id));

export interface LessonHost {
  /** Load this job into the editor and compute it. */
  loadJob(job: JobJson): void;
  /** Set these job paths in the editor and compute. */
  setFields(set: Record<string, unknown>): void;
  /** The job in the editor now. */
  job(): JobJson;
  /** Pin the job shown as A; unpin with null. */
  pin(on: boolean): void;
  /** Resolves when the engine has answered for the editor's job (summary, and simulation for training jobs). */
  settled(): Promise<void>;
}

const get = (o: unknown, path: string): unknown => path.split('.').reduce<unknown>((x, k) => (x && typeof x === 'object' ? (x as Record<string, unknown>)[k] : undefined), o);

// {source.path|format}: sources summary, sim (the editor's job, B), a.summary,
// a.sim (job A, pinned); formats pct, time (seconds), bytes, int, or none
// (the value as is); {ratio:sim.step_seconds} is B ÷ A of one path. An
// unknown value is "?" — the lesson tests fail on it.
export function fill(text: string): string {
  return text.replace(/\{(ratio:)?([A-Za-z_][\w.]*)(?:\|(\w+))?\}/g, (_m, ratio: string | undefined, path: string, fmt = '') => {
    const [src, ...rest] = path.split('.');
    const p = rest.join('.');
    const of = (side: 'a' | 'b', s: string, q: string): unknown => {
      if (s === 'summary') return get(side === 'a' ? state.pinned?.summary : state.summary, q);
      if (s === 'sim') return get(side === 'a' ? state.pinned?.simulation : state.simulation, q);
      return undefined;
    };
    if (ratio) {
      const x = Number(of('a', src, p)), y = Number(of('b', src, p));
      return Number.isFinite(x) && Number.isFinite(y) && x !== 0 ? `${(y / x).toFixed(2)}×` : '?';
    }
    const v = src === 'a' ? of('a', rest[0], rest.slice(1).join('.')) : of('b', src, p);
    if (v === undefined || v === null) return '?';
    const n = Number(v);
    switch (fmt) {
      case 'pct': return Number.isFinite(n) ? `${(100 * n).toFixed(1)} %` : '?';
      case 'time': return Number.isFinite(n) ? fmtUs(n * 1e6) : '?';
      case 'bytes': return Number.isFinite(n) ? fmtBytes(n) : '?';
      case 'int': return Number.isFinite(n) ? Math.round(n).toLocaleString('en') : '?';
      default: return typeof v === 'object' ? JSON.stringify(v) : String(v);
    }
  });
}

let host: LessonHost;
let lesson: Lesson | null = null;
let stepIndex = 0;
let panel: HTMLElement;
// The step opened last: a step without a job follows straight from it, or
// is rebuilt from the steps before (a link, Back).
let lastOpened: { id: string; index: number } | null = null;

function clearWatch(): void {
  for (const el of document.querySelectorAll('.lesson-watch')) el.classList.remove('lesson-watch');
}
function markWatch(sel?: string): void {
  clearWatch();
  if (!sel) return;
  for (const el of document.querySelectorAll(sel)) el.classList.add('lesson-watch');
}

// Whether the editor's job has the step's change (every `set` path).
function changed(step: LessonStep): boolean {
  if (!step.set) return true;
  const job = host.job();
  return Object.entries(step.set).every(([p, v]) => JSON.stringify(get(job, p)) === JSON.stringify(v));
}

function renderList(focus = false): void {
  lesson = null;
  lastOpened = null;
  clearWatch();
  panel.dataset.lesson = '';
  panel.dataset.step = '';
  panel.querySelector('#lesson-body')!.replaceChildren(
    h('p', {}, 'Each lesson sets up a job, tells you what to change and what to watch, asks you to predict the result, then explains it with the numbers on screen.'),
    h('ol', { class: 'lesson-list' }, ...LESSONS.map((l) => {
      const b = h('button', { type: 'button', 'data-lesson': l.id }, l.title);
      b.addEventListener('click', () => open(l.id, 0));
      return h('li', {}, b, h('span', { class: 'hint' }, ` — ${l.goal} (${l.steps.length} steps)`));
    })));
  // Finish and All lessons replace the buttons that had the focus.
  if (focus) panel.querySelector<HTMLElement>('.lesson-list button')?.focus();
}

// A step's job (its own, pinned as A if it says so), or, for a step
// without one, the job and A it inherits: the last step before it with a
// job, then the changes of the steps from there up to it, as a learner
// walking through them would have made.
function loadStep(l: Lesson, index: number, sequential: boolean): void {
  const step = l.steps[index];
  if (step.job) {
    host.loadJob(step.job);
    // A is the step's own job, pinned now (its figures follow): a change
    // made at once ("Do it for me") cannot end up in A.
    if (step.pin) host.pin(true);
    else if (state.pinned) host.pin(false);
    return;
  }
  if (sequential) return;
  let from = index - 1;
  while (from > 0 && !l.steps[from].job) from--;
  if (from < 0 || !l.steps[from].job) return;
  loadStep(l, from, false);
  for (let k = from; k < index; k++) if (l.steps[k].set) host.setFields(l.steps[k].set!);
}

export function open(id: string, index: number): void {
  const l = LESSONS.find((x) => x.id === id);
  if (!l) return;
  lesson = l;
  stepIndex = Math.max(0, Math.min(index, l.steps.length - 1));
  const step = l.steps[stepIndex];
  panel.hidden = false;
  panel.dataset.lesson = l.id;
  panel.dataset.step = String(stepIndex);
  panel.dataset.revealed = '';
  loadStep(l, stepIndex, lastOpened?.id === l.id && lastOpened.index === stepIndex - 1);
  lastOpened = { id: l.id, index: stepIndex };
  if (step.tab) emit('select-tab', step.tab);
  const body = panel.querySelector('#lesson-body')!;
  const heading = h('h3', { tabindex: -1, id: 'lesson-step-title' }, `${l.title} — step ${stepIndex + 1} of ${l.steps.length}: ${step.title}`);
  const parts: (HTMLElement | string)[] = [heading, h('p', {}, step.text)];
  if (step.change) {
    const doIt = h('button', { type: 'button', id: 'lesson-do' }, 'Do it for me');
    doIt.addEventListener('click', () => { if (step.set) host.setFields(step.set); });
    parts.push(h('p', { class: 'lesson-change' }, h('strong', {}, 'Change: '), step.change, ' ', step.set ? doIt : ''));
  }
  if (step.watchText) parts.push(h('p', { class: 'lesson-watch-text' }, h('strong', {}, 'Watch: '), step.watchText, step.watch ? ' (outlined on the page)' : ''));
  const out = h('div', { id: 'lesson-explain', 'aria-live': 'polite' });
  const reveal = h('button', { type: 'button', id: 'lesson-reveal' }, step.predict ? 'Reveal the answer' : 'Explain the numbers');
  if (step.predict) {
    const fs = h('fieldset', { class: 'lesson-predict' }, h('legend', {}, `Predict: ${step.predict.question}`),
      ...step.predict.choices.map((c, i) => h('label', { class: 'check' }, h('input', { type: 'radio', name: 'lesson-predict', value: String(i) }), c)));
    parts.push(fs);
    (reveal as HTMLButtonElement).disabled = true;
    fs.addEventListener('change', () => { (reveal as HTMLButtonElement).disabled = false; });
  }
  reveal.addEventListener('click', async () => {
    if (!changed(step)) { out.replaceChildren(h('p', { class: 'hint' }, `Make the change first (${(step.change ?? '').replace(/\.\s*$/, '')}), or press “Do it for me”.`)); return; }
    out.replaceChildren(h('p', { class: 'hint' }, 'waiting for the engine…'));
    await host.settled();
    if (lesson !== l || Number(panel.dataset.step) !== stepIndex) return;
    const picked = panel.querySelector<HTMLInputElement>('input[name="lesson-predict"]:checked');
    const verdict = step.predict && picked
      ? h('p', { class: Number(picked.value) === step.predict.answer ? 'good' : 'bad' },
        h('strong', {}, Number(picked.value) === step.predict.answer ? 'Your prediction was right. ' : 'Not quite. '),
        `The answer: ${step.predict.choices[step.predict.answer]}`)
      : '';
    out.replaceChildren(...(verdict ? [verdict] : []), h('p', { class: 'lesson-explanation' }, fill(step.explain)));
    panel.dataset.revealed = '1';
    markWatch(step.watch);
  });
  parts.push(reveal, out);
  const back = h('button', { type: 'button', id: 'lesson-back' }, '← Back');
  const next = h('button', { type: 'button', id: 'lesson-next' }, stepIndex + 1 < l.steps.length ? 'Next step →' : 'Finish');
  (back as HTMLButtonElement).disabled = stepIndex === 0;
  back.addEventListener('click', () => open(l.id, stepIndex - 1));
  next.addEventListener('click', () => (stepIndex + 1 < l.steps.length ? open(l.id, stepIndex + 1) : renderList(true)));
  const all = h('button', { type: 'button', id: 'lesson-all' }, 'All lessons');
  all.addEventListener('click', () => renderList(true));
  parts.push(h('nav', { class: 'lesson-nav', 'aria-label': 'Lesson steps' }, back, next, all));
  body.replaceChildren(...parts);
  // The watched element is outlined right away (the learner knows where to
  // look before predicting); the step's heading takes the focus.
  requestAnimationFrame(() => markWatch(step.watch));
  heading.focus();
  const url = new URL(location.href);
  url.hash = location.hash.replace(/[#&]lesson=[^&]*/, '') + `&lesson=${l.id}.${stepIndex}`;
  history.replaceState(null, '', url);
}

export function initLessons(el: HTMLElement, toggle: HTMLButtonElement, h0: LessonHost): void {
  host = h0;
  panel = el;
  toggle.addEventListener('click', () => {
    panel.hidden = !panel.hidden;
    toggle.setAttribute('aria-expanded', String(!panel.hidden));
    if (!panel.hidden) (panel.querySelector('h2') as HTMLElement | null)?.focus();
  });
  panel.querySelector('#lesson-close')?.addEventListener('click', () => { panel.hidden = true; clearWatch(); toggle.setAttribute('aria-expanded', 'false'); toggle.focus(); });
  renderList();
}

// A lesson step in the page address (&lesson=<id>.<step>) opens once the
// app has its engine and editor (main.ts calls this at the end of boot).
export function openFromUrl(): boolean {
  const m = /[#&]lesson=([\w-]+)\.(\d+)/.exec(location.hash);
  if (!m || !LESSONS.some((l) => l.id === m[1])) return false;
  panel.hidden = false;
  document.getElementById('show-lessons')?.setAttribute('aria-expanded', 'true');
  open(m[1], Number(m[2]));
  return true;
}

export const currentLesson = () => (lesson ? { id: lesson.id, step: stepIndex } : null);
