// A disaggregated serving job's KV-cache transfer from the prefill pool to
// the decode pool, as per-rank send/recv traces (docs/inference.md,
// "Archive"). The bytes of each (sender, receiver) pair come from the two
// pools' layouts: every decode rank receives, for the layers its pipeline
// stage holds, the KV heads its tp rank holds (MLA: the whole latent and
// RoPE key, which tp replicates), from the prefill rank that holds them.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "job/job.h"
#include "parallel/groups.h"
#include "parallel/mesh.h"
#include "trace/rank_trace.h"

namespace sc {

// One sender-receiver pair, ranks in the transfer's world: the prefill
// pool's ranks 0 .. Wp-1, then the decode pool's Wp .. Wp+Wd-1.
struct KvPair {
  int64_t src = 0, dst = 0;
  int64_t bytes = 0;
};

// What moves: the cache of the prefill iteration's prompts, one per prefill
// attention-dp rank (paged: ceil(prompt / page) pages), prompt j to decode
// dp rank j mod dp_d. Per layer l and KV unit u (a KV head of 2 x head_dim
// values; MLA: one unit of kv_lora_rank + qk_rope_head_dim values):
//   receivers: the decode ranks of l's decode stage whose tp rank holds u
//              (GQA: u / (kv_heads / tp_d); MLA: every tp rank);
//   sender of the i-th receiver: the i-th mod n of the n prefill ranks of
//              l's prefill stage holding u (GQA: one; MLA: tp_p of them).
// Each receiver gets tokens x unit bytes; pairs sum these over layers and
// units. The sum over pairs is the prompts' KV bytes times tp_d for MLA
// (every decode tp rank caches the whole latent), times 1 otherwise.
struct KvTransfer {
  std::vector<RankTrace> ranks;  // Wp + Wd; one send or recv per pair, no deps
  GroupTable groups;             // none: point-to-point only
  TraceMetadata meta;
  std::vector<KvPair> pairs;     // ascending (src, dst); pair k has tag k
  int64_t prefill_world = 0, decode_world = 0;
  int64_t total_bytes = 0;       // sum over pairs
};

namespace serve {
// For a disaggregated inference job `full` (serving.disaggregated): its
// prefill and decode pools' rank layouts, and the traces' metadata (the
// decode iteration's; world_size is set here). The façade's door, from a
// Generator: api/serving.h.
KvTransfer kv_transfer_traces(const Job& full, const RankLayout& prefill, const RankLayout& decode,
                              const TraceMetadata& meta);
}  // namespace serve

}  // namespace sc
