#include "parallel/schedule_kind.h"

namespace sc {

const char* schedule_name(Schedule s) {
  switch (s) {
    case Schedule::kGPipe: return "gpipe";
    case Schedule::kOneFOneB: return "1f1b";
    case Schedule::kInterleaved: return "interleaved-1f1b";
    case Schedule::kZeroBubble: return "zero-bubble";
  }
  return "1f1b";
}

}  // namespace sc
