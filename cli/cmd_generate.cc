// stagecraft generate: writes the archive for ASTRA-sim. Never leaves a
// half-written DIR: everything goes to the sibling DIR.tmp-<pid>, which is
// renamed to DIR only after every file is written (and removed on error).
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "api/api.h"
#include "args.h"
#include "commands.h"

namespace sc::cli {
namespace {

namespace fs = std::filesystem;
const char* kCmd = "generate";

std::vector<FlagSpec> specs() {
  std::vector<FlagSpec> s = job_flags();
  s.push_back({"-o", "--output", true, "DIR", "output directory (required)"});
  s.push_back({"--prefix", nullptr, true, "NAME", "trace file prefix (default: trace)"});
  s.push_back({"--force", nullptr, false, "", "replace DIR if it exists and is not empty"});
  return s;
}

const char* kUsage =
    "usage: stagecraft generate (--model PRESET | --config job.json) [overrides] -o DIR\n"
    "                           [--prefix NAME] [--force]\n"
    "\n"
    "Writes DIR/<prefix>.<rank>.et for every rank, DIR/comm_groups.json and\n"
    "DIR/summary.json. Give ASTRA-sim DIR/<prefix> as the workload. The files\n"
    "are written to DIR.tmp-<pid> first and appear in DIR only when all are\n"
    "complete.";

Status write_file(const fs::path& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (out) out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  if (out) out.close();
  if (!out) {
    return make_error(ErrorCode::kIoError,
                      "cannot write " + path.string() + ": " + std::strerror(errno));
  }
  return ok_status();
}

bool valid_prefix(const std::string& p) {
  if (p.empty() || p == "." || p == "..") return false;
  for (char c : p) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.';
    if (!ok) return false;
  }
  return true;
}

// Removes the temp dir unless released (every early return cleans up).
struct TempDir {
  fs::path path;
  bool keep = false;
  ~TempDir() {
    std::error_code ec;
    if (!keep && !path.empty()) fs::remove_all(path, ec);
  }
};

Status write_all(const Generator& gen, const fs::path& dir, const std::string& prefix,
                 uint64_t* trace_bytes) {
  for (int64_t rank = 0; rank < gen.world_size(); ++rank) {
    Result<std::string> bytes = gen.rank_trace_bytes(rank);
    if (!bytes.ok()) return bytes.error();
    *trace_bytes += bytes->size();
    SC_RETURN_IF_ERROR(write_file(dir / (prefix + "." + std::to_string(rank) + ".et"), *bytes));
  }
  SC_RETURN_IF_ERROR(write_file(dir / "comm_groups.json", gen.groups_json()));
  return write_file(dir / "summary.json", gen.summary_json());
}

// Moves tmp to dir; an existing (empty, or --force) dir is moved aside
// first and restored if the final rename fails.
Status commit(const fs::path& tmp, const fs::path& dir, bool dir_exists) {
  std::error_code ec;
  fs::path old;
  if (dir_exists) {
    old = dir;
    old += ".old-" + std::to_string(::getpid());
    fs::rename(dir, old, ec);
    if (ec) return make_error(ErrorCode::kIoError, "cannot move " + dir.string() + " aside: " + ec.message());
  }
  fs::rename(tmp, dir, ec);
  if (ec) {
    std::error_code ignored;
    if (!old.empty()) fs::rename(old, dir, ignored);
    return make_error(ErrorCode::kIoError,
                      "cannot rename " + tmp.string() + " to " + dir.string() + ": " + ec.message());
  }
  if (!old.empty()) fs::remove_all(old, ec);
  return ok_status();
}

}  // namespace

int cmd_generate(const std::vector<std::string>& argv) {
  std::vector<FlagSpec> flag_specs = specs();
  Args args;
  if (std::optional<int> rc = parse_or_exit(kCmd, argv, flag_specs, kUsage, &args)) return *rc;
  if (!args.positional.empty()) return usage_error(kCmd, "unexpected argument '" + args.positional[0] + "'");
  const std::string* out = args.get("-o");
  if (!out || out->empty()) return usage_error(kCmd, "missing -o DIR (the output directory)");
  std::string prefix = args.has("--prefix") ? *args.get("--prefix") : "trace";
  if (!valid_prefix(prefix)) {
    return usage_error(kCmd, "--prefix must be a file name of letters, digits, '.', '_' or '-' (got '" +
                                 prefix + "')");
  }
  bool force = args.has("--force");

  fs::path dir = fs::path(*out).lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();  // "out/" -> "out"
  if (dir.empty() || dir == "." || dir == ".." || dir == "/") {
    return usage_error(kCmd, "-o must name a directory to create or replace (got '" + *out + "')");
  }
  std::error_code ec;
  fs::file_status st = fs::symlink_status(dir, ec);
  bool dir_exists = fs::exists(st);
  if (dir_exists && !fs::is_directory(st)) {
    return report_error(kCmd, make_error(ErrorCode::kIoError,
                                         dir.string() + " exists and is not a directory"));
  }
  if (dir_exists && !fs::is_empty(dir, ec) && !force) {
    return report_error(kCmd, make_error(ErrorCode::kIoError,
                                         dir.string() + " exists and is not empty (use --force to replace it)"));
  }

  Job job;
  if (int rc = load_job(kCmd, args, &job); rc != kExitOk) return rc;
  auto start = std::chrono::steady_clock::now();
  Result<Generator> gen = Generator::create(job);
  if (!gen.ok()) return report_error(kCmd, gen.error());

  fs::path parent = dir.parent_path();
  if (!parent.empty()) {
    fs::create_directories(parent, ec);
    if (ec) return report_error(kCmd, make_error(ErrorCode::kIoError, "cannot create " + parent.string() + ": " + ec.message()));
  }
  TempDir tmp;
  tmp.path = dir;
  tmp.path += ".tmp-" + std::to_string(::getpid());
  fs::remove_all(tmp.path, ec);
  if (!fs::create_directory(tmp.path, ec)) {
    return report_error(kCmd, make_error(ErrorCode::kIoError,
                                         "cannot create " + tmp.path.string() + ": " + ec.message()));
  }
  uint64_t trace_bytes = 0;
  if (Status s = write_all(*gen, tmp.path, prefix, &trace_bytes); !s.ok()) return report_error(kCmd, s.error());
  if (Status s = commit(tmp.path, dir, dir_exists); !s.ok()) return report_error(kCmd, s.error());
  tmp.keep = true;

  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  char secs[32];
  std::snprintf(secs, sizeof secs, "%.2f", seconds);
  std::cout << "wrote " << gen->world_size() << " ranks (" << trace_bytes
            << " bytes of traces) + comm_groups.json + summary.json to " << dir.string() << " in "
            << secs << " s\n";
  return kExitOk;
}

}  // namespace sc::cli
