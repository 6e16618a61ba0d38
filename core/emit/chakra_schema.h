// Internal to emit/: the Chakra vocabulary stagecraft writes and reads
// (attribute names and enum spellings: emit/chakra_names.h, the public
// part; value kinds here) and the id bookkeeping the writer and the reader
// share. Not part of the public API: it exposes the generated protobuf
// types, which nothing outside emit/ should see.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "chakra.pb.h"
#include "emit/chakra_names.h"

namespace sc::chakra {

using ValueCase = ChakraProtoMsg::AttributeProto::ValueCase;

// "int64_val", "bool_list", ... (the oneof member's field name); "unset"
// for an attribute without a value.
const char* value_kind_name(ValueCase kind);

// Ids seen so far in file order. The simulator aborts on a dependency that
// names an unknown id and silently merges duplicate ids, so both directions
// reject them. Lowering emits ascending (usually dense) ids, so the common
// case is a range check or a binary search over a vector; ids out of order
// fall back to a hash set.
class IdTracker {
 public:
  void reserve(size_t n) { ids_.reserve(n); }
  // False if the id was already seen.
  bool add(uint64_t id);
  bool seen(uint64_t id) const;

 private:
  std::vector<uint64_t> ids_;  // ascending while sorted_
  bool sorted_ = true;
  std::unordered_set<uint64_t> set_;  // all ids once !sorted_
};

// RFC 3629 UTF-8 (no overlongs, surrogates or code points above U+10FFFF).
// proto3 parsers, ours and the Python tools', reject a message whose string
// field is not UTF-8, so the writer must never produce one.
bool is_valid_utf8(std::string_view s);

// Installs, once per process, a protobuf log handler that drops the
// "invalid UTF-8" error protobuf-lite prints when a parse fails on such a
// string (the reader reports the failure as an Error instead); every other
// message goes to the previous handler.
void quiet_protobuf_utf8_logs();

// "node 12 (layer0.fwd.qkv)": prefix of every per-node error message.
std::string node_label(uint64_t id, const std::string& name);

}  // namespace sc::chakra
