// stagecraft_bench_plan: speed of `plan` (issue 12). Not a test: it prints
// figures; docs/performance.md records them and the command.
//
//   build/native/stagecraft_bench_plan [--model llama3-70b] [--gpus 4096] [--seq-len 8192]
//       [--global-batch-size 2048] [--hardware h100] [--threads N] [--top 5] [--time-limit S]
//       [--compare 1]   (also run the search without the schedule replay bound: the baseline)
//
// Runs the search as `stagecraft plan` does (threads: one per core by
// default) and prints its wall and CPU time and counts; then the baseline,
// measured in the same run: building and simulating the winner once
// (Generator::create, which includes the simulation). The ratio plan /
// baseline says how many single simulations the whole search costs; the
// layouts that divide and fit times the baseline is what timing all of
// them (an exhaustive search) would cost.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "api/api.h"
#include "api/budget.h"
#include "api/plan.h"
#include "api/simulate.h"

using clk = std::chrono::steady_clock;

namespace {

double since(clk::time_point t) { return std::chrono::duration<double>(clk::now() - t).count(); }

double cpu_seconds() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return u.ru_utime.tv_sec + u.ru_stime.tv_sec + (u.ru_utime.tv_usec + u.ru_stime.tv_usec) / 1e6;
}

}  // namespace

int main(int argc, char** argv) {
  std::string model = "llama3-70b", hardware = "h100";
  int64_t gpus = 4096, seq = 8192, gbs = 2048, top = 5;
  double limit = 0;
  bool compare = false;  // --compare 1: also the search without the schedule replay, same run
  int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--model") model = v;
    else if (k == "--hardware") hardware = v;
    else if (k == "--gpus") gpus = std::atoll(v.c_str());
    else if (k == "--seq-len") seq = std::atoll(v.c_str());
    else if (k == "--global-batch-size") gbs = std::atoll(v.c_str());
    else if (k == "--threads") threads = std::max(1, std::atoi(v.c_str()));
    else if (k == "--top") top = std::atoll(v.c_str());
    else if (k == "--time-limit") limit = std::atof(v.c_str());
    else if (k == "--compare") compare = v == "1";
    else {
      std::fprintf(stderr, "unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  sc::Result<sc::Job> base = sc::parse_job("{\"model\": \"" + model + "\", \"hardware\": \"" + hardware +
                                           "\", \"training\": {\"seq_len\": " + std::to_string(seq) +
                                           ", \"global_batch_size\": " + std::to_string(gbs) + "}}");
  if (!base.ok()) {
    std::fprintf(stderr, "%s\n", base.error().to_string().c_str());
    return 1;
  }
  sc::Budget b = sc::engine_budget();
  b.max_engine_bytes = std::max(b.max_engine_bytes, sc::kCliEngineBudgetBytes);
  sc::set_engine_budget(b);
  sc::PlanOptions o;
  o.gpus = gpus;
  o.threads = threads;
  o.constraints.top = top;
  o.time_limit_seconds = limit;
  // The simulate phase's last (done, total): total is the layouts whose
  // bound is under the current top-N threshold, so total - done is what a
  // stopped search still had to simulate (or prove dominated).
  int64_t sim_done = 0, sim_total = 0;
  o.progress = [&](int64_t d, int64_t t, const std::string& phase) {
    if (phase == "simulate") sim_done = d, sim_total = t;
  };
  const double cpu0 = cpu_seconds();
  const auto t0 = clk::now();
  sc::Result<sc::PlanResult> r = sc::plan(*base, o);
  const double wall = since(t0), cpu = cpu_seconds() - cpu0;
  if (!r.ok() || r->candidates.empty()) {
    std::fprintf(stderr, "plan failed or nothing fits\n");
    return 1;
  }
  const sc::PlanCounts& c = r->counts;
  std::printf("job        %s on %lld x %s, seq %lld, global batch %lld, %d threads\n", model.c_str(),
              static_cast<long long>(gpus), hardware.c_str(), static_cast<long long>(seq),
              static_cast<long long>(gbs), threads);
  std::printf("layouts    %lld considered: %lld divisibility, %lld memory, %lld dominated, %lld bound, %lld simulated\n",
              static_cast<long long>(c.considered), static_cast<long long>(c.divisibility),
              static_cast<long long>(c.memory), static_cast<long long>(c.dominated), static_cast<long long>(c.bound),
              static_cast<long long>(c.simulated));
  const sc::PlanEstimate we = sc::estimate_layout(r->candidates[0].job);
  std::printf("winner     %s  %.3f s (bound %.3f s: closed form %.3f s, schedule replay %s)\n",
              sc::layout_label(r->candidates[0].layout, base->model.is_moe()).c_str(), r->candidates[0].step_seconds,
              we.bound_seconds, we.first_bound_seconds, we.bound_seconds > we.first_bound_seconds ? "tighter" : "no tighter");
  std::printf("plan       %.1f s wall, %.1f s CPU, %s; %lld schedule replays\n", wall, cpu,
              r->complete ? "complete" : "INCOMPLETE (time limit): best so far", static_cast<long long>(c.replayed));
  std::printf("phases     enumerate %.1f s, validate %.1f s, proxies %.1f s, estimates %.1f s, simulate %.1f s (wall)\n",
              r->phase_seconds[0], r->phase_seconds[1], r->phase_seconds[2], r->phase_seconds[3], r->phase_seconds[4]);
  std::printf("first best %.2f s wall after the start (the seed step, %lld simulations; docs/plan.md, \"Anytime\")\n",
              r->first_best_seconds, static_cast<long long>(r->seed_simulated));
  if (!r->complete)
    std::printf("remaining  %lld layouts with a bound under the current threshold not yet decided\n",
                static_cast<long long>(sim_total - sim_done));
  if (compare) {
    // The previous round's search (closed-form bound without bucket counts), same job, same run.
    sc::PlanOptions po = o;
    po.replay_bound = false;
    const double pcpu0 = cpu_seconds();
    const auto p0 = clk::now();
    sc::Result<sc::PlanResult> pr = sc::plan(*base, po);
    const double pwall = since(p0), pcpu = cpu_seconds() - pcpu0;
    if (!pr.ok() || pr->candidates.empty()) return 1;
    const sc::PlanCounts& pc = pr->counts;
    std::printf("previous   previous bound (closed form, no bucket counts, no replay): %lld bound, %lld simulated; %.1f s wall, %.1f s CPU, %s; "
                "winner %s %.3f s (%s)\n",
                static_cast<long long>(pc.bound), static_cast<long long>(pc.simulated), pwall, pcpu,
                pr->complete ? "complete" : "INCOMPLETE", sc::layout_label(pr->candidates[0].layout, false).c_str(),
                pr->candidates[0].step_seconds,
                pr->complete && r->complete ? (pr->candidates[0].step_seconds == r->candidates[0].step_seconds ? "same step" : "DIFFERENT") : "-");
    std::printf("speed-up   %.2fx CPU, %.2fx wall\n", pcpu / cpu, pwall / wall);
  }
  const double bcpu0 = cpu_seconds();
  const auto b0 = clk::now();
  sc::Result<sc::Generator> g = sc::Generator::create(r->candidates[0].job);
  const double base_wall = since(b0), base_cpu = cpu_seconds() - bcpu0;
  if (!g.ok()) return 1;
  // What the plan pays per simulated layout: the build without
  // summary.json plus one simulation, against the full build (which
  // simulates inside summary.json); the least of 3 runs each.
  double full_cpu = 1e30, light_cpu = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    double t0 = cpu_seconds();
    if (!sc::Generator::create(r->candidates[0].job).ok()) return 1;
    full_cpu = std::min(full_cpu, cpu_seconds() - t0);
    t0 = cpu_seconds();
    sc::Generator::CreateOptions co;
    co.summary = false;
    sc::Result<sc::Generator> lg = sc::Generator::create(r->candidates[0].job, co);
    if (!lg.ok() || !sc::simulate(*lg, {}).ok()) return 1;
    light_cpu = std::min(light_cpu, cpu_seconds() - t0);
  }
  std::printf("per layout full build %.3f s CPU, plan's build + simulation %.3f s CPU (%.2fx)\n", full_cpu, light_cpu,
              full_cpu / light_cpu);
  const double fitting = static_cast<double>(c.dominated + c.bound + c.simulated);
  std::printf("baseline   one build + simulation of the winner: %.2f s wall, %.2f s CPU\n", base_wall, base_cpu);
  std::printf("ratio      plan / baseline = %.0f (CPU), %.0f (wall); exhaustive ~ %.0f x baseline = %.0f s CPU, "
              "%.0fx the plan\n",
              cpu / base_cpu, wall / base_wall, fitting, fitting * base_cpu, fitting * base_cpu / cpu);
  return 0;
}
