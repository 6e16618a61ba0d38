#include "export_archive.h"

#include <archive.h>
#include <archive_entry.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace sc::cli {

namespace {
std::atomic<int64_t> g_fail_countdown{0};
std::atomic<int> g_fail_errno{0};
constexpr int64_t kFixedMtime = 946684800;  // 2000-01-01T00:00:00Z
}  // namespace

std::string archive_first_member(const std::string& path) {
  struct archive* a = archive_read_new();
  if (!a) return "";
  archive_read_support_filter_gzip(a);
  archive_read_support_format_zip(a);
  archive_read_support_format_tar(a);
  std::string name;
  struct archive_entry* e = nullptr;
  if (archive_read_open_filename(a, path.c_str(), 16384) == ARCHIVE_OK && archive_read_next_header(a, &e) == ARCHIVE_OK) {
    const char* n = archive_entry_pathname(e);
    if (n) name = n;
  }
  archive_read_free(a);
  return name;
}

void set_injected_write_failure(int64_t nth, int err) {
  g_fail_errno = err;
  g_fail_countdown = nth;
}

bool write_fully(int fd, const char* data, size_t len) {
  if (g_fail_countdown.load(std::memory_order_relaxed) > 0 && g_fail_countdown.fetch_sub(1) == 1) {
    errno = g_fail_errno.load();
    return false;
  }
  while (len > 0) {
    ssize_t n = ::write(fd, data, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    if (n == 0) {
      errno = EIO;
      return false;
    }
    data += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

long ArchiveWriter::write_cb(struct archive*, void* self, const void* buf, size_t len) {
  auto* w = static_cast<ArchiveWriter*>(self);
  if (!write_fully(w->fd_, static_cast<const char*>(buf), len)) {
    w->last_errno_ = errno;
    return -1;
  }
  w->bytes_written_ += len;
  return static_cast<long>(len);
}

Error ArchiveWriter::error(const std::string& what) const {
  std::string reason;
  if (last_errno_) {
    reason = std::strerror(last_errno_);
  } else if (a_ && archive_error_string(a_)) {
    reason = archive_error_string(a_);
  } else {
    reason = "archive error";
  }
  return make_error(ErrorCode::kIoError, "cannot write " + path_ + " (" + what + "): " + reason);
}

Result<std::unique_ptr<ArchiveWriter>> ArchiveWriter::open(int fd, Kind kind, int level, const std::string& path) {
  std::unique_ptr<ArchiveWriter> w(new ArchiveWriter());
  w->fd_ = fd;
  w->path_ = path;
  w->a_ = archive_write_new();
  if (!w->a_) return make_error(ErrorCode::kIoError, "cannot create an archive writer");
  const std::string lvl = std::to_string(level < 0 ? 0 : level > 9 ? 9 : level);
  int r = ARCHIVE_OK;
  if (kind == Kind::kZip) {
    r = archive_write_set_format_zip(w->a_);
    if (r == ARCHIVE_OK) r = archive_write_set_format_option(w->a_, "zip", "compression-level", lvl.c_str());
  } else {
    r = archive_write_set_format_pax_restricted(w->a_);
    if (r == ARCHIVE_OK) r = archive_write_add_filter_gzip(w->a_);
    if (r == ARCHIVE_OK) r = archive_write_set_filter_option(w->a_, "gzip", "compression-level", lvl.c_str());
    if (r == ARCHIVE_OK) r = archive_write_set_filter_option(w->a_, "gzip", "timestamp", nullptr);
  }
  // Larger blocks: fewer write(2) calls; the last block is not padded.
  if (r == ARCHIVE_OK) r = archive_write_set_bytes_per_block(w->a_, 1 << 20);
  if (r == ARCHIVE_OK) r = archive_write_set_bytes_in_last_block(w->a_, 1);
  if (r == ARCHIVE_OK) r = archive_write_open(w->a_, w.get(), nullptr, &ArchiveWriter::write_cb, nullptr);
  if (r != ARCHIVE_OK) return w->error("open");
  return w;
}

Status ArchiveWriter::add(const std::string& name, std::string_view bytes, int mode) {
  archive_entry* e = archive_entry_new();
  archive_entry_set_pathname(e, name.c_str());
  archive_entry_set_size(e, static_cast<la_int64_t>(bytes.size()));
  archive_entry_set_filetype(e, AE_IFREG);
  archive_entry_set_perm(e, static_cast<mode_t>(mode));
  archive_entry_set_mtime(e, kFixedMtime, 0);
  archive_entry_set_uid(e, 0);
  archive_entry_set_gid(e, 0);
  int r = archive_write_header(a_, e);
  archive_entry_free(e);
  if (r != ARCHIVE_OK) return error(name);
  size_t off = 0;
  while (off < bytes.size()) {
    la_ssize_t n = archive_write_data(a_, bytes.data() + off, bytes.size() - off);
    if (n <= 0) return error(name);
    off += static_cast<size_t>(n);
  }
  if (archive_write_finish_entry(a_) != ARCHIVE_OK) return error(name);
  return ok_status();
}

Status ArchiveWriter::close() {
  closed_ = true;
  if (archive_write_close(a_) != ARCHIVE_OK) return error("closing");
  return ok_status();
}

ArchiveWriter::~ArchiveWriter() {
  if (a_) {
    if (!closed_) archive_write_fail(a_);  // no trailer on an abandoned archive
    archive_write_free(a_);
  }
}

}  // namespace sc::cli
