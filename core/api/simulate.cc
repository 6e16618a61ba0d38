#include "api/simulate.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string_view>

#include <nlohmann/json.hpp>

#include "api/state.h"

namespace sc {
namespace {

using json = nlohmann::json;

// The dispatch collective the host waits for: the first of a forward MoE
// layer's dispatch collectives (DeepEP's RDMA and NVLink legs are two).
bool host_sync_suffix(std::string_view x) {
  return x.starts_with("fwd.") && x.find(".moe.dispatch.") != std::string_view::npos;
}

// Node names are "[mbN.]fwd|bwd|opt.<op name>[.stepJ|.kv_sendJ|...]"
// (trace/lower.cc). Zero-bubble moves weight-gradient GEMMs into W steps.
// Micro-batches only for a timeline (its only reader).
void label_nodes(const BuiltJob& s, int64_t stage, bool micro_batches, bool host, SimStage* out) {
  const Graph& g = s.graph_of(stage);
  const RoleProgram& p = s.program_of(stage);
  std::set<std::string, std::less<>> wgrad;
  if (s.job.training.schedule == Schedule::kZeroBubble)
    for (const Op& o : g.ops)
      if (o.wgrad) wgrad.insert(o.name);
  out->program = &p;
  out->phase.resize(p.nodes.size());
  if (micro_batches) out->micro_batch.resize(p.nodes.size());
  const auto phase_of = [&](std::string_view rest) {
    if (rest.starts_with("opt.")) return SimPhase::kOptimizer;
    if (rest.starts_with("bwd.")) return wgrad.count(rest.substr(4)) ? SimPhase::kWeight : SimPhase::kBackward;
    return SimPhase::kForward;
  };
  // Per name suffix (shared by the micro-batches), then per node. With a
  // host, the dispatch collective the host waits for: the first of a run
  // of them (DeepEP's RDMA and NVLink legs).
  std::vector<SimPhase> suffix_phase;
  std::vector<uint8_t> suffix_sync;
  suffix_phase.reserve(p.name_suffixes.size());
  for (const std::string& x : p.name_suffixes) {
    suffix_phase.push_back(phase_of(x));
    if (host) suffix_sync.push_back(host_sync_suffix(x) ? 1 : 0);
  }
  if (host) out->host_sync.assign(p.nodes.size(), 0);
  bool prev = false;  // the node before was a dispatch collective
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    if (micro_batches) out->micro_batch[i] = p.micro_batch_of(i);
    const bool shared = i < p.name_ref.size() && p.name_ref[i] != RoleProgram::kStoredName;
    out->phase[i] = shared ? suffix_phase[p.name_ref[i]] : phase_of(p.name_suffix(i));
    if (!host) continue;
    const bool sync = p.nodes[i].kind == TraceNodeKind::kCollective &&
                      (shared ? suffix_sync[p.name_ref[i]] != 0 : host_sync_suffix(p.name_suffix(i)));
    out->host_sync[i] = sync && !prev ? 1 : 0;
    prev = sync;
  }
}

double round3(double v) { return std::round(v * 1000.0) / 1000.0; }
double sig(double v) {  // 9 significant digits: stable, readable
  if (v == 0 || !std::isfinite(v)) return 0;
  char b[40];
  std::snprintf(b, sizeof b, "%.9g", v);
  return std::strtod(b, nullptr);
}

}  // namespace

Result<SimulateReport> simulate_state(const GeneratorState& s, const SimulateOptions& o) {
  // The summary already simulated the job with the default options.
  if (s.default_simulation && o.reuse_summary && !o.exhaustive && !o.astra && !o.timeline && o.comm_sm_share_domain < 0 &&
      o.comm_sm_share_scale_out < 0 && o.host_sync_micros < 0 && o.host_launch_micros < 0)
    return *s.default_simulation;
  return simulate_built(s, o);
}

Result<SimulateReport> simulate_built(const BuiltJob& s, const SimulateOptions& o) {
  const Job& job = s.job;
  const int64_t world = s.layout.world_size();
  SimulateReport r;
  r.astra = o.astra;
  r.exhaustive = o.exhaustive;
  SC_ASSIGN_OR_RETURN(r.network, resolve_network(job, world, o.astra));
  r.network.deepep_legs = s.layout.has_groups("ep_rdma");
  if (o.comm_sm_share_domain >= 0) r.network.comm_sm_share_domain = o.comm_sm_share_domain;
  if (o.comm_sm_share_scale_out >= 0) r.network.comm_sm_share_scale_out = o.comm_sm_share_scale_out;
  std::vector<SimStage> stages(static_cast<size_t>(s.num_stages()));
  const double host_us = o.host_sync_micros >= 0 ? o.host_sync_micros : job.hardware.host_sync_micros;
  const bool host = !o.astra && host_us > 0 && job.dispatcher_syncs_host();
  for (int64_t st = 0; st < s.num_stages(); ++st)
    label_nodes(s, st, o.timeline, host, &stages[static_cast<size_t>(st)]);
  const int64_t max_key = s.groups.empty() ? 0 : s.groups.rbegin()->first;
  SimOptions so;
  so.exhaustive = o.exhaustive;
  so.timeline = o.timeline;
  so.streams = o.astra ? SimStreams::kAstra : SimStreams::kMegatron;
  so.host_sync_micros = host ? host_us : 0;
  r.host_sync_micros = so.host_sync_micros;
  // Training jobs only: serving has its own host costs (docs/inference.md).
  const double launch_us = o.host_launch_micros >= 0 ? o.host_launch_micros : job.hardware.host_launch_micros;
  so.host_launch_micros = !o.astra && !job.inference() && launch_us > 0 ? launch_us : 0;
  r.host_launch_micros = so.host_launch_micros;
  SC_ASSIGN_OR_RETURN(r.sim, simulate_programs(stages, s.layout, max_key, r.network, so));

  // Model FLOPs per step, as flops.model_per_iteration (api/summary.cc).
  const int64_t m = job.training.num_micro_batches(job.parallel);
  double flops = 0;
  for (int64_t st = 0; st < s.num_stages(); ++st)
    for (int id : s.graph_of(st).order) {
      const Op& op = s.graph_of(st).ops[id];
      if (op.phase == Phase::kOptimizer || op.model_flops.is_zero()) continue;
      SC_ASSIGN_OR_RETURN(int64_t f, op.model_flops.eval(s.bind, op.name + " flops"));
      flops += static_cast<double>(f) * static_cast<double>(m);
    }
  r.model_flops = flops;
  r.peak_flops = job.hardware.peak_for(job.training.dtype);
  r.step_seconds = r.sim.step / 1e6;
  if (r.step_seconds > 0) {
    r.mfu = flops / (static_cast<double>(world) * r.peak_flops * r.step_seconds);
    r.tokens_per_second = static_cast<double>(job.training.global_batch_size) *
                          static_cast<double>(job.training.seq_len) / r.step_seconds;
    double bubble = 0;
    for (const SimStageResult& x : r.sim.stages) {
      bubble += x.bubble;
      for (int k = 0; k < kNumCommKinds; ++k) r.exposed_comm_seconds[k] += x.exposed[k] / 1e6;
    }
    const double n = static_cast<double>(r.sim.stages.size());
    r.bubble_fraction = bubble / n / r.sim.step;
    for (double& e : r.exposed_comm_seconds) e /= n;
  }
  return r;
}

Result<SimulateReport> simulate(const Generator& g, const SimulateOptions& o) {
  return simulate_state(GeneratorAccess::state(g), o);
}

namespace {

json network_json(const NetworkModel& n) {
  if (n.astra) {
    json dims = json::array();
    for (const AstraDim& d : n.dims)
      dims.push_back({{"topology", d.topology}, {"npus", d.npus}, {"bandwidth_gbs", d.bandwidth_gbs},
                      {"latency_ns", d.latency_ns}});
    return {{"model", "astra-sim"}, {"dimensions", dims}, {"endpoint_delay_ns", kAstraEndpointDelayNs},
            {"dataset_splits", kAstraDatasetSplits}, {"local_mem_bw_gbs", sig(n.local_mem_bw * 1e6 / 1e9)}};
  }
  json out = {{"model", "default"},
          {"domain_size", n.domain_size},
          {"domain_bandwidth_gbs", sig(n.domain_bw * 1e6 / 1e9)},
          {"domain_latency_us", sig(n.domain_lat)},
          {"scale_out_bandwidth_gbs", sig(n.scale_out_bw * 1e6 / 1e9)},
          {"scale_out_latency_us", sig(n.scale_out_lat)},
          {"oversubscription", sig(n.oversubscription)},
          {"algorithm", n.algorithm},
          {"nodes", n.nodes},
          {"streams", "megatron"},
          {"comm_sm_share_domain", sig(n.comm_sm_share_domain)},
          {"comm_sm_share_scale_out", sig(n.comm_sm_share_scale_out)}};
  if (n.dispatcher_sm_share > 0) out["dispatcher_sm_share"] = sig(n.dispatcher_sm_share);  // DeepEP's SMs (training)
  if (n.dispatcher_overlap_rate < 1)  // DeepEP's pace beside compute (training)
    out["dispatcher_overlap_rate"] = sig(n.dispatcher_overlap_rate);
  return out;
}

json kinds_json(const double* v, double scale) {
  json o = json::object();
  for (int k = 0; k < kNumCommKinds; ++k) o[kCommKinds[k]] = sig(v[k] * scale);
  return o;
}

}  // namespace

std::string simulate_json(const SimulateReport& r) {
  json stages = json::array();
  for (const SimStageResult& s : r.sim.stages) {
    json st = {{"stage", s.stage},
               {"rank", s.rank},
               {"busy_seconds", sig(s.busy / 1e6)},
               {"bubble_seconds", sig(s.bubble / 1e6)},
               {"exposed_comm_seconds", kinds_json(s.exposed, 1e-6)},
               {"end_seconds", sig(s.end / 1e6)}};
    if (r.host_sync_micros > 0) st["host_syncs"] = s.host_syncs;
    if (!s.timeline.empty()) {
      json iv = json::array();
      for (const SimInterval& x : s.timeline) {
        json e = {round3(x.start), round3(x.end), x.kind, x.micro_batch};
        if (x.exposed >= 0) e.push_back(static_cast<int>(x.exposed));  // communication: 1 exposed, 0 hidden
        iv.push_back(std::move(e));
      }
      st["timeline"] = iv;
    }
    stages.push_back(st);
  }
  json out = {{"step_seconds", sig(r.step_seconds)},
              {"mfu", sig(r.mfu)},
              {"tokens_per_second", sig(r.tokens_per_second)},
              {"bubble_fraction", sig(r.bubble_fraction)},
              {"exposed_comm_seconds", kinds_json(r.exposed_comm_seconds, 1)},
              {"model_flops_per_step", sig(r.model_flops)},
              {"peak_flops_per_gpu", sig(r.peak_flops)},
              {"world_size", r.sim.world},
              {"mode", r.astra ? "astra-sim" : "default"},
              {"exhaustive", r.exhaustive},
              {"ranks_simulated", r.sim.classes},
              {"nodes_simulated", r.sim.nodes_simulated},
              {"network", network_json(r.network)},
              {"stages", stages},
              {"critical_path", r.sim.critical_path}};
  if (r.host_sync_micros > 0) out["host_sync_micros"] = sig(r.host_sync_micros);
  if (r.host_launch_micros > 0) out["host_launch_micros"] = sig(r.host_launch_micros);
  return out.dump(2) + "\n";
}

std::string simulate_text(const SimulateReport& r) {
  char b[256];
  std::string out;
  std::snprintf(b, sizeof b, "step time   %.6f s (%s network%s)\n", r.step_seconds,
                r.astra ? "ASTRA-sim analytical" : "default", r.exhaustive ? ", every rank simulated" : "");
  out += b;
  std::snprintf(b, sizeof b, "throughput  %.1f tokens/s, MFU %.1f%% (%.4g model FLOPs per step, peak %.4g FLOP/s per GPU)\n",
                r.tokens_per_second, 100 * r.mfu, r.model_flops, r.peak_flops);
  out += b;
  std::snprintf(b, sizeof b, "symmetry    %lld ranks, %lld simulated, %lld nodes\n",
                static_cast<long long>(r.sim.world), static_cast<long long>(r.sim.classes),
                static_cast<long long>(r.sim.nodes_simulated));
  out += b;
  out += "per stage (rank 0's pipeline), ms:\n  stage   rank      busy    bubble";
  for (const char* k : kCommKinds) {
    std::snprintf(b, sizeof b, "  %6s", (std::string("exp.") + k).c_str());
    out += b;
  }
  out += "\n";
  for (const SimStageResult& s : r.sim.stages) {
    std::snprintf(b, sizeof b, "  %5lld %6lld %9.3f %9.3f", static_cast<long long>(s.stage),
                  static_cast<long long>(s.rank), s.busy / 1e3, s.bubble / 1e3);
    out += b;
    for (double e : s.exposed) {
      std::snprintf(b, sizeof b, "  %6.3f", e / 1e3);
      out += b;
    }
    out += "\n";
  }
  if (r.host_sync_micros > 0 && !r.sim.stages.empty()) {
    std::snprintf(b, sizeof b,
                  "host        the MoE dispatcher waits for the device %lld times a step on stage 0's rank, %.0f us "
                  "each before the next kernel (docs/simulate.md, \"The host\")\n",
                  static_cast<long long>(r.sim.stages[0].host_syncs), r.host_sync_micros);
    out += b;
  }
  if (r.host_launch_micros > 0) {
    std::snprintf(b, sizeof b,
                  "host        issues each node %g us after the previous one; no node starts before its issue "
                  "(docs/simulate.md, \"The host\")\n",
                  sig(r.host_launch_micros));
    out += b;
  }
  if (!r.astra && r.network.dispatcher_overlap_rate < 1) {
    std::snprintf(b, sizeof b,
                  "dispatcher  DeepEP's dispatch and combine run at %g of their speed while compute runs beside them "
                  "(hardware.dispatcher_overlap_rate; docs/hardware.md, \"The dispatcher beside compute\")\n",
                  sig(r.network.dispatcher_overlap_rate));
    out += b;
  }
  for (const std::string& l : r.sim.critical_path) out += l + "\n";
  return out;
}

}  // namespace sc
