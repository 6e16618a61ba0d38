// The teaching functions of the bridge: graphJson (sharded graph of one
// pipeline stage with a "why" per collective), rankInfo / rankAt (coordinates and groups), and the
// shared JS decoder + schedule + Perfetto export on a real trace.
import { SMALL_JOB, json, withPatch } from './jobs.mjs';
import { decodeTrace } from '../../../web/src/lib/chakra.js';
import { schedule, toPerfetto } from '../../../web/src/lib/schedule.js';

export const name = 'explain';

const SP_JOB = withPatch(SMALL_JOB, { parallel: { sequence_parallel: true } });
// 4 layers over tp 2 (SP) x pp 2: stage 0 holds the embedding and layers
// 0-1, stage 1 layers 2-3, the output layer and the loss.
const PP_JOB = withPatch(SMALL_JOB, { model: { num_layers: 4 }, parallel: { dp: 1, pp: 2, sequence_parallel: true } });
// DeepSeek-V3 cut to 4 layers (the first 3 dense) over pp 2 x dp 4, ep 4:
// the only MoE layer, 3, is on stage 1.
const DSV3_PP_JOB = {
  model: { preset: 'deepseek-v3', num_layers: 4 },
  parallel: { dp: 4, pp: 2, ep: 4, expert_tp: 1 },
  training: { seq_len: 64, micro_batch_size: 1, global_batch_size: 8 },
};
const layersOf = (g) => [...new Set(g.ops.map((o) => o.layer).filter((l) => l >= 0))].sort((a, b) => a - b);

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
    name: 'graphJson(job, stage): each pipeline stage\'s own graph, layers and whys; bad stages are errors',
    run({ engine, assert }) {
      const job = json(PP_JOB);
      const g0 = JSON.parse(engine.graphJson(job, 0)).graph;
      const g1 = JSON.parse(engine.graphJson(job, 1)).graph;
      assert.equal(JSON.stringify(JSON.parse(engine.graphJson(job)).graph), JSON.stringify(g0), 'graphJson(job) is stage 0');
      assert.equal(g0.stage, 0, 'stage 0');
      assert.equal(g1.stage, 1, 'stage 1');
      assert.equal(g1.num_stages, 2, 'num_stages');
      assert.equal(g1.ranks_per_stage, 2, 'ranks_per_stage');
      assert.equal(JSON.stringify(g0.layers), '[0,1]', 'stage 0 layers');
      assert.equal(JSON.stringify(g1.layers), '[2,3]', 'stage 1 layers');
      assert.equal(JSON.stringify(layersOf(g1)), '[2,3]', 'stage 1 ops are in layers 2-3');
      assert.equal(g1.first_layer, 2, 'first_layer');
      assert.equal(g1.last_layer, 3, 'last_layer');
      assert.ok(g0.has_embedding && !g0.has_loss, 'stage 0: embedding, no loss');
      assert.ok(!g1.has_embedding && g1.has_loss, 'stage 1: loss, no embedding');
      assert.ok(g1.ops.some((o) => o.kind === 'loss') && !g0.ops.some((o) => o.kind === 'loss'), 'the loss op is on stage 1');
      assert.equal(JSON.stringify(g0.stages), JSON.stringify(g1.stages), 'every stage\'s part, from any stage');
      const names = new Set(g1.ops.map((o) => o.name));
      const colls = g1.ops.filter((o) => o.kind === 'collective');
      assert.ok(colls.length > 0, 'stage 1 has collectives');
      for (const o of colls) {
        assert.ok(!/\bL[01]\./.test(o.why.text), `${o.name}: why speaks of stage 1, not stage 0: ${o.why.text}`);
        if (o.why.producer_id >= 0) assert.equal(g1.ops.find((x) => x.id === o.why.producer_id)?.name, o.why.producer, `${o.name}: producer`);
        for (const c of o.why.consumers) assert.ok(names.has(c), `${o.name}: consumer ${c} is a stage-1 op`);
      }
      for (const bad of [2, -1, 0.5, NaN, 1e300]) {
        const r = JSON.parse(engine.graphJson(job, bad));
        assert.error(r, 'invalid_argument', 'stage', `graphJson(job, ${bad})`);
        assert.match(r.error.message, /\[0, 2\)/, `graphJson(job, ${bad}) names the range`);
      }
      // A job error still wins over the stage.
      assert.error(JSON.parse(engine.graphJson(json(withPatch(PP_JOB, { parallel: { tp: 3 } })), 0)), 'not_divisible');
    },
  },
  {
    name: 'graphJson(job, stage): DeepSeek-V3 with pp 2 has its MoE layer (remesh, all-to-all over ep) on stage 1',
    run({ engine, assert }) {
      const job = json(DSV3_PP_JOB);
      const r0 = JSON.parse(engine.graphJson(job, 0)), r1 = JSON.parse(engine.graphJson(job, 1));
      assert.equal(r0.ok, true, `stage 0: ${r0.error?.message}`);
      assert.equal(r1.ok, true, `stage 1: ${r1.error?.message}`);
      const g0 = r0.graph, g1 = r1.graph;
      assert.equal(JSON.stringify(g1.moe_layers), '[3]', 'stage 1 holds MoE layer 3');
      assert.equal(JSON.stringify(g0.moe_layers), '[]', 'stage 0 is dense');
      assert.ok(!g0.ops.some((o) => o.kind === 'remesh' || o.collective === 'all_to_all'), 'no expert dispatch on stage 0');
      assert.ok(g1.ops.some((o) => o.kind === 'remesh' && o.layer === 3), 'remesh in layer 3 on stage 1');
      const a2a = g1.ops.filter((o) => o.collective === 'all_to_all');
      assert.ok(a2a.length > 0 && a2a.every((o) => o.axis === 'ep' && o.layer === 3), 'all-to-alls over ep in layer 3');
      assert.ok(a2a.some((o) => /MoE token dispatch/.test(o.why.text)), 'a dispatch why');
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
