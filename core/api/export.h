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
//
// An inference job's archive is one folder per part (archive_parts):
// each folder holds what a training export holds (its traces, its
// comm_groups.json, its summary.json; in a kBundle also its astra-sim/
// and its manifest.json), so every folder is a workload of its own; the
// job's summary.json (and in a kBundle a manifest.json over every member)
// follow on top. docs/export.md, "Inference jobs".

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
  // Which traces (all_ranks(archive_world_size(g)) for all). An inference
  // job's parts have worlds of their own: each part takes the selected
  // ranks below its world size (rank r of every part).
  RankSelection ranks;
  // Inference jobs: "" for the whole archive, or one part's name for that
  // folder alone (its entries named relative to it). Training: "".
  std::string part;
};

// The folders of an inference job's archive, in order: "prefill",
// "decode", then "mixed" (colocated) or "kv_transfer" (disaggregated pools:
// serve/kv_transfer.h). Empty for a training job.
std::vector<std::string> archive_parts(const Generator& g);
// One more than the largest rank a selection may name: the world size of
// a training job; the largest part's world of an inference job (with
// disaggregated pools kv_transfer's, both pools' ranks).
int64_t archive_world_size(const Job& job);
int64_t archive_world_size(const Generator& g);

// A prefix generate accepts: letters, digits, '.', '_', '-'; not "." or "..";
// at most kMaxTracePrefix characters, so "<prefix>.<rank>.et" stays a file
// name every file system takes (255 bytes).
inline constexpr size_t kMaxTracePrefix = 200;
bool valid_trace_prefix(const std::string& prefix);
// "<prefix>.<rank>.et"
std::string trace_name(const std::string& prefix, int64_t rank);

struct ArchiveEntry {
  enum class Kind {
    kTrace,     // a rank's .et: Generator::rank_trace_bytes(rank) (RankEncoder::encode is the fast path)
    kFile,      // bytes given here
    kManifest,  // manifest.json: archive_manifest_json over the members before it
  };
  Kind kind = Kind::kFile;
  std::string name;    // path inside the archive / directory
  int64_t rank = -1;   // kTrace: the rank in its part's world
  std::string bytes;   // kFile
  int mode = 0644;     // archive member mode (0755: run.sh)
  // Inference jobs: the part whose trace or manifest this is ("" for the
  // top-level manifest). Training: "".
  std::string part;
};

// Every entry of the archive, in order. Errors (kInvalidArgument) for a
// bad prefix (path "prefix"), a rank outside the world (path "ranks") or
// an unknown part (path "phase").
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

// The manifest.json `entry` of a kBundle: tool, job, rank selection, then
// its members with size and sha256. `before`: every member of the archive
// before the entry, in archive order, named as in the archive; a part's
// manifest lists its folder's (named relative to it), the top-level one
// all of them.
std::string archive_manifest_json(const Generator& g, const ArchiveSpec& spec, const ArchiveEntry& entry,
                                  const std::vector<ArchiveMember>& before);

// Encodes the trace entries of an archive: each part's RankEncoder (the
// fast path) and the KV transfer's traces (encoded once, at create).
class ArchiveEncoder {
 public:
  // A training job's archive over an encoder the caller keeps alive.
  explicit ArchiveEncoder(const RankEncoder& training);
  // Any job's; g must outlive it.
  static Result<ArchiveEncoder> create(const Generator& g);
  ArchiveEncoder(ArchiveEncoder&&) noexcept;
  ArchiveEncoder& operator=(ArchiveEncoder&&) noexcept;
  ~ArchiveEncoder();
  // The bytes of a kTrace entry, valid until the next call with the same
  // scratch (one scratch may serve every part).
  Result<std::string_view> encode(const ArchiveEntry& entry, RankEncoder::Scratch* scratch) const;

 private:
  ArchiveEncoder() = default;
  std::vector<std::pair<std::string, const RankEncoder*>> parts_;
  std::vector<std::unique_ptr<RankEncoder>> owned_;
  std::vector<std::string> kv_;  // kv_transfer's traces by rank
};

// The bytes of one entry. A kManifest entry hashes the members before it
// (each trace encoded once): the CLI, which has them already, calls
// archive_manifest_json directly.
Result<std::string> archive_entry_bytes(const Generator& g, const ArchiveSpec& spec, const ArchiveEntry& entry);

}  // namespace sc
