// Canonical text form of a .et file, for golden files and diffs. The format
// is documented in docs/trace-format.md; any change to it invalidates every
// golden file, so treat it as an interface.
#include <charconv>
#include <string_view>

#include "emit/chakra_schema.h"
#include "emit/chakra_writer.h"

namespace sc {
namespace {

template <typename Int>
void append_int(std::string* s, Int v) {
  char buf[24];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  s->append(buf, r.ptr);
}

// Printable ASCII except space and backslash stays as is; anything else is
// \xHH, so a line always splits on single spaces into its fields.
void append_escaped(std::string* s, std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  for (char c : text) {
    const auto u = static_cast<unsigned char>(c);
    if (u > 0x20 && u < 0x7f && c != '\\') {
      s->push_back(c);
    } else {
      s->append("\\x");
      s->push_back(kHex[u >> 4]);
      s->push_back(kHex[u & 15]);
    }
  }
}

template <typename Int>
void append_attr(std::string* s, const char* name, Int v) {
  s->push_back(' ');
  s->append(name);
  s->push_back('=');
  append_int(s, v);
}

void append_node(std::string* s, const TraceNode& n) {
  namespace attr = chakra::attr;
  append_int(s, n.id);
  s->push_back(' ');
  append_escaped(s, n.name);
  s->push_back(' ');
  s->append(chakra::node_type_name(static_cast<int>(n.kind)));
  s->append(" deps=[");
  for (size_t i = 0; i < n.deps.size(); ++i) {
    if (i) s->push_back(',');
    append_int(s, n.deps[i]);
  }
  s->append("] is_cpu_op=false");
  if (n.output_bytes) append_attr(s, "output_bytes", n.output_bytes);
  switch (n.kind) {
    case TraceNodeKind::kCompute:
      append_attr(s, attr::kNumOps, n.num_ops);
      append_attr(s, attr::kTensorSize, n.tensor_size);
      break;
    case TraceNodeKind::kCollective: {
      const int64_t ct = static_cast<int64_t>(n.coll);
      s->append(" comm_type=");
      s->append(chakra::comm_type_name(ct));
      s->push_back('(');
      append_int(s, ct);
      s->push_back(')');
      append_attr(s, attr::kCommSize, n.comm_size);
      append_attr(s, attr::kPgName, n.group);
      break;
    }
    case TraceNodeKind::kSend:
    case TraceNodeKind::kRecv:
      append_attr(s, n.kind == TraceNodeKind::kSend ? attr::kCommDst : attr::kCommSrc, n.peer);
      append_attr(s, attr::kCommTag, n.tag);
      append_attr(s, attr::kCommSize, n.comm_size);
      break;
  }
  // duration_micros is the replay time of compute nodes; on other nodes it
  // is shown only when a foreign writer set it.
  if (n.kind == TraceNodeKind::kCompute || n.duration_micros != 0) {
    append_attr(s, "duration_micros", n.duration_micros);
  }
  s->push_back('\n');
}

}  // namespace

Result<std::string> dump_chakra_trace(const std::string& bytes) {
  SC_ASSIGN_OR_RETURN(DecodedTrace d, read_chakra_trace(bytes));
  std::string s = "# chakra ";
  append_escaped(&s, d.version);
  s.append(" generator=");
  append_escaped(&s, d.meta.generator);
  s.append(" generator_version=");
  append_escaped(&s, d.meta.generator_version);
  append_attr(&s, "rank", d.rank);
  append_attr(&s, "world_size", d.meta.world_size);
  s.append(" config_hash=");
  append_escaped(&s, d.meta.config_hash);
  s.push_back('\n');
  s.reserve(s.size() + d.trace.nodes.size() * 96);
  for (const TraceNode& n : d.trace.nodes) append_node(&s, n);
  return s;
}

}  // namespace sc
