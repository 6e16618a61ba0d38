// Which pipeline schedule a job runs: a training setting (job/job.h parses
// it) that lowering (trace/schedule.h) needs without the rest of the job.
#pragma once

namespace sc {

enum class Schedule { kGPipe, kOneFOneB, kInterleaved, kZeroBubble };
const char* schedule_name(Schedule s);  // "gpipe", "1f1b", "interleaved-1f1b", "zero-bubble"

}  // namespace sc
