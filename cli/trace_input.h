// What `validate` and `replay` read: a directory of traces as `generate`
// writes it, or the same export as a .zip or .tar.gz archive (a plain .tar
// too). An archive is read once, front to back, and the members these
// commands need — every *.et file, comm_groups.json and summary.json, at the
// top and in a serving export's phase folders — are written into a private
// temporary directory (mkdtemp under $TMPDIR or /tmp) that the TraceInput
// removes when it is destroyed. Nothing else of the archive is written, and
// no member name becomes a path by itself: only "<name>" and
// "<phase>/<name>" of that list are taken, optionally under a leading "./"
// or one top folder (`tar czf run.tar.gz run`), so "../x" or "/etc/x" in
// an archive is never written anywhere. docs/validate.md, "Archives".
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace sc::cli {

class TraceInput {
 public:
  // path: a directory, or an archive file. Errors (kIoError) name the path
  // and, for an archive, the member: a missing path, a file that is not an
  // archive, a corrupt or truncated archive, a member over its size cap
  // (docs/cli.md, "Inputs"), a trace member that is not a regular file or
  // that appears twice, a full disk, SIGINT/SIGTERM during extraction
  // (the caller catches them: install_signal_cleanup).
  static Result<std::unique_ptr<TraceInput>> open(const std::string& path);
  ~TraceInput();
  TraceInput(const TraceInput&) = delete;
  TraceInput& operator=(const TraceInput&) = delete;

  // Where the traces are read from.
  const std::filesystem::path& dir() const { return dir_; }
  // The user's name for dir()/rel in messages: "out/prefill" for a
  // directory "out", "out.zip:prefill" for an archive ("out.zip" for "").
  std::string shown(const std::string& rel = "") const;
  // msg with the extraction directory's path written as the archive's
  // name ("/tmp/stagecraft-x/prefill/trace.1.et: ..." -> "out.zip:prefill/
  // trace.1.et: ..."); msg itself for a directory.
  std::string unextracted(std::string msg) const;
  bool is_archive() const { return !temp_.empty(); }

 private:
  TraceInput() = default;
  std::filesystem::path dir_;
  std::string given_;
  std::filesystem::path temp_;  // the extraction directory; empty for a directory input
  std::string root_;            // "decode/" when the archive held that one folder only: dir_ is it
};

// Runs `body` on the input at `path` for command `cmd` (validate, replay):
// a directory as it is, or an archive extracted for the run with
// SIGINT/SIGTERM/SIGHUP caught (the extraction is removed, then the
// process ends by the signal) and SIGPIPE ignored (a closed stdout fails a
// write instead of killing the process before the removal). Returns
// body's exit status, or reports open's error (exit 1).
int with_trace_input(const char* cmd, const std::string& path, const std::function<int(const TraceInput&)>& body);

// An inference job's export (docs/export.md): no traces of its own but
// phase folders, each a trace directory. Their names, in archive order;
// empty for a training export.
std::vector<std::string> part_folders(const std::filesystem::path& dir, const std::string& prefix);
// A serving export's phase folders (part_folders' `parts`) against the
// parts its job has: `expected`, from the top summary.json's job (prefill,
// decode and mixed for colocated engines, prefill, decode and kv_transfer
// for disaggregated pools), or, when that summary is missing or torn and
// there are phase folders, from decode/summary.json's (`source` names
// which); those `missing` and those its job does not have (`unexpected`).
// `expected` is empty for a training export (its comm_groups.json at the
// top, or no inference summary and no phase folder). An error when there
// are phase folders but neither summary can be read, since a missing part
// would otherwise pass.
struct PartCheck {
  std::vector<std::string> expected, missing, unexpected;
  std::string source = "summary.json";
  bool ok() const { return missing.empty() && unexpected.empty(); }
  // "out.zip: missing mixed/ (summary.json's job has 3 parts: prefill/,
  // decode/, mixed/; found prefill/, decode/)", or the unexpected ones.
  std::string message(const std::string& shown, const std::vector<std::string>& parts) const;
};
Result<PartCheck> check_parts(const std::filesystem::path& dir, const std::vector<std::string>& parts);

}  // namespace sc::cli
