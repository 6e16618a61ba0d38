// stagecraft generate: writes every rank's trace (or the --ranks subset),
// comm_groups.json and summary.json to a directory, or one archive (.zip,
// .tar.gz) that also holds a manifest and ASTRA-sim inputs; an inference
// job's the same per part (prefill/, decode/, ...) plus its summary.json. What the output
// holds, in which order, is core/api/export.h's archive_entries (the same
// list the browser zips); the writing is cli/export.cc (streaming, one
// worker per core); nothing is ever
// half-written (temporary name, renamed when complete; removed on error,
// SIGINT or SIGTERM). See docs/export.md.
#include <sys/statvfs.h>

#include <nlohmann/json.hpp>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <cstdlib>
#include <algorithm>
#include <thread>
#include <iostream>
#include <optional>

#include "api/api.h"
#include "api/budget.h"
#include "api/export.h"
#include "export.h"
#include "args.h"
#include "commands.h"

namespace sc::cli {
namespace {

namespace fs = std::filesystem;
const char* kCmd = "generate";

std::vector<FlagSpec> specs() {
  std::vector<FlagSpec> s = job_flags();
  s.push_back({"-o", "--output", true, "OUT", "output directory, or archive: OUT.zip / OUT.tar.gz (required)"});
  s.push_back({"--prefix", nullptr, true, "NAME", "trace file prefix (default: trace)"});
  s.push_back({"--force", nullptr, false, "", "replace OUT if it is a previous export (never another directory)"});
  s.push_back({"--ranks", nullptr, true, "LIST", "write only these ranks, e.g. 0-127,4096 (groups file stays complete)"});
  s.push_back({"--threads", nullptr, true, "N", "worker threads (default: one per core)"});
  s.push_back({"--compression-level", nullptr, true, "N", "archives: deflate/gzip level 0..9 (default 1)"});
  s.push_back({"--quiet", "-q", false, "", "no progress and no result line"});
  s.push_back({"--progress", nullptr, true, "MODE", "bar | lines | none (default: bar on a terminal, else lines)"});
  return s;
}

const char* kUsage =
    "usage: stagecraft generate (--model PRESET | --config job.json) [overrides] -o OUT\n"
    "                           [--prefix NAME] [--force] [--ranks LIST] [--threads N]\n"
    "                           [--compression-level N] [--quiet] [--progress bar|lines|none]\n"
    "\n"
    "Writes OUT/<prefix>.<rank>.et for every rank (or the --ranks subset),\n"
    "OUT/comm_groups.json and OUT/summary.json. Give ASTRA-sim OUT/<prefix> as\n"
    "the workload. With OUT ending in .zip or .tar.gz, writes one archive with\n"
    "the same files plus manifest.json (sizes, sha256) and astra-sim/ (network,\n"
    "system and remote-memory configurations, run.sh). An inference job writes\n"
    "the same per part, in folders prefill/, decode/ and mixed/ or kv_transfer/\n"
    "(--ranks: ranks of each part's world), and its summary.json on top. Output\n"
    "goes to OUT.tmp-<pid> first and appears as OUT only when complete (see\n"
    "docs/export.md).";

}  // namespace

int cmd_generate(const std::vector<std::string>& argv) {
  std::vector<FlagSpec> flag_specs = specs();
  Args args;
  if (std::optional<int> rc = parse_or_exit(kCmd, argv, flag_specs, kUsage, &args)) return *rc;
  if (!args.positional.empty()) return usage_error(kCmd, "unexpected argument '" + args.positional[0] + "'");
  const std::string* out = args.get("-o");
  if (!out || out->empty()) return usage_error(kCmd, "missing -o DIR (the output directory)");
  std::string prefix = args.has("--prefix") ? *args.get("--prefix") : "trace";
  if (!valid_trace_prefix(prefix)) {
    return usage_error(kCmd, prefix_error(prefix));
  }
  ExportOptions opt;
  opt.prefix = prefix;
  opt.force = args.has("--force");
  opt.format = format_for(*out);
  if (args.has("--threads")) {
    const std::string& t = *args.get("--threads");
    char* end = nullptr;
    long v = std::strtol(t.c_str(), &end, 10);
    if (t.empty() || *end || v < 1 || v > 64) return usage_error(kCmd, "--threads must be an integer 1..64 (got '" + t + "')");
    opt.threads = static_cast<int>(v);
  }
  if (args.has("--compression-level")) {
    const std::string& t = *args.get("--compression-level");
    if (t.size() != 1 || t[0] < '0' || t[0] > '9')
      return usage_error(kCmd, "--compression-level must be 0..9 (got '" + t + "')");
    opt.compression_level = t[0] - '0';
  }
  if (args.has("--progress")) {
    const std::string& m = *args.get("--progress");
    if (m == "bar") opt.progress = ProgressMode::kBar;
    else if (m == "lines") opt.progress = ProgressMode::kLines;
    else if (m == "none") opt.progress = ProgressMode::kQuiet;
    else return usage_error(kCmd, "--progress must be bar, lines or none (got '" + m + "')");
  }
  const bool quiet = args.has("--quiet");
  if (quiet && args.has("--progress") && opt.progress != ProgressMode::kQuiet)
    return usage_error(kCmd, "-q (no progress, no result line) contradicts --progress " + *args.get("--progress") +
                                 ": give one of them");
  if (quiet) opt.progress = ProgressMode::kQuiet;

  fs::path dir = fs::path(*out).lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();  // "out/" -> "out"
  if (dir.empty() || dir == "." || dir == ".." || dir == "/") {
    return usage_error(kCmd, "-o must name a directory or archive to create or replace (got '" + *out + "')");
  }
  if (opt.format == OutputFormat::kDirectory && format_for(dir.string()) != OutputFormat::kDirectory)
    return usage_error(kCmd, "-o '" + *out + "' ends in '/' but names an archive; drop the '/' for an archive, "
                             "or choose a directory name without .zip/.tar.gz/.tgz");
  opt.out = dir;
  // Refuse an existing output before the (possibly long) generator build.
  bool replace = false;
  if (Status st = check_output(dir, opt.format, opt.force, &replace); !st.ok()) return report_error(kCmd, st.error());

  Job job;
  if (int rc = load_job(kCmd, args, &job); rc != kExitOk) return rc;
  auto start = std::chrono::steady_clock::now();
  // An inference job's parts have worlds of their own: --ranks names ranks
  // of each (docs/export.md, "Inference jobs").
  const int64_t world = archive_world_size(job);
  if (args.has("--ranks")) {
    Result<RankSelection> sel = parse_rank_list(*args.get("--ranks"), world);
    if (!sel.ok()) return report_error(kCmd, sel.error());
    opt.ranks = *sel;
  } else {
    opt.ranks = all_ranks(world);
  }
  // The signals are caught from the size estimate on (its counted builds
  // stop at a signal like the job's own): an interrupt there says so.
  install_signal_cleanup();
  if (Status st = check_output_budget(job, opt, args.has("--allow-large")); !st.ok())
    return report_error_or_signal(kCmd, st.error(), ": nothing was written to " + dir.string());
  int rc = kExitOk;
  std::optional<Generator> gen = build_generator(kCmd, job, &rc);
  if (!gen) return rc;
  Result<ArchiveEncoder> enc = ArchiveEncoder::create(*gen);
  if (!enc.ok()) return report_error(kCmd, enc.error());

  ExportStats stats;
  Status s = run_export(*gen, *enc, opt, &stats);
  if (!s.ok()) {
    exit_if_signalled(kCmd, ": nothing was written to " + dir.string());  // exit by the signal
    return report_error(kCmd, s.error());
  }
  // The output is committed: a signal that came after the rename does not
  // undo it, so the exit status says success (docs/export.md).
  if (int sig = pending_signal(); sig != 0)
    std::cerr << "stagecraft " << kCmd << ": note: " << (sig == SIGINT ? "SIGINT" : "SIGTERM")
              << " arrived after " << dir.string() << " was complete; kept it\n";

  set_stdout_failure_note(dir.string() + " is complete");
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (quiet) return kExitOk;
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.2f", seconds);
  const bool partial = !opt.ranks.all(world);
  const std::vector<std::string> parts = archive_parts(*gen);
  if (parts.empty()) {
    std::cout << "wrote " << stats.ranks << (partial ? " of " + std::to_string(world) : std::string()) << " ranks ("
              << stats.trace_bytes << " bytes of traces) + comm_groups.json + summary.json";
  } else {  // "wrote 24 traces (... bytes) in prefill/, decode/, mixed/ + summary.json": each folder an export of its own
    std::cout << "wrote " << stats.ranks << " traces (" << stats.trace_bytes << " bytes) in ";
    for (size_t i = 0; i < parts.size(); ++i) std::cout << (i ? ", " : "") << parts[i] << "/";
    if (partial) std::cout << " (ranks " << selection_text(opt.ranks) << " of each)";
    std::cout << " + summary.json";
  }
  if (opt.format != OutputFormat::kDirectory)
    std::cout << " + manifest.json + astra-sim/ (" << stats.output_bytes << " bytes)";
  std::cout << " to " << dir.string() << " in " << secs << " s\n";
  return kExitOk;
}

}  // namespace sc::cli
