#include "trace/lower.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>

#include "base/cancel.h"
#include "base/check.h"
#include "cost/fp8_cost.h"
#include "cost/kernel_cost.h"
#include "cost/ssd_cost.h"
#include "graph/ops.h"
#include "trace/schedule.h"

namespace sc {
namespace {

class Lowerer {
 public:
  Lowerer(const Graph& g, const Bindings& bind, const HardwareProfile& hw, const LowerOptions& o)
      : g_(g), bind_(bind), hw_(hw), o_(o), fp8_hw_(fp8_training_hw(hw)) {}

  Result<RoleProgram> run() {
    partition();
    std::vector<int> pending;  // DP gradient buckets, issued when their grads are final
    for (int id : opt_)
      if (g_.ops[id].grad_bucket) pending.push_back(id);
    // Saved activations per chunk: all of them arrive with the forward step;
    // the backward step frees what only it reads, the weight-gradient step
    // (zero-bubble) what the weight-gradient ops read.
    // Under FP8 a buffer is kept as TE keeps it (cost/fp8_cost.h,
    // SavedForm): the weight-gradient step holds the part its ops read.
    std::vector<int64_t> saved(static_cast<size_t>(o_.virtual_stages), 0), for_w(saved);
    storage_ = saved_storage(g_);
    copy_reader_ = fp8_copy_readers(g_, o_.fp8_recipe);
    forms_ = fp8_saved_forms(g_, o_.fp8_recipe, storage_, copy_reader_);
    for (int c = 0; c < o_.virtual_stages; ++c) {
      SC_ASSIGN_OR_RETURN(saved[c], saved_activation_bytes(g_, bind_, c, storage_, forms_, o_.fp8_recipe));
      std::map<int, SavedForm> read_by_w;  // buffers, as saved_activation_bytes counts them: the parts read
      for (int id : seg_[{StepKind::kWeight, c}])
        for (int t : g_.ops[id].inputs) {
          if (!is_saved_activation(g_, t)) continue;
          const int b = storage_[static_cast<size_t>(t)];
          const SavedForm r = read_part(forms_[static_cast<size_t>(b)], copy_reader_[static_cast<size_t>(id)]);
          SavedForm& f = read_by_w.try_emplace(b, SavedForm{false, false}).first->second;
          f.high = f.high || r.high, f.fp8 = f.fp8 || r.fp8;
        }
      for (auto [t, part] : read_by_w) {
        SC_ASSIGN_OR_RETURN(int64_t b, saved_buffer_bytes(g_, bind_, t, part, o_.fp8_recipe));
        for_w[c] += b;
      }
    }
    int64_t alive = 0;
    const std::vector<Step> steps =
        pipeline_schedule(o_.schedule, o_.pp, o_.virtual_stages, o_.stage, o_.micro_batches, o_.ep_a2a_overlap);
    // A micro-batch's lookup tables are dropped after its last step: only
    // the micro-batches in flight hold state.
    std::vector<size_t> last_step(static_cast<size_t>(std::max<int64_t>(o_.micro_batches, 0)), 0);
    for (size_t i = 0; i < steps.size(); ++i)
      if (steps[i].mb >= 0 && steps[i].mb < o_.micro_batches) last_step[static_cast<size_t>(steps[i].mb)] = i;
    // One node per non-view op and step (ring attention: up to 3 per ring step).
    size_t expect = opt_.size();
    // grad_reduce_every_micro_batch: each reduce-scattered bucket also
    // once per micro-batch before the last.
    every_mb_ = o_.grad_reduce_every_micro_batch && o_.micro_batches > 1;
    if (every_mb_)
      for (int id : pending)
        if (g_.ops[id].coll == CollectiveType::kReduceScatter) expect += static_cast<size_t>(o_.micro_batches - 1);
    for (int id : g_.order) defer_reductions_ |= g_.ops[id].cause.kind == CauseKind::kZeroParamGather;
    for (const Step& st : steps)
      for (int id : seg_[{st.kind, st.chunk}]) {
        const Op& op = g_.ops[id];
        if (op.kind == OpKind::kView) continue;
        expect += op.ring_axis.empty() ? 1 : 3 * static_cast<size_t>(std::max<int64_t>(1, bind_.at(op.ring_axis)));
      }
    if (!o_.amax_axis.empty()) expect += steps.size();  // an amax all-reduce per step at most
    p_.nodes.reserve(expect);
    p_.name_ref.reserve(expect);
    p_.node_mb.reserve(expect);
    p_.node_axis.reserve(expect);
    p_.peer_stage.reserve(expect);
    p_.ring_offset.reserve(expect);
    bufs_.reserve(expect);  // about one activation buffer per node: no regrowth copies
    std::set<int> forward_seen;  // chunks whose first forward step was emitted
    // Interleaved schedules (overlap_param_gather): Megatron-LM's schedule
    // dispatches every bucket of chunks 0 and 1 before the first step, and
    // chunk k + 1's when the virtual micro-batch (forward step count + this
    // stage's rank, "at the same time across the pipeline-parallel group")
    // is the first of chunk k (schedules.py, param_sync_func).
    const bool chunk_gathers = !gather_seq_.empty() && o_.virtual_stages > 1;
    if (chunk_gathers)
      for (int c : {0, 1}) SC_RETURN_IF_ERROR(gathers_of_chunk(c, -1));
    // Delayed scaling's amax reductions: per chunk, the FP8 GEMMs' amax
    // entries Transformer Engine keeps (forward: input, weight and output
    // of each FP8 linear, 3 fp32 values; backward: 2).
    std::vector<int64_t> fp8_linears(static_cast<size_t>(o_.virtual_stages), 0);
    if (!o_.amax_axis.empty())
      for (int c = 0; c < o_.virtual_stages; ++c)
        for (int id : seg_[{StepKind::kForward, c}])
          if (fp8_op(id) && fp8_gemm_role(g_.ops[id]) == Fp8GemmRole::kFprop) ++fp8_linears[static_cast<size_t>(c)];
    int64_t forward_steps = 0;
    // overlap_p2p_comm: the steady 1F1B phase of the interleaved schedule
    // (trace/schedule.h) is where Megatron-LM posts the sends asynchronously
    // (schedules.py, pp_post_forward / pp_post_backward); warm-up and
    // cool-down communicate blocking (without overlap_p2p_comm_warmup_flush).
    const StepRange steady =
        o_.overlap_p2p_comm ? pipeline_steady_steps(Schedule::kInterleaved, o_.pp, o_.virtual_stages, o_.stage,
                                                    o_.micro_batches, o_.ep_a2a_overlap)
                            : StepRange{};
    // overlap_moe_expert_parallel_comm: steps begin + 2 i (a forward) and
    // begin + 2 i + 1 (a backward) of the steady phase run as one combined
    // step (combined_1f1b.py); warm-up and cool-down steps run alone.
    const StepRange combined =
        o_.ep_a2a_overlap
            ? pipeline_steady_steps(o_.schedule, o_.pp, o_.virtual_stages, o_.stage, o_.micro_batches, true)
            : StepRange{};
    // Before a step's ops: the interleaved schedule's chunk gathers and
    // whether it is a chunk's first forward (overlap_param_gather).
    const auto begin_step = [&](const Step& st) -> Status {
      if (chunk_gathers && st.kind == StepKind::kForward) {
        const int64_t x = forward_steps++ + o_.stage;
        if (x % o_.pp == 0 && x / o_.pp < o_.virtual_stages) {
          const int64_t next = x / o_.pp + 1;
          if (next >= 2 && next < o_.virtual_stages) SC_RETURN_IF_ERROR(gathers_of_chunk(static_cast<int>(next), last_compute_));
        }
      }
      first_forward_ = !gather_seq_.empty() && st.kind == StepKind::kForward && forward_seen.insert(st.chunk).second;
      return ok_status();
    };
    // One op of a step, and the gradient buckets it makes ready.
    const auto emit_step_op = [&](int id, int64_t mb) -> Status {
      if (first_forward_) SC_RETURN_IF_ERROR(param_gathers_before(id));
      // ZeRO-3's ready reductions follow the unit's gathers (its dense and
      // its experts' weights), before the op that reads them.
      const bool gather = g_.ops[id].cause.kind == CauseKind::kZeroParamGather;
      if (gathered_ && !gather) SC_RETURN_IF_ERROR(flush_partials());
      gathered_ |= gather;
      SC_RETURN_IF_ERROR(emit(id, mb));
      // A bucket becomes ready only when a main grad is written: scan the
      // pending ones (in order, as each op is issued) only after a write.
      if (!grads_written_) return ok_status();
      grads_written_ = false;
      for (auto it = pending.begin(); it != pending.end();) {
        if (every_mb_) SC_RETURN_IF_ERROR(partial_reduces(*it));
        if (final_inputs(g_.ops[*it])) {
          deferred_.push_back({*it, true});
          if (!defer_reductions_) SC_RETURN_IF_ERROR(flush_partials());
          it = pending.erase(it);
        } else {
          ++it;
        }
      }
      return ok_status();
    };
    // A combined order: its first step's ops as micro-batch `first`, its
    // second's as `second`; each ep all-to-all on the communication stream
    // after its micro-batch's event (emit, combining_), the end of the
    // last node that micro-batch ran on the compute stream.
    const auto emit_combined = [&](const std::vector<CombinedOp>& order, int64_t first, int64_t second) -> Status {
      combining_ = true;
      event_.clear();
      for (const CombinedOp& c : order) {
        const int64_t mb = c.second ? second : first;
        SC_RETURN_IF_ERROR(emit_step_op(c.op, mb));
        const OpKind k = g_.ops[c.op].kind;
        if (!c.delayed && k != OpKind::kView && k != OpKind::kCollective && k != OpKind::kSend &&
            k != OpKind::kRecv && last_compute_ >= 0)
          event_[mb] = last_compute_;
      }
      combining_ = false;
      return ok_status();
    };
    // After a step's ops: its amax reduction, its micro-batch's release,
    // the activation timeline.
    const auto end_step = [&](const Step& st, size_t si) {
      if ((st.kind == StepKind::kForward || st.kind == StepKind::kBackward) && st.mb >= 0 &&
          fp8_linears[static_cast<size_t>(st.chunk)] > 0)
        emit_amax_reduce(st.kind == StepKind::kForward, st.mb,
                         fp8_linears[static_cast<size_t>(st.chunk)] * (st.kind == StepKind::kForward ? 3 : 2) * 4);
      if (st.mb >= 0 && st.mb < o_.micro_batches && last_step[static_cast<size_t>(st.mb)] == si) release(st.mb);
      // Saved activations live from a chunk's forward to its backward (to
      // its weight-gradient step when the schedule splits it off).
      if (st.kind == StepKind::kForward) alive += saved[st.chunk];
      if (st.kind == StepKind::kBackward) alive -= saved[st.chunk] - for_w[st.chunk];
      if (st.kind == StepKind::kWeight) alive -= for_w[st.chunk];
      p_.activation_timeline.push_back(alive);
      p_.activation_peak = std::max(p_.activation_peak, alive);
    };
    size_t tbo_second = steps.size();  // the forward step already emitted with its pair
    for (size_t si = 0; si < steps.size(); ++si) {
      const Step& st = steps[si];
      async_send_ = steady.contains(si);
      SC_RETURN_IF_ERROR(check_cancelled("lowering"));
      if (si == tbo_second) {
        end_step(st, si);
        continue;
      }
      // Two-batch overlap (a serving iteration): a forward step and the
      // next step with ops, the forward of another micro-batch of the same
      // chunk (the backward steps between are empty), as one step.
      if (o_.two_batch_overlap && st.kind == StepKind::kForward) {
        size_t j = si + 1;
        while (j < steps.size() && seg_[{steps[j].kind, steps[j].chunk}].empty()) ++j;
        const std::vector<CombinedOp>* order = nullptr;
        if (j < steps.size() && steps[j].kind == StepKind::kForward && steps[j].chunk == st.chunk &&
            steps[j].mb != st.mb)
          order = tbo_order(st.chunk);
        if (order) {
          SC_RETURN_IF_ERROR(begin_step(st));  // (no parameter gathers in a serving iteration)
          first_forward_ = false;
          SC_RETURN_IF_ERROR(emit_combined(*order, st.mb, steps[j].mb));
          SC_RETURN_IF_ERROR(flush_partials());
          end_step(st, si);
          tbo_second = j;
          continue;
        }
      }
      if (combined.contains(si) && (si - combined.begin) % 2 == 0 && combined.contains(si + 1) &&
          st.kind == StepKind::kForward && steps[si + 1].kind == StepKind::kBackward) {
        const Step& sb = steps[si + 1];
        SC_RETURN_IF_ERROR(begin_step(st));
        const std::vector<CombinedOp>* order = first_forward_ ? nullptr : combined_order(st.chunk, sb.chunk);
        if (order) {
          // Megatron-Core's combined step: both micro-batches' ops in one
          // order (combined_order), the ep all-to-alls on their stream.
          SC_RETURN_IF_ERROR(emit_combined(*order, st.mb, sb.mb));
          SC_RETURN_IF_ERROR(flush_partials());
          end_step(st, si);
          end_step(sb, si + 1);
          ++si;
          continue;
        }
        // Not combinable (a chunk's first forward, or a layer the
        // sub-module split does not fit): the forward alone, as without
        // the overlap; the backward follows as its own step.
        for (int id : seg_[{st.kind, st.chunk}]) SC_RETURN_IF_ERROR(emit_step_op(id, st.mb));
        first_forward_ = false;
        SC_RETURN_IF_ERROR(flush_partials());
        end_step(st, si);
        continue;
      }
      SC_RETURN_IF_ERROR(begin_step(st));
      for (int id : seg_[{st.kind, st.chunk}]) SC_RETURN_IF_ERROR(emit_step_op(id, st.mb));
      first_forward_ = false;
      SC_RETURN_IF_ERROR(flush_partials());
      end_step(st, si);
    }
    async_send_ = false;
    // The rest of the optimizer phase (Megatron's finalize_model_grads, then
    // the optimizer step) starts once the schedule is done: after the last
    // compute node and the last send. Without that barrier a reduction over
    // another pipeline stage (the tied-embedding group) could take this
    // rank's communication slot while a peer still waits for a send.
    barrier_.clear();
    if (last_compute_ >= 0) barrier_.push_back(static_cast<uint64_t>(last_compute_));
    if (last_send_ >= 0) barrier_.push_back(static_cast<uint64_t>(last_send_));
    if (last_shared_ >= 0) barrier_.push_back(static_cast<uint64_t>(last_shared_));
    for (int id : opt_)
      if (!done_[static_cast<size_t>(id)]) SC_RETURN_IF_ERROR(emit(id, -1));
    finish_memory();
    return std::move(p_);
  }

 private:
  // Ops by step kind and chunk, in program order; zero-bubble moves the
  // weight-gradient ops (and what only they read) into W steps.
  void partition() {
    const size_t nt = g_.tensors.size(), no = g_.ops.size();
    tensor_kind_.resize(nt);
    for (size_t t = 0; t < nt; ++t) tensor_kind_[t] = static_cast<uint8_t>(g_.tensors[t].kind);
    tensor_bytes_.assign(nt, -1);
    expected_.assign(nt, 0);
    writes_.assign(nt, 0);
    done_.assign(no, 0);
    cost_.assign(no, OpCost{});
    kernel_us_.assign(no, -1.0);
    op_axis_.assign(no, -1);
    if (kernel_model()) plan_ = plan_fusion(g_);
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
    if (o_.moe_shared_expert_overlap) find_shared_experts();
    if (o_.moe_allgather) find_allgather_dispatch();
    find_tp_overlap(o_.tp_comm_overlap);
    if (o_.overlap_param_gather) find_param_gathers();
    if (o_.fp8_recipe != Fp8Recipe::kNone) find_fp8_gathers();
    if (o_.deepep_nvl > 1) sides_ = true;  // DeepEP's NVLink leg runs beside the RDMA leg
    if (o_.overlap_p2p_comm) sides_ = true;  // the steady phase's sends are posted asynchronously
    if (o_.ep_a2a_overlap) sides_ = true;    // the combined steps' ep all-to-alls on their stream
    if (o_.two_batch_overlap) sides_ = true;  // the paired forwards' ep all-to-alls on their stream
  }

  // ---- Megatron-Core's EP all-to-all overlap (overlap_moe_expert_parallel_comm) ----
  // A combined step (model_chunk_schedule_plan.py, TransformerModelChunkSchedulePlan.run
  // and TransformerLayerSchedulePlan.run) runs the forward's pre-process and
  // the backward's post-process, then forward layer i with backward layer
  // n - 1 - i, each pair in this order (comm: the EP stream; comp: compute):
  //   comm combine_bwd | comp attention_fwd | comp experts_bwd (dgrad, and
  //   wgrad unless delayed) | comm dispatch_fwd | comp experts wgrad
  //   (delay_wgrad_compute) | comm dispatch_bwd | comp experts_fwd | comm
  //   combine_fwd | comp attention_bwd | comp attention wgrad (delayed:
  //   beside the next layer's combine_bwd; the first layer's after the
  //   step's sends)
  // then the layers left over, the forward's post-process and the
  // backward's pre-process. The graph's MoE layer is split at its two ep
  // all-to-alls: forward, [attention .. permute] dispatch [experts] combine
  // [unpermute, residual]; backward, [residual .. unpermute's backward]
  // combine [experts] dispatch [permute's backward .. attention]. The
  // compute around an all-to-all that Megatron-Core runs on the
  // communication stream (the unpermute and its backward) stays on the
  // compute stream: the forward's unpermute after the backward's attention
  // (the compute stream runs in order), the backward's unpermute before
  // its combine all-to-all. The shared experts run with the attention
  // (Megatron-Core computes them in the pre-dispatch node under this
  // overlap: fine_grained_callables.py). A layer without two ep
  // all-to-alls (dense) is one attention part. Returns null where a moved
  // op would read a tensor before it is written: the pair then runs
  // as two steps.
  struct CombinedOp {
    int op;
    bool second;   // the second step's op: the backward (combined 1F1B) or micro-batch B (two-batch overlap)
    bool delayed;  // a delayed weight-gradient GEMM: records no event
  };
  struct LayerParts {
    std::vector<int> pre, comb_head, comb, mlp, mlp_w, disp, post, pre_w;
    bool moe = false;
  };
  // An expert-parallel all-to-all of the graph (dispatch or combine).
  static bool ep_alltoall(const Op& o) {
    return o.kind == OpKind::kCollective && o.coll == CollectiveType::kAllToAll && o.axis == "ep";
  }
  // An op of the shared experts (named "moe.shared...", or the backward of one).
  bool shared_expert_op(int id) const {
    const auto named = [](const std::string& n) {
      const size_t at = n.find("moe.shared");
      return at != std::string::npos && (at == 0 || n[at - 1] == '.');
    };
    const Op& o = g_.ops[static_cast<size_t>(id)];
    return named(o.name) || (o.fwd_op >= 0 && named(g_.ops[static_cast<size_t>(o.fwd_op)].name));
  }
  // Splits a segment into its ops before the first layer, its layers
  // (consecutive runs of one layer), and its ops after the last; false
  // when a layer's ops are not consecutive.
  bool split_layers(const std::vector<int>& seg, std::vector<int>& head, std::vector<std::vector<int>>& layers,
                    std::vector<int>& tail) const {
    size_t first = seg.size(), last = 0;
    for (size_t i = 0; i < seg.size(); ++i)
      if (g_.ops[static_cast<size_t>(seg[i])].layer >= 0) first = std::min(first, i), last = i;
    if (first == seg.size()) {
      head = seg;
      return true;
    }
    head.assign(seg.begin(), seg.begin() + static_cast<std::ptrdiff_t>(first));
    tail.assign(seg.begin() + static_cast<std::ptrdiff_t>(last) + 1, seg.end());
    std::set<int> seen;
    int cur = -2;
    for (size_t i = first; i <= last; ++i) {
      const int l = g_.ops[static_cast<size_t>(seg[i])].layer;
      if (l != cur && l >= 0) {
        if (!seen.insert(l).second) return false;
        cur = l;
        layers.emplace_back();
      }
      layers.back().push_back(seg[i]);
    }
    return true;
  }
  // The shared experts' ops of a layer, and the collectives / views whose
  // every reader among `ops` is one of them.
  std::set<int> shared_part(const std::vector<int>& ops) const {
    std::set<int> sh;
    for (int id : ops)
      if (shared_expert_op(id)) sh.insert(id);
    if (sh.empty()) return sh;
    for (auto it = ops.rbegin(); it != ops.rend(); ++it) {
      const Op& o = g_.ops[static_cast<size_t>(*it)];
      if (sh.count(*it) || (o.kind != OpKind::kCollective && o.kind != OpKind::kView) || o.outputs.empty()) continue;
      bool any = false, all = true;
      for (int r : ops) {
        const Op& x = g_.ops[static_cast<size_t>(r)];
        for (int t : x.inputs)
          if (std::find(o.outputs.begin(), o.outputs.end(), t) != o.outputs.end()) any = true, all = all && sh.count(r);
      }
      if (any && all) sh.insert(*it);
    }
    return sh;
  }
  LayerParts forward_parts(const std::vector<int>& ops) const {
    LayerParts p;
    std::vector<size_t> a2a;
    for (size_t i = 0; i < ops.size(); ++i)
      if (ep_alltoall(g_.ops[static_cast<size_t>(ops[i])])) a2a.push_back(i);
    if (a2a.size() != 2) {
      p.pre = ops;
      return p;
    }
    p.moe = true;
    const std::set<int> sh = shared_part(ops);
    for (size_t i = 0; i < ops.size(); ++i) {
      const int id = ops[i];
      if (i == a2a[0]) p.disp.push_back(id);
      else if (i == a2a[1]) p.comb.push_back(id);
      else if (i < a2a[0]) p.pre.push_back(id);
      else if (sh.count(id)) p.pre.push_back(id);  // with the attention, before the dispatch
      else if (i < a2a[1]) p.mlp.push_back(id);
      else p.post.push_back(id);
    }
    return p;
  }
  LayerParts backward_parts(const std::vector<int>& ops) const {
    LayerParts p;
    const bool delay = o_.delay_wgrad_compute;
    std::vector<size_t> a2a;
    for (size_t i = 0; i < ops.size(); ++i)
      if (ep_alltoall(g_.ops[static_cast<size_t>(ops[i])])) a2a.push_back(i);
    // Transformer Engine's linears split off their weight-gradient GEMMs
    // (the norms' and the router's gradients stay in the backward).
    const auto wgrad = [&](int id) {
      const Op& o = g_.ops[static_cast<size_t>(id)];
      return delay && o.wgrad && o.kind == OpKind::kMatmul && o.name.find("router") == std::string::npos;
    };
    if (a2a.size() != 2) {
      for (int id : ops) (wgrad(id) ? p.pre_w : p.pre).push_back(id);
      return p;
    }
    p.moe = true;
    const std::set<int> sh = shared_part(ops);
    std::vector<int> shared_bwd;
    for (size_t i = 0; i < ops.size(); ++i) {
      const int id = ops[i];
      if (i == a2a[0]) p.comb.push_back(id);
      else if (i == a2a[1]) p.disp.push_back(id);
      else if (sh.count(id)) (wgrad(id) ? p.pre_w : shared_bwd).push_back(id);
      else if (i < a2a[0]) p.comb_head.push_back(id);
      else if (i < a2a[1]) (wgrad(id) ? p.mlp_w : p.mlp).push_back(id);
      else (wgrad(id) ? p.pre_w : p.pre).push_back(id);
    }
    p.pre.insert(p.pre.begin(), shared_bwd.begin(), shared_bwd.end());  // the attention's backward part
    return p;
  }
  const std::vector<CombinedOp>* combined_order(int fchunk, int bchunk) {
    const auto key = std::make_pair(fchunk, bchunk);
    if (auto it = combined_.find(key); it != combined_.end()) return it->second ? &*it->second : nullptr;
    std::optional<std::vector<CombinedOp>>& slot = combined_[key];
    const std::vector<int>& fs = seg_[{StepKind::kForward, fchunk}];
    const std::vector<int>& bs = seg_[{StepKind::kBackward, bchunk}];
    std::vector<int> fh, ft, bh, bt;
    std::vector<std::vector<int>> fl, bl;
    if (!split_layers(fs, fh, fl, ft) || !split_layers(bs, bh, bl, bt)) return nullptr;
    std::vector<CombinedOp> out;
    const auto add = [&](const std::vector<int>& ids, bool bwd, bool delayed = false) {
      for (int id : ids) out.push_back({id, bwd, delayed});
    };
    add(fh, false);
    add(bh, true);
    const size_t pairs = std::min(fl.size(), bl.size());
    // A layer's delayed attention wgrad runs on the compute stream while the
    // next backward layer's combine all-to-all transfers: Megatron-Core
    // issues that combine (and the unpermute's backward before it) on the
    // communication stream as soon as the attention's dgrad is done, so
    // here it is issued before the wgrad. The last backward layer's waits
    // for the step's end (after its sends).
    std::vector<int> pending_w;
    for (size_t i = 0; i < bl.size(); ++i) {
      const LayerParts b = backward_parts(bl[i]);
      add(b.comb_head, true);
      add(b.comb, true);
      add(pending_w, true, true);
      if (i < pairs) {
        const LayerParts f = forward_parts(fl[i]);
        add(f.pre, false);
        add(b.mlp, true);
        add(f.disp, false);
        add(b.mlp_w, true, true);
        add(b.disp, true);
        add(f.mlp, false);
        add(f.comb, false);
        add(b.pre, true);
        add(f.post, false);
      } else {
        add(b.mlp, true);
        add(b.mlp_w, true, true);
        add(b.disp, true);
        add(b.pre, true);
      }
      pending_w = b.pre_w;
    }
    for (size_t i = pairs; i < fl.size(); ++i) add(fl[i], false);
    add(ft, false);
    add(bt, true);
    add(pending_w, true, true);
    if (!in_write_order(out, fs.size(), bs.size())) return nullptr;
    slot = std::move(out);
    return &*slot;
  }

  // Whether a combined order holds each of its two steps' ops once
  // (`first` and `second` of them) and runs every op after the ops of its
  // own step that write what it reads.
  bool in_write_order(const std::vector<CombinedOp>& out, size_t first, size_t second) const {
    std::map<int, size_t> pos[2];
    for (size_t i = 0; i < out.size(); ++i) pos[out[i].second ? 1 : 0][out[i].op] = i;
    if (pos[0].size() + pos[1].size() != out.size() || pos[0].size() != first || pos[1].size() != second)
      return false;
    for (size_t i = 0; i < out.size(); ++i)
      for (int t : g_.ops[static_cast<size_t>(out[i].op)].inputs) {
        const int pr = g_.tensors[static_cast<size_t>(t)].producer;
        if (pr < 0 || persistent(t)) continue;
        const std::map<int, size_t>& side = pos[out[i].second ? 1 : 0];
        if (auto it = side.find(pr); it != side.end() && it->second > i) return false;
      }
    return true;
  }

  // ---- SGLang's two-batch overlap (serving.two_batch_overlap) ----
  // One forward step of a chunk for two micro-batches A and B, in the
  // order SGLang's DeepSeek operations strategy runs them for prefill
  // (operations_strategy.py: the layer's operations cut at two yields,
  // after the dispatch is launched and after the combine is launched;
  // two_batch_overlap.py alternates A and B at each yield). Per MoE layer,
  // split at its two ep all-to-alls as forward_parts does:
  //   A: [post of the previous layer | pre] dispatch;
  //   B: [post of the previous layer | pre] dispatch;
  //   A: experts, combine;  B: experts, combine
  // so A's dispatch transfers during B's attention, B's dispatch during
  // A's experts, A's combine during B's experts and B's combine during A's
  // post-combine part and next attention. The step's head (embedding) runs
  // with each micro-batch's first layer, its tail after its last; a dense
  // layer runs A then B (nothing to overlap). Null where a moved op would
  // read a tensor before it is written (the two forwards then run as two
  // steps).
  const std::vector<CombinedOp>* tbo_order(int chunk) {
    if (auto it = tbo_.find(chunk); it != tbo_.end()) return it->second ? &*it->second : nullptr;
    std::optional<std::vector<CombinedOp>>& slot = tbo_[chunk];
    const std::vector<int>& fs = seg_[{StepKind::kForward, chunk}];
    std::vector<int> head, tail;
    std::vector<std::vector<int>> layers;
    if (!split_layers(fs, head, layers, tail)) return nullptr;
    std::vector<CombinedOp> out;
    const auto add = [&](const std::vector<int>& ids, bool b) {
      for (int id : ids) out.push_back({id, b, false});
    };
    std::vector<int> before[2] = {head, head};  // what each runs before its next layer's attention
    for (const std::vector<int>& layer : layers) {
      const LayerParts f = forward_parts(layer);
      if (!f.moe) {
        for (const bool b : {false, true}) {
          add(before[b], b);
          add(layer, b);
          before[b].clear();
        }
        continue;
      }
      for (const bool b : {false, true}) {
        add(before[b], b);
        add(f.pre, b);
        add(f.disp, b);
      }
      for (const bool b : {false, true}) {
        add(f.mlp, b);
        add(f.comb, b);
      }
      before[0] = before[1] = f.post;
    }
    for (const bool b : {false, true}) {
      add(before[b], b);
      add(tail, b);
    }
    if (!in_write_order(out, fs.size(), fs.size())) return nullptr;
    slot = std::move(out);
    return &*slot;
  }

  // DeepEP's normal kernels across nodes (LowerOptions::deepep_nvl): an ep
  // all-to-all of the graph is emitted as the two legs DeepEP moves it in.
  // RDMA: each token once to the rank of the same local index on every
  // other node holding one of its experts, an all-to-all over ep_rdma on the
  // compute stream (comm_size: the op's x deepep_rdma_share); NVLink: the
  // exchange among the ep ranks of one node (each token to its experts'
  // GPUs there), an all-to-all over ep_nvl of the op's comm_size, on the
  // side stream (DeepEP forwards while it receives). Both wait for the op's
  // inputs; its readers wait for both (docs/parallelism.md).
  bool deepep_op(const Op& o) const { return o_.deepep_nvl > 0 && ep_alltoall(o); }
  Status emit_deepep(const Op& op, int id, int64_t mb, std::vector<uint64_t> in, const std::string& op_suffix,
                     int64_t op_comm_size) {
    sort_unique(in);
    std::vector<uint64_t> legs;
    for (const bool rdma : {true, false}) {
      if (!rdma && o_.deepep_nvl < 2) continue;  // one ep rank per node: no NVLink leg
      const std::string axis_name = rdma ? "ep_rdma" : "ep_nvl";
      std::string suffix = op_suffix;
      const std::string from = "all_to_all(ep)", to = "all_to_all(" + axis_name + ")";
      if (const size_t at = suffix.rfind(from); at != std::string::npos) suffix.replace(at, from.size(), to);
      else suffix += "." + axis_name;
      TraceNode x;
      x.id = p_.nodes.size();
      x.name = mb_prefix(mb) + suffix;
      x.kind = TraceNodeKind::kCollective;
      x.coll = CollectiveType::kAllToAll;
      const double share = rdma ? o_.deepep_rdma_share : 1.0;
      x.comm_size = std::max<int64_t>(1, std::llround(static_cast<double>(op_comm_size) * share));
      x.output_bytes = static_cast<uint64_t>(x.comm_size);
      const uint8_t axis = p_.axis_id(axis_name);
      std::vector<uint64_t> d = in;
      queue_on_axis(axis, x.id, d);
      sort_unique(d);
      x.deps.assign(d.begin(), d.end());
      legs.push_back(x.id);
      // The RDMA leg of a combined step's all-to-all: on the EP overlap's
      // communication stream (side 4) instead of the compute stream.
      push(std::move(x), axis, -1, 0, mb, RoleProgram::kStoredName, rdma ? (combining_ ? 4 : 0) : 1);
    }
    for (int t : op.outputs) produced(t, mb, legs.data(), legs.size());
    state(mb).op_node[static_cast<size_t>(id)] = static_cast<int64_t>(legs.back());
    return track_buffers(op, mb, static_cast<int64_t>(legs.front()), static_cast<int64_t>(legs.back()));
  }

  // ---- FP8 sequence-parallel all-gathers -------------------------------------
  // A tensor-parallel all-gather whose every reader (through views) is an
  // FP8 GEMM moves the FP8 copy TE quantized before it (1 B/element;
  // cost/fp8_cost.h): the forward input of qkv / fc1, the output gradient
  // of proj / fc2 in backward, the input re-gathered for the weight
  // gradient. One read by a BF16 op (the LM head's input) stays BF16.
  int tp_gather_of(int t) const {
    const int p = g_.tensors[static_cast<size_t>(t)].producer;
    return p >= 0 && tp_coll(g_.ops[static_cast<size_t>(p)], CollectiveType::kAllGather) ? p : -1;
  }
  void find_fp8_gathers() {
    std::vector<std::vector<int>> readers(g_.tensors.size());
    for (int id : g_.order)
      for (int t : g_.ops[id].inputs) readers[static_cast<size_t>(t)].push_back(id);
    fp8_gather_.assign(g_.ops.size(), 0);
    for (int id : g_.order) {
      const Op& o = g_.ops[id];
      if (!tp_coll(o, CollectiveType::kAllGather) || o.outputs.empty() || o.inputs.empty()) continue;
      std::vector<int> todo = {o.outputs[0]};
      bool any = false, all = true;
      while (!todo.empty() && all) {
        const int t = todo.back();
        todo.pop_back();
        for (int r : readers[static_cast<size_t>(t)]) {
          const Op& x = g_.ops[static_cast<size_t>(r)];
          if (x.kind == OpKind::kView) {
            todo.insert(todo.end(), x.outputs.begin(), x.outputs.end());
          } else {
            any = true;
            all = all && fp8_op(r);
          }
        }
      }
      fp8_gather_[static_cast<size_t>(id)] = any && all;
    }
  }

  // ---- Megatron-Core's shared-expert overlap (moe_shared_expert_overlap) ----
  // The shared experts' ops (their GEMMs, activation and gate, and the tp
  // collectives that only feed them or only read their output) run on a
  // stream of their own (side_stream 2) and are issued where Megatron-Core's
  // token dispatcher launches them (token_dispatcher.py, shared_experts.py):
  // forward, everything before fc2 right after the permutation (beside the
  // dispatch all-to-all), fc2 and after once the routed experts are done
  // (beside the combine all-to-all); backward, fc2's gradients where the
  // output gradient arrives (beside the combine's all-to-all), fc1's after
  // the routed experts' fc1 backward (beside the dispatch's). The first op
  // of each run waits for the compute stream (Megatron's wait_stream);
  // the routed path never waits for the shared one until their sum.
  void find_shared_experts() {
    const size_t no = g_.ops.size();
    shared_.assign(no, 0);
    shared_start_.assign(no, 0);
    std::vector<std::vector<int>> readers(g_.tensors.size());
    for (int id : g_.order)
      for (int t : g_.ops[id].inputs) readers[static_cast<size_t>(t)].push_back(id);
    for (int id : g_.order) {
      const Op& o = g_.ops[id];
      if (o.phase == Phase::kOptimizer || o.kind == OpKind::kCollective) continue;
      if (shared_expert_op(id)) shared_[static_cast<size_t>(id)] = 1;
    }
    // Megatron's pre/post_forward_comm: the sequence-parallel gather of the
    // shared experts' input and the reduction of their output, on their
    // stream (and the same collectives' backward).
    for (int id : g_.order) {
      const Op& o = g_.ops[id];
      if (o.phase == Phase::kOptimizer || o.kind != OpKind::kCollective || o.axis != "tp" || o.inputs.empty() ||
          o.outputs.empty())
        continue;
      const int prod = g_.tensors[static_cast<size_t>(o.inputs[0])].producer;
      const std::vector<int>& rd = readers[static_cast<size_t>(o.outputs[0])];
      bool feeds = !rd.empty();
      for (int r : rd) feeds = feeds && shared_[static_cast<size_t>(r)];
      if ((prod >= 0 && shared_[static_cast<size_t>(prod)]) || feeds) shared_[static_cast<size_t>(id)] = 1;
    }
    // Forward shared ops before the layer's shared fc2: launched with the dispatch.
    std::set<int> first_half;
    std::set<int> past_fc2;  // layers
    for (int id : g_.order) {
      const Op& o = g_.ops[id];
      if (o.phase != Phase::kForward || !shared_[static_cast<size_t>(id)]) continue;
      if (o.kind == OpKind::kMatmul && o.name.ends_with("moe.shared.fc2")) past_fc2.insert(o.layer);
      if (!past_fc2.count(o.layer)) first_half.insert(id);
    }
    for (auto& [key, ids] : seg_) {
      const bool fwd = key.first == StepKind::kForward, bwd = key.first == StepKind::kBackward;
      if (fwd || bwd) reorder_shared(ids, fwd, first_half);
      bool prev = false;
      for (int id : ids) {
        if (g_.ops[id].kind == OpKind::kView) continue;
        const bool s = shared_[static_cast<size_t>(id)];
        if (s && !prev) shared_start_[static_cast<size_t>(id)] = 1;
        prev = s;
      }
    }
    sides_ = true;
  }

  // ---- Megatron-Core's all-gather token dispatcher (moe_dispatcher allgather) ----
  // Each ep all-to-all becomes what MoEAllGatherTokenDispatcher issues over
  // ep: toward the experts (its input written by the permutation or the
  // combine's backward, a remesh) an all-gather of the rank's T tokens of h
  // (comm_size T h bytes, the per-rank shard; out ep x that), back from the
  // experts a reduce-scatter of the ep x T gathered tokens' outputs
  // (comm_size ep x T h, out T h). T h bytes: the layer's permutation input.
  void find_allgather_dispatch() {
    if (bind_.count("ep") == 0 || bind_.at("ep") < 2) return;
    const int64_t n = bind_.at("ep");
    std::map<int, int> tokens_of_layer;  // layer -> the permutation's token input
    for (int id : g_.order)
      if (g_.ops[id].def == &ops::kMoePermute && !g_.ops[id].inputs.empty())
        tokens_of_layer.emplace(g_.ops[id].layer, g_.ops[id].inputs[0]);
    for (int id : g_.order) {
      const Op& o = g_.ops[id];
      if (o.kind != OpKind::kCollective || o.coll != CollectiveType::kAllToAll || o.axis != "ep" || o.inputs.empty())
        continue;
      auto it = tokens_of_layer.find(o.layer);
      if (it == tokens_of_layer.end()) continue;
      const int prod = g_.tensors[static_cast<size_t>(o.inputs[0])].producer;
      const bool gather = prod >= 0 && g_.ops[static_cast<size_t>(prod)].kind == OpKind::kRemesh;
      ag_dispatch_[id] = {gather, it->second, n};
    }
  }
  struct AgDispatch {
    bool gather = true;
    int tokens = -1;  // the tensor of the rank's tokens
    int64_t n = 1;    // ep
  };

  // Moves a step's shared-expert ops to their launch points (above); keeps
  // the graph's order where an anchor is missing (a layer split otherwise,
  // recomputation) or the move would read a tensor before it is written.
  void reorder_shared(std::vector<int>& ids, bool fwd, const std::set<int>& first_half) const {
    std::map<int, std::vector<int>> early, late;  // per layer
    std::set<int> in_late;                        // backward: layers past the switch to fc1's gradients
    std::vector<int> rest;
    for (int id : ids) {
      const Op& o = g_.ops[id];
      if (!shared_[static_cast<size_t>(id)]) {
        rest.push_back(id);
      } else if (fwd) {
        (first_half.count(id) ? early : late)[o.layer].push_back(id);
      } else {
        if (o.fwd_op >= 0 && first_half.count(o.fwd_op)) in_late.insert(o.layer);
        if (in_late.count(o.layer)) late[o.layer].push_back(id);
        else rest.push_back(id);
      }
    }
    if (early.empty() && late.empty()) return;
    std::vector<int> out;
    out.reserve(ids.size());
    for (int id : rest) {
      const Op& o = g_.ops[id];
      const bool permute = fwd && o.def == &ops::kMoePermute;
      const bool before = fwd ? o.def == &ops::kMoeCombine
                              : o.fwd_op >= 0 && g_.ops[static_cast<size_t>(o.fwd_op)].def == &ops::kMoePermute;
      if (before)
        if (auto it = late.find(o.layer); it != late.end()) {
          out.insert(out.end(), it->second.begin(), it->second.end());
          late.erase(it);
        }
      out.push_back(id);
      if (permute)
        if (auto it = early.find(o.layer); it != early.end()) {
          out.insert(out.end(), it->second.begin(), it->second.end());
          early.erase(it);
        }
    }
    if (!early.empty() || !late.empty()) return;
    // Every input written in this step must be written before it is read.
    std::map<int, size_t> at;
    for (size_t i = 0; i < out.size(); ++i) at[out[i]] = i;
    for (size_t i = 0; i < out.size(); ++i)
      for (int t : g_.ops[out[i]].inputs) {
        const int p = g_.tensors[static_cast<size_t>(t)].producer;
        if (auto it = at.find(p); it != at.end() && it->second > i) return;
      }
    ids = std::move(out);
  }

  // ---- Transformer Engine's tp communication overlap (tp_comm_overlap) ----
  // Per op: how it is emitted. kRingGather: a sequence-parallel all-gather
  // whose next op is the GEMM it feeds (forward: qkv, fc1; backward: the
  // gathered output gradient of proj, fc2): TE's ring exchange, emitted
  // with the GEMM in tp steps. kPipeGemm: a GEMM whose next op
  // reduce-scatters its output (forward proj, fc2): TE's pipelined
  // split, kTpSplits chunks. kBulk: a backward all-gather feeding only a
  // weight-gradient GEMM, or the reduce-scatter of a dgrad GEMM's output:
  // TE's bulk overlap, the collective whole on the side stream. kFused: the
  // GEMM / reduce-scatter emitted with its partner.
  // Without userbuffers (tp_comm_overlap false) Transformer Engine's
  // column-parallel modules (Linear, LayerNormLinear, LayerNormMLP's fc1)
  // still launch both backward collectives asynchronously on NCCL's stream
  // (transformer_engine/pytorch/module/linear.py backward: the saved
  // input's all-gather with async_op=True before the dgrad GEMM, the dgrad's
  // reduce-scatter with async_op=True before the wgrad GEMM, both waited for
  // at the end of the module's backward): the kBulkGather and kBulk cases
  // only. The row-parallel modules' gradient all-gather stays in line (TE
  // gathers grad_output before its dgrad GEMM).
  enum TpFuse : uint8_t { kNone = 0, kRingGather, kPipeGemm, kBulk, kBulkGather, kFused };
  static constexpr int64_t kTpSplits = 4;  // TE's num_splits for the pipelined reduce-scatter

  bool tp_coll(const Op& o, CollectiveType c) const {
    return o.kind == OpKind::kCollective && o.coll == c && o.axis == "tp";
  }
  static bool reads(const Op& o, int t) { return std::find(o.inputs.begin(), o.inputs.end(), t) != o.inputs.end(); }
  bool layer_gemm(const Op& o) const { return o.kind == OpKind::kMatmul && o.layer >= 0; }

  void find_tp_overlap(bool userbuffers) {
    if (bind_.count("tp") == 0 || bind_.at("tp") < 2) return;
    tp_fuse_.assign(g_.ops.size(), kNone);
    bool any = false;
    for (auto& [key, ids] : seg_) {
      for (size_t i = 0; i < ids.size(); ++i) {
        const Op& o = g_.ops[ids[i]];
        size_t j = i + 1;
        while (j < ids.size() && g_.ops[ids[j]].kind == OpKind::kView) ++j;
        const Op* next = j < ids.size() ? &g_.ops[ids[j]] : nullptr;
        uint8_t& f = tp_fuse_[static_cast<size_t>(o.id)];
        if (f != kNone) continue;
        // Megatron-Core turns userbuffer overlap off in the shared experts
        // it overlaps with the dispatcher (shared_experts.py).
        if (!shared_.empty() && (shared_[static_cast<size_t>(o.id)] || (next && shared_[static_cast<size_t>(next->id)])))
          continue;
        if (tp_coll(o, CollectiveType::kAllGather) && next && layer_gemm(*next) && reads(*next, o.outputs[0])) {
          if (!next->wgrad) {
            if (!userbuffers) continue;
            f = kRingGather;
            partner_[o.id] = next->id;
            tp_fuse_[static_cast<size_t>(next->id)] = kFused;
            ring_index_[o.id] = static_cast<int64_t>(ring_index_.size());
          } else if (o.phase != Phase::kForward && !o.recomputed) {
            f = kBulkGather;
            any = true;
          }
        } else if (userbuffers && layer_gemm(o) && !o.wgrad && next &&
                   tp_coll(*next, CollectiveType::kReduceScatter) && reads(*next, o.outputs[0])) {
          f = kPipeGemm;
          partner_[o.id] = next->id;
          tp_fuse_[static_cast<size_t>(next->id)] = kFused;
        } else if (tp_coll(o, CollectiveType::kReduceScatter) && o.phase != Phase::kForward && !o.recomputed) {
          // A recomputed forward's reduce-scatter (phase backward, full
          // recompute) is the forward's, synchronous without userbuffers
          // (with them the branch above pipelines it).
          const int prod = g_.tensors[o.inputs[0]].producer;
          if (prod >= 0 && layer_gemm(g_.ops[prod]) && !g_.ops[prod].wgrad && !g_.ops[prod].recomputed) {
            f = kBulk;
            any = true;
          }
        }
      }
    }
    // Userbuffers always fill the side streams (as before the NCCL case
    // existed); without them only a job that has such a collective does, so
    // a job without one keeps its bytes.
    if (userbuffers || any) {
      sides_ = true;
    } else {
      tp_fuse_.clear();
    }
  }

  // ---- ZeRO 1/2's parameter all-gather in the next forward -----------------
  // (overlap_param_gather). The step's per-bucket all-gathers move to the
  // start of the iteration (the steady state: iteration i's gather runs
  // during iteration i+1's forward): bucket k's gather is issued when the
  // forward reaches the first op reading bucket k - 1 (Megatron's forward
  // pre-hook dispatches the next bucket), and that op of the first forward
  // of each chunk waits for its own bucket.
  void find_param_gathers() {
    for (int id : opt_) {
      const Op& o = g_.ops[id];
      if (o.kind != OpKind::kCollective || o.cause.kind != CauseKind::kZeroParamGatherAfterStep) continue;
      for (int t : o.inputs) {
        const int prod = g_.tensors[t].producer;
        if (prod >= 0 && g_.ops[prod].kind == OpKind::kOptimizer) gather_of_weight_[g_.ops[prod].inputs[0]] = id;
      }
    }
    // The gathers in the order the forward pass first reads their weights
    // (and the chunk that reads each first).
    std::set<int> seen;
    for (int c = 0; c < o_.virtual_stages; ++c)
      for (int id : seg_[{StepKind::kForward, c}])
        for (int t : g_.ops[id].inputs)
          if (auto it = gather_of_weight_.find(t); it != gather_of_weight_.end() && seen.insert(it->second).second) {
            gather_seq_.push_back(it->second);
            gather_chunk_.push_back(c);
          }
  }

  // Interleaved schedules: every bucket gather of chunk c, in first-use
  // order, each issued behind compute node `after` (-1: nothing).
  Status gathers_of_chunk(int c, int64_t after) {
    for (size_t k = 0; k < gather_seq_.size(); ++k) {
      if (gather_chunk_[k] != c || done_[static_cast<size_t>(gather_seq_[k])]) continue;
      pending_gather_dep_ = after;
      const Status st = emit(gather_seq_[k], -1);
      pending_gather_dep_ = -1;
      SC_RETURN_IF_ERROR(st);
    }
    return ok_status();
  }

  // ZeRO 2/3 (grad_reduce_every_micro_batch): a reduce-scattered bucket
  // is reduced after every micro-batch's backward, not once after the
  // last, as Megatron-FSDP reduces sharded gradients every backward pass
  // ("optim_grads", "optim_grads_params": grad_reduce_every_bprop) and
  // FSDP2 does by default. The rounds before the last are emitted here as
  // their gradients are written (round r is ready when every writer of
  // every input has written r + 1 times); the last round is the bucket op
  // itself. Each waits for the writes it reduces; the next micro-batch's
  // writes do not wait for it (a fresh unsharded buffer). HSDP's replica
  // all-reduce stays once, after the last round (Megatron-FSDP reduces
  // over the outer group on the last micro-batch only).
  Status partial_reduces(int id) {
    const Op& op = g_.ops[id];
    if (op.coll != CollectiveType::kReduceScatter) return ok_status();
    int64_t rounds = o_.micro_batches - 1;
    for (int t : op.inputs) {
      const int64_t e = expected_[static_cast<size_t>(t)];
      if (e == 0) return ok_status();
      rounds = std::min(rounds, writes_[static_cast<size_t>(t)] * o_.micro_batches / e);
    }
    for (int64_t& ready = rounds_[id].ready; ready < rounds; ++ready) deferred_.push_back({id, false});
    return defer_reductions_ ? ok_status() : flush_partials();
  }
  // Emits the ready rounds. With ZeRO-3's per-unit parameter gathers on the
  // same group, a ready round waits until the next unit's gathers are
  // issued (or the step ends): FSDP reduces on a stream of its own (Megatron-FSDP's
  // overlap_allgather_reduction, FSDP2's reduce-scatter stream), so a
  // gather the compute waits for is not queued behind a reduction; one
  // communicator chain per group here keeps them in issue order.
  Status flush_partials() {
    gathered_ = false;
    for (const auto& [id, last] : deferred_) {
      if (last) {  // the bucket op itself (the last round, which the optimizer reads)
        SC_RETURN_IF_ERROR(emit(id, -1));
        continue;
      }
      const Op& op = g_.ops[id];
      Rounds& r = rounds_[id];
      const int64_t round = r.done++;
      SC_ASSIGN_OR_RETURN(OpCost* c, cost_of(id));
      if (r.suffix == RoleProgram::kStoredName) {
        r.suffix = static_cast<uint32_t>(p_.name_suffixes.size());
        p_.name_suffixes.push_back("bwd." + op.name);
      }
      ProgramNode node;
      node.id = static_cast<uint32_t>(p_.nodes.size());
      node.kind = TraceNodeKind::kCollective;
      node.coll = op.coll;
      node.comm_size = c->comm_size;
      std::vector<uint64_t> deps;
      for (int t : op.inputs) add_nodes_of(t, -1, deps);
      const uint8_t axis = axis_of_op(id);
      queue_on_axis(axis, node.id, deps);
      sort_unique(deps);
      node.deps.assign(deps.begin(), deps.end());
      SC_ASSIGN_OR_RETURN(node.output_bytes, output_bytes_of(op, *c));
      push(std::move(node), axis, -1, 0, round, r.suffix);
    }
    deferred_.clear();
    return ok_status();
  }

  bool final_inputs(const Op& o) const {
    for (int t : o.inputs)
      if (expected_[static_cast<size_t>(t)] == 0 || writes_[static_cast<size_t>(t)] != expected_[static_cast<size_t>(t)])
        return false;
    return true;
  }

  // Tensor kinds in a dense array: read per input and output of every node,
  // and a Tensor is large (a cache miss each).
  TensorKind kind_of(int t) const { return static_cast<TensorKind>(tensor_kind_[static_cast<size_t>(t)]); }
  bool persistent(int t) const { return kind_of(t) == TensorKind::kWeightGrad; }

  // Per micro-batch (mb -1: the optimizer phase) lookup tables, dense by
  // tensor and op id: the nodes that produced a tensor (a span of `pool`),
  // the node of an op, the activation buffer a tensor lives in.
  struct MbState {
    struct Span { uint32_t off = 0, len = 0; };
    std::vector<Span> act;
    std::vector<uint64_t> pool;
    std::vector<int64_t> op_node;
    std::vector<int> buf_of;
  };
  MbState& state(int64_t mb) {
    if (cur_ && cur_mb_ == mb) return *cur_;  // several lookups per node, mostly the same micro-batch
    auto it = mbs_.find(mb);
    if (it != mbs_.end()) {
      cur_mb_ = mb, cur_ = &it->second;
      return it->second;
    }
    MbState s;
    if (!free_.empty()) {
      s = std::move(free_.back());
      free_.pop_back();
    }
    s.act.assign(g_.tensors.size(), {});
    s.pool.clear();
    s.op_node.assign(g_.ops.size(), -1);
    s.buf_of.assign(g_.tensors.size(), -1);
    MbState& out = mbs_.emplace(mb, std::move(s)).first->second;
    cur_mb_ = mb, cur_ = &out;
    return out;
  }
  void release(int64_t mb) {
    auto it = mbs_.find(mb);
    if (it == mbs_.end()) return;
    if (cur_ == &it->second) cur_ = nullptr;
    free_.push_back(std::move(it->second));
    mbs_.erase(it);
  }

  // Appends the nodes that produced tensor t (in micro-batch mb) to out.
  void add_nodes_of(int t, int64_t mb, std::vector<uint64_t>& out) {
    if (persistent(t)) {
      auto it = grad_.find(t);
      if (it != grad_.end()) out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
    MbState& s = state(mb);
    const MbState::Span sp = s.act[static_cast<size_t>(t)];
    out.insert(out.end(), s.pool.begin() + sp.off, s.pool.begin() + sp.off + sp.len);
  }

  void produced(int t, int64_t mb, const uint64_t* nodes, size_t n) {
    if (persistent(t)) {
      grad_[t].assign(nodes, nodes + n);
      writes_[static_cast<size_t>(t)]++;
      grads_written_ = true;
    } else {
      MbState& s = state(mb);
      s.act[static_cast<size_t>(t)] = {static_cast<uint32_t>(s.pool.size()), static_cast<uint32_t>(n)};
      s.pool.insert(s.pool.end(), nodes, nodes + n);
    }
  }

  // ZeRO flat shards: 1/degree of a buffer, rounded up.
  int64_t shard(const Op& op, int64_t v) const {
    if (op.flat_shard_axis.empty()) return v;
    int64_t d = bind_.at(op.flat_shard_axis);
    return (v + d - 1) / d;
  }

  // A tensor's local bytes, evaluated once.
  Result<int64_t> bytes_of(int t) {
    int64_t& b = tensor_bytes_[static_cast<size_t>(t)];
    if (b < 0) {
      SC_ASSIGN_OR_RETURN(b, g_.tensors[t].local_bytes(bind_, g_.tensors[t].name + " bytes"));
    }
    return b;
  }

  static void sort_unique(std::vector<uint64_t>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }

  // What a node of op `id` costs, the same in every micro-batch: computed
  // on the op's first emission and copied after.
  struct OpCost {
    bool ready = false;
    int64_t num_ops = 0;
    uint64_t tensor_size = 0, duration_micros = 0;
    int64_t comm_size = 0;
    std::string suffix;  // "<phase>.<op name>"
    uint32_t suffix_id = RoleProgram::kStoredName;  // in p_.name_suffixes, once a node of a micro-batch used it
    int64_t output_bytes = -1;                      // a compute or collective node's, -1 until summed
  };

  bool kernel_model() const { return hw_.cost_model == HardwareProfile::CostModel::kKernel; }

  // FLOPs and bytes of a compute op (this rank's ZeRO shard), and the dtype
  // it computes in. Under the kernel model the bytes a fused kernel keeps
  // on chip are left out.
  struct Work {
    int64_t flops = 0, bytes = 0;
    DType dt = DType::kBF16;
  };
  Result<Work> work_of(int id) {
    const Op& op = g_.ops[id];
    Work w;
    SC_ASSIGN_OR_RETURN(int64_t flops, op.local_flops.eval(bind_, op.name + " flops"));
    // A lookup (or its scatter-add backward) touches the rows it gathers,
    // not the whole table: count the activation side twice instead.
    const bool lookup = op.kind == OpKind::kEmbedding;
    const std::vector<int>* on_chip = kernel_model() ? &plan_.on_chip[static_cast<size_t>(id)] : nullptr;
    int64_t bytes = 0;
    for (const auto* list : {&op.inputs, &op.outputs})
      for (int t : *list) {
        TensorKind k = g_.tensors[t].kind;
        if (lookup && (k == TensorKind::kWeight || k == TensorKind::kWeightGrad)) continue;
        if (on_chip && std::find(on_chip->begin(), on_chip->end(), t) != on_chip->end()) continue;
        SC_ASSIGN_OR_RETURN(int64_t b, bytes_of(t));
        bytes += lookup ? 2 * b : b;
      }
    if (op.kind == OpKind::kOptimizer) {
      // Adam state (master weight + moments): read and written once.
      SC_ASSIGN_OR_RETURN(int64_t n, g_.tensors[op.inputs[0]].local_numel().eval(bind_, op.name + " params"));
      bytes += 2 * n * o_.optimizer_bytes_per_param;
    }
    w.dt = op.kind == OpKind::kMatmul ? gemm_dtype(op) : g_.tensors[op.outputs[0]].dtype;
    if (fp8_op(id)) {
      // An FP8 GEMM reads its operands' FP8 copies (1 byte per element).
      w.dt = DType::kFP8;
      for (int t : op.inputs) {
        SC_ASSIGN_OR_RETURN(int64_t b, bytes_of(t));
        bytes -= b - b / dtype_bytes(g_.tensors[t].dtype);
      }
    }
    w.flops = shard(op, flops);
    w.bytes = shard(op, bytes);
    return w;
  }

  // A GEMM's dtype: the compute dtype; under 4-bit weights only the GEMMs
  // whose weight is stored 4-bit run in it (int4, W4A16: at the bf16 rate;
  // nvfp4/mxfp4, W4A4: at the FP4 rate), the others (the output head, the
  // router, activation-only products) in bf16 (docs/inference.md, "4-bit
  // weights").
  DType gemm_dtype(const Op& op) const {
    if (!dtype_is_4bit(o_.compute_dtype)) return o_.compute_dtype;
    for (int t : op.inputs)
      if (dtype_is_4bit(g_.tensors[static_cast<size_t>(t)].dtype)) return o_.compute_dtype;
    return DType::kBF16;
  }
  // Attention under 4-bit weights runs in bf16.
  DType attention_dtype() const { return dtype_is_4bit(o_.compute_dtype) ? DType::kBF16 : o_.compute_dtype; }

  // The factor on the attention efficiency of a fused attention op (or of
  // the forward op a backward differentiates), from the launches its kernel
  // makes (attention_launch_factor; docs/hardware.md "Attention by shape").
  // q and k are [b, sequence..., heads, head dim]: pairs = local b x local
  // query heads, query rows = q's local elements over pairs x dq, key rows
  // likewise from k; the keys a query row visits on average come from the
  // forward's local FLOPs 2 x rows x heads x kv x (dq + dv) (causal: half
  // the square). One launch, except:
  //  - keys gathered beyond the local queries (cp all-gather, Llama 3's):
  //    one launch per local chunk (2 of queries / 2 rows), each against the
  //    keys up to its chunk's end, (keys + chunk) / 2 of them on average
  //    over the rank's two chunks;
  //  - ring attention over n ranks (load-balanced chunks, local block of L
  //    rows): per rank one causal step against its own block (L x L), and
  //    n - 1 steps each either L queries against the first half of a
  //    block or the second half of the queries (L / 2) against a whole
  //    block, (n - 1) / 2 of each on average; all steps have the same
  //    FLOPs, so the op's factor is their harmonic mean.
  Result<double> attention_factor(int id) {
    const Op& op = g_.ops[static_cast<size_t>(id)];
    const Op& f = g_.ops[static_cast<size_t>(op.fwd_op >= 0 ? op.fwd_op : id)];
    const bool ring = f.def == &ops::kRingAttention;
    if ((f.def != &ops::kFlashAttention && !ring) || f.inputs.size() < 2 || f.outputs.empty()) return 1.0;
    const int qt = f.inputs[0], kt = f.inputs[1];
    const Tensor& q = g_.tensors[static_cast<size_t>(qt)];
    const Tensor& k = g_.tensors[static_cast<size_t>(kt)];
    const Tensor& o = g_.tensors[static_cast<size_t>(f.outputs[0])];
    if (q.dims.size() < 3 || k.dims.size() < 3 || o.dims.empty()) return 1.0;
    SC_ASSIGN_OR_RETURN(int64_t dq, q.dims.back().size.eval(bind_, q.name + " head dim"));
    SC_ASSIGN_OR_RETURN(int64_t dv, o.dims.back().size.eval(bind_, o.name + " head dim"));
    SC_ASSIGN_OR_RETURN(int64_t nq, q.local_numel().eval(bind_, q.name + " elements"));
    SC_ASSIGN_OR_RETURN(int64_t nk, k.local_numel().eval(bind_, k.name + " elements"));
    SC_ASSIGN_OR_RETURN(int64_t ff, f.local_flops.eval(bind_, f.name + " flops"));
    SC_ASSIGN_OR_RETURN(int64_t qb, local_dim(g_, qt, 0, bind_));
    SC_ASSIGN_OR_RETURN(int64_t qh, local_dim(g_, qt, q.dims.size() - 2, bind_));
    SC_ASSIGN_OR_RETURN(int64_t kb, local_dim(g_, kt, 0, bind_));
    SC_ASSIGN_OR_RETURN(int64_t kh, local_dim(g_, kt, k.dims.size() - 2, bind_));
    if (nq <= 0 || nk <= 0 || dq <= 0 || dv <= 0 || ff <= 0 || qb * qh <= 0 || kb * kh <= 0) return 1.0;
    const double d = static_cast<double>(dq), pairs = static_cast<double>(qb * qh);
    const double rows = static_cast<double>(nq) / (pairs * d),
                 keys = static_cast<double>(nk) / (static_cast<double>(kb * kh) * d);
    const double kv = static_cast<double>(ff) * d / (2.0 * static_cast<double>(nq) * static_cast<double>(dq + dv));
    const bool backward = op.fwd_op >= 0;
    auto launch = [&](double qr, double kr, double v, double vmax) {
      AttentionLaunch l;
      l.pairs = pairs;
      l.queries = qr;
      l.keys = kr;
      l.kv = v;
      l.kv_max = vmax;
      return attention_launch_factor(hw_, l, d, backward);
    };
    if (ring) {
      const double n = static_cast<double>(std::max<int64_t>(1, bind_.at(f.ring_axis)));
      const double L = rows;
      const double diag = launch(L, L, L / 2, L);
      if (n <= 1) return diag;
      const double first_half = launch(L, L / 2, L / 2, L / 2), second_half = launch(L / 2, L, L, L);
      return n / (1 / diag + (n - 1) / 2 * (1 / first_half + 1 / second_half));
    }
    if (keys > rows) {
      // Causal, bottom-right aligned: a chunk's rows visit from
      // keys - chunk + 1 to all its keys.
      const double chunk = rows / 2, chunk_keys = (keys + chunk) / 2;
      return launch(chunk, chunk_keys, kv, std::min(chunk_keys, kv + chunk / 2));
    }
    // One block: causal (kv = keys / 2: the last row visits all keys), a
    // sliding window's band (at most twice its average), or non-causal.
    return launch(rows, keys, kv, std::min({keys, kv + rows / 2, 2 * kv}));
  }

  // A routed expert's GEMM: it (or the forward GEMM it differentiates)
  // multiplies by an expert weight.
  bool expert_gemm(const Op& op) const {
    if (op.kind != OpKind::kMatmul) return false;
    for (const Op* o : {&op, op.fwd_op >= 0 ? &g_.ops[static_cast<size_t>(op.fwd_op)] : &op})
      for (int t : o->inputs)
        if (g_.tensors[static_cast<size_t>(t)].expert) return true;
    return false;
  }

  // FP8 training: whether op `id` is a GEMM run at FP8 (cost/fp8_cost.h).
  bool fp8_op(int id) const { return o_.fp8_recipe != Fp8Recipe::kNone && fp8_gemm(g_, g_.ops[id]); }

  // Local elements of the tensor TE quantizes for operand t: a
  // sequence-parallel all-gather's input (TE casts before the gather);
  // *tp_gathered: t came through a tensor-parallel all-gather.
  Result<int64_t> quantized_elems(int t, bool* from_norm, bool* tp_gathered) {
    int src = t;
    if (const int p = g_.tensors[t].producer; p >= 0 && g_.ops[p].kind == OpKind::kCollective &&
                                              g_.ops[p].coll == CollectiveType::kAllGather && !g_.ops[p].inputs.empty())
      src = g_.ops[p].inputs[0];
    *tp_gathered = tp_gather_of(t) >= 0;
    const int prod = g_.tensors[src].producer;
    *from_norm = prod >= 0 && g_.ops[prod].kind == OpKind::kNorm;
    SC_ASSIGN_OR_RETURN(int64_t b, bytes_of(src));
    return b / dtype_bytes(g_.tensors[src].dtype);
  }

  // The quantize / amax kernels TE runs for FP8 GEMM `op` (per micro-batch).
  Result<double> fp8_extra_micros(const Op& op) {
    const Fp8GemmRole role = fp8_gemm_role(op);
    Fp8Operands x;
    x.micro_batches = o_.micro_batches;
    if (role == Fp8GemmRole::kFprop) {
      SC_ASSIGN_OR_RETURN(x.elems, quantized_elems(op.inputs[0], &x.from_norm, &x.gathered));
      SC_ASSIGN_OR_RETURN(int64_t wb, bytes_of(op.inputs[1]));
      x.weight_elems = wb / dtype_bytes(g_.tensors[op.inputs[1]].dtype);
    } else if (role == Fp8GemmRole::kDgrad) {
      for (int t : op.inputs)
        if (g_.tensors[t].kind == TensorKind::kGradient) {
          bool unused = false;
          SC_ASSIGN_OR_RETURN(x.elems, quantized_elems(t, &unused, &x.gathered));
          break;
        }
    } else {
      // The weight gradient transposes what reached it through a gather.
      for (int t : op.inputs)
        if (tp_gather_of(t) >= 0) {
          SC_ASSIGN_OR_RETURN(int64_t b, bytes_of(t));
          x.wgrad_gathered += b / dtype_bytes(g_.tensors[t].dtype);
        }
    }
    return fp8_kernels_micros(hw_, fp8_kernels(o_.fp8_recipe, role, x));
  }

  // A training Mamba-2 scan, forward or its input-gradient backward (mamba_ssm's
  // chunked kernels, cost/ssd_cost.h), on a profile whose scan kernels were
  // measured (ssd_scan_hbm_efficiency); a serving step's scan (with its state
  // cache) and the other profiles keep the generic model.
  bool ssd_training(const Op& op) const {
    if (hw_.ssd_scan_hbm_efficiency <= 0) return false;
    if (op.fn == ops::kSsdScan.fn) return op.inputs.size() == 7;
    return op.fn == ops::kSsdScanBwd.fn;
  }

  // Its local shape: x is [b, s, heads, head dim], B [b, s, groups, state]
  // (inputs 0 and 2 of the forward and of the backward).
  Result<SsdShape> ssd_shape(const Op& op) {
    SsdShape s;
    const int x = op.inputs[0], b = op.inputs[2];
    if (g_.tensors[x].dims.size() != 4 || g_.tensors[b].dims.size() != 4)
      return make_error(ErrorCode::kInternal, op.name + ": the scan's x and B are not [batch, seq, heads|groups, dim]");
    SC_ASSIGN_OR_RETURN(int64_t seqs, local_dim(g_, x, 0, bind_));
    SC_ASSIGN_OR_RETURN(int64_t len, local_dim(g_, x, 1, bind_));
    SC_ASSIGN_OR_RETURN(int64_t heads, local_dim(g_, x, 2, bind_));
    SC_ASSIGN_OR_RETURN(int64_t head_dim, local_dim(g_, x, 3, bind_));
    SC_ASSIGN_OR_RETURN(int64_t groups, local_dim(g_, b, 2, bind_));
    SC_ASSIGN_OR_RETURN(int64_t state, local_dim(g_, b, 3, bind_));
    s.seqs = static_cast<double>(seqs);
    s.len = static_cast<double>(len);
    s.heads = static_cast<double>(heads);
    s.head_dim = static_cast<double>(head_dim);
    s.groups = static_cast<double>(std::max<int64_t>(1, groups));
    s.state = static_cast<double>(state);
    s.chunk = kSsdChunk;
    s.elem = static_cast<double>(dtype_bytes(g_.tensors[x].dtype));
    return s;
  }

  // Kernel-model time of one op without the launch floor, evaluated once.
  Result<double> kernel_micros(int id) {
    double& us = kernel_us_[static_cast<size_t>(id)];
    if (us >= 0) return us;
    const Op& op = g_.ops[id];
    SC_ASSIGN_OR_RETURN(Work w, work_of(id));
    const double flops = static_cast<double>(w.flops), bytes = static_cast<double>(w.bytes);
    if (op.kind == OpKind::kMatmul) {
      SC_ASSIGN_OR_RETURN(GemmShape shape, gemm_shape(g_, op, bind_));
      us = gemm_micros(fp8_op(id) ? fp8_hw_ : hw_, w.dt, shape, flops, bytes, o_.skinny_gemms);
      if (fp8_op(id)) {
        SC_ASSIGN_OR_RETURN(double extra, fp8_extra_micros(op));
        us += extra;
      }
    } else if (ssd_training(op)) {
      SC_ASSIGN_OR_RETURN(SsdShape s, ssd_shape(op));
      us = ssd_micros(hw_, s, op.fwd_op >= 0);
    } else if (op.kind == OpKind::kAttention) {
      SC_ASSIGN_OR_RETURN(double shape, attention_factor(id));
      us = attention_micros(hw_, attention_dtype(), flops / shape, bytes, op.fwd_op >= 0);
    } else {
      us = memory_micros(hw_, flops, bytes);
    }
    return us;
  }

  Result<OpCost*> cost_of(int id) {
    OpCost& c = cost_[static_cast<size_t>(id)];
    if (c.ready) return &c;
    const Op& op = g_.ops[id];
    c.suffix = std::string(phase_name(op.phase)) + "." + op.name;
    if (op.kind == OpKind::kCollective) {
      for (int t : op.inputs) {
        SC_ASSIGN_OR_RETURN(int64_t b, bytes_of(t));
        c.comm_size += b;
      }
      c.comm_size = shard(op, c.comm_size);
      if (!fp8_gather_.empty() && fp8_gather_[static_cast<size_t>(id)]) {
        // FP8 sequence-parallel all-gather: the FP8 copy, 1 B/element.
        const int64_t eb = dtype_bytes(g_.tensors[op.inputs[0]].dtype);
        SC_ASSIGN_OR_RETURN(int64_t out, bytes_of(op.outputs[0]));
        c.comm_size /= eb;
        c.output_bytes = shard(op, out) / eb;
      }
      if (auto it = ag_dispatch_.find(id); it != ag_dispatch_.end()) {
        SC_ASSIGN_OR_RETURN(int64_t th, bytes_of(it->second.tokens));
        const AgDispatch& a = it->second;
        c.comm_size = a.gather ? th : a.n * th;
        c.output_bytes = a.gather ? a.n * th : th;
        const std::string from = "all_to_all(ep)", to = a.gather ? "all_gather(ep)" : "reduce_scatter(ep)";
        if (const size_t at = c.suffix.rfind(from); at != std::string::npos) c.suffix.replace(at, from.size(), to);
      }
    } else if (op.kind == OpKind::kSend || op.kind == OpKind::kRecv) {
      SC_ASSIGN_OR_RETURN(c.comm_size, bytes_of(op.kind == OpKind::kSend ? op.inputs[0] : op.outputs[0]));
    } else if (op.kind != OpKind::kView && op.ring_axis.empty()) {
      SC_ASSIGN_OR_RETURN(Work w, work_of(id));
      TraceNode n;
      double us = 0;
      if (kernel_model()) {
        SC_ASSIGN_OR_RETURN(us, kernel_micros(id));
        // A fused kernel's launch floor is paid once, by its first op.
        if (plan_.head[static_cast<size_t>(id)] == id) {
          double group = 0;
          for (int m : plan_.members[static_cast<size_t>(id)]) {
            SC_ASSIGN_OR_RETURN(double t, kernel_micros(m));
            group += t;
          }
          us += std::max(0.0, hw_.kernel_floor_micros - group);
        }
      } else {
        us = roofline_micros(hw_, w.dt, static_cast<double>(w.flops), static_cast<double>(w.bytes));
      }
      if (o_.moe_imbalance != 1.0 && expert_gemm(op)) us *= o_.moe_imbalance;
      if (kernel_model() && o_.expert_gemm_launches && expert_gemm(op)) {
        // One GEMM launch per local expert (the experts are the GEMM's
        // batch dimension; cost/kernel_cost.h).
        SC_ASSIGN_OR_RETURN(GemmShape shape, gemm_shape(g_, op, bind_));
        us += expert_gemm_launch_micros(hw_, shape.batch);
      }
      SC_RETURN_IF_ERROR(set_cost(n, w.flops, w.bytes, us, op.name));
      c.num_ops = n.num_ops;
      c.tensor_size = n.tensor_size;
      c.duration_micros = n.duration_micros;
    }
    c.ready = true;
    return &c;
  }

  // A compute or collective node's output bytes (this rank's ZeRO shard),
  // the same in every micro-batch: summed once into the op's cost.
  Result<uint64_t> output_bytes_of(const Op& op, OpCost& c) {
    if (c.output_bytes < 0) {
      uint64_t out = 0;
      for (int t : op.outputs) {
        SC_ASSIGN_OR_RETURN(int64_t b, bytes_of(t));
        out += static_cast<uint64_t>(shard(op, b));
      }
      c.output_bytes = static_cast<int64_t>(out);
    }
    return static_cast<uint64_t>(c.output_bytes);
  }

  static std::string mb_prefix(int64_t mb) { return mb >= 0 ? "mb" + std::to_string(mb) + "." : std::string(); }

  Status emit(int id, int64_t mb) {
    const Op& op = g_.ops[id];
    if (!tp_fuse_.empty() && tp_fuse_[static_cast<size_t>(id)] == kFused) return ok_status();  // with its partner
    done_[static_cast<size_t>(id)] = 1;
    // Built in a reused buffer, copied once at its final size into the node.
    std::vector<uint64_t>& deps = deps_;
    deps.clear();
    for (int t : op.inputs) add_nodes_of(t, mb, deps);
    if (op.kind == OpKind::kView) {
      sort_unique(deps);
      for (int t : op.outputs) produced(t, mb, deps.data(), deps.size());
      // A view shares its input's memory.
      MbState& s = state(mb);
      if (!op.inputs.empty())
        if (const int buf = s.buf_of[static_cast<size_t>(op.inputs[0])]; buf >= 0)
          for (int t : op.outputs) s.buf_of[static_cast<size_t>(t)] = buf;
      return ok_status();
    }
    deps.insert(deps.end(), barrier_.begin(), barrier_.end());
    if (!extra_deps_.empty()) {
      deps.insert(deps.end(), extra_deps_.begin(), extra_deps_.end());
      extra_deps_.clear();
    }
    if (op.after_op >= 0)
      if (const int64_t n = state(mb).op_node[static_cast<size_t>(op.after_op)]; n >= 0)
        deps.push_back(static_cast<uint64_t>(n));
    // Accumulation into the persistent main grad written before.
    for (int t : op.outputs)
      if (persistent(t) && op.phase != Phase::kOptimizer) add_nodes_of(t, mb, deps);

    if (!op.ring_axis.empty()) return emit_ring(op, id, mb, deps);
    uint8_t side = 0;
    if (!tp_fuse_.empty()) {
      const uint8_t f = tp_fuse_[static_cast<size_t>(id)];
      if (f == kRingGather) return emit_ring_gather(op, id, mb, deps);
      if (f == kPipeGemm) return emit_pipelined_gemm(op, id, mb, deps);
      // Bulk overlap: beside the GEMMs; an all-gather for a weight-gradient
      // GEMM is launched with the dgrad GEMM before it (TE issues it there).
      if (f == kBulk || f == kBulkGather) side = 1;
      if (f == kBulkGather && prev_compute_ >= 0) deps.push_back(static_cast<uint64_t>(prev_compute_));
    }
    if (pending_gather_dep_ >= 0) deps.push_back(static_cast<uint64_t>(pending_gather_dep_));
    const bool shared = !shared_.empty() && shared_[static_cast<size_t>(id)];
    if (shared) {  // the shared experts' stream: in order, after the compute stream at a run's start
      side = 2;
      if (shared_start_[static_cast<size_t>(id)] && last_compute_ >= 0) deps.push_back(static_cast<uint64_t>(last_compute_));
      if (last_shared_ >= 0) deps.push_back(static_cast<uint64_t>(last_shared_));
    }
    SC_ASSIGN_OR_RETURN(OpCost* c, cost_of(id));
    // overlap_moe_expert_parallel_comm: an ep all-to-all of a combined step
    // runs on the communication stream and, like Megatron-Core's
    // ScheduleNode, first waits for its micro-batch's event: the end of the
    // last node that micro-batch ran on the compute stream (a delayed
    // weight-gradient GEMM records none).
    const bool ep_comm = combining_ && ep_alltoall(op) && ag_dispatch_.count(id) == 0;
    if (ep_comm)
      if (auto it = event_.find(mb); it != event_.end()) deps.push_back(static_cast<uint64_t>(it->second));
    if (deepep_op(op)) return emit_deepep(op, id, mb, deps, c->suffix, c->comm_size);
    ProgramNode node;  // the program's form directly: no TraceNode to convert (most nodes come here)
    node.id = p_.nodes.size();
    // A micro-batch's node keeps (micro-batch, suffix) instead of its name.
    uint32_t name_ref = RoleProgram::kStoredName;
    if (mb >= 0) {
      if (c->suffix_id == RoleProgram::kStoredName) {
        c->suffix_id = static_cast<uint32_t>(p_.name_suffixes.size());
        p_.name_suffixes.push_back(c->suffix);
      }
      name_ref = c->suffix_id;
    } else {
      node.name = c->suffix;
    }
    uint8_t axis = 0;  // in p_.axes
    int64_t peer = -1;
    if (op.kind == OpKind::kCollective) {
      node.kind = TraceNodeKind::kCollective;
      node.coll = op.coll;
      if (auto it = ag_dispatch_.find(id); it != ag_dispatch_.end())
        node.coll = it->second.gather ? CollectiveType::kAllGather : CollectiveType::kReduceScatter;
      axis = axis_of_op(id);
      node.comm_size = c->comm_size;
      queue_on_axis(axis, node.id, deps);
      if (shared) last_shared_ = static_cast<int64_t>(node.id);
      if (ep_comm) side = 4;
    } else if (op.kind == OpKind::kSend || op.kind == OpKind::kRecv) {
      const bool send = op.kind == OpKind::kSend, bwd = op.phase == Phase::kBackward;
      node.kind = send ? TraceNodeKind::kSend : TraceNodeKind::kRecv;
      node.comm_size = c->comm_size;
      // Boundary b joins virtual stages b and b + 1. Forward goes up,
      // backward comes down; both ends compute the same tag.
      const int64_t b = op.boundary, pv = o_.pp * o_.virtual_stages;
      peer = (send != bwd ? b + 1 : b) % o_.pp;
      node.tag = static_cast<int32_t>((mb * 2 + (bwd ? 1 : 0)) * pv + b);
      if (!send) deps.clear();  // receives are posted up front
      else last_send_ = static_cast<int64_t>(node.id);
      if (send && async_send_) side = 3;  // overlap_p2p_comm: posted beside the compute stream
    } else {
      node.kind = TraceNodeKind::kCompute;
      node.num_ops = c->num_ops;
      node.tensor_size = c->tensor_size;
      node.duration_micros = c->duration_micros;
      if (shared) {
        last_shared_ = static_cast<int64_t>(node.id);
      } else {
        if (last_compute_ >= 0) deps.push_back(static_cast<uint64_t>(last_compute_));
        prev_compute_ = last_compute_;
        last_compute_ = static_cast<int64_t>(node.id);
      }
    }
    sort_unique(deps);
    node.deps.assign(deps.begin(), deps.end());
    if (node.kind == TraceNodeKind::kRecv) {
      node.output_bytes = static_cast<uint64_t>(node.comm_size);
    } else if (node.kind != TraceNodeKind::kSend) {
      SC_ASSIGN_OR_RETURN(node.output_bytes, output_bytes_of(op, *c));
    }
    const uint64_t nid = node.id;
    for (int t : op.outputs) produced(t, mb, &nid, 1);
    state(mb).op_node[static_cast<size_t>(id)] = static_cast<int64_t>(nid);
    const int64_t at = static_cast<int64_t>(nid);
    push(std::move(node), axis, peer, 0, mb, name_ref, side);
    return track_buffers(op, mb, at, at);
  }

  // Before op `id` of a chunk's first forward step (overlap_param_gather):
  // the gathers of the buckets it reads are issued (if not yet) and it waits
  // for them; the next bucket's gather is issued behind the compute so far.
  Status param_gathers_before(int id) {
    const Op& op = g_.ops[id];
    if (op.kind == OpKind::kView) return ok_status();
    std::vector<uint64_t> waits;
    for (int t : op.inputs) {
      auto it = gather_of_weight_.find(t);
      if (it == gather_of_weight_.end()) continue;
      const auto at = std::find(gather_seq_.begin(), gather_seq_.end(), it->second);
      // Interleaved: the chunk's gathers were dispatched ahead (run());
      // only a bucket not yet issued is issued here.
      const auto last = o_.virtual_stages > 1 ? at : at + 1;
      for (auto k = gather_seq_.begin(); k <= last && k != gather_seq_.end(); ++k) {
        if (done_[static_cast<size_t>(*k)]) continue;
        pending_gather_dep_ = k == at + 1 ? last_compute_ : -1;  // (at + 1: not interleaved)
        const Status st = emit(*k, -1);
        pending_gather_dep_ = -1;
        SC_RETURN_IF_ERROR(st);
      }
      waits.push_back(static_cast<uint64_t>(state(-1).op_node[static_cast<size_t>(it->second)]));
    }
    extra_deps_ = std::move(waits);
    return ok_status();
  }

  // A GEMM split into n chunks: chunk j's FLOPs, bytes and duration (the
  // whole GEMM's kernel time split evenly, at least 1 µs a chunk).
  Status gemm_chunk(TraceNode& x, const OpCost& c, int64_t j, int64_t n) const {
    const auto part = [&](uint64_t v) {
      return static_cast<uint64_t>((static_cast<unsigned __int128>(v) * static_cast<uint64_t>(j + 1)) / static_cast<uint64_t>(n) -
                                   (static_cast<unsigned __int128>(v) * static_cast<uint64_t>(j)) / static_cast<uint64_t>(n));
    };
    x.kind = TraceNodeKind::kCompute;
    x.num_ops = static_cast<int64_t>(part(static_cast<uint64_t>(c.num_ops)));
    x.tensor_size = std::max<uint64_t>(1, part(c.tensor_size));
    x.duration_micros = std::max<uint64_t>(1, part(c.duration_micros));
    return ok_status();
  }

  uint64_t push_compute_chunk(TraceNode x, std::vector<uint64_t> d, int64_t mb) {
    if (last_compute_ >= 0) d.push_back(static_cast<uint64_t>(last_compute_));
    sort_unique(d);
    x.id = p_.nodes.size();
    x.deps.assign(d.begin(), d.end());
    prev_compute_ = last_compute_;
    last_compute_ = static_cast<int64_t>(x.id);
    const uint64_t id = x.id;
    push(std::move(x), 0, -1, 0, mb);
    return id;
  }

  // TE's ring exchange (tp_comm_overlap): the sequence-parallel all-gather
  // `ag` and the GEMM it feeds run in tp steps; step j multiplies the
  // sequence shard it holds (its own at j = 0) while sending that shard to
  // the next tp rank and receiving the next one from the previous rank.
  Status emit_ring_gather(const Op& ag, int id, int64_t mb, std::vector<uint64_t> in) {
    const int mm_id = partner_.at(id);
    const Op& mm = g_.ops[mm_id];
    done_[static_cast<size_t>(mm_id)] = 1;
    for (int t : mm.inputs)
      if (t != ag.outputs[0]) add_nodes_of(t, mb, in);
    sort_unique(in);
    const int64_t n = bind_.at("tp");
    SC_ASSIGN_OR_RETURN(OpCost* gc, cost_of(id));
    const int64_t block = gc->comm_size;
    SC_ASSIGN_OR_RETURN(OpCost* mc, cost_of(mm_id));
    const OpCost c = *mc;
    SC_ASSIGN_OR_RETURN(int64_t out_bytes, bytes_of(mm.outputs[0]));
    const int64_t rings = static_cast<int64_t>(ring_index_.size());
    const std::string prefix = mb_prefix(mb) + phase_name(ag.phase) + ".";
    const uint8_t tp_axis = p_.axis_id("tp");
    const bool bwd = ag.phase != Phase::kForward;
    std::vector<uint64_t> gathered = in;  // the gathered tensor: the own shard and every received one
    int64_t prev_recv = -1;
    uint64_t first = p_.nodes.size(), last = 0;
    for (int64_t j = 0; j < n; ++j) {
      int64_t recv = -1;
      if (j + 1 < n) {
        // Tags of their own (offset 2^30) so that they never meet a
        // ring-attention or pipeline tag between the same two ranks.
        const int64_t tag = (int64_t{1} << 30) + ((std::max<int64_t>(mb, 0) * rings + ring_index_.at(id)) * n + j) * 2 + (bwd ? 1 : 0);
        if (tag > INT32_MAX)
          return make_error(ErrorCode::kInvalidArgument,
                            "too many ring-exchange steps for int32 message tags", "training.tp_comm_overlap");
        TraceNode snd;
        snd.id = p_.nodes.size();
        snd.name = prefix + ag.name + ".ub_send" + std::to_string(j);
        snd.kind = TraceNodeKind::kSend;
        snd.comm_size = block;
        snd.tag = static_cast<int32_t>(tag);
        if (prev_recv >= 0) snd.deps = {static_cast<uint64_t>(prev_recv)};
        else snd.deps.assign(in.begin(), in.end());
        last_send_ = static_cast<int64_t>(snd.id);
        push(std::move(snd), tp_axis, -1, +1, mb);
        TraceNode rcv;
        rcv.id = p_.nodes.size();
        rcv.name = prefix + ag.name + ".ub_recv" + std::to_string(j);
        rcv.kind = TraceNodeKind::kRecv;
        rcv.comm_size = block;
        rcv.output_bytes = static_cast<uint64_t>(block);
        rcv.tag = static_cast<int32_t>(tag);
        recv = static_cast<int64_t>(rcv.id);
        gathered.push_back(rcv.id);
        push(std::move(rcv), tp_axis, -1, -1, mb);
      }
      TraceNode x;
      x.name = prefix + mm.name + ".chunk" + std::to_string(j);
      SC_RETURN_IF_ERROR(gemm_chunk(x, c, j, n));
      x.output_bytes = j + 1 == n ? static_cast<uint64_t>(out_bytes) : 0;  // the last chunk completes the output
      last = push_compute_chunk(std::move(x), prev_recv >= 0 ? std::vector<uint64_t>{static_cast<uint64_t>(prev_recv)} : in, mb);
      prev_recv = recv;
    }
    produced(ag.outputs[0], mb, gathered.data(), gathered.size());
    for (int t : mm.outputs) produced(t, mb, &last, 1);
    state(mb).op_node[static_cast<size_t>(id)] = static_cast<int64_t>(last);
    state(mb).op_node[static_cast<size_t>(mm_id)] = static_cast<int64_t>(last);
    SC_RETURN_IF_ERROR(track_buffers(ag, mb, static_cast<int64_t>(first), static_cast<int64_t>(last)));
    return track_buffers(mm, mb, static_cast<int64_t>(last), static_cast<int64_t>(last));
  }

  // TE's pipelined reduce-scatter (tp_comm_overlap): the GEMM `mm` runs in
  // kTpSplits chunks of its output rows; each chunk's reduce-scatter runs on
  // the side stream while the next chunk computes.
  Status emit_pipelined_gemm(const Op& mm, int id, int64_t mb, std::vector<uint64_t> in) {
    const int rs_id = partner_.at(id);
    const Op& rs = g_.ops[rs_id];
    done_[static_cast<size_t>(rs_id)] = 1;
    sort_unique(in);
    SC_ASSIGN_OR_RETURN(OpCost* mc, cost_of(id));
    const OpCost c = *mc;
    SC_ASSIGN_OR_RETURN(OpCost* rc, cost_of(rs_id));
    const int64_t rs_size = rc->comm_size;
    SC_ASSIGN_OR_RETURN(int64_t mm_out, bytes_of(mm.outputs[0]));
    SC_ASSIGN_OR_RETURN(int64_t rs_out, bytes_of(rs.outputs[0]));
    const std::string prefix = mb_prefix(mb) + phase_name(mm.phase) + ".";
    const uint8_t axis = axis_of_op(rs_id);
    const int64_t k = kTpSplits;
    const auto part = [&](int64_t v, int64_t j) { return v * (j + 1) / k - v * j / k; };
    std::vector<uint64_t> scattered;
    uint64_t first = p_.nodes.size(), last = 0;
    for (int64_t j = 0; j < k; ++j) {
      TraceNode x;
      x.name = prefix + mm.name + ".chunk" + std::to_string(j);
      SC_RETURN_IF_ERROR(gemm_chunk(x, c, j, k));
      x.output_bytes = static_cast<uint64_t>(part(mm_out, j));
      last = push_compute_chunk(std::move(x), j == 0 ? in : std::vector<uint64_t>{}, mb);
      TraceNode r;
      r.id = p_.nodes.size();
      r.name = prefix + rs.name + ".chunk" + std::to_string(j);
      r.kind = TraceNodeKind::kCollective;
      r.coll = rs.coll;
      r.comm_size = std::max<int64_t>(1, part(rs_size, j));
      r.output_bytes = static_cast<uint64_t>(part(rs_out, j));
      std::vector<uint64_t> d = {last};
      queue_on_axis(axis, r.id, d);
      sort_unique(d);
      r.deps.assign(d.begin(), d.end());
      scattered.push_back(r.id);
      push(std::move(r), axis, -1, 0, mb, RoleProgram::kStoredName, 1);
    }
    for (int t : mm.outputs) produced(t, mb, &last, 1);
    produced(rs.outputs[0], mb, scattered.data(), scattered.size());
    state(mb).op_node[static_cast<size_t>(id)] = static_cast<int64_t>(last);
    state(mb).op_node[static_cast<size_t>(rs_id)] = static_cast<int64_t>(scattered.back());
    SC_RETURN_IF_ERROR(track_buffers(mm, mb, static_cast<int64_t>(first), static_cast<int64_t>(scattered.back())));
    return track_buffers(rs, mb, static_cast<int64_t>(scattered.back()), static_cast<int64_t>(scattered.back()));
  }

  // Activation memory, buffer by buffer: an activation (mask, activation
  // gradient, gathered parameter, received or collective output) of one
  // micro-batch lives from the node that writes it to the last node that
  // reads it (through views). Weights and main gradients are resident and
  // counted apart.
  bool transient_kind(int t) const {
    const TensorKind k = kind_of(t);
    return k == TensorKind::kActivation || k == TensorKind::kMask || k == TensorKind::kGradient ||
           k == TensorKind::kInput;
  }
  // Under FP8 (cost/fp8_cost.h, SavedForm) a saved activation an FP8
  // weight-gradient GEMM reads in backward through the FP8 copy TE saved
  // of it (its form says so) has that copy alive from the buffer's write to
  // that read; the buffer itself lives to its last other reader. The GEMM's
  // other operand (the output gradient, a backward buffer) and a tensor
  // kept BF16 (save_original_input) are read as they are. Without a recipe
  // no op reads a copy. (A backward view of a saved tensor feeding such a
  // GEMM would be read as BF16 here: no model's graph has one.)
  Status track_buffers(const Op& op, int64_t mb, int64_t first, int64_t last) {
    if (mb < 0) return ok_status();
    std::vector<int>& buf_of = state(mb).buf_of;
    const bool copy = !copy_reader_.empty() && copy_reader_[static_cast<size_t>(op.id)];
    for (int t : op.inputs) {
      const int buf = buf_of[static_cast<size_t>(t)];
      if (buf < 0) continue;
      Buf& b = bufs_[static_cast<size_t>(buf)];
      const int rep = copy && is_saved_activation(g_, t) ? storage_[static_cast<size_t>(t)] : -1;
      if (rep < 0 || !read_part(forms_[static_cast<size_t>(rep)], copy).fp8) {
        b.last = std::max(b.last, last);
      } else {
        if (b.copy_bytes < 0) {
          SC_ASSIGN_OR_RETURN(b.copy_bytes, saved_buffer_bytes(g_, bind_, rep, {false, true}, o_.fp8_recipe));
        }
        b.copy_last = std::max(b.copy_last, last);
      }
    }
    for (int t : op.outputs) {
      if (!transient_kind(t)) continue;
      SC_ASSIGN_OR_RETURN(int64_t b, bytes_of(t));
      buf_of[static_cast<size_t>(t)] = static_cast<int>(bufs_.size());
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
      if (b.copy_last >= 0) {
        delta[static_cast<size_t>(b.first)] += b.copy_bytes;
        delta[static_cast<size_t>(b.copy_last) + 1] -= b.copy_bytes;
      }
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
  // A duration that does not fit (rates far below any device) is an error,
  // not a wrapped conversion.
  Status set_cost(TraceNode& n, int64_t flops, int64_t bytes, double us, const std::string& what) const {
    n.num_ops = flops;
    n.tensor_size = static_cast<uint64_t>(std::max<int64_t>(bytes, 1));
    if (!(us >= 0 && us < 9.0e18))
      return make_error(ErrorCode::kInvalidArgument,
                        "the duration of " + what + " is not representable in µs (" + std::to_string(us) +
                            "): check the hardware rates and efficiencies",
                        "hardware");
    n.duration_micros = static_cast<uint64_t>(std::max<long long>(1, std::llround(us)));
    return ok_status();
  }

  // The index in p_.axes of a collective op's axis, interned once per op.
  uint8_t axis_of_op(int id) {
    int16_t& a = op_axis_[static_cast<size_t>(id)];
    if (a < 0) a = g_.ops[id].axis.empty() ? 0 : p_.axis_id(g_.ops[id].axis);
    return static_cast<uint8_t>(a);
  }

  // Collectives of one group run in issue order: deps gains the group's
  // last collective, and node `id` becomes it.
  void queue_on_axis(uint8_t axis, uint64_t id, std::vector<uint64_t>& deps) {
    if (last_coll_.size() <= axis) last_coll_.resize(axis + size_t{1}, -1);
    if (last_coll_[axis] >= 0) deps.push_back(static_cast<uint64_t>(last_coll_[axis]));
    last_coll_[axis] = static_cast<int64_t>(id);
  }

  // The amax all-reduce (MAX) at the exit of a chunk's fp8_autocast
  // region: after the step's last compute, on the compute stream (the next
  // compute waits for it), in order with the other collectives of its group.
  void emit_amax_reduce(bool forward, int64_t mb, int64_t bytes) {
    const uint8_t axis = p_.axis_id(o_.amax_axis);
    uint32_t& ref = amax_suffix_[forward ? 0 : 1];
    if (ref == RoleProgram::kStoredName) {
      ref = static_cast<uint32_t>(p_.name_suffixes.size());
      p_.name_suffixes.push_back(forward ? "fwd.fp8.amax_reduce" : "bwd.fp8.amax_reduce");
    }
    TraceNode node;
    node.id = p_.nodes.size();
    node.kind = TraceNodeKind::kCollective;
    node.coll = CollectiveType::kAllReduce;
    node.comm_size = bytes;
    node.output_bytes = static_cast<uint64_t>(bytes);
    std::vector<uint64_t> deps;
    if (last_compute_ >= 0) deps.push_back(static_cast<uint64_t>(last_compute_));
    queue_on_axis(axis, node.id, deps);
    sort_unique(deps);
    node.deps.assign(deps.begin(), deps.end());
    prev_compute_ = last_compute_;
    last_compute_ = static_cast<int64_t>(node.id);
    push(std::move(node), axis, -1, 0, mb, ref);
  }

  void push(ProgramNode node, uint8_t axis, int64_t peer_stage, int64_t ring_offset, int64_t mb,
            uint32_t name_ref = RoleProgram::kStoredName, uint8_t side = 0) {
    if (sides_) p_.side_stream.push_back(side);
    p_.nodes.push_back(std::move(node));
    p_.name_ref.push_back(name_ref);
    p_.node_mb.push_back(static_cast<int32_t>(mb));
    p_.node_axis.push_back(axis);
    p_.peer_stage.push_back(static_cast<int32_t>(peer_stage));
    p_.ring_offset.push_back(static_cast<int8_t>(ring_offset));
  }

  // Ring attention in `degree` steps: step j computes on the K/V block it
  // holds while sending that block to the next rank of the ring and
  // receiving the following one from the previous rank (backward also
  // circulates dK/dV, twice the bytes). Compute is split evenly.
  Status emit_ring(const Op& op, int id, int64_t mb, const std::vector<uint64_t>& deps) {
    const int64_t n = bind_.at(op.ring_axis);
    SC_ASSIGN_OR_RETURN(int64_t flops, op.local_flops.eval(bind_, op.name + " flops"));
    int64_t bytes = 0, block = 0, out_bytes = 0;
    for (const auto* list : {&op.inputs, &op.outputs})
      for (int t : *list) {
        SC_ASSIGN_OR_RETURN(int64_t b, bytes_of(t));
        bytes += b;
        if (list == &op.outputs) out_bytes += b;
      }
    for (int i : {1, 2}) {
      SC_ASSIGN_OR_RETURN(int64_t b, bytes_of(op.inputs[i]));
      block += b;
    }
    if (op.phase == Phase::kBackward) block *= 2;
    // The steps' kernels (attention_factor: one causal step, the others on
    // half a block of queries or of keys).
    double shape = 1;
    if (kernel_model()) {
      SC_ASSIGN_OR_RETURN(shape, attention_factor(id));
    }
    const int64_t rings = static_cast<int64_t>(ring_index_.size());
    const std::string prefix = mb_prefix(mb) + phase_name(op.phase) + "." + op.name;
    const std::set<uint64_t> inputs(deps.begin(), deps.end());
    const uint8_t ring_axis = p_.axis_id(op.ring_axis);
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
          if (kind == TraceNodeKind::kRecv) x.output_bytes = static_cast<uint64_t>(block);
          x.tag = static_cast<int32_t>(tag);
          x.deps.assign(d.begin(), d.end());
          const int64_t node_id = static_cast<int64_t>(x.id);
          push(std::move(x), ring_axis, -1, offset, mb);
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
      const int64_t f = flops / n + (j + 1 == n ? flops % n : 0), by = bytes / n + (j + 1 == n ? bytes % n : 0);
      const double us =
          kernel_model()
              ? std::max(hw_.kernel_floor_micros,
                         attention_micros(hw_, attention_dtype(), static_cast<double>(f) / shape, static_cast<double>(by),
                                          op.fwd_op >= 0))
              : roofline_micros(hw_, attention_dtype(), static_cast<double>(f), static_cast<double>(by));
      SC_RETURN_IF_ERROR(set_cost(c, f, by, us, op.name));
      // Each step accumulates into the output: the last step writes it.
      c.output_bytes = j + 1 == n ? static_cast<uint64_t>(out_bytes) : 0;
      std::set<uint64_t> cd = inputs;
      if (prev_recv >= 0) cd.insert(static_cast<uint64_t>(prev_recv));
      if (last_compute_ >= 0) cd.insert(static_cast<uint64_t>(last_compute_));
      c.deps.assign(cd.begin(), cd.end());
      prev_compute_ = last_compute_;
      last_compute_ = static_cast<int64_t>(c.id);
      last = c.id;
      push(std::move(c), 0, -1, 0, mb);
      prev_recv = recv;
    }
    for (int t : op.outputs) produced(t, mb, &last, 1);
    state(mb).op_node[static_cast<size_t>(id)] = static_cast<int64_t>(last);
    return track_buffers(op, mb, static_cast<int64_t>(last), static_cast<int64_t>(last));
  }

  const Graph& g_;
  const Bindings& bind_;
  const HardwareProfile& hw_;
  // A training FP8 GEMM's profile: hw_ with its GEMM ceiling scaled by the
  // fitted fp8_training_gemm_efficiency (docs/hardware.md, "FP8 GEMMs in
  // training iterations").
  static HardwareProfile fp8_training_hw(const HardwareProfile& hw) {
    HardwareProfile f = hw;
    f.gemm_efficiency *= hw.fp8_training_gemm_efficiency;
    return f;
  }
  LowerOptions o_;
  HardwareProfile fp8_hw_;  // fp8_training_hw(hw_): the FP8 GEMMs' ceiling
  RoleProgram p_;
  std::map<std::pair<StepKind, int>, std::vector<int>> seg_;
  std::vector<int> opt_;
  std::map<int64_t, MbState> mbs_;  // micro-batches in flight (and -1)
  std::vector<MbState> free_;       // released states, reused
  MbState* cur_ = nullptr;          // the state state() returned last (in mbs_), for cur_mb_
  int64_t cur_mb_ = 0;
  std::vector<uint64_t> deps_;      // emit's dependency buffer
  std::map<int, std::vector<uint64_t>> grad_;  // main grad -> last writer
  std::vector<int64_t> expected_, writes_;      // per tensor: main grad writes per iteration (0: none)
  bool grads_written_ = true;                   // a main grad was written since the last bucket scan (or none scanned yet)
  std::vector<char> done_;                      // per op
  std::vector<int64_t> tensor_bytes_;           // per tensor: local bytes, -1 until evaluated
  std::vector<uint8_t> tensor_kind_;            // per tensor: its TensorKind
  std::vector<OpCost> cost_;                    // per op
  std::vector<double> kernel_us_;               // per op: kernel-model time without the floor, -1 until evaluated
  FusionPlan plan_;                             // kernel model: fused kernels
  std::vector<int64_t> last_coll_;  // per axis of p_.axes: the last collective's node, -1 if none
  std::vector<int16_t> op_axis_;    // per op: axis_of_op, -1 until asked
  int64_t last_compute_ = -1, last_send_ = -1;
  int64_t last_shared_ = -1;                      // moe_shared_expert_overlap: the shared stream's last node
  std::vector<uint8_t> shared_, shared_start_;    // per op: a shared expert's / the first of a run (empty: off)
  bool sides_ = false;                            // p_.side_stream is filled
  bool async_send_ = false;                       // overlap_p2p_comm: emitting a step of the steady 1F1B phase
  bool combining_ = false;                        // ep_a2a_overlap: emitting a combined forward / backward step
  std::map<int64_t, int64_t> event_;              // ... per micro-batch: its last compute node (not delayed)
  std::map<std::pair<int, int>, std::optional<std::vector<CombinedOp>>> combined_;  // (F, B chunk) -> order
  std::map<int, std::optional<std::vector<CombinedOp>>> tbo_;  // chunk -> two-batch overlap order
  std::map<int, AgDispatch> ag_dispatch_;         // moe_allgather: ep all-to-all op -> what replaces it
  int64_t prev_compute_ = -1;                     // the compute node before last_compute_
  uint32_t amax_suffix_[2] = {RoleProgram::kStoredName, RoleProgram::kStoredName};  // fwd / bwd amax names
  bool every_mb_ = false;                 // grad_reduce_every_micro_batch with several micro-batches
  bool defer_reductions_ = false;         // ZeRO-3 gathers share the group: reductions wait for the next gather
  bool gathered_ = false;                 // a ZeRO-3 gather was emitted since the last flush
  // Per bucket op (every_mb_): rounds whose gradients are written (below
  // micro_batches), rounds emitted, and its per-micro-batch name in
  // p_.name_suffixes.
  struct Rounds {
    int64_t ready = 0, done = 0;
    uint32_t suffix = RoleProgram::kStoredName;
  };
  std::map<int, Rounds> rounds_;
  std::vector<std::pair<int, bool>> deferred_;  // ready reductions not yet emitted: bucket op, last round
  std::vector<uint8_t> tp_fuse_;                  // per op: TpFuse (empty: tp 1, or no tp collective to overlap)
  std::vector<uint8_t> fp8_gather_;               // per op: an all-gather moving FP8 (empty: no fp8_recipe)
  std::map<int, int> partner_;                    // kRingGather / kPipeGemm op -> its GEMM / reduce-scatter
  std::map<int, int> gather_of_weight_;           // overlap_param_gather: weight -> its bucket's gather op
  std::vector<int> gather_seq_;                   // those gathers in first-use order
  std::vector<int> gather_chunk_;                 // per gather_seq_ entry: the chunk that reads it first
  bool first_forward_ = false;                    // emitting a chunk's first forward step
  int64_t pending_gather_dep_ = -1;               // the next bucket's gather waits for this compute node
  std::vector<uint64_t> extra_deps_;              // added to the next emitted node's deps
  std::vector<uint64_t> barrier_;  // deps of every op after the schedule
  std::map<int, int64_t> ring_index_;                     // ring-attention op -> index (tags)
  // An activation buffer: its bytes alive over [first, last]; under FP8 its
  // saved FP8 copy's over [first, copy_last] (copy_last -1: none).
  struct Buf {
    int64_t bytes, first, last;
    int64_t copy_bytes = -1, copy_last = -1;
  };
  std::vector<char> copy_reader_;  // per op: reads saved activations' FP8 copies only (fp8_copy_readers)
  std::vector<int> storage_;       // saved_storage(g_)
  std::vector<SavedForm> forms_;   // per saved buffer: what is kept (fp8_saved_forms)
  std::vector<Buf> bufs_;                                 // activation buffers of this program
};

}  // namespace

Result<int64_t> saved_activation_bytes(const Graph& g, const Bindings& bind, int chunk, Fp8Recipe r) {
  const std::vector<int> storage = saved_storage(g);
  return saved_activation_bytes(g, bind, chunk, storage, fp8_saved_forms(g, r, storage, fp8_copy_readers(g, r)), r);
}

Result<int64_t> saved_activation_bytes(const Graph& g, const Bindings& bind, int chunk,
                                       const std::vector<int>& storage, const std::vector<SavedForm>& forms,
                                       Fp8Recipe r) {
  std::set<int> saved;  // buffers: a saved view of a saved tensor is its buffer
  for (int id : g.order) {
    const Op& o = g.ops[id];
    if (o.phase != Phase::kBackward || o.chunk != chunk) continue;
    for (int t : o.inputs)
      if (is_saved_activation(g, t)) saved.insert(storage[static_cast<size_t>(t)]);
  }
  int64_t total = 0;
  for (int t : saved) {
    SC_ASSIGN_OR_RETURN(int64_t b, saved_buffer_bytes(g, bind, t, forms[static_cast<size_t>(t)], r));
    total += b;
  }
  return total;
}

Result<RoleProgram> lower_program(const Graph& g, const Bindings& bind, const HardwareProfile& hw,
                                  const LowerOptions& o) {
  return Lowerer(g, bind, hw, o).run();
}

uint8_t RoleProgram::axis_id(const std::string& axis) {
  for (size_t i = 0; i < axes.size(); ++i)
    if (axes[i] == axis) return static_cast<uint8_t>(i);
  SC_CHECK(axes.size() < 256, "more than 255 mesh axes in one program");
  axes.push_back(axis);
  return static_cast<uint8_t>(axes.size() - 1);
}

std::string RoleProgram::node_name(size_t node) const {
  if (node >= name_ref.size() || name_ref[node] == kStoredName) return nodes[node].name.str();
  const std::string& suffix = name_suffixes[name_ref[node]];
  const std::string m = std::to_string(node_mb[node]);
  std::string out;
  out.reserve(3 + m.size() + suffix.size());
  out.append("mb").append(m).append(".").append(suffix);
  return out;
}

std::string_view RoleProgram::name_suffix(size_t node) const {
  if (node < name_ref.size() && name_ref[node] != kStoredName) return name_suffixes[name_ref[node]];
  std::string_view n = nodes[node].name.str();
  if (n.starts_with("mb")) n.remove_prefix(std::min(n.size(), n.find('.') + 1));
  return n;
}

int32_t RoleProgram::micro_batch_of(size_t node) const {
  if (node < node_mb.size()) return node_mb[node];
  const std::string& n = nodes[node].name.str();
  return n.starts_with("mb") ? static_cast<int32_t>(std::strtol(n.c_str() + 2, nullptr, 10)) : -1;
}

TraceNode ProgramNode::to_trace_node() const {
  TraceNode n;
  n.id = id;
  n.name = name.str();
  n.kind = kind;
  n.coll = coll;
  n.deps.assign(deps.begin(), deps.end());
  n.num_ops = num_ops;
  n.tensor_size = tensor_size;
  n.duration_micros = duration_micros;
  n.comm_size = comm_size;
  n.tag = tag;
  n.output_bytes = output_bytes;
  return n;
}

RankTrace instantiate_rank(const RoleProgram& p, const RankLayout& layout, int64_t rank) {
  RankTrace t;
  t.rank = rank;
  t.nodes.reserve(p.nodes.size());
  for (const ProgramNode& x : p.nodes) t.nodes.push_back(x.to_trace_node());
  for (size_t i = 0; i < t.nodes.size(); ++i) {
    TraceNode& n = t.nodes[i];
    if (i < p.name_ref.size() && p.name_ref[i] != RoleProgram::kStoredName) n.name = p.node_name(i);
    if (n.kind == TraceNodeKind::kCollective) n.group = layout.group_id(rank, p.axis_of(i));
    else if (n.kind != TraceNodeKind::kCompute && i < p.ring_offset.size() && p.ring_offset[i] != 0) {
      const std::string& axis = p.axis_of(i);
      const int64_t deg = layout.degree(axis);
      const int64_t c = (layout.coord(rank, axis) + p.ring_offset[i] + deg) % deg;
      n.peer = static_cast<int32_t>(layout.with_coord(rank, axis, c));
    } else if (n.kind != TraceNodeKind::kCompute) {
      n.peer = static_cast<int32_t>(layout.with_coord(rank, "pp", p.peer_stage[i]));
    }
  }
  return t;
}

}  // namespace sc
