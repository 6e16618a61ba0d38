#include "api/api.h"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "api/state.h"
#include "emit/chakra_writer.h"
#include "graph/autodiff.h"
#include "model/transformer.h"
#include "parallel/buckets.h"
#include "parallel/propagate.h"

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

  BuildOptions bo;
  bo.has_tp = p.tp > 1;
  bo.has_dp = p.dp > 1;
  bo.dtype = t.dtype;
  s->graph = build_transformer_forward(job.model, bo);
  AutodiffOptions ao;
  ao.grad_dtype = t.grad_reduce_dtype;
  append_backward_and_optimizer(s->graph, ao);
  PropagationOptions po;
  po.sequence_parallel = p.sequence_parallel && bo.has_tp;
  if (bo.has_dp) po.axes_outer_first.push_back("dp");
  if (bo.has_tp) po.axes_outer_first.push_back("tp");
  propagate_shardings(s->graph, po);

  s->bind = model_bindings(job.model, t.micro_batch_size, t.seq_len);
  s->bind["tp"] = p.tp;
  s->bind["dp"] = p.dp;
  SC_RETURN_IF_ERROR(bucket_dp_gradients(s->graph, s->bind, t.dp_bucket_mb * 1024.0 * 1024.0));

  // Megatron-LM's order, innermost first: tp, then dp.
  s->layout = RankLayout({{"tp", p.tp}, {"dp", p.dp}});
  s->groups = s->layout.all_groups();

  LowerOptions lo;
  lo.micro_batches = t.num_micro_batches(p);
  lo.compute_dtype = t.dtype;
  lo.optimizer_bytes_per_param = t.optimizer_bytes_per_param;
  SC_ASSIGN_OR_RETURN(s->program, lower_program(s->graph, s->bind, job.hardware, lo));
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
                       " sequence_parallel=" + (j.parallel.sequence_parallel ? "on" : "off") +
                       "\n# one micro-batch: forward, backward, then the optimizer phase; shapes are per rank";
  return graph_to_text(state_->graph, header);
}

Result<RankTrace> Generator::rank_trace(int64_t rank) const {
  if (rank < 0 || rank >= world_size())
    return make_error(ErrorCode::kInvalidArgument,
                      "rank " + std::to_string(rank) + " is outside 0.." + std::to_string(world_size() - 1), "rank");
  return instantiate_rank(state_->program, state_->layout, rank);
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
