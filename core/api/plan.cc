#include "api/plan.h"

#include <memory>

#include "api/api.h"
#include "api/budget.h"
#include "api/simulate.h"
#include "api/state.h"

namespace sc {
namespace {

// A built job, as the planner reads it.
class GeneratorBuild final : public PlanBuild {
 public:
  explicit GeneratorBuild(Generator g) : gen_(std::move(g)), s_(&GeneratorAccess::state(gen_)) {}
  int64_t num_stages() const override { return s_->num_stages(); }
  const Graph& graph_of(int64_t stage) const override { return s_->graph_of(stage); }
  const RoleProgram& program_of(int64_t stage) const override { return s_->program_of(stage); }
  const Bindings& bindings() const override { return s_->bind; }
  Result<PlanTiming> simulate() const override {
    SC_ASSIGN_OR_RETURN(SimulateReport rep, simulate_state(*s_, {}));
    PlanTiming t;
    t.step_seconds = rep.step_seconds;
    t.mfu = rep.mfu;
    t.tokens_per_second = rep.tokens_per_second;
    t.bubble_fraction = rep.bubble_fraction;
    for (int k = 0; k < 5; ++k) t.exposed[k] = rep.exposed_comm_seconds[k];
    return t;
  }

 private:
  Generator gen_;
  const GeneratorState* s_;
};

}  // namespace

PlanBackend generator_plan_backend() {
  PlanBackend b;
  b.build = [](const Job& job, bool summary) -> Result<std::unique_ptr<const PlanBuild>> {
    Generator::CreateOptions co;
    co.summary = summary;
    Result<Generator> gen = Generator::create(job, co);
    if (!gen.ok()) return gen.error();
    return std::unique_ptr<const PlanBuild>(std::make_unique<GeneratorBuild>(std::move(gen).value()));
  };
  return b;
}

Result<PlanResult> plan(const Job& base, const PlanOptions& options) {
  PlanOptions o = options;
  // Half the engine budget for the search's layouts, the other half for
  // the build of the layout being timed (wasm: 1 + 1 GiB of its 4 GiB heap).
  if (o.max_search_bytes == 0) o.max_search_bytes = engine_budget().max_engine_bytes / 2;
  return plan(base, o, generator_plan_backend());
}

PlanEstimate estimate_layout(const Job& job) { return estimate_layout(job, generator_plan_backend()); }

}  // namespace sc
