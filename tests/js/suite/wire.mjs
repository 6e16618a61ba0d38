// Bytes on the wire per rank (web/src/lib/comm.js): the ring-algorithm
// factors against hand-computed figures, and a real rank's totals against
// quantities derived without the trace (parameter count, activation size).
import { json } from './jobs.mjs';
import { decodeTrace } from '../../../web/src/lib/chakra.js';
import { wireBytes, wireByGroupKind } from '../../../web/src/lib/comm.js';

export const name = 'wire';

const ok = (assert, text, what) => { const r = JSON.parse(text); assert.equal(r.ok, true, `${what}: ${text.slice(0, 200)}`); return r; };

// The rank's groups: pg_name -> {axis, size}, from the group file and the
// collectives' names ("…(dp)").
function groupsOf(engine, job, nodes) {
  const table = JSON.parse(ok({ equal() {} }, engine.groups(job), 'groups').text);
  const out = new Map();
  for (const n of nodes) {
    const pg = n.attrs.pg_name;
    if (pg === undefined || out.has(String(pg))) continue;
    out.set(String(pg), { axis: /\(([^()]+)\)$/.exec(n.name)?.[1] ?? '?', size: table[String(pg)].length });
  }
  return out;
}

export const cases = [
  {
    name: 'chakra.js skips fields it does not decode, empty and non-empty length-delimited ones included',
    run({ assert }) {
      // Hand-built file: metadata {version "v"}, then one node: id 7, name
      // "n", attr inputs = string_list [] (field 30, empty), attr outputs =
      // string_list ["t7", "12"], attr comm_size = 12 (int64_val).
      const str = (field, s) => [field * 8 + 2, s.length, ...[...s].map((c) => c.charCodeAt(0))];
      const msg = (field, bytes) => [field * 8 + 2, bytes.length, ...bytes];
      const key30 = [0xf2, 0x01];  // field 30, wire 2
      const attrIn = [...str(1, 'inputs'), ...key30, 0];
      const list = [...str(1, 't7'), ...str(1, '12')];
      const attrOut = [...str(1, 'outputs'), ...key30, list.length, ...list];
      const attrSize = [...str(1, 'comm_size'), 9 * 8, 12];
      const node = [8, 7, ...str(2, 'n'), ...msg(10, attrIn), ...msg(10, attrOut), ...msg(10, attrSize)];
      const meta = str(1, 'v');
      const t = decodeTrace(new Uint8Array([meta.length, ...meta, node.length, ...node]));
      assert.equal(t.version, 'v');
      assert.equal(t.nodes.length, 1);
      assert.equal(t.nodes[0].id, 7);
      assert.equal(t.nodes[0].name, 'n');
      assert.equal(t.nodes[0].attrs.comm_size, 12, 'the attribute after the skipped lists');
    },
  },
  {
    name: 'ring factors: all-reduce 2(g-1)/g, reduce-scatter and all-to-all (g-1)/g of the buffer, all-gather (g-1) shards',
    run({ assert }) {
      // 1 MiB buffers over 4 ranks: a ring all-reduce sends 3 chunks of 1/4 in
      // the reduce-scatter pass and 3 more in the all-gather pass.
      assert.equal(wireBytes(0, 1 << 20, 4), 6 * (1 << 18), 'all-reduce');
      assert.equal(wireBytes(7, 1 << 20, 4), 3 * (1 << 18), 'reduce-scatter');
      assert.equal(wireBytes(6, 1 << 20, 4), 3 * (1 << 18), 'all-to-all');
      // all-gather's comm_size is the rank's shard: it forwards 3 of them.
      assert.equal(wireBytes(2, 1000, 4), 3000, 'all-gather');
      assert.equal(wireBytes(0, 1000, 2), 1000, 'all-reduce over 2 ranks sends the buffer once');
      assert.equal(wireBytes(0, 1000, 1), 0, 'a group of one sends nothing');
    },
  },
  {
    name: 'dp=4 rank: the gradient all-reduce puts 2·3/4 × (parameters × 4 bytes) on the wire',
    run({ engine, assert }) {
      const job = json({ model: { preset: 'gpt3-1.7b', num_layers: 2 }, parallel: { dp: 4 }, training: { seq_len: 256, micro_batch_size: 1, global_batch_size: 4 } });
      const s = ok(assert, engine.inspect(job), 'inspect').summary;
      const nodes = decodeTrace(engine.rankTrace(job, 1).bytes).nodes;
      const w = wireByGroupKind(nodes, (pg) => groupsOf(engine, job, nodes).get(pg));
      const dp = w.rows.find((r) => r.kind === 'dp');
      assert.ok(dp, `a dp row: ${JSON.stringify(w.rows)}`);
      assert.equal(dp.size, 4, 'dp group size');
      // fp32 gradients (grad_reduce_dtype default), every parameter once.
      const grads = Number(s.parameters.per_rank) * 4;
      assert.equal(dp.buffer, grads, 'all-reduce buffers = the fp32 gradients');
      assert.equal(dp.sent, 1.5 * grads, 'sent = 2(g-1)/g × gradients');
      assert.equal(w.rows.some((r) => r.kind.startsWith('pp')), false, 'no pipeline traffic without pp');
    },
  },
  {
    name: 'pp=2 stage 0 rank: send/recv rows count one activation (b·s·h·2 bytes) per micro-batch each way',
    run({ engine, assert }) {
      const b = 1, sl = 256, hd = 2304, m = 4;  // gpt3-1.7b hidden 2304, bf16 activations
      const job = json({ model: { preset: 'gpt3-1.7b', num_layers: 2 }, parallel: { pp: 2 }, training: { seq_len: sl, micro_batch_size: b, global_batch_size: m } });
      const nodes = decodeTrace(engine.rankTrace(job, 0).bytes).nodes;
      const w = wireByGroupKind(nodes, (pg) => groupsOf(engine, job, nodes).get(pg));
      const pp = w.rows.find((r) => r.kind === 'pp (send/recv)');
      assert.ok(pp, `a send/recv row: ${JSON.stringify(w.rows)}`);
      // Stage 0 sends each micro-batch's activations forward and receives
      // their gradients back.
      assert.equal(pp.sent, m * b * sl * hd * 2, 'sent: activations');
      assert.equal(pp.received, m * b * sl * hd * 2, 'received: activation gradients');
      assert.equal(pp.ops, 2 * m, 'one send and one recv per micro-batch');
    },
  },
];
