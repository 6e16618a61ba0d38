// Pipeline schedules as the ordered steps one pipeline rank executes.
// A step runs one model chunk's forward (F), backward (B: input gradients,
// and weight gradients too unless the schedule splits them off) or
// weight-gradient (W, zero-bubble only) part for one micro-batch.
//
//  gpipe             all forwards, then all backwards
//  1f1b              (pp - stage - 1) warm-up forwards, then one forward /
//                    one backward alternately, then the remaining backwards
//  interleaved-1f1b  Megatron-LM's schedule over v chunks per rank: virtual
//                    micro-batch k runs chunk (k / pp) % v of micro-batch
//                    (k / (pp v)) pp + k % pp; warm-up of
//                    (pp - stage - 1) * 2 + (v - 1) * pp forwards
//  zero-bubble       1f1b order with backward split into B and W (ZB-H1):
//                    W of micro-batch j runs after the B of micro-batch
//                    j + (pp - stage - 1), filling the cool-down bubble
// With pp = 1 every schedule is plain gradient accumulation: F, B per
// micro-batch (and W right after B for zero-bubble).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "parallel/schedule_kind.h"

namespace sc {

enum class StepKind { kForward, kBackward, kWeight };

struct Step {
  StepKind kind;
  int chunk;
  int64_t mb;
};

// ep_overlap: Megatron-Core's overlap_moe_expert_parallel_comm, whose
// steady steps each run one forward and one backward combined
// (combined_1f1b.py). With pp = 1 the order becomes F0, then (F i+1, B i)
// pairs, then the last B (combined_1f1b_schedule_for_no_pipelining): the
// 1F1B form with one warm-up forward. Interleaved: one warm-up forward more
// (get_pp_rank_microbatches), "so that the forward and backward computations
// are independent in all 1f1b steps".
std::vector<Step> pipeline_schedule(Schedule s, int64_t pp, int64_t v, int64_t stage, int64_t m,
                                    bool ep_overlap = false);

// The warm-up forwards of `stage` under the 1F1B family, before its steady
// phase of forward / backward pairs (1f1b and zero-bubble: pp - stage - 1;
// interleaved: (pp - stage - 1) * 2 + (v - 1) * pp, Megatron-LM's
// get_pp_rank_microbatches), at most the stage's m * v forward steps. With the interleaved schedule the steady
// 1F1B phase is steps [warm-up, warm-up + 2 (m v - warm-up)) of
// pipeline_schedule's list.
int64_t pipeline_warmup(Schedule s, int64_t pp, int64_t v, int64_t stage, int64_t m, bool ep_overlap = false);

// The steps [begin, end) of pipeline_schedule's list that form the steady
// phase of forward / backward pairs: [warm-up, warm-up + 2 (m v - warm-up)).
struct StepRange {
  size_t begin = 0, end = 0;
  bool contains(size_t i) const { return i >= begin && i < end; }
};
// ep_overlap (above): the steady phase of the EP all-to-all overlap's
// schedule; steps begin + 2 i (a forward) and begin + 2 i + 1 (a backward)
// form the i-th combined step.
StepRange pipeline_steady_steps(Schedule s, int64_t pp, int64_t v, int64_t stage, int64_t m, bool ep_overlap = false);

}  // namespace sc
