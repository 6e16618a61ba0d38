// Byte counts for messages.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace sc {

// "12.3 GiB", "512 MiB", "900 kB": for messages (the engine budget's,
// api/budget.h, and the serving workload's, serve/serving.cc).
inline std::string human_bytes(int64_t bytes) {
  char buf[48];
  const double b = static_cast<double>(bytes);
  if (b >= 1024.0 * 1024 * 1024) std::snprintf(buf, sizeof buf, "%.1f GiB", b / (1024.0 * 1024 * 1024));
  else if (b >= 1024.0 * 1024) std::snprintf(buf, sizeof buf, "%.0f MiB", b / (1024.0 * 1024));
  else std::snprintf(buf, sizeof buf, "%.0f kB", b / 1024.0);
  return buf;
}

}  // namespace sc
