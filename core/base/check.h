// Always-on invariant checks. SC_CHECK(cond, message) holds in every build
// (Release included, unlike assert, which NDEBUG removes): when cond is
// false it prints "stagecraft: internal error at file:line: cond: message"
// to stderr and aborts. It is for broken invariants of the engine itself
// (a bug), never for bad input: input errors are values (base/status.h)
// that the caller returns before any SC_CHECK can see them. `message` is
// evaluated only on failure, so it may build a string.
#pragma once

#include <string>

namespace sc {

[[noreturn]] void check_failed(const char* condition, const char* file, int line, const std::string& message);

}  // namespace sc

#define SC_CHECK(cond, message)                                        \
  do {                                                                 \
    if (!(cond)) [[unlikely]]                                          \
      ::sc::check_failed(#cond, __FILE__, __LINE__, (message));        \
  } while (0)
