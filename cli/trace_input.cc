#include "trace_input.h"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>
#include <system_error>
#include <vector>

#include "args.h"
#include "export.h"
#include "export_archive.h"
#include "nlohmann/json.hpp"

namespace sc::cli {

namespace fs = std::filesystem;

namespace {

// Members taken at most: a world of 2^20 ranks in each of the 4 phase
// folders, with their group files and summaries.
constexpr size_t kMaxMembers = (size_t{4} << 20) + 64;

bool ends_with(const std::string& s, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return s.size() >= n && s.compare(s.size() - n, n, suffix) == 0;
}

// The cap of a file validate or replay reads; 0 for any other name:
// traces (*.et), comm_groups.json and summary.json.
size_t file_cap(const std::string& file) {
  if (file.empty() || file[0] == '.') return 0;
  if (file == "comm_groups.json" || file == "summary.json") return kMaxGroupFileBytes;
  if (ends_with(file, ".et")) return kMaxTraceFileBytes;
  return 0;
}

// A member validate or replay reads: "<file>" or "<phase>/<file>" (after
// any leading "./"), or either of them inside one top folder ("run/..."), as
// `tar czf run.tar.gz run` writes it. Directory entries, the astra-sim/
// inputs, the manifests and anything deeper are not taken.
struct Member {
  size_t cap = 0;       // 0: not taken
  std::string top;      // the top folder stripped, if any
  std::string rel;      // the name under it
};

Member classify(std::string name) {
  while (name.rfind("./", 0) == 0) name.erase(0, 2);
  std::vector<std::string> parts;
  for (size_t at = 0;;) {
    const size_t slash = name.find('/', at);
    parts.push_back(name.substr(at, slash == std::string::npos ? std::string::npos : slash - at));
    if (slash == std::string::npos) break;
    at = slash + 1;
  }
  Member m;
  size_t first = 0;
  if (parts.size() >= 2 && !is_part_name(parts[0]) && !parts[0].empty() && parts[0] != "..") {
    if (parts.size() == 2 || (parts.size() == 3 && is_part_name(parts[1]))) {
      m.top = parts[0];
      first = 1;
    }
  }
  const size_t n = parts.size() - first;
  if (n == 1) {
    m.rel = parts[first];
  } else if (n == 2 && is_part_name(parts[first])) {
    m.rel = parts[first] + "/" + parts[first + 1];
  } else {
    return Member{};
  }
  m.cap = file_cap(parts.back());
  if (m.cap == 0) return Member{};
  return m;
}

// Removes a temporary directory on every path out of open() that does not
// hand it over.
struct TempDir {
  fs::path path;
  ~TempDir() {
    if (path.empty()) return;
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

}  // namespace

TraceInput::~TraceInput() {
  if (temp_.empty()) return;
  std::error_code ec;
  fs::remove_all(temp_, ec);
}

std::string TraceInput::shown(const std::string& rel) const {
  if (temp_.empty()) return rel.empty() ? dir_.string() : (dir_ / rel).string();
  const std::string r = root_ + rel;
  if (r.empty()) return given_;
  return given_ + ":" + (r.back() == '/' ? r.substr(0, r.size() - 1) : r);
}

std::string TraceInput::unextracted(std::string msg) const {
  if (temp_.empty()) return msg;
  const std::string t = temp_.string();
  for (size_t at = msg.find(t); at != std::string::npos; at = msg.find(t, at)) {
    const bool sub = at + t.size() < msg.size() && msg[at + t.size()] == '/';
    const std::string by = sub ? given_ + ":" : given_;
    msg.replace(at, t.size() + (sub ? 1 : 0), by);
    at += by.size();
  }
  return msg;
}

Result<std::unique_ptr<TraceInput>> TraceInput::open(const std::string& path) {
  std::unique_ptr<TraceInput> in(new TraceInput());
  in->given_ = path;
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (fs::is_directory(st)) {
    in->dir_ = path;
    return in;
  }
  if (!fs::exists(fs::symlink_status(path, ec))) return make_error(ErrorCode::kIoError, path + ": no such file or directory");
  if (!fs::is_regular_file(st))  // a FIFO or device: never opened (it could block)
    return make_error(ErrorCode::kIoError, path + ": not a directory, nor a .zip or .tar.gz archive");

  struct archive* a = archive_read_new();
  if (!a) return make_error(ErrorCode::kIoError, "cannot create an archive reader");
  struct Closer {
    struct archive* a;
    ~Closer() { archive_read_free(a); }
  } closer{a};
  archive_read_support_filter_gzip(a);
  archive_read_support_format_zip(a);
  archive_read_support_format_tar(a);
  auto reason = [&] {
    const char* s = archive_error_string(a);
    return std::string(s ? s : "unreadable");
  };
  if (archive_read_open_filename(a, path.c_str(), 1 << 16) != ARCHIVE_OK)
    return make_error(ErrorCode::kIoError, path + ": not a directory, nor a .zip or .tar.gz archive (" + reason() + ")");

  const fs::path base = fs::temp_directory_path(ec);
  if (ec) return make_error(ErrorCode::kIoError, "no temporary directory to extract " + path + " into: " + ec.message());
  std::string tmpl = (base / "stagecraft-XXXXXX").string();
  if (!::mkdtemp(tmpl.data()))
    return make_error(ErrorCode::kIoError, "cannot create a directory in " + base.string() + " to extract " + path +
                                               " into: " + std::strerror(errno));
  TempDir temp{tmpl};

  std::set<std::string> seen;
  std::optional<std::string> top;  // the one top folder the traces are under ("" for none)
  std::vector<char> buf(size_t{1} << 20);
  bool first = true;
  for (;;) {
    struct archive_entry* e = nullptr;
    const int r = archive_read_next_header(a, &e);
    if (r == ARCHIVE_EOF) break;
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
      if (first) return make_error(ErrorCode::kIoError, path + ": not a directory, nor a .zip or .tar.gz archive (" + reason() + ")");
      return make_error(ErrorCode::kIoError, path + ": a corrupt or truncated archive: " + reason());
    }
    first = false;
    if (pending_signal()) return make_error(ErrorCode::kIoError, path + ": extraction interrupted");
    const char* raw = archive_entry_pathname(e);
    const std::string member = raw ? raw : "";
    const Member m = classify(member);
    if (m.cap == 0) continue;
    const size_t cap = m.cap;
    const std::string& name = m.rel;
    const std::string where = path + ":" + member;
    if (!top) top = m.top;
    if (*top != m.top)
      return make_error(ErrorCode::kIoError, where + ": traces under " +
                                                 (top->empty() ? std::string("the archive's top") : "'" + *top + "/'") +
                                                 " and under " +
                                                 (m.top.empty() ? std::string("the archive's top") : "'" + m.top + "/'") +
                                                 ": one export per archive");
    if (archive_entry_filetype(e) != AE_IFREG) return make_error(ErrorCode::kIoError, where + ": not a regular file");
    if (seen.size() >= kMaxMembers)
      return make_error(ErrorCode::kIoError, path + ": more than " + std::to_string(kMaxMembers) +
                                                 " trace members, more than any export holds");
    if (!seen.insert(name).second)
      return make_error(ErrorCode::kIoError, where + ": appears twice in the archive (which one would the simulator read?)");
    if (archive_entry_size_is_set(e) && archive_entry_size(e) > static_cast<la_int64_t>(cap))
      return make_error(ErrorCode::kIoError, where + ": " + std::to_string(archive_entry_size(e)) +
                                                 " bytes, over the cap of " + std::to_string(cap));
    if (archive_entry_size_is_set(e)) {  // room for it where it goes (tmpfs is memory)
      struct statvfs vfs {};
      const int64_t size = archive_entry_size(e);
      if (::statvfs(temp.path.c_str(), &vfs) == 0 &&
          static_cast<uint64_t>(size) > static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize)
        return make_error(ErrorCode::kIoError, "cannot extract " + where + " (" + std::to_string(size) + " bytes) under " +
                                                   base.string() + ": " +
                                                   std::to_string(static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize) +
                                                   " bytes free there (set TMPDIR to a larger file system)");
    }
    const fs::path out = temp.path / name;
    if (name.find('/') != std::string::npos) {
      fs::create_directory(out.parent_path(), ec);
      if (ec) return make_error(ErrorCode::kIoError, "cannot extract " + where + ": " + ec.message());
    }
    const int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return make_error(ErrorCode::kIoError, "cannot extract " + where + ": " + std::strerror(errno));
    size_t written = 0;
    std::string failure;
    for (;;) {
      const la_ssize_t n = archive_read_data(a, buf.data(), buf.size());
      if (n == 0) break;
      if (n < 0) {
        failure = path + ": a corrupt or truncated archive at " + name + ": " + reason();
        break;
      }
      written += static_cast<size_t>(n);
      if (written > cap) {
        failure = where + ": over the cap of " + std::to_string(cap) + " bytes";
        break;
      }
      if (!write_fully(fd, buf.data(), static_cast<size_t>(n))) {
        failure = "cannot extract " + where + " under " + base.string() + ": " + std::strerror(errno);
        break;
      }
      if (pending_signal()) {
        failure = path + ": extraction interrupted";
        break;
      }
    }
    if (failure.empty()) test_pause("extract");  // tests: a signal with one member written
    if (::close(fd) != 0 && failure.empty())
      failure = "cannot extract " + where + " under " + base.string() + ": " + std::strerror(errno);
    if (!failure.empty()) return make_error(ErrorCode::kIoError, failure);
  }
  if (first) return make_error(ErrorCode::kIoError, path + ": not a directory, nor a .zip or .tar.gz archive (no member)");
  in->dir_ = temp.path;
  in->temp_ = temp.path;
  // One folder named like a phase and nothing at the top (no summary.json,
  // which every serving export has there): a directory that happens to be
  // called "decode" or "prefill", archived by hand. It is the export, as
  // validating that directory would read it (not a serving export's part).
  std::vector<std::string> phases;
  bool top_files = false;
  for (fs::directory_iterator it(temp.path, ec), end; !ec && it != end; it.increment(ec)) {
    if (it->is_directory(ec)) phases.push_back(it->path().filename().string());
    else top_files = true;
  }
  if (!top_files && phases.size() == 1) {
    in->dir_ = temp.path / phases[0];
    in->root_ = phases[0] + "/";
  }
  temp.path.clear();  // handed over: ~TraceInput removes it
  return in;
}

int with_trace_input(const char* cmd, const std::string& path, const std::function<int(const TraceInput&)>& body) {
  std::error_code ec;
  const bool archive = !fs::is_directory(path, ec);
  if (archive) {
    install_signal_cleanup();
    std::signal(SIGPIPE, SIG_IGN);
  }
  int rc = kExitError;
  {
    Result<std::unique_ptr<TraceInput>> in = TraceInput::open(path);
    rc = in.ok() ? body(**in) : report_error(cmd, in.error());
  }  // the extraction is gone before a pending signal ends the process
  if (archive) release_signals(cmd);
  return rc;
}

std::vector<std::string> part_folders(const fs::path& dir, const std::string& prefix) {
  std::error_code ec;
  if (fs::exists(dir / "comm_groups.json", ec)) return {};
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string n = it->path().filename().string();
    if (is_trace_file(n, prefix)) return {};
  }
  std::vector<std::string> parts;
  for (const char* p : kPartNames)
    if (fs::is_directory(dir / p, ec)) parts.push_back(p);
  return parts;
}

namespace {
// The parts of the inference job in the summary at `path`; nullopt when it
// is missing, unreadable or not an inference job's.
std::optional<std::vector<std::string>> parts_of_summary(const fs::path& path) {
  Result<std::string> text = read_file(path.string(), kMaxGroupFileBytes);
  if (!text.ok()) return std::nullopt;
  const nlohmann::json s = nlohmann::json::parse(*text, nullptr, false);
  if (!s.is_object() || !s.contains("job") || !s["job"].is_object()) return std::nullopt;
  const nlohmann::json& job = s["job"];
  if (!job.contains("mode") || job["mode"] != "inference" || !job.contains("serving") || !job["serving"].is_object())
    return std::nullopt;
  const nlohmann::json& sv = job["serving"];
  const bool disaggregated = sv.contains("disaggregated") && !sv["disaggregated"].is_null() &&
                             !(sv["disaggregated"].is_boolean() && !sv["disaggregated"].get<bool>());
  if (disaggregated) return std::vector<std::string>{"prefill", "decode", "kv_transfer"};
  return std::vector<std::string>{"prefill", "decode", "mixed"};
}
}  // namespace

Result<PartCheck> check_parts(const fs::path& dir, const std::vector<std::string>& parts) {
  PartCheck c;
  std::error_code ec;
  if (fs::exists(dir / "comm_groups.json", ec)) return c;  // a training export
  std::optional<std::vector<std::string>> expected = parts_of_summary(dir / "summary.json");
  if (!expected && !parts.empty()) {
    // The top summary is gone or torn: the decode part's own summary holds
    // the whole job (the prefill part's holds its pool's, without the
    // disaggregation), and every serving export has a decode part.
    c.source = "decode/summary.json";
    expected = parts_of_summary(dir / "decode" / "summary.json");
    if (!expected)
      return make_error(ErrorCode::kInvalidArgument,
                        "a serving export (phase folders found) whose summary.json and decode/summary.json are missing "
                        "or unreadable: which parts its job has cannot be told, so a missing part would go unnoticed; "
                        "export it again");
  }
  if (!expected) return c;  // no inference summary, no phase folder
  c.expected = std::move(*expected);
  for (const std::string& p : c.expected)
    if (std::find(parts.begin(), parts.end(), p) == parts.end()) c.missing.push_back(p);
  for (const std::string& p : parts)
    if (std::find(c.expected.begin(), c.expected.end(), p) == c.expected.end()) c.unexpected.push_back(p);
  return c;
}

std::string PartCheck::message(const std::string& shown, const std::vector<std::string>& parts) const {
  auto list = [](const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& p : v) s += (s.empty() ? "" : ", ") + p + "/";
    return s.empty() ? std::string("none") : s;
  };
  std::string what;
  if (!missing.empty()) what = "missing " + list(missing);
  if (!unexpected.empty()) what += (what.empty() ? "" : " and ") + list(unexpected) + " not a part of its job";
  return shown + ": " + what + " (" + source + "'s job has " + std::to_string(expected.size()) + " parts: " +
         list(expected) + "; found " + list(parts) + ")";
}

}  // namespace sc::cli
