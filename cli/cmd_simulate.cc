// stagecraft simulate: the step time of the whole job (docs/simulate.md),
// from the same per-rank programs the traces hold. Same job inputs as
// inspect; the network is the job's "network" block (docs/job-format.md).
#include <algorithm>
#include <cstdio>

#include <nlohmann/json.hpp>
#include <iostream>
#include <string>
#include <vector>

#include "api/api.h"
#include "api/budget.h"
#include "api/serving.h"
#include "api/simulate.h"
#include "args.h"
#include "base/json_fields.h"
#include "commands.h"
#include "export.h"
#include "serving_text.h"

namespace sc::cli {
namespace {

const char* kCmd = "simulate";
const char* kUsage =
    "usage: stagecraft simulate (--model PRESET | --config job.json) [overrides]\n"
    "                           [--exhaustive] [--astra] [--json] [--timeline]\n"
    "\n"
    "Simulates one training step of every rank with Megatron-LM's streams (tp,\n"
    "cp, ep collectives and pipeline sends on the compute stream, except the\n"
    "interleaved schedule's steady-phase sends under overlap_p2p_comm and the\n"
    "tp collectives Transformer Engine runs beside its GEMMs (sequence-parallel\n"
    "backward all-gathers and reduce-scatters, userbuffer chunks); dp\n"
    "reductions beside it, slowing compute by the SMs they take) on the job's network\n"
    "(its \"network\" block, defaults from the hardware profile) and prints the\n"
    "step time, MFU, tokens per second, per-stage busy / bubble / exposed\n"
    "communication by kind, and the critical path. Ranks that are alike are\n"
    "simulated once; --exhaustive simulates every rank. --astra follows\n"
    "ASTRA-sim's analytical backend (one compute and one communication stream\n"
    "per rank) on the network an export writes.\n"
    "An inference job (\"mode\": \"inference\") prints TTFT, TPOT and throughput\n"
    "at its concurrency, or with --sweep-concurrency 1,8,64 at each of those\n"
    "(docs/inference.md).";


// A serving job with a workload: its percentiles (summary.json's inference
// keys) and, with serving.slo, the capacity search (docs/inference.md).
int workload_extra(const Job& job, const Generator& gen, nlohmann::json* out) {
  if (!job.serving.workload.present && !job.serving.slo.present) return kExitOk;
  const auto inf = nlohmann::json::parse(gen.summary_json(), nullptr, false)["inference"];
  if (job.serving.workload.present) {
    nlohmann::json w = inf["workload"];
    w.erase("kv_cache_utilization");
    w.erase("per_request");
    for (const char* k : {"ttft", "tpot", "itl", "e2e", "queue"})
      for (const char* q : {"_mean", "_p50", "_p90", "_p99"}) {
        const std::string key = std::string(k) + "_seconds" + q;
        w[key] = inf[key];
      }
    (*out)["workload"] = w;
  }
  if (job.serving.slo.present) {
    // A job the search cannot vary (a burst or trace workload, disaggregated
    // pools): its own figures stand, the capacity is said to be not searched.
    if (Status st = serving_capacity_searchable(job); !st.ok()) {
      (*out)["capacity_not_searched"] = st.error().path + ": " + st.error().message;
      return kExitOk;
    }
    Result<CapacityResult> c = serving_capacity(gen, job.serving.slo.ttft_seconds_p99, job.serving.slo.tpot_seconds_p99);
    if (!c.ok()) return report_error_or_signal(kCmd, c.error());
    (*out)["capacity"] = nlohmann::json::parse(serving_capacity_json(*c));
  }
  return kExitOk;
}

void print_workload(const nlohmann::json& extra) {
  if (extra.contains("workload") && extra["workload"]["requests"].get<int64_t>() == 0) {
    std::printf("\nworkload: no request arrived (rate x duration_seconds drew none): no latencies to report\n");
  } else if (extra.contains("workload")) {
    const auto& w = extra["workload"];
    // TPOT and ITL are gaps between a request's tokens: none when every
    // request has one output token (docs/inference.md).
    const bool gaps = w["output_tokens"].get<int64_t>() > w["requests"].get<int64_t>();
    std::printf("\nworkload: %lld requests, %.2f requests/s, %.1f output tokens/s per GPU, %lld preemptions\n",
                static_cast<long long>(w["requests"].get<int64_t>()), w["requests_per_second"].get<double>(),
                w["output_tokens_per_second_per_gpu"].get<double>(),
                static_cast<long long>(w["preemptions"].get<int64_t>()));
    std::printf("%8s %12s %12s %12s %12s\n", "", "p50_ms", "p90_ms", "p99_ms", "mean_ms");
    for (const char* k : {"ttft", "tpot", "itl", "e2e", "queue"}) {
      const std::string b = std::string(k) + "_seconds";
      if (!gaps && (std::string(k) == "tpot" || std::string(k) == "itl")) {
        std::printf("%8s %12s %12s %12s %12s\n", k, "-", "-", "-", "-");
        continue;
      }
      std::printf("%8s %12.2f %12.2f %12.2f %12.2f\n", k, w[b + "_p50"].get<double>() * 1e3,
                  w[b + "_p90"].get<double>() * 1e3, w[b + "_p99"].get<double>() * 1e3,
                  w[b + "_mean"].get<double>() * 1e3);
    }
  }
  if (extra.contains("capacity_not_searched"))
    std::printf("\ncapacity: not searched, %s (stagecraft serve-capacity, docs/inference.md)\n",
                extra["capacity_not_searched"].get<std::string>().c_str());
  if (extra.contains("capacity")) {
    const auto& c = extra["capacity"];
    // The targets given (a target left out is 0 in the JSON: not printed).
    std::string targets;
    char b[96];
    if (const double t = c["slo"]["ttft_seconds_p99"].get<double>(); t > 0) {
      std::snprintf(b, sizeof b, "P99 TTFT %.4g s", t);
      targets += b;
    }
    if (const double t = c["slo"]["tpot_seconds_p99"].get<double>(); t > 0) {
      std::snprintf(b, sizeof b, "%sP99 TPOT %.4g s", targets.empty() ? "" : ", ", t);
      targets += b;
    }
    if (c.contains("no_rate_meets_slo"))
      std::printf("\ncapacity: no request rate meets the SLOs (%s), not even requests alone (docs/inference.md)\n",
                  targets.c_str());
    else
      std::printf("\ncapacity: %s requests/s within the SLOs (%s)\n",
                  rate_text(c["capacity_requests_per_second"].get<double>()).c_str(), targets.c_str());
    if (c.value("short_run", false))
      print_short_run_warning(c["requests_per_run"].get<int64_t>(), c["capacity_requests_per_second"].get<double>(),
                              c["e2e_seconds_p99_at_capacity"].get<double>(),
                              "serving.workload's requests or duration_seconds");
  }
}

int sweep(const Job& job, const Generator& gen, const std::vector<int64_t>& values, bool as_json) {
  Result<std::vector<ServingPoint>> r = serving_sweep(gen, values);
  if (!r.ok()) return report_error_or_signal(kCmd, r.error());
  nlohmann::json extra = nlohmann::json::object();
  if (int rc = workload_extra(job, gen, &extra); rc != kExitOk) return rc;
  release_signals(kCmd);  // a signal during the work ends here, with its message
  if (as_json) {
    std::string tail;
    for (const auto& [k, v] : extra.items()) tail += ",\"" + k + "\":" + v.dump();
    std::cout << "{\"sweep\":" << serving_sweep_json(*r) << tail << "}\n";
    return kExitOk;
  }
  std::printf("%12s %12s %12s %16s %16s %5s\n", "concurrency", "ttft_ms", "tpot_ms", "tok/s/gpu", "tok/s/user", "fits");
  for (const ServingPoint& p : *r)
    std::printf("%12lld %12.2f %12.2f %16.1f %16.1f %5s\n", static_cast<long long>(p.concurrency),
                p.ttft_seconds * 1e3, p.tpot_seconds * 1e3, p.tokens_per_second_per_gpu, p.tokens_per_second_per_user,
                p.fits ? "yes" : "no");
  print_workload(extra);
  return kExitOk;
}

}  // namespace

// --exhaustive keeps every rank's simulation state at once: refused before
// the work when the estimate is past the memory budget (issue 24 D7).
// Calibration (docs/promises.md, "Budgets"): peak RSS over the ordinary
// simulate of seven jobs (gpt3-1.7b, llama3-8b, llama3-70b; 2,048-8,192
// ranks, 279-2,678 nodes per rank, largest group 64-4,096) fits 30.4 B per
// node per rank plus 7.8 B per member of the largest group per rank within
// 5%; the estimate uses 38 and 10 (1.23-1.33x the measured growth), plus
// the engine's own estimate.
static Status check_exhaustive_budget(const Job& job, const Generator& gen) {
  const auto summary = nlohmann::json::parse(gen.summary_json(), nullptr, false);
  const auto* trace = summary.is_object() && summary.contains("trace") ? &summary["trace"] : nullptr;
  const int64_t nodes = trace && (*trace)["nodes_per_rank"].is_number_integer() ? (*trace)["nodes_per_rank"].get<int64_t>() : 0;
  const auto& p = job.parallel;
  const int64_t group = std::max({p.dp, p.tp, p.pp, p.cp, p.ep, int64_t{1}});
  const int64_t world = std::max<int64_t>(1, p.world_size());
  const double per_rank = 38.0 * static_cast<double>(nodes) + 10.0 * static_cast<double>(group);
  const double need = static_cast<double>(world) * per_rank + static_cast<double>(estimate_job(job).engine_bytes);
  const int64_t budget = engine_budget().max_engine_bytes;
  if (need <= static_cast<double>(budget)) return ok_status();
  return make_error(ErrorCode::kTooLarge,
                    "simulating every one of the " + std::to_string(world) + " ranks needs about " +
                        human_bytes(need >= 4e18 ? INT64_MAX / 4 : static_cast<int64_t>(need)) + " of memory (" +
                        std::to_string(nodes) + " nodes per rank, largest group " + std::to_string(group) +
                        "), over the budget of " + human_bytes(budget) +
                        ". Drop --exhaustive (one rank per symmetry class gives the same step time), or "
                        "--allow-large to raise the budget to the free memory",
                    "--exhaustive");
}

int cmd_simulate(const std::vector<std::string>& argv) {
  std::vector<FlagSpec> specs = job_flags();
  specs.push_back({"--exhaustive", nullptr, false, "", "simulate every rank, not one per symmetry class"});
  specs.push_back({"--astra", nullptr, false, "", "ASTRA-sim analytical rules on the exported astra-sim/ network"});
  specs.push_back({"--json", nullptr, false, "", "print the result as JSON"});
  specs.push_back({"--timeline", nullptr, false, "", "with --json: per-stage intervals of rank 0's pipeline"});
  specs.push_back({"--sweep-concurrency", nullptr, true, "LIST",
                   "inference jobs: TTFT, TPOT and throughput at each concurrency, e.g. 1,8,64,256"});
  Args args;
  if (std::optional<int> rc = parse_or_exit(kCmd, argv, specs, kUsage, &args)) return *rc;
  if (!args.positional.empty()) return usage_error(kCmd, "unexpected argument '" + args.positional[0] + "'");
  if (args.has("--timeline") && !args.has("--json")) return usage_error(kCmd, "--timeline needs --json");
  Job job;
  if (int rc = load_job(kCmd, args, &job); rc != kExitOk) return rc;
  std::vector<int64_t> values;
  if (args.has("--sweep-concurrency")) {
    if (!job.inference())
      return usage_error(kCmd, "--sweep-concurrency needs an inference job (\"mode\": \"inference\")");
    if (!parse_int_list(*args.get("--sweep-concurrency"), 1, 64, &values) ||
        *std::max_element(values.begin(), values.end()) > limits::kMaxMicroBatch)
      return usage_error(kCmd, "--sweep-concurrency must be a comma-separated list of 1 to 64 integers in [1, " +
                                   std::to_string(limits::kMaxMicroBatch) + "] (got '" +
                                   echo_text(*args.get("--sweep-concurrency")) + "')");
  }
  // An inference job is timed per iteration kind at its concurrency
  // (docs/inference.md): the step simulation's options do not apply.
  if (job.inference())
    for (const char* f : {"--astra", "--exhaustive", "--timeline"})
      if (args.has(f))
        return usage_error(kCmd, std::string(f) +
                                     " applies to a training step; an inference job is timed per iteration at its "
                                     "concurrency (docs/inference.md)");
  // build_generator catches SIGINT/SIGTERM/SIGHUP (the build and the
  // simulation stop at them); the process then exits by the signal with
  // "interrupted by ..." on stderr, as the other commands do.
  int built_rc = kExitOk;
  std::optional<Generator> built = build_generator(kCmd, job, &built_rc);
  if (!built) return built_rc;
  Generator* gen = &*built;
  if (job.inference() && values.empty()) {  // the job's own concurrency (as many as fit when 0)
    const auto summary = nlohmann::json::parse(gen->summary_json(), nullptr, false);
    values.push_back(summary["inference"]["concurrency"].get<int64_t>());
  }
  if (!values.empty()) return sweep(job, *gen, values, args.has("--json"));
  if (args.has("--exhaustive")) {
    if (Status st = check_exhaustive_budget(job, *gen); !st.ok()) return report_error(kCmd, st.error());
  }
  SimulateOptions o;
  o.exhaustive = args.has("--exhaustive");
  o.astra = args.has("--astra");
  o.timeline = args.has("--timeline");
  Result<SimulateReport> r = simulate(*gen, o);
  if (!r.ok()) return report_error_or_signal(kCmd, r.error());
  release_signals(kCmd);  // a signal during the work ends here, with its message; none from now on is caught
  // The time of a layout that does not fit is no answer: the text says so,
  // and the JSON carries each stage's peak against the device
  // ("memory": {"fits", "stages": [{stage, peak_live_bytes, capacity_bytes}]}).
  const auto summary = nlohmann::json::parse(gen->summary_json(), nullptr, false);
  nlohmann::json memory = {{"fits", true}, {"stages", nlohmann::json::array()}};
  const nlohmann::json* first_over = nullptr;
  if (!summary.is_discarded() && summary.contains("stages"))
    for (const auto& st : summary["stages"]) {
      if (!st.is_object() || !st.contains("memory_bytes")) continue;
      const int64_t live = st["memory_bytes"]["peak_live"].get<int64_t>(), cap = st["memory_bytes"]["capacity"].get<int64_t>();
      memory["stages"].push_back({{"stage", st["index"]}, {"peak_live_bytes", live}, {"capacity_bytes", cap}});
      if (live > cap && !first_over) {
        memory["fits"] = false;
        first_over = &st;
      }
    }
  if (args.has("--json")) {
    nlohmann::json out = nlohmann::json::parse(simulate_json(*r));
    out["memory"] = memory;
    std::cout << out.dump(2) << "\n";
  } else {
    std::cout << simulate_text(*r);
    if (first_over) {
      const auto& mb = (*first_over)["memory_bytes"];
      std::printf("memory      does not fit: stage %lld needs %.2f GiB per GPU at its peak, the device has %.2f GiB "
                  "(stagecraft inspect shows the parts)\n",
                  static_cast<long long>((*first_over)["index"].get<int64_t>()),
                  mb["peak_live"].get<double>() / 1073741824.0, mb["capacity"].get<double>() / 1073741824.0);
    }
  }
  keep_until_exit(std::move(*built));  // not freed: the process ends here
  return kExitOk;
}

}  // namespace sc::cli
