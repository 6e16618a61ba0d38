// Lowering: the sharded graph of one rank role (a pipeline stage) becomes
// that role's program — trace nodes whose collectives name a mesh axis and
// whose sends/receives name a pipeline stage — and a program becomes one
// rank's trace by substituting the rank's groups and peers.
//
// Schedule (what one training process issues; docs/schedule.md):
//  - the pipeline schedule (trace/schedule.h) orders forward, backward and
//    (zero-bubble) weight-gradient steps of each chunk and micro-batch;
//  - compute nodes form one chain (one CUDA compute stream);
//  - collectives on one axis form one chain (one communicator stream),
//    issued in program order, identical on every member of a group;
//  - receives have no dependencies (posted up front, as the simulator lets
//    receives overlap); their consumers depend on them; sends depend on
//    the producer of what they send;
//  - data-parallel gradient buckets are issued as soon as their gradients
//    are final (DDP hooks); the rest of the optimizer phase after the last
//    step;
//  - weight-gradient ops depend on the previous write of the same main
//    grad (accumulation across micro-batches).
// Node ids are issue order; every edge is a data dependency.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "graph/graph.h"
#include "hw/hardware.h"
#include "graph/dtype.h"
#include "parallel/mesh.h"
#include "parallel/schedule_kind.h"
#include "trace/rank_trace.h"

namespace sc {

struct RoleProgram {
  std::vector<TraceNode> nodes;  // group / peer unset
  // Per node: the mesh axis of a collective (or of a ring-attention
  // send/recv), as an index into `axes` (axes[0] = "": none). An index,
  // not a string per node: programs hold millions of nodes over a few axes.
  std::vector<uint8_t> node_axis;
  std::vector<std::string> axes = {""};
  std::vector<int32_t> peer_stage;  // per node: pipeline stage of a send/recv peer, -1 otherwise
  // per node: for ring-attention sends/receives, the peer's offset along
  // the node's axis (+1 next, -1 previous in the ring); 0 otherwise
  std::vector<int8_t> ring_offset;
  // Per node (empty when no node has it): 1 for a tensor-parallel
  // collective that Transformer Engine's userbuffers run beside the GEMMs
  // (tp_comm_overlap): the simulator puts it on a stream of its own
  // instead of the compute stream (docs/simulate.md, "Streams").
  // 2 for a node of the shared experts under moe_shared_expert_overlap:
  // Megatron-Core runs them on a CUDA stream of their own, beside the
  // token dispatcher's all-to-alls.
  std::vector<uint8_t> side_stream;

  // Names. A node of a micro-batch is named "mb<N>.<suffix>"; its
  // nodes[i].name is left empty and the name is kept as (micro-batch,
  // index into name_suffixes), built on demand: a name per node would be
  // a heap block per node (millions of them). kStoredName: nodes[i].name
  // holds the name (the optimizer phase, ring-attention steps, programs
  // built by hand). instantiate_rank writes every name into the trace.
  static constexpr uint32_t kStoredName = UINT32_MAX;
  std::vector<uint32_t> name_ref;   // per node (or empty: every name stored)
  std::vector<int32_t> node_mb;     // per node: micro-batch, -1 for none (or empty: read from the name)
  std::vector<std::string> name_suffixes;

  const std::string& axis_of(size_t node) const { return axes[node_axis[node]]; }
  std::string node_name(size_t node) const;
  // The name without its "mb<N>." prefix.
  std::string_view name_suffix(size_t node) const;
  // The node's micro-batch, -1 when it belongs to none.
  int32_t micro_batch_of(size_t node) const;
  // The index of `axis` in `axes`, added if new.
  uint8_t axis_id(const std::string& axis);
  // Activation bytes alive after each step of the schedule (saved for
  // backward), for the memory timeline; and its peak.
  std::vector<int64_t> activation_timeline;
  int64_t activation_peak = 0;
  // Every activation buffer alive at each node (saved ones, and the
  // transient ones: gradients, scores, gathered inputs, received or
  // collective outputs), from a liveness analysis over this program's
  // nodes; and its peak.
  std::vector<int64_t> live_activation;
  int64_t live_activation_peak = 0;
};

struct LowerOptions {
  int64_t micro_batches = 1;
  int64_t pp = 1, virtual_stages = 1, stage = 0;
  Schedule schedule = Schedule::kOneFOneB;
  DType compute_dtype = DType::kBF16;
  int64_t optimizer_bytes_per_param = 12;
  // Megatron-LM's overlap options (training.*, docs/parallelism.md
  // "Communication overlap"): Transformer Engine's userbuffer overlap of
  // the sequence-parallel all-gathers / reduce-scatters with their GEMMs
  // (tp > 1 with sequence parallelism), and ZeRO 1/2's parameter
  // all-gather overlapped with the next forward pass.
  bool tp_comm_overlap = false;
  bool overlap_param_gather = false;
  // parallel.moe_imbalance: the routed experts' GEMMs (forward, dgrad,
  // wgrad) last this many times their uniform-routing time (the busiest
  // expert rank sets the pace; docs/parallelism.md).
  double moe_imbalance = 1.0;
  // training.moe_shared_expert_overlap (a model with shared experts): the
  // shared experts' ops run on a stream of their own (side_stream 2), fc1
  // beside the dispatch all-to-all and fc2 beside the combine, forward and
  // backward (docs/parallelism.md, "Shared-expert overlap").
  bool moe_shared_expert_overlap = false;
  // parallel.moe_dispatcher "allgather": each ep all-to-all of the graph is
  // recorded as the collective Megatron-Core's MoEAllGatherTokenDispatcher
  // issues over ep instead: an all-gather of the rank's tokens (once, not k
  // copies) toward the experts, a reduce-scatter of the gathered tokens'
  // outputs back (forward and backward alike).
  bool moe_allgather = false;
  // parallel.moe_dispatcher "deepep" with the ep group spread over nodes
  // (api.cc, deepep_node_split): each ep all-to-all becomes DeepEP's two
  // legs, an all-to-all over ep_rdma (the ep ranks of the same local index
  // on the other nodes; comm_size = the op's x deepep_rdma_share) on the
  // compute stream and, when deepep_nvl > 1 ep ranks share a node, one over
  // ep_nvl (those ranks; the op's comm_size) beside it. 0: no split.
  int64_t deepep_nvl = 0;
  double deepep_rdma_share = 0;
  Fp8Recipe fp8_recipe = Fp8Recipe::kNone;  // FP8 linear GEMMs + their kernels (cost/fp8_cost.h)
  // Delayed scaling: Transformer Engine all-reduces (MAX) the amaxes of an
  // fp8_autocast region when it exits, forward and backward, on the compute
  // stream (async_op false); Megatron-Core opens one region per model chunk
  // and micro-batch, over the stage's tp x cp x dp ranks. The axis of that
  // group ("tp+cp+dp", "dp+cp", "dp", ... : the ones of degree > 1), or
  // empty for none (docs/hardware.md, "FP8 training").
  std::string amax_axis;
  // Serving iterations: GEMMs of few rows run the small-M kernels (rows
  // padded to 8, split K; cost/kernel_cost.h, docs/hardware.md "Skinny
  // GEMMs"). Training keeps the tile model.
  bool skinny_gemms = false;
};

Result<RoleProgram> lower_program(const Graph& g, const Bindings& bind, const HardwareProfile& hw,
                                  const LowerOptions& o);

RankTrace instantiate_rank(const RoleProgram& p, const RankLayout& layout, int64_t rank);

// Bytes of forward activations of chunk `chunk` that its backward reads
// (saved for backward), per micro-batch.
Result<int64_t> saved_activation_bytes(const Graph& g, const Bindings& bind, int chunk);
// The same with saved_storage(g) computed once by the caller.
Result<int64_t> saved_activation_bytes(const Graph& g, const Bindings& bind, int chunk,
                                       const std::vector<int>& storage);

}  // namespace sc
