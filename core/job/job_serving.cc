// Inference jobs: "mode": "inference" and the "serving" section (parsing,
// validation, canonical form). docs/inference.md, "Job".
#include <algorithm>
#include <cmath>
#include <numeric>
#include <tuple>

#include "job/job_internal.h"

namespace sc {
namespace job_internal {
namespace {

using jsonf::Json;
using std::to_string;

Status training_only(const std::string& path, const std::string& what) {
  return make_error(ErrorCode::kInvalidArgument,
                    what + " is a training setting; an inference job (\"mode\": \"inference\") does not take it",
                    path);
}

// `weights`: the 4-bit weight formats too (docs/inference.md, "4-bit weights").
Result<DType> serving_dtype(const Json& v, const std::string& path, bool weights = false) {
  SC_ASSIGN_OR_RETURN(std::string s, jsonf::get_string(v, path));
  if (s == "bf16") return DType::kBF16;
  if (s == "fp8") return DType::kFP8;
  if (weights) {
    if (s == "int4") return DType::kInt4;
    if (s == "nvfp4") return DType::kNVFP4;
    if (s == "mxfp4") return DType::kMXFP4;
  }
  return make_error(ErrorCode::kInvalidArgument,
                    "unknown dtype \"" + jsonf::clip(s) + "\" (known: bf16, fp8" +
                        (weights ? ", int4, nvfp4, mxfp4" : "") + ")",
                    path);
}

Status parse_pool(const Json& v, const std::string& path, const ParallelConfig& base, PoolLayout* out) {
  SC_RETURN_IF_ERROR(jsonf::expect_object(v, path));
  SC_RETURN_IF_ERROR(jsonf::check_keys(v, {"tp", "pp", "dp", "ep", "expert_tp", "replicas"}, path));
  *out = PoolLayout{base.tp, base.pp, base.dp, base.ep, base.expert_tp, 1};
  const std::pair<const char*, int64_t*> fields[] = {{"tp", &out->tp}, {"pp", &out->pp}, {"dp", &out->dp},
                                                     {"ep", &out->ep}, {"expert_tp", &out->expert_tp},
                                                     {"replicas", &out->replicas}};
  for (const auto& [key, dst] : fields)
    if (const Json* x = jsonf::find(v, key)) {
      SC_ASSIGN_OR_RETURN(*dst, jsonf::get_int(*x, path + "." + key, 1, limits::kMaxDegree));
    }
  return ok_status();
}

// A length: an int, or {"distribution": "fixed"|"uniform"|"normal", ...}.
Status parse_length(const Json& v, const std::string& path, LengthDist* out) {
  if (v.is_number_integer()) {
    SC_ASSIGN_OR_RETURN(int64_t n, jsonf::get_int(v, path, 1, limits::kMaxSeqLen));
    *out = {LengthDist::Kind::kFixed, static_cast<double>(n), 0};
    return ok_status();
  }
  if (!v.is_object())
    return make_error(ErrorCode::kInvalidArgument,
                      "must be a token count or {\"distribution\": \"fixed\" | \"uniform\" | \"normal\", ...} (got " +
                          std::string(jsonf::type_name(v)) + ")",
                      path);
  const Json* d = jsonf::find(v, "distribution");
  if (!d) return make_error(ErrorCode::kInvalidArgument, "missing (fixed, uniform or normal)", path + ".distribution");
  SC_ASSIGN_OR_RETURN(std::string kind, jsonf::get_string(*d, path + ".distribution"));
  auto num = [&](const char* key, double lo, bool lo_incl) -> Result<double> {
    const Json* x = jsonf::find(v, key);
    if (!x)
      return make_error(ErrorCode::kInvalidArgument, "a " + kind + " distribution needs " + key, path + "." + key);
    return jsonf::get_number_in(*x, path + "." + key, lo, static_cast<double>(limits::kMaxSeqLen), lo_incl);
  };
  if (kind == "fixed") {
    SC_RETURN_IF_ERROR(jsonf::check_keys(v, {"distribution", "value"}, path));
    SC_ASSIGN_OR_RETURN(double x, num("value", 1, true));
    *out = {LengthDist::Kind::kFixed, std::floor(x), 0};
  } else if (kind == "uniform") {
    SC_RETURN_IF_ERROR(jsonf::check_keys(v, {"distribution", "min", "max"}, path));
    SC_ASSIGN_OR_RETURN(double lo, num("min", 1, true));
    SC_ASSIGN_OR_RETURN(double hi, num("max", 1, true));
    if (hi < lo)
      return make_error(ErrorCode::kInvalidArgument,
                        "max (" + to_string(static_cast<int64_t>(hi)) + ") is below min (" +
                            to_string(static_cast<int64_t>(lo)) + ")",
                        path + ".max");
    *out = {LengthDist::Kind::kUniform, std::floor(lo), std::floor(hi)};
  } else if (kind == "normal") {
    SC_RETURN_IF_ERROR(jsonf::check_keys(v, {"distribution", "mean", "std"}, path));
    SC_ASSIGN_OR_RETURN(double mean, num("mean", 1, true));
    SC_ASSIGN_OR_RETURN(double sd, num("std", 0, true));
    *out = {LengthDist::Kind::kNormal, mean, sd};
  } else {
    return make_error(ErrorCode::kInvalidArgument,
                      "unknown distribution \"" + jsonf::clip(kind) + "\" (known: fixed, uniform, normal)",
                      path + ".distribution");
  }
  return ok_status();
}

Status parse_workload(const Json& v, WorkloadConfig* w) {
  const std::string path = "serving.workload";
  SC_RETURN_IF_ERROR(jsonf::expect_object(v, path));
  SC_RETURN_IF_ERROR(jsonf::check_keys(
      v, {"arrival", "rate", "duration_seconds", "requests", "seed", "prompt_tokens", "output_tokens", "trace",
          "prefix_cache_hit_rate"},
      path));
  w->present = true;
  std::string arrival = "poisson";
  if (const Json* x = jsonf::find(v, "arrival")) {
    SC_ASSIGN_OR_RETURN(arrival, jsonf::get_string(*x, path + ".arrival"));
  }
  using A = WorkloadConfig::Arrival;
  if (arrival == "poisson") w->arrival = A::kPoisson;
  else if (arrival == "fixed") w->arrival = A::kFixed;
  else if (arrival == "burst") w->arrival = A::kBurst;
  else if (arrival == "trace") w->arrival = A::kTrace;
  else
    return make_error(ErrorCode::kInvalidArgument,
                      "unknown arrival \"" + jsonf::clip(arrival) + "\" (known: poisson, fixed, burst, trace)",
                      path + ".arrival");
  if (const Json* x = jsonf::find(v, "rate")) {
    // A sanity bound, at least one request in 1,000 s: at 1e-15 the
    // arrivals (~1e15 s) left a double no digits for millisecond
    // latencies. (The capacity search probes lower rates itself.)
    SC_ASSIGN_OR_RETURN(w->rate, jsonf::get_number_in(*x, path + ".rate", 1e-3, 1e6));
  }
  if (const Json* x = jsonf::find(v, "duration_seconds")) {
    SC_ASSIGN_OR_RETURN(w->duration_seconds,
                        jsonf::get_number_in(*x, path + ".duration_seconds", 0, 1e7, /*lo_inclusive=*/false));
  }
  if (const Json* x = jsonf::find(v, "requests")) {
    SC_ASSIGN_OR_RETURN(w->requests, jsonf::get_int(*x, path + ".requests", 1, kMaxWorkloadRequests));
  }
  if (const Json* x = jsonf::find(v, "prefix_cache_hit_rate")) {
    SC_ASSIGN_OR_RETURN(w->prefix_cache_hit_rate, jsonf::get_number_in(*x, path + ".prefix_cache_hit_rate", 0, 1));
    if (w->prefix_cache_hit_rate >= 1)
      return make_error(ErrorCode::kInvalidArgument,
                        "must be below 1 (at least the prompt's last token is computed)",
                        path + ".prefix_cache_hit_rate");
  }
  if (const Json* x = jsonf::find(v, "seed")) {
    SC_ASSIGN_OR_RETURN(int64_t seed, jsonf::get_int(*x, path + ".seed", 0, (int64_t{1} << 53)));
    w->seed = static_cast<uint64_t>(seed);
  }
  for (const auto& [key, dst] : {std::pair<const char*, LengthDist*>{"prompt_tokens", &w->prompt},
                                 std::pair<const char*, LengthDist*>{"output_tokens", &w->output}})
    if (const Json* x = jsonf::find(v, key)) {
      if (w->arrival == A::kTrace)
        return make_error(ErrorCode::kInvalidArgument,
                          std::string("a trace gives each request's lengths; ") + key + " is not taken with it",
                          path + "." + key);
      SC_RETURN_IF_ERROR(parse_length(*x, path + "." + key, dst));
    }
  if (w->arrival == A::kTrace) {
    const Json* t = jsonf::find(v, "trace");
    if (!t || !t->is_array() || t->empty() || static_cast<int64_t>(t->size()) > kMaxWorkloadRequests)
      return make_error(ErrorCode::kInvalidArgument,
                        "arrival \"trace\" needs a list of 1 to " + to_string(kMaxWorkloadRequests) +
                            " requests {\"arrival_seconds\", \"prompt_tokens\", \"output_tokens\"}",
                        path + ".trace");
    for (const char* key : {"rate", "duration_seconds", "requests"})
      if (jsonf::find(v, key))
        return make_error(ErrorCode::kInvalidArgument, "a trace gives its own arrivals; not taken with it",
                          path + "." + key);
    double last = 0;
    for (size_t i = 0; i < t->size(); ++i) {
      const Json& r = (*t)[i];
      const std::string rp = path + ".trace[" + to_string(i) + "]";
      SC_RETURN_IF_ERROR(jsonf::expect_object(r, rp));
      SC_RETURN_IF_ERROR(jsonf::check_keys(r, {"arrival_seconds", "prompt_tokens", "output_tokens"}, rp));
      TraceRequest q;
      for (const char* key : {"arrival_seconds", "prompt_tokens", "output_tokens"})
        if (!jsonf::find(r, key))
          return make_error(ErrorCode::kInvalidArgument, "each trace request needs arrival_seconds, prompt_tokens "
                            "and output_tokens", rp + "." + key);
      SC_ASSIGN_OR_RETURN(q.arrival_seconds,
                          jsonf::get_number_in(*jsonf::find(r, "arrival_seconds"), rp + ".arrival_seconds", 0, 1e7));
      SC_ASSIGN_OR_RETURN(q.prompt_tokens,
                          jsonf::get_int(*jsonf::find(r, "prompt_tokens"), rp + ".prompt_tokens", 1, limits::kMaxSeqLen));
      SC_ASSIGN_OR_RETURN(q.output_tokens,
                          jsonf::get_int(*jsonf::find(r, "output_tokens"), rp + ".output_tokens", 1, limits::kMaxSeqLen));
      if (q.arrival_seconds < last)
        return make_error(ErrorCode::kInvalidArgument, "arrivals must not decrease (previous " +
                          jsonf::clip(std::to_string(last)) + " s)", rp + ".arrival_seconds");
      last = q.arrival_seconds;
      w->trace.push_back(q);
    }
    return ok_status();
  }
  if (jsonf::find(v, "trace"))
    return make_error(ErrorCode::kInvalidArgument, "a trace is taken only with \"arrival\": \"trace\"",
                      path + ".trace");
  if (w->arrival == A::kBurst) {
    if (w->requests == 0)
      return make_error(ErrorCode::kInvalidArgument, "a burst needs the number of requests arriving at once",
                        path + ".requests");
    return ok_status();
  }
  if (w->rate <= 0)
    return make_error(ErrorCode::kInvalidArgument,
                      "arrival \"" + arrival + "\" needs a rate (requests per second)", path + ".rate");
  if (w->duration_seconds <= 0 && w->requests == 0)
    return make_error(ErrorCode::kInvalidArgument, "give duration_seconds or requests (how long the load lasts)",
                      path + ".duration_seconds");
  if (w->duration_seconds > 0 && w->rate * w->duration_seconds > static_cast<double>(kMaxWorkloadRequests) * 1.1 &&
      w->requests == 0) {
    char b[128];
    std::snprintf(b, sizeof b, "rate (%g) x duration_seconds (%g) = %.0f requests", w->rate, w->duration_seconds,
                  w->rate * w->duration_seconds);
    return make_error(ErrorCode::kInvalidArgument,
                      std::string(b) + " is above the " + to_string(kMaxWorkloadRequests) +
                          " a workload may hold; shorten it or cap it with requests",
                      path + ".duration_seconds");
  }
  return ok_status();
}

Status parse_scheduler(const Json& v, SchedulerConfig* c) {
  const std::string path = "serving.scheduler";
  SC_RETURN_IF_ERROR(jsonf::expect_object(v, path));
  SC_RETURN_IF_ERROR(jsonf::check_keys(v,
                                       {"policy", "max_num_batched_tokens", "max_num_seqs", "chunk_tokens",
                                        "step_overhead_seconds", "token_overhead_seconds",
                                        "request_overhead_seconds", "speculative_tokens",
                                        "acceptance_rate", "scheduler_steps", "chunked_prefill", "admission"},
                                       path));
  c->present = true;
  if (const Json* x = jsonf::find(v, "policy")) {
    SC_ASSIGN_OR_RETURN(std::string p, jsonf::get_string(*x, path + ".policy"));
    if (p == "vllm") c->policy = SchedulerConfig::Policy::kVllm;
    else if (p == "sarathi") c->policy = SchedulerConfig::Policy::kSarathi;
    else if (p == "prefill_first") c->policy = SchedulerConfig::Policy::kPrefillFirst;
    else
      return make_error(ErrorCode::kInvalidArgument,
                        "unknown policy \"" + jsonf::clip(p) + "\" (known: vllm, sarathi, prefill_first)",
                        path + ".policy");
  }
  for (const auto& [key, dst, hi] : {std::tuple<const char*, double*, double>{"step_overhead_seconds",
                                                                              &c->step_overhead_seconds, 10.0},
                                     std::tuple<const char*, double*, double>{"token_overhead_seconds",
                                                                              &c->token_overhead_seconds, 10.0},
                                     std::tuple<const char*, double*, double>{"request_overhead_seconds",
                                                                              &c->request_overhead_seconds, 10.0},
                                     std::tuple<const char*, double*, double>{"acceptance_rate", &c->acceptance_rate,
                                                                              1.0}})
    if (const Json* x = jsonf::find(v, key)) {
      SC_ASSIGN_OR_RETURN(*dst, jsonf::get_number_in(*x, path + "." + key, 0, hi));
    }
  if (const Json* x = jsonf::find(v, "speculative_tokens")) {
    SC_ASSIGN_OR_RETURN(c->speculative_tokens, jsonf::get_int(*x, path + ".speculative_tokens", 0, 16));
  }
  if (const Json* x = jsonf::find(v, "scheduler_steps")) {
    SC_ASSIGN_OR_RETURN(c->scheduler_steps, jsonf::get_int(*x, path + ".scheduler_steps", 1, 64));
  }
  if (const Json* x = jsonf::find(v, "chunked_prefill")) {
    SC_ASSIGN_OR_RETURN(c->chunked_prefill, jsonf::get_bool(*x, path + ".chunked_prefill"));
    if (!c->chunked_prefill && c->policy != SchedulerConfig::Policy::kPrefillFirst)
      return make_error(ErrorCode::kInvalidArgument,
                        "chunked_prefill false needs policy prefill_first (the vllm and sarathi policies chunk "
                        "prompts by definition)",
                        path + ".chunked_prefill");
  }
  if (const Json* x = jsonf::find(v, "admission")) {
    SC_ASSIGN_OR_RETURN(std::string a, jsonf::get_string(*x, path + ".admission"));
    using A = SchedulerConfig::Admission;
    bool found = false;
    for (A k : {A::kGreedy, A::kReserve, A::kGuaranteed})
      if (a == admission_name(k)) { c->admission = k; found = true; }
    if (!found)
      return make_error(ErrorCode::kInvalidArgument,
                        "unknown admission \"" + jsonf::clip(a) + "\" (known: greedy, reserve, guaranteed)",
                        path + ".admission");
  }
  if (c->admission != SchedulerConfig::Admission::kGreedy && c->scheduler_steps > 1)
    return make_error(ErrorCode::kInvalidArgument,
                      std::string("admission ") +
                          (c->admission == SchedulerConfig::Admission::kReserve ? "reserve (SGLang's)"
                                                                               : "guaranteed (TensorRT-LLM's)") +
                          " with multi-step scheduling (" + to_string(c->scheduler_steps) +
                          " steps, vLLM's) is not modelled; set one of them",
                      path + ".admission");
  if (c->scheduler_steps > 1 && c->speculative_tokens > 0)
    return make_error(ErrorCode::kInvalidArgument,
                      "multi-step scheduling (" + to_string(c->scheduler_steps) +
                          " steps) and speculative decoding together are not modelled; set one of them",
                      path + ".scheduler_steps");
  if (c->speculative_tokens == 0 && jsonf::find(v, "acceptance_rate"))
    return make_error(ErrorCode::kInvalidArgument,
                      "is the chance a draft token is accepted: it needs speculative_tokens > 0 (got 0)",
                      path + ".acceptance_rate");
  if (c->speculative_tokens > 0 && !jsonf::find(v, "acceptance_rate"))
    return make_error(ErrorCode::kInvalidArgument, "speculative decoding needs the chance a draft token is accepted",
                      path + ".acceptance_rate");
  const std::pair<const char*, int64_t*> ints[] = {{"max_num_batched_tokens", &c->max_num_batched_tokens},
                                                   {"max_num_seqs", &c->max_num_seqs},
                                                   {"chunk_tokens", &c->chunk_tokens}};
  for (const auto& [key, dst] : ints)
    if (const Json* x = jsonf::find(v, key)) {
      SC_ASSIGN_OR_RETURN(*dst, jsonf::get_int(*x, path + "." + key, 1, std::string(key) == "max_num_seqs"
                                                                              ? int64_t{65536}
                                                                              : int64_t{1048576}));
    }
  return ok_status();
}

Status parse_slo(const Json& v, SloConfig* c) {
  const std::string path = "serving.slo";
  SC_RETURN_IF_ERROR(jsonf::expect_object(v, path));
  SC_RETURN_IF_ERROR(jsonf::check_keys(v, {"ttft_seconds_p99", "tpot_seconds_p99"}, path));
  c->present = true;
  for (const auto& [key, dst] : {std::pair<const char*, double*>{"ttft_seconds_p99", &c->ttft_seconds_p99},
                                 std::pair<const char*, double*>{"tpot_seconds_p99", &c->tpot_seconds_p99}})
    if (const Json* x = jsonf::find(v, key)) {
      SC_ASSIGN_OR_RETURN(*dst, jsonf::get_number_in(*x, path + "." + key, 0, 1e6, /*lo_inclusive=*/false));
    }
  if (c->ttft_seconds_p99 == 0 && c->tpot_seconds_p99 == 0)
    return make_error(ErrorCode::kInvalidArgument, "give ttft_seconds_p99, tpot_seconds_p99 or both", path);
  return ok_status();
}

}  // namespace

Status parse_serving(const Json& root, Job* job) {
  // Training-only settings are errors that name the field.
  if (const Json* t = jsonf::find(root, "training")) {
    if (t->is_object() && !t->empty())
      return training_only("training." + jsonf::clip(t->begin().key()), "training." + jsonf::clip(t->begin().key()));
    return training_only("training", "the training section");
  }
  if (const Json* p = jsonf::find(root, "parallel"); p && p->is_object())
    for (const char* key : {"cp", "cp_algorithm", "virtual_stages", "zero", "sequence_parallel", "shard_group"})
      if (jsonf::find(*p, key))
        return training_only(std::string("parallel.") + key, std::string("parallel.") + key);
  ServingConfig& s = job->serving;
  // vLLM V1's default on GPUs of 70 GB or more (docs/inference.md, "Workload").
  s.scheduler.max_num_seqs = 1024;
  const Json* v = jsonf::find(root, "serving");
  if (!v) return ok_status();  // every field has a default
  const std::string path = "serving";
  SC_RETURN_IF_ERROR(jsonf::expect_object(*v, path));
  SC_RETURN_IF_ERROR(jsonf::check_keys(*v,
                                       {"prompt_tokens", "output_tokens", "requests", "concurrency", "chunk_tokens",
                                        "kv_dtype", "weights_dtype", "page_tokens", "replicas", "disaggregated",
                                        "gpu_memory_utilization", "two_batch_overlap", "workload", "scheduler", "slo"},
                                       path));
  const struct {
    const char* key;
    int64_t* dst;
    int64_t lo;
  } ints[] = {{"prompt_tokens", &s.prompt_tokens, 1}, {"output_tokens", &s.output_tokens, 1},
              {"concurrency", &s.concurrency, 0},     {"chunk_tokens", &s.chunk_tokens, 0},
              {"page_tokens", &s.page_tokens, 1},     {"replicas", &s.replicas, 1}};
  for (const auto& f : ints)
    if (const Json* x = jsonf::find(*v, f.key)) {
      const int64_t hi = std::string(f.key) == "replicas" ? limits::kMaxDegree : limits::kMaxSeqLen;
      SC_ASSIGN_OR_RETURN(*f.dst, jsonf::get_int(*x, path + "." + f.key, f.lo, hi));
    }
  if (const Json* r = jsonf::find(*v, "requests")) {
    const std::string rp = "serving.requests";
    for (const char* key : {"prompt_tokens", "output_tokens"})
      if (jsonf::find(*v, key))
        return make_error(ErrorCode::kInvalidArgument,
                          std::string("give either the request mix (serving.requests) or fixed lengths (serving.") +
                              key + "), not both",
                          rp);
    if (!r->is_array() || r->empty() || r->size() > kMaxRequestClasses)
      return make_error(ErrorCode::kInvalidArgument,
                        "must be a list of 1 to " + to_string(kMaxRequestClasses) +
                            " request classes {\"prompt_tokens\", \"output_tokens\", \"weight\"} (got " +
                            (r->is_array() ? to_string(r->size()) + " entries" : std::string(jsonf::type_name(*r))) + ")",
                        rp);
    for (size_t i = 0; i < r->size(); ++i) {
      const Json& c = (*r)[i];
      const std::string cp = rp + "[" + to_string(i) + "]";
      SC_RETURN_IF_ERROR(jsonf::expect_object(c, cp));
      SC_RETURN_IF_ERROR(jsonf::check_keys(c, {"prompt_tokens", "output_tokens", "weight"}, cp));
      RequestClass rc;
      for (const auto& [key, dst] : {std::pair<const char*, int64_t*>{"prompt_tokens", &rc.prompt_tokens},
                                     std::pair<const char*, int64_t*>{"output_tokens", &rc.output_tokens}}) {
        const Json* x = jsonf::find(c, key);
        if (!x)
          return make_error(ErrorCode::kInvalidArgument, "a request class needs prompt_tokens and output_tokens",
                            cp + "." + key);
        SC_ASSIGN_OR_RETURN(*dst, jsonf::get_int(*x, cp + "." + key, 1, limits::kMaxSeqLen));
      }
      if (const Json* x = jsonf::find(c, "weight")) {
        SC_ASSIGN_OR_RETURN(rc.weight, jsonf::get_number_in(*x, cp + ".weight", 0, 1e9, /*lo_inclusive=*/false));
      }
      s.requests.push_back(rc);
    }
  }
  if (const Json* x = jsonf::find(*v, "kv_dtype")) {
    SC_ASSIGN_OR_RETURN(s.kv_dtype, serving_dtype(*x, "serving.kv_dtype"));
  }
  if (const Json* x = jsonf::find(*v, "weights_dtype")) {
    SC_ASSIGN_OR_RETURN(s.weights_dtype, serving_dtype(*x, "serving.weights_dtype", /*weights=*/true));
  }
  if (const Json* x = jsonf::find(*v, "gpu_memory_utilization")) {
    SC_ASSIGN_OR_RETURN(s.gpu_memory_utilization,
                        jsonf::get_number_in(*x, "serving.gpu_memory_utilization", 0, 1, /*lo_inclusive=*/false));
  }
  if (const Json* x = jsonf::find(*v, "two_batch_overlap")) {
    SC_ASSIGN_OR_RETURN(s.two_batch_overlap, jsonf::get_bool(*x, "serving.two_batch_overlap"));
  }
  if (const Json* x = jsonf::find(*v, "workload")) SC_RETURN_IF_ERROR(parse_workload(*x, &s.workload));
  if (const Json* x = jsonf::find(*v, "scheduler")) SC_RETURN_IF_ERROR(parse_scheduler(*x, &s.scheduler));
  if (const Json* x = jsonf::find(*v, "slo")) SC_RETURN_IF_ERROR(parse_slo(*x, &s.slo));
  if (const Json* d = jsonf::find(*v, "disaggregated")) {
    const std::string dp = "serving.disaggregated";
    SC_RETURN_IF_ERROR(jsonf::expect_object(*d, dp));
    SC_RETURN_IF_ERROR(jsonf::check_keys(*d, {"prefill", "decode"}, dp));
    for (const char* pool : {"prefill", "decode"})
      if (!jsonf::find(*d, pool))
        return make_error(ErrorCode::kInvalidArgument,
                          "required pool is missing (both prefill and decode pools need a layout, e.g. {\"tp\": 8})",
                          dp + "." + pool);
    s.disaggregated = true;
    SC_RETURN_IF_ERROR(parse_pool(*jsonf::find(*d, "prefill"), dp + ".prefill", job->parallel, &s.prefill));
    SC_RETURN_IF_ERROR(parse_pool(*jsonf::find(*d, "decode"), dp + ".decode", job->parallel, &s.decode));
  }
  return ok_status();
}

// What the rest of the core reads for an inference job: the context as the
// sequence (position checks), one sequence per attention-dp rank, the
// weights' dtype as the compute dtype, no optimizer state.
void resolve_serving(Job* job) {
  TrainingConfig& t = job->training;
  ServingConfig& sv = job->serving;
  if (!sv.requests.empty()) {  // the traced prefill is the longest prompt's (the first of equals)
    const RequestClass* longest = &sv.requests[0];
    for (const RequestClass& c : sv.requests)
      if (c.prompt_tokens > longest->prompt_tokens) longest = &c;
    sv.prompt_tokens = longest->prompt_tokens;
    sv.output_tokens = longest->output_tokens;
  }
  t.seq_len = 0;  // the longest context, for the position checks
  for (const RequestClass& c : serving_requests(sv)) t.seq_len = std::max(t.seq_len, c.prompt_tokens + c.output_tokens);
  t.micro_batch_size = 1;
  t.global_batch_size = job->parallel.dp;
  t.dtype = job->serving.weights_dtype;
  t.optimizer_bytes_per_param = 0;
  t.recompute = Recompute::kNone;
  job->model.dropout = false;  // inference: dropout is off
  // expert_tp left out: what ep leaves of tp (tp 8, ep 8: 1; ep 1: tp;
  // tp 1: 1), so that the experts fill the tp ranks (validate_serving).
  if (job->parallel.expert_tp == 0) job->parallel.expert_tp = job->parallel.tp / std::gcd(job->parallel.tp, job->parallel.ep);
  for (PoolLayout* p : {&job->serving.prefill, &job->serving.decode})
    if (p->expert_tp == 0) p->expert_tp = p->tp / std::gcd(p->tp, p->ep);
}

Json length_json(const LengthDist& d) {
  switch (d.kind) {
    case LengthDist::Kind::kFixed: return static_cast<int64_t>(d.a);
    case LengthDist::Kind::kUniform:
      return {{"distribution", "uniform"}, {"min", static_cast<int64_t>(d.a)}, {"max", static_cast<int64_t>(d.b)}};
    case LengthDist::Kind::kNormal: return {{"distribution", "normal"}, {"mean", d.a}, {"std", d.b}};
    case LengthDist::Kind::kDefault: break;
  }
  return nullptr;
}

Json workload_json(const WorkloadConfig& w) {
  using A = WorkloadConfig::Arrival;
  const char* names[] = {"poisson", "fixed", "burst", "trace"};
  Json j = {{"arrival", names[static_cast<int>(w.arrival)]}};
  if (w.arrival == A::kTrace) {
    Json t = Json::array();
    for (const TraceRequest& r : w.trace)
      t.push_back({{"arrival_seconds", r.arrival_seconds}, {"prompt_tokens", r.prompt_tokens},
                   {"output_tokens", r.output_tokens}});
    j["trace"] = t;
    // The seed draws speculative decoding's acceptances: part of the job
    // (and its hash) when given; 0, the default, keeps older traces' text.
    if (w.seed != 0) j["seed"] = w.seed;
    if (w.prefix_cache_hit_rate > 0) j["prefix_cache_hit_rate"] = w.prefix_cache_hit_rate;
    return j;
  }
  if (w.rate > 0) j["rate"] = w.rate;
  if (w.duration_seconds > 0) j["duration_seconds"] = w.duration_seconds;
  if (w.requests > 0) j["requests"] = w.requests;
  j["seed"] = w.seed;
  if (w.prefix_cache_hit_rate > 0) j["prefix_cache_hit_rate"] = w.prefix_cache_hit_rate;
  if (w.prompt.kind != LengthDist::Kind::kDefault) j["prompt_tokens"] = length_json(w.prompt);
  if (w.output.kind != LengthDist::Kind::kDefault) j["output_tokens"] = length_json(w.output);
  return j;
}

void serving_canonical(const Job& job, Json* root) {
  const ServingConfig& s = job.serving;
  (*root).erase("training");
  Json& p = (*root)["parallel"];
  for (const char* key : {"cp", "cp_algorithm", "virtual_stages", "zero", "sequence_parallel", "shard_group"})
    p.erase(key);
  Json serving = {{"prompt_tokens", s.prompt_tokens}, {"output_tokens", s.output_tokens},
                  {"concurrency", s.concurrency},     {"chunk_tokens", s.chunk_tokens},
                  {"kv_dtype", dtype_name(s.kv_dtype)}, {"weights_dtype", dtype_name(s.weights_dtype)},
                  {"page_tokens", s.page_tokens},     {"replicas", s.replicas}};
  if (!s.requests.empty()) {  // the mix as given, instead of the fixed lengths
    serving.erase("prompt_tokens");
    serving.erase("output_tokens");
    Json mix = Json::array();
    for (const RequestClass& c : s.requests)
      mix.push_back({{"prompt_tokens", c.prompt_tokens}, {"output_tokens", c.output_tokens}, {"weight", c.weight}});
    serving["requests"] = mix;
  }
  if (s.disaggregated) {
    auto pool = [](const PoolLayout& l) {
      return Json{{"tp", l.tp}, {"pp", l.pp}, {"dp", l.dp}, {"ep", l.ep}, {"expert_tp", l.expert_tp},
                  {"replicas", l.replicas}};
    };
    serving["disaggregated"] = {{"prefill", pool(s.prefill)}, {"decode", pool(s.decode)}};
  }
  // The keys below are written only when given: jobs without them keep
  // their canonical form (and config hash).
  if (s.gpu_memory_utilization > 0) serving["gpu_memory_utilization"] = s.gpu_memory_utilization;
  if (s.two_batch_overlap) serving["two_batch_overlap"] = true;
  if (s.workload.present) serving["workload"] = workload_json(s.workload);
  if (s.scheduler.present) {
    const SchedulerConfig& c = s.scheduler;
    serving["scheduler"] = {{"policy", c.policy == SchedulerConfig::Policy::kSarathi        ? "sarathi"
                                       : c.policy == SchedulerConfig::Policy::kPrefillFirst ? "prefill_first"
                                                                                            : "vllm"},
                            {"max_num_batched_tokens", c.max_num_batched_tokens},
                            {"max_num_seqs", c.max_num_seqs},
                            {"chunk_tokens", c.chunk_tokens}};
    if (c.step_overhead_seconds > 0) serving["scheduler"]["step_overhead_seconds"] = c.step_overhead_seconds;
    if (c.token_overhead_seconds > 0) serving["scheduler"]["token_overhead_seconds"] = c.token_overhead_seconds;
    if (c.request_overhead_seconds > 0)
      serving["scheduler"]["request_overhead_seconds"] = c.request_overhead_seconds;
    if (c.scheduler_steps > 1) serving["scheduler"]["scheduler_steps"] = c.scheduler_steps;
    if (!c.chunked_prefill) serving["scheduler"]["chunked_prefill"] = false;
    if (c.admission != SchedulerConfig::Admission::kGreedy)
      serving["scheduler"]["admission"] = admission_name(c.admission);
    if (c.speculative_tokens > 0) {
      serving["scheduler"]["speculative_tokens"] = c.speculative_tokens;
      serving["scheduler"]["acceptance_rate"] = c.acceptance_rate;
    }
  }
  if (s.slo.present) {
    Json slo = Json::object();
    if (s.slo.ttft_seconds_p99 > 0) slo["ttft_seconds_p99"] = s.slo.ttft_seconds_p99;
    if (s.slo.tpot_seconds_p99 > 0) slo["tpot_seconds_p99"] = s.slo.tpot_seconds_p99;
    serving["slo"] = slo;
  }
  (*root)["mode"] = "inference";
  (*root)["serving"] = serving;
}

}  // namespace job_internal

std::vector<RequestClass> serving_requests(const ServingConfig& s) {
  if (!s.requests.empty()) return s.requests;
  return {RequestClass{s.prompt_tokens, s.output_tokens, 1}};
}

Job serving_pool_job(const Job& job, bool prefill) {
  Job out = job;
  if (!job.serving.disaggregated) return out;
  const PoolLayout& l = prefill ? job.serving.prefill : job.serving.decode;
  out.parallel.tp = l.tp;
  out.parallel.pp = l.pp;
  out.parallel.dp = l.dp;
  out.parallel.ep = l.ep;
  out.parallel.expert_tp = l.expert_tp;
  out.parallel.pipeline_layout.clear();
  out.parallel.shard_group = 0;  // all of the pool's dp (no ZeRO in inference)
  out.training.global_batch_size = l.dp;
  out.serving.disaggregated = false;
  out.serving.replicas = l.replicas;
  return out;
}

namespace {

using std::to_string;

// A pool's error names the pool's field: parallel.tp -> serving.disaggregated.decode.tp.
Error in_pool(Error e, const Job& job, const char* pool) {
  if (!job.serving.disaggregated) return e;
  if (e.path.rfind("parallel.", 0) == 0) e.path = std::string("serving.disaggregated.") + pool + e.path.substr(8);
  e.message = std::string("the ") + pool + " pool: " + e.message;
  return e;
}

}  // namespace

Status validate_serving(const Job& job, Status (*validate_layout)(const Job&)) {
  const ServingConfig& s = job.serving;
  const ModelConfig& m = job.model;
  const std::pair<const char*, int64_t> ranges[] = {{"serving.prompt_tokens", s.prompt_tokens},
                                                    {"serving.output_tokens", s.output_tokens},
                                                    {"serving.page_tokens", s.page_tokens}};
  for (const auto& [path, v] : ranges)
    if (v < 1 || v > limits::kMaxSeqLen)
      return make_error(ErrorCode::kInvalidArgument,
                        "must be in [1, " + to_string(limits::kMaxSeqLen) + "] (got " + to_string(v) + ")", path);
  if (s.concurrency < 0 || s.concurrency > limits::kMaxMicroBatch)
    return make_error(ErrorCode::kInvalidArgument,
                      "must be in [0, " + to_string(limits::kMaxMicroBatch) + "] (got " + to_string(s.concurrency) + ")",
                      "serving.concurrency");
  if (s.chunk_tokens < 0 || s.chunk_tokens > limits::kMaxSeqLen)
    return make_error(ErrorCode::kInvalidArgument, "must be >= 0 (got " + to_string(s.chunk_tokens) + ")",
                      "serving.chunk_tokens");
  if (s.kv_dtype != DType::kBF16 && s.kv_dtype != DType::kFP8)
    return make_error(ErrorCode::kInvalidArgument, "must be bf16 or fp8", "serving.kv_dtype");
  if (s.weights_dtype != DType::kBF16 && s.weights_dtype != DType::kFP8 && !dtype_is_4bit(s.weights_dtype))
    return make_error(ErrorCode::kInvalidArgument, "must be bf16, fp8, int4, nvfp4 or mxfp4", "serving.weights_dtype");
  if (dtype_is_fp4(s.weights_dtype) && !(job.hardware.peak_flops_fp4 > 0))
    return make_error(ErrorCode::kUnsupported,
                      std::string("weights \"") + dtype_name(s.weights_dtype) +
                          "\" run their GEMMs on FP4 tensor cores (W4A4); hardware \"" + job.hardware.name +
                          "\" has none (hardware.peak_flops_fp4 is 0): use \"int4\" (4-bit weights dequantized to "
                          "bf16 in the GEMM, W4A16) or \"fp8\", or a device with FP4 (b200)",
                      "serving.weights_dtype");
  if (m.mtp_num_layers > 0)
    return make_error(ErrorCode::kInvalidArgument,
                      "trains multi-token-prediction layers (a training objective, got " +
                          to_string(m.mtp_num_layers) +
                          "); a serving job leaves it 0 and drafts tokens with serving.speculative_tokens",
                      "model.mtp_num_layers");
  const std::vector<RequestClass> mix = serving_requests(s);
  for (size_t i = 0; i < mix.size(); ++i) {
    const RequestClass& c = mix[i];
    const std::string at = s.requests.empty() ? "serving." : "serving.requests[" + to_string(i) + "].";
    for (const auto& [key, v] : {std::pair<const char*, int64_t>{"prompt_tokens", c.prompt_tokens},
                                 std::pair<const char*, int64_t>{"output_tokens", c.output_tokens}})
      if (v < 1 || v > limits::kMaxSeqLen)
        return make_error(ErrorCode::kInvalidArgument,
                          "must be in [1, " + to_string(limits::kMaxSeqLen) + "] (got " + to_string(v) + ")", at + key);
    if (!(c.weight > 0) || !std::isfinite(c.weight))
      return make_error(ErrorCode::kInvalidArgument, "must be a positive number", at + "weight");
    const int64_t context = c.prompt_tokens + c.output_tokens;
    if (m.max_positions > 0 && context > m.max_positions)
      return make_error(ErrorCode::kInvalidArgument,
                        "prompt_tokens (" + to_string(c.prompt_tokens) + ") + output_tokens (" +
                            to_string(c.output_tokens) + ") = " + to_string(context) +
                            " exceeds the model's context (max_positions = " + to_string(m.max_positions) +
                            "); shorten " + at + "prompt_tokens or " + at + "output_tokens",
                        at + "prompt_tokens");
  }
  if (s.requests.size() > kMaxRequestClasses)
    return make_error(ErrorCode::kInvalidArgument, "at most " + to_string(kMaxRequestClasses) + " request classes",
                      "serving.requests");
  if (s.workload.present) {
    const WorkloadConfig& w = s.workload;
    if (s.disaggregated)
      return make_error(ErrorCode::kUnsupported,
                        "a request workload is simulated for colocated serving only (one engine runs prefill and "
                        "decode); not yet with serving.disaggregated",
                        "serving.workload");
    auto longest = [](const LengthDist& d, int64_t dflt) -> int64_t {
      switch (d.kind) {
        case LengthDist::Kind::kFixed: return static_cast<int64_t>(d.a);
        case LengthDist::Kind::kUniform: return static_cast<int64_t>(d.b);
        default: return dflt;  // normal: clamped to the context when drawn
      }
    };
    if (w.arrival == WorkloadConfig::Arrival::kTrace) {
      // A trace gives each request's own lengths (the job's are not used).
      for (size_t i = 0; i < w.trace.size(); ++i) {
        const TraceRequest& r = w.trace[i];
        if (m.max_positions > 0 && r.prompt_tokens + r.output_tokens > m.max_positions)
          return make_error(ErrorCode::kInvalidArgument,
                            "prompt_tokens (" + to_string(r.prompt_tokens) + ") + output_tokens (" +
                                to_string(r.output_tokens) + ") = " + to_string(r.prompt_tokens + r.output_tokens) +
                                " exceeds the model's context (max_positions = " + to_string(m.max_positions) + ")",
                            "serving.workload.trace[" + to_string(i) + "]");
      }
    } else if (w.prompt.kind != LengthDist::Kind::kDefault || w.output.kind != LengthDist::Kind::kDefault) {
      // A drawn length beside the mix's (each class checked above): the
      // longest of each can meet in one request.
      int64_t longest_p = 0, longest_o = 0;
      for (const RequestClass& c : mix) {
        longest_p = std::max(longest_p, c.prompt_tokens);
        longest_o = std::max(longest_o, c.output_tokens);
      }
      const int64_t p = longest(w.prompt, longest_p), o = longest(w.output, longest_o);
      if (m.max_positions > 0 && p + o > m.max_positions)
        return make_error(ErrorCode::kInvalidArgument,
                          "the longest request (" + to_string(p) + " + " + to_string(o) +
                              " tokens) exceeds the model's context (max_positions = " +
                              to_string(m.max_positions) + ")",
                          w.prompt.kind != LengthDist::Kind::kDefault ? "serving.workload.prompt_tokens"
                                                                      : "serving.workload.output_tokens");
    }
  }
  if (m.has_ssm() && s.disaggregated)  // the KV transfer moves KV heads only (docs/inference.md, "Hybrid models")
    return make_error(ErrorCode::kUnsupported,
                      "disaggregated serving of a hybrid (Mamba) model is not modelled: the transfer from the "
                      "prefill to the decode pool would also move each sequence's Mamba state; serve it colocated",
                      "serving.disaggregated");
  if (s.two_batch_overlap) {
    // Two-batch overlap hides the expert all-to-alls of one micro-batch
    // behind the other's compute: without experts spread over ranks that
    // hold different tokens there is no all-to-all to hide.
    const std::string key = "serving.two_batch_overlap";
    if (!m.is_moe())
      return make_error(ErrorCode::kInvalidArgument,
                        "needs a mixture-of-experts model with expert parallelism (the model has num_experts " +
                            to_string(m.num_experts) + "): it overlaps one micro-batch's expert all-to-alls with "
                            "the other's compute",
                        key);
    for (const bool prefill : {true, false}) {
      const Job pj = serving_pool_job(job, prefill);
      const std::string who = s.disaggregated ? (prefill ? "the prefill pool has" : "the decode pool has") : "the job has";
      if (pj.parallel.ep < 2)
        return make_error(ErrorCode::kInvalidArgument,
                          who + " ep 1: no expert all-to-all to overlap; give parallel.ep > 1 (e.g. \"dp\": 8, "
                              "\"ep\": 8) or leave two_batch_overlap out",
                          key);
      if (pj.parallel.tp > 1)
        return make_error(ErrorCode::kInvalidArgument,
                          who + " tp " + to_string(pj.parallel.tp) +
                              ": its experts are spread over the tp ranks, which hold the same tokens (an all-reduce, "
                              "no all-to-all to overlap); two-batch overlap needs DP attention with expert "
                              "parallelism (\"tp\": 1, \"dp\" = \"ep\" > 1)",
                          key);
      if (!job.serving.disaggregated) break;
    }
  }
  const int64_t decode_dp = serving_pool_job(job, false).parallel.dp;
  if (s.concurrency > 0 && s.concurrency % decode_dp != 0)
    return make_error(ErrorCode::kNotDivisible,
                      "concurrency (" + to_string(s.concurrency) + ") is not divisible by the attention data-parallel "
                      "degree dp (" + to_string(decode_dp) + "): each dp rank decodes concurrency / dp sequences",
                      "serving.concurrency");
  for (const bool prefill : {true, false}) {
    const Job pj = serving_pool_job(job, prefill);
    const char* pool = prefill ? "prefill" : "decode";
    if (m.is_moe() && pj.parallel.tp > 1) {
      // After attention's all-reduce every tp rank holds the same tokens:
      // the experts are spread over exactly those ranks (expert tp, ep, or
      // both) and the MoE output is all-reduced over tp, as vLLM and SGLang
      // serve Mixtral or Qwen-MoE at tp 8. Experts over more ranks than tp
      // (wide EP across attention-dp ranks) need each rank's own tokens:
      // that is DP attention with tp 1.
      const auto& pp = pj.parallel;
      const int64_t etp = pp.expert_tp_degree(), ranks = pp.tp * pp.dp;
      if (etp * pp.ep != pp.tp) {
        std::string wide;
        if (etp * pp.ep > pp.tp)
          wide = "; to spread the experts over more ranks than tp, serve it DeepSeek-style with attention data "
                 "parallelism and expert parallelism over the same " + to_string(ranks) + " ranks: \"tp\": 1, "
                 "\"dp\": " + to_string(ranks) + ", \"ep\": " + to_string(std::gcd(ranks, m.num_experts));
        return in_pool(make_error(ErrorCode::kInvalidArgument,
                                  "a mixture-of-experts model at tp " + to_string(pp.tp) +
                                      " spreads its experts over the tp ranks (which hold the same tokens after "
                                      "attention's all-reduce): expert_tp (" + to_string(etp) + ") x ep (" +
                                      to_string(pp.ep) + ") must equal tp (" + to_string(pp.tp) +
                                      "), e.g. \"ep\": 1, \"expert_tp\": " + to_string(pp.tp) +
                                      " (expert tensor parallelism) or \"ep\": " + to_string(pp.tp) +
                                      ", \"expert_tp\": 1 (expert parallelism over the tp ranks)" + wide,
                                  "parallel.ep"),
                       job, pool);
      }
      const auto at = [&](const char* a) {
        return std::find(pp.order.begin(), pp.order.end(), a) - pp.order.begin();
      };
      if (pp.dp > 1 && at("dp") < at("tp"))
        return make_error(ErrorCode::kInvalidArgument,
                          std::string("the ") + pool + " pool: a mixture-of-experts model at tp > 1 and dp > 1 "
                          "needs tp inside dp in the rank order (the experts are spread over each tp group)",
                          "parallel.order");
    }
    Status st = validate_layout(pj);
    if (!st.ok()) return in_pool(st.error(), job, pool);
    if (!job.serving.disaggregated) break;
  }
  return ok_status();
}

}  // namespace sc
