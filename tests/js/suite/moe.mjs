// Mixture of experts (expert parallelism folded into tp x cp x dp), and
// HSDP's sharding group, through the bridge: summary figures, the rank's
// all-to-all and its group, the graph's remesh ops, and the group file.
import { MOE_JOB, HSDP_JOB, json, withPatch } from './jobs.mjs';
import { decodeTrace, COMM_TYPE_NAMES } from '../../../web/src/lib/chakra.js';

export const name = 'moe';

const ok = (assert, text, what) => {
  const r = JSON.parse(text);
  assert.equal(r.ok, true, `${what}: ${r.error ? `${r.error.path}: ${r.error.message}` : 'ok'}`);
  return r;
};

// Collective nodes of one rank's trace as {type, pg, name}.
function collectives(engine, assert, job, rank) {
  const r = engine.rankTrace(job, rank);
  assert.equal(r.ok, true, `rankTrace(${rank})`);
  return decodeTrace(r.bytes).nodes.filter((n) => n.type === 7)
    .map((n) => ({ type: COMM_TYPE_NAMES[Number(n.attrs.comm_type)], pg: String(n.attrs.pg_name), name: n.name }));
}

const sameSet = (a, b) => a.length === b.length && [...a].sort((x, y) => x - y).every((v, i) => v === [...b].sort((x, y) => x - y)[i]);

export const cases = [
  {
    name: 'MoE summary: active < total parameters by exactly the skipped experts; expert layout',
    run({ engine, assert }) {
      const s = ok(assert, engine.inspect(json(MOE_JOB)), 'inspect').summary;
      const p = s.parameters;
      assert.ok(p.active > 0 && p.active < p.total, `active ${p.active} < total ${p.total}`);
      // Each token skips E - k = 6 of the 8 SwiGLU experts (3·h·fe weights,
      // no biases) in each of the 2 MoE layers.
      assert.equal(p.total - p.active, 2 * (8 - 2) * 3 * 4096 * 14336, 'total - active');
      assert.equal(s.world_size, 8, 'world_size');
      assert.equal(s.layout.ep, 4, 'layout.ep');
      assert.equal(s.layout.expert_tp, 1, 'layout.expert_tp');
      assert.equal(s.layout.expert_dp, 2, 'layout.expert_dp');
      const byAxis = s.communication.per_rank_bytes_by_axis;
      assert.ok(byAxis.ep > 0, `ep traffic (${JSON.stringify(byAxis)})`);
      assert.ok(byAxis.edp > 0, `edp traffic: expert gradients over expert data parallelism (${JSON.stringify(byAxis)})`);
      assert.ok(s.communication.per_rank_collectives.all_to_all > 0, 'all_to_all counted');
      // A dense model: active == total, expert_dp 0.
      const d = ok(assert, engine.inspect(json({ ...MOE_JOB, model: { preset: 'gpt3-1.7b', num_layers: 2 }, parallel: { dp: 4, tp: 2 } })), 'dense').summary;
      assert.equal(d.parameters.active, d.parameters.total, 'dense active == total');
      assert.equal(d.layout.expert_dp, 0, 'dense expert_dp');
    },
  },
  {
    name: 'MoE rank 0: all-to-all over its ep group, which the group file holds',
    run({ engine, assert }) {
      const job = json(MOE_JOB);
      const table = JSON.parse(ok(assert, engine.groups(job), 'groups').text);
      const groups = Object.values(table);
      for (const want of [[0, 1, 2, 3], [4, 5, 6, 7], [0, 4], [3, 7]]) {
        assert.ok(groups.some((g) => sameSet(g, want)), `group file has ${JSON.stringify(want)}: ${JSON.stringify(table)}`);
      }
      for (const [rank, epGroup] of [[0, [0, 1, 2, 3]], [6, [4, 5, 6, 7]]]) {
        const colls = collectives(engine, assert, job, rank);
        const a2a = colls.filter((c) => c.type === 'ALL_TO_ALL');
        // Dispatch + combine forward, their gradients backward: 4 per MoE
        // layer per micro-batch (2 layers, 1 micro-batch).
        assert.equal(a2a.length, 4 * 2 * 1, `rank ${rank}: all_to_all count (${a2a.map((c) => c.name).join(', ')})`);
        for (const c of a2a) {
          assert.match(c.name, /\(ep\)$/, `rank ${rank}: ${c.name} is over ep`);
          assert.ok(sameSet(table[c.pg] ?? [], epGroup), `rank ${rank}: ${c.name} group ${c.pg} = ${JSON.stringify(table[c.pg])}, want ${JSON.stringify(epGroup)}`);
        }
        // rankInfo lists the derived groups too, with the same key.
        const info = ok(assert, engine.rankInfo(job, rank), 'rankInfo').info;
        const epInfo = info.groups.find((g) => g.axis === 'ep');
        assert.ok(epInfo && epInfo.derived === true && sameSet(epInfo.members, epGroup) && String(epInfo.key) === a2a[0].pg,
          `rank ${rank}: rankInfo's ep group ${JSON.stringify(epInfo)}`);
        const edp = colls.filter((c) => /\(edp\)$/.test(c.name));
        assert.ok(edp.length > 0, `rank ${rank}: expert gradients reduced over edp`);
        for (const c of edp) assert.ok(sameSet(table[c.pg] ?? [], [rank % 4, rank % 4 + 4]), `rank ${rank}: ${c.name} group ${JSON.stringify(table[c.pg])}`);
      }
    },
  },
  {
    name: 'MoE graph: remesh ops around the experts, all-to-all over ep explained',
    run({ engine, assert }) {
      const g = ok(assert, engine.graphJson(json(MOE_JOB)), 'graphJson').graph;
      const layer0 = g.ops.filter((o) => o.layer === 0 && o.phase === 'fwd');
      const remesh = layer0.filter((o) => o.kind === 'remesh');
      assert.equal(remesh.length, 2, `two forward remesh ops (permute, combine): ${remesh.map((o) => o.name)}`);
      const a2a = layer0.filter((o) => o.kind === 'collective' && o.collective === 'all_to_all');
      assert.equal(a2a.length, 2, 'dispatch and combine all-to-all');
      for (const o of a2a) {
        assert.equal(o.axis, 'ep', `${o.name} axis`);
        assert.ok(o.why && o.why.text.includes('ep'), `${o.name} explains itself`);
      }
      assert.equal(g.bindings.ep, 4, 'bindings.ep');
      assert.equal(g.bindings.edp, 2, 'bindings.edp');
      assert.equal(g.bindings.E, 8, 'bindings.E');
    },
  },
  {
    name: 'HSDP: gradients reduce-scattered over dp_shard, all-reduced over dp_replicate',
    run({ engine, assert }) {
      const job = json(HSDP_JOB);
      const s = ok(assert, engine.inspect(job), 'inspect').summary;
      assert.equal(s.layout.shard_group, 2, 'layout.shard_group');
      const byAxis = s.communication.per_rank_bytes_by_axis;
      assert.ok(byAxis.dp_shard > 0 && byAxis.dp_replicate > 0, `dp_shard and dp_replicate traffic: ${JSON.stringify(byAxis)}`);
      assert.equal(byAxis.dp, undefined, 'no plain dp traffic');
      const table = JSON.parse(ok(assert, engine.groups(job), 'groups').text);
      const colls = collectives(engine, assert, job, 0);
      const rs = colls.filter((c) => c.type === 'REDUCE_SCATTER' && /\(dp_shard\)$/.test(c.name));
      const ar = colls.filter((c) => c.type === 'ALL_REDUCE' && /\(dp_replicate\)$/.test(c.name));
      assert.ok(rs.length > 0 && ar.length > 0, `rank 0: ${colls.map((c) => c.name).join(', ')}`);
      assert.ok(rs.every((c) => sameSet(table[c.pg], [0, 1])), 'shard group of rank 0 is [0, 1]');
      assert.ok(ar.every((c) => sameSet(table[c.pg], [0, 2])), 'replica group of rank 0 is [0, 2]');
      // The same job with the full group (the default) is plain ZeRO-3.
      const full = ok(assert, engine.inspect(json(withPatch(HSDP_JOB, { parallel: { shard_group: 4 } }))), 'shard_group 4').summary;
      assert.ok(full.communication.per_rank_bytes_by_axis.dp > 0, 'shard_group = dp: plain dp traffic');
    },
  },
];
