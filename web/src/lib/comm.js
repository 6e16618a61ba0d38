// Bytes on the wire per rank, from one rank's decoded trace (chakra.js).
//
// Chakra's comm_size means different things per collective
// (docs/trace-format.md): the full per-rank buffer for all-reduce,
// all-to-all and reduce-scatter, but the rank's own shard for all-gather.
// What a rank actually sends depends on the algorithm; this uses the ring
// (bandwidth-optimal) one NCCL uses for large messages, with g = group size:
//   all-reduce      2(g−1)/g × comm_size   (reduce-scatter, then all-gather)
//   reduce-scatter   (g−1)/g × comm_size
//   all-gather       (g−1)   × comm_size   (every other rank's shard passes by)
//   all-to-all       (g−1)/g × comm_size   (all but the part that stays local)
//   send / recv      comm_size             (pipeline point-to-point)
// A ring rank receives as much as it sends, so "sent" is also "received";
// point-to-point traffic is counted on the sending side (a recv adds to
// `received` only).

export const COMM_COLL = 7, COMM_SEND = 5, COMM_RECV = 6;
const ALL_REDUCE = 0, ALL_GATHER = 2, ALL_TO_ALL = 6, REDUCE_SCATTER = 7;

// Bytes one rank sends for one collective of comm_type with comm_size
// bytes over a group of g ranks.
export function wireBytes(commType, commSize, g) {
  if (!(g > 1)) return 0;
  switch (commType) {
    case ALL_REDUCE: return (2 * (g - 1) / g) * commSize;
    case REDUCE_SCATTER: return ((g - 1) / g) * commSize;
    case ALL_TO_ALL: return ((g - 1) / g) * commSize;
    case ALL_GATHER: return (g - 1) * commSize;
    default: return NaN;
  }
}

// The algorithm factor as text, for the table's definition column.
export const WIRE_FACTOR = { 0: '2(g−1)/g', 7: '(g−1)/g', 6: '(g−1)/g', 2: 'g−1' };

// nodes: decoded Chakra nodes; groupOf(pg_name) -> { axis, size } or
// undefined. Returns rows, one per group kind (the collective's axis, or
// 'pp (send/recv)'), each { kind, size, ops, buffer, sent, received }, and
// the totals. The axis is the end of the node name, "…all_reduce(tp)".
export function wireByGroupKind(nodes, groupOf) {
  const rows = new Map();
  const row = (kind, size) => {
    let r = rows.get(kind);
    if (!r) rows.set(kind, (r = { kind, size, ops: 0, buffer: 0, sent: 0, received: 0 }));
    if (size > r.size) r.size = size;
    return r;
  };
  for (const n of nodes) {
    const size = Number(n.attrs.comm_size ?? 0);
    if (n.type === COMM_SEND || n.type === COMM_RECV) {
      const r = row('pp (send/recv)', 2);
      r.ops++;
      r.buffer += size;
      if (n.type === COMM_SEND) r.sent += size; else r.received += size;
    } else if (n.type === COMM_COLL) {
      const g = groupOf(String(n.attrs.pg_name));
      const axis = g?.axis ?? /\(([^()]+)\)$/.exec(n.name)?.[1] ?? '?';
      const gs = g?.size ?? 1;
      const r = row(axis, gs);
      const w = wireBytes(Number(n.attrs.comm_type), size, gs);
      r.ops++;
      r.buffer += size;
      r.sent += w;
      r.received += w;
    }
  }
  const list = [...rows.values()].sort((a, b) => b.sent - a.sent || a.kind.localeCompare(b.kind));
  const total = list.reduce((t, r) => ({ ops: t.ops + r.ops, buffer: t.buffer + r.buffer, sent: t.sent + r.sent, received: t.received + r.received }),
    { ops: 0, buffer: 0, sent: 0, received: 0 });
  return { rows: list, total };
}
