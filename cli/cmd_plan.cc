// stagecraft plan: the fastest parallel layout of a model on N GPUs that
// fits in memory (docs/plan.md). The search is core/plan/plan.h (through core/api/plan.h); this file
// maps flags onto the base job and the constraints, runs it on every core,
// draws progress on stderr and prints the ranking (text, --json, --csv),
// and with --export-best writes the winner's archive as generate does.
#include <unistd.h>

#include <cctype>
#include <charconv>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <mutex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "api/budget.h"
#include "api/export.h"
#include "api/plan.h"
#include "args.h"
#include "base/cancel.h"
#include "base/json_fields.h"
#include "base/workers.h"
#include "commands.h"
#include "export.h"
#include "progress.h"

namespace sc::cli {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const char* kCmd = "plan";
const char* kUsage =
    "usage: stagecraft plan (--model PRESET | --config job.json) --gpus N [job flags]\n"
    "                       [constraints] [--json | --csv] [--export-best -o OUT]\n"
    "\n"
    "Searches every parallel layout of the job on N GPUs (tp, sequence parallelism,\n"
    "cp, pp, virtual stages, schedule, dp, ZeRO / HSDP shard group, ep and expert\n"
    "tp, recompute, micro-batch size, rank order), keeps those that fit in the\n"
    "GPU's memory less a reserve, times the ones that can still win with the\n"
    "simulator, and prints them ranked by step time, with what bounds each and\n"
    "why the winner wins. Constraints also come from the job JSON's \"plan\"\n"
    "block (flags win). Ctrl-C prints the best found so far. See docs/plan.md.";

std::vector<FlagSpec> specs() {
  std::vector<FlagSpec> s = {
      {"--config", "-c", true, "FILE", "job JSON (model, training, hardware, network; a \"plan\" block)"},
      {"--model", nullptr, true, "PRESET", "model preset, e.g. llama3-70b"},
      {"--layers", nullptr, true, "N", "override model.num_layers"},
      {"--mtp-num-layers", nullptr, true, "N", "multi-token-prediction layers trained on the last stage (model.mtp_num_layers)"},
      {"--gpus", nullptr, true, "N", "GPUs to lay the job out on (required)"},
      {"--hardware", nullptr, true, "H", "hardware preset: a100, h100, h200, h800, b200"},
      {"--seq-len", nullptr, true, "N", "sequence length in tokens (required, or training.seq_len)"},
      {"--global-batch-size", nullptr, true, "N", "sequences per iteration (required, or training.global_batch_size)"},
      {"--dtype", nullptr, true, "D", "compute dtype: bf16, fp16, fp32, tf32 (FP8 training: --fp8-recipe)"},
      {"--fp8-recipe", nullptr, true, "R", "FP8 linear-layer GEMMs as Transformer Engine runs them: delayed, tensorwise, blockwise, mxfp8 (none: off)"},
      {"--tp", nullptr, true, "N", "fix tensor parallelism"},
      {"--pp", nullptr, true, "N", "fix pipeline stages"},
      {"--cp", nullptr, true, "N", "fix context parallelism"},
      {"--dp", nullptr, true, "N", "fix data parallelism"},
      {"--ep", nullptr, true, "N", "fix expert parallelism (MoE)"},
      {"--vp", nullptr, true, "N", "fix virtual stages per pipeline rank"},
      {"--mbs", nullptr, true, "N", "fix the micro-batch size"},
      {"--min-tp", nullptr, true, "N", "bound tp from below (likewise --min-pp, -cp, -dp, -ep, -vp, -mbs)"},
      {"--max-tp", nullptr, true, "N", "bound tp from above (default: GPUs per node)"},
      {"--min-pp", nullptr, true, "N", ""},
      {"--max-pp", nullptr, true, "N", ""},
      {"--min-cp", nullptr, true, "N", ""},
      {"--max-cp", nullptr, true, "N", "(default 16, or seq_len / 8192 when larger, or --min-cp)"},
      {"--min-dp", nullptr, true, "N", ""},
      {"--max-dp", nullptr, true, "N", ""},
      {"--min-ep", nullptr, true, "N", ""},
      {"--max-ep", nullptr, true, "N", ""},
      {"--min-vp", nullptr, true, "N", ""},
      {"--max-vp", nullptr, true, "N", ""},
      {"--min-mbs", nullptr, true, "N", ""},
      {"--max-mbs", nullptr, true, "N", "(default 8)"},
      {"--schedules", nullptr, true, "LIST", "allowed schedules: 1f1b,gpipe,interleaved-1f1b,zero-bubble"},
      {"--recompute", nullptr, true, "LIST", "allowed recompute modes: none,selective,full"},
      {"--zero", nullptr, true, "LIST", "allowed ZeRO stages, e.g. 0,1"},
      {"--orders", nullptr, true, "LIST", "allowed rank orders: megatron,llama3"},
      {"--memory-reserve-gib", nullptr, true, "X", "GiB per GPU kept free (default: derived per GPU, h100 1.80)"},
      {"--memory-reserve-fraction", nullptr, true, "F", "the reserve as a fraction of capacity"},
      {"--objective", nullptr, true, "O", "step_time (default) or tokens_per_gpu"},
      {"--top", nullptr, true, "N", "candidates to rank (default 5)"},
      {"--json", nullptr, false, "", "print the plan as JSON (docs/plan.md)"},
      {"--csv", nullptr, false, "", "print the ranking as CSV"},
      {"--export-best", nullptr, false, "", "write the winner's archive to -o (as generate does)"},
      {"-o", "--output", true, "OUT", "with --export-best: directory or OUT.zip / OUT.tar.gz"},
      {"--force", nullptr, false, "", "with --export-best: replace OUT if it is a previous export"},
      {"--threads", nullptr, true, "N", "worker threads (default: one per core)"},
      {"--time-limit", nullptr, true, "S", "stop the whole search after S seconds; print the best so far (marked incomplete)"},
      {"--progress", nullptr, true, "MODE", "bar | lines | none (default: bar on a terminal, else lines)"},
      {"--quiet", "-q", false, "", "no progress"},
      {"--allow-large", nullptr, false, "", "raise the work budget per candidate (docs/promises.md)"},
      {"--help", "-h", false, "", "show this help"},
  };
  return s;
}

// Numbers follow the job flags' rules (cli/args.h parse_int): " 2" and
// "0x8" are refused here as there.
std::optional<int64_t> to_int(const std::string& s) { return parse_int(s); }

// A finite decimal number, nothing around it (no spaces, no hex, no inf).
std::optional<double> to_double(const std::string& s) {
  double v = 0;
  const char* end = s.data() + s.size();
  auto [p, ec] = std::from_chars(s.data(), end, v, std::chars_format::general);
  if (s.empty() || ec != std::errc() || p != end || !std::isfinite(v)) return std::nullopt;
  return v;
}

// A comma-separated list; an empty item ("1f1b,", ",1f1b", "a,,b") is kept
// as "" so that the list's parser refuses it naming the entry.
std::vector<std::string> split(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');) out.push_back(item);
  if (!s.empty() && s.back() == ',') out.emplace_back();
  return out;
}

std::string flag_of_key(const std::string& key);

// A constraint error (path plan.<key>) says where each constraint key it
// names came from: a flag, or the job's "plan" block ("tp 8 conflicts
// with max_tp 4 (tp from the job's plan block, max_tp from --max-tp)").
Error with_sources(const Args& args, Error e) {
  if (e.path.rfind("plan.", 0) != 0) return e;
  const std::string key = e.path.substr(5, e.path.find('[') == std::string::npos ? std::string::npos : e.path.find('[') - 5);
  std::vector<std::string> keys{key};
  // The other keys of a conflict: the same degree's fixed, min_ and max_.
  std::string degree = key;
  for (const char* pre : {"min_", "max_"})
    if (degree.rfind(pre, 0) == 0) degree = degree.substr(4);
  const bool conflict = e.message.find(" conflicts with ") != std::string::npos ||
                        e.message.find(" is above ") != std::string::npos;
  // "<key> <number>" as a word: "no tp satisfies both" names no value.
  auto names = [&](const std::string& k) {
    for (size_t at = e.message.find(k + " "); at != std::string::npos; at = e.message.find(k + " ", at + 1)) {
      const size_t v = at + k.size() + 1;
      if ((at == 0 || e.message[at - 1] == ' ') && v < e.message.size() && std::isdigit(static_cast<unsigned char>(e.message[v])))
        return true;
    }
    return false;
  };
  for (const std::string& k : {degree, "min_" + degree, "max_" + degree})
    if (conflict && k != key && names(k)) keys.push_back(k);
  if (keys.size() == 1) {
    if (args.has(flag_of_key(key))) e.message += " (from " + flag_of_key(key) + ")";
    return e;
  }
  std::string from;
  for (const std::string& k : keys)
    from += (from.empty() ? "" : ", ") + k + " from " + (args.has(flag_of_key(k)) ? flag_of_key(k) : "the job's plan block");
  e.message += " (" + from + ")";
  return e;
}

// Which flag set a constraint key, for error messages.
std::string flag_of_key(const std::string& key) {
  std::string f = "--" + key;
  for (char& ch : f)
    if (ch == '_') ch = '-';
  return f;
}

// The base job and the constraints: the config's JSON, its "plan" block,
// then the flags on top.
int load(const Args& args, Job* job, PlanConstraints* cons, int64_t* gpus, bool* job_plan_block) {
  if (!args.has("--gpus")) return usage_error(kCmd, "missing --gpus N");
  json j = json::object();
  if (const std::string* config = args.get("--config")) {
    Result<std::string> text = read_file(*config, kMaxJobFileBytes);
    if (!text.ok()) return report_error(kCmd, text.error());
    Result<json> parsed = jsonf::parse_text(*text);
    if (!parsed.ok()) {
      Error e = parsed.error();
      e.message = *config + ": " + e.message;
      return report_error(kCmd, e);
    }
    j = std::move(parsed).value();
  } else if (!args.has("--model")) {
    return usage_error(kCmd, "give --model PRESET or --config FILE");
  }
  if (!j.is_object()) return report_error(kCmd, make_error(ErrorCode::kInvalidArgument, "a job is a JSON object", ""));
  json planj = j.contains("plan") ? j["plan"] : json::object();
  // A block that constrains the layouts (top, objective and the reserve do not).
  *job_plan_block = false;
  if (planj.is_object())
    for (const auto& [k, v] : planj.items())
      if (k != "top" && k != "objective" && k != "memory_reserve_gib" && k != "memory_reserve_fraction")
        *job_plan_block = true;
  j.erase("plan");
  if (!planj.is_object())
    return report_error(kCmd, make_error(ErrorCode::kInvalidArgument, "must be an object", "plan"));
  if (const std::string* m = args.get("--model")) {
    if (!j.contains("model") || !j["model"].is_object()) j["model"] = json::object();
    j["model"].erase("hf_config");
    j["model"]["preset"] = *m;
  }
  auto section = [&](const char* name) -> json& {
    if (!j.contains(name) || !j[name].is_object()) j[name] = json::object();
    return j[name];
  };
  struct IntFlag { const char* flag; const char* sec; const char* key; };
  for (const IntFlag& f : {IntFlag{"--layers", "model", "num_layers"}, IntFlag{"--mtp-num-layers", "model", "mtp_num_layers"},
                           IntFlag{"--seq-len", "training", "seq_len"},
                           IntFlag{"--global-batch-size", "training", "global_batch_size"}}) {
    const std::string* v = args.get(f.flag);
    if (!v) continue;
    std::optional<int64_t> n = to_int(*v);
    if (!n) return usage_error(kCmd, int_flag_error(f.flag, *v));
    section(f.sec)[f.key] = *n;
  }
  if (const std::string* v = args.get("--dtype")) section("training")["dtype"] = *v;
  if (const std::string* v = args.get("--fp8-recipe")) section("training")["fp8_recipe"] = *v;
  if (const std::string* h = args.get("--hardware")) {
    if (j.contains("hardware") && j["hardware"].is_object()) j["hardware"]["preset"] = *h;
    else j["hardware"] = *h;
  }
  // The job's own keys go through the same parser as inspect / generate /
  // simulate first, so an unknown key (parallel.bogus) is refused with its
  // name even where the plan replaces the section's values.
  {
    Result<Job> whole = parse_job(j.dump());
    if (!whole.ok() && whole.error().code == ErrorCode::kUnknownField) return report_error(kCmd, whole.error());
  }
  // The plan needs the sequence length and the batch: the parser's
  // defaults (seq 2048, a batch of one micro-batch) would plan a job
  // nobody asked for.
  // Both missing: both named at once (not one, then the other on the next try).
  {
    std::vector<std::pair<const char*, const char*>> missing;
    for (const auto& [key, flag] : {std::pair<const char*, const char*>{"seq_len", "--seq-len"},
                                    std::pair<const char*, const char*>{"global_batch_size", "--global-batch-size"}}) {
      const bool given = j.contains("training") && j["training"].is_object() && j["training"].contains(key);
      if (!given && !(j.contains("mode") && j["mode"] == "inference")) missing.emplace_back(key, flag);
    }
    if (!missing.empty()) {
      std::string what;
      for (size_t i = 0; i < missing.size(); ++i)
        what += std::string(i ? " and " : "") + missing[i].second + " N (or the job's training." + missing[i].first + ")";
      return report_error(kCmd, make_error(ErrorCode::kInvalidArgument, "required by plan: give " + what,
                                           std::string("training.") + missing[0].first));
    }
  }
  // The router imbalance is the model's and its data's, not a layout's:
  // each candidate keeps it, capped at its ep (plan.cc, layout_job). The
  // base job, whose ep is gone, carries it without being validated against
  // ep 1; its range is checked here.
  double imbalance = 1.0;
  if (j.contains("parallel") && j["parallel"].is_object() && j["parallel"].contains("moe_imbalance")) {
    const json& v = j["parallel"]["moe_imbalance"];
    if (!v.is_number() || !(v.get<double>() >= 1.0) || !(v.get<double>() <= static_cast<double>(limits::kMaxDegree)))
      return report_error(kCmd, make_error(ErrorCode::kInvalidArgument,
                                           "moe_imbalance (" + v.dump() + ") must be a number >= 1: the busiest "
                                           "expert rank's tokens over the mean",
                                           "parallel.moe_imbalance"));
    imbalance = v.get<double>();
  }
  // What the plan chooses is not part of the base job.
  if (j.contains("parallel") && j["parallel"].is_object()) {
    json keep = json::object();
    if (j["parallel"].contains("cp_algorithm")) keep["cp_algorithm"] = j["parallel"]["cp_algorithm"];
    if (j["parallel"].contains("moe_dispatcher")) keep["moe_dispatcher"] = j["parallel"]["moe_dispatcher"];
    j["parallel"] = keep;
  }
  if (j.contains("training") && j["training"].is_object()) {
    json& t = j["training"];
    // recompute_modules are what the selective layouts recompute: kept, with
    // the "selective" they need to parse (the plan sets each layout's mode);
    // beside another mode the job is refused as inspect would refuse it.
    const bool modules = t.contains("recompute_modules") && (!t.contains("recompute") || t["recompute"] == "selective");
    for (const char* k : {"micro_batch_size", "schedule"}) t.erase(k);
    if (modules) t["recompute"] = "selective";
    else if (!t.contains("recompute_modules")) t.erase("recompute");
  }
  // The EP all-to-all overlap needs ep > 1, which the plan chooses per
  // layout (plan.cc, fit_ep_overlap): the base job, whose parallel block
  // is gone, carries the request without being validated against ep 1.
  bool ep_overlap = false, delay_wgrad = false;
  if (j.contains("training") && j["training"].is_object()) {
    json& t = j["training"];
    for (auto [key, out] : {std::pair<const char*, bool*>{"overlap_moe_expert_parallel_comm", &ep_overlap},
                            std::pair<const char*, bool*>{"delay_wgrad_compute", &delay_wgrad}})
      if (t.contains(key) && t[key].is_boolean()) {
        *out = t[key].get<bool>();
        t.erase(key);
      }
  }
  Result<Job> parsed = parse_job(j.dump());
  if (!parsed.ok()) {
    Error e = parsed.error();
    for (const auto& [path, flag] : {std::pair<const char*, const char*>{"training.dtype", "--dtype"},
                                     std::pair<const char*, const char*>{"training.fp8_recipe", "--fp8-recipe"},
                                     std::pair<const char*, const char*>{"training.seq_len", "--seq-len"},
                                     std::pair<const char*, const char*>{"training.global_batch_size", "--global-batch-size"},
                                     std::pair<const char*, const char*>{"model.num_layers", "--layers"},
                                     std::pair<const char*, const char*>{"model.mtp_num_layers", "--mtp-num-layers"},
                                     std::pair<const char*, const char*>{"hardware", "--hardware"},
                                     std::pair<const char*, const char*>{"model.preset", "--model"}})
      if (e.path == path && args.has(flag)) e.message += std::string(" (from ") + flag + ")";
    return report_error(kCmd, e);
  }
  *job = std::move(parsed).value();
  print_hf_warnings(kCmd, *job);
  job->training.overlap_moe_expert_parallel_comm = ep_overlap;
  job->training.delay_wgrad_compute = delay_wgrad;
  job->parallel.moe_imbalance = imbalance;

  // Constraint flags onto the plan block.
  for (int d = 0; d < kPlanDegrees; ++d) {
    const std::string n = kPlanDegreeNames[d];
    for (const std::string& key : {n, "min_" + n, "max_" + n}) {
      const std::string flag = flag_of_key(key);
      const std::string* v = args.get(flag);
      if (!v) continue;
      std::optional<int64_t> x = to_int(*v);
      if (!x) return usage_error(kCmd, int_flag_error(flag, *v));
      planj[key] = *x;
    }
  }
  for (const char* key : {"schedules", "recompute", "orders"})
    if (const std::string* v = args.get(flag_of_key(key))) planj[key] = split(*v);
  if (const std::string* v = args.get("--zero")) {
    json z = json::array();
    for (const std::string& s : split(*v)) {
      std::optional<int64_t> x = to_int(s);
      if (!x) return usage_error(kCmd, "--zero expects a list of 0..3 (got '" + *v + "')");
      z.push_back(*x);
    }
    planj["zero"] = z;
  }
  if (args.has("--memory-reserve-gib") && args.has("--memory-reserve-fraction"))
    return usage_error(kCmd, "give --memory-reserve-gib or --memory-reserve-fraction, not both");
  for (const char* key : {"memory_reserve_gib", "memory_reserve_fraction"})
    if (const std::string* v = args.get(flag_of_key(key))) {
      std::optional<double> x = to_double(*v);
      if (!x) return usage_error(kCmd, flag_of_key(key) + " expects a number (got '" + *v + "')");
      planj[key] = *x;
      planj.erase(std::string(key) == "memory_reserve_gib" ? "memory_reserve_fraction" : "memory_reserve_gib");
    }
  if (const std::string* v = args.get("--objective")) planj["objective"] = *v;
  if (const std::string* v = args.get("--top")) {
    std::optional<int64_t> x = to_int(*v);
    if (!x) return usage_error(kCmd, int_flag_error("--top", *v));
    planj["top"] = *x;
  }
  Result<PlanConstraints> pc = parse_plan_constraints(planj, "plan");
  if (!pc.ok()) return report_error(kCmd, with_sources(args, pc.error()));
  *cons = std::move(pc).value();
  const std::string* g = args.get("--gpus");
  if (!g) return usage_error(kCmd, "missing --gpus N");
  std::optional<int64_t> n = to_int(*g);
  if (!n || *n < 1 || *n > limits::kMaxDegree)
    return usage_error(kCmd, "--gpus expects an integer in [1, " + std::to_string(limits::kMaxDegree) +
                                 "], a job's largest world size (got '" + *g + "')");
  *gpus = *n;
  Budget b = engine_budget();
  b.max_engine_bytes = std::max(b.max_engine_bytes, kCliEngineBudgetBytes);
  set_engine_budget(b);
  return kExitOk;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string gib(int64_t b) { return fmt("%.1f", static_cast<double>(b) / (1024.0 * 1024.0 * 1024.0)); }

std::string pad(std::string s, size_t w, bool right = false) {
  if (s.size() >= w) return s;
  return right ? std::string(w - s.size(), ' ') + s : s + std::string(w - s.size(), ' ');
}

void print_text(const PlanResult& r, const Job& base, double seconds, const std::string& constraints) {
  const bool moe = base.model.is_moe();
  std::cout << "plan        " << base.model.name << " on " << r.gpus << " x " << base.hardware.name << ", seq "
            << base.training.seq_len << ", global batch " << base.training.global_batch_size << "; memory "
            << gib(r.usable_memory_bytes) << " of " << gib(r.memory_capacity_bytes) << " GiB usable per GPU\n";
  const PlanCounts& c = r.counts;
  std::cout << "searched    " << c.considered << " layouts"
            << (r.enumeration_stopped ? " (the enumeration was stopped: more exist)" : "") << ": " << c.divisibility << " do not divide, " << c.memory
            << " do not fit, " << c.dominated << " dominated, " << c.bound << " cut by the step-time bound, "
            << c.simulated << " simulated";
  if (c.unexamined > 0) std::cout << ", " << c.unexamined << " not examined";
  std::cout << " (" << fmt("%.1f", seconds) << " s)"
            << (r.complete ? "" : "; INCOMPLETE (interrupted or time limit): best so far") << "\n\n";
  if (r.candidates.empty() && !r.complete) {
    // Stopped: what fits is not known yet.
    std::cout << (c.simulated == 0 ? "nothing simulated yet: stopped before any layout was timed.\n"
                                   : "none of the layouts simulated so far fits; stopped before the rest.\n");
  } else if (r.candidates.empty() && c.considered == 0) {
    // Nothing to search: the constraints exclude every layout.
    std::cout << "no layout meets the search's constraints on " << r.gpus << " GPUs"
              << (constraints.empty() ? std::string() : " (" + constraints + ")")
              << ": nothing was searched; relax them (docs/plan.md, \"Constraints\").\n";
  } else if (r.candidates.empty()) {
    std::cout << "no layout fits on " << r.gpus << " GPUs.\n";
    if (r.min_gpus_lower_bound > 0)
      std::cout << "needs at least " << r.min_gpus_lower_bound
                << " GPUs: the weights, gradients and optimizer state alone, sharded over every GPU, fill the usable "
                   "memory of fewer (activations come on top).\n";
    // The smallest count that fits, searched for (docs/plan.md, "When nothing fits").
    if (const PlanResult::SmallestFit& sf = r.smallest_fit; sf.from > 0) {
      const int64_t node = base.hardware.gpus_per_node;
      const std::string counts = sf.every_count ? "every count from " + std::to_string(sf.from) + (sf.from < node ? " to " + std::to_string(node) + ", then whole nodes of " : " in whole nodes of ") + std::to_string(node)
                                                : "counts from " + std::to_string(sf.from) + " (whole nodes, then steps of an eighth)";
      if (sf.gpus > 0) {
        char mem[64];
        std::snprintf(mem, sizeof mem, "%.1f GiB of %.1f", sf.peak_memory_bytes / 1073741824.0, r.usable_memory_bytes / 1073741824.0);
        std::cout << "smallest fit: " << sf.gpus << " GPUs (" << counts << (sf.every_count ? "" : ": smaller ones were skipped")
                  << "), e.g. " << layout_label(sf.layout, moe) << " at " << mem << " GiB usable"
                  << (sf.largest_without > 0 ? "; " + std::to_string(sf.largest_without) + " GPUs fit nothing" : "")
                  << ": plan --gpus " << sf.gpus << " ranks its layouts.\n";
      } else if (sf.counts_tried == 0) {
        std::cout << "smallest fit: not looked for: stopped (time limit or interrupt) before the first count, "
                  << sf.from << " GPUs.\n";
      } else if (sf.largest_without == 0) {
        std::cout << "smallest fit: none found: no count from " << sf.from
                  << " could be searched (the constraints or the search's budget refuse it: plan --gpus "
                  << sf.from << " says why).\n";
      } else {
        std::cout << "smallest fit: none found (" << counts << ", " << sf.counts_tried << " tried, up to "
                  << sf.largest_without << " GPUs"
                  << (sf.stopped ? "; stopped by the time limit or an interrupt" : "") << ").\n";
      }
    }
  } else {
    size_t w = 6;
    for (const PlanCandidate& p : r.candidates) w = std::max(w, layout_label(p.layout, moe).size());
    std::cout << pad("#", 3) << pad("layout", w + 2) << pad("step s", 9, true) << pad("MFU", 7, true)
              << pad("tokens/s", 12, true) << pad("mem GiB", 9, true) << pad("bubble", 8, true)
              << "   exposed s: tp / cp / ep / pp / dp\n";
    for (size_t i = 0; i < r.candidates.size(); ++i) {
      const PlanCandidate& p = r.candidates[i];
      std::cout << pad(std::to_string(i + 1), 3) << pad(layout_label(p.layout, moe), w + 2)
                << pad(fmt("%.3f", p.step_seconds), 9, true) << pad(fmt("%.1f%%", 100 * p.mfu), 7, true)
                << pad(fmt("%.0f", p.tokens_per_second), 12, true) << pad(gib(p.peak_memory_bytes), 9, true)
                << pad(fmt("%.1f%%", 100 * p.bubble_fraction), 8, true) << "   ";
      for (int k = 0; k < 5; ++k) std::cout << (k ? " / " : "") << fmt("%.3f", p.exposed[k]);
      std::cout << "\n";
    }
    std::cout << "\n";
    for (size_t i = 0; i < r.candidates.size(); ++i) {
      std::cout << "#" << i + 1 << " " << r.candidates[i].bound << "\n";
      for (const PlanLayout& a : r.candidates[i].alternatives) {
        // What differs from the row: its recompute mode, its rank order, or both.
        const PlanLayout& row = r.candidates[i].layout;
        std::string what;
        if (a.recompute != row.recompute) what = "recompute " + std::string(recompute_name(a.recompute));
        if (a.order != row.order)
          what += (what.empty() ? "" : ", ") + std::string("order ") + order_name(a.order);
        std::cout << "   the same step with " << what << "\n";
      }
      for (const std::string& w : r.candidates[i].low_confidence) std::cout << "   low confidence: " << w << "\n";
    }
    std::cout << "why #1      " << r.why_winner << "\n";
  }
  if (!r.closest_misses.empty()) {
    std::cout << (r.candidates.empty() ? "closest misses:\n" : "faster layouts that do not fit:\n");
    for (const PlanMiss& m : r.closest_misses)
      std::cout << "  " << layout_label(m.layout, moe) << ": " << m.reason << "\n";
  }
}

void print_csv(const PlanResult& r) {
  std::cout << "rank,tp,sp,cp,pp,vp,schedule,dp,zero,shard_group,ep,expert_tp,recompute,micro_batch_size,order,"
               "step_seconds,mfu,tokens_per_second,tokens_per_second_per_gpu,peak_memory_bytes,"
               "memory_capacity_bytes,bubble_fraction,exposed_tp,exposed_cp,exposed_ep,exposed_pp,exposed_dp\n";
  for (size_t i = 0; i < r.candidates.size(); ++i) {
    const PlanCandidate& p = r.candidates[i];
    const PlanLayout& l = p.layout;
    std::string order;
    for (const std::string& a : l.order) order += (order.empty() ? "" : "-") + a;
    std::cout << i + 1 << "," << l.tp << "," << (l.sp ? "true" : "false") << "," << l.cp << "," << l.pp << ","
              << l.vp << "," << schedule_name(l.schedule) << "," << l.dp << "," << l.zero << "," << l.shard_group
              << "," << l.ep << "," << l.expert_tp << "," << recompute_name(l.recompute) << "," << l.mbs << ","
              << order << "," << fmt("%.9g", p.step_seconds) << "," << fmt("%.9g", p.mfu) << ","
              << fmt("%.9g", p.tokens_per_second) << "," << fmt("%.9g", p.tokens_per_second_per_gpu) << ","
              << p.peak_memory_bytes << "," << p.memory_capacity_bytes << "," << fmt("%.9g", p.bubble_fraction);
    for (double e : p.exposed) std::cout << "," << fmt("%.9g", e);
    std::cout << "\n";
  }
}

// Progress on stderr: the plan's phases (estimate, simulate), drawn like
// generate's (cli/progress.h: a bar on a terminal, else a line every
// STAGECRAFT_PROGRESS_INTERVAL seconds).
class PlanProgress {
 public:
  explicit PlanProgress(Progress::Mode mode) : mode_(mode), start_(std::chrono::steady_clock::now()), last_(start_) {
    interval_ = mode == Progress::Mode::kBar ? 0.2 : 10.0;
    if (const char* e = std::getenv("STAGECRAFT_PROGRESS_INTERVAL")) interval_ = std::atof(e);
  }
  void update(int64_t done, int64_t total, const std::string& phase) {
    if (mode_ == Progress::Mode::kQuiet) return;
    auto now = std::chrono::steady_clock::now();
    const double el = std::chrono::duration<double>(now - start_).count();
    // The phase's own pace, from its first update (printed or not) and the
    // count then; the last time the count moved.
    if (phase != phase_) {
      phase_ = phase;
      phase_start_ = el;
      phase_done0_ = done;
      moved_ = el;
      last_done_ = done;
    } else if (done != last_done_) {
      last_done_ = done;
      moved_ = el;
    }
    if (std::chrono::duration<double>(now - last_).count() < interval_ && done < total) return;
    last_ = now;
    const int pct = total > 0 ? static_cast<int>(100.0 * done / total) : 100;
    // Left, in validation and the estimates: the remaining share at the
    // phase's rate since its first update (not its first line printed,
    // which made every first line say "about 0s left"); an estimate the
    // run has outlived (the count still for longer than it said was left)
    // says the time is not known yet. The simulate step gets no time: its
    // count moves by the layouts the bound cuts (no time each) as much as
    // by those simulated, so a pace said "about 0s left" for most of a 9 s
    // step; it says how many layouts are still to decide instead.
    std::string eta;
    const double ran = el - phase_start_;
    if (phase == "simulate" && done < total) {
      eta = ", " + std::to_string(total - done) + " left to decide (simulate or cut by the bound)";
    } else if (done > phase_done0_ && done < total && ran > 0) {
      const double left = ran * static_cast<double>(total - done) / static_cast<double>(done - phase_done0_);
      eta = el - moved_ > left ? ", time left in " + phase + " not known yet"
                               : ", about " + Progress::format_eta(left) + " left in " + phase;
    }
    if (mode_ == Progress::Mode::kBar) {
      char bar[29];
      const int fill = total > 0 ? static_cast<int>(28 * done / total) : 28;
      for (int i = 0; i < 28; ++i) bar[i] = i < fill ? '#' : '.';
      bar[28] = 0;
      std::fprintf(stderr, "\r\033[K%3d%% [%s] %s %lld/%lld  %s elapsed%s", pct, bar, phase.c_str(),
                   static_cast<long long>(done), static_cast<long long>(total), Progress::format_eta(el).c_str(),
                   eta.c_str());
      drawn_ = true;
    } else if (el >= interval_) {
      std::fprintf(stderr, "progress: %s %lld/%lld (%d%%), %s elapsed%s\n", phase.c_str(),
                   static_cast<long long>(done), static_cast<long long>(total), pct, Progress::format_eta(el).c_str(),
                   eta.c_str());
    }
    std::fflush(stderr);
  }
  void finish() {
    if (drawn_) std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }

 private:
  Progress::Mode mode_;
  std::chrono::steady_clock::time_point start_, last_;
  double interval_;
  bool drawn_ = false;
  std::string phase_;
  double phase_start_ = 0, moved_ = 0;
  int64_t phase_done0_ = 0, last_done_ = 0;
};

// Tests (tests/ctest/cli_plan.sh): STAGECRAFT_TEST_PAUSE holds the search
// at a point until a signal (or the time limit's cancel) arrives, so an
// interrupt lands in a given phase whatever the machine's speed:
// plan-validate (before anything is estimated), plan-estimate (after the
// first estimate), plan-simulate (after the first layout is decided),
// plan-simulate-N (after N are decided).
void plan_test_pause(const std::string& phase, int64_t done) {
  static const char* want = std::getenv("STAGECRAFT_TEST_PAUSE");
  if (!want || std::strncmp(want, "plan-", 5) != 0) return;
  const std::string w = want;
  bool hit = false;
  if (w == "plan-" + phase) hit = phase == "validate" || done >= 1;
  else if (phase == "simulate" && w.rfind("plan-simulate-", 0) == 0)
    hit = done >= std::atoll(w.c_str() + std::strlen("plan-simulate-"));
  if (!hit) return;
  static bool paused = false;
  if (paused) return;
  paused = true;
  std::fprintf(stderr, "stagecraft: test pause at %s\n", want);
  std::fflush(stderr);
  for (int i = 0; i < 6000 && !pending_signal() && !cancel_requested(); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
}

// --export-best's OUT and options; checked before the search as well, so
// a bad OUT is said at once, not after minutes of search.
ExportOptions export_options(const Args& args) {
  fs::path dir = fs::path(*args.get("-o")).lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();
  ExportOptions opt;
  opt.out = dir;
  opt.format = format_for(dir.string());
  opt.force = args.has("--force");
  opt.progress = args.has("--quiet") ? ProgressMode::kQuiet : ProgressMode::kAuto;
  return opt;
}

int export_best(const Args& args, const PlanResult& r) {
  if (r.candidates.empty()) return report_error(kCmd, make_error(ErrorCode::kInvalidArgument, "no layout fits: nothing to export", "--export-best"));
  ExportOptions opt = export_options(args);
  const fs::path dir = opt.out;
  bool replace = false;
  if (Status st = check_output(dir, opt.format, opt.force, &replace); !st.ok()) return report_error(kCmd, st.error());
  // The size check generate makes, before the build (plan writes every
  // rank: generate with the winner's job writes a subset).
  opt.ranks = all_ranks(std::max<int64_t>(1, r.candidates.front().job.parallel.world_size()));
  if (Status st = check_output_budget(r.candidates.front().job, opt, args.has("--allow-large")); !st.ok()) {
    Error e = st.error();
    e.message += " (plan --export-best writes every rank; generate --config with the winner's job, plan --json's "
                 "candidates[0].job, writes a subset with --ranks)";
    return report_error(kCmd, e);
  }
  int rc = kExitOk;
  std::optional<Generator> gen = build_generator(kCmd, r.candidates.front().job, &rc);
  if (!gen) return rc;
  opt.ranks = all_ranks(gen->world_size());
  Result<RankEncoder> enc = RankEncoder::create(*gen);
  if (!enc.ok()) return report_error(kCmd, enc.error());
  ExportStats stats;
  Status s = run_export(*gen, *enc, opt, &stats);
  if (!s.ok()) {
    exit_if_signalled(kCmd, " during --export-best: nothing was written to " + dir.string());
    return report_error(kCmd, s.error());
  }
  std::cerr << "stagecraft plan: wrote the winner's " << stats.ranks << " ranks to " << dir.string() << "\n";
  return kExitOk;
}

// The phase the search is in (the progress callback's), for plan_activity().
std::atomic<const char*> g_phase{nullptr};

}  // namespace

std::string plan_activity() {
  const char* ph = g_phase.load();
  return ph ? std::string("searching layouts (") + ph + " phase)" : std::string("reading the job and enumerating layouts");
}

int cmd_plan(const std::vector<std::string>& argv) {
  std::vector<FlagSpec> flag_specs = specs();
  Args args;
  if (std::optional<int> rc = parse_or_exit(kCmd, argv, flag_specs, kUsage, &args)) return *rc;
  if (!args.positional.empty()) return usage_error(kCmd, "unexpected argument '" + args.positional[0] + "'");
  if (args.has("--json") && args.has("--csv")) return usage_error(kCmd, "give --json or --csv, not both");
  if (args.has("--export-best") && !args.has("-o")) return usage_error(kCmd, "--export-best needs -o OUT");
  if (args.has("-o") && !args.has("--export-best")) return usage_error(kCmd, "-o is for --export-best");
  Job base;
  PlanOptions o;
  bool job_plan_block = false;
  if (int rc = load(args, &base, &o.constraints, &o.gpus, &job_plan_block); rc != kExitOk) return rc;
  if (args.has("--allow-large")) {
    Budget b = engine_budget();
    b.max_engine_bytes = std::max<int64_t>(b.max_engine_bytes, int64_t{32} << 30);
    set_engine_budget(b);
  }
  o.threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (const std::string* t = args.get("--threads")) {
    std::optional<int64_t> n = to_int(*t);
    if (!n || *n < 1 || *n > 256) return usage_error(kCmd, "--threads must be an integer 1..256 (got '" + *t + "')");
    o.threads = static_cast<int>(*n);
  }
  if (const std::string* t = args.get("--time-limit")) {
    const double v = to_double(*t).value_or(0);
    // Past 10^6 s (11 days) the deadline's clock arithmetic would overflow.
    if (!(v > 0) || v > 1e6)
      return usage_error(kCmd, "--time-limit must be a number of seconds in (0, 1e6] (got '" + *t + "')");
    o.time_limit_seconds = v;
  }
  if (args.has("--export-best")) {  // OUT checked now, not after the search
    const ExportOptions eo = export_options(args);
    bool replace = false;
    if (Status st = check_output(eo.out, eo.format, eo.force, &replace); !st.ok()) return report_error(kCmd, st.error());
  }
  Progress::Mode mode = Progress::auto_mode();
  if (const std::string* m = args.get("--progress")) {
    if (*m == "bar") mode = Progress::Mode::kBar;
    else if (*m == "lines") mode = Progress::Mode::kLines;
    else if (*m == "none") mode = Progress::Mode::kQuiet;
    else return usage_error(kCmd, "--progress must be bar, lines or none (got '" + *m + "')");
  }
  if (args.has("--quiet")) mode = Progress::Mode::kQuiet;
  PlanProgress bar(mode);
  o.progress = [&](int64_t d, int64_t t, const std::string& ph) {
    bar.update(d, t, ph);
    g_phase = ph == "validate" ? "validate" : ph == "estimate" ? "estimate" : "simulate";
    plan_test_pause(ph, d);
  };
  install_signal_cleanup();  // SIGINT/SIGTERM: the search stops and prints its best so far
  const auto start = std::chrono::steady_clock::now();
  // --time-limit: the search checks the clock between steps; this watch
  // also cancels a build or simulation in flight at the limit (base/cancel.h).
  std::mutex watch_mu;
  std::condition_variable watch_cv;
  bool watch_done = false, timed_out = false;
  // A Workers group: were plan() to throw (std::bad_alloc), the watch is
  // stopped and joined while unwinding, not left joinable (std::terminate).
  Workers watch([&] {
    {
      std::lock_guard<std::mutex> lk(watch_mu);
      watch_done = true;
    }
    watch_cv.notify_all();
  });
  if (o.time_limit_seconds > 0)
    watch.spawn([&] {
      std::unique_lock<std::mutex> lk(watch_mu);
      if (!watch_cv.wait_for(lk, std::chrono::duration<double>(o.time_limit_seconds), [&] { return watch_done; })) {
        timed_out = true;
        request_cancel();
      }
    });
  Result<PlanResult> r = plan(base, o);
  if (o.time_limit_seconds > 0) {
    watch.stop();
    watch.join();
    if (timed_out && pending_signal() == 0) clear_cancel();  // --export-best still builds the winner
  }
  bar.finish();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!r.ok()) return report_error(kCmd, with_sources(args, r.error()));
  if (args.has("--json")) std::cout << plan_json(*r);
  else if (args.has("--csv")) print_csv(*r);
  else {
    std::string constraints;  // the layout constraints given as flags, as typed
    for (const char* f : {"--tp", "--pp", "--cp", "--dp", "--ep", "--vp", "--mbs", "--min-tp", "--max-tp", "--min-pp",
                          "--max-pp", "--min-cp", "--max-cp", "--min-dp", "--max-dp", "--min-ep", "--max-ep", "--min-vp",
                          "--max-vp", "--min-mbs", "--max-mbs", "--schedules", "--recompute", "--zero", "--orders"})
      if (args.has(f)) constraints += (constraints.empty() ? "" : " ") + std::string(f) + " " + *args.get(f);
    if (job_plan_block) constraints += constraints.empty() ? "the job's plan block" : " and the job's plan block";
    print_text(*r, base, seconds, constraints);
  }
  std::cout.flush();
  if (!r->complete && pending_signal() == 0) {
    std::cerr << "stagecraft plan: stopped at the time limit (" << o.time_limit_seconds
              << " s); printed the best found so far\n";
    // The limit bounds the whole command: writing thousands of ranks would
    // run past it.
    if (args.has("--export-best")) {
      std::cerr << "stagecraft plan: --export-best not written: the time limit stopped the search; export the best so "
                   "far with generate (its job is in plan --json's candidates[0].job)\n";
      return kExitError;
    }
  } else if (!r->complete) {
    exit_if_signalled(kCmd, "; printed the best found so far");
    return kExitError;
  } else {
    // A complete search, then a signal while it looked for the smallest
    // GPU count that fits (docs/plan.md, "When nothing fits").
    exit_if_signalled(kCmd, " while looking for the smallest GPU count that fits; printed the search's answer");
  }
  if (args.has("--export-best")) return export_best(args, *r);
  return r->candidates.empty() ? kExitError : kExitOk;
}

}  // namespace sc::cli
