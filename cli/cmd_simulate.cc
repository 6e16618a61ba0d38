// stagecraft simulate: the step time of the whole job (docs/simulate.md),
// from the same per-rank programs the traces hold. Same job inputs as
// inspect; the network is the job's "network" block (docs/job-format.md).
#include <iostream>

#include "api/api.h"
#include "api/simulate.h"
#include "args.h"
#include "commands.h"

namespace sc::cli {
namespace {

const char* kCmd = "simulate";
const char* kUsage =
    "usage: stagecraft simulate (--model PRESET | --config job.json) [overrides]\n"
    "                           [--exhaustive] [--astra] [--json] [--timeline]\n"
    "\n"
    "Simulates one training step of every rank with Megatron-LM's streams (tp,\n"
    "cp, ep collectives and pipeline sends on the compute stream, dp reductions\n"
    "beside it, slowing compute by the SMs they take) on the job's network\n"
    "(its \"network\" block, defaults from the hardware profile) and prints the\n"
    "step time, MFU, tokens per second, per-stage busy / bubble / exposed\n"
    "communication by kind, and the critical path. Ranks that are alike are\n"
    "simulated once; --exhaustive simulates every rank. --astra follows\n"
    "ASTRA-sim's analytical backend (one compute and one communication stream\n"
    "per rank) on the network an export writes.";

}  // namespace

int cmd_simulate(const std::vector<std::string>& argv) {
  std::vector<FlagSpec> specs = job_flags();
  specs.push_back({"--exhaustive", nullptr, false, "", "simulate every rank, not one per symmetry class"});
  specs.push_back({"--astra", nullptr, false, "", "ASTRA-sim analytical rules on the exported astra-sim/ network"});
  specs.push_back({"--json", nullptr, false, "", "print the result as JSON"});
  specs.push_back({"--timeline", nullptr, false, "", "with --json: per-stage intervals of rank 0's pipeline"});
  Args args;
  if (std::optional<int> rc = parse_or_exit(kCmd, argv, specs, kUsage, &args)) return *rc;
  if (!args.positional.empty()) return usage_error(kCmd, "unexpected argument '" + args.positional[0] + "'");
  if (args.has("--timeline") && !args.has("--json")) return usage_error(kCmd, "--timeline needs --json");
  Job job;
  if (int rc = load_job(kCmd, args, &job); rc != kExitOk) return rc;
  Result<Generator> gen = Generator::create(job);
  if (!gen.ok()) return report_error(kCmd, gen.error());
  SimulateOptions o;
  o.exhaustive = args.has("--exhaustive");
  o.astra = args.has("--astra");
  o.timeline = args.has("--timeline");
  Result<SimulateReport> r = simulate(*gen, o);
  if (!r.ok()) return report_error(kCmd, r.error());
  std::cout << (args.has("--json") ? simulate_json(*r) : simulate_text(*r));
  return kExitOk;
}

}  // namespace sc::cli
