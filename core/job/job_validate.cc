// validate_job: ranges of the resolved job plus cross-field constraints
// (divisibility by the parallel degrees, batch arithmetic, work caps).
#include <algorithm>

#include "job/job_internal.h"

namespace sc {
namespace {

using namespace job_internal;
using std::to_string;

Status in_range(int64_t v, int64_t lo, int64_t hi, const char* path) {
  if (v < lo || v > hi) {
    return make_error(ErrorCode::kInvalidArgument,
                      "must be " + (v < lo ? ">= " + to_string(lo) : "<= " + to_string(hi)) +
                      " (got " + to_string(v) + ")", path);
  }
  return ok_status();
}

Status divisible(int64_t n, const char* n_name, int64_t tp, const std::string& hint) {
  if (n % tp == 0) return ok_status();
  return make_error(ErrorCode::kNotDivisible,
                    std::string(n_name) + " (" + to_string(n) + ") is not divisible by tp (" +
                    to_string(tp) + ")" + hint, "parallel.tp");
}

// The largest single op one rank runs for one micro-batch, in FLOPs and
// bytes, bounded from above (tp-sharded ops divided by tp). Computed in
// double so that the check itself cannot overflow.
Status check_work(const Job& job) {
  const ModelConfig& m = job.model;
  double tp = double(job.parallel.tp);
  double tokens = double(job.training.micro_batch_size) * double(job.training.seq_len);
  double s = double(job.training.seq_len);
  double h = double(m.hidden), ad = double(m.num_heads) * double(m.head_dim);
  if (m.is_moe()) {
    // One rank's expert GEMM: all tokens routed to its experts, capacity-padded.
    const double etp = double(job.parallel.expert_tp_degree());
    const double expert_tokens = tokens * double(m.experts_per_token) * std::max(1.0, m.capacity_factor) * etp;
    const double w = double(m.moe_ffn_hidden) * (m.gated_mlp() ? 2 : 1) / etp;
    const double f = 2 * expert_tokens * h * w;
    if (f > limits::kMaxOpWork)
      return make_error(ErrorCode::kInvalidArgument,
                        jsonf::cap_message("one rank's expert GEMM of one micro-batch (FLOPs)", f, limits::kMaxOpWork) +
                            " (per-node counts must fit int64); lower training.seq_len or training.micro_batch_size",
                        "training");
  }
  double widest = std::max({double(m.ffn_hidden) * (m.gated_mlp() ? 2 : 1),
                            double(m.vocab), ad + 2.0 * double(m.num_kv_heads) * double(m.head_dim), h});
  double gemm_flops = 2 * tokens * h * widest / tp;
  double attn_flops = 2 * tokens * s * ad / tp;                   // QK^T (and PV)
  double score_bytes = 4 * tokens * s * double(m.num_heads) / tp;  // fp32 scores
  double worst = std::max({gemm_flops, attn_flops, score_bytes});
  if (worst <= limits::kMaxOpWork) return ok_status();
  return make_error(ErrorCode::kInvalidArgument,
                    jsonf::cap_message("the largest op of one micro-batch on one rank (FLOPs or bytes)",
                                       worst, limits::kMaxOpWork) +
                    " (per-node counts must fit int64); lower training.seq_len or "
                    "training.micro_batch_size, or raise parallel.tp", "training");
}

}  // namespace

// Pipeline stages, virtual stages, the layer layout and the schedule.
static Status validate_pipeline(const Job& job) {
  const auto& p = job.parallel;
  const auto& t = job.training;
  const int64_t L = job.model.num_layers, chunks = p.pp * p.virtual_stages;
  if (chunks > L + 2 || (chunks > L && p.pipeline_layout.empty()))
    return make_error(ErrorCode::kInvalidArgument,
                      "pp (" + to_string(p.pp) + ") x virtual_stages (" + to_string(p.virtual_stages) + ") = " +
                      to_string(chunks) + " stages for " + to_string(L) + " layers: every stage needs a layer",
                      "parallel.pp");
  if (!p.pipeline_layout.empty()) {
    if (static_cast<int64_t>(p.pipeline_layout.size()) != chunks)
      return make_error(ErrorCode::kInvalidArgument,
                        "has " + to_string(int64_t(p.pipeline_layout.size())) + " entries; needs pp x virtual_stages = " +
                            to_string(chunks), "parallel.pipeline_layout");
    int64_t sum = 0;
    for (int64_t n : p.pipeline_layout) sum += n;
    // Only the first and the last virtual stage may hold no layer (Llama 3's
    // layout: the embedding alone, the output layer and loss alone).
    for (size_t k = 1; k + 1 < p.pipeline_layout.size(); ++k)
      if (p.pipeline_layout[k] == 0)
        return make_error(ErrorCode::kInvalidArgument,
                          "entry " + to_string(int64_t(k)) +
                              " is 0; only the first and the last virtual stage may hold no layer",
                          "parallel.pipeline_layout");
    if (sum != L)
      return make_error(ErrorCode::kInvalidArgument,
                        "sums to " + to_string(sum) + " layers; the model has " + to_string(L),
                        "parallel.pipeline_layout");
  } else if (L % chunks != 0) {
    return make_error(ErrorCode::kNotDivisible,
                      "num_layers (" + to_string(L) + ") is not divisible by pp x virtual_stages (" + to_string(chunks) +
                          "); give parallel.pipeline_layout for an uneven split", "parallel.pp");
  }
  const int64_t m = t.num_micro_batches(p);
  if (p.virtual_stages > 1 && t.schedule != Schedule::kInterleaved)
    return make_error(ErrorCode::kInvalidArgument,
                      "virtual_stages > 1 needs the interleaved-1f1b schedule (got " +
                          std::string(schedule_name(t.schedule)) + ")", "training.schedule");
  if (t.schedule == Schedule::kInterleaved) {
    // With one stage the chunks would pass activations from rank r to rank
    // r itself (send/recv with peer = self), which ASTRA-sim cannot match.
    if (p.pp < 2)
      return make_error(ErrorCode::kInvalidArgument,
                        "interleaved-1f1b needs pp >= 2 (got pp 1: its model chunks would send to and receive from "
                        "the same rank); use 1f1b, or raise parallel.pp",
                        "parallel.pp");
    if (p.virtual_stages < 2)
      return make_error(ErrorCode::kInvalidArgument, "interleaved-1f1b needs virtual_stages >= 2",
                        "parallel.virtual_stages");
    if (m % p.pp != 0)
      return make_error(ErrorCode::kNotDivisible,
                        "interleaved-1f1b needs the micro-batch count (" + to_string(m) +
                            " = global_batch_size / (dp x micro_batch_size)) to be a multiple of pp (" +
                            to_string(p.pp) + ")", "training.global_batch_size");
  }
  // Pipeline tags encode (micro-batch, direction, chunk) in an int32.
  if (static_cast<__int128>(m) * 2 * p.pp * p.virtual_stages > INT32_MAX)
    return make_error(ErrorCode::kInvalidArgument,
                      "too many micro-batches (" + to_string(m) + ") for int32 message tags",
                      "training.global_batch_size");
  return ok_status();
}

// Expert parallelism (MoE models) and the ZeRO sharding group (HSDP).
static Status validate_experts_and_sharding(const Job& job) {
  const auto& p = job.parallel;
  const ModelConfig& m = job.model;
  SC_RETURN_IF_ERROR(in_range(p.ep, 1, limits::kMaxDegree, "parallel.ep"));
  SC_RETURN_IF_ERROR(in_range(p.expert_tp_degree(), 1, limits::kMaxDegree, "parallel.expert_tp"));
  // The busiest of ep expert ranks holds at most all the tokens: ep x the mean.
  if (!(p.moe_imbalance >= 1.0 && p.moe_imbalance <= static_cast<double>(p.ep)))
    return make_error(ErrorCode::kInvalidArgument,
                      "moe_imbalance (" + jsonf::Json(p.moe_imbalance).dump() + ") must be >= 1 and <= ep (" +
                          to_string(p.ep) + "): the busiest expert rank's tokens over the mean",
                      "parallel.moe_imbalance");
  const int64_t etp = p.expert_tp_degree(), stage_ranks = p.tp * p.cp * p.dp;
  if (!m.is_moe()) {
    if (p.ep > 1)
      return make_error(ErrorCode::kInvalidArgument,
                        "ep (" + to_string(p.ep) + ") needs a mixture-of-experts model (model.num_experts is 0)",
                        "parallel.ep");
    if (etp != p.tp)
      return make_error(ErrorCode::kInvalidArgument,
                        "expert_tp (" + to_string(etp) + ") differs from tp (" + to_string(p.tp) +
                            ") but the model has no experts (model.num_experts is 0)", "parallel.expert_tp");
    // The MoE layers' options on a dense model would do nothing (but change
    // the job's hash): refused like ep and expert_tp.
    if (p.moe_dispatcher != "alltoall")
      return make_error(ErrorCode::kInvalidArgument,
                        "moe_dispatcher \"" + p.moe_dispatcher +
                            "\" moves tokens to experts, but the model has none (model.num_experts is 0)",
                        "parallel.moe_dispatcher");
    if (job.training.moe_shared_expert_overlap)
      return make_error(ErrorCode::kInvalidArgument,
                        "overlaps the shared experts with the expert exchange, but the model has no experts "
                        "(model.num_experts is 0)",
                        "training.moe_shared_expert_overlap");
    if (job.training.moe_pad_expert_input_to_capacity)
      return make_error(ErrorCode::kInvalidArgument,
                        "pads the routed experts' inputs, but the model has no experts (model.num_experts is 0)",
                        "training.moe_pad_expert_input_to_capacity");
  } else {
    if (stage_ranks % (etp * p.ep) != 0)
      return make_error(ErrorCode::kNotDivisible,
                        "expert_tp (" + to_string(etp) + ") x ep (" + to_string(p.ep) + ") = " +
                            to_string(etp * p.ep) + " does not divide the ranks of a pipeline stage, tp (" +
                            to_string(p.tp) + ") x cp (" + to_string(p.cp) + ") x dp (" + to_string(p.dp) +
                            ") = " + to_string(stage_ranks) + "; the MoE layers re-divide exactly those ranks",
                        p.expert_tp > 0 && p.expert_tp != p.tp ? "parallel.expert_tp" : "parallel.ep");
    if (m.num_experts % p.ep != 0)
      return make_error(ErrorCode::kNotDivisible,
                        "num_experts (" + to_string(m.num_experts) + ") is not divisible by ep (" +
                            to_string(p.ep) + ")", "parallel.ep");
    if (m.moe_ffn_hidden % etp != 0)
      return make_error(ErrorCode::kNotDivisible,
                        "moe_ffn_hidden (" + to_string(m.moe_ffn_hidden) + ") is not divisible by expert_tp (" +
                            to_string(etp) + ")", "parallel.expert_tp");
    if ((m.shared_experts * m.moe_ffn_hidden) % p.tp != 0)
      return make_error(ErrorCode::kNotDivisible,
                        "the shared experts' width (" + to_string(m.shared_experts * m.moe_ffn_hidden) +
                            ") is not divisible by tp (" + to_string(p.tp) + ")", "parallel.tp");
    if (p.tp > 1 && !p.sequence_parallel && !job.inference())  // inference: experts over tp (job_serving.cc)
      return make_error(ErrorCode::kInvalidArgument,
                        "a mixture-of-experts model with tp > 1 (" + to_string(p.tp) +
                            ") needs sequence_parallel, as Megatron-LM requires (each tp rank routes its own "
                            "sequence shard)", "parallel.sequence_parallel");
  }
  const int64_t dpcp = p.dp * p.cp, shard = p.shard_degree();
  if (shard < 1 || shard > dpcp || dpcp % shard != 0)
    return make_error(ErrorCode::kNotDivisible,
                      "shard_group (" + to_string(shard) + ") must divide the data-parallel ranks dp (" +
                          to_string(p.dp) + ") x cp (" + to_string(p.cp) + ") = " + to_string(dpcp),
                      "parallel.shard_group");
  if (shard != dpcp && p.zero == 0)
    return make_error(ErrorCode::kInvalidArgument,
                      "shard_group (" + to_string(shard) + ") needs ZeRO/FSDP sharding (parallel.zero >= 1)",
                      "parallel.shard_group");
  return ok_status();
}

static Status validate_layout(const Job& job);

// Megatron-Core's batch-level EP all-to-all overlap: what TransformerConfig
// (__post_init__) and arguments.py refuse, each an error naming the field.
static Status validate_ep_a2a_overlap(const Job& job) {
  const TrainingConfig& t = job.training;
  const ParallelConfig& p = job.parallel;
  const std::string key = "training.overlap_moe_expert_parallel_comm";
  if (t.delay_wgrad_compute && !t.overlap_moe_expert_parallel_comm)
    return make_error(ErrorCode::kInvalidArgument,
                      "true needs training.overlap_moe_expert_parallel_comm true (Megatron-Core: "
                      "overlap_moe_expert_parallel_comm must be enabled when enabling delay_wgrad_compute)",
                      "training.delay_wgrad_compute");
  if (!t.overlap_moe_expert_parallel_comm) return ok_status();
  if (!job.model.is_moe() || p.ep < 2)
    return make_error(ErrorCode::kInvalidArgument,
                      "true needs a mixture-of-experts model with parallel.ep > 1 (got ep " + to_string(p.ep) +
                          (job.model.is_moe() ? "" : ", model.num_experts 0") +
                          "; Megatron-Core: only supported with expert model parallelism)",
                      key);
  if (p.moe_dispatcher == "allgather")
    return make_error(ErrorCode::kInvalidArgument,
                      "true needs parallel.moe_dispatcher alltoall or deepep (got allgather; Megatron-Core: "
                      "supported with alltoall/flex token dispatcher)",
                      key);
  if (p.pp > 1 && (t.schedule != Schedule::kInterleaved || p.virtual_stages < 2))
    return make_error(ErrorCode::kInvalidArgument,
                      "true with pp > 1 (" + to_string(p.pp) + ") needs the interleaved-1f1b schedule with "
                          "virtual_stages >= 2 (got " + std::string(schedule_name(t.schedule)) + ", virtual_stages " +
                          to_string(p.virtual_stages) + "; Megatron-Core: virtual_pipeline_model_parallel_size "
                          "must be specified when pipeline_model_parallel_size > 1)",
                      key);
  if (p.pp == 1 && t.schedule == Schedule::kZeroBubble)
    return make_error(ErrorCode::kInvalidArgument,
                      "true does not combine with the zero-bubble schedule (Megatron-Core's combined 1F1B step "
                      "runs a whole backward; use 1f1b)",
                      key);
  if (t.recompute == Recompute::kFull)
    return make_error(ErrorCode::kInvalidArgument,
                      "true does not combine with training.recompute full (Megatron-Core: disable full "
                      "recomputation when enabling overlap_moe_expert_parallel_comm)",
                      key);
  if (t.dtype != DType::kBF16 && t.dtype != DType::kFP16)
    return make_error(ErrorCode::kInvalidArgument,
                      std::string("true needs training.dtype bf16 or fp16 (got ") + dtype_name(t.dtype) +
                          "; Megatron-Core: only supported with bf16 or fp16 model)",
                      key);
  if (t.moe_shared_expert_overlap)
    return make_error(ErrorCode::kInvalidArgument,
                      "true does not combine with training.moe_shared_expert_overlap true (Megatron-Core: disable "
                      "moe_shared_expert_overlap when enabling overlap_moe_expert_parallel_comm)",
                      key);
  return ok_status();
}

// FP8 training (docs/hardware.md, "FP8 training"): a recipe on BF16/FP16
// activations, never a bare fp8 dtype; only on FP8 tensor cores; MXFP8 only
// where the hardware has MX block scaling (Blackwell; the Hopper presets
// h100 and h200 have none, a custom profile is taken at its word).
static Status validate_fp8_training(const Job& job) {
  if (job.inference()) return ok_status();  // serving's fp8 weights set training.dtype (job_serving.cc)
  const TrainingConfig& t = job.training;
  if (t.dtype == DType::kFP8) {
    return make_error(ErrorCode::kInvalidArgument,
                      "fp8 is not a training dtype: FP8 training keeps activations, attention, norms, embedding "
                      "and output layer in bf16 and runs the linear layers' GEMMs at FP8 under a scaling recipe; "
                      "write \"dtype\": \"bf16\", \"fp8_recipe\": \"delayed\" (or tensorwise, blockwise, mxfp8)",
                      "training.dtype");
  }
  if (t.fp8_recipe == Fp8Recipe::kNone) {
    if (t.fp8_params)
      return make_error(ErrorCode::kInvalidArgument,
                        "fp8_params keeps the linear layers' weights in FP8 and needs an FP8 recipe "
                        "(training.fp8_recipe is none)",
                        "training.fp8_params");
    return ok_status();
  }
  const std::string recipe = fp8_recipe_name(t.fp8_recipe);
  if (t.dtype != DType::kBF16 && t.dtype != DType::kFP16) {
    return make_error(ErrorCode::kInvalidArgument,
                      "FP8 recipe \"" + recipe + "\" needs bf16 or fp16 activations (training.dtype is " +
                          dtype_name(t.dtype) + ")",
                      "training.fp8_recipe");
  }
  if (!(job.hardware.peak_flops_fp8 > 0)) {
    return make_error(ErrorCode::kUnsupported,
                      "FP8 recipe \"" + recipe + "\" needs FP8 tensor cores; hardware \"" + job.hardware.name +
                          "\" has none (hardware.peak_flops_fp8 is 0)",
                      "training.fp8_recipe");
  }
  const bool hopper = job.hardware.name == "h100" || job.hardware.name == "h200" || job.hardware.name == "h800";
  if (t.fp8_recipe == Fp8Recipe::kMxfp8 && hopper) {
    return make_error(ErrorCode::kUnsupported,
                      "FP8 recipe \"mxfp8\" needs tensor cores with MX block scaling (Blackwell: b200); hardware \"" +
                          job.hardware.name + "\" has none: use delayed, tensorwise or blockwise",
                      "training.fp8_recipe");
  }
  return ok_status();
}

Status validate_job(const Job& job) {
  if (job.inference()) return validate_serving(job, validate_layout);
  return validate_layout(job);
}

// The training checks; for an inference job, of one pool's layout.
static Status validate_layout(const Job& job) {
  const ParallelConfig& p = job.parallel;
  const TrainingConfig& t = job.training;
  const ModelConfig& m = job.model;
  SC_RETURN_IF_ERROR(validate_model(m, "model"));
  SC_RETURN_IF_ERROR(in_range(p.dp, 1, limits::kMaxDegree, "parallel.dp"));
  SC_RETURN_IF_ERROR(in_range(p.tp, 1, limits::kMaxDegree, "parallel.tp"));
  SC_RETURN_IF_ERROR(in_range(p.pp, 1, limits::kMaxDegree, "parallel.pp"));
  SC_RETURN_IF_ERROR(in_range(p.virtual_stages, 1, limits::kMaxDegree, "parallel.virtual_stages"));
  SC_RETURN_IF_ERROR(in_range(p.zero, 0, 3, "parallel.zero"));
  SC_RETURN_IF_ERROR(in_range(p.cp, 1, limits::kMaxDegree, "parallel.cp"));
  const __int128 world = static_cast<__int128>(p.dp) * p.tp * p.pp * p.cp;  // each <= 2^20: fits 128 bits
  if (world > limits::kMaxDegree) {
    return make_error(ErrorCode::kInvalidArgument,
                      "world size dp (" + to_string(p.dp) + ") x tp (" + to_string(p.tp) + ") x pp (" +
                      to_string(p.pp) + ") x cp (" + to_string(p.cp) + ") = " +
                      (world <= INT64_MAX ? to_string(static_cast<int64_t>(world)) : std::string("more than 2^63")) +
                      " exceeds the cap of " +
                      to_string(limits::kMaxDegree) + " ranks", "parallel");
  }
  SC_RETURN_IF_ERROR(validate_model_parallel(m, p.tp, p.cp));  // Mamba-2: heads/groups over tp, no cp
  SC_RETURN_IF_ERROR(in_range(t.seq_len, 1, limits::kMaxSeqLen, "training.seq_len"));
  SC_RETURN_IF_ERROR(in_range(t.micro_batch_size, 1, limits::kMaxMicroBatch, "training.micro_batch_size"));
  SC_RETURN_IF_ERROR(in_range(t.global_batch_size, 1, limits::kMaxGlobalBatch, "training.global_batch_size"));
  SC_RETURN_IF_ERROR(in_range(t.optimizer_bytes_per_param, 0, limits::kMaxOptimizerBytes,
                              "training.optimizer_bytes_per_param"));
  if (!(t.dp_bucket_mb > 0 && t.dp_bucket_mb <= limits::kMaxBucketMb)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "must be > 0 and <= " + to_string(int64_t(limits::kMaxBucketMb)) + " MiB (got " +
                      jsonf::Json(t.dp_bucket_mb).dump() + ")", "training.dp_bucket_mb");
  }
  if (t.recompute_modules != 0) {
    if (t.recompute != Recompute::kSelective)
      return make_error(ErrorCode::kInvalidArgument,
                        std::string("lists the modules selective recomputation redoes, but training.recompute is \"") +
                            recompute_name(t.recompute) + "\": set it to \"selective\" (Megatron-Core: "
                            "--recompute-granularity selective --recompute-modules ...)",
                        "training.recompute_modules");
    if ((t.recompute_modules & kRecomputeMlaUpProj) && !m.is_mla())
      return make_error(ErrorCode::kInvalidArgument,
                        "mla_up_proj recomputes multi-head latent attention's up projections; model \"" + m.name +
                            "\" has none (model.kv_lora_rank is 0)",
                        "training.recompute_modules");
    // Megatron-Core's own refusals (transformer_config.py at d98e8a6).
    if ((t.recompute_modules & kRecomputeMoe) && t.overlap_moe_expert_parallel_comm)
      return make_error(ErrorCode::kInvalidArgument,
                        "moe cannot be recomputed with training.overlap_moe_expert_parallel_comm (Megatron-Core: "
                        "disable moe in recompute_modules when enabling overlap_moe_expert_parallel_comm)",
                        "training.recompute_modules");
    if ((t.recompute_modules & kRecomputeSharedExperts) && t.moe_shared_expert_overlap && m.shared_experts > 0)
      return make_error(ErrorCode::kInvalidArgument,
                        "shared_experts cannot be recomputed with training.moe_shared_expert_overlap (Megatron-Core: "
                        "shared_experts recompute cannot work with --moe-shared-expert-overlap)",
                        "training.recompute_modules");
    if ((t.recompute_modules & (kRecomputeMoeAct | kRecomputeLayernorm)) && t.fp8_recipe == Fp8Recipe::kDelayed)
      return make_error(ErrorCode::kInvalidArgument,
                        "moe_act and layernorm recomputation under FP8 needs current or block scaling: "
                        "training.fp8_recipe is \"delayed\" (Megatron-Core: delayed scaling does not support moe_act "
                        "and layernorm recompute for fp8)",
                        "training.recompute_modules");
  }
  if (t.overlap_param_gather && !t.overlap_grad_reduce) {  // Megatron-LM asserts the same
    return make_error(ErrorCode::kInvalidArgument,
                      "true needs training.overlap_grad_reduce true (Megatron-LM: --overlap-param-gather "
                      "requires --overlap-grad-reduce)", "training.overlap_param_gather");
  }
  // Megatron-Core (TransformerConfig): with shared experts, the overlap
  // works with the alltoall or flex (DeepEP) dispatcher only.
  if (t.moe_shared_expert_overlap && m.shared_experts > 0 && p.moe_dispatcher == "allgather") {
    return make_error(ErrorCode::kInvalidArgument,
                      "true needs parallel.moe_dispatcher alltoall or deepep (got allgather; Megatron-Core: "
                      "moe_shared_expert_overlap only works with alltoall or flex token dispatcher)",
                      "training.moe_shared_expert_overlap");
  }
  if (!job.inference()) SC_RETURN_IF_ERROR(validate_ep_a2a_overlap(job));
  if (t.dtype == DType::kInt64 || t.dtype == DType::kInt32 || t.dtype == DType::kUInt8) {
    return make_error(ErrorCode::kInvalidArgument,
                      std::string("must be a floating-point dtype (got ") + dtype_name(t.dtype) + ")",
                      "training.dtype");
  }
  SC_RETURN_IF_ERROR(validate_fp8_training(job));
  if (t.grad_reduce_dtype != DType::kFP32 && t.grad_reduce_dtype != DType::kBF16 &&
      t.grad_reduce_dtype != DType::kFP16) {
    return make_error(ErrorCode::kInvalidArgument,
                      std::string("must be fp32, bf16 or fp16 (got ") + dtype_name(t.grad_reduce_dtype) + ")",
                      "training.grad_reduce_dtype");
  }
  SC_RETURN_IF_ERROR(validate_hardware(job.hardware, "hardware"));

  // Megatron shards heads, kv heads, the MLP width and the vocabulary over tp.
  SC_RETURN_IF_ERROR(divisible(m.num_heads, "num_heads", p.tp, ""));
  SC_RETURN_IF_ERROR(divisible(m.num_kv_heads, "num_kv_heads", p.tp,
                               "; kv-head replication is not modelled: use tp <= num_kv_heads"));
  SC_RETURN_IF_ERROR(divisible(m.ffn_hidden, "ffn_hidden", p.tp, ""));
  if (m.vocab % p.tp != 0) {
    int64_t unit = 128 * p.tp;  // Megatron's --make-vocab-size-divisible-by 128, times tp
    int64_t padded = (m.vocab + unit - 1) / unit * unit;
    SC_RETURN_IF_ERROR(divisible(m.vocab, "vocab", p.tp,
                                 "; pad it as Megatron does (a multiple of 128 x tp): set model.vocab to " +
                                 to_string(padded)));
  }
  int64_t per_step = p.dp * t.micro_batch_size;  // <= 2^40
  if (t.global_batch_size % per_step != 0) {
    return make_error(ErrorCode::kNotDivisible,
                      "global_batch_size (" + to_string(t.global_batch_size) +
                      ") is not divisible by dp (" + to_string(p.dp) + ") x micro_batch_size (" +
                      to_string(t.micro_batch_size) + ") = " + to_string(per_step),
                      "training.global_batch_size");
  }
  if (p.sequence_parallel && t.seq_len % p.tp != 0) {
    return make_error(ErrorCode::kNotDivisible,
                      "seq_len (" + to_string(t.seq_len) + ") is not divisible by tp (" + to_string(p.tp) +
                      "), which sequence parallelism requires", "training.seq_len");
  }
  if (p.cp > 1) {
    // Load-balanced causal chunks: 2 cp pieces, rank i holding i and 2cp-1-i.
    if (t.seq_len % (2 * p.cp) != 0)
      return make_error(ErrorCode::kNotDivisible,
                        "seq_len (" + to_string(t.seq_len) + ") is not divisible by 2 x cp (" + to_string(2 * p.cp) +
                            "), which load-balanced context parallelism requires",
                        "parallel.cp");
    // With sequence parallelism each cp chunk is split again over tp.
    if (p.sequence_parallel && (t.seq_len / p.cp) % p.tp != 0)
      return make_error(ErrorCode::kNotDivisible,
                        "seq_len (" + to_string(t.seq_len) + ") / cp (" + to_string(p.cp) + ") = " +
                            to_string(t.seq_len / p.cp) + " is not divisible by tp (" + to_string(p.tp) +
                            "), which sequence parallelism within a context-parallel chunk requires",
                        "parallel.cp");
  }
  if (m.position == PositionKind::kLearned && t.seq_len > m.max_positions) {
    return make_error(ErrorCode::kInvalidArgument,
                      "seq_len (" + to_string(t.seq_len) + ") exceeds the model's learned position table (" +
                      "max_positions = " + to_string(m.max_positions) + "); raise model.max_positions",
                      "training.seq_len");
  }
  SC_RETURN_IF_ERROR(validate_pipeline(job));
  SC_RETURN_IF_ERROR(validate_experts_and_sharding(job));
  return check_work(job);
}

}  // namespace sc
