// The communicator-group file (comm_groups.json): {"1": [0, 1], ...}.
// Shared by `stagecraft replay` and `stagecraft validate`, so both read a
// directory the same way. The parser checks the file's shape only (an
// object of decimal keys to lists of integers); what the values mean
// (keys >= 1, members in 0..N-1, no duplicates) is rule R6 of
// check/validate.h, which needs the world size and reports every problem
// rather than stopping at the first.
#pragma once

#include <string>

#include "base/status.h"
#include "trace/rank_trace.h"

namespace sc {

// Parses the group file's text. kParseError, naming `path` and the key at
// fault, when the text is not JSON, not an object, a key is not a canonical
// decimal (no sign, no leading zeros: the simulator compares pg_name to the
// key as a string, so "01" would never match "1"), a value is not a list,
// or a member is not an integer that fits int64, or a key appears twice.
// Parsed in one SAX pass (no JSON tree: memory about twice the file's
// size). Never throws.
Result<GroupTable> parse_group_file(const std::string& path, const std::string& text);

}  // namespace sc
