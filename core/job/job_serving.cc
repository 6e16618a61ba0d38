// Inference jobs: "mode": "inference" and the "serving" section (parsing,
// validation, canonical form). docs/inference.md, "Job".
#include <algorithm>
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
                                       {"prompt_tokens", "output_tokens", "concurrency", "chunk_tokens", "kv_dtype",
                                        "weights_dtype", "page_tokens", "replicas", "disaggregated"},
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
  t.seq_len = job->serving.prompt_tokens + job->serving.output_tokens;
  t.micro_batch_size = 1;
  t.global_batch_size = job->parallel.dp;
  t.dtype = job->serving.weights_dtype;
  t.optimizer_bytes_per_param = 0;
  t.recompute = Recompute::kNone;
  job->model.dropout = false;  // inference: dropout is off
  if (job->parallel.expert_tp == 0) job->parallel.expert_tp = job->parallel.tp;
  for (PoolLayout* p : {&job->serving.prefill, &job->serving.decode})
    if (p->expert_tp == 0) p->expert_tp = p->tp;
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
  const int64_t context = s.prompt_tokens + s.output_tokens;
  if (m.max_positions > 0 && context > m.max_positions)
    return make_error(ErrorCode::kInvalidArgument,
                      "prompt_tokens (" + to_string(s.prompt_tokens) + ") + output_tokens (" +
                          to_string(s.output_tokens) + ") = " + to_string(context) +
                          " exceeds the model's context (max_positions = " + to_string(m.max_positions) +
                          "); shorten serving.prompt_tokens or serving.output_tokens",
                      "serving.prompt_tokens");
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
      // The MoE layer routes each tp rank's own slice of the tokens, cut along
      // the sequence (sequence parallelism, as in training). A decode step has
      // one token per sequence: there is no sequence to cut, and routing a
      // slice of the batch instead is not modelled. So the suggestion keeps
      // the rank count and moves tp into attention data parallelism, with
      // expert parallelism over those ranks (ep = the largest divisor of the
      // expert count that divides them).
      const int64_t ranks = pj.parallel.tp * pj.parallel.dp;
      int64_t ep = std::gcd(ranks, m.num_experts);
      std::string conc;
      // concurrency is the decode pool's (colocated: the one pool's)
      if ((!prefill || !s.disaggregated) && s.concurrency > 0 && s.concurrency % ranks != 0)
        conc = ", and a concurrency divisible by " + to_string(ranks);
      return in_pool(make_error(ErrorCode::kUnsupported,
                                "a mixture-of-experts model with tp > 1 (" + to_string(pj.parallel.tp) +
                                    ") is not modelled in inference: its MoE layers route each tp rank's share of "
                                    "the tokens cut along the sequence (sequence parallelism, a training setting), "
                                    "and a decode step has one token per sequence. Serve it DeepSeek-style with attention data "
                                    "parallelism and expert parallelism over the same " + to_string(ranks) +
                                    " ranks: \"tp\": 1, \"dp\": " + to_string(ranks) + ", \"ep\": " +
                                    to_string(ep) + conc,
                                "parallel.tp"),
                     job, pool);
    }
    Status st = validate_layout(pj);
    if (!st.ok()) return in_pool(st.error(), job, pool);
    if (!job.serving.disaggregated) break;
  }
  return ok_status();
}

}  // namespace sc
