// Writer half of emit/: RankTrace -> delimited Chakra bytes, and the
// communicator-group JSON. Attribute order per node type is part of the
// byte-for-byte output (docs/trace-format.md lists it).
#include "emit/chakra_writer.h"

#include <algorithm>
#include <charconv>
#include <climits>
#include <string>
#include <unordered_map>

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "emit/chakra_schema.h"

namespace sc {
namespace {

using ChakraProtoMsg::AttributeProto;
using ChakraProtoMsg::GlobalMetadata;
using ChakraProtoMsg::Node;
namespace attr = chakra::attr;

// Rough bytes per node (fields + four or five attributes) for reserving the
// output once; the name is added on top.
constexpr size_t kNodeBytesEstimate = 96;

std::string tensor_name(uint64_t id) { return "t" + std::to_string(id); }

template <typename Msg>
AttributeProto* add_attr(Msg* msg, const char* name) {
  AttributeProto* a = msg->add_attr();
  a->set_name(name);
  return a;
}

Error node_error(const TraceNode& n, const std::string& what) {
  return make_error(ErrorCode::kInternal, chakra::node_label(n.id, n.name) + ": " + what);
}

// Invariants whose violation makes the simulator abort, hang or stall; all
// are lowering bugs, hence kInternal.
Status check_node(const TraceNode& n, const TraceMetadata& meta,
                  const chakra::IdTracker& ids) {
  if (n.name.empty()) return node_error(n, "empty name");
  if (!chakra::is_valid_utf8(n.name)) return node_error(n, "name is not valid UTF-8");
  for (uint64_t dep : n.deps) {
    if (!ids.seen(dep)) {
      return node_error(n, "dependency on id " + std::to_string(dep) +
                               " which is not earlier in the file");
    }
  }
  switch (n.kind) {
    case TraceNodeKind::kCompute:
      if (n.num_ops < 0) return node_error(n, "num_ops " + std::to_string(n.num_ops) + " < 0");
      if (n.tensor_size == 0) return node_error(n, "tensor_size 0 (stalls the simulator)");
      return ok_status();
    case TraceNodeKind::kCollective:
      if (!chakra::is_supported_collective(static_cast<int64_t>(n.coll))) {
        return node_error(n, "unsupported collective type " +
                                 std::to_string(static_cast<int>(n.coll)));
      }
      if (n.group < 1) return node_error(n, "group " + std::to_string(n.group) + " < 1");
      break;
    case TraceNodeKind::kSend:
    case TraceNodeKind::kRecv:
      if (n.peer < 0) return node_error(n, "peer " + std::to_string(n.peer) + " < 0");
      if (n.peer >= meta.world_size) {
        return node_error(n, "peer " + std::to_string(n.peer) + " >= world_size " +
                                 std::to_string(meta.world_size));
      }
      if (n.tag < 0) return node_error(n, "tag " + std::to_string(n.tag) + " < 0");
      break;
    default:
      return node_error(n, "unknown node kind " + std::to_string(static_cast<int>(n.kind)));
  }
  if (n.comm_size < 0) return node_error(n, "comm_size " + std::to_string(n.comm_size) + " < 0");
  return ok_status();
}

// One Node per kind, reused across nodes: the attribute list (names, value
// kinds, order) is built once and only values change per node, so the hot
// loop does no attribute-name copies and no oneof clears. Attribute order
// is is_cpu_op, then the kind's own attributes as documented in
// trace-format.md; it is part of the byte-for-byte output.
class NodeTemplates {
 public:
  NodeTemplates() {
    for (Node* t : {&comp_, &coll_, &send_, &recv_}) {
      add_attr(t, attr::kIsCpuOp)->set_bool_val(false);
      add_attr(t, attr::kInputs)->mutable_string_list();
      add_attr(t, attr::kOutputs)->mutable_string_list();
    }
    comp_.set_type(ChakraProtoMsg::COMP_NODE);
    add_attr(&comp_, attr::kNumOps)->set_int64_val(0);
    add_attr(&comp_, attr::kTensorSize)->set_uint64_val(0);
    coll_.set_type(ChakraProtoMsg::COMM_COLL_NODE);
    add_attr(&coll_, attr::kCommType)->set_int64_val(0);
    add_attr(&coll_, attr::kCommSize)->set_int64_val(0);
    add_attr(&coll_, attr::kPgName)->set_string_val("");
    send_.set_type(ChakraProtoMsg::COMM_SEND_NODE);
    add_attr(&send_, attr::kCommDst)->set_int32_val(0);
    add_attr(&send_, attr::kCommTag)->set_int32_val(0);
    add_attr(&send_, attr::kCommSize)->set_int64_val(0);
    recv_.set_type(ChakraProtoMsg::COMM_RECV_NODE);
    add_attr(&recv_, attr::kCommSrc)->set_int32_val(0);
    add_attr(&recv_, attr::kCommTag)->set_int32_val(0);
    add_attr(&recv_, attr::kCommSize)->set_int64_val(0);
  }

  // The template for n's kind, filled with n's values. n passed check_node.
  // output_bytes(id): the output size of an earlier node of the trace.
  template <typename OutputBytes>
  const Node& fill(const TraceNode& n, const OutputBytes& output_bytes) {
    Node* node = nullptr;
    switch (n.kind) {
      case TraceNodeKind::kCompute:
        node = &comp_;
        node->set_duration_micros(n.duration_micros);
        node->mutable_attr(3)->set_int64_val(n.num_ops);
        node->mutable_attr(4)->set_uint64_val(n.tensor_size);
        break;
      case TraceNodeKind::kCollective: {
        node = &coll_;
        node->mutable_attr(3)->set_int64_val(static_cast<int64_t>(n.coll));
        node->mutable_attr(4)->set_int64_val(n.comm_size);
        char buf[24];
        auto r = std::to_chars(buf, buf + sizeof buf, n.group);
        node->mutable_attr(5)->mutable_string_val()->assign(buf, r.ptr);
        break;
      }
      case TraceNodeKind::kSend:
      case TraceNodeKind::kRecv:
        node = n.kind == TraceNodeKind::kSend ? &send_ : &recv_;
        node->mutable_attr(3)->set_int32_val(n.peer);
        node->mutable_attr(4)->set_int32_val(n.tag);
        node->mutable_attr(5)->set_int64_val(n.comm_size);
        break;
    }
    // Memory tracking: this node's output tensor "t<id>" and the outputs of
    // the nodes it depends on.
    auto* in = node->mutable_attr(1)->mutable_string_list()->mutable_values();
    in->Clear();
    for (uint64_t d : n.deps)
      if (uint64_t b = output_bytes(d)) {
        in->Add(tensor_name(d));
        in->Add(std::to_string(b));
      }
    auto* out = node->mutable_attr(2)->mutable_string_list()->mutable_values();
    out->Clear();
    if (n.output_bytes) {
      out->Add(tensor_name(n.id));
      out->Add(std::to_string(n.output_bytes));
    }
    node->set_id(n.id);
    node->set_name(n.name);
    auto* deps = node->mutable_data_deps();
    deps->Clear();
    deps->Reserve(static_cast<int>(n.deps.size()));
    for (uint64_t d : n.deps) deps->AddAlreadyReserved(d);
    return *node;
  }

 private:
  Node comp_, coll_, send_, recv_;
};

// varint(len) then the message. False if the message is too large for a
// protobuf length (2 GiB), which no sane node reaches.
template <typename Msg>
bool write_delimited(const Msg& msg, google::protobuf::io::CodedOutputStream* out) {
  const size_t size = msg.ByteSizeLong();  // caches sizes for the write below
  if (size > static_cast<size_t>(INT_MAX)) return false;
  out->WriteVarint32(static_cast<uint32_t>(size));
  msg.SerializeWithCachedSizes(out);
  return true;
}

Status write_all(const RankTrace& trace, const TraceMetadata& meta,
                 google::protobuf::io::CodedOutputStream* out) {
  GlobalMetadata gm;
  gm.set_version(chakra::kVersion);
  add_attr(&gm, attr::kGenerator)->set_string_val(meta.generator);
  add_attr(&gm, attr::kGeneratorVersion)->set_string_val(meta.generator_version);
  add_attr(&gm, attr::kConfigHash)->set_string_val(meta.config_hash);
  add_attr(&gm, attr::kRank)->set_int64_val(trace.rank);
  add_attr(&gm, attr::kWorldSize)->set_int64_val(meta.world_size);
  if (!write_delimited(gm, out)) {
    return make_error(ErrorCode::kInternal, "global metadata exceeds 2 GiB");
  }

  chakra::IdTracker ids;
  ids.reserve(trace.nodes.size());
  NodeTemplates templates;
  // Node ids are the indices in our traces; a map covers any other ids.
  std::unordered_map<uint64_t, uint64_t> sparse;
  const auto output_bytes = [&](uint64_t id) -> uint64_t {
    if (id < trace.nodes.size() && trace.nodes[id].id == id) return trace.nodes[id].output_bytes;
    auto it = sparse.find(id);
    return it == sparse.end() ? 0 : it->second;
  };
  for (size_t i = 0; i < trace.nodes.size(); ++i) {
    const TraceNode& n = trace.nodes[i];
    SC_RETURN_IF_ERROR(check_node(n, meta, ids));
    if (!ids.add(n.id)) return node_error(n, "duplicate id");
    if (n.id != i) sparse[n.id] = n.output_bytes;
    if (!write_delimited(templates.fill(n, output_bytes), out)) return node_error(n, "node exceeds 2 GiB");
  }
  return ok_status();
}

}  // namespace

Status write_chakra_trace(const RankTrace& trace, const TraceMetadata& meta,
                          std::string* out) {
  if (meta.world_size < 1 || trace.rank < 0 || trace.rank >= meta.world_size) {
    return make_error(ErrorCode::kInternal,
                      "rank " + std::to_string(trace.rank) + " outside world_size " +
                          std::to_string(meta.world_size));
  }
  for (const std::string* s : {&meta.generator, &meta.generator_version, &meta.config_hash}) {
    if (!chakra::is_valid_utf8(*s)) {
      return make_error(ErrorCode::kInternal, "metadata string \"" + *s + "\" is not valid UTF-8");
    }
  }
  const size_t start = out->size();
  size_t estimate = 256 + meta.generator.size() + meta.generator_version.size() +
                    meta.config_hash.size();
  for (const TraceNode& n : trace.nodes) {
    estimate += kNodeBytesEstimate + n.name.size() + 2 * n.deps.size();
  }
  // Grow geometrically so that callers appending many ranks to one buffer
  // do not pay a full copy per call.
  if (out->capacity() < start + estimate) out->reserve(std::max(start + estimate, 2 * out->capacity()));

  Status st = ok_status();
  {
    google::protobuf::io::StringOutputStream sink(out);
    google::protobuf::io::CodedOutputStream coded(&sink);
    // No maps in the schema, so this changes nothing today; it pins the
    // contract (same input -> same bytes) if one is ever added.
    coded.SetSerializationDeterministic(true);
    st = write_all(trace, meta, &coded);
  }  // coded and sink trim *out to the bytes written
  if (!st.ok()) out->resize(start);  // all or nothing
  return st;
}

std::string group_table_json(const GroupTable& groups) {
  std::string s = "{";
  bool first_group = true;
  for (const auto& [key, ranks] : groups) {
    if (!first_group) s += ", ";
    first_group = false;
    s += '"';
    s += std::to_string(key);
    s += "\": [";
    for (size_t i = 0; i < ranks.size(); ++i) {
      if (i) s += ", ";
      s += std::to_string(ranks[i]);
    }
    s += ']';
  }
  s += '}';
  return s;
}

}  // namespace sc
