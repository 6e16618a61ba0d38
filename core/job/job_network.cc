// The job's "network" section: the network `simulate` times communication
// on (docs/simulate.md). Every field is optional; 0 or absent takes the
// hardware profile's default (sim/network.h resolves them).
#include "job/job_internal.h"

namespace sc::job_internal {
namespace {

using jsonf::Json;
using jsonf::join;

constexpr double kMaxGBs = 1e6;        // GB/s (1 PB/s)
// GB/s: 10 MB/s, below any data-centre link (1 GbE is 0.125 GB/s). A
// denormal like 5e-324 used to pass "> 0" and time a step at inf s.
constexpr double kMinGBs = 0.01;
constexpr double kMaxLatencyUs = 1e6;  // one second per step
constexpr double kMaxOversubscription = 1024;

}  // namespace

Result<NetworkConfig> parse_network_section(const Json& v, const std::string& path) {
  SC_RETURN_IF_ERROR(jsonf::expect_object(v, path));
  SC_RETURN_IF_ERROR(jsonf::check_keys(
      v, {"domain_size", "domain_bandwidth_gbs", "domain_latency_us", "scale_out_bandwidth_gbs",
          "scale_out_latency_us", "oversubscription", "algorithm", "nodes", "comm_sm_share_domain",
          "comm_sm_share_scale_out", "protocols"},
      path));
  NetworkConfig n;
  if (const Json* x = jsonf::find(v, "domain_size")) {
    SC_ASSIGN_OR_RETURN(n.domain_size, jsonf::get_int(*x, join(path, "domain_size"), 1, limits::kMaxDegree));
  }
  if (const Json* x = jsonf::find(v, "nodes")) {
    SC_ASSIGN_OR_RETURN(n.nodes, jsonf::get_int(*x, join(path, "nodes"), 1, limits::kMaxDegree));
  }
  struct F { const char* key; double NetworkConfig::*m; double lo; bool lo_incl; double hi; };
  const F fields[] = {
      {"domain_bandwidth_gbs", &NetworkConfig::domain_bandwidth_gbs, kMinGBs, true, kMaxGBs},
      {"domain_latency_us", &NetworkConfig::domain_latency_us, 0, true, kMaxLatencyUs},
      {"scale_out_bandwidth_gbs", &NetworkConfig::scale_out_bandwidth_gbs, kMinGBs, true, kMaxGBs},
      {"scale_out_latency_us", &NetworkConfig::scale_out_latency_us, 0, true, kMaxLatencyUs},
      {"oversubscription", &NetworkConfig::oversubscription, 1, true, kMaxOversubscription},
  };
  for (const F& f : fields)
    if (const Json* x = jsonf::find(v, f.key)) {
      SC_ASSIGN_OR_RETURN(n.*f.m, jsonf::get_number_in(*x, join(path, f.key), f.lo, f.hi, f.lo_incl));
    }
  // A share of the SMs: 1 would stop compute while any transfer runs.
  for (auto [key, m] : {std::pair{"comm_sm_share_domain", &NetworkConfig::comm_sm_share_domain},
                        std::pair{"comm_sm_share_scale_out", &NetworkConfig::comm_sm_share_scale_out}})
    if (const Json* x = jsonf::find(v, key)) {
      SC_ASSIGN_OR_RETURN(double f, jsonf::get_number(*x, join(path, key)));
      if (!(f >= 0 && f < 1))
        return make_error(ErrorCode::kInvalidArgument,
                          "must be >= 0 and < 1 (a fraction of the compute speed; got " + Json(f).dump() + ")",
                          join(path, key));
      n.*m = f;
    }
  if (const Json* x = jsonf::find(v, "algorithm")) {
    SC_ASSIGN_OR_RETURN(n.algorithm, jsonf::get_string(*x, join(path, "algorithm")));
    if (n.algorithm != "nccl" && n.algorithm != "ring" && n.algorithm != "tree" && n.algorithm != "hierarchical")
      return make_error(ErrorCode::kInvalidArgument,
                        "unknown algorithm \"" + echo_text(n.algorithm) + "\" (known: nccl, ring, tree, hierarchical)",
                        join(path, "algorithm"));
  }
  if (const Json* x = jsonf::find(v, "protocols")) {
    SC_ASSIGN_OR_RETURN(n.protocols, jsonf::get_string(*x, join(path, "protocols")));
    if (n.protocols != "nccl" && n.protocols != "simple")
      return make_error(ErrorCode::kInvalidArgument,
                        "unknown protocols \"" + n.protocols + "\" (known: nccl, simple)", join(path, "protocols"));
  }
  return n;
}

}  // namespace sc::job_internal
