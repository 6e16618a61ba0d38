// TraceTemplate: see trace_template.h. The wire format written by hand here
// is a few attributes (docs/trace-format.md); everything else comes from
// write_chakra_trace's own bytes.
#include "emit/trace_template.h"

#include <charconv>
#include <cstring>

#include "emit/chakra_schema.h"
#include "emit/chakra_writer.h"

namespace sc {
namespace {

namespace attr = chakra::attr;

// Field tags (field_number << 3 | wire_type).
constexpr uint8_t kTagAttrName = 0x0a;        // AttributeProto.name = 1, LEN
constexpr uint8_t kTagInt32Val = 7 << 3;      // int32_val = 7, VARINT
constexpr uint8_t kTagInt64Val = 9 << 3;      // int64_val = 9, VARINT
constexpr uint16_t kTagStringVal = 29 << 3 | 2;  // string_val = 29, LEN (two-byte tag)
constexpr uint8_t kTagNodeAttr = 10 << 3 | 2;    // Node.attr = 10, LEN
constexpr uint8_t kTagMetaAttr = 2 << 3 | 2;     // GlobalMetadata.attr = 2, LEN

inline char* put_varint(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

inline size_t varint_size(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

inline bool get_varint(const std::string& s, size_t* pos, uint64_t* v) {
  *v = 0;
  for (int shift = 0; shift < 64 && *pos < s.size(); shift += 7) {
    uint8_t b = static_cast<uint8_t>(s[(*pos)++]);
    *v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}

// attr { name: <name>, <int tag>: v } with its Node/GlobalMetadata field tag
// and length, as protobuf writes it (negative ints sign-extend to 10 bytes).
template <size_t N>
char* put_int_attr(char* p, uint8_t outer_tag, const char (&name)[N], uint8_t value_tag, int64_t v) {
  constexpr size_t name_len = N - 1;
  const uint64_t u = static_cast<uint64_t>(v);
  const size_t inner = 2 + name_len + 1 + varint_size(u);
  *p++ = static_cast<char>(outer_tag);
  p = put_varint(p, inner);
  *p++ = static_cast<char>(kTagAttrName);
  *p++ = static_cast<char>(name_len);
  std::memcpy(p, name, name_len);
  p += name_len;
  *p++ = static_cast<char>(value_tag);
  return put_varint(p, u);
}

// attr { name: "pg_name", string_val: "<group>" }.
char* put_pg_name(char* p, int64_t group) {
  char digits[24];
  auto r = std::to_chars(digits, digits + sizeof digits, group);
  const size_t nd = static_cast<size_t>(r.ptr - digits);
  constexpr size_t name_len = sizeof(attr::kPgName) - 1;
  const size_t inner = 2 + name_len + 2 + varint_size(nd) + nd;
  *p++ = static_cast<char>(kTagNodeAttr);
  p = put_varint(p, inner);
  *p++ = static_cast<char>(kTagAttrName);
  *p++ = static_cast<char>(name_len);
  std::memcpy(p, attr::kPgName, name_len);
  p += name_len;
  *p++ = static_cast<char>((kTagStringVal & 0x7f) | 0x80);
  *p++ = static_cast<char>(kTagStringVal >> 7);
  p = put_varint(p, nd);
  std::memcpy(p, digits, nd);
  return p + nd;
}

// The per-rank tail of a hole node: for a collective its pg_name attribute;
// for send/recv the peer, tag and size attributes. Returns the end.
char* put_tail(char* p, TraceNodeKind kind, const TraceNode& v, int64_t comm_size) {
  if (kind == TraceNodeKind::kCollective) return put_pg_name(p, v.group);
  if (kind == TraceNodeKind::kSend) {
    p = put_int_attr(p, kTagNodeAttr, attr::kCommDst, kTagInt32Val, v.peer);
  } else {
    p = put_int_attr(p, kTagNodeAttr, attr::kCommSrc, kTagInt32Val, v.peer);
  }
  p = put_int_attr(p, kTagNodeAttr, attr::kCommTag, kTagInt32Val, v.tag);
  return put_int_attr(p, kTagNodeAttr, attr::kCommSize, kTagInt64Val, comm_size);
}

constexpr size_t kMaxTail = 3 * 40;  // three attributes of <= 40 bytes each
constexpr size_t kMaxMetaVar = 40 + 10;  // rank attribute + frame varint growth

Error internal(const std::string& what) { return make_error(ErrorCode::kInternal, what); }

}  // namespace

Result<TraceTemplate> TraceTemplate::create(const RankTrace& sample, const TraceMetadata& meta) {
  std::string bytes;
  SC_RETURN_IF_ERROR(write_chakra_trace(sample, meta, &bytes));
  TraceTemplate t;
  t.world_size_ = meta.world_size;
  t.num_nodes_ = sample.nodes.size();

  size_t pos = 0;
  uint64_t len = 0;
  // GlobalMetadata: head, rank attribute, world_size attribute.
  if (!get_varint(bytes, &pos, &len) || pos + len > bytes.size()) return internal("template: bad metadata frame");
  {
    char buf[64];
    char* e = put_int_attr(buf, kTagMetaAttr, attr::kRank, kTagInt64Val, sample.rank);
    const std::string rank_attr(buf, e);
    e = put_int_attr(buf, kTagMetaAttr, attr::kWorldSize, kTagInt64Val, meta.world_size);
    t.meta_tail_.assign(buf, e);
    const std::string body = bytes.substr(pos, len);
    const std::string suffix = rank_attr + t.meta_tail_;
    if (body.size() < suffix.size() || body.compare(body.size() - suffix.size(), suffix.size(), suffix) != 0)
      return internal("template: metadata does not end in rank, world_size");
    t.meta_head_ = body.substr(0, body.size() - suffix.size());
    pos += len;
  }

  size_t gap_start = pos;  // start of the constant run in `bytes`
  for (size_t i = 0; i < sample.nodes.size(); ++i) {
    const TraceNode& n = sample.nodes[i];
    const size_t frame_start = pos;
    if (!get_varint(bytes, &pos, &len) || pos + len > bytes.size()) return internal("template: bad node frame");
    const bool hole = n.kind == TraceNodeKind::kCollective || n.kind == TraceNodeKind::kSend ||
                      n.kind == TraceNodeKind::kRecv;
    if (hole) {
      char buf[kMaxTail];
      const size_t tail_len = static_cast<size_t>(put_tail(buf, n.kind, n, n.comm_size) - buf);
      if (len < tail_len || bytes.compare(pos + len - tail_len, tail_len, buf, tail_len) != 0)
        return internal("template: node " + std::to_string(n.id) + " does not end in its per-rank attributes");
      Hole h;
      h.kind = n.kind;
      h.id = n.id;
      h.comm_size = n.comm_size;
      h.gap_off = static_cast<uint32_t>(t.const_.size());
      h.gap_len = static_cast<uint32_t>(frame_start - gap_start);
      t.const_.append(bytes, gap_start, frame_start - gap_start);
      h.head_off = static_cast<uint32_t>(t.const_.size());
      h.head_len = static_cast<uint32_t>(len - tail_len);
      t.const_.append(bytes, pos, len - tail_len);
      t.holes_.push_back(h);
      t.hole_nodes_.push_back(static_cast<uint32_t>(i));
      t.hole_names_.push_back(n.name);
      gap_start = pos + len;
    }
    pos += len;
  }
  if (pos != bytes.size()) return internal("template: trailing bytes");
  if (bytes.size() > UINT32_MAX) return internal("template: one rank's trace exceeds 4 GiB");
  t.end_off_ = static_cast<uint32_t>(t.const_.size());
  t.end_len_ = static_cast<uint32_t>(pos - gap_start);
  t.const_.append(bytes, gap_start, pos - gap_start);
  // Each hole: its tail (<= kMaxTail) plus a frame varint of <= 5 bytes.
  t.max_size_ = t.const_.size() + t.meta_head_.size() + t.meta_tail_.size() + kMaxMetaVar +
                t.holes_.size() * (kMaxTail + 5);
  return t;
}

Result<size_t> TraceTemplate::encode(int64_t rank, const TraceNode* holes, size_t num_holes, char* dst) const {
  if (rank < 0 || rank >= world_size_)
    return internal("rank " + std::to_string(rank) + " outside world_size " + std::to_string(world_size_));
  if (num_holes != holes_.size()) return internal("template: wrong number of per-rank values");
  char* p = dst;
  {
    char buf[64];
    char* e = put_int_attr(buf, kTagMetaAttr, attr::kRank, kTagInt64Val, rank);
    const size_t rank_len = static_cast<size_t>(e - buf);
    p = put_varint(p, meta_head_.size() + rank_len + meta_tail_.size());
    std::memcpy(p, meta_head_.data(), meta_head_.size());
    p += meta_head_.size();
    std::memcpy(p, buf, rank_len);
    p += rank_len;
    std::memcpy(p, meta_tail_.data(), meta_tail_.size());
    p += meta_tail_.size();
  }
  const char* c = const_.data();
  for (size_t i = 0; i < holes_.size(); ++i) {
    const Hole& h = holes_[i];
    const TraceNode& v = holes[i];
    if (h.kind == TraceNodeKind::kCollective) {
      if (v.group < 1)
        return internal(chakra::node_label(h.id, hole_names_[i]) + ": group " + std::to_string(v.group) + " < 1");
    } else {
      if (v.peer < 0 || v.peer >= world_size_)
        return internal(chakra::node_label(h.id, hole_names_[i]) + ": peer " + std::to_string(v.peer) +
                        " outside world_size " + std::to_string(world_size_));
      if (v.tag < 0) return internal(chakra::node_label(h.id, hole_names_[i]) + ": tag " + std::to_string(v.tag) + " < 0");
    }
    std::memcpy(p, c + h.gap_off, h.gap_len);
    p += h.gap_len;
    char tail[kMaxTail];
    const size_t tail_len = static_cast<size_t>(put_tail(tail, h.kind, v, h.comm_size) - tail);
    p = put_varint(p, h.head_len + tail_len);
    std::memcpy(p, c + h.head_off, h.head_len);
    p += h.head_len;
    std::memcpy(p, tail, tail_len);
    p += tail_len;
  }
  std::memcpy(p, c + end_off_, end_len_);
  p += end_len_;
  return static_cast<size_t>(p - dst);
}

Status TraceTemplate::append(int64_t rank, const std::vector<TraceNode>& holes, std::string* out) const {
  const size_t start = out->size();
  out->resize(start + max_size_);
  Result<size_t> n = encode(rank, holes.data(), holes.size(), out->data() + start);
  if (!n.ok()) {
    out->resize(start);
    return n.error();
  }
  out->resize(start + *n);
  return ok_status();
}

}  // namespace sc
