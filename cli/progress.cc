#include "progress.h"

#include <unistd.h>

#include <cstdlib>

namespace sc::cli {

Progress::Mode Progress::auto_mode() { return ::isatty(STDERR_FILENO) ? Mode::kBar : Mode::kLines; }

Progress::Progress(Mode mode, int64_t total, std::FILE* out) : mode_(mode), total_(total), out_(out) {
  start_ = last_ = std::chrono::steady_clock::now();
  interval_ = mode == Mode::kBar ? 0.2 : 10.0;
  // Seconds between updates, for tests of both modes on tiny jobs.
  if (const char* e = std::getenv("STAGECRAFT_PROGRESS_INTERVAL")) {
    char* end = nullptr;
    double v = std::strtod(e, &end);
    if (end != e && v >= 0) interval_ = v;
  }
}

std::string Progress::format_eta(double s) {
  if (!(s >= 0) || s > 1e7) return "?";
  long t = static_cast<long>(s + 0.5);
  char buf[32];
  if (t >= 3600) {
    std::snprintf(buf, sizeof buf, "%ldh%02ldm", t / 3600, (t / 60) % 60);
  } else if (t >= 60) {
    std::snprintf(buf, sizeof buf, "%ldm%02lds", t / 60, t % 60);
  } else {
    std::snprintf(buf, sizeof buf, "%lds", t);
  }
  return buf;
}

void Progress::update(int64_t done, uint64_t bytes) {
  if (mode_ == Mode::kQuiet) return;
  auto now = std::chrono::steady_clock::now();
  if (std::chrono::duration<double>(now - last_).count() < interval_) return;
  last_ = now;
  draw(done, bytes, std::chrono::duration<double>(now - start_).count());
}

void Progress::draw(int64_t done, uint64_t bytes, double elapsed) {
  const double rate = elapsed > 0 ? done / elapsed : 0;
  const double mbs = elapsed > 0 ? bytes / elapsed / 1e6 : 0;
  const std::string eta = rate > 0 ? format_eta((total_ - done) / rate) : "?";
  const int pct = total_ > 0 ? static_cast<int>(100.0 * done / total_) : 100;
  if (mode_ == Mode::kBar) {
    constexpr int kWidth = 28;
    char bar[kWidth + 1];
    int fill = total_ > 0 ? static_cast<int>(kWidth * done / total_) : kWidth;
    for (int i = 0; i < kWidth; ++i) bar[i] = i < fill ? '#' : '.';
    bar[kWidth] = 0;
    std::fprintf(out_, "\r\033[K%3d%% [%s] %lld/%lld ranks  %.0f ranks/s  %.0f MB/s  ETA %s", pct, bar,
                 static_cast<long long>(done), static_cast<long long>(total_), rate, mbs, eta.c_str());
    drawn_ = true;
  } else {
    std::fprintf(out_, "progress: %lld/%lld ranks (%d%%), %.0f ranks/s, %.0f MB/s, ETA %s\n",
                 static_cast<long long>(done), static_cast<long long>(total_), pct, rate, mbs, eta.c_str());
  }
  std::fflush(out_);
}

void Progress::finish() {
  if (mode_ == Mode::kBar && drawn_) {
    std::fprintf(out_, "\r\033[K");
    std::fflush(out_);
  }
}

}  // namespace sc::cli
