// First visit: what this is and three example jobs (shown when the page has
// no #job= and the visitor has not closed it before; the header's "Getting
// started" button brings it back). And the Hugging Face hub loader: a model
// id -> <hub>/<id>/resolve/main/config.json, fetched by the browser itself.
import { $, h } from '../util';

export const EXAMPLES: { id: string; what: string }[] = [
  { id: 'teach', what: 'a 2-layer GPT on 4 GPUs: see the tensor-parallel all-reduces and the data-parallel gradient reduction' },
  { id: 'pipeline', what: 'a 4-stage pipeline: stages, micro-batches, the bubble and send/recv between stages' },
  { id: 'mixtral-8x7b', what: 'Mixtral 8×7B on 32 GPUs: experts, all-to-all dispatch and combine' },
  { id: 'llama3-70b-serve', what: 'serving Llama 3 70B on 8 H100s: the KV cache per token, how many 8K-token requests fit, time to first token, time per output token, and throughput against latency as more requests share each step' },
];
const SEEN = 'stagecraft.welcome.closed';

export function initWelcome(titles: Map<string, string>, load: (presetId: string) => void, firstVisit: boolean): void {
  const panel = $('#welcome');
  const list = $('#welcome-examples');
  list.replaceChildren(...EXAMPLES.map((e) => h('li', {},
    h('button', { type: 'button', 'data-example': e.id }, titles.get(e.id) ?? e.id), ` — ${e.what}`)));
  list.addEventListener('click', (ev) => {
    const b = (ev.target as HTMLElement).closest<HTMLButtonElement>('button[data-example]');
    if (b) load(b.dataset.example!);
  });
  let closed = false;
  try { closed = localStorage.getItem(SEEN) === '1'; } catch { /* storage off */ }
  panel.hidden = !firstVisit || closed;
  $('#welcome-close').addEventListener('click', () => {
    panel.hidden = true;
    try { localStorage.setItem(SEEN, '1'); } catch { /* storage off */ }
    $<HTMLButtonElement>('#show-welcome').focus();
  });
  $('#show-welcome').addEventListener('click', () => { panel.hidden = false; $<HTMLButtonElement>('#welcome-close').focus(); });
}

// The hub the loader asks: huggingface.co, or `?hub=<origin>` in the page
// address (the tests point it at a fixture server on 127.0.0.1).
export function hubBase(): string {
  const q = new URLSearchParams(location.search).get('hub');
  return (q || 'https://huggingface.co').replace(/\/+$/, '');
}

const ID_RE = /^[A-Za-z0-9][\w.-]*(\/[\w.-]+)?$/;

// Resolves to the config.json text, or rejects with a sentence for the user.
export async function fetchHfConfig(id: string, hub = hubBase()): Promise<string> {
  const name = id.trim().replace(/^https?:\/\/huggingface\.co\//, '');
  if (!ID_RE.test(name)) throw new Error(`“${id}” is not a Hugging Face model id (owner/name, e.g. meta-llama/Llama-3.1-8B).`);
  const url = `${hub}/${name}/resolve/main/config.json`;
  let res: Response;
  try {
    res = await fetch(url, { mode: 'cors', credentials: 'omit' });
  } catch {
    throw new Error(`The browser could not reach ${hub} (offline, or blocked by a firewall or the browser). Download ${name}’s config.json on a machine that can and drop it on the config.json box above.`);
  }
  if (res.status === 401 || res.status === 403) throw new Error(`${name} is gated or private on the hub: accept its license on huggingface.co, download config.json and drop it on the config.json box above.`);
  if (res.status === 404) throw new Error(`The hub has no config.json for “${name}”: check the id (owner/name, as in the model page’s address).`);
  if (!res.ok) throw new Error(`The hub answered ${res.status} ${res.statusText} for ${name}’s config.json.`);
  const text = await res.text();
  try { JSON.parse(text); } catch { throw new Error(`${name}’s config.json from the hub is not JSON.`); }
  return text;
}
