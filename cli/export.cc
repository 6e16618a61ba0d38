// stagecraft generate's writer: see export.h and docs/export.md.
#include "export.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <iterator>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <mutex>
#include <optional>
#include <array>
#include <thread>

#include "api/budget.h"
#include "base/cancel.h"
#include "base/sha256.h"
#include "base/workers.h"
#include "export_archive.h"
#include "progress.h"

namespace sc::cli {

namespace fs = std::filesystem;

// ---------------------------------------------------------------- selection

namespace {

Error ranks_error(const std::string& what) { return make_error(ErrorCode::kInvalidArgument, what, "--ranks"); }

bool parse_int(const std::string& s, int64_t* v) {
  if (s.empty() || s.size() > 18) return false;
  int64_t x = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return false;
    x = x * 10 + (c - '0');
  }
  *v = x;
  return true;
}

}  // namespace

Result<RankSelection> parse_rank_list(const std::string& spec, int64_t world) {
  RankSelection s;
  if (spec.empty()) return ranks_error("empty rank list (expected e.g. 0-127,4096)");
  size_t start = 0;
  while (start <= spec.size()) {
    size_t comma = spec.find(',', start);
    std::string item = spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    int64_t lo = 0, hi = 0;
    size_t dash = item.find('-');
    bool ok = dash == std::string::npos ? parse_int(item, &lo) && (hi = lo, true)
                                        : parse_int(item.substr(0, dash), &lo) && parse_int(item.substr(dash + 1), &hi);
    if (!ok) return ranks_error("'" + item + "' is not a rank or a range like 0-127 (in '" + spec + "')");
    if (hi < lo) return ranks_error("empty range '" + item + "'");
    if (hi >= world)
      return ranks_error("rank " + std::to_string(hi) + " is outside 0.." + std::to_string(world - 1) + " (world size " +
                         std::to_string(world) + ")");
    s.ranges.push_back({lo, hi});
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  std::sort(s.ranges.begin(), s.ranges.end());
  std::vector<std::pair<int64_t, int64_t>> merged;
  for (const auto& r : s.ranges) {
    if (!merged.empty() && r.first <= merged.back().second + 1) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(r);
    }
  }
  s.ranges = std::move(merged);
  return s;
}

OutputFormat format_for(const std::string& path) {
  auto ends = [&](const char* suf) {
    size_t n = std::strlen(suf);
    return path.size() > n && path.compare(path.size() - n, n, suf) == 0;
  };
  if (ends(".zip")) return OutputFormat::kZip;
  if (ends(".tar.gz") || ends(".tgz")) return OutputFormat::kTarGz;
  return OutputFormat::kDirectory;
}

void inject_write_failure(int64_t nth_write, int err) { set_injected_write_failure(nth_write, err); }

// ------------------------------------------------------------------ signals

namespace {
volatile std::sig_atomic_t g_signal = 0;
extern "C" void on_signal(int sig) {
  g_signal = sig;
  request_cancel();  // stops a generator build in progress (base/cancel.h)
}
}  // namespace

namespace {
// SIGHUP too: a closed terminal must not leave a half-written export (or
// an extracted archive) behind any more than Ctrl-C does.
constexpr int kCaught[3] = {SIGINT, SIGTERM, SIGHUP};
struct sigaction g_inherited[std::size(kCaught)];
bool g_saved = false;
}  // namespace

void install_signal_cleanup() {
  if (!g_saved) {
    for (size_t i = 0; i < std::size(kCaught); ++i) sigaction(kCaught[i], nullptr, &g_inherited[i]);
    g_saved = true;
  }
  struct sigaction sa {};
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  for (size_t i = 0; i < std::size(kCaught); ++i)
    if (g_inherited[i].sa_handler != SIG_IGN) sigaction(kCaught[i], &sa, nullptr);
}

void release_signals(const std::string& command) {
  if (!g_saved) return;
  for (size_t i = 0; i < std::size(kCaught); ++i) sigaction(kCaught[i], &g_inherited[i], nullptr);
  exit_if_signalled(command);
}

void exit_if_signalled(const std::string& command, const std::string& detail) {
  if (int sig = g_signal; sig != 0) {
    std::fprintf(stderr, "stagecraft %s: interrupted by %s%s\n", command.c_str(), signal_name(sig), detail.c_str());
    reraise_if_signalled();
  }
}

int pending_signal() { return g_signal; }

const char* signal_name(int sig) { return sig == SIGINT ? "SIGINT" : sig == SIGHUP ? "SIGHUP" : "SIGTERM"; }

void test_pause(const char* point) {
  static const char* want = std::getenv("STAGECRAFT_TEST_PAUSE");
  if (!want || std::strcmp(want, point) != 0) return;
  std::fprintf(stderr, "stagecraft: test pause at %s\n", point);
  std::fflush(stderr);
  static const char* resume = std::getenv("STAGECRAFT_TEST_RESUME");
  for (int i = 0; i < 6000 && !g_signal; ++i) {
    if (resume && ::access(resume, F_OK) == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

void reraise_if_signalled() {
  int sig = g_signal;
  if (!sig) return;
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

// ------------------------------------------------------------------ helpers

namespace {

// A run of consecutive trace entries of the archive (positions 0..count-1).
struct Traces {
  const ArchiveEntry* first = nullptr;
  int64_t n = 0;
  int64_t count() const { return n; }
  const ArchiveEntry& at(int64_t pos) const { return first[pos]; }
};

// The trace entries from index i on (advanced past them).
Traces trace_run(const std::vector<ArchiveEntry>& entries, size_t* i) {
  Traces t;
  if (*i < entries.size()) t.first = &entries[*i];
  while (*i < entries.size() && entries[*i].kind == ArchiveEntry::Kind::kTrace) {
    ++t.n;
    ++*i;
  }
  return t;
}

std::string os_error(const std::string& what, const fs::path& p, int err) {
  return "cannot " + what + " " + p.string() + ": " + std::strerror(err);
}

Status write_whole_file(const fs::path& path, std::string_view bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return make_error(ErrorCode::kIoError, os_error("create", path, errno));
  bool ok = write_fully(fd, bytes.data(), bytes.size());
  int err = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (!ok) return make_error(ErrorCode::kIoError, os_error("write", path, err));
  return ok_status();
}

// OpenSSL's SHA-256 (hardware-accelerated; the same digest as
// base/sha256.h, which the request layer uses for the same manifest).
using Digest = std::array<uint8_t, 32>;

Digest sha256(std::string_view b) {
  Digest d{};
  unsigned int n = 0;
  EVP_Digest(b.data(), b.size(), d.data(), &n, EVP_sha256(), nullptr);
  return d;
}

// First error wins; everyone stops.
struct Failure {
  std::mutex mu;
  std::atomic<bool> stop{false};
  std::optional<Error> error;
  void set(Error e) {
    std::lock_guard<std::mutex> l(mu);
    if (!error) error = std::move(e);
    stop = true;
  }
};

Error cancelled() {
  return make_error(ErrorCode::kIoError,
                    std::string("interrupted by ") + signal_name(g_signal) +
                        "; the partial output was removed");
}

int thread_count(int requested, int64_t work) {
  int t = requested > 0 ? requested : static_cast<int>(std::thread::hardware_concurrency());
  t = std::clamp(t, 1, 64);
  return static_cast<int>(std::min<int64_t>(t, std::max<int64_t>(work, 1)));
}

// --------------------------------------------------------------- directory

// The trace entries by worker threads (any order: they are separate
// files), then the other entries.
Status export_directory(const ArchiveEncoder& enc, const std::vector<ArchiveEntry>& entries, const ExportOptions& opt,
                        const fs::path& tmp, Progress* progress, ExportStats* stats) {
  std::vector<ArchiveEntry> trace_entries;
  for (const ArchiveEntry& e : entries) {
    if (e.kind == ArchiveEntry::Kind::kTrace) trace_entries.push_back(e);
    // An inference job's folders (prefill/, decode/, ...), before any worker writes.
    if (const size_t slash = e.name.rfind('/'); slash != std::string::npos) {
      const fs::path dir = tmp / e.name.substr(0, slash);
      std::error_code ec;
      fs::create_directories(dir, ec);
      if (ec) return make_error(ErrorCode::kIoError, os_error("create", dir, ec.value()));
    }
  }
  const Traces pos{trace_entries.data(), static_cast<int64_t>(trace_entries.size())};
  const int nthreads = thread_count(opt.threads, pos.count());
  stats->threads = nthreads;
  Failure fail;
  std::atomic<int64_t> next{0}, done{0};
  std::atomic<uint64_t> bytes{0};
  constexpr int64_t kChunk = 16;
  auto worker = [&] {
    RankEncoder::Scratch scratch;
    std::string name;
    while (!fail.stop.load(std::memory_order_relaxed)) {
      int64_t first = next.fetch_add(kChunk);
      if (first >= pos.count()) return;
      int64_t last = std::min(first + kChunk, pos.count());
      for (int64_t p = first; p < last && !fail.stop.load(std::memory_order_relaxed); ++p) {
        const ArchiveEntry& e = pos.at(p);
        Result<std::string_view> b = enc.encode(e, &scratch);
        if (!b.ok()) return fail.set(b.error());
        if (Status s = write_whole_file(tmp / e.name, *b); !s.ok()) return fail.set(s.error());
        bytes.fetch_add(b->size(), std::memory_order_relaxed);
        if (done.fetch_add(1, std::memory_order_relaxed) == 0) test_pause("rank");
      }
    }
  };
  // A worker's throw (std::bad_alloc) stops the others and comes out of
  // join(); the caller's TempPath then removes the partial output.
  Workers threads([&] { fail.stop = true; });
  for (int i = 0; i < nthreads; ++i) threads.spawn(worker);
  while (done.load() < pos.count() && !fail.stop.load()) {
    if (g_signal) fail.set(cancelled());
    progress->update(done.load(), bytes.load());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  threads.join();
  if (g_signal && !fail.error) fail.set(cancelled());
  if (fail.error) return *fail.error;
  progress->update(done.load(), bytes.load());
  stats->trace_bytes = bytes.load();
  stats->ranks = done.load();
  stats->output_bytes = stats->trace_bytes;
  for (const ArchiveEntry& e : entries) {
    if (e.kind != ArchiveEntry::Kind::kFile) continue;  // a directory has no manifest
    SC_RETURN_IF_ERROR(write_whole_file(tmp / e.name, e.bytes));
    stats->output_bytes += e.bytes.size();
  }
  return ok_status();
}

// ------------------------------------------------------------------ archive

struct Item {
  std::string bytes;
  Digest digest;
};

// One bounded queue per worker; worker w produces positions w, w+W, ... in
// order, so the consumer takes position p from queue p % W.
struct Lane {
  std::mutex mu;
  std::condition_variable cv;
  std::deque<Item> items;
  std::vector<std::string> free_bufs;  // recycled buffers
};

// Streams a run of trace entries into ar in order: worker threads encode
// and hash ahead (bounded), this thread writes. Appends their members.
Status stream_traces(const ArchiveEncoder& enc, const Traces& pos, const ExportOptions& opt, ArchiveWriter* ar,
                     Progress* progress, std::vector<ArchiveMember>* members, ExportStats* stats) {
  const int nthreads = thread_count(opt.threads, pos.count());
  stats->threads = nthreads;
  constexpr size_t kDepth = 4;  // items in flight per worker
  std::vector<Lane> lanes(static_cast<size_t>(nthreads));
  Failure fail;
  auto worker = [&](int w) {
    RankEncoder::Scratch scratch;
    Lane& lane = lanes[static_cast<size_t>(w)];
    for (int64_t p = w; p < pos.count(); p += nthreads) {
      Result<std::string_view> b = enc.encode(pos.at(p), &scratch);
      if (!b.ok()) {
        fail.set(b.error());
        lane.cv.notify_all();
        return;
      }
      Item item;
      {
        std::unique_lock<std::mutex> l(lane.mu);
        lane.cv.wait(l, [&] { return lane.items.size() < kDepth || fail.stop.load(); });
        if (fail.stop.load()) return;
        if (!lane.free_bufs.empty()) {
          item.bytes = std::move(lane.free_bufs.back());
          lane.free_bufs.pop_back();
        }
      }
      item.bytes.assign(b->data(), b->size());
      item.digest = sha256(*b);
      {
        std::lock_guard<std::mutex> l(lane.mu);
        lane.items.push_back(std::move(item));
      }
      lane.cv.notify_all();
    }
  };
  // Stop: every lane's waiters wake and see fail.stop (set before the
  // lane's lock is taken, so no waiter misses it). A worker's throw
  // (std::bad_alloc) stops the rest and comes out of join().
  auto stop_lanes = [&] {
    fail.stop = true;
    for (auto& lane : lanes) {
      { std::lock_guard<std::mutex> l(lane.mu); }
      lane.cv.notify_all();
    }
  };
  Workers threads(stop_lanes);
  for (int i = 0; i < nthreads; ++i) threads.spawn([&worker, i] { worker(i); });
  uint64_t bytes = 0;
  for (int64_t p = 0; p < pos.count() && !fail.stop.load(); ++p) {
    Lane& lane = lanes[static_cast<size_t>(p % nthreads)];
    Item item;
    {
      std::unique_lock<std::mutex> l(lane.mu);
      lane.cv.wait_for(l, std::chrono::milliseconds(50), [&] { return !lane.items.empty() || fail.stop.load(); });
      while (lane.items.empty() && !fail.stop.load()) {
        if (g_signal) break;
        lane.cv.wait_for(l, std::chrono::milliseconds(50), [&] { return !lane.items.empty() || fail.stop.load(); });
      }
      if (g_signal) {
        l.unlock();
        fail.set(cancelled());
        break;
      }
      if (lane.items.empty()) break;
      item = std::move(lane.items.front());
      lane.items.pop_front();
    }
    lane.cv.notify_all();
    const std::string& name = pos.at(p).name;
    if (Status s = ar->add(name, item.bytes); !s.ok()) {
      fail.set(s.error());
      break;
    }
    members->push_back({name, item.bytes.size(), to_hex(item.digest)});
    bytes += item.bytes.size();
    {
      std::lock_guard<std::mutex> l(lane.mu);
      lane.free_bufs.push_back(std::move(item.bytes));
    }
    progress->update(p + 1, bytes);
    if (p == 0) test_pause("rank");
    if (g_signal) fail.set(cancelled());
  }
  threads.stop();
  threads.join();
  if (fail.error) return *fail.error;
  stats->trace_bytes += bytes;
  stats->ranks += pos.count();
  return ok_status();
}

// The entries in archive order; manifest.json from the members before it.
Status export_archive(const Generator& gen, const ArchiveEncoder& enc, const std::vector<ArchiveEntry>& entries,
                      const ArchiveSpec& spec, const ExportOptions& opt, int fd, const std::string& display,
                      Progress* progress, ExportStats* stats) {
  const auto kind = opt.format == OutputFormat::kZip ? ArchiveWriter::Kind::kZip : ArchiveWriter::Kind::kTarGz;
  SC_ASSIGN_OR_RETURN(std::unique_ptr<ArchiveWriter> ar, ArchiveWriter::open(fd, kind, opt.compression_level, display));
  std::vector<ArchiveMember> members;
  members.reserve(entries.size());
  for (size_t i = 0; i < entries.size();) {
    const ArchiveEntry& e = entries[i];
    switch (e.kind) {
      case ArchiveEntry::Kind::kFile:
        SC_RETURN_IF_ERROR(ar->add(e.name, e.bytes, e.mode));
        members.push_back({e.name, e.bytes.size(), to_hex(sha256(e.bytes))});
        ++i;
        break;
      case ArchiveEntry::Kind::kManifest: {
        const std::string m = archive_manifest_json(gen, spec, e, members);
        SC_RETURN_IF_ERROR(ar->add(e.name, m, e.mode));
        members.push_back({e.name, m.size(), to_hex(sha256(m))});  // an inference job's top manifest lists the parts'
        ++i;
        break;
      }
      case ArchiveEntry::Kind::kTrace:
        SC_RETURN_IF_ERROR(stream_traces(enc, trace_run(entries, &i), opt, ar.get(), progress, &members, stats));
        break;
    }
  }
  SC_RETURN_IF_ERROR(ar->close());
  stats->output_bytes = ar->bytes_written();
  return ok_status();
}

// rename(2) that fails with EEXIST instead of replacing an existing target,
// so two exports racing for one name cannot silently overwrite each other.
// Filesystems without RENAME_NOREPLACE: link+unlink for files (link never
// replaces), plain rename for directories (which never replaces a
// non-empty directory).
int rename_noreplace(const fs::path& from, const fs::path& to, bool is_dir) {
  if (::renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP) return errno;
  if (is_dir) return ::rename(from.c_str(), to.c_str()) == 0 ? 0 : errno;
  if (::link(from.c_str(), to.c_str()) != 0) return errno;
  ::unlink(from.c_str());
  return 0;
}

Error exists_meanwhile(const fs::path& out) {
  return make_error(ErrorCode::kIoError, out.string() +
                                             " was created by someone else during the export; kept it and removed "
                                             "ours (use --force to replace a previous export)");
}

Error changed_meanwhile(const fs::path& out) {
  return make_error(ErrorCode::kIoError, out.string() +
                                             " changed during the export (something was written or moved there); "
                                             "kept it as it is and removed ours");
}

// What OUT was when the export started; the commit replaces only that
// (docs/export.md, "Committing"). A directory's tree is its entries'
// relative names with their type ('f' regular file, 'd' directory, 'o'
// anything else), sorted, and the root's device and inode: a file added,
// removed or renamed, or another directory moved in at OUT, changes it.
struct OutState {
  enum class Kind { kAbsent, kEmptyDir, kOldDir, kOldArchive } kind = Kind::kAbsent;
  dev_t dev = 0;
  ino_t ino = 0;
  std::vector<std::string> tree;
  bool operator==(const OutState& o) const { return kind == o.kind && dev == o.dev && ino == o.ino && tree == o.tree; }
};

bool list_tree(const fs::path& root, const std::string& rel, int depth, std::vector<std::string>* tree) {
  std::error_code ec;
  for (fs::directory_iterator it(root / rel, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string n = rel.empty() ? it->path().filename().string() : rel + "/" + it->path().filename().string();
    const fs::file_type t = it->symlink_status(ec).type();
    if (ec) return false;
    if (t == fs::file_type::directory) {
      tree->push_back("d " + n);
      if (depth > 0 && !list_tree(root, n, depth - 1, tree)) return false;
      if (depth == 0) tree->push_back("o " + n + "/...");  // deeper than an export goes: never equal to one
    } else {
      tree->push_back((t == fs::file_type::regular ? "f " : "o ") + n);
    }
  }
  return !ec;
}

// The state of path now (kind_hint: what the caller expects it to be).
std::optional<OutState> snapshot(const fs::path& path, bool is_dir) {
  OutState st;
  struct stat sb {};
  if (::lstat(path.c_str(), &sb) != 0) {
    if (errno == ENOENT) return st;
    return std::nullopt;
  }
  st.dev = sb.st_dev;
  st.ino = sb.st_ino;
  if (is_dir) {
    if (!S_ISDIR(sb.st_mode) || !list_tree(path, "", 1, &st.tree)) return std::nullopt;
    std::sort(st.tree.begin(), st.tree.end());
    st.kind = st.tree.empty() ? OutState::Kind::kEmptyDir : OutState::Kind::kOldDir;
  } else {
    if (!S_ISREG(sb.st_mode)) return std::nullopt;
    st.kind = OutState::Kind::kOldArchive;
    st.tree.push_back(std::to_string(sb.st_size) + " " + std::to_string(sb.st_mtim.tv_sec) + "." +
                      std::to_string(sb.st_mtim.tv_nsec));
  }
  return st;
}

// Removes root's entries named in tree (files, then folders deepest
// first), then root itself; never anything else: a folder that still
// holds a stranger stays. Returns false if root could not be removed.
bool remove_known(const fs::path& root, const std::vector<std::string>& tree) {
  std::vector<std::string> dirs;
  for (const std::string& e : tree) {
    const std::string n = e.substr(2);
    if (e[0] == 'd') dirs.push_back(n);
    else if (e[0] == 'f') ::unlink((root / n).c_str());
  }
  std::sort(dirs.begin(), dirs.end(), [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  for (const std::string& d : dirs) ::rmdir((root / d).c_str());
  return ::rmdir(root.c_str()) == 0 || errno == ENOENT;
}

// Swaps two paths atomically (Linux renameat2 RENAME_EXCHANGE); errno on failure.
int exchange(const fs::path& a, const fs::path& b) {
  return ::renameat2(AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(), RENAME_EXCHANGE) == 0 ? 0 : errno;
}

// Moves tmp (holding the files named by ours) to out, which must still be
// what it was at the start (was):
// - absent: rename without replacing (fails if anything appeared);
// - an empty directory: rename(2) onto it, which the kernel refuses
//   (ENOTEMPTY) if anything was written into it meanwhile;
// - a previous directory export (--force): checked unchanged, swapped
//   with tmp (RENAME_EXCHANGE), checked again on the far side of the swap
//   (swapped back if it changed in between), then only its known files
//   removed;
// - a previous archive (--force): checked unchanged, then replaced
//   atomically.
// On refusal nothing at out is touched; the caller removes tmp.
Status commit(const fs::path& tmp, const fs::path& out, bool is_dir, const OutState& was,
              const std::vector<std::string>& ours) {
  using K = OutState::Kind;
  if (was.kind == K::kAbsent) {
    if (int err = rename_noreplace(tmp, out, is_dir); err != 0) {
      if (err == EEXIST || err == ENOTEMPTY) return exists_meanwhile(out);
      return make_error(ErrorCode::kIoError, os_error("rename " + tmp.string() + " to", out, err));
    }
    test_pause("committed");
    return ok_status();
  }
  const std::optional<OutState> now = snapshot(out, is_dir);
  if (!now || !(*now == was)) return changed_meanwhile(out);
  if (was.kind == K::kEmptyDir) {
    if (::rename(tmp.c_str(), out.c_str()) != 0) {
      const int err = errno;
      if (err == ENOTEMPTY || err == EEXIST || err == ENOTDIR || err == EISDIR) return changed_meanwhile(out);
      return make_error(ErrorCode::kIoError, os_error("rename " + tmp.string() + " to", out, err));
    }
    test_pause("committed");
    return ok_status();
  }
  if (was.kind == K::kOldArchive) {
    std::error_code ec;
    fs::rename(tmp, out, ec);  // atomic replacement of the previous archive
    if (ec) return make_error(ErrorCode::kIoError, "cannot rename " + tmp.string() + " to " + out.string() + ": " + ec.message());
    test_pause("committed");
    return ok_status();
  }
  // A previous directory export. Swap it with ours: out is then ours and
  // tmp the old one, which we check once more (it may have changed between
  // the check above and the swap).
  fs::path old = tmp;
  int err = exchange(tmp, out);
  if (err == EINVAL || err == ENOSYS || err == EOPNOTSUPP) {
    // No RENAME_EXCHANGE here: move the old one aside, then ours in.
    old = out;
    old += ".old-" + std::to_string(::getpid());
    if (::rename(out.c_str(), old.c_str()) != 0)
      return make_error(ErrorCode::kIoError, os_error("move aside", out, errno));
    const std::optional<OutState> moved = snapshot(old, true);
    if (!moved || !(*moved == was)) {
      ::rename(old.c_str(), out.c_str());
      return changed_meanwhile(out);
    }
    if (int e = rename_noreplace(tmp, out, true); e != 0) {
      ::rename(old.c_str(), out.c_str());
      return e == EEXIST || e == ENOTEMPTY ? changed_meanwhile(out)
                                           : make_error(ErrorCode::kIoError, os_error("rename " + tmp.string() + " to", out, e));
    }
  } else if (err != 0) {
    return make_error(ErrorCode::kIoError, os_error("swap " + tmp.string() + " with", out, err));
  } else {
    const std::optional<OutState> swapped = snapshot(old, true);
    if (!swapped || !(*swapped == was)) {
      exchange(tmp, out);  // back: the old (changed) one at out, ours at tmp
      return changed_meanwhile(out);
    }
  }
  test_pause("committed");
  if (!remove_known(old, was.tree))
    std::fprintf(stderr, "stagecraft: note: kept %s: it holds files stagecraft did not write\n", old.c_str());
  (void)ours;
  return ok_status();
}

// Removes the temporary unless released: an archive file, or a directory
// of which only the files named in tree (what this export writes) are
// removed.
struct TempPath {
  fs::path path;
  int fd = -1;
  bool keep = false;
  bool is_dir = false;
  std::vector<std::string> tree;
  ~TempPath() {
    if (fd >= 0) ::close(fd);
    if (keep || path.empty()) return;
    if (!is_dir) {
      ::unlink(path.c_str());
    } else if (!remove_known(path, tree)) {
      std::fprintf(stderr, "stagecraft: note: kept %s: it holds files stagecraft did not write\n", path.c_str());
    }
  }
};

bool is_trace_file(const std::string& n) {
  // <prefix>.<rank>.et with a prefix generate accepts
  if (n.size() < 6 || n.compare(n.size() - 3, 3, ".et") != 0) return false;
  size_t end = n.size() - 3, dot = n.rfind('.', end - 1);
  if (dot == std::string::npos || dot == 0 || dot + 1 == end) return false;
  for (size_t i = dot + 1; i < end; ++i)
    if (n[i] < '0' || n[i] > '9') return false;
  return valid_trace_prefix(n.substr(0, dot));
}

// A previous directory export: summary.json and comm_groups.json, and
// otherwise only <prefix>.<rank>.et regular files; or an inference job's
// (docs/export.md): summary.json and part folders (prefill/, decode/,
// mixed/, kv_transfer/), each one of the former (kv_transfer/ without a
// summary.json). *stranger names the first entry that is not (for the
// message).
bool previous_directory_export(const fs::path& dir, std::string* stranger, bool top = true) {
  std::error_code ec;
  bool summary = false, groups = false, parts = false;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string n = it->path().filename().string();
    const fs::file_type type = it->symlink_status(ec).type();
    const bool regular = type == fs::file_type::regular;
    if (regular && n == "summary.json") summary = true;
    else if (regular && n == "comm_groups.json") groups = true;
    else if (top && type == fs::file_type::directory && is_part_name(n)) {
      std::string inner;
      if (!previous_directory_export(it->path(), &inner, false) && !(n == "kv_transfer" && inner == "no summary.json")) {
        *stranger = n + "/" + inner;
        return false;
      }
      parts = true;
    } else if (!(regular && is_trace_file(n))) {
      *stranger = n;
      return false;
    }
  }
  if (ec) {
    *stranger = "(unreadable: " + ec.message() + ")";
    return false;
  }
  if (parts && !groups && summary) return true;  // an inference job's folders
  if (parts) {
    *stranger = groups ? "comm_groups.json beside inference folders" : "no summary.json";
    return false;
  }
  if (!summary || !groups) *stranger = summary ? "no comm_groups.json" : "no summary.json";
  return summary && groups;
}

// The working directory, any directory above it, home and / are never
// replaced, not even a previous export there: the rename would pull the
// directory away from under the shell.
std::string protected_reason(const fs::path& out) {
  std::error_code ec;
  const fs::path target = fs::weakly_canonical(fs::absolute(out, ec), ec);
  if (ec) return "";
  const fs::path cwd = fs::weakly_canonical(fs::current_path(ec), ec);
  if (!ec) {
    if (target == cwd) return "it is the working directory";
    auto t = target.begin();
    auto c = cwd.begin();
    for (; t != target.end() && c != cwd.end() && *t == *c; ++t, ++c) {
    }
    if (t == target.end()) return "it contains the working directory";
  }
  if (const char* home = std::getenv("HOME"); home && *home) {
    std::error_code hec;
    if (target == fs::weakly_canonical(fs::path(home), hec) && !hec) return "it is the home directory";
  }
  if (target == target.root_path()) return "it is the root directory";
  return "";
}

}  // namespace

Status check_output(const fs::path& out, OutputFormat format, bool force, bool* replace) {
  *replace = false;
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(out, ec);
  if (!fs::exists(st)) return ok_status();
  const bool want_dir = format == OutputFormat::kDirectory;
  auto refuse = [&](const std::string& why) { return make_error(ErrorCode::kIoError, out.string() + ": " + why); };
  if (want_dir && !fs::is_directory(st)) return refuse("exists and is not a directory");
  if (!want_dir && !fs::is_regular_file(st)) return refuse("exists and is not a regular file");
  if (want_dir) {
    if (std::string why = protected_reason(out); !why.empty()) return refuse("refusing to replace it: " + why);
    if (fs::is_empty(out, ec) && !ec) {
      *replace = true;
      return ok_status();
    }
  }
  if (!force) return refuse(std::string("exists") + (want_dir ? " and is not empty" : "") + " (use --force to replace a previous export)");
  if (want_dir) {
    std::string stranger;
    if (!previous_directory_export(out, &stranger))
      return refuse("--force replaces only a previous export (summary.json, comm_groups.json and <prefix>.<rank>.et "
                    "files), and this directory holds '" + stranger + "'; remove it yourself if you mean it");
  } else if (const std::string first = archive_first_member(out.string());
             first != "comm_groups.json" && first != "prefill/comm_groups.json") {
    return refuse("--force replaces only a previous stagecraft archive, and this file is not one; remove it yourself if you mean it");
  }
  *replace = true;
  return ok_status();
}

Status run_export(const Generator& gen, const RankEncoder& enc, const ExportOptions& opt, ExportStats* stats) {
  return run_export(gen, ArchiveEncoder(enc), opt, stats);
}

Status run_export(const Generator& gen, const ArchiveEncoder& enc, const ExportOptions& opt, ExportStats* stats) {
  auto start = std::chrono::steady_clock::now();
  const fs::path& out = opt.out;
  std::error_code ec;
  const bool is_dir = opt.format == OutputFormat::kDirectory;
  // What out is now (checked on both sides of check_output): the commit
  // replaces only that.
  const std::optional<OutState> was = snapshot(out, is_dir);
  bool replace = false;
  SC_RETURN_IF_ERROR(check_output(out, opt.format, opt.force, &replace));
  if (const std::optional<OutState> again = snapshot(out, is_dir); !was || !again || !(*again == *was))
    return changed_meanwhile(out);
  ArchiveSpec spec;
  spec.layout = is_dir ? ArchiveLayout::kFiles : ArchiveLayout::kBundle;
  spec.prefix = opt.prefix;
  spec.ranks = opt.ranks;
  SC_ASSIGN_OR_RETURN(const std::vector<ArchiveEntry> entries, archive_entries(gen, spec));
  // The parent directories this export creates are removed again (each
  // only if still empty) unless it commits: a refused, failed or
  // interrupted export leaves nothing behind, a/b/ of -o a/b/out included.
  struct CreatedDirs {
    std::vector<fs::path> dirs;  // innermost first
    bool keep = false;
    ~CreatedDirs() {
      if (keep) return;
      std::error_code e;
      for (const fs::path& d : dirs) fs::remove(d, e);  // fails, harmlessly, on one that is not empty
    }
  } created;
  fs::path parent = out.parent_path();
  if (!parent.empty()) {
    for (fs::path d = parent; !d.empty() && !fs::exists(d, ec); d = d.parent_path()) {
      created.dirs.push_back(d);
      if (d == d.parent_path()) break;
    }
    fs::create_directories(parent, ec);
    if (ec) return make_error(ErrorCode::kIoError, "cannot create " + parent.string() + ": " + ec.message());
  }
  TempPath tmp;
  tmp.is_dir = is_dir;
  if (is_dir) {
    for (const ArchiveEntry& e : entries) {
      if (e.kind == ArchiveEntry::Kind::kManifest) continue;  // a directory has no manifest
      tmp.tree.push_back("f " + e.name);
      if (const size_t slash = e.name.rfind('/'); slash != std::string::npos) tmp.tree.push_back("d " + e.name.substr(0, slash));
    }
    std::sort(tmp.tree.begin(), tmp.tree.end());
    tmp.tree.erase(std::unique(tmp.tree.begin(), tmp.tree.end()), tmp.tree.end());
  }
  // OUT.tmp-<pid>, or OUT.tmp-<pid>-<n> if a stale one is there (never removed: not ours).
  fs::path tmp_name;
  for (int n = 0;; ++n) {
    tmp_name = out;
    tmp_name += ".tmp-" + std::to_string(::getpid()) + (n ? "-" + std::to_string(n) : "");
    int err = 0;
    if (is_dir) {
      if (::mkdir(tmp_name.c_str(), 0755) != 0) err = errno;
    } else if ((tmp.fd = ::open(tmp_name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644)) < 0) {
      err = errno;
    }
    if (err == 0) break;
    if (err != EEXIST || n >= 100) return make_error(ErrorCode::kIoError, os_error("create", tmp_name, err));
  }
  tmp.path = tmp_name;

  Progress progress(opt.progress == ProgressMode::kQuiet  ? Progress::Mode::kQuiet
                    : opt.progress == ProgressMode::kBar   ? Progress::Mode::kBar
                    : opt.progress == ProgressMode::kLines ? Progress::Mode::kLines
                                                           : Progress::auto_mode(),
                    std::count_if(entries.begin(), entries.end(),
                                  [](const ArchiveEntry& e) { return e.kind == ArchiveEntry::Kind::kTrace; }));
  Status result = ok_status();
  if (is_dir) {
    result = export_directory(enc, entries, opt, tmp.path, &progress, stats);
  } else {
    result = export_archive(gen, enc, entries, spec, opt, tmp.fd, tmp.path.string(), &progress, stats);
    if (result.ok()) {
      int fd = tmp.fd;
      tmp.fd = -1;
      if (::close(fd) != 0) result = make_error(ErrorCode::kIoError, os_error("write", tmp.path, errno));
    }
  }
  progress.finish();
  if (!result.ok()) return result;
  if (g_signal) return cancelled();
  test_pause("commit");
  if (g_signal) return cancelled();
  SC_RETURN_IF_ERROR(commit(tmp.path, out, is_dir, *was, tmp.tree));
  created.keep = true;
  tmp.keep = true;
  stats->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return ok_status();
}

bool is_part_name(const std::string& n) {
  return std::any_of(std::begin(kPartNames), std::end(kPartNames), [&](const char* p) { return n == p; });
}

namespace {

// Refuses an export whose estimated size is past kMaxOutputBytes, or with
// --allow-large past the free space where it goes. The quick estimate
// (core/api/budget.h: from the job's numbers, never below the truth, up to
// 4x above it) decides when it is within the budget or even a quarter of
// it is over; in between, the counted estimate (estimate_job_counted: two
// small builds, never below the truth, within 1.5x) decides, before the
// build. Issue 24: the 32,768-rank Llama-3-70B export (2 micro-batches) is
// 19.8 GiB by the quick estimate, 4.71 GB counted, and writes 4.71 GB.
constexpr int64_t kMaxOutputBytes = int64_t{8} << 30;

// per_rank: one rank's trace bytes; the --ranks example is as many ranks
// as fit the budget (it named up to 1,024 whatever their size, which for
// a 1,024-rank job was every rank: the same refusal again).
Status output_error(const std::string& what, int64_t n, int64_t per_rank) {
  const int64_t fit = per_rank > 0 ? std::min(n, kMaxOutputBytes / per_rank) : n;
  const std::string subset =
      fit >= 1 ? "Write a subset with --ranks (e.g. --ranks 0-" + std::to_string(fit - 1) + ": " +
                     std::to_string(fit) + (fit == 1 ? " rank fits" : " ranks fit") + "), use"
               : "One rank's trace alone is over it: use";
  return make_error(ErrorCode::kTooLarge,
                    what + ", over the budget of " + human_bytes(kMaxOutputBytes) + ". " + subset +
                        " fewer micro-batches (training.global_batch_size) or fewer ranks; or pass "
                        "--allow-large if the disk has room",
                    "-o");
}

int64_t times(int64_t a, int64_t n) { return n > 0 && a > INT64_MAX / 4 / n ? INT64_MAX / 4 : a * n; }

}  // namespace

Status check_output_budget(const Job& job, const ExportOptions& opt, bool allow_large) {
  SC_RETURN_IF_ERROR(check_budget(job));  // the build's memory first: it is what to fix first
  JobEstimate e = estimate_job(job);
  const int64_t n = opt.ranks.count();
  if (!job.inference()) {
    // The build plus the exporter's templates and buffers (api/budget.h
    // generate_bytes), against the same memory budget; the quick bound
    // decides when it is within it or even a quarter of it is over.
    const int threads = opt.threads > 0 ? opt.threads
                                        : std::clamp(static_cast<int>(std::thread::hardware_concurrency()), 1, 64);
    const bool archive = opt.format != OutputFormat::kDirectory;
    const int64_t budget = engine_budget().max_engine_bytes;
    int64_t need = generate_bytes(e, threads, n, archive);
    bool counted = false;
    if (need > budget && need / 4 <= budget) {
      Result<JobEstimate> c = estimate_job_counted(job);
      if (!c.ok()) return c.error();
      need = generate_bytes(*c, threads, n, archive);
      counted = true;
    }
    if (need > budget)
      return make_error(ErrorCode::kTooLarge,
                        "writing " + std::to_string(n) + " ranks needs about " + human_bytes(need) +
                            " of memory (the build and the exporter's templates and buffers, " +
                            (counted ? "counted" : "estimated") + " with " + std::to_string(threads) +
                            " threads), over the budget of " + human_bytes(budget) + ". Use " +
                            (archive ? "a directory instead of an archive, " : "") +
                            "fewer --threads or fewer micro-batches (training.global_batch_size); "
                            "--allow-large raises the budget to the free memory",
                        "-o");
  }
  const bool all = n == std::max<int64_t>(1, job.parallel.world_size());
  auto bytes_of = [&](const JobEstimate& x) { return all && !job.inference() ? x.trace_bytes_total : times(x.trace_bytes_per_rank, n); };
  int64_t bytes = bytes_of(e);
  const int64_t limit = allow_large ? -1 : kMaxOutputBytes;
  if (!job.inference() && (allow_large || (bytes > kMaxOutputBytes && bytes / 4 <= kMaxOutputBytes))) {
    // Maybe over (or --allow-large: compared with the free space): count.
    Result<JobEstimate> c = estimate_job_counted(job);
    if (!c.ok()) return c.error();
    e = *c;
    bytes = bytes_of(e);
  }
  const int64_t per_rank = all && !job.inference() ? bytes / std::max<int64_t>(1, n) : e.trace_bytes_per_rank;
  const std::string what = "this export would write about " + human_bytes(bytes) + " (" + std::to_string(n) +
                           " ranks x " + human_bytes(per_rank) + " of trace each, " +
                           (e.counted ? "counted" : "estimated") + ")";
  if (limit >= 0) return bytes <= limit ? ok_status() : output_error(what, n, per_rank);
  fs::path where = opt.out.parent_path().empty() ? fs::path(".") : opt.out.parent_path();
  while (!where.empty() && !fs::exists(where)) where = where.parent_path();
  struct statvfs vfs {};
  if (::statvfs(where.empty() ? "." : where.c_str(), &vfs) == 0) {
    const int64_t free_bytes = static_cast<int64_t>(vfs.f_bavail) * static_cast<int64_t>(vfs.f_frsize);
    if (bytes > free_bytes)
      return make_error(ErrorCode::kTooLarge,
                        what + ", and only " + human_bytes(free_bytes) + " are free there; write a subset with --ranks",
                        "-o");
  }
  return ok_status();
}


}  // namespace sc::cli
