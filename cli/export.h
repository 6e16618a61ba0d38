// Streaming export of a generated job (stagecraft generate): the entries of
// core/api/export.h's archive (every selected rank's trace, the group file,
// summary.json; archives add astra-sim/ and manifest.json), to a directory
// or to one archive (.zip, .tar.gz). The cost grows with the ranks written only by
// the bytes written: each rank is encoded from its role's pre-serialised
// template (core/api/export.h) by worker threads, one per core, with
// bounded buffers; peak memory is a few ranks' traces per thread.
// Nothing is half-written: the output appears under its final name only
// when complete; on error, SIGINT or SIGTERM the temporary is removed.
// See docs/export.md.
#pragma once

#include <atomic>
#include <cstdint>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

#include "api/api.h"
#include "api/export.h"
#include "base/status.h"

namespace sc::cli {

// The archive's contents and order are core/api/export.h's (archive_entries);
// this is the file-system side.
using sc::all_ranks;
using sc::RankSelection;
using sc::trace_name;

// "0-127,4096,200-203": ranks and inclusive ranges, comma-separated, any
// order, overlaps merged. Errors (kInvalidArgument, path "--ranks") on
// syntax, an empty range (5-3) or a rank outside 0..world-1.
Result<RankSelection> parse_rank_list(const std::string& spec, int64_t world);

enum class OutputFormat { kDirectory, kZip, kTarGz };
// By the output name: *.zip, *.tar.gz / *.tgz, anything else a directory.
OutputFormat format_for(const std::string& path);

enum class ProgressMode { kAuto, kBar, kLines, kQuiet };

struct ExportOptions {
  std::filesystem::path out;  // directory or archive path (normalised)
  OutputFormat format = OutputFormat::kDirectory;
  std::string prefix = "trace";
  bool force = false;
  RankSelection ranks;
  int threads = 0;  // 0: one per core
  ProgressMode progress = ProgressMode::kAuto;
  int compression_level = 1;  // archives: deflate/gzip level 0..9
};

struct ExportStats {
  int64_t ranks = 0;
  uint64_t trace_bytes = 0;   // bytes of .et data
  uint64_t output_bytes = 0;  // bytes on disk (archive size, or all files)
  double seconds = 0;         // export only (after the generator was built)
  int threads = 0;
};

// Writes the export. Never throws; kIoError names the path and the OS
// reason (e.g. "No space left on device"); kCancelled-like kIoError after
// SIGINT/SIGTERM (see install_signal_cleanup).
Status run_export(const Generator& gen, const RankEncoder& enc, const ExportOptions& opt, ExportStats* stats);
// Any job's archive (an inference job's parts: api/export.h); gen is the
// job's Generator (for an inference job the decode one, which has the parts).
Status run_export(const Generator& gen, const ArchiveEncoder& enc, const ExportOptions& opt, ExportStats* stats);

// Whether the export may go to out (docs/export.md, "Replacing an
// output"): absent, or an empty directory, or with force a previous export
// (a directory of only summary.json, comm_groups.json and traces, or an
// inference job's summary.json and part folders of those; or an archive
// whose first member is comm_groups.json, or prefill/comm_groups.json). Never the working
// directory, one above it, home or /. *replace: out exists and will be
// replaced. Errors are kIoError naming out.
Status check_output(const std::filesystem::path& out, OutputFormat format, bool force, bool* replace);

// Refuses, before the build, an export of opt.ranks of `job` whose size is
// estimated past 8 GiB (with allow_large: past the free space where it
// goes), or whose build and exporter buffers are past the engine budget
// (generate, plan --export-best; docs/export.md).
Status check_output_budget(const Job& job, const ExportOptions& opt, bool allow_large);

// SIGINT/SIGTERM/SIGHUP set a flag that run_export polls; it then removes its
// temporary output and returns an error, and the caller re-raises with
// reraise_if_signalled() so the exit status says "killed by signal".
// A signal the process inherited as ignored (SIG_IGN: SIGINT of a
// background job started by a non-interactive shell) stays ignored, as
// POSIX shells expect of the commands they start (docs/promises.md).
void install_signal_cleanup();
int pending_signal();
// A serving export's part folders, in archive order (docs/export.md).
inline constexpr const char* kPartNames[] = {"prefill", "decode", "mixed", "kv_transfer"};
bool is_part_name(const std::string& name);

// "SIGINT", "SIGTERM" or "SIGHUP" (the signals install_signal_cleanup catches).
const char* signal_name(int sig);
void reraise_if_signalled();
// When a signal is pending: "stagecraft <command>: interrupted by SIGINT<detail>"
// on stderr, then the process ends by that signal (reraise_if_signalled);
// otherwise nothing.
void exit_if_signalled(const std::string& command, const std::string& detail = "");
// Once nothing is left to clean up (the build is done and only printing
// remains): a signal that arrived meanwhile ends the process now (with
// the "interrupted" note), and later ones get their inherited disposition
// back (the default: the process ends at once, whatever it is doing).
void release_signals(const std::string& command);

// Tests (docs/export.md): with STAGECRAFT_TEST_PAUSE=<point> the writer
// prints "stagecraft: test pause at <point>" on stderr at that point and
// waits (at most 60 s) for SIGINT/SIGTERM or for the file named by
// STAGECRAFT_TEST_RESUME to exist, so a test can interrupt it at a
// known place. Points: "build" (before Generator::create; generate,
// inspect, graph), "rank" (the first trace is written), "commit" (the
// output is complete, not yet renamed), "committed" (renamed into place,
// the replaced output not yet removed).
void test_pause(const char* point);

// Tests only: make the n-th write to the output fail with errno e (0: off).
void inject_write_failure(int64_t nth_write, int err);

}  // namespace sc::cli
