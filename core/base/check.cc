#include "base/check.h"

#include <cstdio>
#include <cstdlib>

namespace sc {

void check_failed(const char* condition, const char* file, int line, const std::string& message) {
  std::fprintf(stderr, "stagecraft: internal error at %s:%d: %s: %s\n", file, line, condition, message.c_str());
  std::fflush(stderr);
  std::abort();
}

}  // namespace sc
