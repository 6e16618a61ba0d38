// Inference jobs: "mode": "inference" and the "serving" section (parsing,
// validation, canonical form). docs/inference.md, "Job".
#include <algorithm>
#include <cmath>
#include <numeric>

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

Result<DType> serving_dtype(const Json& v, const std::string& path) {
  SC_ASSIGN_OR_RETURN(std::string s, jsonf::get_string(v, path));
  if (s == "bf16") return DType::kBF16;
  if (s == "fp8") return DType::kFP8;
  return make_error(ErrorCode::kInvalidArgument, "unknown dtype \"" + jsonf::clip(s) + "\" (known: bf16, fp8)", path);
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
  const Json* v = jsonf::find(root, "serving");
  if (!v) return ok_status();  // every field has a default
  const std::string path = "serving";
  SC_RETURN_IF_ERROR(jsonf::expect_object(*v, path));
  SC_RETURN_IF_ERROR(jsonf::check_keys(*v,
                                       {"prompt_tokens", "output_tokens", "requests", "concurrency", "chunk_tokens",
                                        "kv_dtype", "weights_dtype", "page_tokens", "replicas", "disaggregated"},
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
    SC_ASSIGN_OR_RETURN(s.weights_dtype, serving_dtype(*x, "serving.weights_dtype"));
  }
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
  if (s.weights_dtype != DType::kBF16 && s.weights_dtype != DType::kFP8)
    return make_error(ErrorCode::kInvalidArgument, "must be bf16 or fp8", "serving.weights_dtype");
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
  if (m.is_hybrid())
    return make_error(ErrorCode::kUnsupported,
                      "hybrid (Mamba) models are not modelled in inference yet: their decode needs a recurrent "
                      "state cache beside the KV cache",
                      "model.hybrid_pattern");
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
