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
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"
#include "cost/fp8_cost.h"
#include "graph/graph.h"
#include "hw/hardware.h"
#include "graph/dtype.h"
#include "parallel/mesh.h"
#include "parallel/schedule_kind.h"
#include "trace/rank_trace.h"

namespace sc {

// A stored node name (RoleProgram::kStoredName) in 8 bytes: empty (no
// allocation) or one heap string. A lowered micro-batch node's name is
// built on demand (RoleProgram::node_name) and left empty here; only the
// optimizer phase, ring-attention and userbuffer steps and programs built
// by hand store one. Read as a const std::string&.
class NodeName {
 public:
  NodeName() = default;
  NodeName(std::string s) { set(std::move(s)); }  // NOLINT: implicit, as a string
  NodeName(const char* s) { set(s); }              // NOLINT
  NodeName(const NodeName& o) { set(o.str()); }
  NodeName(NodeName&&) noexcept = default;
  NodeName& operator=(const NodeName& o) {
    if (this != &o) set(o.str());
    return *this;
  }
  NodeName& operator=(NodeName&&) noexcept = default;
  NodeName& operator=(std::string s) {
    set(std::move(s));
    return *this;
  }
  NodeName& operator=(const char* s) {
    set(s);
    return *this;
  }
  const std::string& str() const { return p_ ? *p_ : empty_string(); }
  operator const std::string&() const { return str(); }  // NOLINT: implicit, as a string
  bool empty() const { return !p_; }
  size_t size() const { return p_ ? p_->size() : 0; }
  const char* c_str() const { return str().c_str(); }
  size_t rfind(std::string_view s, size_t pos = std::string::npos) const { return str().rfind(s, pos); }
  bool starts_with(std::string_view s) const { return str().starts_with(s); }
  bool ends_with(std::string_view s) const { return str().ends_with(s); }
  void clear() { p_.reset(); }
  friend bool operator==(const NodeName& a, const std::string& b) { return a.str() == b; }
  friend bool operator==(const NodeName& a, std::string_view b) { return std::string_view(a.str()) == b; }
  friend bool operator==(const NodeName& a, const char* b) { return a.str() == b; }
  friend bool operator==(const NodeName& a, const NodeName& b) { return a.str() == b.str(); }

 private:
  static const std::string& empty_string() {
    static const std::string e;
    return e;
  }
  void set(std::string s) {
    if (s.empty()) p_.reset();
    else p_ = std::make_unique<std::string>(std::move(s));
  }
  std::unique_ptr<std::string> p_;
};

// Dependency ids of a program node: 32-bit (a program holds far fewer than
// 2^32 nodes), two inline, 16 bytes.
using ProgramDeps = BasicDepList<uint32_t>;

// One node of a lowered program: a TraceNode's fields that a program
// carries (a program's group and peer are per rank, filled by
// instantiate_rank), 80 bytes instead of a TraceNode's 128. Programs hold
// millions of nodes (4 million for the 1T job's 64 stages): their bytes
// are the build's page faults and the cache misses of every consumer
// (docs/performance.md). Converts from a TraceNode (lowering builds
// TraceNodes; programs built by hand assign them) and back (to_trace_node).
struct ProgramNode {
  uint32_t id = 0;
  int32_t tag = 0;  // kSend/kRecv, >= 0
  TraceNodeKind kind = TraceNodeKind::kCompute;
  CollectiveType coll = CollectiveType::kAllReduce;
  ProgramDeps deps;
  int64_t num_ops = 0;
  uint64_t tensor_size = 0;
  uint64_t duration_micros = 0;
  int64_t comm_size = 0;
  uint64_t output_bytes = 0;
  NodeName name;  // kStoredName nodes only (RoleProgram::node_name)

  ProgramNode() = default;
  ProgramNode(const TraceNode& n)  // NOLINT: implicit, as programs were vectors of TraceNode
      : id(static_cast<uint32_t>(n.id)), tag(n.tag), kind(n.kind), coll(n.coll), num_ops(n.num_ops),
        tensor_size(n.tensor_size), duration_micros(n.duration_micros), comm_size(n.comm_size),
        output_bytes(n.output_bytes), name(n.name) {
    deps.assign(n.deps.begin(), n.deps.end());
  }
  ProgramNode(TraceNode&& n)  // NOLINT
      : id(static_cast<uint32_t>(n.id)), tag(n.tag), kind(n.kind), coll(n.coll), num_ops(n.num_ops),
        tensor_size(n.tensor_size), duration_micros(n.duration_micros), comm_size(n.comm_size),
        output_bytes(n.output_bytes), name(std::move(n.name)) {
    deps.assign(n.deps.begin(), n.deps.end());
  }
  // The TraceNode with this node's fields (name as stored; group and peer unset).
  TraceNode to_trace_node() const;
};

struct RoleProgram {
  std::vector<ProgramNode> nodes;
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
  // collective that Transformer Engine runs beside the GEMMs (its
  // userbuffers under tp_comm_overlap; without them, the column-parallel
  // backward's all-gather and reduce-scatter it launches asynchronously):
  // the simulator puts it on a stream of its own instead of the compute
  // stream (docs/simulate.md, "Streams").
  // 2 for a node of the shared experts under moe_shared_expert_overlap:
  // Megatron-Core runs them on a CUDA stream of their own, beside the
  // token dispatcher's all-to-alls.
  // 3 for a pipeline send of the interleaved schedule's steady 1F1B phase
  // under overlap_p2p_comm: Megatron-LM posts it asynchronously (isend on
  // NCCL's stream) and the compute stream goes on to the next chunk.
  // 4 for an expert-parallel all-to-all of a combined forward / backward
  // step under overlap_moe_expert_parallel_comm: Megatron-Core issues it on
  // a communication stream of its own, beside the other micro-batch's
  // compute; likewise under two_batch_overlap (a serving iteration's two
  // forward micro-batches).
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
  // training.overlap_p2p_comm with the interleaved schedule (api.cc only
  // sets it there): the pipeline sends of the steady 1F1B phase are posted
  // asynchronously (side_stream 3), as Megatron-LM's schedule posts them;
  // warm-up and cool-down sends stay blocking (docs/parallelism.md,
  // "Pipeline send/recv overlap").
  bool overlap_p2p_comm = false;
  // ZeRO 2/3 (api.cc: parallel.zero >= 2): reduce-scattered gradient
  // buckets are reduced after every micro-batch's backward, not once after
  // the last (Megatron-FSDP's grad_reduce_every_bprop for "optim_grads"
  // and "optim_grads_params"; FSDP2's default): sharded gradients cannot
  // accumulate unreduced. HSDP's replica all-reduce stays once.
  bool grad_reduce_every_micro_batch = false;
  // parallel.moe_imbalance: the routed experts' GEMMs (forward, dgrad,
  // wgrad) last this many times their uniform-routing time (the busiest
  // expert rank sets the pace; docs/parallelism.md); their per-expert
  // launches (expert_gemm_launches) are added after it, unscaled.
  double moe_imbalance = 1.0;
  // training.moe_shared_expert_overlap (a model with shared experts): the
  // shared experts' ops run on a stream of their own (side_stream 2), fc1
  // beside the dispatch all-to-all and fc2 beside the combine, forward and
  // backward (docs/parallelism.md, "Shared-expert overlap").
  bool moe_shared_expert_overlap = false;
  // training.overlap_moe_expert_parallel_comm (api.cc: an MoE model with
  // ep > 1): Megatron-Core's combined 1F1B. The schedule gets one more
  // warm-up forward (trace/schedule.h, ep_overlap) and each steady
  // (forward, backward) pair is lowered as one step, layer by layer in
  // Megatron-Core's sub-module order (the forward's attention, dispatch,
  // experts and combine interleaved with the backward's combine, experts,
  // dispatch and attention); the pair's ep all-to-alls run on a
  // communication stream of their own (side_stream 4). delay_wgrad_compute:
  // the backward's weight-gradient GEMMs are issued after the dispatch's
  // backward all-to-all (experts) and after the attention's backward
  // (attention), so that the all-to-alls do not wait for them
  // (docs/parallelism.md, "EP all-to-all overlap").
  bool ep_a2a_overlap = false;
  bool delay_wgrad_compute = false;
  // serving.two_batch_overlap (an inference iteration of an MoE model with
  // ep > 1; serve/serving.cc sets micro_batches 2 and the GPipe schedule):
  // SGLang's two-batch overlap. The forward steps of micro-batches 0 and 1
  // of a chunk are lowered as one step, layer by layer: A's attention and
  // dispatch, B's attention and dispatch, A's experts and combine, B's
  // experts and combine, each micro-batch's post-combine part with its
  // next layer's attention; the ep all-to-alls run on the communication
  // stream (side_stream 4), each after its micro-batch's last compute
  // (docs/inference.md, "Two-batch overlap").
  bool two_batch_overlap = false;
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
  // Training: each local expert's GEMM is a launch of its own, and every
  // launch after the first adds the profile's kernel_floor_micros to the
  // routed experts' GEMM nodes (docs/hardware.md, "Routed experts' GEMM
  // launches"). Serving's engines run the experts as one fused kernel.
  bool expert_gemm_launches = false;
};

Result<RoleProgram> lower_program(const Graph& g, const Bindings& bind, const HardwareProfile& hw,
                                  const LowerOptions& o);

RankTrace instantiate_rank(const RoleProgram& p, const RankLayout& layout, int64_t rank);

// Bytes of forward activations of chunk `chunk` that its backward reads
// (saved for backward), per micro-batch; under an FP8 recipe as
// Transformer Engine keeps them (cost/fp8_cost.h, SavedForm).
Result<int64_t> saved_activation_bytes(const Graph& g, const Bindings& bind, int chunk, Fp8Recipe r);
// The same with saved_storage(g) and fp8_saved_forms computed once by the caller.
Result<int64_t> saved_activation_bytes(const Graph& g, const Bindings& bind, int chunk,
                                       const std::vector<int>& storage, const std::vector<SavedForm>& forms,
                                       Fp8Recipe r);

}  // namespace sc
