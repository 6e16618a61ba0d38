// Fast per-rank export over a Generator: the bytes of Generator::
// rank_trace_bytes(rank), produced without copying the role's nodes and
// without protobuf in the per-rank path (emit/trace_template.h). For the
// CLI's streaming export (cli/export.cc), the benchmark, and any front end
// that writes many ranks. It reads the Generator's state: the Generator
// must outlive it (moving the Generator is fine). Thread-safe: one RankEncoder may serve several
// threads, each with its own Scratch.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "api/api.h"
#include "base/status.h"

namespace sc {

struct RankEncoderImpl;

class RankEncoder {
 public:
  // Pre-serialises every rank role of g once (cost independent of the
  // world size) and checks a few ranks against the reference writer.
  static Result<RankEncoder> create(const Generator& g);

  RankEncoder(RankEncoder&&) noexcept;
  RankEncoder& operator=(RankEncoder&&) noexcept;
  ~RankEncoder();

  // Per-thread buffers; they grow to one rank's size and are reused.
  struct Scratch {
    std::vector<char> buf;
    std::vector<TraceNode> holes;  // per-rank values of the current role's holes
    std::vector<int64_t> values;
    int64_t role = -1;             // role whose nodes `holes` holds ...
    const void* owner = nullptr;   // ... of this encoder
  };

  // rank's complete .et bytes, valid until the next call with the same
  // scratch. Identical to Generator::rank_trace_bytes(rank).
  Result<std::string_view> encode(int64_t rank, Scratch* scratch) const;

  int64_t world_size() const;
  size_t num_roles() const;
  // False when the fast path was disabled at create() (a self-check
  // mismatch): encode() then falls back to the reference writer.
  bool fast() const;

 private:
  explicit RankEncoder(std::unique_ptr<RankEncoderImpl> impl);
  std::unique_ptr<RankEncoderImpl> impl_;
};

// ------------------------------------------------------------------ the archive
// What an export holds, in order: the one definition behind every front
// end. `stagecraft generate` writes these entries to a directory or one
// .zip/.tar.gz (cli/export.cc adds only the file-system work: temporary
// name, atomic commit, --force, signals, progress), and the browser zips
// the kFiles layout through the request ops archive_manifest and
// archive_entry (api/request.h). docs/export.md lists the members.

// A set of ranks as sorted, disjoint, inclusive ranges.
struct RankSelection {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  int64_t count() const;
  bool all(int64_t world) const { return ranges.size() == 1 && ranges[0].first == 0 && ranges[0].second == world - 1; }
};
RankSelection all_ranks(int64_t world);
// "0-127,4096": the selection as --ranks spells it.
std::string selection_text(const RankSelection& s);

enum class ArchiveLayout {
  // A directory, and the browser's zip: every selected rank's trace
  // (ascending), comm_groups.json, summary.json.
  kFiles,
  // One .zip / .tar.gz: comm_groups.json (first: that is how --force knows
  // a previous export), summary.json, the astra-sim/ inputs (api/astrasim.h),
  // the traces, manifest.json (sizes and sha256 of every other member).
  kBundle,
};

struct ArchiveSpec {
  ArchiveLayout layout = ArchiveLayout::kFiles;
  std::string prefix = "trace";  // traces are <prefix>.<rank>.et
  RankSelection ranks;           // which traces (all_ranks(world) for all)
};

// A prefix generate accepts: letters, digits, '.', '_', '-'; not "." or "..".
bool valid_trace_prefix(const std::string& prefix);
// "<prefix>.<rank>.et"
std::string trace_name(const std::string& prefix, int64_t rank);

struct ArchiveEntry {
  enum class Kind {
    kTrace,     // a rank's .et: Generator::rank_trace_bytes(rank) (RankEncoder::encode is the fast path)
    kFile,      // bytes given here
    kManifest,  // manifest.json: archive_manifest_json over every member before it
  };
  Kind kind = Kind::kFile;
  std::string name;    // path inside the archive / directory
  int64_t rank = -1;   // kTrace
  std::string bytes;   // kFile
  int mode = 0644;     // archive member mode (0755: run.sh)
};

// Every entry of the archive, in order. Errors (kInvalidArgument) for a
// bad prefix (path "prefix") or a rank outside the world (path "ranks").
Result<std::vector<ArchiveEntry>> archive_entries(const Generator& g, const ArchiveSpec& spec);

// The entry called name, without listing every trace: a
// "<prefix>.<rank>.et" of a selected rank, or one of the few other
// members. kInvalidArgument at path "name" when the archive has none.
Result<ArchiveEntry> find_archive_entry(const Generator& g, const ArchiveSpec& spec, const std::string& name);

// A member as manifest.json lists it.
struct ArchiveMember {
  std::string name;
  uint64_t bytes = 0;
  std::string sha256;  // 64 lowercase hex digits
};

// manifest.json of a kBundle: tool, job, rank selection, then members (every
// member before it, in archive order) with size and sha256.
std::string archive_manifest_json(const Generator& g, const ArchiveSpec& spec, const std::vector<ArchiveMember>& members);

// The bytes of one entry. A kManifest entry hashes every other member of
// the archive (each trace encoded once): the CLI, which has them already,
// calls archive_manifest_json directly.
Result<std::string> archive_entry_bytes(const Generator& g, const ArchiveSpec& spec, const ArchiveEntry& entry);

}  // namespace sc
