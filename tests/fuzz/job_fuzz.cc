// libFuzzer target: the job parser and what runs on a parsed job before
// anything big is built (issue 13 item 13; docs/promises.md "Fuzzing").
// Properties, each a crash when broken (so libFuzzer reports it):
//  - parse_job never crashes, throws or reads out of bounds (ASan, UBSan);
//  - an error has a non-internal code and a bounded message (< 4 KiB)
//    whatever the input size;
//  - a valid job's canonical JSON parses back to the same canonical JSON;
//  - the budget estimate is instant and check_budget answers; a small
//    valid job is built and its rank 0 trace encoded.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "api/api.h"
#include "api/budget.h"
#include "job/job.h"

namespace {
void require(bool ok) {
  if (!ok) std::abort();
}
}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  sc::Result<sc::Job> job = sc::parse_job(text);
  if (!job.ok()) {
    require(job.error().code != sc::ErrorCode::kInternal);
    require(job.error().to_string().size() < 4096);
    return 0;
  }
  const std::string canonical = sc::job_to_canonical_json(*job);
  sc::Result<sc::Job> again = sc::parse_job(canonical);
  require(again.ok());
  require(sc::job_to_canonical_json(*again) == canonical);
  const sc::JobEstimate e = sc::estimate_job(*job);
  require(e.program_nodes >= 0 && e.engine_bytes >= 0 && e.trace_bytes_total >= 0);
  (void)sc::check_budget(*job);
  // Build only what stays fast: a few thousand nodes, a few ranks.
  if (e.program_nodes <= 20000 && job->parallel.world_size() <= 64) {
    sc::Result<sc::Generator> g = sc::Generator::create(*job);
    if (!g.ok()) {
      require(g.error().code != sc::ErrorCode::kInternal);
      require(g.error().to_string().size() < 4096);
      return 0;
    }
    require(g->rank_trace_bytes(0).ok());
  }
  return 0;
}
