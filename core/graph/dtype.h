#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace sc {

enum class DType { kFP32, kTF32, kBF16, kFP16, kFP8, kInt64, kInt32, kUInt8 };

int64_t dtype_bytes(DType dt);  // bytes per element (TF32 stored as 4)
const char* dtype_name(DType dt);  // "fp32", "bf16", ...
std::optional<DType> parse_dtype(const std::string& name);

}  // namespace sc
