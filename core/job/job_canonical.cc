// job_to_canonical_json: the fully resolved job, every field explicit.
// nlohmann objects are std::map-backed, so keys come out sorted; doubles
// are printed shortest-round-trip. parse_job accepts this output back and
// returns the same Job (tested).
#include "job/job_internal.h"

namespace sc {

std::string job_to_canonical_json(const Job& job) {
  using jsonf::Json;
  using namespace job_internal;
  const ModelConfig& m = job.model;
  const TrainingConfig& t = job.training;
  const HardwareProfile& hw = job.hardware;
  Json model = {
      {"name", m.name},
      {"num_layers", m.num_layers},
      {"hidden", m.hidden},
      {"num_heads", m.num_heads},
      {"num_kv_heads", m.num_kv_heads},
      {"head_dim", m.head_dim},
      {"ffn_hidden", m.ffn_hidden},
      {"vocab", m.vocab},
      {"max_positions", m.max_positions},
      {"norm", norm_name(m.norm)},
      {"mlp", mlp_name(m.mlp)},
      {"position", position_name(m.position)},
      {"tied_embeddings", m.tied_embeddings},
      {"linear_bias", m.linear_bias},
      {"dropout", m.dropout},
      {"flash_attention", m.flash_attention},
      {"num_experts", m.num_experts},
      {"experts_per_token", m.experts_per_token},
      {"moe_ffn_hidden", m.moe_ffn_hidden},
      {"shared_experts", m.shared_experts},
      {"first_dense_layers", m.first_dense_layers},
      {"capacity_factor", m.capacity_factor},
      {"router_bias", m.router_bias},
      {"q_lora_rank", m.q_lora_rank},
      {"kv_lora_rank", m.kv_lora_rank},
      {"qk_rope_head_dim", m.qk_rope_head_dim},
      {"v_head_dim", m.v_head_dim},
  };
  // Only models that use them carry these (older jobs' canonical JSON is unchanged).
  if (m.qkv_bias) model["qkv_bias"] = true;
  if (m.qk_norm) model["qk_norm"] = true;
  if (m.sliding_window > 0) model["sliding_window"] = m.sliding_window;
  if (m.window_pattern > 0) model["window_pattern"] = m.window_pattern;
  if (m.sandwich_norms) model["sandwich_norms"] = true;
  if (m.shared_expert_gate) model["shared_expert_gate"] = true;
  if (m.post_norms) model["post_norms"] = true;
  if (m.qk_norm_across_heads) model["qk_norm_across_heads"] = true;
  if (m.rotary_dim > 0) model["rotary_dim"] = m.rotary_dim;
  if (m.window_first_layer > 0) model["window_first_layer"] = m.window_first_layer;
  if (m.moe_layer_step > 0) model["moe_layer_step"] = m.moe_layer_step;
  if (!m.dense_layers.empty()) model["dense_layers"] = m.dense_layers;
  if (m.mtp_num_layers > 0) model["mtp_num_layers"] = m.mtp_num_layers;
  if (m.attn_softcap > 0) model["attn_softcap"] = m.attn_softcap;
  if (m.final_softcap > 0) model["final_softcap"] = m.final_softcap;
  if (m.embedding_multiplier != 1) model["embedding_multiplier"] = m.embedding_multiplier;
  if (m.residual_multiplier != 1) model["residual_multiplier"] = m.residual_multiplier;
  if (m.logit_multiplier != 1) model["logit_multiplier"] = m.logit_multiplier;
  if (m.is_hybrid()) {  // only hybrid models carry these (older jobs' canonical JSON is unchanged)
    model["hybrid_pattern"] = m.hybrid_pattern;
    model["mamba_heads"] = m.mamba_heads;
    model["mamba_head_dim"] = m.mamba_head_dim;
    model["mamba_groups"] = m.mamba_groups;
    model["mamba_state"] = m.mamba_state;
    model["mamba_conv_kernel"] = m.mamba_conv_kernel;
  }
  if (m.has_mamba1()) {  // Mamba-1 models only
    model["mamba1_inner"] = m.mamba1_inner;
    model["mamba1_dt_rank"] = m.mamba1_dt_rank;
    model["mamba1_dt_bc_norms"] = m.mamba1_dt_bc_norms;
  }
  Json parallel = {
      {"dp", job.parallel.dp},
      {"tp", job.parallel.tp},
      {"pp", job.parallel.pp},
      {"cp", job.parallel.cp},
      {"cp_algorithm", job.parallel.cp_algorithm},
      {"virtual_stages", job.parallel.virtual_stages},
      {"zero", job.parallel.zero},
      {"pipeline_layout", job.parallel.pipeline_layout},
      {"order", job.parallel.order},
      {"sequence_parallel", job.parallel.sequence_parallel},
      {"ep", job.parallel.ep},
      {"expert_tp", job.parallel.expert_tp_degree()},
      {"shard_group", job.parallel.shard_degree()},
      {"world_size", job.parallel.world_size()},
  };
  // Only when set (older jobs' canonical JSON is unchanged).
  if (job.parallel.moe_dispatcher != "alltoall") parallel["moe_dispatcher"] = job.parallel.moe_dispatcher;
  if (job.parallel.moe_imbalance != 1.0) parallel["moe_imbalance"] = job.parallel.moe_imbalance;
  Json training = {
      {"seq_len", t.seq_len},
      {"micro_batch_size", t.micro_batch_size},
      {"global_batch_size", t.global_batch_size},
      {"dtype", dtype_name(t.dtype)},
      {"grad_reduce_dtype", dtype_name(t.grad_reduce_dtype)},
      {"dp_bucket_mb", t.dp_bucket_mb},
      {"optimizer", optimizer_name(t.optimizer)},
      {"optimizer_bytes_per_param", t.optimizer_bytes_per_param},
      {"schedule", schedule_name(t.schedule)},
      {"recompute", recompute_name(t.recompute)},
  };
  // The overlap options only when set (all default to false, Megatron-LM's
  // defaults): a job without them keeps its canonical form and config hash.
  if (t.tp_comm_overlap) training["tp_comm_overlap"] = true;
  if (t.overlap_grad_reduce) training["overlap_grad_reduce"] = true;
  if (t.overlap_param_gather) training["overlap_param_gather"] = true;
  // overlap_p2p_comm defaults to true (Megatron-LM's): written only when off.
  if (!t.overlap_p2p_comm) training["overlap_p2p_comm"] = false;
  if (t.moe_shared_expert_overlap) training["moe_shared_expert_overlap"] = true;
  if (t.moe_pad_expert_input_to_capacity) training["moe_pad_expert_input_to_capacity"] = true;
  // Defaults to true: written only when off (hashes of jobs without it stay).
  if (!t.cross_entropy_loss_fusion) training["cross_entropy_loss_fusion"] = false;
  // Written only when on: archives of jobs without them stay byte-identical.
  if (t.overlap_moe_expert_parallel_comm) training["overlap_moe_expert_parallel_comm"] = true;
  if (t.delay_wgrad_compute) training["delay_wgrad_compute"] = true;
  // Only when set: jobs without FP8 keep their canonical text and hash.
  if (t.fp8_recipe != Fp8Recipe::kNone) training["fp8_recipe"] = fp8_recipe_name(t.fp8_recipe);
  if (t.fp8_params) training["fp8_params"] = true;  // only when set, as above
  // Only when set: jobs without it keep their canonical text and hash.
  if (t.recompute_modules != 0) {
    Json mods = Json::array();
    for (size_t k = 0; k < kRecomputeModuleCount; ++k)
      if (t.recompute_modules & (1u << k)) mods.push_back(kRecomputeModules[k]);
    training["recompute_modules"] = mods;
  }
  Json hardware = {
      {"name", hw.name},
      {"peak_flops_fp32", hw.peak_flops_fp32},
      {"peak_flops_tf32", hw.peak_flops_tf32},
      {"peak_flops_bf16", hw.peak_flops_bf16},
      {"peak_flops_fp8", hw.peak_flops_fp8},
      {"mem_bandwidth", hw.mem_bandwidth},
      {"memory_bytes", hw.memory_bytes},
      {"intra_node_bw", hw.intra_node_bw},
      {"inter_node_bw", hw.inter_node_bw},
      {"gpus_per_node", hw.gpus_per_node},
      {"compute_efficiency", hw.compute_efficiency},
      {"memory_efficiency", hw.memory_efficiency},
      {"cost_model", cost_model_name(hw.cost_model)},
      {"sm_count", hw.sm_count},
      {"gemm_efficiency", hw.gemm_efficiency},
      {"attention_efficiency", hw.attention_efficiency},
      {"attention_bwd_efficiency", hw.attention_bwd_efficiency},
      {"hbm_efficiency", hw.hbm_efficiency},
      {"kernel_floor_micros", hw.kernel_floor_micros},
  };
  // FP4 throughput only where the job computes at it (fp4 weights): the
  // other jobs' canonical text and hash stay as before the field existed.
  if (job.inference() && dtype_is_fp4(job.serving.weights_dtype)) hardware["peak_flops_fp4"] = hw.peak_flops_fp4;
  // The measured constants only where the job's kernels use them (FP8
  // GEMMs; a serving job's skinny GEMMs), so other jobs' canonical text and
  // hash stay as before the fields existed.
  const bool fp8_gemms = t.fp8_recipe != Fp8Recipe::kNone ||
                         (job.inference() && job.serving.weights_dtype == DType::kFP8);
  if (fp8_gemms) hardware["fp8_gemm_speedup"] = hw.fp8_gemm_speedup;
  // The fitted FP8 training share only where a training job runs FP8 GEMMs:
  // other jobs' canonical text and hash stay as before the field existed.
  if (t.fp8_recipe != Fp8Recipe::kNone && !job.inference())
    hardware["fp8_training_gemm_efficiency"] = hw.fp8_training_gemm_efficiency;
  if (job.inference()) {
    hardware["skinny_hbm_efficiency"] = hw.skinny_hbm_efficiency;
    hardware["skinny_gemm_micros"] = hw.skinny_gemm_micros;
  }
  // Attention's start-up where the profile has one (h100, h200): the
  // others' canonical text and hash stay as before the field existed.
  if (hw.attention_startup_micros > 0) hardware["attention_startup_micros"] = hw.attention_startup_micros;
  // The scan kernels' measured bandwidth only where a training job runs them
  // (Mamba-2 layers) and the profile has it: other jobs' canonical text and
  // hash stay as before the field existed.
  if (!job.inference() && job.model.has_mamba() && hw.ssd_scan_hbm_efficiency > 0)
    hardware["ssd_scan_hbm_efficiency"] = hw.ssd_scan_hbm_efficiency;
  // The expert exchange's fitted network share only where a job has one
  // (MoE over ep > 1): other jobs' canonical text and hash stay as before
  // the field existed.
  if (job.model.is_moe() && job.parallel.ep > 1)
    hardware["ep_scale_out_efficiency"] = hw.ep_scale_out_efficiency;
  // The host's pace only where simulate runs a host timeline (a training
  // job whose MoE dispatcher waits for the device) and the profile has it.
  if (job.dispatcher_syncs_host() && hw.host_sync_micros > 0)
    hardware["host_sync_micros"] = hw.host_sync_micros;
  // DeepEP's pace beside compute only where simulate uses it (a training
  // job exchanging experts with DeepEP) and the profile has one.
  if (!job.inference() && job.model.is_moe() && job.parallel.ep > 1 && job.parallel.moe_dispatcher == "deepep" &&
      hw.dispatcher_overlap_rate < 1)
    hardware["dispatcher_overlap_rate"] = hw.dispatcher_overlap_rate;
  // The host's issue time per node only where given (every preset's is 0)
  // and simulate uses it (training jobs).
  if (!job.inference() && hw.host_launch_micros > 0) hardware["host_launch_micros"] = hw.host_launch_micros;
  Json root = {{"model", model}, {"parallel", parallel}, {"training", training}, {"hardware", hardware}};
  if (job.inference()) serving_canonical(job, &root);  // training jobs' canonical JSON is unchanged
  return root.dump(2, ' ', /*ensure_ascii=*/true);
}

const char* admission_name(SchedulerConfig::Admission a) {
  switch (a) {
    case SchedulerConfig::Admission::kReserve: return "reserve";
    case SchedulerConfig::Admission::kGuaranteed: return "guaranteed";
    case SchedulerConfig::Admission::kGreedy: break;
  }
  return "greedy";
}

const char* recompute_name(Recompute r) {
  switch (r) {
    case Recompute::kNone: return "none";
    case Recompute::kSelective: return "selective";
    case Recompute::kFull: return "full";
  }
  return "none";
}

}  // namespace sc
