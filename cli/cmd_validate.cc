// stagecraft validate DIR: the cross-rank checks of core/check/validate.h on
// a directory, plus what only the directory shows: which <prefix>.<n>.et
// files exist (R9), and why a file does not decode. The strict reader stops
// at a file's first problem; its message is mapped to the rule it breaks
// so the report reads the same whether a fault was found by the reader or
// by the validator. Never crashes on a corrupt file: it is a finding.
// Streams: files are read, decoded and checked one rank at a time (on a
// few threads, folded in rank order) and dropped, so memory does not grow
// with the number of ranks (docs/validate.md, "Streaming").
#include <csignal>
#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <system_error>
#include <thread>

#include "api/export.h"
#include "base/json.h"
#include "base/workers.h"
#include "args.h"
#include "check/group_file.h"
#include "check/validate.h"
#include "commands.h"
#include "emit/chakra_writer.h"
#include "export.h"
#include "trace_input.h"

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

// DIR that is not a directory: missing, or another kind of file.
Error not_a_directory(const fs::path& dir) {
  std::error_code ec;
  return make_error(ErrorCode::kIoError, dir.string() + (fs::exists(fs::symlink_status(dir, ec))
                                                             ? ": not a directory"
                                                             : ": no such file or directory"));
}

// Reads a whole file into *buf, reusing its storage: a 100K-rank archive
// is read a file at a time, and a fresh buffer each time costs page faults.
bool read_into(const fs::path& path, std::string* buf, std::string* error) {
  Status st = read_regular_file(path.string(), kMaxTraceFileBytes, buf);
  if (!st.ok()) *error = st.error().message;
  return st.ok();
}

// One rank file as read, decoded and checked by a worker.
struct FileResult {
  std::optional<Violation> undecoded;   // the file does not decode
  std::optional<Violation> misnamed;    // its metadata says another rank
  bool extra = false;                   // rank >= world_size: not checked
  RankCheck check;
};

// One directory of traces: prints its report (text), or stores it in
// *json_out (--json); returns the exit status.
// part: "" for a training export, a serving export's phase folder.
int validate_one(const char* cmd, const TraceInput& in, const std::string& part, const std::string& prefix, int threads,
                 std::string* json_out) {
  const fs::path dir = part.empty() ? in.dir() : in.dir() / part;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) {
    return report_error(cmd, not_a_directory(dir));
  }

  // Every <prefix>.*.et, by rank; error_code overloads: filesystem must not throw.
  std::map<int64_t, std::string> file_map;
  std::vector<std::string> odd;  // <prefix>.<not a rank>.et
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!is_trace_file(name, prefix)) continue;
    const int64_t r = rank_of_file(name, prefix);
    if (r < 0) odd.push_back(name); else file_map[r] = name;
  }
  if (ec) return report_error(cmd, make_error(ErrorCode::kIoError, in.shown(part) + ": " + ec.message()));
  // No trace of this prefix: traces of another (an export written with
  // --prefix) make the R9 finding name the prefix to give.
  std::string other_prefix;
  if (file_map.empty() && odd.empty()) {
    std::set<std::string> others;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string n = it->path().filename().string();
      if (n.size() < 4 || n.compare(n.size() - 3, 3, ".et") != 0) continue;
      const std::string stem = n.substr(0, n.size() - 3);
      const size_t dot = stem.rfind('.');
      if (dot != std::string::npos && dot > 0 && dot + 1 < stem.size() &&
          stem.find_first_not_of("0123456789", dot + 1) == std::string::npos)
        others.insert(stem.substr(0, dot));
    }
    ec.clear();
    if (!others.empty()) other_prefix = *others.begin();
  }
  std::sort(odd.begin(), odd.end());  // directory order is arbitrary
  const std::vector<std::pair<int64_t, std::string>> files(file_map.begin(), file_map.end());
  file_map.clear();
  auto file_of = [&](int64_t r) -> const std::string* {  // the file of rank r, if any
    auto it = std::lower_bound(files.begin(), files.end(), r, [](const auto& f, int64_t x) { return f.first < x; });
    return it != files.end() && it->first == r ? &it->second : nullptr;
  };

  // The report is assembled in the order the findings were always listed:
  // file names and group file (and misnamed files, as read), undecodable
  // files, extra files (decoded, then not), then the validator's.
  ValidationReport report, undecoded_rep, extra_rep, extra_undecoded_rep;
  auto finding = [](ValidationReport& rep, int64_t rank, const char* rule, std::string msg) {
    Violation v;
    v.rank = rank;
    v.rule = rule;
    v.message = std::move(msg);
    rep.add(std::move(v));
  };
  for (const std::string& name : odd) finding(report, -1, "R9", "extra file " + name + ": not <prefix>.<rank>.et for a rank");
  if (files.empty())
    finding(report, -1, "R9",
            "no " + prefix + ".<rank>.et files in " + in.shown(part) +
                (other_prefix.empty() ? std::string()
                                      : "; it holds " + other_prefix + ".<rank>.et files: give --prefix " + other_prefix));

  GroupTable groups;
  ValidateOptions opt;
  const std::string gpath = (dir / "comm_groups.json").string();
  {
    Result<std::string> gtext = read_file(gpath, kMaxGroupFileBytes);
    Result<GroupTable> gparsed = gtext.ok() ? parse_group_file(gpath, *gtext) : Result<GroupTable>(gtext.error());
    if (gparsed.ok()) groups = std::move(gparsed).value();
    else {
      opt.groups_unavailable = true;
      finding(report, -1, "R6", "group file: " + in.unextracted(gparsed.error().message));
    }
  }

  // Reads and decodes one file; the simulator runs a file as the rank in
  // its name, so that wins over its metadata.
  auto decode = [&](int64_t r, const std::string& name, DecodedTrace* out) -> std::optional<Violation> {
    thread_local std::string bytes;  // one read buffer per thread, reused
    std::string io_error;
    const bool read = read_into(dir / name, &bytes, &io_error);
    Result<DecodedTrace> t = read ? read_chakra_trace(bytes) : Result<DecodedTrace>(make_error(ErrorCode::kIoError, io_error));
    if (bytes.capacity() > (size_t{64} << 20)) std::string().swap(bytes);  // do not keep a huge one
    if (!t.ok()) {
      if (!read) io_error = in.unextracted(io_error);
      Violation v;
      v.rank = r;
      v.rule = read ? rule_of_reader_error(t.error().message) : "R0";
      v.message = name + (read ? " does not decode: " : ": ") + take_node_label(t.error().message, &v) +
                  (read ? " (the reader stops here: the rest of this file is unchecked)" : "");
      return v;
    }
    *out = std::move(t).value();
    return std::nullopt;
  };
  auto misnamed = [&](int64_t r, const std::string& name, DecodedTrace* t) -> std::optional<Violation> {
    std::optional<Violation> v;
    if (t->rank != r) {
      v.emplace();
      v->rank = r;
      v->rule = "R9";
      v->message = name + (t->rank < 0 ? " has no rank in its metadata" : " says rank " + std::to_string(t->rank) +
                   " in its metadata") + "; the simulator runs it as rank " + std::to_string(r);
    }
    t->rank = r;
    t->trace.rank = r;
    return v;
  };

  // world_size is the lowest decodable rank's: read files in rank order
  // until one decodes. Undecodable ones before it wait for world_size.
  size_t next = 0;
  std::optional<DecodedTrace> first;
  std::vector<int64_t> pending_undecoded;
  for (; next < files.size() && !first; ++next) {
    const auto& [r, name] = files[next];
    DecodedTrace t;
    if (std::optional<Violation> bad = decode(r, name, &t)) {
      undecoded_rep.add(std::move(*bad));
      pending_undecoded.push_back(r);
      continue;
    }
    if (std::optional<Violation> m = misnamed(r, name, &t)) report.add(std::move(*m));
    first = std::move(t);
  }
  const int64_t world = first ? first->meta.world_size : 0;
  opt.world_size = std::max<int64_t>(world, 0);
  // No world_size in the metadata: the validator assumes the highest file's rank + 1.
  if (world < 1 && !files.empty()) opt.assumed_world_size = files.back().first + 1;
  auto in_job = [&](int64_t r) { return world < 1 || r < world; };
  auto extra = [&](ValidationReport& rep, int64_t r, const std::string& name) {
    finding(rep, r, "R9", "extra file " + name + ": world_size is " + std::to_string(world));
  };
  for (int64_t r : pending_undecoded) {
    if (in_job(r)) opt.undecodable_ranks.insert(r);
    else extra(extra_undecoded_rep, r, *file_of(r));
  }

  // Rank r read again, for the few nodes a kept R7 or R8 finding names.
  auto loader = [&](int64_t r, DecodedTrace* scratch) -> const DecodedTrace* {
    const std::string* name = file_of(r);
    if (!name || decode(r, *name, scratch)) return nullptr;
    misnamed(r, *name, scratch);
    return scratch;
  };
  StreamingValidator validator(groups, opt, loader);
  int64_t nodes = 0;
  if (first) {
    const int64_t r = first->rank;
    if (in_job(r)) {
      nodes += static_cast<int64_t>(first->trace.nodes.size());
      validator.add_rank(*first);  // fixes world_size when the metadata has none
    } else {
      extra(extra_rep, r, *file_of(r));
    }
    first.reset();
  }

  // The rest: workers read, decode and check ranks; this thread folds the
  // results in rank order. At most `window` results wait, so memory is
  // `threads` decoded ranks plus `window` summaries.
  auto process = [&](size_t i) {
    const auto& [r, name] = files[i];
    FileResult res;
    DecodedTrace t;
    if ((res.undecoded = decode(r, name, &t))) return res;
    res.misnamed = misnamed(r, name, &t);
    if (!in_job(r)) { res.extra = true; return res; }
    res.check = validator.check(t);
    return res;
  };
  auto fold = [&](size_t i, FileResult&& res) {
    const auto& [r, name] = files[i];
    if (res.undecoded) {
      undecoded_rep.add(std::move(*res.undecoded));
      if (in_job(r)) validator.add_undecodable(r);
      else extra(extra_undecoded_rep, r, name);
      return;
    }
    if (res.misnamed) report.add(std::move(*res.misnamed));
    if (res.extra) { extra(extra_rep, r, name); return; }
    nodes += res.check.nodes;
    validator.take(std::move(res.check));
  };
  const size_t rest = files.size() - next;
  const int nthreads = static_cast<int>(std::min<size_t>(static_cast<size_t>(threads), rest));
  if (nthreads <= 1) {
    for (size_t i = next; i < files.size() && !pending_signal(); ++i) fold(i, process(i));
  } else {
    const size_t window = 4 * static_cast<size_t>(nthreads);
    std::vector<std::optional<FileResult>> ring(window);
    std::mutex mu;
    std::condition_variable cv;
    std::atomic<size_t> claim{next};
    size_t folded = next;   // guarded by mu
    bool stopping = false;  // guarded by mu: a thread threw, or this one is unwinding
    auto worker = [&] {
      for (;;) {
        const size_t i = claim.fetch_add(1);
        if (i >= files.size()) return;
        {
          std::unique_lock<std::mutex> l(mu);
          cv.wait(l, [&] { return i < folded + window || stopping; });
          if (stopping) return;
        }
        FileResult res = process(i);
        {
          std::lock_guard<std::mutex> l(mu);
          ring[i % window] = std::move(res);
        }
        cv.notify_all();
      }
    };
    // A worker's throw (std::bad_alloc) stops the rest and comes out of
    // join() (core/base/workers.h); so does a throw of fold() here.
    Workers pool([&] {
      {
        std::lock_guard<std::mutex> l(mu);
        stopping = true;
      }
      cv.notify_all();
    });
    for (int k = 0; k < nthreads; ++k) pool.spawn(worker);
    for (size_t i = next; i < files.size(); ++i) {
      FileResult res;
      {
        std::unique_lock<std::mutex> l(mu);
        if (pending_signal()) {  // an archive's run, interrupted: the workers stop, no verdict
          stopping = true;
          l.unlock();
          cv.notify_all();
          break;
        }
        cv.wait(l, [&] { return ring[i % window].has_value() || stopping; });
        if (!ring[i % window].has_value()) break;  // a worker failed: join() rethrows
        res = std::move(*ring[i % window]);
        ring[i % window].reset();
        ++folded;
      }
      cv.notify_all();
      fold(i, std::move(res));
    }
    pool.join();
  }

  if (pending_signal()) return kExitError;  // only caught for an archive (cmd_validate)
  report.append(undecoded_rep);
  report.append(extra_rep);
  report.append(extra_undecoded_rep);
  report.append(validator.finish());

  if (json_out) {
    *json_out = report.json();
  } else {
    std::cout << in.shown(part) << ": " << files.size() << " trace files, " << nodes << " nodes, " << groups.size()
              << " groups\n"
              << report.text(50) << (report.ok() ? "valid\n" : "invalid\n");
  }
  return report.ok() ? kExitOk : kExitError;
}

// A training export (one trace directory) or a serving export (its phase
// folders, each on its own; valid when all are and every part its job has
// is there).
int validate_input(const char* cmd, const TraceInput& in, const std::string& prefix, int threads, bool json) {
  const std::vector<std::string> parts = part_folders(in.dir(), prefix);
  // A serving export's parts, from its summary (also when every phase
  // folder is gone); none for a training export (traces at the top).
  const Result<PartCheck> checked = check_parts(in.dir(), parts);
  if (!checked.ok()) {
    if (json) {
      std::cout << "{\"parts\": {}, \"error\": " << json_quote(checked.error().message) << ", \"valid\": false}\n";
      return kExitError;
    }
    return report_error(cmd, Error{checked.error().code, in.shown() + ": " + checked.error().message, ""});
  }
  const PartCheck& pc = *checked;
  if (parts.empty() && pc.expected.empty()) {
    std::string j;
    const int rc = validate_one(cmd, in, "", prefix, threads, json ? &j : nullptr);
    if (json && !j.empty()) std::cout << j << "\n";
    return rc;
  }
  int rc = kExitOk;
  if (!pc.ok()) {
    if (json) {
      auto arr = [](const std::vector<std::string>& v) {
        std::string s;
        for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + json_quote(v[i]);
        return "[" + s + "]";
      };
      std::cout << "{\"parts\": {}, \"missing\": " << arr(pc.missing) << ", \"unexpected\": " << arr(pc.unexpected)
                << ", \"valid\": false}\n";
      return kExitError;
    }
    return report_error(cmd, make_error(ErrorCode::kInvalidArgument, pc.message(in.shown(), parts)));
  }
  std::string j = "{\"parts\": {";
  for (size_t i = 0; i < parts.size(); ++i) {
    std::string one;
    const int r = validate_one(cmd, in, parts[i], prefix, threads, json ? &one : nullptr);
    if (r != kExitOk) rc = r;
    if (pending_signal()) return kExitError;  // interrupted: no verdict
    if (json) j += (i ? ", " : "") + json_quote(parts[i]) + ": " + (one.empty() ? std::string("null") : one);
    else if (i + 1 < parts.size()) std::cout << "\n";
  }
  if (json) std::cout << j << "}, \"valid\": " << (rc == kExitOk ? "true" : "false") << "}\n";
  else std::cout << (rc == kExitOk ? "all " : "not all ") << parts.size() << " parts valid\n";
  return rc;
}

}  // namespace

int cmd_validate(const std::vector<std::string>& argv) {
  const char* cmd = "validate";
  const char* usage =
      "usage: stagecraft validate DIR|ARCHIVE [--prefix trace] [--json] [--threads N]\n"
      "\n"
      "Checks a directory of Chakra traces (<prefix>.<rank>.et + comm_groups.json)\n"
      "across all ranks for what makes ASTRA-sim abort or hang: ids, dependencies,\n"
      "cycles, node and collective types, attributes, groups, the per-group\n"
      "collective sequence of every member, send/recv pairing and the rank files\n"
      "(rules R0-R9, docs/validate.md). Reads one rank at a time per thread, so\n"
      "memory stays small for 100K-rank jobs. Prints the first 50 findings and\n"
      "counts per rule; exits 0 when there is no error (warnings allowed), 1 otherwise.\n"
      "A serving export is checked phase by phase (prefill/, decode/, mixed/ or\n"
      "kv_transfer/). An ARCHIVE (.zip or .tar.gz as generate writes it) is read\n"
      "into a temporary directory for the run and removed after (docs/validate.md).";
  static const std::vector<FlagSpec> specs = {{"--help", "-h", false, "", "show this help"},
                                              {"--prefix", nullptr, true, "NAME", "trace file prefix (default trace)"},
                                              {"--json", nullptr, false, "", "print the report as JSON"},
                                              {"--threads", nullptr, true, "N", "worker threads (default: one per core, at most 8)"}};
  Args args;
  if (std::optional<int> rc = parse_or_exit(cmd, argv, specs, usage, &args)) return *rc;
  if (args.positional.size() != 1) return usage_error(cmd, "expects exactly one DIR or ARCHIVE");
  int threads = std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, 8);
  if (args.has("--threads")) {
    const std::string& t = *args.get("--threads");
    char* end = nullptr;
    const long v = std::strtol(t.c_str(), &end, 10);
    if (t.empty() || *end || v < 1 || v > 64) return usage_error(cmd, "--threads must be an integer 1..64 (got '" + t + "')");
    threads = static_cast<int>(v);
  }
  const std::string prefix = args.has("--prefix") ? *args.get("--prefix") : "trace";
  if (!valid_trace_prefix(prefix))  // never a path: "../x" would read outside DIR (issue 24 D14)
    return usage_error(cmd, prefix_error(prefix));
  const bool json = args.has("--json");
  return with_trace_input(cmd, args.positional[0],
                          [&](const TraceInput& in) { return validate_input(cmd, in, prefix, threads, json); });
}

}  // namespace sc::cli
