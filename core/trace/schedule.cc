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

std::vector<Step> pipeline_schedule(Schedule s, int64_t pp, int64_t v, int64_t stage, int64_t m) {
  std::vector<Step> out;
  const bool split_w = s == Schedule::kZeroBubble;
  if (pp == 1 && v == 1) {
    for (int64_t i = 0; i < m; ++i) {
      out.push_back({StepKind::kForward, 0, i});
      out.push_back({StepKind::kBackward, 0, i});
      if (split_w) out.push_back({StepKind::kWeight, 0, i});
    }
    return out;
  }
  if (s == Schedule::kGPipe) {
    for (int64_t i = 0; i < m; ++i) out.push_back({StepKind::kForward, 0, i});
    for (int64_t i = 0; i < m; ++i) out.push_back({StepKind::kBackward, 0, i});
    return out;
  }
  const int64_t total = m * v;
  int64_t warmup = s == Schedule::kInterleaved ? (pp - stage - 1) * 2 + (v - 1) * pp : pp - stage - 1;
  warmup = std::min(warmup, total);
  // Zero-bubble: each B is followed by its W, so the input gradient leaves
  // for the previous stage before the weight gradient is computed.
  auto backward = [&](int64_t k) {
    Step b = virtual_step(StepKind::kBackward, k, pp, v);
    out.push_back(b);
    if (split_w) out.push_back({StepKind::kWeight, b.chunk, b.mb});
  };
  for (int64_t k = 0; k < warmup; ++k) out.push_back(virtual_step(StepKind::kForward, k, pp, v));
  for (int64_t i = 0; i < total - warmup; ++i) {
    out.push_back(virtual_step(StepKind::kForward, warmup + i, pp, v));
    backward(i);
  }
  for (int64_t i = total - warmup; i < total; ++i) backward(i);
  return out;
}

}  // namespace sc
