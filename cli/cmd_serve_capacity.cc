// stagecraft serve-capacity: the highest request rate a serving deployment
// holds at its latency targets (docs/inference.md, "Capacity"), for the
// job's layout or across tp degrees and replica counts.
#include <algorithm>
#include <cstdio>
#include <numeric>
#include <optional>

#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/api.h"
#include "api/serving.h"
#include "args.h"
#include "base/json_fields.h"
#include "commands.h"
#include "serving_text.h"

namespace sc::cli {
namespace {

const char* kCmd = "serve-capacity";
const char* kUsage =
    "usage: stagecraft serve-capacity (--model PRESET | --config job.json) [overrides]\n"
    "                                 [--slo-ttft S] [--slo-tpot S] [--requests N]\n"
    "                                 [--tp-list 2,4,8] [--replicas-list 1,2 | --gpus N] [--json]\n"
    "\n"
    "For an inference job (\"mode\": \"inference\"): the highest request rate\n"
    "(requests per second) at which a simulated workload keeps P99 TTFT under\n"
    "--slo-ttft and P99 TPOT under --slo-tpot (seconds; default: the job's\n"
    "serving.slo), and the P50/P99 latencies at rates around it. The workload\n"
    "is the job's serving.workload with its rate varied (poisson or fixed\n"
    "arrivals), or Poisson arrivals of the job's request lengths; --requests\n"
    "per simulated run (default: the workload's count, else 1000). With\n"
    "--tp-list / --replicas-list, one search per layout: a layout whose model\n"
    "or requests do not fit is reported and skipped, and the layout serving\n"
    "the most requests/s per GPU is named. --gpus N: each tp degree (--tp-list's,\n"
    "--tp's alone, else 1, 2, 4, ... up to a node) with as many replicas as\n"
    "fill N GPUs (docs/inference.md).";

bool parse_seconds(const std::string& text, double* out) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || *end != '\0' || !(v > 0) || v > 1e6) return false;
  *out = v;
  return true;
}

}  // namespace

int cmd_serve_capacity(const std::vector<std::string>& argv) {
  std::vector<FlagSpec> specs = job_flags();
  specs.push_back({"--slo-ttft", nullptr, true, "S", "P99 time-to-first-token target, seconds"});
  specs.push_back({"--slo-tpot", nullptr, true, "S", "P99 time-per-output-token target, seconds"});
  specs.push_back({"--requests", nullptr, true, "N", "requests per simulated run (default 1000)"});
  specs.push_back({"--tp-list", nullptr, true, "LIST", "search each tensor-parallel degree, e.g. 2,4,8"});
  specs.push_back({"--replicas-list", nullptr, true, "LIST", "search each replica count, e.g. 1,2,4"});
  specs.push_back({"--gpus", nullptr, true, "N", "a GPU budget: each tp degree with the replicas that fill N GPUs"});
  specs.push_back({"--json", nullptr, false, "", "print the result as JSON"});
  Args args;
  if (std::optional<int> rc = parse_or_exit(kCmd, argv, specs, kUsage, &args)) return *rc;
  if (!args.positional.empty()) return usage_error(kCmd, "unexpected argument '" + args.positional[0] + "'");
  Job job;
  if (int rc = load_job(kCmd, args, &job, "inference"); rc != kExitOk) return rc;
  if (!job.inference()) return usage_error(kCmd, "needs an inference job (\"mode\": \"inference\")");
  double ttft = job.serving.slo.ttft_seconds_p99, tpot = job.serving.slo.tpot_seconds_p99;
  for (const auto& [flag, dst] : {std::pair<const char*, double*>{"--slo-ttft", &ttft},
                                  std::pair<const char*, double*>{"--slo-tpot", &tpot}})
    if (args.has(flag) && !parse_seconds(*args.get(flag), dst))
      return usage_error(kCmd, std::string(flag) + " must be a number of seconds in (0, 1e6] (got '" + *args.get(flag) + "')");
  if (!(ttft > 0) && !(tpot > 0))
    return usage_error(kCmd, "give --slo-ttft, --slo-tpot or both (or a serving.slo block in the job)");
  int64_t requests = 0;
  if (args.has("--requests")) {
    std::vector<int64_t> v;
    if (!parse_int_list(*args.get("--requests"), 1, 16, &v) || v.size() != 1 || v[0] > kMaxWorkloadRequests)
      return usage_error(kCmd, "--requests must be an integer in [1, " + std::to_string(kMaxWorkloadRequests) +
                                   "] (got '" + *args.get("--requests") + "')");
    requests = v[0];
  }
  std::vector<int64_t> tps{job.parallel.tp}, reps{job.serving.replicas};
  // A list names each value once (a repeat would search and print the
  // same layout twice); --tp and --tp-list both set the degree.
  auto repeated = [](const std::vector<int64_t>& v) {
    for (size_t i = 0; i < v.size(); ++i)
      for (size_t k = 0; k < i; ++k)
        if (v[i] == v[k]) return true;
    return false;
  };
  if (args.has("--tp-list")) {
    if (args.has("--tp")) return usage_error(kCmd, "--tp-list sets the tp degrees: give --tp or --tp-list, not both");
    tps.clear();
    if (!parse_int_list(*args.get("--tp-list"), 1, 16, &tps) || repeated(tps))
      return usage_error(kCmd, "--tp-list must be 1 to 16 distinct positive integers, e.g. 2,4,8 (got '" +
                                   *args.get("--tp-list") + "')");
  }
  if (args.has("--replicas-list")) {
    reps.clear();
    if (!parse_int_list(*args.get("--replicas-list"), 1, 16, &reps) || repeated(reps))
      return usage_error(kCmd, "--replicas-list must be 1 to 16 distinct positive integers (got '" +
                                   *args.get("--replicas-list") + "')");
  }
  int64_t budget = 0;  // --gpus: each tp degree with the replicas that fill it
  if (args.has("--gpus")) {
    const std::optional<int64_t> v = parse_int(*args.get("--gpus"));
    if (!v || *v < 1 || *v > limits::kMaxDegree)
      return usage_error(kCmd, "--gpus must be an integer in [1, " + std::to_string(limits::kMaxDegree) + "] (got '" +
                                   *args.get("--gpus") + "')");
    if (args.has("--replicas-list"))
      return usage_error(kCmd, "--gpus sets the replica counts: give --gpus or --replicas-list, not both");
    budget = *v;
  }
  const bool tp_varies = args.has("--tp-list") || budget > 0;
  auto layout = [&](int64_t tp, int64_t rep) {
    Job j = job;
    if (tp_varies) {  // expert tp follows tp as when left out (docs/inference.md)
      j.parallel.tp = tp;
      j.parallel.expert_tp = tp / std::gcd(tp, j.parallel.ep);
    }
    j.serving.replicas = rep;
    return j;
  };
  const char* from = budget > 0 ? (args.has("--tp-list") ? "--gpus and --tp-list" : "--gpus")
                     : args.has("--tp-list") && args.has("--replicas-list") ? "--tp-list and --replicas-list"
                     : args.has("--tp-list")                                ? "--tp-list"
                                                                            : "--replicas-list";
  // The layouts: the lists' cross product, or with --gpus each tp degree
  // (--tp-list's, else the powers of two up to a node) whose instance
  // divides the budget, with as many replicas as fill it.
  std::vector<std::pair<int64_t, int64_t>> pairs;
  std::string skipped;  // default tp degrees --gpus leaves out, and why
  if (budget > 0) {
    if (!args.has("--tp-list") && !args.has("--tp")) {  // --tp N: that degree alone
      tps.clear();
      for (int64_t tp = 1; tp <= std::min<int64_t>(budget, job.hardware.gpus_per_node); tp *= 2) tps.push_back(tp);
    }
    for (int64_t tp : tps) {
      const Job j = layout(tp, 1);
      const Status valid = validate_job(j);
      const int64_t world = j.parallel.world_size();
      if (valid.ok() && world > 0 && budget % world == 0) {
        pairs.emplace_back(tp, budget / world);
        continue;
      }
      const std::string why = !valid.ok() ? valid.error().to_string()
                                          : "an instance of " + std::to_string(world) + " GPUs does not divide " +
                                                std::to_string(budget);
      // A degree the user listed is theirs to fix; a default one that does
      // not apply is left out, and said so if none is left.
      if (args.has("--tp-list")) return usage_error(kCmd, "tp " + std::to_string(tp) + " (from --tp-list): " + why);
      skipped += (skipped.empty() ? "" : "; ") + ("tp " + std::to_string(tp) + ": " + why);
    }
    if (pairs.empty())
      return usage_error(kCmd, "no tp degree fills --gpus " + std::to_string(budget) + " (" + skipped + ")");
  } else {
    for (int64_t tp : tps)
      for (int64_t rep : reps) pairs.emplace_back(tp, rep);
  }
  // With several layouts, an error says which one (from which flag).
  auto which = [&](int64_t tp, int64_t rep, Error e) {
    if (pairs.size() > 1 || budget > 0)
      e.message = "tp " + std::to_string(tp) + ", replicas " + std::to_string(rep) + " (from " + from + "): " + e.message;
    return e;
  };
  if (Status st = serving_capacity_searchable(job); !st.ok()) return report_error(kCmd, st.error());
  for (const auto& [tp, rep] : pairs)
    if (Status st = validate_job(layout(tp, rep)); !st.ok()) return report_error(kCmd, which(tp, rep, st.error()));
  // Every layout built and its runs checked (the model and every request
  // fit) before any search. One layout that cannot run is the command's
  // error; in a sweep it is a row saying why, and the others are searched
  // (all of them failing: the error, naming each).
  struct Layout {
    int64_t tp, rep, gpus;
    std::optional<serve::CapacitySearch> search;  // prepared once: its plan and cost model
    std::optional<Error> not_searched;
  };
  std::vector<Layout> layouts;
  for (const auto& [tp, rep] : pairs) {
    const Job j = layout(tp, rep);
    Result<Generator> g = Generator::create(j);
    Layout l{tp, rep, j.parallel.world_size() * rep, std::nullopt, std::nullopt};
    if (!g.ok()) {  // validated above: what is left is the model not fitting
      l.not_searched = g.error();
    } else if (Result<serve::CapacitySearch> prepared = serving_capacity_prepare(*g, requests); !prepared.ok()) {
      l.not_searched = prepared.error();
    } else {
      l.search.emplace(std::move(*prepared));
    }
    layouts.push_back(std::move(l));
  }
  if (std::none_of(layouts.begin(), layouts.end(), [](const Layout& l) { return l.search.has_value(); })) {
    Error e = which(layouts[0].tp, layouts[0].rep, *layouts[0].not_searched);
    for (size_t i = 1; i < layouts.size(); ++i) {
      const Error& o = *layouts[i].not_searched;
      e.message += "; tp " + std::to_string(layouts[i].tp) + ", replicas " + std::to_string(layouts[i].rep) + ": " +
                   (o.to_string() == layouts[0].not_searched->to_string() ? std::string("the same") : o.to_string());
    }
    if (layouts.size() > 1) e.message = "no layout can be searched: " + e.message;
    if (!skipped.empty()) e.message += " (left out: " + skipped + ")";
    return report_error(kCmd, e);
  }
  nlohmann::json all = nlohmann::json::array();
  if (!args.has("--json")) {
    auto show = [](double v) { char b[32]; std::snprintf(b, sizeof b, "%g ms", v * 1e3); return v > 0 ? std::string(b) : std::string("-"); };
    std::printf("SLO: P99 TTFT %s, P99 TPOT %s\n", show(ttft).c_str(), show(tpot).c_str());
    if (!skipped.empty()) std::printf("left out: %s\n", skipped.c_str());
  }
  const Layout* best = nullptr;  // the most requests per second per GPU
  double best_per_gpu = 0;
  bool short_runs = false;  // a capacity left out of that: its run too short to measure it
  for (const Layout& l : layouts) {
    const long long tp = l.tp, rep = l.rep;
    if (l.not_searched) {
      const Error& e = *l.not_searched;
      all.push_back({{"tp", l.tp}, {"replicas", l.rep}, {"gpus", l.gpus},
                     {"not_searched", {{"code", error_code_name(e.code)}, {"field", e.path}, {"message", e.message}}}});
      if (!args.has("--json"))
        std::printf("\ntp %lld, replicas %lld (%lld GPUs): not searched: %s\n", tp, rep, static_cast<long long>(l.gpus),
                    e.to_string().c_str());
      continue;
    }
    Result<CapacityResult> r = serving_capacity(*l.search, ttft, tpot);
    if (!r.ok()) return report_error(kCmd, which(l.tp, l.rep, r.error()));
    nlohmann::json one = nlohmann::json::parse(serving_capacity_json(*r));
    one["tp"] = l.tp;
    one["replicas"] = l.rep;
    all.push_back(one);
    const double per_gpu = r->gpus > 0 ? r->capacity / static_cast<double>(r->gpus) : 0.0;
    // A run too short to measure (short_run: at the search's cap, say) is
    // no capacity to rank by.
    short_runs |= r->capacity > 0 && r->short_run;
    if (r->capacity > 0 && !r->short_run && per_gpu > best_per_gpu) {
      best = &l;
      best_per_gpu = per_gpu;
    }
    if (args.has("--json")) continue;
    if (r->capacity > 0)
      std::printf("\ntp %lld, replicas %lld (%lld GPUs): capacity %s requests/s (%s per GPU), %lld runs of %lld requests\n",
                  tp, rep, static_cast<long long>(r->gpus), rate_text(r->capacity).c_str(),
                  rate_text(per_gpu, 4).c_str(), static_cast<long long>(r->simulations),
                  static_cast<long long>(r->requests));
    else
      std::printf("\ntp %lld, replicas %lld (%lld GPUs): no request rate meets the SLOs: even at %.3g requests/s "
                  "(requests alone) P99 TTFT is %.4g ms and P99 TPOT %.4g ms; %lld runs of %lld requests\n",
                  tp, rep, static_cast<long long>(r->gpus), r->reference.rate,
                  r->reference.ttft_p99 * 1e3, r->reference.tpot_p99 * 1e3,
                  static_cast<long long>(r->simulations), static_cast<long long>(r->requests));
    if (r->short_run) print_short_run_warning(r->requests, r->capacity, r->e2e_p99_at_capacity, "--requests");
    std::printf("%12s %12s %12s %12s %12s %12s %5s\n", "req/s", "ttft_p50_ms", "ttft_p99_ms", "tpot_p50_ms",
                "tpot_p99_ms", "out_tok/s", "slo");
    for (const CapacityPoint& c : r->curve)
      std::printf("%12s %12.1f %12.1f %12.2f %12.2f %12s %5s\n", rate_text(c.rate).c_str(), c.ttft_p50 * 1e3,
                  c.ttft_p99 * 1e3, c.tpot_p50 * 1e3, c.tpot_p99 * 1e3, rate_text(c.output_tokens_per_second, 1).c_str(),
                  c.meets_slo ? "yes" : "no");
  }
  // A sweep names the layout that serves the most per GPU (ties: the first).
  if (layouts.size() > 1 && best != nullptr && !args.has("--json"))
    std::printf("\nmost per GPU: tp %lld, replicas %lld: %.4f requests/s per GPU%s\n", static_cast<long long>(best->tp),
                static_cast<long long>(best->rep), best_per_gpu,
                short_runs ? " (of the layouts whose run measured a capacity)" : "");
  else if (layouts.size() > 1 && short_runs && !args.has("--json"))
    std::printf("\nmost per GPU: not named: no layout's run was long enough to measure its capacity (raise --requests)\n");
  if (args.has("--json") && layouts.size() > 1) {
    nlohmann::json out{{"layouts", all}};
    if (!skipped.empty()) out["left_out"] = skipped;
    if (best != nullptr) out["most_per_gpu"] = {{"tp", best->tp}, {"replicas", best->rep}};
    std::cout << out.dump() << "\n";
    return kExitOk;
  }
  if (args.has("--json")) std::cout << (all.size() == 1 ? all[0].dump() : nlohmann::json{{"layouts", all}}.dump()) << "\n";
  return kExitOk;
}

}  // namespace sc::cli
