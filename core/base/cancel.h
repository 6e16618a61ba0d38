// Cooperative cancellation of long engine work (Generator::create: between
// build stages and in the lowering loop; the simulation every 2^14 events;
// the serving workload every 4,096 iterations; plan in every phase).
// request_cancel() is one relaxed atomic store, safe from a signal handler
// (the CLI's SIGINT/SIGTERM, plan's --time-limit watch); the work then
// returns ErrorCode::kCancelled at its next check. Every check is meant to
// come well within a second, on a loaded machine too (docs/promises.md).
#pragma once

#include <vector>

#include "base/status.h"

namespace sc {

void request_cancel();
void clear_cancel();
bool cancel_requested();
// kCancelled "cancelled during <where>" once request_cancel() was called.
Status check_cancelled(const char* where);

// A process that ends right after a cancel (the CLI: it prints its note and
// exits by the signal, or prints plan's best so far) may leave what the
// cancelled work built unfreed: freeing the 1T job's build costs 0.1-0.2 s
// of CPU, 0.5-0.9 s of a stop at load 10 (docs/promises.md, "Interrupts").
// Off by default: a long-lived caller (the wasm worker) frees as usual.
void set_keep_on_cancel(bool keep);
bool keep_on_cancel();

// Sorts v ascending, checking for a cancel every 2^16 elements moved
// (std::sort of 10^8 values runs for seconds and cannot be stopped). The
// result is std::sort's: the ascending order of the values (values that
// compare equal, e.g. 0 and -0, may come in another order). On a cancel it
// returns kCancelled "cancelled during <where>" with v in some order.
Status sort_cancellable(std::vector<double>* v, const char* where);

}  // namespace sc
