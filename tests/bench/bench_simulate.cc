// stagecraft_bench_simulate: speed of `simulate` (issue 11). Not a test: it
// prints figures; docs/performance.md records them and the command.
//
//   build/native/stagecraft_bench_simulate [--dp 4,16,128] [--repeat 3] [--exhaustive-max 512]
//   build/native/stagecraft_bench_simulate --moe 1 [--dp 64,1024] [--repeat 3]
//
// Llama-3-405B-class job (126 layers, tp 8, pp 16 with 7/8.../8/7 layers,
// seq 8192, micro-batch 1, 16 micro-batches per rank, SP, 1F1B, H100) at
// world 128·dp. Per size: the time to build the programs (Generator::create:
// graph, lowering; summary.json already runs one simulation), then the
// best of --repeat runs of simulate with symmetry; up to --exhaustive-max
// ranks also the exhaustive run (every rank simulated), the baseline the
// symmetric run is compared with in the same process: same step time,
// and the speed-up.
//
// --moe 1: a DeepSeek-V3-class dropless MoE job (the deepseek-v3 preset at
// 64 layers, tp 1, pp 16, ep 64 folded into dp, expert tp 1, ZeRO 1, seq
// 4096, 8 micro-batches per rank, H100) whose simulation runs the host
// timeline (docs/simulate.md, "The host"); the baseline measured in the
// same run is the same job with host_sync_micros 0 (no host timeline):
// both times, their ratio and the step each gives.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "api/api.h"
#include "api/simulate.h"

using clk = std::chrono::steady_clock;

namespace {

double since(clk::time_point t) { return std::chrono::duration<double>(clk::now() - t).count(); }

std::vector<int64_t> parse_list(const std::string& s) {
  std::vector<int64_t> v;
  size_t at = 0;
  while (at < s.size()) {
    size_t c = s.find(',', at);
    if (c == std::string::npos) c = s.size();
    v.push_back(std::atoll(s.substr(at, c - at).c_str()));
    at = c + 1;
  }
  return v;
}

// The best of `repeat` fresh simulations with options o.
double best_of(const sc::Generator& g, sc::SimulateOptions o, int repeat, sc::SimulateReport* out) {
  double best = 1e30;
  o.reuse_summary = false;  // time the simulation, not the summary's cached one
  for (int r = 0; r < repeat; ++r) {
    auto t = clk::now();
    sc::Result<sc::SimulateReport> x = sc::simulate(g, o);
    best = std::min(best, since(t));
    if (!x.ok()) {
      std::fprintf(stderr, "%s\n", x.error().to_string().c_str());
      std::exit(1);
    }
    *out = *x;
  }
  return best;
}

// The generator of a job given as JSON; exits naming the error. *create:
// the seconds Generator::create took.
sc::Generator build(const std::string& json, double* create) {
  sc::Result<sc::Job> job = sc::parse_job(json);
  if (!job.ok()) {
    std::fprintf(stderr, "%s\n", job.error().to_string().c_str());
    std::exit(1);
  }
  auto t0 = clk::now();
  sc::Result<sc::Generator> gen = sc::Generator::create(*job);
  if (!gen.ok()) {
    std::fprintf(stderr, "%s\n", gen.error().to_string().c_str());
    std::exit(1);
  }
  *create = since(t0);
  return std::move(*gen);
}

int bench_moe(const std::vector<int64_t>& dps, int repeat) {
  std::printf("%8s %10s %10s %12s %7s %10s %12s %12s\n", "ranks", "create_s", "host_s", "no_host_s", "ratio",
              "syncs", "step_host_s", "step_none_s");
  for (int64_t dp : dps) {
    const std::string json =
        "{\"model\": {\"preset\": \"deepseek-v3\", \"num_layers\": 64}, \"parallel\": {\"tp\": 1, \"pp\": 16, "
        "\"dp\": " + std::to_string(dp) + ", \"ep\": 64, \"expert_tp\": 1, \"zero\": 1}, \"training\": {\"seq_len\": 4096, "
        "\"micro_batch_size\": 1, \"global_batch_size\": " + std::to_string(8 * dp) + "}, \"hardware\": \"h100\"}";
    double create = 0;
    const sc::Generator gen = build(json, &create);
    sc::SimulateReport with, none;
    const double h = best_of(gen, {}, repeat, &with);
    sc::SimulateOptions off;
    off.host_sync_micros = 0;
    const double n = best_of(gen, off, repeat, &none);
    if (with.host_sync_micros <= 0 || with.sim.stages.empty() || with.sim.stages[0].host_syncs == 0) {
      std::fprintf(stderr, "no host timeline ran\n");
      return 1;
    }
    std::printf("%8lld %10.3f %10.3f %12.3f %6.2fx %10lld %12.4f %12.4f\n",
                static_cast<long long>(gen.world_size()), create, h, n, h / n,
                static_cast<long long>(with.sim.stages[0].host_syncs), with.step_seconds, none.step_seconds);
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<int64_t> dps = {4, 16, 128};
  int repeat = 3;
  int64_t exhaustive_max = 512;
  bool moe = false, dp_given = false;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string k = argv[i], v = argv[i + 1];
    if (k == "--dp") dps = parse_list(v), dp_given = true;
    else if (k == "--repeat") repeat = std::max(1, std::atoi(v.c_str()));
    else if (k == "--exhaustive-max") exhaustive_max = std::atoll(v.c_str());
    else if (k == "--moe") moe = std::atoi(v.c_str()) != 0;
    else {
      std::fprintf(stderr, "unknown flag %s\n", k.c_str());
      return 2;
    }
  }
  if (moe) return bench_moe(dp_given ? dps : std::vector<int64_t>{64, 1024}, repeat);
  std::string layout = "[7";
  for (int i = 0; i < 14; ++i) layout += ",8";
  layout += ",7]";
  std::printf("%8s %10s %10s %8s %10s %12s %12s %9s\n", "ranks", "create_s", "simulate_s", "classes", "nodes",
              "step_s", "exhaustive_s", "speedup");
  for (int64_t dp : dps) {
    const std::string json =
        "{\"model\": {\"preset\": \"llama3-405b\"}, \"parallel\": {\"tp\": 8, \"pp\": 16, \"dp\": " +
        std::to_string(dp) + ", \"sequence_parallel\": true, \"pipeline_layout\": " + layout +
        "}, \"training\": {\"seq_len\": 8192, \"micro_batch_size\": 1, \"global_batch_size\": " +
        std::to_string(16 * dp) + "}, \"hardware\": \"h100\"}";
    double create = 0;
    const sc::Generator gen = build(json, &create);
    sc::SimulateReport rep;
    const double best = best_of(gen, {}, repeat, &rep);
    std::string exh = "-", speed = "-";
    if (gen.world_size() <= exhaustive_max) {
      sc::SimulateOptions o;
      o.exhaustive = true;
      auto t = clk::now();
      sc::Result<sc::SimulateReport> x = sc::simulate(gen, o);
      const double e = since(t);
      if (!x.ok()) return 1;
      char b[64];
      std::snprintf(b, sizeof b, "%.3f", e);
      exh = b;
      std::snprintf(b, sizeof b, "%.1fx", e / best);
      speed = b;
      if (x->sim.step != rep.sim.step) {
        std::fprintf(stderr, "exhaustive step %.3f us != symmetric %.3f us\n", x->sim.step, rep.sim.step);
        return 1;
      }
    }
    std::printf("%8lld %10.3f %10.3f %8lld %10lld %12.4f %12s %9s\n", static_cast<long long>(gen.world_size()),
                create, best, static_cast<long long>(rep.sim.classes), static_cast<long long>(rep.sim.nodes_simulated),
                rep.step_seconds, exh.c_str(), speed.c_str());
    std::fflush(stdout);
  }
  return 0;
}
