// The archive through the bridge (archiveManifest / archiveEntry, the
// request layer's archive_manifest / archive_entry): the list the browser
// zips is the CLI's directory export, name for name and byte for byte
// (summary.json included), in the order core/api/export.h defines.
import { IDENTITY_JOB, json } from './jobs.mjs';

export const name = 'archive';

const job = json(IDENTITY_JOB);  // tp 2 x dp 2: 4 ranks

export const cases = [
  {
    name: 'archiveManifest lists traces, comm_groups.json, summary.json in order; bundle adds astra-sim/ and manifest.json',
    run: ({ engine, assert }) => {
      const m = JSON.parse(engine.archiveManifest(job, 'files', 'trace', false));
      assert.equal(m.ok, true, 'files manifest ok');
      assert.equal(m.manifest.worldSize, 4, 'worldSize');
      assert.equal(m.manifest.entries.map((e) => e.name).join(' '),
        'trace.0.et trace.1.et trace.2.et trace.3.et comm_groups.json summary.json', 'files order');
      assert.equal(m.manifest.entries.filter((e) => e.kind === 'trace').map((e) => e.rank).join(','), '0,1,2,3', 'ranks');
      const b = JSON.parse(engine.archiveManifest(job, 'bundle', 'wl', true));
      assert.equal(b.ok, true, 'bundle manifest ok');
      assert.equal(b.manifest.entries.map((e) => e.name).join(' '),
        'comm_groups.json summary.json astra-sim/network.yml astra-sim/system.json astra-sim/remote_memory.json ' +
        'astra-sim/run.sh wl.0.et wl.1.et wl.2.et wl.3.et manifest.json', 'bundle order');
      assert.equal(b.manifest.entries.find((e) => e.name === 'astra-sim/run.sh').mode, '0755', 'run.sh mode');
      // sizes: true gives every entry's size, and they are the entries' byte counts.
      for (const e of b.manifest.entries) {
        const r = engine.archiveEntry(job, 'bundle', 'wl', e.name);
        assert.equal(r.ok, true, `${e.name} ok`);
        assert.equal(r.bytes.length, e.bytes, `${e.name} size`);
      }
      const mf = JSON.parse(new TextDecoder().decode(engine.archiveEntry(job, 'bundle', 'wl', 'manifest.json').bytes));
      assert.equal(mf.files.map((f) => f.name).join(' '),
        b.manifest.entries.slice(0, -1).map((e) => e.name).join(' '), 'manifest.json lists every other member');
    },
  },
  {
    name: 'archiveEntry bytes equal the CLI directory export, summary.json byte for byte',
    run: async ({ engine, assert, native }) => {
      if (!native.available) return `skip: ${native.reason}`;
      const files = await native.files('identity');
      const m = JSON.parse(engine.archiveManifest(job, 'files', 'trace', false));
      assert.equal(m.ok, true, 'manifest ok');
      assert.equal([...m.manifest.entries.map((e) => e.name)].sort().join(' '), [...files.keys()].sort().join(' '),
        'the same file names as the CLI wrote');
      for (const e of m.manifest.entries) {
        const r = engine.archiveEntry(job, 'files', 'trace', e.name);
        assert.equal(r.ok, true, `${e.name} ok`);
        assert.bytesEqual(r.bytes, files.get(e.name), e.name);
        if (e.kind === 'trace') assert.bytesEqual(r.bytes, engine.rankTrace(job, e.rank).bytes, `${e.name} = rankTrace`);
      }
      return undefined;
    },
  },
  {
    name: 'archive errors name the argument',
    run: ({ engine, assert }) => {
      assert.error(engine.archiveEntry(job, 'files', 'trace', 'trace.4.et'), 'invalid_argument', 'name', 'rank outside the world');
      assert.error(engine.archiveEntry(job, 'files', 'trace', 'manifest.json'), 'invalid_argument', 'name', 'files has no manifest');
      assert.error(JSON.parse(engine.archiveManifest(job, 'tar', 'trace', false)), 'invalid_argument', 'layout', 'layout');
      assert.error(JSON.parse(engine.archiveManifest(job, 'files', '../x', false)), 'invalid_argument', 'prefix', 'prefix');
      assert.error(engine.archiveEntry('{"model":{"preset":"nope"}}', 'files', 'trace', 'summary.json'), 'invalid_argument',
        'model.preset', 'a bad job first');
    },
  },
];
