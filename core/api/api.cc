#include "api/api.h"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "api/state.h"
#include "emit/chakra_writer.h"
#include "graph/autodiff.h"
#include "model/transformer.h"
#include "parallel/buckets.h"
#include "parallel/propagate.h"
#include "parallel/zero.h"

namespace sc {
namespace {

// FNV-1a 64-bit of the canonical job JSON: a stable provenance tag, not a
// cryptographic digest.
std::string fnv1a_hex(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace

const char* stagecraft_version() { return "0.1.0"; }

Generator::Generator(std::unique_ptr<GeneratorState> s) : state_(std::move(s)) {}
Generator::Generator(Generator&&) noexcept = default;
Generator& Generator::operator=(Generator&&) noexcept = default;
Generator::~Generator() = default;

Result<Generator> Generator::create(const Job& job) {
  SC_RETURN_IF_ERROR(validate_job(job));
  auto s = std::make_unique<GeneratorState>();
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
  if (job.model.tied_embeddings) s->layout.enable_embedding_groups();
  s->layout.enable_combined("dp+cp");
  s->groups = s->layout.all_groups();
  // Gradients are summed over the data-parallel ranks, with context
  // parallelism over dp x cp (Megatron's data-parallel-with-cp group).
  const std::string grad_axis = p.dp > 1 && p.cp > 1 ? "dp+cp" : p.cp > 1 ? "cp" : "dp";

  for (int64_t stage = 0; stage < p.pp; ++stage) {
    BuildOptions bo;
    bo.has_tp = p.tp > 1;
    bo.has_dp = p.dp > 1;
    bo.has_cp = p.cp > 1;
    bo.cp_ring = bo.has_cp && p.cp_algorithm == "ring";
    bo.sequence_parallel = p.sequence_parallel && bo.has_tp;
    bo.dtype = t.dtype;
    bo.num_virtual = p.pp * p.virtual_stages;
    bo.chunks = stage_chunks(job.model.num_layers, p.pp, p.virtual_stages, p.pipeline_layout, stage);
    Graph g = build_transformer_forward(job.model, bo);
    AutodiffOptions ao;
    ao.grad_dtype = t.grad_reduce_dtype;
    ao.recompute = t.recompute == Recompute::kFull        ? RecomputeMode::kFull
                   : t.recompute == Recompute::kSelective ? RecomputeMode::kSelective
                                                          : RecomputeMode::kNone;
    append_backward_and_optimizer(g, ao);
    PropagationOptions po;
    po.sequence_parallel = bo.sequence_parallel;
    if (bo.has_dp) po.axes_outer_first.push_back("dp");
    if (bo.has_cp) po.axes_outer_first.push_back("cp");
    if (bo.has_tp) po.axes_outer_first.push_back("tp");
    propagate_shardings(g, po);
    SC_RETURN_IF_ERROR(bucket_dp_gradients(g, s->bind, t.dp_bucket_mb * 1024.0 * 1024.0, grad_axis));
    if (bo.has_dp || bo.has_cp) apply_zero(g, static_cast<int>(p.zero), grad_axis);
    insert_weight_syncs(g);

    LowerOptions lo;
    lo.micro_batches = t.num_micro_batches(p);
    lo.pp = p.pp;
    lo.virtual_stages = p.virtual_stages;
    lo.stage = stage;
    lo.schedule = t.schedule;
    lo.compute_dtype = t.dtype;
    lo.optimizer_bytes_per_param = t.optimizer_bytes_per_param;
    SC_ASSIGN_OR_RETURN(RoleProgram prog, lower_program(g, s->bind, job.hardware, lo));
    s->stages.push_back({std::move(g), std::move(prog)});
  }
  s->config_hash = fnv1a_hex(job_to_canonical_json(job));
  SC_ASSIGN_OR_RETURN(s->summary, build_summary(*s));
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
                       "\n# one micro-batch: forward, backward, then the optimizer phase; shapes are per rank";
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
  j["message"] = e.message;
  j["path"] = e.path;
  return j.dump();
}

}  // namespace sc
