// The job's "hardware" section, its validation, and the enum spellings
// used by the job JSON.
#include "job/job_internal.h"

namespace sc::job_internal {
namespace {

using jsonf::Json;
using jsonf::join;

std::string format(double d) {
  return Json(d).dump();
}

// Upper bounds far above any device (1 EFLOP/s, 1 PB/s, 1 PB); lower
// bounds far below any (1 GFLOP/s, 1 GB/s, 1% of peak). The lower bounds
// keep every duration representable: the largest int64 FLOP or byte count
// at 1e9/s x 0.01 is 9.2e17 µs, below the 2^63 a duration is rounded into.
constexpr double kMaxFlops = 1e18;
constexpr double kMinFlops = 1e9;
constexpr double kMaxBytesPerSecond = 1e15;
constexpr double kMinBytesPerSecond = 1e9;
constexpr double kMaxBytes = 1e15;
constexpr double kMinEfficiency = 0.01;
constexpr double kMaxFloorMicros = 1000;

// `zero_ok`: 0 is accepted besides [lo, hi] (fp8: not supported).
struct Field { const char* key; double HardwareProfile::*member; double lo; bool lo_inclusive; double hi; bool zero_ok = false; };
constexpr Field kFields[] = {
    {"peak_flops_fp32", &HardwareProfile::peak_flops_fp32, kMinFlops, true, kMaxFlops},
    {"peak_flops_tf32", &HardwareProfile::peak_flops_tf32, kMinFlops, true, kMaxFlops},
    {"peak_flops_bf16", &HardwareProfile::peak_flops_bf16, kMinFlops, true, kMaxFlops},
    {"peak_flops_fp8", &HardwareProfile::peak_flops_fp8, kMinFlops, true, kMaxFlops, true},  // 0: none
    {"peak_flops_fp4", &HardwareProfile::peak_flops_fp4, kMinFlops, true, kMaxFlops, true},  // 0: none
    {"mem_bandwidth", &HardwareProfile::mem_bandwidth, kMinBytesPerSecond, true, kMaxBytesPerSecond},
    {"memory_bytes", &HardwareProfile::memory_bytes, 0, false, kMaxBytes},
    {"intra_node_bw", &HardwareProfile::intra_node_bw, kMinBytesPerSecond, true, kMaxBytesPerSecond},
    {"inter_node_bw", &HardwareProfile::inter_node_bw, kMinBytesPerSecond, true, kMaxBytesPerSecond},
    {"compute_efficiency", &HardwareProfile::compute_efficiency, kMinEfficiency, true, 1},
    {"memory_efficiency", &HardwareProfile::memory_efficiency, kMinEfficiency, true, 1},
    // Kernel cost model (optional; a preset's values, else the defaults in
    // hw/hardware.h).
    {"gemm_efficiency", &HardwareProfile::gemm_efficiency, kMinEfficiency, true, 1},
    {"attention_efficiency", &HardwareProfile::attention_efficiency, kMinEfficiency, true, 1},
    {"attention_bwd_efficiency", &HardwareProfile::attention_bwd_efficiency, kMinEfficiency, true, 1},
    {"hbm_efficiency", &HardwareProfile::hbm_efficiency, kMinEfficiency, true, 1},
    {"kernel_floor_micros", &HardwareProfile::kernel_floor_micros, 0, true, kMaxFloorMicros},
    // Measured constants (0: not measured; docs/hardware.md, "Measured on a GPU").
    {"fp8_gemm_speedup", &HardwareProfile::fp8_gemm_speedup, 0.25, true, 8, true},
    {"skinny_hbm_efficiency", &HardwareProfile::skinny_hbm_efficiency, kMinEfficiency, true, 1, true},
    {"skinny_gemm_micros", &HardwareProfile::skinny_gemm_micros, 0, true, kMaxFloorMicros, true},
    {"attention_startup_micros", &HardwareProfile::attention_startup_micros, 0, true, kMaxFloorMicros, true},
    {"ssd_scan_hbm_efficiency", &HardwareProfile::ssd_scan_hbm_efficiency, kMinEfficiency, true, 1, true},
    // Fitted (docs/hardware.md, "Expert exchanges across nodes").
    {"ep_scale_out_efficiency", &HardwareProfile::ep_scale_out_efficiency, kMinEfficiency, true, 1},
    {"fp8_training_gemm_efficiency", &HardwareProfile::fp8_training_gemm_efficiency, kMinEfficiency, true, 1},
    {"host_sync_micros", &HardwareProfile::host_sync_micros, 0, true, kMaxFloorMicros, true},
    // Derived (docs/hardware.md, "The dispatcher beside compute").
    {"dispatcher_overlap_rate", &HardwareProfile::dispatcher_overlap_rate, kMinEfficiency, true, 1},
    // An input (docs/simulate.md, "The host"); 0 on every preset.
    {"host_launch_micros", &HardwareProfile::host_launch_micros, 0, true, kMaxFloorMicros, true},
};
constexpr int64_t kMaxSmCount = 4096;

// `path` is the section's; the field's (path.key) is built only for an
// error: the planner validates hundreds of thousands of jobs.
Status check_field(const Field& f, double x, const std::string& path) {
  if (f.zero_ok && x == 0) return ok_status();
  bool low = f.lo_inclusive ? !(x >= f.lo) : !(x > f.lo);  // also rejects NaN
  if (low || x > f.hi) {
    return make_error(ErrorCode::kInvalidArgument,
                      std::string("must be ") + (f.zero_ok ? "0 or " : "") + (f.lo_inclusive ? ">= " : "> ") +
                          format(f.lo) + " and <= " + format(f.hi) + " (got " + format(x) + ")",
                      join(path, f.key));
  }
  return ok_status();
}
constexpr int64_t kMaxGpusPerNode = 1024;

}  // namespace

Result<HardwareProfile> parse_hardware_section(const Json& v, const std::string& path) {
  if (v.is_string()) return hardware_preset(v.get<std::string>(), path);
  SC_RETURN_IF_ERROR(jsonf::expect_object(v, path));
  SC_RETURN_IF_ERROR(jsonf::check_keys(
      v, {"preset", "name", "peak_flops_fp32", "peak_flops_tf32", "peak_flops_bf16",
          "peak_flops_fp8", "peak_flops_fp4", "mem_bandwidth", "memory_bytes", "intra_node_bw", "inter_node_bw",
          "gpus_per_node", "compute_efficiency", "memory_efficiency", "cost_model", "sm_count",
          "gemm_efficiency", "attention_efficiency", "attention_bwd_efficiency", "hbm_efficiency",
          "kernel_floor_micros", "fp8_gemm_speedup", "skinny_hbm_efficiency", "skinny_gemm_micros",
          "attention_startup_micros", "ssd_scan_hbm_efficiency", "ep_scale_out_efficiency",
          "fp8_training_gemm_efficiency", "host_sync_micros", "dispatcher_overlap_rate", "host_launch_micros"},
      path));
  HardwareProfile hw;
  hw.name = "custom";
  if (const Json* p = jsonf::find(v, "preset")) {
    SC_ASSIGN_OR_RETURN(std::string name, jsonf::get_string(*p, join(path, "preset")));
    SC_ASSIGN_OR_RETURN(hw, hardware_preset(name, join(path, "preset")));
  } else {
    // A custom device must state every rate; fp8 may stay 0 (unsupported).
    for (const Field& f : kFields) {
      const std::string key = f.key;
      bool optional = f.zero_ok || key.find("efficiency") != std::string::npos || key == "kernel_floor_micros" ||
                      key == "dispatcher_overlap_rate";  // 1 unless given (a derived constant of two presets)
      if (!optional && !jsonf::find(v, f.key)) {
        return make_error(ErrorCode::kInvalidArgument,
                          "required when hardware has no preset", join(path, f.key));
      }
    }
  }
  if (const Json* n = jsonf::find(v, "name")) {
    SC_ASSIGN_OR_RETURN(hw.name, jsonf::get_string(*n, join(path, "name")));
  }
  for (const Field& f : kFields) {
    const Json* x = jsonf::find(v, f.key);
    if (!x) continue;
    SC_ASSIGN_OR_RETURN(hw.*f.member, jsonf::get_number_in(*x, join(path, f.key), f.zero_ok ? 0 : f.lo, f.hi,
                                                            f.zero_ok || f.lo_inclusive));
    SC_RETURN_IF_ERROR(check_field(f, hw.*f.member, path));
  }
  if (const Json* g = jsonf::find(v, "gpus_per_node")) {
    SC_ASSIGN_OR_RETURN(int64_t n, jsonf::get_int(*g, join(path, "gpus_per_node"), 1, kMaxGpusPerNode));
    hw.gpus_per_node = static_cast<int>(n);
  }
  if (const Json* g = jsonf::find(v, "sm_count")) {
    SC_ASSIGN_OR_RETURN(int64_t n, jsonf::get_int(*g, join(path, "sm_count"), 0, kMaxSmCount));
    hw.sm_count = static_cast<int>(n);
  }
  if (const Json* m = jsonf::find(v, "cost_model")) {
    SC_ASSIGN_OR_RETURN(std::string name, jsonf::get_string(*m, join(path, "cost_model")));
    if (name == "kernel") hw.cost_model = HardwareProfile::CostModel::kKernel;
    else if (name == "roofline") hw.cost_model = HardwareProfile::CostModel::kRoofline;
    else
      return make_error(ErrorCode::kInvalidArgument,
                        "unknown cost model \"" + echo_text(name) + "\" (known: kernel, roofline)", join(path, "cost_model"));
  }
  return hw;
}

Status validate_hardware(const HardwareProfile& hw, const std::string& path) {
  for (const Field& f : kFields) SC_RETURN_IF_ERROR(check_field(f, hw.*f.member, path));
  if (hw.sm_count < 0 || hw.sm_count > kMaxSmCount) {
    return make_error(ErrorCode::kInvalidArgument,
                      "must be in [0, " + std::to_string(kMaxSmCount) + "] (got " + std::to_string(hw.sm_count) + ")",
                      join(path, "sm_count"));
  }
  if (hw.gpus_per_node < 1 || hw.gpus_per_node > kMaxGpusPerNode) {
    return make_error(ErrorCode::kInvalidArgument,
                      "must be in [1, " + std::to_string(kMaxGpusPerNode) + "] (got " +
                      std::to_string(hw.gpus_per_node) + ")", join(path, "gpus_per_node"));
  }
  return ok_status();
}

const char* norm_name(NormKind k) { return k == NormKind::kRMSNorm ? "rmsnorm" : "layernorm"; }
const char* mlp_name(MlpKind k) {
  return k == MlpKind::kSwiGLU ? "swiglu" : k == MlpKind::kReLU2 ? "relu2" : k == MlpKind::kGeGLU ? "geglu" : "gelu";
}
const char* position_name(PositionKind k) {
  return k == PositionKind::kRope ? "rope" : k == PositionKind::kNone ? "none" : "learned";
}

const char* optimizer_name(OptimizerKind k) {
  switch (k) {
    case OptimizerKind::kAdam: return "adam";
    case OptimizerKind::kAdamW: return "adamw";
    case OptimizerKind::kSGD: return "sgd";
  }
  return "adamw";
}

std::optional<OptimizerKind> parse_optimizer(const std::string& s) {
  if (s == "adam") return OptimizerKind::kAdam;
  if (s == "adamw") return OptimizerKind::kAdamW;
  if (s == "sgd") return OptimizerKind::kSGD;
  return std::nullopt;
}

int64_t default_optimizer_bytes(OptimizerKind k) { return k == OptimizerKind::kSGD ? 8 : 12; }

}  // namespace sc::job_internal
