// Hardware presets and the roofline. Every number is per GPU, dense
// (without 2:4 sparsity: the datasheets' tensor-core figures with sparsity
// halved), decimal units (1 TB/s = 1e12 bytes/s, 80 GB = 80e9 bytes) except
// the memory measured on a lent GPU (h100, h200: what CUDA reports).
// Sources and derivations: docs/hardware.md.
#include "hw/hardware.h"

#include <algorithm>

namespace sc {
namespace {

constexpr double T = 1e12;  // tera
constexpr double G = 1e9;   // giga

// Kernel constants: SMs, GEMM ceiling, flash-attention fractions (forward,
// backward), HBM fraction, launch floor (derivations: docs/hardware.md).
struct KernelConstants { int sms; double gemm, attention, attention_bwd, hbm, floor_us; };

HardwareProfile make(const char* name, double fp32, double tf32, double bf16, double fp8,
                     double hbm, double capacity, double nvlink, double network, KernelConstants k) {
  HardwareProfile hw;
  hw.name = name;
  hw.peak_flops_fp32 = fp32;
  hw.peak_flops_tf32 = tf32;
  hw.peak_flops_bf16 = bf16;
  hw.peak_flops_fp8 = fp8;
  hw.mem_bandwidth = hbm;
  hw.memory_bytes = capacity;
  hw.intra_node_bw = nvlink;
  hw.inter_node_bw = network;
  hw.gpus_per_node = 8;
  hw.sm_count = k.sms;
  hw.gemm_efficiency = k.gemm;
  hw.attention_efficiency = k.attention;
  hw.attention_bwd_efficiency = k.attention_bwd;
  hw.hbm_efficiency = k.hbm;
  hw.kernel_floor_micros = k.floor_us;
  return hw;
}

// The constants measured on a GPU of the kind (docs/hardware.md,
// "Measured on a GPU"): the profiles without them keep 0 (not measured).
HardwareProfile measured(HardwareProfile hw, double fp8_speedup, double skinny_hbm, double skinny_us,
                         double attention_startup_us, double ssd_scan_hbm) {
  hw.fp8_gemm_speedup = fp8_speedup;
  hw.skinny_hbm_efficiency = skinny_hbm;
  hw.skinny_gemm_micros = skinny_us;
  hw.attention_startup_micros = attention_startup_us;
  hw.ssd_scan_hbm_efficiency = ssd_scan_hbm;
  return hw;
}

// An expert exchange across nodes (dispatch and combine; training and
// serving jobs) on DGX-H100's 400 Gb/s ConnectX-7 network: fitted on Megatron-Bridge's three
// Qwen3 235B-A22B runs (ep 32 over four nodes; docs/hardware.md, "Expert
// exchanges across nodes"). h200 and b200 take it (the same NICs).
constexpr double kEpScaleOutEfficiency = 0.72;
// A training job's FP8 GEMMs in whole iterations, as a share of the FP8
// rate measured on isolated GEMMs: fitted on Megatron-Bridge's two FP8 fit
// rows (docs/hardware.md, "FP8 GEMMs in training iterations"). h200 takes
// it (the same SMs and clocks); b200 has no measured FP8 rate and keeps 1.
constexpr double kFp8TrainingGemmEfficiency = 0.90;

// The device's idle time at each device-to-host sync of a dropless MoE
// token dispatcher in training: Megatron-Bridge's published rank-0 Nsight
// profile of Qwen3 30B-A3B at ep 16 with HybridEP shows 1.89 s of idle GPU
// over the step's 3,072 dispatches (48 layers x 64 micro-batches, no
// pipeline): 615 µs each (docs/hardware.md, "The host"). A property of the
// host and its software (Python, PyTorch, Megatron-Core), not of the GPU:
// h200 and b200 take it (DGX hosts of the same kind); the a100 has none
// (no MoE run on it in the checks).
constexpr double kHostSyncMicros = 615;

// The share of its own speed at which DeepEP's dispatch and combine
// progress while a compute kernel runs beside them: Megatron-Bridge's
// rank-0 Nsight profiles of Qwen3 30B-A3B at ep 16 with HybridEP, EP
// overlap off and on (the same exchanges), give the communication kernels
// 8.25 s off and 10.83 s on, 3.96 s of it beside GEMM or attention; at full
// speed elsewhere, the 3.96 s did (8.25 - 10.83 + 3.96) / 3.96 = 0.35 of
// their work (0.26-0.45 over the rounding of the published 0.11%):
// docs/hardware.md, "The dispatcher beside compute". A property of the
// GPU's SMs under these kernels: h200 takes it (the same die); b200 has no
// such profile and keeps 1.
constexpr double kDispatcherOverlapRate = 0.35;

HardwareProfile with_fits(HardwareProfile hw, double fp8_training, double dispatcher_overlap = 1) {
  hw.host_sync_micros = kHostSyncMicros;
  hw.dispatcher_overlap_rate = dispatcher_overlap;
  hw.ep_scale_out_efficiency = kEpScaleOutEfficiency;
  hw.fp8_training_gemm_efficiency = fp8_training;
  return hw;
}

HardwareProfile preset(int i) {
  switch (i) {
    // A100 SXM4 80GB: no FP8. NVLink 3: 600 GB/s total = 300 per direction;
    // DGX A100: one 200 Gb/s HDR InfiniBand port per GPU = 25 GB/s.
    case 0: return make("a100", 19.5 * T, 156 * T, 312 * T, 0, 2039 * G, 80 * G, 300 * G, 25 * G,
                        {108, 0.80, 0.73, 0.73, 0.90, 2.4});
    // H100 SXM5 80GB. NVLink 4: 900 GB/s total = 450 per direction;
    // DGX H100: one 400 Gb/s NDR ConnectX-7 per GPU = 50 GB/s.
    // Measured (docs/hardware.md, "Measured on a GPU"): FP8 GEMMs 1.87x
    // BF16's, skinny GEMMs at 0.83 of HBM after 3.0 µs, decode attention's
    // start-up 4.7 µs, a small kernel 3.5 µs in a CUDA graph (the floor),
    // mamba_ssm's Mamba-2 scan kernels at 0.60 of HBM over their bytes.
    // Memory: what CUDA reports on the lent H100 80GB HBM3 (torch
    // total_memory, 85,017,493,504 bytes = 79.18 GiB; the datasheet's
    // "80 GB" read as 80e9 was 6% short).
    case 1: return with_fits(measured(make("h100", 67 * T, 494.5 * T, 989.5 * T, 1979 * T, 3350 * G, 85017493504.0, 450 * G, 50 * G,
                                 {132, 0.60, 0.75, 0.57, 0.90, 3.5}),
                            1.87, 0.83, 3.0, 4.7, 0.60), kFp8TrainingGemmEfficiency, kDispatcherOverlapRate);
    // H200 SXM 141GB: H100's compute with HBM3e.
    // Measured: FP8 GEMMs 1.85x BF16's, skinny GEMMs at 0.86 of HBM after
    // 3.7 µs, decode attention's start-up 5.5 µs, a small kernel 3.9 µs in
    // a CUDA graph (the floor: whole Llama-3.1-70B decode layers at one
    // sequence, 2026-11-28), the Mamba-2 scan kernels at 0.49 of HBM over
    // their bytes.
    // Memory as CUDA reports it on the lent H200 (150,109,880,320 bytes).
    case 2: return with_fits(measured(make("h200", 67 * T, 494.5 * T, 989.5 * T, 1979 * T, 4800 * G, 150109880320.0, 450 * G, 50 * G,
                                 {132, 0.60, 0.75, 0.57, 0.90, 3.9}),
                            1.85, 0.86, 3.7, 5.5, 0.49), kFp8TrainingGemmEfficiency, kDispatcherOverlapRate);
    // B200 as in HGX/DGX B200 (1000 W): NVLink 5 1.8 TB/s total = 900 per
    // direction; 180 GB per GPU (1,440 GB per 8-GPU system).
    // FP4 (NVFP4/MXFP4) 9 PFLOP/s dense: the board's 144 sparse / 8 / 2.
    case 3: {
      HardwareProfile b200 = make("b200", 75 * T, 1125 * T, 2250 * T, 4500 * T, 8000 * G, 180 * G, 900 * G, 50 * G,
                                  {148, 0.60, 0.75, 0.57, 0.90, 2.4});
      b200.peak_flops_fp4 = 9000 * T;
      return with_fits(b200, 1.0);
    }
    // H800 SXM5 80GB: the H100's die, memory and clocks for NVIDIA's
    // restricted markets with NVLink cut to 400 GB/s total = 200 per
    // direction (the cluster DeepSeek-V3 was trained on; its report,
    // arXiv 2412.19437, gives 8 GPUs a node over NVLink and 400 Gb/s
    // InfiniBand per GPU = 50 GB/s). Nothing measured on an H800: the
    // h100's measured and fitted constants (the same silicon) and its
    // memory as CUDA reports it (the same 80 GB HBM3).
    case 4: {
      HardwareProfile h800 = preset(1);
      h800.name = "h800";
      h800.intra_node_bw = 200 * G;
      return h800;
    }
    default: return HardwareProfile{};
  }
}
constexpr int kNumPresets = 5;

}  // namespace

double HardwareProfile::peak_for(DType dt) const {
  switch (dt) {
    case DType::kFP32: return peak_flops_fp32;
    case DType::kTF32: return peak_flops_tf32;
    case DType::kFP8: return peak_flops_fp8 > 0 ? peak_flops_fp8 : peak_flops_bf16;
    // W4A4 on FP4 tensor cores (a device without them refuses fp4 weights:
    // validate_serving); int4 (W4A16) dequantizes to bf16: the default.
    case DType::kNVFP4:
    case DType::kMXFP4: return peak_flops_fp4 > 0 ? peak_flops_fp4 : peak_flops_bf16;
    case DType::kBF16:
    case DType::kFP16:
    default: return peak_flops_bf16;
  }
}

std::vector<std::string> hardware_names() {
  std::vector<std::string> names;
  for (int i = 0; i < kNumPresets; ++i) names.push_back(preset(i).name);
  std::sort(names.begin(), names.end());
  return names;
}

Result<HardwareProfile> hardware_preset(const std::string& name, const std::string& path) {
  for (int i = 0; i < kNumPresets; ++i) {
    HardwareProfile hw = preset(i);
    if (hw.name == name) return hw;
  }
  std::string list;
  for (const std::string& n : hardware_names()) list += (list.empty() ? "" : ", ") + n;
  return make_error(ErrorCode::kInvalidArgument,
                    "unknown hardware preset \"" + echo_text(name) + "\" (known: " + list + ")", path);
}

const char* cost_model_name(HardwareProfile::CostModel m) {
  return m == HardwareProfile::CostModel::kRoofline ? "roofline" : "kernel";
}

double roofline_micros(const HardwareProfile& hw, DType dt, double flops, double bytes) {
  double compute_rate = hw.peak_for(dt) * hw.compute_efficiency;
  double memory_rate = hw.mem_bandwidth * hw.memory_efficiency;
  double t_compute = compute_rate > 0 && flops > 0 ? flops / compute_rate : 0;
  double t_memory = memory_rate > 0 && bytes > 0 ? bytes / memory_rate : 0;
  return std::max(t_compute, t_memory) * 1e6;
}

}  // namespace sc
