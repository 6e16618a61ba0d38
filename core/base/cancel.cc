#include "base/cancel.h"

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <string>
#include <utility>

namespace sc {
namespace {
std::atomic<bool> g_cancel{false};
std::atomic<bool> g_keep{false};
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");
}  // namespace

void request_cancel() { g_cancel.store(true, std::memory_order_relaxed); }
void clear_cancel() { g_cancel.store(false, std::memory_order_relaxed); }
bool cancel_requested() { return g_cancel.load(std::memory_order_relaxed); }
void set_keep_on_cancel(bool keep) { g_keep.store(keep, std::memory_order_relaxed); }
bool keep_on_cancel() { return g_keep.load(std::memory_order_relaxed); }

Status check_cancelled(const char* where) {
  if (!cancel_requested()) return ok_status();
  return make_error(ErrorCode::kCancelled, std::string("cancelled during ") + where);
}

Status sort_cancellable(std::vector<double>* v, const char* where) {
  // Quicksort down to ranges of kSmall (std::sort'ed: about a millisecond
  // each), Hoare's partition by hand so that even the first pass over
  // 10^8 values checks the flag; past a depth of 2 log2 n (adversarial
  // input) a range is std::sort'ed whole, as introsort would heapsort it.
  constexpr std::ptrdiff_t kSmall = std::ptrdiff_t{1} << 16;
  constexpr size_t kPoll = size_t{1} << 16;
  struct Range {
    double* b;
    double* e;  // exclusive
    int depth;
  };
  int depth = 0;
  for (size_t n = v->size(); n > 1; n >>= 1) depth += 2;
  std::vector<Range> todo{{v->data(), v->data() + v->size(), depth}};
  size_t moved = 0;
  while (!todo.empty()) {
    const Range r = todo.back();
    todo.pop_back();
    if (r.e - r.b <= kSmall || r.depth == 0) {
      std::sort(r.b, r.e);
      continue;
    }
    SC_RETURN_IF_ERROR(check_cancelled(where));
    // Median of three, put in order at the ends and the middle: then both
    // scans stop inside the range and both parts are non-empty.
    double* lo = r.b;
    double* hi = r.e - 1;
    double* mid = lo + (hi - lo) / 2;
    if (*mid < *lo) std::swap(*mid, *lo);
    if (*hi < *lo) std::swap(*hi, *lo);
    if (*hi < *mid) std::swap(*hi, *mid);
    const double pivot = *mid;
    double* i = lo - 1;
    double* j = hi + 1;
    for (;;) {
      do ++i; while (*i < pivot);
      do --j; while (pivot < *j);
      if (i >= j) break;
      std::swap(*i, *j);
      if ((++moved % kPoll) == 0) SC_RETURN_IF_ERROR(check_cancelled(where));
    }
    // [lo, j] <= pivot <= [j + 1, hi]
    if (j < lo || j >= hi) {  // not expected (see above); never loop on it
      std::sort(r.b, r.e);
      continue;
    }
    todo.push_back({lo, j + 1, r.depth - 1});
    todo.push_back({j + 1, r.e, r.depth - 1});
  }
  return ok_status();
}

}  // namespace sc
