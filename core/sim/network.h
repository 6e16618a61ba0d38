// The network `simulate` charges communication on (docs/simulate.md).
//
// Default model: GPUs sit in NVLink domains of `domain_size` consecutive
// ranks; inside a domain a GPU reaches `domain_bw`, between domains its
// own NIC reaches `scale_out_bw / oversubscription`. A collective over a
// group of n ranks spread over N domains with at most m per domain runs a
// ring (NCCL's default: m channels, one NIC each, so the ring crosses
// domains at m x the NIC rate, capped by NVLink), a tree (all-reduce
// only: log2 n latency steps) or a hierarchical 2-D ring (inside the
// domain, then across, then inside again). Every algorithm step pays a
// latency (the domain's or the scale-out one).
//
// ASTRA-sim mode: the rules of ASTRA-sim 2.x's analytical backend
// (../shared/docs/astra-sim-analytical.md) on the network the export
// writes to astra-sim/network.yml (astra_dims), with system.json's
// constants below.
//
// Units: microseconds, bytes.
#pragma once

#include <compare>
#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "job/job.h"
#include "trace/rank_trace.h"

namespace sc {

// One dimension of astra-sim/network.yml.
struct AstraDim {
  std::string topology;  // "Switch"
  int64_t npus = 1;
  double bandwidth_gbs = 0;  // GB/s (1e9 B/s) per NPU per direction
  double latency_ns = 0;     // per hop
  std::string what;          // comment for the file
};
// The dimensions the export writes for this hardware and world size.
std::vector<AstraDim> astra_dims(const HardwareProfile& hw, int64_t world);
// system.json values the export writes (cli/astrasim.cc) and the astra
// mode uses.
inline constexpr double kAstraEndpointDelayNs = 10;
inline constexpr int kAstraDatasetSplits = 4;

struct NetworkModel {
  bool astra = false;
  int64_t world = 1;
  // default model
  int64_t domain_size = 8;
  double domain_bw = 0;       // bytes per µs
  double domain_lat = 0;      // µs per step
  double scale_out_bw = 0;    // bytes per µs, per GPU, before oversubscription
  double scale_out_lat = 0;   // µs per step
  double oversubscription = 1;
  std::string algorithm = "nccl";  // "nccl": ring or tree as NCCL's tuning model picks
  // NCCL's protocols on ring collectives (network.protocols "nccl", the
  // job default); false: one protocol, every step at its latency.
  bool nccl_protocols = false;
  // Communication kernels take SMs: while a collective or send runs on a
  // stream other than the compute stream, the rank's compute runs this
  // fraction slower (Calculon's assumption: 15% for NVLink traffic, 2% for
  // the network; docs/simulate.md). Used by SimStreams::kMegatron only.
  double comm_sm_share_domain = 0.15;
  double comm_sm_share_scale_out = 0.02;
  // A training job's DeepEP dispatch and combine kernels hold a fixed SM
  // count, whatever link they use (Megatron-Core's token_dispatcher.py sets
  // DeepEP to 20 SMs when moe_flex_dispatcher_num_sms is unset): beside
  // them compute runs this fraction slower (kDeepEpSms / the GPU's SMs). 0:
  // the tiers above (other dispatchers; serving jobs, whose decode runs
  // DeepEP's low-latency kernels, which hold no SMs).
  double dispatcher_sm_share = 0;
  // ... and those kernels progress at this share of their speed while a
  // compute node runs on the rank (hardware.dispatcher_overlap_rate; 1
  // beside nothing, and for other dispatchers and serving jobs).
  double dispatcher_overlap_rate = 1;
  int64_t nodes = 0;          // domains the job uses
  // MoE token exchange (the ep all-to-alls of the traces), timed as
  // parallel.moe_dispatcher moves the tokens (docs/parallelism.md).
  enum class Dispatcher { kAllToAll, kAllGather, kDeepEP };
  Dispatcher moe_dispatcher = Dispatcher::kAllToAll;
  double moe_imbalance = 1;     // busiest expert rank's tokens over the mean
  // A job's expert exchange across nodes (training or serving) reaches
  // this fraction of scale_out_bw (hardware.ep_scale_out_efficiency).
  double ep_scale_out_efficiency = 1;
  double moe_token_share = 0;   // a rank's tokens (tokens x h) over its dispatch buffer (E x cap x h)
  int64_t moe_experts = 0;      // E
  int64_t moe_topk = 0;         // k
  // The traces hold DeepEP's two legs (api.cc: ep_rdma beside ep_nvl): a
  // cross-node ep all-to-all is the RDMA leg, its comm_size the bytes it moves.
  bool deepep_legs = false;
  // astra mode
  std::vector<AstraDim> dims;
  double local_mem_bw = 0;    // bytes per µs (system.json local-mem-bw)
};

// DeepEP across nodes: the probability that none of a token's k experts,
// drawn uniformly without replacement from E, is on a given node holding
// e_node of them (docs/parallelism.md, "Token dispatchers").
double deepep_node_miss(int64_t experts, int64_t topk, double e_node);

// SMs Megatron-Core gives DeepEP's kernels by default (moe_flex_dispatcher_num_sms
// unset: NVIDIA/Megatron-LM d98e8a64, megatron/core/transformer/moe/token_dispatcher.py).
inline constexpr int kDeepEpSms = 20;

// Defaults from the hardware profile (docs/simulate.md: the NCCL
// efficiencies per GPU), overridden by job.network. Errors name the
// network field (e.g. a network with fewer GPUs than the job).
Result<NetworkModel> resolve_network(const Job& job, int64_t world, bool astra);

// What a collective's time depends on: its members' placement.
struct GroupShape {
  int64_t n = 0;           // members
  int64_t domains = 0;     // distinct NVLink domains (default model)
  int64_t per_domain = 0;  // most members in one domain
  int astra_dim = -1;      // astra: highest dimension a ring edge crosses
  bool world = false;      // astra: the group covers every rank
  auto operator<=>(const GroupShape&) const = default;
};

// Builds a GroupShape from the members in ascending rank order.
class GroupShapeBuilder {
 public:
  void add(const NetworkModel& net, int64_t rank);
  GroupShape finish(const NetworkModel& net) const;

 private:
  GroupShape s_;
  int64_t first_ = -1, last_ = -1, cur_domain_ = -1, cur_count_ = 0;
};

int astra_first_dim(const NetworkModel& net, int64_t a, int64_t b);  // -1 if a == b
int64_t domain_of(const NetworkModel& net, int64_t rank);

// Time of one collective (comm_size semantics of docs/trace-format.md).
double collective_micros(const NetworkModel& net, const GroupShape& g, CollectiveType t, int64_t comm_size);
// A lower bound of collective_micros that is concave in comm_size (the
// planner's step-time bound, docs/plan.md step 5): the time itself, except
// an all-reduce under algorithm "nccl", whose tree correction is not
// concave (network.cc says how it is bounded).
double collective_concave_lower_micros(const NetworkModel& net, const GroupShape& g, CollectiveType t,
                                       int64_t comm_size);
// Time of one collective on the expert-parallel axis: the MoE dispatch or
// combine (an all-to-all in the traces) as net.moe_dispatcher moves the
// tokens, stretched by net.moe_imbalance; other collectives as
// collective_micros. The ASTRA-sim mode keeps its own rules.
double expert_collective_micros(const NetworkModel& net, const GroupShape& g, CollectiveType t, int64_t comm_size);
// DeepEP's measured NVLink rate over the achievable maximum it was measured
// against: 153 of ~160 GB/s (H800, dispatch; docs/parallelism.md).
inline constexpr double kDeepEPNvlinkShare = 153.0 / 160.0;
// Time of one message from rank a to rank b.
double p2p_micros(const NetworkModel& net, int64_t a, int64_t b, int64_t bytes);
// What a message's time depends on (for symmetry): a class of the link.
int link_class(const NetworkModel& net, int64_t a, int64_t b);

}  // namespace sc
