// stagecraft replay DIR|ARCHIVE: decodes every <prefix>.<rank>.et and the
// group file of a generated directory (or archive: trace_input.h; a
// serving export phase by phase) and replays all ranks together under the
// simulator's issue rules (core/check/replay.h). Exit 0 only when every
// node of every rank finishes; otherwise it names where each rank hangs.
#include <csignal>
#include <algorithm>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "api/export.h"
#include "args.h"
#include "check/group_file.h"
#include "check/replay.h"
#include "commands.h"
#include "emit/chakra_writer.h"
#include "export.h"
#include "trace_input.h"

namespace sc::cli {

namespace {

namespace fs = std::filesystem;

// One trace directory (a training export, or one phase of a serving export).
int replay_one(const char* cmd, const TraceInput& in, const std::string& part, const std::string& prefix) {
  const fs::path dir = part.empty() ? in.dir() : in.dir() / part;
  auto fail = [&](Error e) {
    e.message = in.unextracted(e.message);
    return report_error(cmd, e);
  };
  Result<std::string> gtext = read_file((dir / "comm_groups.json").string(), kMaxGroupFileBytes);
  if (!gtext.ok()) return fail(gtext.error());
  Result<GroupTable> groups = parse_group_file((dir / "comm_groups.json").string(), *gtext);
  if (!groups.ok()) return fail(groups.error());
  std::vector<RankTrace> ranks;
  int64_t world = -1;
  for (int64_t r = 0; world < 0 || r < world; ++r) {
    if (pending_signal()) return kExitError;  // an archive's run, interrupted
    const fs::path p = dir / (prefix + "." + std::to_string(r) + ".et");
    Result<std::string> bytes = read_file(p.string(), kMaxTraceFileBytes);
    if (!bytes.ok()) return fail(bytes.error());
    Result<DecodedTrace> t = read_chakra_trace(*bytes);
    if (!t.ok()) {
      Error e = t.error();
      e.message = p.string() + ": " + e.message;
      return fail(e);
    }
    if (world < 0) world = t->meta.world_size;
    ranks.push_back(std::move(t->trace));
  }
  // Files past the world are not part of the job: said, not read (a FIFO
  // named like a trace is never opened); validate reports them as R9.
  {
    std::error_code ec;
    std::vector<std::string> past;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string n = it->path().filename().string();
      if (is_trace_file(n, prefix) && rank_of_file(n, prefix) >= world) past.push_back(n);
    }
    std::sort(past.begin(), past.end());
    for (const std::string& n : past)
      std::cerr << "stagecraft replay: warning: " << n << " is past world_size " << world
                << ": not replayed (stagecraft validate reports it, R9)\n";
  }
  ReplayResult res = replay_traces(ranks, *groups);
  int64_t nodes = 0;
  for (const auto& t : ranks) nodes += static_cast<int64_t>(t.nodes.size());
  const std::string label = part.empty() ? std::string() : in.shown(part) + ": ";
  if (!res.completed) {
    std::cerr << "stagecraft replay: " << in.shown(part) << " does not run to completion:\n";
    for (const auto& p : res.problems) std::cerr << "  " << p << "\n";
    return kExitError;
  }
  std::cout << label << "completed: " << world << " ranks, " << nodes << " nodes, makespan " << res.makespan_micros
            << " us (plain bandwidth model)\n";
  return kExitOk;
}

}  // namespace

int cmd_replay(const std::vector<std::string>& argv) {
  const char* cmd = "replay";
  const char* usage =
      "usage: stagecraft replay DIR|ARCHIVE [--prefix trace]\n"
      "\n"
      "Replays all ranks of a generated directory (or its .zip / .tar.gz archive;\n"
      "a serving export phase by phase) together, as ASTRA-sim issues\n"
      "them (ids in order, one compute and one collective in flight per rank,\n"
      "collectives matched by order on each group), and reports whether every\n"
      "rank runs to completion. Timing is a plain bytes/bandwidth model.";
  static const std::vector<FlagSpec> specs = {{"--help", "-h", false, "", "show this help"},
                                              {"--prefix", nullptr, true, "NAME", "trace file prefix (default trace)"}};
  Args args;
  if (std::optional<int> rc = parse_or_exit(cmd, argv, specs, usage, &args)) return *rc;
  if (args.positional.size() != 1) return usage_error(cmd, "expects exactly one DIR or ARCHIVE");
  const std::string prefix = args.has("--prefix") ? *args.get("--prefix") : "trace";
  if (!valid_trace_prefix(prefix))  // never a path: "../x" would read outside DIR (issue 24 D14)
    return usage_error(cmd, prefix_error(prefix));
  return with_trace_input(cmd, args.positional[0], [&](const TraceInput& in) {
    const std::vector<std::string> parts = part_folders(in.dir(), prefix);
    const Result<PartCheck> pc = check_parts(in.dir(), parts);
    if (!pc.ok()) return report_error(cmd, Error{pc.error().code, in.shown() + ": " + pc.error().message, ""});
    if (!pc->ok())  // as validate: every part its job has, no other
      return report_error(cmd, make_error(ErrorCode::kInvalidArgument, pc->message(in.shown(), parts)));
    if (parts.empty()) return replay_one(cmd, in, "", prefix);
    int rc = kExitOk;
    for (const std::string& p : parts) {
      if (replay_one(cmd, in, p, prefix) != kExitOk) rc = kExitError;
      if (pending_signal()) break;
    }
    return rc;
  });
}

}  // namespace sc::cli
