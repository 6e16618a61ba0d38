// stagecraft validate DIR: the cross-rank checks of core/check/validate.h on
// a directory, plus what only the directory shows: which <prefix>.<n>.et
// files exist (R9), and why a file does not decode. The strict reader stops
// at a file's first problem; its message is mapped to the rule it breaks
// so the report reads the same whether a fault was found by the reader or
// by the validator. Never crashes on a corrupt file: it is a finding.
#include <filesystem>
#include <iostream>
#include <map>
#include <system_error>

#include "args.h"
#include "check/group_file.h"
#include "check/validate.h"
#include "commands.h"
#include "emit/chakra_writer.h"

namespace sc::cli {
namespace {

namespace fs = std::filesystem;

bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

// The rule a reader error breaks (docs/validate.md). Kind errors first:
// "attribute comm_tag has kind string_val" is R5 even though it names a tag.
const char* rule_of_reader_error(const std::string& m) {
  if (has(m, " has kind ") || has(m, "appears twice") || has(m, "missing attribute")) return "R5";
  if (m.rfind("global metadata", 0) == 0) return has(m, "world_size") || has(m, "rank ") ? "R9" : "R0";
  if (has(m, "duplicate id")) return "R1";
  if (has(m, "dependency on id")) return "R2";
  if (has(m, "unknown node type") || has(m, "comm_type")) return "R4";
  if (has(m, "pg_name")) return "R6";
  if (has(m, "comm_dst") || has(m, "comm_src") || has(m, "comm_tag")) return "R8";
  if (m.rfind("node ", 0) == 0) return "R5";
  return "R0";  // framing or protobuf: the bytes are not a Chakra stream
}

// Reader messages about a node start "node <id> (<name>): " or "node <id>: ".
// Moves the id and name into v and returns the rest of the message.
std::string take_node_label(const std::string& m, Violation* v) {
  if (m.rfind("node ", 0) != 0) return m;
  size_t i = 5;
  uint64_t id = 0;
  while (i < m.size() && m[i] >= '0' && m[i] <= '9' && i < 25) id = id * 10 + static_cast<uint64_t>(m[i++] - '0');
  if (i == 5) return m;
  std::string name;
  if (m.compare(i, 2, " (") == 0) {
    const size_t close = m.find("): ", i);
    if (close == std::string::npos) return m;
    name = m.substr(i + 2, close - i - 2);
    i = close + 1;
  }
  if (m.compare(i, 2, ": ") != 0) return m;
  v->has_node = true;
  v->node_id = id;
  v->node_name = std::move(name);
  return m.substr(i + 2);
}

// "<prefix>.<digits>.et" -> rank; canonical decimal only ("01" is not the
// name the simulator opens for rank 1). -1: another .et file with the prefix.
int64_t rank_of_file(const std::string& name, const std::string& prefix) {
  const std::string mid = name.substr(prefix.size() + 1, name.size() - prefix.size() - 4);
  if (mid.empty() || mid.size() > 15 || (mid.size() > 1 && mid[0] == '0')) return -1;
  int64_t r = 0;
  for (char c : mid) {
    if (c < '0' || c > '9') return -1;
    r = r * 10 + (c - '0');
  }
  return r;
}

}  // namespace

int cmd_validate(const std::vector<std::string>& argv) {
  const char* cmd = "validate";
  const char* usage =
      "usage: stagecraft validate DIR [--prefix trace] [--json]\n"
      "\n"
      "Checks a directory of Chakra traces (<prefix>.<rank>.et + comm_groups.json)\n"
      "across all ranks for what makes ASTRA-sim abort or hang: ids, dependencies,\n"
      "cycles, node and collective types, attributes, groups, the per-group\n"
      "collective sequence of every member, send/recv pairing and the rank files\n"
      "(rules R0-R9, docs/validate.md). Prints the first 50 findings and counts per\n"
      "rule; exits 0 when there is no error (warnings allowed), 1 otherwise.";
  static const std::vector<FlagSpec> specs = {{"--help", "-h", false, "", "show this help"},
                                              {"--prefix", nullptr, true, "NAME", "trace file prefix (default trace)"},
                                              {"--json", nullptr, false, "", "print the report as JSON"}};
  Args args;
  if (std::optional<int> rc = parse_or_exit(cmd, argv, specs, usage, &args)) return *rc;
  if (args.positional.size() != 1) return usage_error(cmd, "expects exactly one DIR");
  const fs::path dir = args.positional[0];
  const std::string prefix = args.has("--prefix") ? *args.get("--prefix") : "trace";
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return report_error(cmd, make_error(ErrorCode::kIoError, dir.string() + ": not a directory"));
  }

  // Every <prefix>.*.et, by rank; error_code overloads: filesystem must not throw.
  std::map<int64_t, std::string> files;
  std::vector<std::string> odd;  // <prefix>.<not a rank>.et
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.size() < prefix.size() + 5 || name.compare(0, prefix.size() + 1, prefix + ".") != 0 ||
        name.compare(name.size() - 3, 3, ".et") != 0) continue;
    const int64_t r = rank_of_file(name, prefix);
    if (r < 0) odd.push_back(name); else files[r] = name;
  }
  if (ec) return report_error(cmd, make_error(ErrorCode::kIoError, dir.string() + ": " + ec.message()));

  ValidationReport report;
  auto finding = [&](int64_t rank, const char* rule, std::string msg) {
    Violation v;
    v.rank = rank;
    v.rule = rule;
    v.message = std::move(msg);
    report.add(std::move(v));
  };
  for (const std::string& name : odd) finding(-1, "R9", "extra file " + name + ": not <prefix>.<rank>.et for a rank");
  if (files.empty()) finding(-1, "R9", "no " + prefix + ".<rank>.et files in " + dir.string());

  GroupTable groups;
  ValidateOptions opt;
  const std::string gpath = (dir / "comm_groups.json").string();
  Result<std::string> gtext = read_file(gpath);
  Result<GroupTable> gparsed = gtext.ok() ? parse_group_file(gpath, *gtext) : Result<GroupTable>(gtext.error());
  if (gparsed.ok()) groups = std::move(gparsed).value();
  else { opt.groups_unavailable = true; finding(-1, "R6", "group file: " + gparsed.error().message); }

  std::vector<DecodedTrace> ranks;
  std::map<int64_t, Violation> undecoded;  // held until world_size is known
  for (const auto& [r, name] : files) {
    Result<std::string> bytes = read_file((dir / name).string());
    Result<DecodedTrace> t = bytes.ok() ? read_chakra_trace(*bytes) : Result<DecodedTrace>(bytes.error());
    if (!t.ok()) {
      Violation v;
      v.rank = r;
      v.rule = bytes.ok() ? rule_of_reader_error(t.error().message) : "R0";
      v.message = name + (bytes.ok() ? " does not decode: " : ": ") + take_node_label(t.error().message, &v) +
                  (bytes.ok() ? " (the reader stops here: the rest of this file is unchecked)" : "");
      undecoded[r] = std::move(v);
      continue;
    }
    // The simulator runs a file as the rank in its name, so that wins.
    if (t->rank != r) {
      finding(r, "R9", name + (t->rank < 0 ? " has no rank in its metadata" : " says rank " + std::to_string(t->rank) +
              " in its metadata") + "; the simulator runs it as rank " + std::to_string(r));
    }
    t->rank = r;
    t->trace.rank = r;
    ranks.push_back(std::move(t).value());
  }
  opt.world_size = ranks.empty() ? 0 : ranks.front().meta.world_size;  // lowest decoded rank
  for (auto& [r, v] : undecoded) {
    if (opt.world_size < 1 || r < opt.world_size) opt.undecodable_ranks.insert(r);
    report.add(std::move(v));
  }
  // Files beyond world_size are not part of the job: report, do not check.
  std::vector<DecodedTrace> in_job;
  for (DecodedTrace& t : ranks) {
    if (opt.world_size > 0 && t.rank >= opt.world_size) {
      finding(t.rank, "R9", "extra file " + files[t.rank] + ": world_size is " + std::to_string(opt.world_size));
    } else {
      in_job.push_back(std::move(t));
    }
  }
  for (const auto& [r, name] : files) {
    if (opt.world_size > 0 && r >= opt.world_size && undecoded.count(r)) {
      finding(r, "R9", "extra file " + name + ": world_size is " + std::to_string(opt.world_size));
    }
  }
  report.append(validate_traces(in_job, groups, opt));

  int64_t nodes = 0;
  for (const DecodedTrace& t : in_job) nodes += static_cast<int64_t>(t.trace.nodes.size());
  if (args.has("--json")) {
    std::cout << report.json() << "\n";
  } else {
    std::cout << dir.string() << ": " << files.size() << " trace files, " << nodes << " nodes, " << groups.size()
              << " groups\n"
              << report.text(50) << (report.ok() ? "valid\n" : "invalid\n");
  }
  return report.ok() ? kExitOk : kExitError;
}

}  // namespace sc::cli
