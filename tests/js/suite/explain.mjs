// The teaching functions of the bridge: graphJson (sharded graph with a
// "why" per collective), rankInfo / rankAt (coordinates and groups), and the
// shared JS decoder + schedule + Perfetto export on a real trace.
import { SMALL_JOB, json, withPatch } from './jobs.mjs';
import { decodeTrace } from '../../../web/src/lib/chakra.js';
import { schedule, toPerfetto } from '../../../web/src/lib/schedule.js';

export const name = 'explain';

const SP_JOB = withPatch(SMALL_JOB, { parallel: { sequence_parallel: true } });

export const cases = [
  {
    name: 'graphJson(): every collective explains itself and names its axis',
    run({ engine, assert }) {
      const r = JSON.parse(engine.graphJson(json(SP_JOB)));
      assert.equal(r.ok, true, 'graphJson ok');
      const g = r.graph;
      assert.ok(g.ops.length > 0 && g.tensors.length > 0, 'ops and tensors');
      const colls = g.ops.filter((o) => o.kind === 'collective');
      assert.ok(colls.length > 0, 'collectives inserted');
      for (const o of colls) {
        assert.ok(o.why && o.why.text.length > 0, `${o.name} has a why`);
        assert.ok(o.why.text.includes(o.axis), `${o.name}: why names ${o.axis}`);
      }
      const rs = colls.find((o) => o.collective === 'reduce_scatter' && o.phase === 'fwd');
      assert.ok(rs, 'a forward reduce-scatter with SP');
      assert.match(rs.why.text, /partial sum over tp/, 'reduce-scatter why');
      for (const t of g.tensors) assert.match(t.shape, /^\[.*\]$/, `${t.name} shape`);
    },
  },
  {
    name: 'rankInfo() / rankAt() round-trip every rank; errors carry a path',
    run({ engine, assert }) {
      const job = json(withPatch(SMALL_JOB, { parallel: { dp: 3 }, training: { global_batch_size: 6 } }));
      for (let r = 0; r < 6; r++) {
        const info = JSON.parse(engine.rankInfo(job, r));
        assert.equal(info.ok, true, `rankInfo ${r}`);
        assert.equal(info.info.coords.tp, r % 2, 'tp is innermost');
        const back = JSON.parse(engine.rankAt(job, JSON.stringify(info.info.coords)));
        assert.equal(back.rank, r, `rankAt(coords of ${r})`);
        for (const g of info.info.groups) assert.ok(g.members.includes(r), `member of its ${g.axis} group`);
      }
      assert.error(JSON.parse(engine.rankInfo(job, 6)), 'invalid_argument', 'rank');
      assert.error(JSON.parse(engine.rankAt(job, '{"tp": 2}')), 'invalid_argument', 'coords.tp');
      assert.error(JSON.parse(engine.rankAt(job, '{"zz": 0}')), 'unknown_field', 'coords.zz');
    },
  },
  {
    name: 'decodeTrace + schedule + toPerfetto on a real trace',
    run({ engine, assert }) {
      const job = json(SP_JOB);
      const r = engine.rankTrace(job, 1);
      const t = decodeTrace(r.bytes);
      assert.equal(t.metadata.rank, 1, 'metadata rank');
      assert.equal(t.metadata.world_size, 4, 'metadata world_size');
      const summary = JSON.parse(engine.inspect(job)).summary;
      assert.equal(t.nodes.length, summary.trace.nodes_per_rank, 'node count matches the summary');
      t.nodes.forEach((n, i) => { if (i) assert.ok(n.id > t.nodes[i - 1].id, 'ids ascending'); });
      const s = schedule(t.nodes, summary.job.hardware);
      for (let i = 0; i < t.nodes.length; i++) {
        for (const d of t.nodes[i].deps) {
          const j = t.nodes.findIndex((n) => n.id === d);
          assert.ok(s.start[i] >= s.end[j] - 1e-9, `node ${t.nodes[i].id} starts after dep ${d}`);
        }
      }
      const p = toPerfetto(1, t.nodes, s);
      const xs = p.traceEvents.filter((e) => e.ph === 'X');
      assert.equal(xs.length, t.nodes.length, 'one X event per node');
      assert.ok(xs.every((e) => typeof e.ts === 'number' && e.dur >= 0 && (e.tid === 1 || e.tid === 2)), 'X events well-formed');
      assert.ok(JSON.parse(JSON.stringify(p)).traceEvents.length > 0, 'serialisable');
    },
  },
];
