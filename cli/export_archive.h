// One archive (zip or tar.gz) written as a stream through libarchive, with
// deterministic members: fixed mtime (2000-01-01T00:00:00Z), uid/gid 0, no
// user/group names, mode 0644 (0755 for scripts), members in call order,
// gzip header without a timestamp. Same calls, same bytes. Also the one
// low-level write used by every export path (so tests can inject a
// failure).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"

struct archive;

namespace sc::cli {

// write(2) until done; false with errno set on failure (EINTR retried).
bool write_fully(int fd, const char* data, size_t len);
// Tests: the n-th call of write_fully from now on (1 = the next) fails
// with errno err; 0 turns it off.
void set_injected_write_failure(int64_t nth, int err);

// The name of the first member of the archive at path ("" when it is not a
// readable zip or tar.gz). Every stagecraft archive starts with
// comm_groups.json: that is how --force recognises a previous export.
std::string archive_first_member(const std::string& path);

class ArchiveWriter {
 public:
  enum class Kind { kZip, kTarGz };
  // Writes to fd (owned by the caller; not closed). path names the file in
  // error messages. level: deflate/gzip level 0..9.
  static Result<std::unique_ptr<ArchiveWriter>> open(int fd, Kind kind, int level, const std::string& path);
  ~ArchiveWriter();

  Status add(const std::string& name, std::string_view bytes, int mode = 0644);
  Status close();  // trailer / central directory
  uint64_t bytes_written() const { return bytes_written_; }

 private:
  ArchiveWriter() = default;
  Error error(const std::string& what) const;
  static long write_cb(struct archive*, void* self, const void* buf, size_t len);
  struct archive* a_ = nullptr;
  int fd_ = -1;
  int last_errno_ = 0;
  std::string path_;
  uint64_t bytes_written_ = 0;
  bool closed_ = false;
};

}  // namespace sc::cli
