// The request layer's door to the planner (core/plan/plan.h, docs/plan.md):
// the planner's backend built on Generator::create and simulate, and
// plan() / estimate_layout() with it. The search itself lives in core/plan.
#pragma once

#include "plan/plan.h"

namespace sc {

// Builds a job with Generator::create and times it with simulate_state.
PlanBackend generator_plan_backend();

// plan(base, options, generator_plan_backend()), with the search's memory
// budget (options.max_search_bytes, when 0) half the engine budget
// (api/budget.h).
Result<PlanResult> plan(const Job& base, const PlanOptions& options);
// estimate_layout(job, generator_plan_backend()) (tests).
PlanEstimate estimate_layout(const Job& job);

}  // namespace sc
