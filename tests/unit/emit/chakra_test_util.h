// Test-only protobuf wire encoder, written from the wire-format rules
// (varints, field keys, length-delimited fields) without the protobuf
// library, so the writer's bytes are checked against an independent
// encoding rather than against its own reader.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace/rank_trace.h"

namespace sc::test {

struct Wire {
  std::string b;

  Wire& varint(uint64_t v) {
    while (v >= 0x80) {
      b.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    b.push_back(static_cast<char>(v));
    return *this;
  }
  Wire& key(int field, int wire_type) { return varint(static_cast<uint64_t>(field) << 3 | wire_type); }
  // Varint field (wire type 0). Negative int32/int64 are sign-extended to
  // 64 bits, as protobuf does.
  Wire& num(int field, uint64_t v) { key(field, 0); return varint(v); }
  Wire& len(int field, const std::string& s) {
    key(field, 2);
    varint(s.size());
    b += s;
    return *this;
  }
  Wire& append(const std::string& raw) {
    b += raw;
    return *this;
  }
  Wire& packed(int field, const std::vector<uint64_t>& vs) {
    Wire inner;
    for (uint64_t v : vs) inner.varint(v);
    return len(field, inner.b);
  }
  // Appends varint(len(msg)) msg.
  Wire& frame(const std::string& msg) {
    varint(msg.size());
    b += msg;
    return *this;
  }
};

// AttributeProto: name = 1, then one oneof member (field number = kind).
inline std::string attr_num(const std::string& name, int kind_field, uint64_t v) {
  return Wire{}.len(1, name).num(kind_field, v).b;
}
inline std::string attr_str(const std::string& name, const std::string& v) {
  return Wire{}.len(1, name).len(29, v).b;
}
constexpr int kInt32Val = 7, kInt64Val = 9, kUint64Val = 13, kBoolVal = 27, kStringVal = 29;

inline TraceNode compute(uint64_t id, std::string name, std::vector<uint64_t> deps,
                         int64_t ops = 1000, uint64_t bytes = 300, uint64_t us = 5) {
  TraceNode n;
  n.id = id;
  n.name = std::move(name);
  n.kind = TraceNodeKind::kCompute;
  n.deps = std::move(deps);
  n.num_ops = ops;
  n.tensor_size = bytes;
  n.duration_micros = us;
  return n;
}

inline TraceNode collective(uint64_t id, std::string name, std::vector<uint64_t> deps,
                            CollectiveType c, int64_t size, int64_t group) {
  TraceNode n;
  n.id = id;
  n.name = std::move(name);
  n.kind = TraceNodeKind::kCollective;
  n.deps = std::move(deps);
  n.coll = c;
  n.comm_size = size;
  n.group = group;
  return n;
}

inline TraceNode p2p(uint64_t id, std::string name, std::vector<uint64_t> deps, bool send,
                     int32_t peer, int32_t tag, int64_t size) {
  TraceNode n;
  n.id = id;
  n.name = std::move(name);
  n.kind = send ? TraceNodeKind::kSend : TraceNodeKind::kRecv;
  n.deps = std::move(deps);
  n.peer = peer;
  n.tag = tag;
  n.comm_size = size;
  return n;
}

inline TraceMetadata test_meta(int64_t world_size = 4) {
  TraceMetadata m;
  m.generator_version = "0.1.0";
  m.config_hash = "abc123";
  m.world_size = world_size;
  return m;
}

// A small trace using every node kind, for round trips and fuzzing.
inline RankTrace sample_trace() {
  RankTrace t;
  t.rank = 1;
  t.nodes.push_back(compute(0, "fwd.qkv", {}));
  t.nodes.push_back(collective(1, "fwd.ar", {0}, CollectiveType::kAllReduce, 1 << 20, 1));
  t.nodes.push_back(p2p(2, "pp.send", {1}, true, 3, 7, 4096));
  t.nodes.push_back(p2p(3, "pp.recv", {}, false, 0, 8, 4096));
  t.nodes.push_back(collective(4, "bwd.rs", {2, 3}, CollectiveType::kReduceScatter, 2048, 2));
  t.nodes.push_back(compute(5, "bwd.mlp", {3, 4}, 0, 1, 0));
  return t;
}

}  // namespace sc::test
