// stagecraft graph: the sharded symbolic graph as canonical text (the
// format golden tests compare), for teaching and debugging.
#include <iostream>

#include "api/request.h"
#include "args.h"
#include "commands.h"

namespace sc::cli {

int cmd_graph(const std::vector<std::string>& argv) {
  const char* cmd = "graph";
  const char* usage =
      "usage: stagecraft graph (--model PRESET | --config job.json) [overrides]\n"
      "\n"
      "Prints the sharded symbolic graph (forward, backward, optimizer, with the\n"
      "inserted collectives) as stable text. Use --layers 1 to keep it short.";
  Args args;
  if (std::optional<int> rc = parse_or_exit(cmd, argv, job_flags(), usage, &args)) return *rc;
  if (!args.positional.empty()) return usage_error(cmd, "unexpected argument '" + args.positional[0] + "'");
  Job job;
  if (int rc = load_job(cmd, args, &job); rc != kExitOk) return rc;
  std::string text;
  if (int rc = answer_request(cmd, job, "graph", &text); rc != kExitOk) return rc;
  std::cout << text;
  return kExitOk;
}

}  // namespace sc::cli
