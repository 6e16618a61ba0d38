#include "api/api.h"

#include <cstdio>
#include <algorithm>
#include <atomic>
#include <exception>
#include <limits>
#include <mutex>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "api/budget.h"
#include "api/serving.h"
#include "api/state.h"
#include "base/cancel.h"
#include "base/workers.h"
#include "emit/chakra_writer.h"
#include "graph/autodiff.h"
#include "model/transformer.h"
#include "parallel/buckets.h"
#include "parallel/propagate.h"
#include "parallel/zero.h"
#include "sim/network.h"

namespace sc {

std::string config_hash_hex(const std::string& canonical_json) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : canonical_json) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

const char* stagecraft_version() { return "0.1.0"; }

Generator::Generator(std::unique_ptr<GeneratorState> s) : state_(std::move(s)) {}
Generator::Generator(Generator&&) noexcept = default;
Generator& Generator::operator=(Generator&&) noexcept = default;
Generator::~Generator() = default;

namespace {

// DeepEP's node split of the ep groups (parallel.moe_dispatcher deepep,
// docs/parallelism.md "Token dispatchers"): m ep ranks share a node when
// every ep group holds m consecutive ep coordinates on each of ep / m
// distinct nodes (1 <= m < ep). Otherwise (the whole group in one node, or
// a rank order that spreads a node's ranks unevenly over the group) {0, 0}:
// the traces keep one all-to-all over ep and simulate times it as DeepEP
// moves it. rdma_share: the RDMA leg's comm_size over the all-to-all's.
struct DeepEpSplit {
  int64_t nvl = 0;
  double rdma_share = 0;
};

DeepEpSplit deepep_node_split(const Job& job, const RankLayout& L, int64_t local_tokens, int64_t cap) {
  const int64_t ep = job.parallel.ep, E = job.model.num_experts;
  const int64_t D = job.network.domain_size > 0 ? job.network.domain_size
                                                : std::max<int64_t>(1, job.hardware.gpus_per_node);
  if (ep <= 1 || cap <= 0 || E <= 0) return {};
  int64_t m = 0;
  for (int64_t r = 0; r < L.world_size(); ++r) {
    if (L.coord(r, "ep") != 0) continue;
    const std::vector<int64_t> g = L.group_members(r, "ep");  // by ep coordinate
    int64_t here = 1;
    while (here < ep && g[static_cast<size_t>(here)] / D == g[0] / D) ++here;
    if (m == 0) m = here;
    if (here != m || ep % m != 0) return {};
    std::set<int64_t> nodes;
    for (int64_t j = 0; j < ep; ++j) {
      const int64_t node = g[static_cast<size_t>(j)] / D;
      if (node != g[static_cast<size_t>(j / m * m)] / D) return {};
      if (j % m == 0 && !nodes.insert(node).second) return {};
    }
  }
  if (m <= 0 || m >= ep) return {};
  // Each token once to every other node holding one of its k experts: of
  // the buffer's E x cap slots its T tokens (share), to N - 1 nodes each
  // missed with probability p_miss; as an all-to-all over the N nodes'
  // ranks (comm_size / N to each, itself included) that is T (1 - p_miss) N.
  const double share = static_cast<double>(local_tokens) / (static_cast<double>(E) * static_cast<double>(cap));
  const double N = static_cast<double>(ep / m);
  const double miss = deepep_node_miss(E, job.model.experts_per_token, static_cast<double>(E) * m / ep);
  return {m, share * N * (1 - miss)};
}

// Megatron-Core's amax reduction group (parallel_state
// get_amax_reduction_group, with context parallelism): a stage's tp x cp x
// dp ranks, named by its axes of degree > 1 as the layout's groups know
// them ("dp+cp" is the data-parallel-with-cp group already there).
std::string amax_reduction_axis(const ParallelConfig& p) {
  std::vector<std::string> axes;
  if (p.tp > 1) axes.push_back("tp");
  if (p.cp > 1) axes.push_back("cp");
  if (p.dp > 1) axes.push_back("dp");
  if (axes.size() == 2 && axes[0] == "cp") return "dp+cp";
  std::string name;
  for (const auto& a : axes) name += (name.empty() ? "" : "+") + a;
  return name;
}

// Runs fn(i) -> Status for i in [0, n) on up to `threads` threads, each
// index once; fn writes only its own slot, so the results do not depend on
// the thread count. A failed index stops the indices not yet begun (every
// lower one has begun: they are handed out in order), and the first error
// in index order is returned: the sequential loop's.
template <class Fn>
Status for_each_index(int64_t n, int threads, const Fn& fn) {
  if (threads <= 1 || n <= 1) {
    for (int64_t i = 0; i < n; ++i) SC_RETURN_IF_ERROR(fn(i));
    return ok_status();
  }
  std::vector<Status> status(static_cast<size_t>(n), ok_status());
  std::atomic<int64_t> next{0};
  std::atomic<bool> stop{false};
  const auto work = [&] {
    for (int64_t i; !stop.load(std::memory_order_relaxed) && (i = next.fetch_add(1)) < n;) {
      Status& st = status[static_cast<size_t>(i)];
      st = fn(i);
      if (!st.ok()) stop.store(true, std::memory_order_relaxed);
    }
  };
  // An exception (std::bad_alloc) reaches the caller as from the
  // sequential loop, not std::terminate: a worker's comes out of join(),
  // this thread's unwinds through the group, which stops and joins the
  // others (core/base/workers.h; the wasm build has no exceptions and
  // runs one thread).
  Workers pool([&] { stop.store(true, std::memory_order_relaxed); });
  for (int k = 1; k < std::min<int64_t>(threads, n); ++k) pool.spawn(work);
  work();
  pool.join();
  for (const Status& st : status) SC_RETURN_IF_ERROR(st);
  return ok_status();
}

// How stage `stage` of `job` is lowered at `micro_batches` micro-batches
// (the job's own count, or the budget estimate's samples, below).
LowerOptions stage_lower_options(const Job& job, int64_t micro_batches, int64_t stage, int64_t deepep_nvl,
                                  double deepep_rdma_share) {
  const auto& p = job.parallel;
  const auto& t = job.training;
  LowerOptions lo;
  lo.micro_batches = micro_batches;
  lo.pp = p.pp;
  lo.virtual_stages = p.virtual_stages;
  lo.stage = stage;
  lo.schedule = t.schedule;
  lo.compute_dtype = t.dtype;
  lo.optimizer_bytes_per_param = t.optimizer_bytes_per_param;
  // Userbuffers overlap the sequence-parallel collectives: without tp > 1
  // and sequence parallelism there are none, and the option changes nothing.
  lo.tp_comm_overlap = t.tp_comm_overlap && p.sequence_parallel && p.tp > 1;
  lo.overlap_param_gather = t.overlap_param_gather;
  lo.grad_reduce_every_micro_batch = p.zero >= 2;
  // Megatron-LM overlaps pipeline send/recv only in the interleaved
  // schedule (arguments.py turns overlap_p2p_comm off without virtual
  // stages; the non-interleaved schedule refuses it).
  lo.overlap_p2p_comm =
      t.overlap_p2p_comm && t.schedule == Schedule::kInterleaved && p.pp > 1 && p.virtual_stages > 1;
  lo.moe_imbalance = p.moe_imbalance;
  lo.expert_gemm_launches = true;
  // Megatron-Core: only effective with shared experts.
  lo.moe_shared_expert_overlap = t.moe_shared_expert_overlap && job.model.is_moe() && job.model.shared_experts > 0;
  // Megatron-Core's EP all-to-all overlap (validated: an MoE model, ep > 1).
  lo.ep_a2a_overlap = t.overlap_moe_expert_parallel_comm && job.model.is_moe() && p.ep > 1;
  lo.delay_wgrad_compute = lo.ep_a2a_overlap && t.delay_wgrad_compute;
  lo.moe_allgather = p.moe_dispatcher == "allgather";
  lo.deepep_nvl = deepep_nvl;
  lo.deepep_rdma_share = deepep_rdma_share;
  lo.fp8_recipe = t.fp8_recipe;
  if (t.fp8_recipe == Fp8Recipe::kDelayed) lo.amax_axis = amax_reduction_axis(p);
  return lo;
}

// The counted budget estimate (summary.json "estimate"; api/budget.h) of a
// built job: its stage graphs do not depend on the micro-batch count, so
// the samples are these graphs lowered again at the sampled count, each
// stage's highest rank encoded. The same counts as building each sample as
// a job of its own (estimate_job_counted(job)), without building graphs.
Result<JobEstimate> count_built_estimate(const GeneratorState& s, int threads) {
  const Job& job = s.job;
  const auto& p = job.parallel;
  return estimate_job_counted(job, [&](const Job& mini) -> Result<std::vector<StageCount>> {
    const int64_t m = mini.training.num_micro_batches(p);
    TraceMetadata meta;
    meta.generator_version = stagecraft_version();
    meta.config_hash = config_hash_hex(job_to_canonical_json(mini));
    meta.world_size = s.layout.world_size();
    // Every stage's count apart (a slot each), on `threads` threads; the
    // first error in stage order is the answer, as in a sequential loop.
    std::vector<StageCount> out(static_cast<size_t>(p.pp));
    SC_RETURN_IF_ERROR(for_each_index(p.pp, threads, [&](int64_t stage) -> Status {
      SC_RETURN_IF_ERROR(check_cancelled("the budget estimate"));
      const int64_t rank = stage_highest_rank(s.layout, stage);
      Status counted = ok_status();
      if (m == job.training.num_micro_batches(p)) {
        out[static_cast<size_t>(stage)] =
            count_stage_trace(instantiate_rank(s.program_of(stage), s.layout, rank), meta, &counted);
      } else {
        SC_ASSIGN_OR_RETURN(RoleProgram prog, lower_program(s.graph_of(stage), s.bind, job.hardware,
                                                            stage_lower_options(mini, m, stage, s.deepep_nvl,
                                                                                s.deepep_rdma_share)));
        SC_RETURN_IF_ERROR(check_role_program(prog, s.layout, p.pp, stage));
        out[static_cast<size_t>(stage)] = count_stage_trace(instantiate_rank(prog, s.layout, rank), meta, &counted);
      }
      return counted;
    }));
    return out;
  });
}

}  // namespace

Result<Generator> Generator::create(const Job& job) { return create(job, CreateOptions{}); }

Result<Generator> Generator::create(const Job& job, const CreateOptions& options) {
  SC_RETURN_IF_ERROR(validate_job(job));
  if (options.check_budget) SC_RETURN_IF_ERROR(check_budget(job));  // refuse before building (api/budget.h)
  if (job.inference()) return create_serving_generator(job);  // api/serving.cc
  auto s = std::make_unique<GeneratorState>();
  // Cancelled in a process that exits next: not freed (base/cancel.h).
  struct KeepOnCancel {
    std::unique_ptr<GeneratorState>& s;
    ~KeepOnCancel() {
      if (s && cancel_requested() && keep_on_cancel()) (void)s.release();
    }
  } keep_if_cancelled{s};
  s->job = job;
  const auto& p = job.parallel;
  const auto& t = job.training;

  s->bind = model_bindings(job.model, t.micro_batch_size, t.seq_len);
  s->bind["tp"] = p.tp;
  s->bind["dp"] = p.dp;
  s->bind["cp"] = p.cp;
  s->bind["dp+cp"] = p.dp * p.cp;
  std::vector<MeshAxis> axes;
  for (const auto& name : p.order)
    axes.push_back({name, name == "tp" ? p.tp : name == "dp" ? p.dp : name == "cp" ? p.cp : p.pp});
  s->layout = RankLayout(std::move(axes));
  if (job.model.last_stage_embeds()) s->layout.enable_embedding_groups();
  s->layout.enable_combined("dp+cp");
  if (t.fp8_recipe == Fp8Recipe::kDelayed)
    if (const std::string amax = amax_reduction_axis(p); amax.find('+') != std::string::npos && amax != "dp+cp")
      s->layout.enable_combined(amax);
  // Gradients are summed over the data-parallel ranks, with context
  // parallelism over dp x cp (Megatron's data-parallel-with-cp group).
  const std::string grad_axis = p.dp > 1 && p.cp > 1 ? "dp+cp" : p.cp > 1 ? "cp" : "dp";
  const bool moe = job.model.is_moe();
  const int64_t etp = p.expert_tp_degree(), edp = p.expert_dp();
  if (moe) {
    // Megatron's expert-parallel folding: a stage's tp x cp x dp ranks,
    // read as one index, split again as expert_tp x ep x expert-dp.
    s->layout.add_derived({"tp", "cp", "dp"}, {{"etp", etp}, {"ep", p.ep}, {"edp", edp}});
    s->bind["ep"] = p.ep;
    s->bind["etp"] = etp;
    s->bind["edp"] = edp;
    const int64_t local_tokens =
        t.micro_batch_size * t.seq_len / (p.cp * (p.sequence_parallel ? p.tp : 1));
    s->bind["cap"] = moe_capacity(job.model, local_tokens);
  }
  // HSDP: ZeRO's sharding group is the inner part of the data-parallel ranks.
  ZeroAxes zaxes;
  zaxes.grad = grad_axis;
  zaxes.dense = p.dp * p.cp > 1 ? grad_axis : "";
  zaxes.expert = moe && edp > 1 ? "edp" : "";
  const int64_t shard = p.shard_degree();
  if (p.zero > 0 && shard < p.dp * p.cp) {
    zaxes.dense = "";  // a group of 1 shards nothing: plain data parallelism
    if (shard > 1) {
      s->layout.add_derived({"cp", "dp"}, {{"dp_shard", shard}, {"dp_replicate", p.dp * p.cp / shard}});
      s->bind["dp_shard"] = shard;
      s->bind["dp_replicate"] = p.dp * p.cp / shard;
      zaxes.dense = "dp_shard";
      zaxes.replica = "dp_replicate";
    }
  }
  // DeepEP across nodes: ep's ranks split into those of one node (ep_nvl,
  // inner) and those of the same local index on the other nodes (ep_rdma),
  // where the layout puts whole nodes' worth of an ep group together.
  if (moe && p.ep > 1 && p.moe_dispatcher == "deepep") {
    const int64_t local_tokens = t.micro_batch_size * t.seq_len / (p.cp * (p.sequence_parallel ? p.tp : 1));
    const DeepEpSplit deepep = deepep_node_split(job, s->layout, local_tokens, s->bind["cap"]);
    s->deepep_nvl = deepep.nvl;
    s->deepep_rdma_share = deepep.rdma_share;
    if (deepep.nvl > 0) {
      s->layout.add_derived({"tp", "cp", "dp"}, {{"deepep.etp", etp, false},
                                                  {"ep_nvl", deepep.nvl},
                                                  {"ep_rdma", p.ep / deepep.nvl},
                                                  {"deepep.edp", edp, false}});
      s->bind["ep_nvl"] = deepep.nvl;
      s->bind["ep_rdma"] = p.ep / deepep.nvl;
    }
  }
  s->groups = s->layout.all_groups();

  // The stages are independent (a graph and its lowering each, read only
  // from the job and the bindings): built on `threads` threads (the CLI's
  // CreateOptions::threads), each into its own slot and checked there; the
  // first error in stage order and every byte are the sequential loop's.
  const int threads = std::max(1, options.threads);
  std::vector<StageState>& stages = s->stages;  // in place: a cancelled build stays unfreed (KeepOnCancel)
  stages.resize(static_cast<size_t>(p.pp));
  SC_RETURN_IF_ERROR(for_each_index(p.pp, threads, [&](int64_t stage) -> Status {
    SC_RETURN_IF_ERROR(check_cancelled("the graph build"));
    BuildOptions bo;
    bo.has_tp = p.tp > 1;
    bo.has_dp = p.dp > 1;
    bo.has_cp = p.cp > 1;
    bo.cp_ring = bo.has_cp && p.cp_algorithm == "ring";
    bo.sequence_parallel = p.sequence_parallel && bo.has_tp;
    bo.has_ep = moe && p.ep > 1;
    bo.has_etp = moe && etp > 1;
    bo.has_edp = moe && edp > 1;
    bo.dtype = t.dtype;
    bo.cross_entropy_fusion = t.cross_entropy_loss_fusion;
    bo.num_virtual = p.pp * p.virtual_stages;
    bo.chunks = stage_chunks(job.model.num_layers, p.pp, p.virtual_stages, p.pipeline_layout, stage);
    Graph g = build_transformer_forward(job.model, bo);
    // Between the stage's steps too: each can take seconds for a very deep
    // stage (thousands of MTP layers), and a stop should not wait for all.
    SC_RETURN_IF_ERROR(check_cancelled("the graph build"));
    AutodiffOptions ao;
    ao.grad_dtype = t.grad_reduce_dtype;
    ao.recompute = t.recompute == Recompute::kFull        ? RecomputeMode::kFull
                   : t.recompute == Recompute::kSelective ? RecomputeMode::kSelective
                                                          : RecomputeMode::kNone;
    ao.recompute_modules = t.recompute_modules != 0 ? t.recompute_modules : kRecomputeCoreAttn;
    append_backward_and_optimizer(g, ao);
    SC_RETURN_IF_ERROR(check_cancelled("the graph build"));
    propagate_shardings(g, propagation_options(bo));
    SC_RETURN_IF_ERROR(check_cancelled("the graph build"));
    // Without overlap_grad_reduce the gradients are reduced once, after
    // the backward pass: one bucket, final when the last gradient is (the
    // same trace as a dp_bucket_mb above the gradient bytes). ZeRO 2/3
    // reduce during backward always (TrainingConfig::grad_reduce_overlapped).
    const double bucket_bytes = t.grad_reduce_overlapped(p) ? t.dp_bucket_mb * 1024.0 * 1024.0
                                                            : std::numeric_limits<double>::infinity();
    SC_RETURN_IF_ERROR(bucket_dp_gradients(g, s->bind, bucket_bytes, grad_axis));
    if (bo.has_edp) SC_RETURN_IF_ERROR(bucket_dp_gradients(g, s->bind, bucket_bytes, "edp", "expert_grad_bucket"));
    apply_zero(g, static_cast<int>(p.zero), zaxes);
    insert_weight_syncs(g);
    SC_RETURN_IF_ERROR(check_cancelled("the graph build"));

    const LowerOptions lo = stage_lower_options(job, t.num_micro_batches(p), stage, s->deepep_nvl,
                                                s->deepep_rdma_share);
    SC_ASSIGN_OR_RETURN(RoleProgram prog, lower_program(g, s->bind, job.hardware, lo));
    SC_RETURN_IF_ERROR(check_role_program(prog, s->layout, p.pp, stage));
    stages[static_cast<size_t>(stage)] = {std::move(g), std::move(prog)};
    return ok_status();
  }));
  s->config_hash = config_hash_hex(job_to_canonical_json(job));
  if (options.summary) {
    // What the budget checks (summary.json "estimate"; docs/promises.md).
    SC_ASSIGN_OR_RETURN(s->estimate, count_built_estimate(*s, threads));
    SC_ASSIGN_OR_RETURN(s->summary, build_summary(*s));
  }
  return Generator(std::move(s));
}

const Job& Generator::job() const { return state_->job; }
int64_t Generator::world_size() const { return state_->layout.world_size(); }
std::string Generator::summary_json() const { return state_->summary; }

std::string Generator::graph_text() const {
  const Job& j = state_->job;
  std::string header = "# stagecraft graph: model=" + j.model.name + " layers=" + std::to_string(j.model.num_layers) +
                       " tp=" + std::to_string(j.parallel.tp) + " dp=" + std::to_string(j.parallel.dp) +
                       (j.parallel.pp > 1 ? " pp=" + std::to_string(j.parallel.pp) + " schedule=" +
                                                schedule_name(j.training.schedule)
                                          : std::string()) +
                       " sequence_parallel=" + (j.parallel.sequence_parallel ? "on" : "off") +
                       (j.inference() ? std::string("\n# inference: one forward pass over the KV cache (no backward, no "
                                                    "optimizer); s: the tokens an iteration feeds, Lk: the cache; shapes are per rank")
                                      : std::string("\n# one micro-batch: forward, backward, then the optimizer phase; shapes "
                                                    "are per rank"));
  if (state_->num_stages() == 1) return graph_to_text(state_->graph_of(0), header);
  std::string out = header + "\n";
  for (int64_t st = 0; st < state_->num_stages(); ++st)
    out += graph_to_text(state_->graph_of(st), "## pipeline stage " + std::to_string(st));
  return out;
}

Result<RankTrace> Generator::rank_trace(int64_t rank) const {
  if (rank < 0 || rank >= world_size())
    return make_error(ErrorCode::kInvalidArgument,
                      "rank " + std::to_string(rank) + " is outside 0.." + std::to_string(world_size() - 1), "rank");
  return instantiate_rank(state_->program_of(state_->layout.coord(rank, "pp")), state_->layout, rank);
}

Result<std::string> Generator::rank_trace_bytes(int64_t rank) const {
  SC_ASSIGN_OR_RETURN(RankTrace t, rank_trace(rank));
  std::string out;
  SC_RETURN_IF_ERROR(write_chakra_trace(t, metadata(), &out));
  return out;
}

const GroupTable& Generator::groups() const { return state_->groups; }
std::string Generator::groups_json() const { return group_table_json(state_->groups); }

TraceMetadata Generator::metadata() const {
  TraceMetadata m;
  m.generator_version = stagecraft_version();
  m.config_hash = state_->config_hash;
  m.world_size = world_size();
  return m;
}

std::string error_to_json(const Error& e) {
  nlohmann::json j;
  j["code"] = error_code_name(e.code);
  // Echoed input is escaped, clipped and valid UTF-8 (echo_text): a strict
  // dump of a raw message with a stray byte would throw, i.e. abort in wasm.
  j["message"] = echo_text(e.message, kMaxErrorMessageBytes);
  j["path"] = echo_text(e.path, kMaxErrorPathBytes);
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace sc
