// libFuzzer target: the trace reader, the group-file parser and the
// validator's per-rank rules on whatever decodes (issue 13 item 13). The
// same bytes are tried as a .et file and as comm_groups.json. Properties:
// no crash, no sanitizer report, bounded error messages.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "check/group_file.h"
#include "check/validate.h"
#include "emit/chakra_writer.h"

namespace {
void require(bool ok) {
  if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  sc::Result<sc::GroupTable> groups = sc::parse_group_file("comm_groups.json", bytes);
  if (!groups.ok()) require(groups.error().to_string().size() < 4096);
  sc::Result<sc::DecodedTrace> t = sc::read_chakra_trace(bytes);
  if (!t.ok()) {
    require(t.error().to_string().size() < 4096);
    return 0;
  }
  // Rank numbers and world sizes come from the (fuzzed) metadata: keep the
  // validator's per-rank arrays small, as the CLI's R9 check would.
  if (t->meta.world_size > 4096 || t->rank < 0 || t->rank >= 4096) return 0;
  std::vector<sc::DecodedTrace> ranks;
  ranks.push_back(std::move(t).value());
  sc::ValidationReport rep = sc::validate_traces(ranks, groups.ok() ? *groups : sc::GroupTable{}, {});
  require(rep.text().size() < (size_t{1} << 20));
  return 0;
}
