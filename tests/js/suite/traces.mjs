// Trace bytes: present, framed, deterministic, and independent of the
// generator cache (a rebuilt generator gives the same bytes).
import { SMALL_JOB, json, withPatch } from './jobs.mjs';

export const name = 'traces';

export const cases = [
  {
    name: 'rankTrace() returns bytes for every rank',
    run({ engine, assert }) {
      for (let rank = 0; rank < 4; rank++) {
        const r = engine.rankTrace(json(SMALL_JOB), rank);
        assert.equal(r.ok, true, `rank ${rank} ok`);
        assert.ok(r.bytes instanceof Uint8Array, `rank ${rank} bytes is a Uint8Array`);
        assert.ok(r.bytes.length > 16, `rank ${rank} has content (${r.bytes.length} bytes)`);
        // First frame: varint length of the GlobalMetadata message.
        assert.ok(r.bytes[0] > 0, 'starts with a non-zero varint frame length');
      }
    },
  },
  {
    name: 'determinism: same bytes twice, also after the cache is rebuilt',
    run({ engine, assert }) {
      const job = json(SMALL_JOB);
      const a = engine.rankTrace(job, 1).bytes;
      const b = engine.rankTrace(job, 1).bytes;
      assert.bytesEqual(b, a, 'cached generator');
      // Another job in between evicts the cached generator.
      assert.equal(JSON.parse(engine.inspect(json(withPatch(SMALL_JOB, { parallel: { dp: 4 }, training: { global_batch_size: 8 } })))).ok, true);
      const c = engine.rankTrace(job, 1).bytes;
      assert.bytesEqual(c, a, 'rebuilt generator');
    },
  },
  {
    name: 'returned bytes survive later calls (copied out of the wasm heap)',
    run({ engine, assert }) {
      const job = json(SMALL_JOB);
      const first = engine.rankTrace(job, 0).bytes;
      const snapshot = first.slice();
      for (let rank = 1; rank < 4; rank++) engine.rankTrace(job, rank);
      engine.inspect(json(withPatch(SMALL_JOB, { parallel: { dp: 8 }, training: { global_batch_size: 8 } })));
      assert.bytesEqual(first, snapshot);
    },
  },
];
