#include "trace/schedule.h"

#include <algorithm>

namespace sc {
namespace {

// Virtual micro-batch k of an interleaved schedule -> (chunk, micro-batch).
Step virtual_step(StepKind kind, int64_t k, int64_t pp, int64_t v) {
  int64_t chunk = (k / pp) % v;
  if (kind != StepKind::kForward) chunk = v - 1 - chunk;
  return {kind, static_cast<int>(chunk), (k / (pp * v)) * pp + k % pp};
}

}  // namespace

int64_t pipeline_warmup(Schedule s, int64_t pp, int64_t v, int64_t stage, int64_t m, bool ep_overlap) {
  int64_t warmup = s == Schedule::kInterleaved ? (pp - stage - 1) * 2 + (v - 1) * pp : pp - stage - 1;
  if (ep_overlap) warmup = pp == 1 && v == 1 ? 1 : warmup + 1;
  return std::min(warmup, m * v);
}

StepRange pipeline_steady_steps(Schedule s, int64_t pp, int64_t v, int64_t stage, int64_t m, bool ep_overlap) {
  const int64_t warmup = pipeline_warmup(s, pp, v, stage, m, ep_overlap);
  return {static_cast<size_t>(warmup), static_cast<size_t>(warmup + 2 * (m * v - warmup))};
}

std::vector<Step> pipeline_schedule(Schedule s, int64_t pp, int64_t v, int64_t stage, int64_t m,
                                    bool ep_overlap) {
  std::vector<Step> out;
  const bool split_w = s == Schedule::kZeroBubble;
  if (pp == 1 && v == 1 && !ep_overlap) {
    for (int64_t i = 0; i < m; ++i) {
      out.push_back({StepKind::kForward, 0, i});
      out.push_back({StepKind::kBackward, 0, i});
      if (split_w) out.push_back({StepKind::kWeight, 0, i});
    }
    return out;
  }
  if (s == Schedule::kGPipe && !ep_overlap) {
    for (int64_t i = 0; i < m; ++i) out.push_back({StepKind::kForward, 0, i});
    for (int64_t i = 0; i < m; ++i) out.push_back({StepKind::kBackward, 0, i});
    return out;
  }
  const int64_t total = m * v;
  const int64_t warmup = pipeline_warmup(s, pp, v, stage, m, ep_overlap);
  // Zero-bubble (ZB-H1, Qi et al. 2024): the backward is split into B (input
  // gradient, sent on at once) and W (weight gradient). Stage s runs each W
  // `stage` backward steps after its B: later stages, which hold fewer
  // micro-batches under 1F1B, defer more, so the B wave reaches the first
  // stage sooner and the deferred Ws fill the tail. Every stage then holds
  // at most pp micro-batches (1F1B's peak), and with equal F, B, W times the
  // bubble is a third of 1F1B's.
  const int64_t w_delay = split_w ? stage : 0;
  std::vector<Step> deferred;  // Bs whose W has not run yet, oldest first
  auto backward = [&](int64_t k) {
    Step b = virtual_step(StepKind::kBackward, k, pp, v);
    out.push_back(b);
    if (!split_w) return;
    deferred.push_back(b);
    while (static_cast<int64_t>(deferred.size()) > w_delay) {
      out.push_back({StepKind::kWeight, deferred.front().chunk, deferred.front().mb});
      deferred.erase(deferred.begin());
    }
  };
  for (int64_t k = 0; k < warmup; ++k) out.push_back(virtual_step(StepKind::kForward, k, pp, v));
  for (int64_t i = 0; i < total - warmup; ++i) {
    out.push_back(virtual_step(StepKind::kForward, warmup + i, pp, v));
    backward(i);
  }
  for (int64_t i = total - warmup; i < total; ++i) backward(i);
  for (const Step& b : deferred) out.push_back({StepKind::kWeight, b.chunk, b.mb});
  return out;
}

}  // namespace sc
