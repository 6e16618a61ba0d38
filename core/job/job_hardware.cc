// The job's "hardware" section, its validation, and the enum spellings
// used by the job JSON.
#include "job/job_internal.h"

namespace sc::job_internal {
namespace {

using jsonf::Json;
using jsonf::join;

// Upper bounds far above any device (1 EFLOP/s, 1 PB/s, 1 PB).
constexpr double kMaxFlops = 1e18;
constexpr double kMaxBytesPerSecond = 1e15;
constexpr double kMaxBytes = 1e15;

struct Field { const char* key; double HardwareProfile::*member; double lo; bool lo_inclusive; double hi; };
constexpr Field kFields[] = {
    {"peak_flops_fp32", &HardwareProfile::peak_flops_fp32, 0, false, kMaxFlops},
    {"peak_flops_tf32", &HardwareProfile::peak_flops_tf32, 0, false, kMaxFlops},
    {"peak_flops_bf16", &HardwareProfile::peak_flops_bf16, 0, false, kMaxFlops},
    {"peak_flops_fp8", &HardwareProfile::peak_flops_fp8, 0, true, kMaxFlops},  // 0: none
    {"mem_bandwidth", &HardwareProfile::mem_bandwidth, 0, false, kMaxBytesPerSecond},
    {"memory_bytes", &HardwareProfile::memory_bytes, 0, false, kMaxBytes},
    {"intra_node_bw", &HardwareProfile::intra_node_bw, 0, false, kMaxBytesPerSecond},
    {"inter_node_bw", &HardwareProfile::inter_node_bw, 0, false, kMaxBytesPerSecond},
    {"compute_efficiency", &HardwareProfile::compute_efficiency, 0, false, 1},
    {"memory_efficiency", &HardwareProfile::memory_efficiency, 0, false, 1},
};
constexpr int64_t kMaxGpusPerNode = 1024;

std::string format(double d) {
  return Json(d).dump();
}

}  // namespace

Result<HardwareProfile> parse_hardware_section(const Json& v, const std::string& path) {
  if (v.is_string()) return hardware_preset(v.get<std::string>(), path);
  SC_RETURN_IF_ERROR(jsonf::expect_object(v, path));
  SC_RETURN_IF_ERROR(jsonf::check_keys(
      v, {"preset", "name", "peak_flops_fp32", "peak_flops_tf32", "peak_flops_bf16",
          "peak_flops_fp8", "mem_bandwidth", "memory_bytes", "intra_node_bw", "inter_node_bw",
          "gpus_per_node", "compute_efficiency", "memory_efficiency"},
      path));
  HardwareProfile hw;
  hw.name = "custom";
  if (const Json* p = jsonf::find(v, "preset")) {
    SC_ASSIGN_OR_RETURN(std::string name, jsonf::get_string(*p, join(path, "preset")));
    SC_ASSIGN_OR_RETURN(hw, hardware_preset(name, join(path, "preset")));
  } else {
    // A custom device must state every rate; fp8 may stay 0 (unsupported).
    for (const Field& f : kFields) {
      bool optional = f.lo_inclusive || std::string(f.key).find("efficiency") != std::string::npos;
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
    SC_ASSIGN_OR_RETURN(hw.*f.member,
                        jsonf::get_number_in(*x, join(path, f.key), f.lo, f.hi, f.lo_inclusive));
  }
  if (const Json* g = jsonf::find(v, "gpus_per_node")) {
    SC_ASSIGN_OR_RETURN(int64_t n, jsonf::get_int(*g, join(path, "gpus_per_node"), 1, kMaxGpusPerNode));
    hw.gpus_per_node = static_cast<int>(n);
  }
  return hw;
}

Status validate_hardware(const HardwareProfile& hw, const std::string& path) {
  for (const Field& f : kFields) {
    double x = hw.*f.member;
    bool low = f.lo_inclusive ? !(x >= f.lo) : !(x > f.lo);  // also rejects NaN
    if (low || x > f.hi) {
      return make_error(ErrorCode::kInvalidArgument,
                        std::string("must be ") + (f.lo_inclusive ? ">= " : "> ") + format(f.lo) +
                        " and <= " + format(f.hi) + " (got " + format(x) + ")",
                        join(path, f.key));
    }
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
