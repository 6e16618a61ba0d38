// Progress of a long export on stderr. On a terminal: one bar redrawn in
// place (ranks, ranks/s, MB/s, ETA). Otherwise: a plain line every
// STAGECRAFT_PROGRESS_INTERVAL seconds (default 10; the first one only
// after that long, so short runs print nothing). --quiet: nothing.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

namespace sc::cli {

class Progress {
 public:
  enum class Mode { kBar, kLines, kQuiet };
  // kBar if stderr is a terminal, else kLines.
  static Mode auto_mode();

  Progress(Mode mode, int64_t total, std::FILE* out = stderr);
  // done ranks of total, bytes so far; rate-limited (cheap to call often).
  void update(int64_t done, uint64_t bytes);
  // Clears the bar (terminal) so the result line starts clean.
  void finish();

  // "1m05s", "12s": exposed for tests.
  static std::string format_eta(double seconds);

 private:
  void draw(int64_t done, uint64_t bytes, double elapsed);
  Mode mode_;
  int64_t total_;
  std::FILE* out_;
  std::chrono::steady_clock::time_point start_, last_;
  double interval_;
  bool drawn_ = false;
};

}  // namespace sc::cli
