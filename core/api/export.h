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
#include <string_view>
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

}  // namespace sc
