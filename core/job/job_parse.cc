// parse_job: the top level and the "parallel" and "training" sections.
// Model and hardware sections are in job_model.cc / job_hardware.cc.
#include "job/job_internal.h"

namespace sc {
namespace {

using jsonf::Json;
using jsonf::join;
using namespace job_internal;

Status parse_parallel(const Json& v, ParallelConfig* p, int64_t* world_size) {
  const std::string path = "parallel";
  SC_RETURN_IF_ERROR(jsonf::expect_object(v, path));
  SC_RETURN_IF_ERROR(jsonf::check_keys(v, {"dp", "tp", "sequence_parallel", "world_size"}, path));
  if (const Json* x = jsonf::find(v, "dp")) {
    SC_ASSIGN_OR_RETURN(p->dp, jsonf::get_int(*x, "parallel.dp", 1, limits::kMaxDegree));
  }
  if (const Json* x = jsonf::find(v, "tp")) {
    SC_ASSIGN_OR_RETURN(p->tp, jsonf::get_int(*x, "parallel.tp", 1, limits::kMaxDegree));
  }
  if (const Json* x = jsonf::find(v, "sequence_parallel")) {
    SC_ASSIGN_OR_RETURN(p->sequence_parallel, jsonf::get_bool(*x, "parallel.sequence_parallel"));
  }
  if (const Json* x = jsonf::find(v, "world_size")) {
    SC_ASSIGN_OR_RETURN(*world_size, jsonf::get_int(*x, "parallel.world_size", 1, limits::kMaxDegree));
  }
  return ok_status();
}

Result<DType> parse_dtype_field(const Json& v, const std::string& path, bool reduce) {
  SC_ASSIGN_OR_RETURN(std::string s, jsonf::get_string(v, path));
  std::optional<DType> dt = parse_dtype(s);
  bool allowed = dt && (!reduce || *dt == DType::kFP32 || *dt == DType::kBF16 || *dt == DType::kFP16);
  if (!allowed) {
    const char* known = reduce ? "fp32, bf16, fp16" : "fp32, tf32, bf16, fp16, fp8";
    return make_error(ErrorCode::kInvalidArgument,
                      "unknown dtype \"" + s + "\" (known: " + known + ")", path);
  }
  return *dt;
}

// Returns whether global_batch_size was given (else: dp * micro_batch_size).
Result<bool> parse_training(const Json& v, TrainingConfig* t) {
  const std::string path = "training";
  SC_RETURN_IF_ERROR(jsonf::expect_object(v, path));
  SC_RETURN_IF_ERROR(jsonf::check_keys(
      v, {"seq_len", "micro_batch_size", "global_batch_size", "dtype", "grad_reduce_dtype",
          "dp_bucket_mb", "optimizer", "optimizer_bytes_per_param"}, path));
  if (const Json* x = jsonf::find(v, "seq_len")) {
    SC_ASSIGN_OR_RETURN(t->seq_len, jsonf::get_int(*x, "training.seq_len", 1, limits::kMaxSeqLen));
  }
  if (const Json* x = jsonf::find(v, "micro_batch_size")) {
    SC_ASSIGN_OR_RETURN(t->micro_batch_size,
                        jsonf::get_int(*x, "training.micro_batch_size", 1, limits::kMaxMicroBatch));
  }
  const Json* gb = jsonf::find(v, "global_batch_size");
  if (gb) {
    SC_ASSIGN_OR_RETURN(t->global_batch_size,
                        jsonf::get_int(*gb, "training.global_batch_size", 1, limits::kMaxGlobalBatch));
  }
  if (const Json* x = jsonf::find(v, "dtype")) {
    SC_ASSIGN_OR_RETURN(t->dtype, parse_dtype_field(*x, "training.dtype", false));
  }
  if (const Json* x = jsonf::find(v, "grad_reduce_dtype")) {
    SC_ASSIGN_OR_RETURN(t->grad_reduce_dtype, parse_dtype_field(*x, "training.grad_reduce_dtype", true));
  }
  if (const Json* x = jsonf::find(v, "dp_bucket_mb")) {
    SC_ASSIGN_OR_RETURN(t->dp_bucket_mb, jsonf::get_number_in(*x, "training.dp_bucket_mb", 0,
                                                              limits::kMaxBucketMb, false));
  }
  if (const Json* x = jsonf::find(v, "optimizer")) {
    SC_ASSIGN_OR_RETURN(std::string s, jsonf::get_string(*x, "training.optimizer"));
    std::optional<OptimizerKind> k = parse_optimizer(s);
    if (!k) {
      return make_error(ErrorCode::kInvalidArgument,
                        "unknown optimizer \"" + s + "\" (known: adam, adamw, sgd)", "training.optimizer");
    }
    t->optimizer = *k;
  }
  t->optimizer_bytes_per_param = default_optimizer_bytes(t->optimizer);
  if (const Json* x = jsonf::find(v, "optimizer_bytes_per_param")) {
    SC_ASSIGN_OR_RETURN(t->optimizer_bytes_per_param,
                        jsonf::get_int(*x, "training.optimizer_bytes_per_param", 0,
                                       limits::kMaxOptimizerBytes));
  }
  return gb != nullptr;
}

}  // namespace

Result<Job> parse_job(const std::string& json_text) {
  SC_ASSIGN_OR_RETURN(Json j, jsonf::parse_text(json_text));
  if (!j.is_object()) {
    return make_error(ErrorCode::kInvalidArgument,
                      std::string("the job must be a JSON object (got ") + jsonf::type_name(j) + ")");
  }
  SC_RETURN_IF_ERROR(jsonf::check_keys(j, {"model", "parallel", "training", "hardware"}, ""));
  Job job;
  const Json* model = jsonf::find(j, "model");
  if (!model) {
    return make_error(ErrorCode::kInvalidArgument,
                      "required section is missing (e.g. {\"preset\": \"gpt3-1.7b\"}; presets, "
                      "hf_config or explicit fields: docs/job-format.md)", "model");
  }
  SC_ASSIGN_OR_RETURN(job.model, parse_model_section(*model, "model"));

  int64_t world_size = 0;
  if (const Json* p = jsonf::find(j, "parallel")) {
    SC_RETURN_IF_ERROR(parse_parallel(*p, &job.parallel, &world_size));
  }
  bool batch_given = false;
  if (const Json* t = jsonf::find(j, "training")) {
    SC_ASSIGN_OR_RETURN(batch_given, parse_training(*t, &job.training));
  }
  SC_ASSIGN_OR_RETURN(job.hardware, hardware_preset("h100"));
  if (const Json* h = jsonf::find(j, "hardware")) {
    SC_ASSIGN_OR_RETURN(job.hardware, parse_hardware_section(*h, "hardware"));
  }

  // Both factors are capped at 2^20, so these products fit int64.
  if (!batch_given) job.training.global_batch_size = job.parallel.dp * job.training.micro_batch_size;
  if (job.model.max_positions == 0) job.model.max_positions = job.training.seq_len;
  int64_t product = job.parallel.dp * job.parallel.tp;
  if (world_size != 0 && world_size != product) {
    return make_error(ErrorCode::kWorldSizeMismatch,
                      "world_size (" + std::to_string(world_size) + ") != dp (" +
                      std::to_string(job.parallel.dp) + ") x tp (" + std::to_string(job.parallel.tp) +
                      ") = " + std::to_string(product), "parallel.world_size");
  }
  SC_RETURN_IF_ERROR(validate_job(job));
  return job;
}

}  // namespace sc
