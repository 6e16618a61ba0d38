// A simple schedule of one rank's decoded trace, for the preview timeline
// (docs/web-app.md): one compute stream and one communication stream; nodes
// are issued in id order (the trace's issue order); a node starts when its
// stream is free and all its data_deps have finished. Compute takes
// duration_micros (the engine's roofline time); a collective takes
// comm_size / link bandwidth (NVLink when its group fits in one node,
// otherwise the network), with the hardware profile's numbers. This is a
// teaching approximation, not ASTRA-sim: no contention, no algorithm factor.
// Plain JS so the app and the test suites share it.

export const COMPUTE = 0;
export const COMM = 1;

// groups: Map<pg_name string, {size, intraNode}>; hw: {intra_node_bw,
// inter_node_bw} in bytes/s. Returns {start, end, stream} typed arrays (µs)
// indexed like nodes, plus the makespan and per-stream busy time.
export function schedule(nodes, hw, groups = new Map()) {
  const n = nodes.length;
  const start = new Float64Array(n), end = new Float64Array(n), stream = new Uint8Array(n);
  const endById = new Map();
  const free = [0, 0];
  const busy = [0, 0];
  const intra = Number(hw?.intra_node_bw) || 450e9, inter = Number(hw?.inter_node_bw) || 50e9;
  for (let i = 0; i < n; i++) {
    const node = nodes[i];
    const s = node.type === 4 ? COMPUTE : COMM;
    let t = free[s];
    for (const d of node.deps) {
      const e = endById.get(d);
      if (e !== undefined && e > t) t = e;
    }
    let dur;
    if (s === COMPUTE) dur = node.duration;
    else {
      const g = groups.get(String(node.attrs.pg_name));
      const bw = g && !g.intraNode ? inter : intra;
      dur = (Number(node.attrs.comm_size) || 0) / bw * 1e6;
    }
    start[i] = t;
    end[i] = t + dur;
    stream[i] = s;
    free[s] = t + dur;
    busy[s] += dur;
    endById.set(node.id, t + dur);
  }
  let makespan = 0;
  for (let i = 0; i < n; i++) if (end[i] > makespan) makespan = end[i];
  // Communication time hidden under compute: overlap of the two streams.
  return { start, end, stream, makespan, busy };
}

// Memory over time (bytes): the static part (weights, gradients, optimizer
// state) plus the engine's live-activation curve of this rank's pipeline
// stage (summary.json stages[k].live_activation_timeline: every activation
// buffer alive at each node, in issue order, each point the maximum over
// `nodes_per_point` nodes). A point is placed at the start time of its
// first node on this schedule; points come back in time order.
export function memoryOverTime(nodes, sched, staticBytes, live) {
  const per = Math.max(1, Number(live?.nodes_per_point) || 1);
  const bytes = Array.isArray(live?.bytes) ? live.bytes : [];
  const points = [];
  let peak = staticBytes;
  for (let k = 0; k < bytes.length && k * per < nodes.length; k++) {
    const v = staticBytes + (Number(bytes[k]) || 0);
    if (v > peak) peak = v;
    points.push([sched.start[k * per], v]);
  }
  points.sort((a, b) => a[0] - b[0]);
  points.unshift([0, staticBytes]);
  return { points, peak };
}

// Chrome / Perfetto trace-event JSON of one rank's schedule: "X" events on
// two threads (compute, communication) of process <rank>, times in µs.
export function toPerfetto(rank, nodes, sched, meta = {}) {
  const pid = rank;
  const events = [
    { name: 'process_name', ph: 'M', pid, tid: 0, args: { name: `rank ${rank}` } },
    { name: 'thread_name', ph: 'M', pid, tid: COMPUTE + 1, args: { name: 'compute stream' } },
    { name: 'thread_name', ph: 'M', pid, tid: COMM + 1, args: { name: 'communication stream' } },
  ];
  for (let i = 0; i < nodes.length; i++) {
    const node = nodes[i];
    const args = { id: node.id, deps: node.deps };
    for (const [k, v] of Object.entries(node.attrs)) if (k !== 'is_cpu_op') args[k] = v;
    events.push({
      name: node.name, cat: node.type === 4 ? 'compute' : 'communication', ph: 'X',
      ts: sched.start[i], dur: sched.end[i] - sched.start[i], pid, tid: sched.stream[i] + 1, args,
    });
  }
  return { traceEvents: events, displayTimeUnit: 'ms', otherData: { generator: 'stagecraft web app', rank, ...meta } };
}
