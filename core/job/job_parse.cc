// parse_job: the top level and the "parallel" and "training" sections.
// Model and hardware sections are in job_model.cc / job_hardware.cc.
#include "job/job_internal.h"

#include <algorithm>

namespace sc {
namespace {

using jsonf::Json;
using jsonf::join;
using namespace job_internal;

// "megatron" | "llama3" | a list (or "tp,pp,dp" string) of the axes
// tp, dp, pp, innermost first.
Result<std::vector<std::string>> parse_order(const Json& v, const std::string& path) {
  std::vector<std::string> axes;
  if (v.is_string()) {
    std::string s = v.get<std::string>();
    if (s == "megatron") return std::vector<std::string>{"tp", "cp", "dp", "pp"};
    if (s == "llama3") return std::vector<std::string>{"tp", "cp", "pp", "dp"};
    size_t start = 0;
    while (start <= s.size()) {
      size_t comma = s.find(',', start);
      if (comma == std::string::npos) comma = s.size();
      axes.push_back(s.substr(start, comma - start));
      start = comma + 1;
    }
  } else if (v.is_array()) {
    for (size_t i = 0; i < v.size(); ++i) {
      SC_ASSIGN_OR_RETURN(std::string a, jsonf::get_string(v[i], path + "[" + std::to_string(i) + "]"));
      axes.push_back(a);
    }
  } else {
    return make_error(ErrorCode::kInvalidArgument,
                      std::string("must be \"megatron\", \"llama3\" or a list of axes (got ") + jsonf::type_name(v) + ")",
                      path);
  }
  // cp may be left out (it then follows tp, as in both published orders).
  if (std::find(axes.begin(), axes.end(), "cp") == axes.end()) {
    auto tp = std::find(axes.begin(), axes.end(), "tp");
    axes.insert(tp == axes.end() ? axes.begin() : tp + 1, "cp");
  }
  std::vector<std::string> sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  if (sorted != std::vector<std::string>{"cp", "dp", "pp", "tp"})
    return make_error(ErrorCode::kInvalidArgument,
                      "must name each of tp, cp, dp, pp exactly once, innermost first (got " + jsonf::brief(v) + ")",
                      path);
  return axes;
}

Status parse_parallel(const Json& v, ParallelConfig* p, int64_t* world_size) {
  const std::string path = "parallel";
  SC_RETURN_IF_ERROR(jsonf::expect_object(v, path));
  SC_RETURN_IF_ERROR(jsonf::check_keys(
      v, {"dp", "tp", "pp", "cp", "cp_algorithm", "virtual_stages", "zero", "sequence_parallel", "pipeline_layout",
          "order", "world_size", "ep", "expert_tp", "shard_group", "moe_dispatcher", "moe_imbalance"},
      path));
  if (const Json* x = jsonf::find(v, "moe_dispatcher")) {
    SC_ASSIGN_OR_RETURN(p->moe_dispatcher, jsonf::get_string(*x, "parallel.moe_dispatcher"));
    if (p->moe_dispatcher != "alltoall" && p->moe_dispatcher != "allgather" && p->moe_dispatcher != "deepep")
      return make_error(ErrorCode::kInvalidArgument,
                        "unknown moe_dispatcher \"" + p->moe_dispatcher + "\" (known: alltoall, allgather, deepep)",
                        "parallel.moe_dispatcher");
  }
  if (const Json* x = jsonf::find(v, "moe_imbalance")) {
    SC_ASSIGN_OR_RETURN(p->moe_imbalance,
                        jsonf::get_number_in(*x, "parallel.moe_imbalance", 1, limits::kMaxDegree, true));
  }
  if (const Json* x = jsonf::find(v, "ep")) {
    SC_ASSIGN_OR_RETURN(p->ep, jsonf::get_int(*x, "parallel.ep", 1, limits::kMaxDegree));
  }
  if (const Json* x = jsonf::find(v, "expert_tp")) {
    SC_ASSIGN_OR_RETURN(p->expert_tp, jsonf::get_int(*x, "parallel.expert_tp", 1, limits::kMaxDegree));
  }
  if (const Json* x = jsonf::find(v, "shard_group")) {
    SC_ASSIGN_OR_RETURN(p->shard_group, jsonf::get_int(*x, "parallel.shard_group", 1, limits::kMaxDegree));
  }
  if (const Json* x = jsonf::find(v, "cp")) {
    SC_ASSIGN_OR_RETURN(p->cp, jsonf::get_int(*x, "parallel.cp", 1, limits::kMaxDegree));
  }
  if (const Json* x = jsonf::find(v, "cp_algorithm")) {
    SC_ASSIGN_OR_RETURN(p->cp_algorithm, jsonf::get_string(*x, "parallel.cp_algorithm"));
    if (p->cp_algorithm != "allgather" && p->cp_algorithm != "ring")
      return make_error(ErrorCode::kInvalidArgument,
                        "unknown cp_algorithm \"" + echo_text(p->cp_algorithm) + "\" (known: allgather, ring)",
                        "parallel.cp_algorithm");
  }
  if (const Json* x = jsonf::find(v, "zero")) {
    SC_ASSIGN_OR_RETURN(p->zero, jsonf::get_int(*x, "parallel.zero", 0, 3));
  }
  if (const Json* x = jsonf::find(v, "pp")) {
    SC_ASSIGN_OR_RETURN(p->pp, jsonf::get_int(*x, "parallel.pp", 1, limits::kMaxDegree));
  }
  if (const Json* x = jsonf::find(v, "virtual_stages")) {
    SC_ASSIGN_OR_RETURN(p->virtual_stages, jsonf::get_int(*x, "parallel.virtual_stages", 1, limits::kMaxDegree));
  }
  if (const Json* x = jsonf::find(v, "pipeline_layout")) {
    if (!x->is_array())
      return make_error(ErrorCode::kInvalidArgument,
                        std::string("must be a list of layer counts, one per (virtual) stage (got ") +
                            jsonf::type_name(*x) + ")", "parallel.pipeline_layout");
    p->pipeline_layout.clear();
    for (size_t i = 0; i < x->size(); ++i) {
      SC_ASSIGN_OR_RETURN(int64_t n, jsonf::get_int((*x)[i], "parallel.pipeline_layout[" + std::to_string(i) + "]",
                                                    0, limits::kMaxLayers));
      p->pipeline_layout.push_back(n);
    }
  }
  if (const Json* x = jsonf::find(v, "order")) {
    SC_ASSIGN_OR_RETURN(p->order, parse_order(*x, "parallel.order"));
  }
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
  if (dt && dtype_is_4bit(*dt))
    return make_error(ErrorCode::kInvalidArgument,
                      "\"" + echo_text(s) + "\" is a 4-bit weight format for serving only (serving.weights_dtype of an "
                      "inference job); training runs in fp32, tf32, bf16, fp16 (and FP8 through training.fp8_recipe)",
                      path);
  bool allowed = dt && (!reduce || *dt == DType::kFP32 || *dt == DType::kBF16 || *dt == DType::kFP16);
  if (!allowed) {
    const char* known = reduce ? "fp32, bf16, fp16" : "fp32, tf32, bf16, fp16, fp8";
    return make_error(ErrorCode::kInvalidArgument,
                      "unknown dtype \"" + echo_text(s) + "\" (known: " + known + ")", path);
  }
  return *dt;
}

// Returns whether global_batch_size was given (else: dp * micro_batch_size).
Result<bool> parse_training(const Json& v, TrainingConfig* t) {
  const std::string path = "training";
  SC_RETURN_IF_ERROR(jsonf::expect_object(v, path));
  SC_RETURN_IF_ERROR(jsonf::check_keys(
      v, {"seq_len", "micro_batch_size", "global_batch_size", "dtype", "grad_reduce_dtype",
          "dp_bucket_mb", "optimizer", "optimizer_bytes_per_param", "schedule", "recompute", "recompute_modules",
          "tp_comm_overlap", "overlap_grad_reduce", "overlap_param_gather", "overlap_p2p_comm", "fp8_recipe",
          "fp8_params", "moe_shared_expert_overlap", "overlap_moe_expert_parallel_comm", "delay_wgrad_compute",
          "moe_pad_expert_input_to_capacity", "cross_entropy_loss_fusion"}, path));
  if (const Json* x = jsonf::find(v, "tp_comm_overlap")) {
    SC_ASSIGN_OR_RETURN(t->tp_comm_overlap, jsonf::get_bool(*x, "training.tp_comm_overlap"));
  }
  if (const Json* x = jsonf::find(v, "overlap_grad_reduce")) {
    SC_ASSIGN_OR_RETURN(t->overlap_grad_reduce, jsonf::get_bool(*x, "training.overlap_grad_reduce"));
  }
  if (const Json* x = jsonf::find(v, "overlap_param_gather")) {
    SC_ASSIGN_OR_RETURN(t->overlap_param_gather, jsonf::get_bool(*x, "training.overlap_param_gather"));
  }
  if (const Json* x = jsonf::find(v, "overlap_p2p_comm")) {
    SC_ASSIGN_OR_RETURN(t->overlap_p2p_comm, jsonf::get_bool(*x, "training.overlap_p2p_comm"));
  }
  if (const Json* x = jsonf::find(v, "moe_pad_expert_input_to_capacity")) {
    SC_ASSIGN_OR_RETURN(t->moe_pad_expert_input_to_capacity,
                        jsonf::get_bool(*x, "training.moe_pad_expert_input_to_capacity"));
  }
  if (const Json* x = jsonf::find(v, "cross_entropy_loss_fusion")) {
    SC_ASSIGN_OR_RETURN(t->cross_entropy_loss_fusion, jsonf::get_bool(*x, "training.cross_entropy_loss_fusion"));
  }
  if (const Json* x = jsonf::find(v, "moe_shared_expert_overlap")) {
    SC_ASSIGN_OR_RETURN(t->moe_shared_expert_overlap, jsonf::get_bool(*x, "training.moe_shared_expert_overlap"));
  }
  if (const Json* x = jsonf::find(v, "overlap_moe_expert_parallel_comm")) {
    SC_ASSIGN_OR_RETURN(t->overlap_moe_expert_parallel_comm,
                        jsonf::get_bool(*x, "training.overlap_moe_expert_parallel_comm"));
  }
  if (const Json* x = jsonf::find(v, "delay_wgrad_compute")) {
    SC_ASSIGN_OR_RETURN(t->delay_wgrad_compute, jsonf::get_bool(*x, "training.delay_wgrad_compute"));
  }
  if (const Json* x = jsonf::find(v, "schedule")) {
    SC_ASSIGN_OR_RETURN(std::string s, jsonf::get_string(*x, "training.schedule"));
    bool found = false;
    for (Schedule k : {Schedule::kGPipe, Schedule::kOneFOneB, Schedule::kInterleaved, Schedule::kZeroBubble})
      if (s == schedule_name(k)) { t->schedule = k; found = true; }
    if (!found)
      return make_error(ErrorCode::kInvalidArgument,
                        "unknown schedule \"" + echo_text(s) + "\" (known: gpipe, 1f1b, interleaved-1f1b, zero-bubble)",
                        "training.schedule");
  }
  if (const Json* x = jsonf::find(v, "recompute")) {
    SC_ASSIGN_OR_RETURN(std::string s, jsonf::get_string(*x, "training.recompute"));
    bool found = false;
    for (Recompute k : {Recompute::kNone, Recompute::kSelective, Recompute::kFull})
      if (s == recompute_name(k)) { t->recompute = k; found = true; }
    if (!found)
      return make_error(ErrorCode::kInvalidArgument,
                        "unknown recompute \"" + echo_text(s) + "\" (known: none, selective, full)", "training.recompute");
  }
  if (const Json* x = jsonf::find(v, "recompute_modules")) {  // needs recompute "selective": validate_job
    if (!x->is_array())
      return make_error(ErrorCode::kInvalidArgument, "expected a list of module names", "training.recompute_modules");
    std::string known;
    for (const char* m : kRecomputeModules) known += std::string(known.empty() ? "" : ", ") + m;
    if (x->empty())
      return make_error(ErrorCode::kInvalidArgument, "an empty list recomputes nothing: leave the key out, or list modules (" + known + ")",
                        "training.recompute_modules");
    uint32_t bits = 0;
    for (size_t i = 0; i < x->size(); ++i) {
      const std::string path = "training.recompute_modules[" + std::to_string(i) + "]";
      SC_ASSIGN_OR_RETURN(std::string m, jsonf::get_string((*x)[i], path));
      size_t k = 0;
      while (k < kRecomputeModuleCount && m != kRecomputeModules[k]) ++k;
      if (k == kRecomputeModuleCount)
        return make_error(ErrorCode::kInvalidArgument, "unknown module \"" + echo_text(m) + "\" (known: " + known + ")", path);
      if (bits & (1u << k))
        return make_error(ErrorCode::kInvalidArgument, "\"" + m + "\" is listed twice", path);
      bits |= 1u << k;
    }
    // ["core_attn"] is the default: the same job, the same canonical form;
    // but only with selective recomputation (validate_job refuses any other
    // list without it, and this one would pass as 0 otherwise).
    if (bits == kRecomputeCoreAttn && t->recompute != Recompute::kSelective)
      return make_error(ErrorCode::kInvalidArgument,
                        std::string("lists the modules selective recomputation redoes, but training.recompute is \"") +
                            recompute_name(t->recompute) + "\": set it to \"selective\" (Megatron-Core: "
                            "--recompute-granularity selective --recompute-modules ...)",
                        "training.recompute_modules");
    t->recompute_modules = bits == kRecomputeCoreAttn ? 0 : bits;
  }
  if (const Json* x = jsonf::find(v, "fp8_params")) {  // needs fp8_recipe: validate_job
    SC_ASSIGN_OR_RETURN(t->fp8_params, jsonf::get_bool(*x, "training.fp8_params"));
  }
  if (const Json* x = jsonf::find(v, "fp8_recipe")) {  // hardware support: validate_job
    SC_ASSIGN_OR_RETURN(std::string s, jsonf::get_string(*x, "training.fp8_recipe"));
    std::optional<Fp8Recipe> r = parse_fp8_recipe(s);
    if (!r)
      return make_error(ErrorCode::kInvalidArgument,
                        "unknown FP8 recipe \"" + jsonf::clip(s) + "\" (known: none, delayed, tensorwise, blockwise, mxfp8)",
                        "training.fp8_recipe");
    t->fp8_recipe = *r;
  }
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
                        "unknown optimizer \"" + echo_text(s) + "\" (known: adam, adamw, sgd)", "training.optimizer");
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
  SC_RETURN_IF_ERROR(
      jsonf::check_keys(j, {"model", "parallel", "training", "hardware", "network", "mode", "serving", "plan"}, ""));
  // "plan": the planner's constraints (docs/plan.md). One job file serves
  // every command (issue 24 D14): the others accept the block, which
  // changes nothing they build (not part of the canonical job), and check
  // only that it is an object; stagecraft plan checks its contents.
  if (const Json* plan = jsonf::find(j, "plan")) SC_RETURN_IF_ERROR(jsonf::expect_object(*plan, "plan"));
  Job job;
  if (const Json* mode = jsonf::find(j, "mode")) {
    SC_ASSIGN_OR_RETURN(std::string s, jsonf::get_string(*mode, "mode"));
    if (s == "inference") job.mode = JobMode::kInference;
    else if (s != "training")
      return make_error(ErrorCode::kInvalidArgument,
                        "unknown mode \"" + jsonf::clip(s) + "\" (known: training, inference)", "mode");
  }
  if (!job.inference() && jsonf::find(j, "serving"))
    return make_error(ErrorCode::kInvalidArgument, "a serving section needs \"mode\": \"inference\"", "serving");
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
  if (job.inference()) {
    SC_RETURN_IF_ERROR(parse_serving(j, &job));
    resolve_serving(&job);
    batch_given = true;
  } else if (const Json* t = jsonf::find(j, "training")) {
    SC_ASSIGN_OR_RETURN(batch_given, parse_training(*t, &job.training));
  }
  SC_ASSIGN_OR_RETURN(job.hardware, hardware_preset("h100"));
  if (const Json* h = jsonf::find(j, "hardware")) {
    SC_ASSIGN_OR_RETURN(job.hardware, parse_hardware_section(*h, "hardware"));
  }
  if (const Json* n = jsonf::find(j, "network")) {
    SC_ASSIGN_OR_RETURN(job.network, parse_network_section(*n, "network"));
  }

  // Both factors are capped at 2^20, so these products fit int64.
  // Resolved defaults: expert TP follows tp, the sharding group is all of dp x cp.
  if (job.parallel.expert_tp == 0) job.parallel.expert_tp = job.parallel.tp;
  if (job.parallel.shard_group == 0) job.parallel.shard_group = job.parallel.dp * job.parallel.cp;
  if (!batch_given) job.training.global_batch_size = job.parallel.dp * job.training.micro_batch_size;
  if (job.model.max_positions == 0) job.model.max_positions = job.training.seq_len;
  // Each degree was capped at 2^20 when parsed: the product of four fits
  // in 128 bits; a mismatch is reported before validate_job's cap.
  const __int128 wide = static_cast<__int128>(job.parallel.dp) * job.parallel.tp * job.parallel.pp * job.parallel.cp;
  const int64_t product = wide > INT64_MAX ? INT64_MAX : static_cast<int64_t>(wide);
  if (world_size != 0 && world_size != product) {
    return make_error(ErrorCode::kWorldSizeMismatch,
                      "world_size (" + std::to_string(world_size) + ") != dp (" +
                      std::to_string(job.parallel.dp) + ") x tp (" + std::to_string(job.parallel.tp) +
                      ") x pp (" + std::to_string(job.parallel.pp) + ") x cp (" + std::to_string(job.parallel.cp) +
                      ") = " + std::to_string(product),
                      "parallel.world_size");
  }
  SC_RETURN_IF_ERROR(validate_job(job));
  return job;
}

}  // namespace sc
