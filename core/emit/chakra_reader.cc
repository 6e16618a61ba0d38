// Reader half of emit/: strict decoder of delimited Chakra bytes. It is the
// base of `stagecraft validate`, so it accepts only what the simulator runs
// correctly and reports the node id and attribute at fault. It must not
// crash on any input: every length is bounds-checked before use and
// protobuf-lite's parser is hardened against malformed messages.
#include <charconv>
#include <climits>
#include <string_view>

#include "emit/chakra_schema.h"
#include "emit/chakra_writer.h"

namespace sc {
namespace {

using ChakraProtoMsg::AttributeProto;
using ValueCase = chakra::ValueCase;
namespace attr = chakra::attr;

constexpr char kParseHint[] = "(malformed protobuf, or a string that is not UTF-8)";

Error parse_error(std::string msg) { return make_error(ErrorCode::kParseError, std::move(msg)); }

// Next delimited frame at *pos. Sets *frame and returns true; returns false
// at a clean end of input; an error on a truncated length or frame.
Result<bool> next_frame(std::string_view bytes, size_t* pos, std::string_view* frame) {
  if (*pos == bytes.size()) return false;
  const size_t start = *pos;
  uint64_t len = 0;
  for (int shift = 0;; shift += 7) {
    if (*pos == bytes.size()) {
      return parse_error("truncated frame length at byte " + std::to_string(start));
    }
    if (shift > 28) return parse_error("frame length varint too long at byte " + std::to_string(start));
    const uint8_t b = static_cast<uint8_t>(bytes[(*pos)++]);
    len |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) break;
  }
  if (len > static_cast<uint64_t>(INT_MAX)) {
    return parse_error("frame length " + std::to_string(len) + " at byte " + std::to_string(start) +
                       " exceeds 2 GiB");
  }
  if (len > bytes.size() - *pos) {
    return parse_error("truncated frame at byte " + std::to_string(start) + ": length " +
                       std::to_string(len) + ", " + std::to_string(bytes.size() - *pos) +
                       " bytes left");
  }
  *frame = bytes.substr(*pos, len);
  *pos += len;
  return true;
}

// The value-carrying attributes of one message, looked up by name. A name we
// know must carry exactly its kind and appear at most once; names we do not
// know are ignored (the simulator ignores them too).
struct AttrSpec {
  const char* name;
  ValueCase kind;
};
constexpr AttrSpec kNodeAttrs[] = {
    {attr::kIsCpuOp, AttributeProto::kBoolVal},     {attr::kNumOps, AttributeProto::kInt64Val},
    {attr::kTensorSize, AttributeProto::kUint64Val}, {attr::kCommType, AttributeProto::kInt64Val},
    {attr::kCommSize, AttributeProto::kInt64Val},   {attr::kCommSrc, AttributeProto::kInt32Val},
    {attr::kCommDst, AttributeProto::kInt32Val},    {attr::kCommTag, AttributeProto::kInt32Val},
    {attr::kCommPriority, AttributeProto::kInt32Val}, {attr::kPgName, AttributeProto::kStringVal},
    {attr::kInvolvedDim, AttributeProto::kBoolList},
    {attr::kInputs, AttributeProto::kStringList},   {attr::kOutputs, AttributeProto::kStringList},
};
constexpr AttrSpec kMetaAttrs[] = {
    {attr::kGenerator, AttributeProto::kStringVal}, {attr::kGeneratorVersion, AttributeProto::kStringVal},
    {attr::kConfigHash, AttributeProto::kStringVal}, {attr::kRank, AttributeProto::kInt64Val},
    {attr::kWorldSize, AttributeProto::kInt64Val},
};
constexpr size_t kMaxAttrs = std::size(kNodeAttrs);

// found[i] points at the attribute matching specs[i], or nullptr.
// where() names the message in errors; called only on error, since
// building the label per node would dominate the reader's time.
template <size_t N, typename Where>
Status index_attrs(const google::protobuf::RepeatedPtrField<AttributeProto>& attrs,
                   const AttrSpec (&specs)[N], const Where& where,
                   const AttributeProto* (&found)[kMaxAttrs]) {
  static_assert(N <= kMaxAttrs);
  for (auto& f : found) f = nullptr;
  for (const AttributeProto& a : attrs) {
    for (size_t i = 0; i < N; ++i) {
      if (a.name() != specs[i].name) continue;
      if (a.value_case() != specs[i].kind) {
        return parse_error(where() + ": attribute " + a.name() + " has kind " +
                           chakra::value_kind_name(a.value_case()) + ", expected " +
                           chakra::value_kind_name(specs[i].kind));
      }
      if (found[i]) return parse_error(where() + ": attribute " + a.name() + " appears twice");
      found[i] = &a;
    }
  }
  return ok_status();
}

// Indices into kNodeAttrs / kMetaAttrs, in the same order.
enum NodeAttr {
  kIsCpuOp, kNumOps, kTensorSize, kCommType, kCommSize, kCommSrc,
  kCommDst, kCommTag, kCommPriority, kPgName, kInvolvedDim, kInputs, kOutputs, kNodeAttrCount
};
enum MetaAttr { kGenerator, kGeneratorVersion, kConfigHash, kRank, kWorldSize, kMetaAttrCount };
static_assert(kNodeAttrCount == std::size(kNodeAttrs) && kMetaAttrCount == std::size(kMetaAttrs));

Status read_metadata(std::string_view frame, DecodedTrace* out) {
  ChakraProtoMsg::GlobalMetadata gm;
  if (!gm.ParseFromArray(frame.data(), static_cast<int>(frame.size()))) {
    return parse_error(std::string("global metadata: not a valid GlobalMetadata message ") + kParseHint);
  }
  if (gm.version().empty()) return parse_error("global metadata: missing version");
  const AttributeProto* found[kMaxAttrs];
  SC_RETURN_IF_ERROR(index_attrs(gm.attr(), kMetaAttrs, [] { return std::string("global metadata"); }, found));
  out->version = gm.version();
  if (found[kGenerator]) out->meta.generator = found[kGenerator]->string_val();
  if (found[kGeneratorVersion]) out->meta.generator_version = found[kGeneratorVersion]->string_val();
  if (found[kConfigHash]) out->meta.config_hash = found[kConfigHash]->string_val();
  if (found[kRank]) {
    out->rank = found[kRank]->int64_val();
    out->trace.rank = out->rank;
  }
  out->meta.world_size = found[kWorldSize] ? found[kWorldSize]->int64_val() : 0;
  if (found[kWorldSize] && out->meta.world_size < 1) {
    return parse_error("global metadata: world_size " + std::to_string(out->meta.world_size) + " < 1");
  }
  if (found[kRank] && (out->rank < 0 || (found[kWorldSize] && out->rank >= out->meta.world_size))) {
    return parse_error("global metadata: rank " + std::to_string(out->rank) + " outside world_size " +
                       std::to_string(out->meta.world_size));
  }
  return ok_status();
}

// Decimal group key >= 1, no sign, no leading zeros (the group file's keys).
bool parse_group_key(const std::string& s, int64_t* key) {
  if (s.empty() || s[0] == '0') return false;
  auto r = std::from_chars(s.data(), s.data() + s.size(), *key);
  return r.ec == std::errc() && r.ptr == s.data() + s.size() && *key >= 1;
}

Status convert_node(const ChakraProtoMsg::Node& node, int64_t world_size,
                    const chakra::IdTracker& ids, TraceNode* n) {
  auto where = [&] { return chakra::node_label(node.id(), node.name()); };
  auto fail = [&](const std::string& what) { return parse_error(where() + ": " + what); };
  n->id = node.id();
  n->name = node.name();
  if (n->name.empty()) return fail("missing name");
  const int type = node.type();
  if (!chakra::is_written_node_type(type)) return fail("unknown node type " + std::to_string(type));
  n->kind = static_cast<TraceNodeKind>(type);
  // Older simulators ignore ctrl_deps: an edge there is silently dropped.
  if (node.ctrl_deps_size() > 0) return fail("ctrl_deps is not empty (older readers ignore it)");
  n->deps.assign(node.data_deps().begin(), node.data_deps().end());
  for (uint64_t d : n->deps) {
    if (!ids.seen(d)) return fail("dependency on id " + std::to_string(d) + " which is not earlier in the file");
  }
  n->duration_micros = node.duration_micros();

  const AttributeProto* a[kMaxAttrs];
  SC_RETURN_IF_ERROR(index_attrs(node.attr(), kNodeAttrs, where, a));
  // Memory tracking (optional): alternating tensor name and decimal size.
  for (NodeAttr k : {kInputs, kOutputs}) {
    if (!a[k]) continue;
    const auto& v = a[k]->string_list().values();
    if (v.size() % 2 != 0)
      return fail(std::string("attribute ") + kNodeAttrs[k].name + " has " + std::to_string(v.size()) +
                  " entries, not name/size pairs");
    for (int i = 1; i < v.size(); i += 2) {
      uint64_t b = 0;
      auto res = std::from_chars(v[i].data(), v[i].data() + v[i].size(), b);
      if (v[i].empty() || res.ec != std::errc() || res.ptr != v[i].data() + v[i].size())
        return fail(std::string("attribute ") + kNodeAttrs[k].name + ": size \"" + v[i] + "\" of tensor \"" +
                    v[i - 1] + "\" is not a byte count");
      if (k == kOutputs) n->output_bytes += b;
    }
  }
  auto require = [&](NodeAttr i) -> Status {
    if (!a[i]) return fail(std::string("missing attribute ") + kNodeAttrs[i].name);
    return ok_status();
  };
  SC_RETURN_IF_ERROR(require(kIsCpuOp));
  if (a[kIsCpuOp]->bool_val()) return fail("attribute is_cpu_op is true (stagecraft traces are GPU work)");

  if (n->kind == TraceNodeKind::kCompute) {
    SC_RETURN_IF_ERROR(require(kNumOps));
    SC_RETURN_IF_ERROR(require(kTensorSize));
    n->num_ops = a[kNumOps]->int64_val();
    n->tensor_size = a[kTensorSize]->uint64_val();
    if (n->num_ops < 0) return fail("attribute num_ops is " + std::to_string(n->num_ops) + " < 0");
    if (n->tensor_size == 0) return fail("attribute tensor_size is 0 (stalls the simulator)");
    return ok_status();
  }

  SC_RETURN_IF_ERROR(require(kCommSize));
  n->comm_size = a[kCommSize]->int64_val();
  if (n->comm_size < 0) return fail("attribute comm_size is " + std::to_string(n->comm_size) + " < 0");
  if (n->kind == TraceNodeKind::kCollective) {
    SC_RETURN_IF_ERROR(require(kCommType));
    const int64_t ct = a[kCommType]->int64_val();
    if (!chakra::is_supported_collective(ct)) {
      const char* nm = chakra::comm_type_name(ct);
      return fail("attribute comm_type " + std::string(nm ? nm : "?") + "(" + std::to_string(ct) +
                  ") is not run by the simulator");
    }
    n->coll = static_cast<CollectiveType>(ct);
    SC_RETURN_IF_ERROR(require(kPgName));
    // "" and "0" mean all ranks to the simulator; we always name a group.
    if (!parse_group_key(a[kPgName]->string_val(), &n->group)) {
      return fail("attribute pg_name \"" + a[kPgName]->string_val() + "\" is not a group key >= 1");
    }
    return ok_status();
  }

  const NodeAttr peer_attr = n->kind == TraceNodeKind::kSend ? kCommDst : kCommSrc;
  SC_RETURN_IF_ERROR(require(peer_attr));
  SC_RETURN_IF_ERROR(require(kCommTag));
  n->peer = a[peer_attr]->int32_val();
  n->tag = a[kCommTag]->int32_val();
  if (n->peer < 0 || (world_size > 0 && n->peer >= world_size)) {
    return fail(std::string("attribute ") + kNodeAttrs[peer_attr].name + " is " + std::to_string(n->peer) +
                ", outside world_size " + std::to_string(world_size));
  }
  if (n->tag < 0) return fail("attribute comm_tag is " + std::to_string(n->tag) + " < 0");
  return ok_status();
}

}  // namespace

Result<DecodedTrace> read_chakra_trace(const std::string& bytes) {
  chakra::quiet_protobuf_utf8_logs();
  DecodedTrace out;
  const std::string_view all(bytes);
  size_t pos = 0;
  std::string_view frame;
  SC_ASSIGN_OR_RETURN(bool have_meta, next_frame(all, &pos, &frame));
  if (!have_meta) return parse_error("empty input: no global metadata");
  SC_RETURN_IF_ERROR(read_metadata(frame, &out));

  ChakraProtoMsg::Node node;  // reused across frames
  chakra::IdTracker ids;
  for (;;) {
    const size_t frame_start = pos;
    SC_ASSIGN_OR_RETURN(bool more, next_frame(all, &pos, &frame));
    if (!more) break;
    auto at = [&] { return " (frame at byte " + std::to_string(frame_start) + ")"; };
    // Python tools read a 0-byte record as end of file.
    if (frame.empty()) return parse_error("empty node record" + at());
    if (!node.ParseFromArray(frame.data(), static_cast<int>(frame.size()))) {
      return parse_error("not a valid Node message" + at() + " " + kParseHint);
    }
    TraceNode n;
    SC_RETURN_IF_ERROR(convert_node(node, out.meta.world_size, ids, &n));
    if (!ids.add(n.id)) return parse_error(chakra::node_label(n.id, n.name) + ": duplicate id");
    out.trace.nodes.push_back(std::move(n));
  }
  return out;
}

}  // namespace sc
