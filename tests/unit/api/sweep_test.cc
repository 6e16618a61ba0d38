// Property sweep over mixes of tp / sp / pp / dp / zero / recompute /
// schedule and odd sizes: every job that divides evenly must run to
// completion on every rank, balance its sends and receives, add up to its
// summary's FLOPs, and be deterministic.
#include <map>

#include "../test_jobs.h"
#include "check/replay.h"

using namespace sc;
using namespace sc::testing;

namespace {

struct Mix {
  int64_t tp, pp, dp, v, zero;
  bool sp;
  Schedule schedule;
  Recompute recompute;
};

}  // namespace

TEST_CASE("sweep: every mix runs to completion with balanced point-to-point traffic and consistent FLOPs") {
  const Mix mixes[] = {
      {1, 1, 1, 1, 0, false, Schedule::kOneFOneB, Recompute::kNone},
      {2, 1, 3, 1, 0, true, Schedule::kOneFOneB, Recompute::kSelective},
      {2, 2, 2, 1, 1, true, Schedule::kOneFOneB, Recompute::kNone},
      {1, 3, 2, 1, 2, false, Schedule::kGPipe, Recompute::kFull},
      {2, 2, 1, 2, 0, false, Schedule::kInterleaved, Recompute::kSelective},
      {1, 2, 2, 1, 3, false, Schedule::kZeroBubble, Recompute::kNone},
      {2, 3, 1, 1, 0, true, Schedule::kZeroBubble, Recompute::kFull},
      {1, 2, 3, 1, 3, false, Schedule::kOneFOneB, Recompute::kFull},
  };
  for (const Mix& x : mixes) {
    CAPTURE(x.tp);
    CAPTURE(x.pp);
    CAPTURE(x.dp);
    CAPTURE(x.v);
    CAPTURE(x.zero);
    CAPTURE(int(x.schedule));
    // Odd sizes: 6 layers, 12 heads of 40, seq 96, 3 micro-batches per pipeline (x pp).
    Job j = gpt_job(6 * x.v, 480, 12, x.tp, x.dp, x.sp, 1, 96, x.dp * x.pp * 2);
    j.model.vocab = 1536;
    j.parallel.pp = x.pp;
    j.parallel.virtual_stages = x.v;
    j.parallel.zero = x.zero;
    j.training.schedule = x.schedule;
    j.training.recompute = x.recompute;
    if (x.pp == 3) j.parallel.pipeline_layout = {2, 2, 2};
    auto g = make(j);
    auto s = summary(g);
    check_complete_balanced_and_summed(g, s);
    const auto hw = s["flops"]["hardware_per_iteration"].get<uint64_t>();
    const auto model = s["flops"]["model_per_iteration"].get<uint64_t>();
    if (x.recompute == Recompute::kNone) CHECK(hw == model);
    else CHECK(hw > model);
    CHECK(s["flops"]["executed_per_iteration"].get<uint64_t>() >= hw);  // executed includes the non-GEMM work
    auto again = make(j);
    CHECK(again.rank_trace_bytes(g.world_size() - 1).value() == g.rank_trace_bytes(g.world_size() - 1).value());
  }
}
