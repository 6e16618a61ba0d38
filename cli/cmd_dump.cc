// stagecraft dump FILE.et: a Chakra trace as canonical text, one node per
// line (see core/emit/chakra_writer.h). Works on any delimited Chakra
// file, not only ours.
#include <iostream>

#include "args.h"
#include "commands.h"
#include "emit/chakra_writer.h"

namespace sc::cli {

int cmd_dump(const std::vector<std::string>& argv) {
  const char* cmd = "dump";
  const char* usage =
      "usage: stagecraft dump FILE.et\n"
      "\n"
      "Prints a Chakra execution trace as text: a header line, then one node per\n"
      "line with id, name, type, dependencies and attributes.";
  static const std::vector<FlagSpec> specs = {{"--help", "-h", false, "", "show this help"}};
  Args args;
  if (std::optional<int> rc = parse_or_exit(cmd, argv, specs, usage, &args)) return *rc;
  if (args.positional.size() != 1) {
    return usage_error(cmd, args.positional.empty() ? "missing FILE.et" : "expects exactly one FILE.et");
  }
  const std::string& path = args.positional[0];
  Result<std::string> bytes = read_file(path, kMaxTraceFileBytes);
  if (!bytes.ok()) return report_error(cmd, bytes.error());
  Result<std::string> text = dump_chakra_trace(*bytes);
  if (!text.ok()) {
    Error e = text.error();
    e.message = path + ": " + e.message;
    return report_error(cmd, e);
  }
  std::cout << *text;
  return kExitOk;
}

}  // namespace sc::cli
