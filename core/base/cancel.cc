#include "base/cancel.h"

#include <atomic>
#include <string>

namespace sc {
namespace {
std::atomic<bool> g_cancel{false};
static_assert(std::atomic<bool>::is_always_lock_free, "set from a signal handler");
}  // namespace

void request_cancel() { g_cancel.store(true, std::memory_order_relaxed); }
void clear_cancel() { g_cancel.store(false, std::memory_order_relaxed); }
bool cancel_requested() { return g_cancel.load(std::memory_order_relaxed); }

Status check_cancelled(const char* where) {
  if (!cancel_requested()) return ok_status();
  return make_error(ErrorCode::kCancelled, std::string("cancelled during ") + where);
}

}  // namespace sc
