// Downloads: the Chakra archive (built in its own engine worker, with
// progress and cancel), one rank's trace, the Perfetto JSON, job.json, and
// the CLI command that writes the same files.
import { EngineRequestError, type Call } from '../client';
import { toPerfetto } from '../lib/schedule';
import { explain } from '../messages';
import { state, archiveClient } from '../state';
import { $, download, fmtBytes } from '../util';

const ARCHIVE_LIMIT = 1.5e9;  // bytes the browser is asked to hold at most

function cliCommand(): string {
  const job = JSON.stringify(JSON.parse(state.jobText), null, 2);
  return `cat > job.json <<'EOF'\n${job}\nEOF\nstagecraft generate --config job.json -o out`;
}

let archiveCall: Call<{ blob: Blob; bytes: number; files: number }> | null = null;
export function renderDownloads(): void {
  $('#cli').textContent = cliCommand();
  const { summary, preview } = state;
  if (!summary || !preview) return;
  // An inference job's archive holds every part's traces (docs/export.md):
  // each iteration's world, and a disaggregated job's KV transfer (both pools).
  const it = (summary.inference?.iterations ?? {}) as Record<string, { world_size?: number }>;
  const parts = Object.values(it).map((x) => Number(x.world_size) || 0);
  const kv = summary.inference !== undefined && it.mixed === undefined ? Number(it.prefill?.world_size) + Number(it.decode?.world_size) : 0;
  const world = summary.inference !== undefined ? parts.reduce((a, b) => a + b, 0) + (kv || 0) : Number(summary.world_size);
  const estimate = preview.bytes * world;
  const tooBig = estimate > ARCHIVE_LIMIT;
  $('#archive-estimate').textContent = `Estimated archive: ${fmtBytes(estimate)} (${world} traces of about ${fmtBytes(preview.bytes)} each, + comm_groups.json, summary.json${summary.inference !== undefined ? ', one folder per phase' : ''}).`;
  $<HTMLButtonElement>('#dl-archive').disabled = tooBig;
  $('#too-big').hidden = !tooBig;
  $<HTMLButtonElement>('#dl-rank').textContent = `trace.${preview.rank}.et (rank ${preview.rank})`;
  $<HTMLButtonElement>('#dl-perfetto').textContent = `rank ${preview.rank} as Perfetto / Chrome JSON`;
}
$('#dl-rank').onclick = () => {
  const p = state.preview;
  if (p?.raw) download(`trace.${p.rank}.et`, new Blob([p.raw as BlobPart]));
};
$('#dl-perfetto').onclick = () => {
  const p = state.preview;
  if (!p) return;
  const json = toPerfetto(p.rank, p.nodes, p.sched, { config_hash: state.summary?.config_hash, world_size: state.summary?.world_size });
  download(`rank${p.rank}.perfetto.json`, JSON.stringify(json), 'application/json');
};
$('#dl-job').onclick = () => download('job.json', JSON.stringify(JSON.parse(state.jobText), null, 2) + '\n', 'application/json');
$('#copy-cli').onclick = () => { void navigator.clipboard?.writeText($('#cli').textContent ?? ''); $('#copy-cli').textContent = 'copied'; setTimeout(() => { $('#copy-cli').textContent = 'copy'; }, 1500); };
$('#dl-archive').onclick = async () => {
  const bar = $<HTMLProgressElement>('#archive-progress');
  const cancel = $<HTMLButtonElement>('#cancel-archive');
  const msg = $('#archive-status');
  bar.hidden = false; cancel.hidden = false; bar.value = 0;
  msg.textContent = 'building the archive in the engine worker…';
  archiveCall = archiveClient().call('archive', { job: state.jobText }, (p) => { bar.max = p.total; bar.value = p.done; msg.textContent = `${p.done} / ${p.total} traces`; });
  try {
    const r = await archiveCall.promise;
    download('stagecraft-traces.zip', r.blob);
    msg.textContent = `done: ${r.files} files, ${fmtBytes(r.bytes)}`;
  } catch (e) {
    msg.textContent = e instanceof EngineRequestError && e.error.code === 'cancelled' ? 'cancelled' : `failed: ${e instanceof EngineRequestError ? explain(e.error).text : String(e)}`;
  } finally {
    cancel.hidden = true; bar.hidden = true; archiveCall = null;
  }
};
$('#cancel-archive').onclick = () => archiveCall?.cancel();

