#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace sc {

enum class DType { kFP32, kTF32, kBF16, kFP16, kFP8, kInt64, kInt32, kUInt8 };

int64_t dtype_bytes(DType dt);  // bytes per element (TF32 stored as 4)
const char* dtype_name(DType dt);  // "fp32", "bf16", ...
std::optional<DType> parse_dtype(const std::string& name);

// FP8 training recipes as Transformer Engine runs them (training.fp8_recipe,
// docs/hardware.md "FP8 training"): the linear layers' GEMMs at FP8 with
// per-tensor scales from an amax history (delayed), per-tensor scales from
// the tensor itself (tensorwise: TE's Float8CurrentScaling), 1x128 / 128x128
// block scales (blockwise: Float8BlockScaling) or 32-element E8M0 block
// scales (mxfp8: MXFP8BlockScaling). kNone: no FP8.
enum class Fp8Recipe { kNone, kDelayed, kTensorwise, kBlockwise, kMxfp8 };
const char* fp8_recipe_name(Fp8Recipe r);  // "none", "delayed", ...
std::optional<Fp8Recipe> parse_fp8_recipe(const std::string& name);

}  // namespace sc
