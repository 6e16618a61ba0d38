#include "sim/network.h"

#include "model/transformer.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>
#include <vector>

namespace sc {
namespace {

// Link latencies of the exported ASTRA-sim network: not part of the
// hardware profiles; the order of magnitude of ASTRA-sim's own analytical
// examples (docs/export.md).
constexpr double kAstraIntraLatencyNs = 500;
constexpr double kAstraInterLatencyNs = 2000;

// Fractions of the line rate NCCL reaches (bus bandwidth), measured by
// nccl-tests (../shared/docs/kernel-efficiency.md §6.2): A100 NVLink 232.5
// of 300 GB/s, HDR 24 of 25 GB/s per NIC; H100 ring 370 of 450, NDR 47 of
// 50 (46-48). H200, B200 and custom profiles: H100's (no measurement).
struct Efficiency { double domain, scale_out; };
Efficiency nccl_efficiency(const std::string& hw) {
  if (hw == "a100") return {232.5 / 300, 24.0 / 25};
  return {370.0 / 450, 47.0 / 50};
}
// Per-step latencies (µs): an 8-GPU NVLink all-reduce's floor of ~10 µs
// over its 14 ring steps; a 2-node all-reduce of a few bytes over HDR
// takes 19-21 µs for its 2 steps (kernel-efficiency.md §6.3, §5).
constexpr double kDomainLatencyUs = 0.7;
constexpr double kScaleOutLatencyUs = 10;

// NCCL's protocols (its tuning model, NVIDIA/nccl src/graph/tuning.cc
// @01afd20: baseLat and hwLat of the Ring rows, the bandwidth refinements
// of ncclTopoTuneModel). LL sends 8-byte lines of 4 data bytes and a flag:
// 1/4 of the bandwidth on an all-reduce or across nodes, 1/3 otherwise,
// with the lowest latency; LL128 128-byte lines of 120 data bytes (0.92);
// Simple all of it, with the highest latency. NCCL runs the protocol its
// model predicts fastest; so does this one (docs/simulate.md).
struct Protocol { double base_us, nvlink_step_us, bw_share_local, bw_share_cross; };
constexpr Protocol kLL{3.6, 0.47, 1.0 / 3, 1.0 / 4};
constexpr Protocol kLL128{10.0, 1.9, 0.92, 0.92};
constexpr Protocol kSimple{8.4, 3.4, 1, 1};
// NCCL multiplies LL's NVLink step latency by 1.8 when the ring crosses nodes.
constexpr double kLLCrossNodeFactor = 1.8;

// A ring all-reduce (passes 2), reduce-scatter or all-gather (1) of S
// bytes under NCCL's protocols. The network's per-step latencies (α_d, α_o:
// the measured small-message floors, docs/simulate.md) are LL's; the other
// protocols add NCCL's differences to LL (base latency, NVLink step). As in
// NCCL's model a ring crossing N domains takes N - 1 network steps per pass
// and its other steps on NVLink.
double nccl_ring(const NetworkModel& net, const GroupShape& g, double passes, double S, double bw, bool all_reduce) {
  const double n = static_cast<double>(g.n);
  const bool cross = g.domains > 1;
  const double steps = passes * (n - 1);
  const double net_steps = cross ? passes * static_cast<double>(g.domains - 1) : 0;
  const double nvl_steps = steps - net_steps;
  const double bytes = passes * (n - 1) / n * S;
  double best = 0;
  bool first = true;
  for (const Protocol* p : {&kLL, &kLL128, &kSimple}) {
    double nvl_step = net.domain_lat + (p->nvlink_step_us - kLL.nvlink_step_us);
    if (p == &kLL && cross) nvl_step += (kLLCrossNodeFactor - 1) * kLL.nvlink_step_us;
    const double lat = (p->base_us - kLL.base_us) + nvl_steps * nvl_step + net_steps * net.scale_out_lat;
    const double share = all_reduce || cross ? p->bw_share_cross : p->bw_share_local;
    const double t = lat + bytes / (bw * share);
    if (first || t < best) best = t;
    first = false;
  }
  return best;
}

// NCCL's tree all-reduce (the same tuning model, Tree rows): a reduce up
// and a broadcast down a double binary tree, each a chain of the node's
// ranks inside it and log2(N) levels across nodes. Per protocol, NCCL's
// base latency and per-step hardware latency (NVLink, network), and its
// tree bandwidth: 0.9 of the bus bandwidth (LL 1/3.8 of that, LL128 0.915
// across nodes or 7/9 inside one), carried at half of it (algorithm
// bandwidth = bus bandwidth / 2), times NCCL's treeCorrectionFactor for
// messages under 256 MiB. As for the ring, the network's measured per-step
// latencies (α_d, α_o) stand for LL's ring steps, and the tree's steps add
// NCCL's differences to them.
// Per protocol: base and step latencies (µs), the bus-bandwidth factor
// across nodes and inside one, and treeCorrectionFactor by log2(bytes / 64)
// from 64 B to 128 MiB.
struct TreeProtocol {
  double base_us, nvlink_step_us, net_step_us, bw_factor_cross, bw_factor_local;
  double correction[22];
};
constexpr TreeProtocol kTree[] = {
    {4.4, 0.52, 5.0, 0.9 / 3.8, 0.9 / 3.8,  // LL
     {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0}},
    {4.4, 1.2, 8.5, 0.9 * 0.915, 0.9 * 7.0 / 9.0,  // LL128
     {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .5, .6, .6, .7, .7, .8, .9, .9, 1.0}},
    {0, 28, 50, 0.9, 0.9,  // Simple
     {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .5, .5, .6, .6, .7, .8, .9}}};
constexpr double kRingLLNetStepUs = 2.7;  // NCCL's Ring/LL network step, the anchor of α_o

// The largest bus-bandwidth factor of any Tree protocol, and of any
// treeCorrectionFactor (collective_concave_lower_micros' bound).
constexpr double kTreeMaxBwFactor = [] {
  double m = 0;
  for (const TreeProtocol& p : kTree) {
    double c = 0;
    for (double x : p.correction) c = std::max(c, x);
    m = std::max(m, std::max(p.bw_factor_cross, p.bw_factor_local) * std::max(1.0, c));
  }
  return m;
}();

double nccl_tree_all_reduce(const NetworkModel& net, const GroupShape& g, double S, double bw) {
  const bool cross = g.domains > 1;
  const double ppn = static_cast<double>(g.n) / static_cast<double>(std::max<int64_t>(1, g.domains));
  // log2i of NCCL: floor(log2) (ilogb of a value >= 1).
  const double levels = std::ilogb(static_cast<double>(std::max<int64_t>(1, g.domains)));
  const int size_class = std::ilogb(std::max(1.0, S / 64));
  double best = std::numeric_limits<double>::infinity();
  for (const TreeProtocol& p : kTree) {
    double intra = net.domain_lat + (p.nvlink_step_us - kLL.nvlink_step_us);
    if (&p == &kTree[0] && cross) intra += (kLLCrossNodeFactor - 1) * p.nvlink_step_us;  // LL across nodes
    const double inter = net.scale_out_lat + (p.net_step_us - kRingLLNetStepUs);
    const double lat = std::max(0.0, (p.base_us - kLL.base_us) + 2 * ((ppn - 1) * intra + levels * inter));
    double alg_bw = bw * (cross ? p.bw_factor_cross : p.bw_factor_local) * 0.5;
    if (size_class < 22) alg_bw *= p.correction[size_class];
    best = std::min(best, lat + S / alg_bw);
  }
  return best;
}

int hops(const std::string& topology) { return topology == "FullyConnected" ? 1 : 2; }

double astra_message(const NetworkModel& net, int dim, double bytes) {
  const AstraDim& d = net.dims[static_cast<size_t>(dim)];
  return (hops(d.topology) * d.latency_ns + bytes / d.bandwidth_gbs + kAstraEndpointDelayNs) / 1000.0;
}

// One ring of n ranks whose slowest edge is in dimension `dim`: `steps`
// messages of `bytes` each, a reduction step also reading/writing its
// chunk in local memory (localBWAware).
double astra_ring(const NetworkModel& net, int dim, double steps, double bytes, double reduce_steps) {
  double mem = net.local_mem_bw > 0 ? reduce_steps * bytes / net.local_mem_bw : 0;
  return steps * astra_message(net, dim, bytes) + mem;
}

// The chunks of one collective pipeline across dimensions: each chunk is
// its own stream that moves through `phases` in order; a dimension has one
// queue (num-queues-per-dim 1) that runs one chunk at a time
// (active-chunks-per-dimension 1), and a waiting chunk created later goes
// first (LIFO priorities; Sys::insert_stream). A chunk enters its next
// phase's queue as soon as its phase ends. Returns µs until the last chunk
// ends.
double astra_chunk_pipeline(const std::vector<std::pair<int, double>>& phases, int dims) {
  const int chunks = kAstraDatasetSplits;
  std::vector<size_t> next(static_cast<size_t>(chunks), 0);   // next phase per chunk
  std::vector<double> ready(static_cast<size_t>(chunks), 0);  // when it may enter it
  std::vector<double> free_at(static_cast<size_t>(dims), 0);  // when the queue is idle
  double end = 0;
  for (size_t done = 0; done < static_cast<size_t>(chunks) * phases.size();) {
    // The next start: earliest over dimensions of max(queue idle, first
    // arrival); among the chunks waiting then, the latest-created.
    double best_t = 0;
    int best = -1;
    for (int d = 0; d < dims; ++d) {
      double arrive = -1;
      for (int i = 0; i < chunks; ++i) {
        const auto u = static_cast<size_t>(i);
        if (next[u] < phases.size() && phases[next[u]].first == d && (arrive < 0 || ready[u] < arrive))
          arrive = ready[u];
      }
      if (arrive < 0) continue;
      const double start = std::max(free_at[static_cast<size_t>(d)], arrive);
      int pick = -1;
      for (int i = chunks - 1; i >= 0 && pick < 0; --i) {
        const auto u = static_cast<size_t>(i);
        if (next[u] < phases.size() && phases[next[u]].first == d && ready[u] <= start) pick = i;
      }
      if (best < 0 || start < best_t) {
        best_t = start;
        best = pick;
      }
    }
    const auto u = static_cast<size_t>(best);
    const auto& [d, dur] = phases[next[u]];
    free_at[static_cast<size_t>(d)] = best_t + dur;
    ready[u] = best_t + dur;
    end = std::max(end, ready[u]);
    ++next[u];
    ++done;
  }
  return end;
}

double astra_collective(const NetworkModel& net, const GroupShape& g, CollectiveType t, double size) {
  const double c = size / kAstraDatasetSplits;  // one chunk
  auto phase = [&](int dim, double n, CollectiveType k, double chunk) {
    if (n <= 1) return 0.0;
    switch (k) {
      case CollectiveType::kAllReduce: return astra_ring(net, dim, 2 * (n - 1), chunk / n, n - 1);
      case CollectiveType::kReduceScatter: return astra_ring(net, dim, n - 1, chunk / n, n - 1);
      case CollectiveType::kAllGather: return astra_ring(net, dim, n - 1, chunk, 0);
      case CollectiveType::kAllToAll: return astra_ring(net, dim, n * (n - 1) / 2, chunk / n, 0);
    }
    return 0.0;
  };
  if (!g.world || net.dims.size() == 1)
    return kAstraDatasetSplits * phase(std::max(g.astra_dim, 0), static_cast<double>(g.n), t, c);
  // The whole world: the per-dimension implementation list, dimension by
  // dimension (all-reduce: reduce-scatter up, all-reduce on the last,
  // all-gather down). Each phase is (dimension, µs per chunk).
  const int k = static_cast<int>(net.dims.size());
  double chunk = c;
  auto n_of = [&](int d) { return static_cast<double>(net.dims[static_cast<size_t>(d)].npus); };
  std::vector<std::pair<int, double>> phases;
  switch (t) {
    case CollectiveType::kAllReduce:
      for (int d = 0; d < k - 1; ++d) {
        phases.emplace_back(d, phase(d, n_of(d), CollectiveType::kReduceScatter, chunk));
        chunk /= n_of(d);
      }
      phases.emplace_back(k - 1, phase(k - 1, n_of(k - 1), CollectiveType::kAllReduce, chunk));
      for (int d = k - 2; d >= 0; --d) {
        chunk *= n_of(d);
        phases.emplace_back(d, phase(d, n_of(d), CollectiveType::kAllGather, chunk / n_of(d)));
      }
      break;
    case CollectiveType::kReduceScatter:
      for (int d = 0; d < k; ++d) {
        phases.emplace_back(d, phase(d, n_of(d), t, chunk));
        chunk /= n_of(d);
      }
      break;
    case CollectiveType::kAllGather:  // highest dimension first (Sys::generate_collective reverses)
      for (int d = k - 1; d >= 0; --d) {
        phases.emplace_back(d, phase(d, n_of(d), t, chunk));
        chunk *= n_of(d);
      }
      break;
    case CollectiveType::kAllToAll:
      for (int d = 0; d < k; ++d) phases.emplace_back(d, phase(d, n_of(d), t, chunk));
      break;
  }
  return astra_chunk_pipeline(phases, k);
}

}  // namespace

std::vector<AstraDim> astra_dims(const HardwareProfile& hw, int64_t world) {
  const int64_t gpn = hw.gpus_per_node > 0 ? hw.gpus_per_node : 1;
  std::vector<AstraDim> dims;
  if (world <= gpn) {
    dims.push_back({"Switch", world, hw.intra_node_bw / 1e9, kAstraIntraLatencyNs, "GPUs of one node (NVLink)"});
  } else if (world % gpn == 0) {
    dims.push_back({"Switch", gpn, hw.intra_node_bw / 1e9, kAstraIntraLatencyNs, "GPUs per node (NVLink)"});
    dims.push_back({"Switch", world / gpn, hw.inter_node_bw / 1e9, kAstraInterLatencyNs, "nodes (scale-out network)"});
  } else {
    dims.push_back({"Switch", world, hw.inter_node_bw / 1e9, kAstraInterLatencyNs,
                    "all GPUs (world is not a multiple of gpus_per_node)"});
  }
  return dims;
}

Result<NetworkModel> resolve_network(const Job& job, int64_t world, bool astra) {
  const NetworkConfig& c = job.network;
  const HardwareProfile& hw = job.hardware;
  NetworkModel n;
  n.astra = astra;
  n.world = world;
  const Efficiency e = nccl_efficiency(hw.name);
  n.domain_size = c.domain_size > 0 ? c.domain_size : std::max(1, hw.gpus_per_node);
  n.domain_bw = (c.domain_bandwidth_gbs > 0 ? c.domain_bandwidth_gbs * 1e9 : hw.intra_node_bw * e.domain) / 1e6;
  n.scale_out_bw = (c.scale_out_bandwidth_gbs > 0 ? c.scale_out_bandwidth_gbs * 1e9 : hw.inter_node_bw * e.scale_out) / 1e6;
  n.domain_lat = c.domain_latency_us >= 0 ? c.domain_latency_us : kDomainLatencyUs;
  n.scale_out_lat = c.scale_out_latency_us >= 0 ? c.scale_out_latency_us : kScaleOutLatencyUs;
  n.oversubscription = c.oversubscription;
  n.algorithm = c.algorithm;
  n.nccl_protocols = c.protocols == "nccl";
  if (c.comm_sm_share_domain >= 0) n.comm_sm_share_domain = c.comm_sm_share_domain;
  if (c.comm_sm_share_scale_out >= 0) n.comm_sm_share_scale_out = c.comm_sm_share_scale_out;
  if (!(n.domain_bw > 0))
    return make_error(ErrorCode::kInvalidArgument, "must be > 0 (the hardware profile has no NVLink bandwidth)",
                      "network.domain_bandwidth_gbs");
  if (!(n.scale_out_bw > 0))
    return make_error(ErrorCode::kInvalidArgument, "must be > 0 (the hardware profile has no network bandwidth)",
                      "network.scale_out_bandwidth_gbs");
  if (!(n.oversubscription >= 1))
    return make_error(ErrorCode::kInvalidArgument, "must be >= 1 (got " + std::to_string(n.oversubscription) + ")",
                      "network.oversubscription");
  const int64_t needed = (world + n.domain_size - 1) / n.domain_size;
  if (c.nodes > 0 && c.nodes < needed)
    return make_error(ErrorCode::kInvalidArgument,
                      "the network is too small for the job: " + std::to_string(c.nodes) + " nodes x " +
                          std::to_string(n.domain_size) + " GPUs = " + std::to_string(c.nodes * n.domain_size) +
                          " GPUs, the job has " + std::to_string(world) + " ranks (needs " + std::to_string(needed) +
                          " nodes)",
                      "network.nodes");
  n.nodes = needed;
  const ParallelConfig& p = job.parallel;
  n.moe_dispatcher = p.moe_dispatcher == "allgather" ? NetworkModel::Dispatcher::kAllGather
                     : p.moe_dispatcher == "deepep"  ? NetworkModel::Dispatcher::kDeepEP
                                                     : NetworkModel::Dispatcher::kAllToAll;
  n.moe_imbalance = p.moe_imbalance;
  if (n.moe_dispatcher == NetworkModel::Dispatcher::kDeepEP && !job.inference()) {
    if (hw.sm_count > 0)
      n.dispatcher_sm_share = std::min(0.9, static_cast<double>(kDeepEpSms) / static_cast<double>(hw.sm_count));
    n.dispatcher_overlap_rate = hw.dispatcher_overlap_rate;
  }
  // Fitted on training runs (docs/hardware.md, "Expert exchanges across
  // nodes"), a property of the profile's network under an expert exchange:
  // a serving job's exchange across nodes runs at it too.
  n.ep_scale_out_efficiency = hw.ep_scale_out_efficiency;
  if (job.model.is_moe()) {
    // The dispatch buffer of one source rank holds E x cap token slots
    // (api.cc binds cap from the same local tokens).
    const TrainingConfig& t = job.training;
    const int64_t local_tokens = t.micro_batch_size * t.seq_len / (p.cp * (p.sequence_parallel ? p.tp : 1));
    const int64_t cap = moe_capacity(job.model, local_tokens);
    n.moe_experts = job.model.num_experts;
    n.moe_topk = job.model.experts_per_token;
    if (cap > 0 && n.moe_experts > 0)
      n.moe_token_share = static_cast<double>(local_tokens) / (static_cast<double>(n.moe_experts) * static_cast<double>(cap));
  }
  if (astra) {
    n.dims = astra_dims(hw, world);
    int64_t product = 1;
    for (const AstraDim& d : n.dims) {
      product *= d.npus;
      if (!(d.bandwidth_gbs > 0))
        return make_error(ErrorCode::kInvalidArgument, "ASTRA-sim mode needs a bandwidth > 0 for " + d.what,
                          "hardware");
    }
    if (product != world)
      return make_error(ErrorCode::kInvalidArgument, "ASTRA-sim network has " + std::to_string(product) +
                                                         " NPUs, the job " + std::to_string(world),
                        "hardware.gpus_per_node");
    n.local_mem_bw = hw.mem_bandwidth / 1e6;
  }
  return n;
}

int64_t domain_of(const NetworkModel& net, int64_t rank) { return rank / net.domain_size; }

int astra_first_dim(const NetworkModel& net, int64_t a, int64_t b) {
  for (size_t i = 0; i < net.dims.size(); ++i) {
    const int64_t n = net.dims[i].npus;
    if (a % n != b % n) return static_cast<int>(i);
    a /= n;
    b /= n;
  }
  return -1;
}

void GroupShapeBuilder::add(const NetworkModel& net, int64_t rank) {
  ++s_.n;
  if (net.astra) {
    if (last_ >= 0) s_.astra_dim = std::max(s_.astra_dim, astra_first_dim(net, last_, rank));
    if (first_ < 0) first_ = rank;
    last_ = rank;
    return;
  }
  const int64_t d = domain_of(net, rank);
  if (d != cur_domain_) {
    cur_domain_ = d;
    cur_count_ = 0;
    ++s_.domains;
  }
  s_.per_domain = std::max(s_.per_domain, ++cur_count_);
}

GroupShape GroupShapeBuilder::finish(const NetworkModel& net) const {
  GroupShape s = s_;
  if (net.astra) {
    if (first_ >= 0 && last_ != first_) s.astra_dim = std::max(s.astra_dim, astra_first_dim(net, last_, first_));
    s.world = s.n == net.world;
  }
  return s;
}

// The bus bandwidth of a ring or tree over g: NVLink inside one domain;
// across domains the slower of NVLink and the domain's members' NICs.
double group_bus_bw(const NetworkModel& net, const GroupShape& g) {
  const double out = net.scale_out_bw / net.oversubscription;
  return g.domains > 1 ? std::min(net.domain_bw, static_cast<double>(g.per_domain) * out) : net.domain_bw;
}

double collective_micros(const NetworkModel& net, const GroupShape& g, CollectiveType t, int64_t comm_size) {
  const double n = static_cast<double>(g.n);
  if (g.n <= 1) return 0;
  if (net.astra) return astra_collective(net, g, t, static_cast<double>(comm_size));
  const double S = t == CollectiveType::kAllGather ? static_cast<double>(comm_size) * n : static_cast<double>(comm_size);
  const double out = net.scale_out_bw / net.oversubscription;
  const bool cross = g.domains > 1;
  const double m = static_cast<double>(g.per_domain);
  const double bw = group_bus_bw(net, g);
  const double lat = cross ? net.scale_out_lat : net.domain_lat;
  if (t == CollectiveType::kAllToAll) {
    // Every rank sends S/n to each other member at once: the NVLink share
    // and the NIC share proceed in parallel.
    const double inside = cross ? (m - 1) * S / n / net.domain_bw : (n - 1) * S / n / net.domain_bw;
    const double outside = cross ? (n - m) * S / n / out : 0;
    return lat + std::max(inside, outside);
  }
  const double passes = t == CollectiveType::kAllReduce ? 2 : 1;  // reduce-scatter + all-gather
  if (net.algorithm == "hierarchical" && cross && g.per_domain > 1) {
    const double N = static_cast<double>(g.domains);
    return passes * ((m - 1) * net.domain_lat + (m - 1) / m * S / net.domain_bw + (N - 1) * net.scale_out_lat +
                     (N - 1) / N * (S / m) / out);
  }
  if (net.algorithm == "tree" && t == CollectiveType::kAllReduce)
    return 2 * std::ceil(std::log2(n)) * lat + 2 * (n - 1) / n * S / bw;
  if (net.nccl_protocols) {
    const double ring = nccl_ring(net, g, passes, S, bw, t == CollectiveType::kAllReduce);
    // algorithm "nccl": NCCL's own choice, the faster of its ring and tree
    // for an all-reduce (the other collectives have only the ring).
    if (net.algorithm == "nccl" && t == CollectiveType::kAllReduce) return std::min(ring, nccl_tree_all_reduce(net, g, S, bw));
    return ring;
  }
  // Without NCCL's protocols (network.protocols "simple", the model before
  // them) "nccl" is the ring, as it was.
  return passes * ((n - 1) * lat + (n - 1) / n * S / bw);
}

// Ring, reduce-scatter and all-gather are the least over NCCL's protocols of
// affine times (or one affine time): concave already, their own time. An
// all-reduce under "nccl" is the faster of the ring and the tree, whose
// treeCorrectionFactor makes it not concave between ~4 KiB and 256 MiB; its
// bound is the faster of the ring (exact) and the tree with no protocol's
// latency under the time of 0 bytes and no bandwidth above the largest
// factor of kTree, carried at half (algorithm bandwidth).
double collective_concave_lower_micros(const NetworkModel& net, const GroupShape& g, CollectiveType t,
                                       int64_t comm_size) {
  if (g.n <= 1) return 0;
  if (net.astra || net.algorithm != "nccl" || !net.nccl_protocols || t != CollectiveType::kAllReduce)
    return collective_micros(net, g, t, comm_size);
  NetworkModel ring = net;
  ring.algorithm = "ring";
  const double tree = collective_micros(net, g, t, 0) +
                      static_cast<double>(comm_size) / (group_bus_bw(net, g) * kTreeMaxBwFactor * 0.5);
  return std::min(collective_micros(ring, g, t, comm_size), tree);
}

double deepep_node_miss(int64_t experts, int64_t topk, double e_node) {
  const double E = static_cast<double>(experts);
  double miss = 1;
  for (int64_t i = 0; i < topk; ++i) {
    const double d = E - static_cast<double>(i);
    miss *= d > 0 ? std::max(0.0, E - e_node - static_cast<double>(i)) / d : 0;
  }
  return miss;
}

double expert_collective_micros(const NetworkModel& net, const GroupShape& g, CollectiveType t, int64_t comm_size) {
  using D = NetworkModel::Dispatcher;
  const bool cross = g.domains > 1;
  if (net.astra || t != CollectiveType::kAllToAll || g.n <= 1 ||
      (net.moe_dispatcher == D::kAllToAll && net.moe_imbalance == 1.0 && (!cross || net.ep_scale_out_efficiency == 1.0)))
    return collective_micros(net, g, t, comm_size);
  const double n = static_cast<double>(g.n), m = static_cast<double>(g.per_domain);
  const double C = static_cast<double>(comm_size);  // one rank's dispatch buffer: k copies of its tokens
  // The share sent across nodes moves at the expert exchange's fitted
  // fraction of the network rate (ep_scale_out_efficiency).
  const double out = net.scale_out_bw / net.oversubscription * net.ep_scale_out_efficiency;
  const double lat = cross ? net.scale_out_lat : net.domain_lat;
  switch (net.moe_dispatcher) {
    case D::kAllToAll: {
      // The busiest rank receives moe_imbalance x the mean; everyone waits.
      const double inside = cross ? (m - 1) * C / n / net.domain_bw : (n - 1) * C / n / net.domain_bw;
      const double outside = cross ? (n - m) * C / n / out : 0;
      return lat + net.moe_imbalance * std::max(inside, outside);
    }
    case D::kAllGather: {
      // Every rank gathers every member's tokens once (not k copies), picks
      // those of its own experts; the combine reduce-scatters them back
      // (the same ring time). Routing does not change the bytes, so the
      // imbalance stretches only the expert GEMMs.
      const double tokens = C * net.moe_token_share;
      return collective_micros(net, g, CollectiveType::kAllGather, static_cast<int64_t>(std::llround(tokens)));
    }
    case D::kDeepEP: {
      const double nvl_bw = net.domain_bw * kDeepEPNvlinkShare;
      if (!cross) return lat + net.moe_imbalance * (n - 1) / n * C / nvl_bw;
      // Normal kernels across nodes: a token goes once over RDMA to each
      // other node that holds one of its k experts (to the GPU of the same
      // local index), then over NVLink to the GPUs of its experts there.
      // With E experts over N nodes (E m / n each) and the k experts drawn
      // uniformly without replacement, a node is missed with probability
      // prod_i (E - E_node - i) / (E - i).
      if (net.deepep_legs) {
        // The trace's RDMA leg (ep_rdma: one rank per node), beside its
        // NVLink leg (ep_nvl, timed by the one-domain case above).
        return lat + net.moe_imbalance * (n - 1) / n * C / out;
      }
      const double N = static_cast<double>(g.domains);
      const double E = static_cast<double>(net.moe_experts);
      const double miss = deepep_node_miss(net.moe_experts, net.moe_topk, E * m / n);
      const double rdma = C * net.moe_token_share * (N - 1) * (1 - miss);
      const double nvl = C * (m - 1) / m;
      return lat + net.moe_imbalance * std::max(rdma / out, nvl / nvl_bw);
    }
  }
  return collective_micros(net, g, t, comm_size);
}

double p2p_micros(const NetworkModel& net, int64_t a, int64_t b, int64_t bytes) {
  const double c = static_cast<double>(bytes);
  if (net.astra) {
    const int d = astra_first_dim(net, a, b);
    return d < 0 ? 0 : astra_message(net, d, c);
  }
  if (domain_of(net, a) == domain_of(net, b)) return net.domain_lat + c / net.domain_bw;
  return net.scale_out_lat + c / (net.scale_out_bw / net.oversubscription);
}

int link_class(const NetworkModel& net, int64_t a, int64_t b) {
  if (net.astra) return astra_first_dim(net, a, b);
  return domain_of(net, a) == domain_of(net, b) ? 0 : 1;
}

}  // namespace sc
