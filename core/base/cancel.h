// Cooperative cancellation of long engine work (Generator::create: between
// build stages and in the lowering loop). request_cancel() is one relaxed
// atomic store, safe from a signal handler (the CLI's SIGINT/SIGTERM);
// the work then returns ErrorCode::kCancelled at its next check.
#pragma once

#include "base/status.h"

namespace sc {

void request_cancel();
void clear_cancel();
bool cancel_requested();
// kCancelled "cancelled during <where>" once request_cancel() was called.
Status check_cancelled(const char* where);

}  // namespace sc
