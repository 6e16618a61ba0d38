// A small decoder for the Chakra .et files stagecraft writes
// (docs/trace-format.md): a delimited stream of protobuf messages,
// GlobalMetadata then one Node per record. Plain JS (no build step) so the
// web app and the JS test suites (Node and Chromium) share it.
// Only the fields stagecraft writes are decoded; others are skipped.

const TYPE_NAMES = { 4: 'COMP_NODE', 5: 'COMM_SEND_NODE', 6: 'COMM_RECV_NODE', 7: 'COMM_COLL_NODE' };
export const COMM_TYPE_NAMES = { 0: 'ALL_REDUCE', 2: 'ALL_GATHER', 6: 'ALL_TO_ALL', 7: 'REDUCE_SCATTER' };

const utf8 = new TextDecoder();

class Reader {
  constructor(bytes, pos = 0, end = bytes.length) {
    this.b = bytes;
    this.pos = pos;
    this.end = end;
  }
  // Varints as Numbers (exact up to 2^53: FLOPs and bytes of one node fit).
  varint() {
    let result = 0, mul = 1, byte;
    do {
      if (this.pos >= this.end) throw new Error(`truncated varint at ${this.pos}`);
      byte = this.b[this.pos++];
      result += (byte & 0x7f) * mul;
      mul *= 128;
    } while (byte & 0x80);
    return result;
  }
  // Signed int64 (two's complement varint) as a Number.
  int64() {
    const v = this.varint();
    return v >= 2 ** 63 ? v - 2 ** 64 : v;
  }
  bytes() {
    const n = this.varint();
    if (this.pos + n > this.end) throw new Error(`truncated field at ${this.pos}`);
    const s = this.b.subarray(this.pos, this.pos + n);
    this.pos += n;
    return s;
  }
  skip(wire) {
    if (wire === 0) this.varint();
    else if (wire === 1) this.pos += 8;
    else if (wire === 2) { const n = this.varint(); this.pos += n; }  // length first: `pos += varint()` would read pos before the varint moves it
    else if (wire === 5) this.pos += 4;
    else throw new Error(`unsupported wire type ${wire} at ${this.pos}`);
  }
}

function decodeAttr(bytes) {
  const r = new Reader(bytes);
  let name = '', value;
  while (r.pos < r.end) {
    const key = r.varint(), field = Math.floor(key / 8), wire = key & 7;
    if (field === 1 && wire === 2) name = utf8.decode(r.bytes());
    else if ((field === 9 || field === 7 || field === 13 || field === 11) && wire === 0) value = r.int64();
    else if (field === 27 && wire === 0) value = r.varint() !== 0;
    else if (field === 29 && wire === 2) value = utf8.decode(r.bytes());
    else r.skip(wire);
  }
  return [name, value];
}

function packedOrSingle(r, wire, out) {
  if (wire === 2) {
    const len = r.varint();
    const sub = new Reader(r.b, r.pos, r.pos + len);
    r.pos = sub.end;
    while (sub.pos < sub.end) out.push(sub.varint());
  } else out.push(r.varint());
}

function decodeNode(bytes) {
  const r = new Reader(bytes);
  const node = { id: 0, name: '', type: 0, typeName: '', deps: [], duration: 0, attrs: {} };
  while (r.pos < r.end) {
    const key = r.varint(), field = Math.floor(key / 8), wire = key & 7;
    switch (field) {
      case 1: node.id = r.varint(); break;
      case 2: node.name = utf8.decode(r.bytes()); break;
      case 3: node.type = r.varint(); break;
      case 5: packedOrSingle(r, wire, node.deps); break;
      case 7: node.duration = r.varint(); break;
      case 10: { const [k, v] = decodeAttr(r.bytes()); node.attrs[k] = v; break; }
      default: r.skip(wire);
    }
  }
  node.typeName = TYPE_NAMES[node.type] ?? `TYPE_${node.type}`;
  return node;
}

// Decodes a whole .et file: { version, metadata: {attr: value}, nodes: [...] }.
// Node: { id, name, type, typeName, deps, duration (µs), attrs: {num_ops,
// tensor_size, comm_type, comm_size, pg_name, ...} }.
export function decodeTrace(bytes) {
  const r = new Reader(bytes);
  const frame = () => {
    const n = r.varint();
    if (n === 0) throw new Error(`0-byte record at ${r.pos}`);
    if (r.pos + n > r.end) throw new Error(`truncated record at ${r.pos}`);
    const s = bytes.subarray(r.pos, r.pos + n);
    r.pos += n;
    return s;
  };
  const meta = new Reader(frame());
  let version = '';
  const metadata = {};
  while (meta.pos < meta.end) {
    const key = meta.varint(), field = Math.floor(key / 8), wire = key & 7;
    if (field === 1 && wire === 2) version = utf8.decode(meta.bytes());
    else if (field === 2 && wire === 2) { const [k, v] = decodeAttr(meta.bytes()); metadata[k] = v; }
    else meta.skip(wire);
  }
  const nodes = [];
  while (r.pos < r.end) nodes.push(decodeNode(frame()));
  return { version, metadata, nodes };
}
