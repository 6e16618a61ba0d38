#include "emit/chakra_schema.h"

#include <algorithm>
#include <mutex>

#include <google/protobuf/stubs/logging.h>

namespace sc::chakra {

const char* value_kind_name(ValueCase kind) {
  // Indexed by oneof field number (3 ... 32), matching chakra.proto.
  static constexpr const char* kNames[] = {
      "double_val",   "double_list",   "float_val",    "float_list",
      "int32_val",    "int32_list",    "int64_val",    "int64_list",
      "uint32_val",   "uint32_list",   "uint64_val",   "uint64_list",
      "sint32_val",   "sint32_list",   "sint64_val",   "sint64_list",
      "fixed32_val",  "fixed32_list",  "fixed64_val",  "fixed64_list",
      "sfixed32_val", "sfixed32_list", "sfixed64_val", "sfixed64_list",
      "bool_val",     "bool_list",     "string_val",   "string_list",
      "bytes_val",    "bytes_list"};
  const int n = static_cast<int>(kind);
  if (n < 3 || n > 32) return "unset";
  return kNames[n - 3];
}

const char* node_type_name(int type) {
  switch (type) {
    case ChakraProtoMsg::INVALID_NODE: return "INVALID_NODE";
    case ChakraProtoMsg::METADATA_NODE: return "METADATA_NODE";
    case ChakraProtoMsg::MEM_LOAD_NODE: return "MEM_LOAD_NODE";
    case ChakraProtoMsg::MEM_STORE_NODE: return "MEM_STORE_NODE";
    case ChakraProtoMsg::COMP_NODE: return "COMP_NODE";
    case ChakraProtoMsg::COMM_SEND_NODE: return "COMM_SEND_NODE";
    case ChakraProtoMsg::COMM_RECV_NODE: return "COMM_RECV_NODE";
    case ChakraProtoMsg::COMM_COLL_NODE: return "COMM_COLL_NODE";
    default: return nullptr;
  }
}

bool is_written_node_type(int type) {
  return type == ChakraProtoMsg::COMP_NODE || type == ChakraProtoMsg::COMM_SEND_NODE ||
         type == ChakraProtoMsg::COMM_RECV_NODE || type == ChakraProtoMsg::COMM_COLL_NODE;
}

const char* comm_type_name(int64_t type) {
  static constexpr const char* kNames[] = {
      "ALL_REDUCE", "REDUCE",         "ALL_GATHER",           "GATHER",
      "SCATTER",    "BROADCAST",      "ALL_TO_ALL",           "REDUCE_SCATTER",
      "REDUCE_SCATTER_BLOCK", "BARRIER"};
  if (type < 0 || type >= static_cast<int64_t>(std::size(kNames))) return nullptr;
  return kNames[type];
}

bool is_supported_collective(int64_t type) {
  return type == ChakraProtoMsg::ALL_REDUCE || type == ChakraProtoMsg::ALL_GATHER ||
         type == ChakraProtoMsg::ALL_TO_ALL || type == ChakraProtoMsg::REDUCE_SCATTER;
}

bool IdTracker::add(uint64_t id) {
  if (!sorted_) return set_.insert(id).second;
  if (ids_.empty() || id > ids_.back()) {
    ids_.push_back(id);
    return true;
  }
  if (std::binary_search(ids_.begin(), ids_.end(), id)) return false;
  sorted_ = false;
  set_.reserve(ids_.capacity() + 1);
  set_.insert(ids_.begin(), ids_.end());
  set_.insert(id);
  ids_ = {};
  return true;
}

bool IdTracker::seen(uint64_t id) const {
  if (!sorted_) return set_.count(id) != 0;
  if (ids_.empty() || id < ids_.front() || id > ids_.back()) return false;
  // Dense ascending ids (the lowering's normal output): the range says it.
  if (ids_.back() - ids_.front() == ids_.size() - 1) return true;
  return std::binary_search(ids_.begin(), ids_.end(), id);
}

bool is_valid_utf8(std::string_view s) {
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  const auto* end = p + s.size();
  while (p < end) {
    const unsigned c = *p;
    if (c < 0x80) {
      ++p;
      continue;
    }
    int n;           // continuation bytes
    unsigned lo = 0x80, hi = 0xbf;  // allowed range of the first continuation byte
    if (c >= 0xc2 && c <= 0xdf) {
      n = 1;
    } else if (c >= 0xe0 && c <= 0xef) {
      n = 2;
      if (c == 0xe0) lo = 0xa0;  // overlong
      if (c == 0xed) hi = 0x9f;  // UTF-16 surrogates
    } else if (c >= 0xf0 && c <= 0xf4) {
      n = 3;
      if (c == 0xf0) lo = 0x90;  // overlong
      if (c == 0xf4) hi = 0x8f;  // above U+10FFFF
    } else {
      return false;
    }
    if (end - p <= n) return false;
    if (p[1] < lo || p[1] > hi) return false;
    for (int i = 2; i <= n; ++i) {
      if ((p[i] & 0xc0) != 0x80) return false;
    }
    p += n + 1;
  }
  return true;
}

namespace {
google::protobuf::LogHandler* g_previous_log_handler = nullptr;

void drop_utf8_logs(google::protobuf::LogLevel level, const char* file, int line,
                    const std::string& message) {
  if (level != google::protobuf::LOGLEVEL_FATAL &&
      message.find("invalid UTF-8") != std::string::npos) {
    return;
  }
  if (g_previous_log_handler) g_previous_log_handler(level, file, line, message);
}
}  // namespace

void quiet_protobuf_utf8_logs() {
  static std::once_flag once;
  std::call_once(once, [] {
    g_previous_log_handler = google::protobuf::SetLogHandler(&drop_utf8_logs);
  });
}

std::string node_label(uint64_t id, const std::string& name) {
  std::string s = "node " + std::to_string(id);
  if (!name.empty()) s += " (" + name + ")";
  return s;
}

}  // namespace sc::chakra
