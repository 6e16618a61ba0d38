// The façade's door to inference jobs: the serving layer (serve/serving.h)
// builds, times and plans the iterations with this layer's simulator as its
// backend; here they become Generators with their summaries.
#include "api/serving.h"

#include <memory>
#include <utility>

#include <nlohmann/json.hpp>

#include "api/budget.h"
#include "api/simulate.h"
#include "api/state.h"

namespace sc {
namespace {

using json = nlohmann::json;

ServeBackend backend() {
  ServeBackend b;
  b.step_seconds = [](const BuiltJob& s) -> Result<double> {
    SC_ASSIGN_OR_RETURN(SimulateReport r, simulate_built(s, {}));
    return r.step_seconds;
  };
  b.max_engine_bytes = engine_budget().max_engine_bytes;
  return b;
}

std::unique_ptr<GeneratorState> to_state(std::unique_ptr<BuiltJob> built) {
  auto s = std::make_unique<GeneratorState>();
  static_cast<BuiltJob&>(*s) = std::move(*built);
  return s;
}

// summary.json of one kind: the training keys that still mean something.
Result<json> kind_summary(const GeneratorState& s) {
  SC_ASSIGN_OR_RETURN(std::string text, build_summary(s));
  json j = json::parse(text, nullptr, false);
  j.erase("time");
  j.erase("pipeline");
  j.erase("micro_batches_per_iteration");
  j.erase("estimate");  // training jobs only (docs/summary.md)
  for (json& st : j["stages"]) {
    json& m = st["memory_bytes"];
    const int64_t w = m["weights"].get<int64_t>();
    m["gradients"] = 0;
    m["optimizer"] = 0;
    m["peak"] = w + m["activations_peak"].get<int64_t>();
    m["peak_live"] = w + m["activations_live_peak"].get<int64_t>();
  }
  return j;
}

// The whole inference job of a Generator, or an error naming `op`.
Result<const Job*> serving_job_of(const Generator& g, const char* op) {
  const GeneratorState& s = GeneratorAccess::state(g);
  if (!s.serving_job)
    return make_error(ErrorCode::kInvalidArgument,
                      std::string(op) + " needs an inference job (\"mode\": \"inference\")", "mode");
  return s.serving_job.get();
}

}  // namespace

Result<Generator> create_serving_generator(const Job& job) {
  SC_ASSIGN_OR_RETURN(serve::ServingBuild built, serve::build_serving(job, backend()));
  const std::string hash = config_hash_hex(job_to_canonical_json(job));
  std::vector<std::pair<std::string, std::unique_ptr<GeneratorState>>> kinds;
  kinds.emplace_back("prefill", to_state(std::move(built.prefill)));
  if (built.mixed) kinds.emplace_back("mixed", to_state(std::move(built.mixed)));
  std::unique_ptr<GeneratorState> decode = to_state(std::move(built.decode));
  decode->serving_job = std::make_shared<Job>(job);  // only the decode Generator answers phase() and the sweep
  decode->config_hash = hash;
  SC_ASSIGN_OR_RETURN(json top, kind_summary(*decode));
  // The job as submitted (both pools of a disaggregated job), not the
  // decode pool's job the decode iteration was built from.
  top["job"] = json::parse(job_to_canonical_json(job), nullptr, false);
  top["inference"] = std::move(built.inference);
  decode->summary = top.dump(2) + "\n";
  for (auto& [name, st] : kinds) {
    st->config_hash = hash;
    SC_ASSIGN_OR_RETURN(json js, kind_summary(*st));
    js["inference_iteration"] = name;
    st->summary = js.dump(2) + "\n";
    decode->phases.emplace_back(name, GeneratorAccess::make(std::move(st)));
  }
  return GeneratorAccess::make(std::move(decode));
}

const Generator* Generator::phase(const std::string& name) const {
  if (!state_->serving_job) return nullptr;
  if (name == "decode") return this;
  for (const auto& [n, g] : state_->phases)
    if (n == name) return &g;
  return nullptr;
}

std::vector<std::string> Generator::phase_names() const {
  if (!state_->serving_job) return {};
  std::vector<std::string> out{"prefill", "decode"};
  for (const auto& [n, g] : state_->phases)
    if (n != "prefill") out.push_back(n);
  return out;
}

Result<std::vector<ServingPoint>> serving_sweep(const Generator& g, const std::vector<int64_t>& concurrency) {
  SC_ASSIGN_OR_RETURN(const Job* job, serving_job_of(g, "serving_sweep"));
  return serve::serving_sweep(*job, backend(), concurrency);
}

Status serving_capacity_searchable(const Job& job) { return serve::capacity_searchable(job); }

Result<serve::CapacitySearch> serving_capacity_prepare(const Generator& g, int64_t requests) {
  SC_ASSIGN_OR_RETURN(const Job* job, serving_job_of(g, "serving_capacity"));
  return serve::prepare_capacity(*job, backend(), requests);
}

Result<CapacityResult> serving_capacity(const serve::CapacitySearch& search, double slo_ttft, double slo_tpot) {
  return serve::serving_capacity(search, backend(), slo_ttft, slo_tpot);
}

Result<CapacityResult> serving_capacity(const Generator& g, double slo_ttft, double slo_tpot, int64_t requests) {
  SC_ASSIGN_OR_RETURN(const Job* job, serving_job_of(g, "serving_capacity"));
  return serve::serving_capacity(*job, backend(), slo_ttft, slo_tpot, requests);
}

Result<KvTransfer> kv_transfer_traces(const Generator& g) {
  const GeneratorState& s = GeneratorAccess::state(g);
  const Generator* pg = g.phase("prefill");
  if (!s.serving_job || !s.serving_job->serving.disaggregated || pg == nullptr)
    return make_error(ErrorCode::kInvalidArgument,
                      "a KV transfer exists only between disaggregated pools (serving.disaggregated)",
                      "serving.disaggregated");
  return serve::kv_transfer_traces(*s.serving_job, GeneratorAccess::state(*pg).layout, s.layout, g.metadata());
}

}  // namespace sc
