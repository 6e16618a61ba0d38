#include "trace/lower.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "base/cancel.h"
#include "trace/schedule.h"

namespace sc {
namespace {

class Lowerer {
 public:
  Lowerer(const Graph& g, const Bindings& bind, const HardwareProfile& hw, const LowerOptions& o)
      : g_(g), bind_(bind), hw_(hw), o_(o) {}

  Result<RoleProgram> run() {
    partition();
    std::vector<int> pending;  // DP gradient buckets, issued when their grads are final
    for (int id : opt_)
      if (g_.ops[id].grad_bucket) pending.push_back(id);
    // Saved activations per chunk: all of them arrive with the forward step;
    // the backward step frees what only it reads, the weight-gradient step
    // (zero-bubble) what the weight-gradient ops read.
    std::vector<int64_t> saved(static_cast<size_t>(o_.virtual_stages), 0), for_w(saved);
    for (int c = 0; c < o_.virtual_stages; ++c) {
      SC_ASSIGN_OR_RETURN(saved[c], saved_activation_bytes(g_, bind_, c));
      std::set<int> read_by_w;
      for (int id : seg_[{StepKind::kWeight, c}])
        for (int t : g_.ops[id].inputs)
          if (is_saved_activation(g_, t)) read_by_w.insert(t);
      for (int t : read_by_w) {
        SC_ASSIGN_OR_RETURN(int64_t b, bytes_of(t));
        for_w[c] += b;
      }
    }
    int64_t alive = 0;
    for (const Step& st : pipeline_schedule(o_.schedule, o_.pp, o_.virtual_stages, o_.stage, o_.micro_batches)) {
      SC_RETURN_IF_ERROR(check_cancelled("lowering"));
      for (int id : seg_[{st.kind, st.chunk}]) {
        SC_RETURN_IF_ERROR(emit(id, st.mb));
        for (auto it = pending.begin(); it != pending.end();) {
          if (final_inputs(g_.ops[*it])) {
            SC_RETURN_IF_ERROR(emit(*it, -1));
            it = pending.erase(it);
          } else {
            ++it;
          }
        }
      }
      // Saved activations live from a chunk's forward to its backward (to
      // its weight-gradient step when the schedule splits it off).
      if (st.kind == StepKind::kForward) alive += saved[st.chunk];
      if (st.kind == StepKind::kBackward) alive -= saved[st.chunk] - for_w[st.chunk];
      if (st.kind == StepKind::kWeight) alive -= for_w[st.chunk];
      p_.activation_timeline.push_back(alive);
      p_.activation_peak = std::max(p_.activation_peak, alive);
    }
    // The rest of the optimizer phase (Megatron's finalize_model_grads, then
    // the optimizer step) starts once the schedule is done: after the last
    // compute node and the last send. Without that barrier a reduction over
    // another pipeline stage (the tied-embedding group) could take this
    // rank's communication slot while a peer still waits for a send.
    barrier_.clear();
    if (last_compute_ >= 0) barrier_.push_back(static_cast<uint64_t>(last_compute_));
    if (last_send_ >= 0) barrier_.push_back(static_cast<uint64_t>(last_send_));
    for (int id : opt_)
      if (!done_.count(id)) SC_RETURN_IF_ERROR(emit(id, -1));
    finish_memory();
    return std::move(p_);
  }

 private:
  // Ops by step kind and chunk, in program order; zero-bubble moves the
  // weight-gradient ops (and what only they read) into W steps.
  void partition() {
    std::set<int> w;
    if (o_.schedule == Schedule::kZeroBubble) {
      std::map<int, std::vector<int>> readers;
      for (int id : g_.order)
        for (int t : g_.ops[id].inputs) readers[t].push_back(id);
      for (auto it = g_.order.rbegin(); it != g_.order.rend(); ++it) {
        const Op& o = g_.ops[*it];
        if (o.phase != Phase::kBackward) continue;
        bool only_w = !o.outputs.empty();
        for (int t : o.outputs)
          for (int r : readers[t]) only_w &= w.count(r) > 0;
        // Input-gradient compute stays in B even where only a weight gradient
        // reads it (stage 0's chain down to the embedding); W takes the
        // weight-gradient ops and the gathers/views that exist only for them.
        bool feeder = o.kind == OpKind::kCollective || o.kind == OpKind::kView;
        if (o.wgrad || (only_w && feeder)) w.insert(o.id);
      }
    }
    for (int id : g_.order) {
      const Op& o = g_.ops[id];
      if (o.phase == Phase::kOptimizer) {
        opt_.push_back(id);
        continue;
      }
      StepKind k = o.phase == Phase::kForward ? StepKind::kForward
                   : w.count(id)              ? StepKind::kWeight
                                              : StepKind::kBackward;
      seg_[{k, o.chunk}].push_back(id);
      if (!o.ring_axis.empty()) ring_index_[id] = static_cast<int64_t>(ring_index_.size());
      for (int t : o.outputs)
        if (persistent(t)) expected_[t] += o_.micro_batches;
    }
  }

  bool final_inputs(const Op& o) const {
    for (int t : o.inputs) {
      auto e = expected_.find(t);
      auto d = writes_.find(t);
      if (e == expected_.end() || d == writes_.end() || d->second != e->second) return false;
    }
    return true;
  }

  bool persistent(int t) const { return g_.tensors[t].kind == TensorKind::kWeightGrad; }

  const std::vector<uint64_t>* nodes_of(int t, int64_t mb) const {
    if (persistent(t)) {
      auto it = grad_.find(t);
      return it == grad_.end() ? nullptr : &it->second;
    }
    auto it = act_.find({mb, t});
    return it == act_.end() ? nullptr : &it->second;
  }

  void produced(int t, int64_t mb, std::vector<uint64_t> nodes) {
    if (persistent(t)) {
      grad_[t] = std::move(nodes);
      writes_[t]++;
    } else {
      act_[{mb, t}] = std::move(nodes);
    }
  }

  // ZeRO flat shards: 1/degree of a buffer, rounded up.
  int64_t shard(const Op& op, int64_t v) const {
    if (op.flat_shard_axis.empty()) return v;
    int64_t d = bind_.at(op.flat_shard_axis);
    return (v + d - 1) / d;
  }

  Result<int64_t> bytes_of(int t) const {
    return g_.tensors[t].local_bytes().eval(bind_, g_.tensors[t].name + " bytes");
  }

  Status emit(int id, int64_t mb) {
    const Op& op = g_.ops[id];
    done_.insert(id);
    std::set<uint64_t> deps;
    for (int t : op.inputs)
      if (auto* n = nodes_of(t, mb)) deps.insert(n->begin(), n->end());
    if (op.kind == OpKind::kView) {
      for (int t : op.outputs) produced(t, mb, std::vector<uint64_t>(deps.begin(), deps.end()));
      // A view shares its input's memory.
      if (auto it = buf_of_.find({mb, op.inputs.empty() ? -1 : op.inputs[0]}); it != buf_of_.end())
        for (int t : op.outputs) buf_of_[{mb, t}] = it->second;
      return ok_status();
    }
    deps.insert(barrier_.begin(), barrier_.end());
    if (op.after_op >= 0)
      if (auto it = op_node_.find({mb, op.after_op}); it != op_node_.end()) deps.insert(it->second);
    // Accumulation into the persistent main grad written before.
    for (int t : op.outputs)
      if (persistent(t) && op.phase != Phase::kOptimizer)
        if (auto* n = nodes_of(t, mb)) deps.insert(n->begin(), n->end());

    if (!op.ring_axis.empty()) return emit_ring(op, id, mb, std::move(deps));
    TraceNode node;
    node.id = p_.nodes.size();
    node.name = (mb >= 0 ? "mb" + std::to_string(mb) + "." : std::string()) + phase_name(op.phase) + "." + op.name;
    std::string axis;
    int64_t peer = -1;
    if (op.kind == OpKind::kCollective) {
      node.kind = TraceNodeKind::kCollective;
      node.coll = op.coll;
      axis = op.axis;
      for (int t : op.inputs) {
        SC_ASSIGN_OR_RETURN(int64_t b, bytes_of(t));
        node.comm_size += b;
      }
      node.comm_size = shard(op, node.comm_size);
      if (auto it = last_coll_.find(axis); it != last_coll_.end()) deps.insert(it->second);
      last_coll_[axis] = node.id;
    } else if (op.kind == OpKind::kSend || op.kind == OpKind::kRecv) {
      const bool send = op.kind == OpKind::kSend, bwd = op.phase == Phase::kBackward;
      node.kind = send ? TraceNodeKind::kSend : TraceNodeKind::kRecv;
      SC_ASSIGN_OR_RETURN(node.comm_size, bytes_of(send ? op.inputs[0] : op.outputs[0]));
      // Boundary b joins virtual stages b and b + 1. Forward goes up,
      // backward comes down; both ends compute the same tag.
      const int64_t b = op.boundary, pv = o_.pp * o_.virtual_stages;
      peer = (send != bwd ? b + 1 : b) % o_.pp;
      node.tag = static_cast<int32_t>((mb * 2 + (bwd ? 1 : 0)) * pv + b);
      if (!send) deps.clear();  // receives are posted up front
      else last_send_ = static_cast<int64_t>(node.id);
    } else {
      node.kind = TraceNodeKind::kCompute;
      SC_ASSIGN_OR_RETURN(node.num_ops, op.local_flops.eval(bind_, op.name + " flops"));
      // A lookup (or its scatter-add backward) touches the rows it gathers,
      // not the whole table: count the activation side twice instead.
      const bool lookup = op.kind == OpKind::kEmbedding;
      int64_t bytes = 0;
      for (const auto* list : {&op.inputs, &op.outputs})
        for (int t : *list) {
          TensorKind k = g_.tensors[t].kind;
          if (lookup && (k == TensorKind::kWeight || k == TensorKind::kWeightGrad)) continue;
          SC_ASSIGN_OR_RETURN(int64_t b, bytes_of(t));
          bytes += lookup ? 2 * b : b;
        }
      if (op.kind == OpKind::kOptimizer) {
        // Adam state (master weight + moments): read and written once.
        SC_ASSIGN_OR_RETURN(int64_t n, g_.tensors[op.inputs[0]].local_numel().eval(bind_, op.name + " params"));
        bytes += 2 * n * o_.optimizer_bytes_per_param;
      }
      DType dt = op.kind == OpKind::kMatmul ? o_.compute_dtype : g_.tensors[op.outputs[0]].dtype;
      set_cost(node, dt, shard(op, node.num_ops), shard(op, bytes));
      if (last_compute_ >= 0) deps.insert(static_cast<uint64_t>(last_compute_));
      last_compute_ = static_cast<int64_t>(node.id);
    }
    node.deps.assign(deps.begin(), deps.end());
    for (int t : op.outputs) produced(t, mb, {node.id});
    op_node_[{mb, id}] = node.id;
    const int64_t at = static_cast<int64_t>(node.id);
    push(std::move(node), axis, peer, 0);
    return track_buffers(op, mb, at, at);
  }

  // Activation memory, buffer by buffer: an activation (mask, activation
  // gradient, gathered parameter, received or collective output) of one
  // micro-batch lives from the node that writes it to the last node that
  // reads it (through views). Weights and main gradients are resident and
  // counted apart.
  bool transient_kind(int t) const {
    const TensorKind k = g_.tensors[t].kind;
    return k == TensorKind::kActivation || k == TensorKind::kMask || k == TensorKind::kGradient ||
           k == TensorKind::kInput;
  }
  Status track_buffers(const Op& op, int64_t mb, int64_t first, int64_t last) {
    if (mb < 0) return ok_status();
    for (int t : op.inputs)
      if (auto it = buf_of_.find({mb, t}); it != buf_of_.end()) bufs_[it->second].last = std::max(bufs_[it->second].last, last);
    for (int t : op.outputs) {
      if (!transient_kind(t)) continue;
      SC_ASSIGN_OR_RETURN(int64_t b, bytes_of(t));
      buf_of_[{mb, t}] = static_cast<int>(bufs_.size());
      bufs_.push_back({b, first, last});
    }
    return ok_status();
  }

  // Bytes alive at each node (written at or before it, read at or after it).
  void finish_memory() {
    std::vector<int64_t> delta(p_.nodes.size() + 1, 0);
    for (const Buf& b : bufs_) {
      delta[static_cast<size_t>(b.first)] += b.bytes;
      delta[static_cast<size_t>(b.last) + 1] -= b.bytes;
    }
    int64_t alive = 0;
    p_.live_activation.resize(p_.nodes.size());
    for (size_t i = 0; i < p_.nodes.size(); ++i) {
      alive += delta[i];
      p_.live_activation[i] = alive;
      p_.live_activation_peak = std::max(p_.live_activation_peak, alive);
    }
  }

  // FLOPs, bytes touched (>= 1: 0 stalls the simulator) and the roofline
  // time rounded to the nearest µs, at least 1.
  void set_cost(TraceNode& n, DType dt, int64_t flops, int64_t bytes) const {
    n.num_ops = flops;
    n.tensor_size = static_cast<uint64_t>(std::max<int64_t>(bytes, 1));
    double us = roofline_micros(hw_, dt, static_cast<double>(flops), static_cast<double>(bytes));
    n.duration_micros = static_cast<uint64_t>(std::max<double>(1.0, std::llround(us)));
  }

  void push(TraceNode node, const std::string& axis, int64_t peer_stage, int64_t ring_offset) {
    p_.nodes.push_back(std::move(node));
    p_.node_axis.push_back(axis);
    p_.peer_stage.push_back(peer_stage);
    p_.ring_offset.push_back(ring_offset);
  }

  // Ring attention in `degree` steps: step j computes on the K/V block it
  // holds while sending that block to the next rank of the ring and
  // receiving the following one from the previous rank (backward also
  // circulates dK/dV, twice the bytes). Compute is split evenly.
  Status emit_ring(const Op& op, int id, int64_t mb, std::set<uint64_t> deps) {
    const int64_t n = bind_.at(op.ring_axis);
    SC_ASSIGN_OR_RETURN(int64_t flops, op.local_flops.eval(bind_, op.name + " flops"));
    int64_t bytes = 0, block = 0;
    for (const auto* list : {&op.inputs, &op.outputs})
      for (int t : *list) {
        SC_ASSIGN_OR_RETURN(int64_t b, bytes_of(t));
        bytes += b;
      }
    for (int i : {1, 2}) {
      SC_ASSIGN_OR_RETURN(int64_t b, bytes_of(op.inputs[i]));
      block += b;
    }
    if (op.phase == Phase::kBackward) block *= 2;
    const int64_t rings = static_cast<int64_t>(ring_index_.size());
    const std::string prefix = (mb >= 0 ? "mb" + std::to_string(mb) + "." : std::string()) + phase_name(op.phase) +
                               "." + op.name;
    std::set<uint64_t> inputs = deps;
    int64_t prev_recv = -1;
    uint64_t last = 0;
    for (int64_t j = 0; j < n; ++j) {
      const int64_t tag = ((mb * rings + ring_index_.at(id)) * n + j) * 2 + (op.phase == Phase::kBackward ? 1 : 0);
      if (tag > INT32_MAX)
        return make_error(ErrorCode::kInvalidArgument, "too many ring-attention steps for int32 message tags",
                          "parallel.cp");
      int64_t recv = -1;
      if (j + 1 < n) {
        auto p2p = [&](const char* what, TraceNodeKind kind, const std::set<uint64_t>& d, int64_t offset) {
          TraceNode x;
          x.id = p_.nodes.size();
          x.name = prefix + what + std::to_string(j);
          x.kind = kind;
          x.comm_size = block;
          x.tag = static_cast<int32_t>(tag);
          x.deps.assign(d.begin(), d.end());
          const int64_t node_id = static_cast<int64_t>(x.id);
          push(std::move(x), op.ring_axis, -1, offset);
          return node_id;
        };
        last_send_ = p2p(".kv_send", TraceNodeKind::kSend,
                         prev_recv >= 0 ? std::set<uint64_t>{static_cast<uint64_t>(prev_recv)} : inputs, +1);
        recv = p2p(".kv_recv", TraceNodeKind::kRecv, {}, -1);
      }
      TraceNode c;
      c.id = p_.nodes.size();
      c.name = prefix + ".step" + std::to_string(j);
      c.kind = TraceNodeKind::kCompute;
      set_cost(c, o_.compute_dtype, flops / n + (j + 1 == n ? flops % n : 0),
               bytes / n + (j + 1 == n ? bytes % n : 0));
      std::set<uint64_t> cd = inputs;
      if (prev_recv >= 0) cd.insert(static_cast<uint64_t>(prev_recv));
      if (last_compute_ >= 0) cd.insert(static_cast<uint64_t>(last_compute_));
      c.deps.assign(cd.begin(), cd.end());
      last_compute_ = static_cast<int64_t>(c.id);
      last = c.id;
      push(std::move(c), "", -1, 0);
      prev_recv = recv;
    }
    for (int t : op.outputs) produced(t, mb, {last});
    op_node_[{mb, id}] = last;
    return track_buffers(op, mb, static_cast<int64_t>(last), static_cast<int64_t>(last));
  }

  const Graph& g_;
  const Bindings& bind_;
  const HardwareProfile& hw_;
  LowerOptions o_;
  RoleProgram p_;
  std::map<std::pair<StepKind, int>, std::vector<int>> seg_;
  std::vector<int> opt_;
  std::map<std::pair<int64_t, int>, std::vector<uint64_t>> act_;  // (micro-batch, tensor) -> nodes
  std::map<int, std::vector<uint64_t>> grad_;                     // main grad -> last writer
  std::map<int, int64_t> expected_, writes_;                      // main grad writes per iteration
  std::set<int> done_;
  std::map<std::string, uint64_t> last_coll_;
  int64_t last_compute_ = -1, last_send_ = -1;
  std::vector<uint64_t> barrier_;  // deps of every op after the schedule
  std::map<std::pair<int64_t, int>, uint64_t> op_node_;  // (micro-batch, op) -> node
  std::map<int, int64_t> ring_index_;                     // ring-attention op -> index (tags)
  struct Buf { int64_t bytes, first, last; };
  std::vector<Buf> bufs_;                                 // activation buffers of this program
  std::map<std::pair<int64_t, int>, int> buf_of_;         // (micro-batch, tensor) -> buffer
};

}  // namespace

Result<int64_t> saved_activation_bytes(const Graph& g, const Bindings& bind, int chunk) {
  std::set<int> saved;
  for (int id : g.order) {
    const Op& o = g.ops[id];
    if (o.phase != Phase::kBackward || o.chunk != chunk) continue;
    for (int t : o.inputs)
      if (is_saved_activation(g, t)) saved.insert(t);
  }
  int64_t total = 0;
  for (int t : saved) {
    SC_ASSIGN_OR_RETURN(int64_t b, g.tensors[t].local_bytes().eval(bind, g.tensors[t].name + " bytes"));
    total += b;
  }
  return total;
}

Result<RoleProgram> lower_program(const Graph& g, const Bindings& bind, const HardwareProfile& hw,
                                  const LowerOptions& o) {
  return Lowerer(g, bind, hw, o).run();
}

RankTrace instantiate_rank(const RoleProgram& p, const RankLayout& layout, int64_t rank) {
  RankTrace t;
  t.rank = rank;
  t.nodes = p.nodes;
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    TraceNode& n = t.nodes[i];
    if (n.kind == TraceNodeKind::kCollective) n.group = layout.group_id(rank, p.node_axis[i]);
    else if (n.kind != TraceNodeKind::kCompute && i < p.ring_offset.size() && p.ring_offset[i] != 0) {
      const int64_t deg = layout.degree(p.node_axis[i]);
      const int64_t c = (layout.coord(rank, p.node_axis[i]) + p.ring_offset[i] + deg) % deg;
      n.peer = static_cast<int32_t>(layout.with_coord(rank, p.node_axis[i], c));
    } else if (n.kind != TraceNodeKind::kCompute) {
      n.peer = static_cast<int32_t>(layout.with_coord(rank, "pp", p.peer_stage[i]));
    }
  }
  return t;
}

}  // namespace sc
