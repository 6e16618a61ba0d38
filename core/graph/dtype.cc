#include "graph/dtype.h"

namespace sc {

int64_t dtype_bytes(DType dt) {
  switch (dt) {
    case DType::kFP32: case DType::kTF32: case DType::kInt32: return 4;
    case DType::kBF16: case DType::kFP16: return 2;
    case DType::kFP8: case DType::kUInt8: return 1;
    case DType::kInt64: return 8;
    case DType::kInt4: case DType::kNVFP4: case DType::kMXFP4: return 1;  // a byte holds two: dtype_storage_bytes
  }
  return 4;
}

int dtype_bits(DType dt) {
  return dtype_is_4bit(dt) ? 4 : static_cast<int>(8 * dtype_bytes(dt));
}

bool dtype_is_4bit(DType dt) { return dt == DType::kInt4 || dtype_is_fp4(dt); }
bool dtype_is_fp4(DType dt) { return dt == DType::kNVFP4 || dt == DType::kMXFP4; }

BlockScale dtype_block_scale(DType dt) {
  switch (dt) {
    // AWQ / GPTQ (group_size 128): an fp16 scale and a 4-bit zero point
    // (packed eight to an int32, qzeros) per group.
    case DType::kInt4: return {128, 16 + 4, 0};
    // NVFP4: an fp8 e4m3 scale per 16 values, an fp32 scale per tensor.
    case DType::kNVFP4: return {16, 8, 4};
    // MXFP4 (OCP MX v1.0): an e8m0 scale per 32 values.
    case DType::kMXFP4: return {32, 8, 0};
    default: return {};
  }
}

int64_t dtype_storage_bytes(DType dt, int64_t elements) {
  if (!dtype_is_4bit(dt)) return elements * dtype_bytes(dt);
  if (elements <= 0) return 0;
  const BlockScale s = dtype_block_scale(dt);
  const int64_t groups = (elements + s.group - 1) / s.group;
  return (elements * dtype_bits(dt) + 7) / 8 + (groups * s.scale_bits + 7) / 8 + s.tensor_bytes;
}

const char* dtype_name(DType dt) {
  switch (dt) {
    case DType::kFP32: return "fp32";
    case DType::kTF32: return "tf32";
    case DType::kBF16: return "bf16";
    case DType::kFP16: return "fp16";
    case DType::kFP8: return "fp8";
    case DType::kInt64: return "int64";
    case DType::kInt32: return "int32";
    case DType::kUInt8: return "uint8";
    case DType::kInt4: return "int4";
    case DType::kNVFP4: return "nvfp4";
    case DType::kMXFP4: return "mxfp4";
  }
  return "?";
}

std::optional<DType> parse_dtype(const std::string& n) {
  if (n == "fp32") return DType::kFP32;
  if (n == "tf32") return DType::kTF32;
  if (n == "bf16") return DType::kBF16;
  if (n == "fp16") return DType::kFP16;
  if (n == "fp8") return DType::kFP8;
  if (n == "int4") return DType::kInt4;
  if (n == "nvfp4") return DType::kNVFP4;
  if (n == "mxfp4") return DType::kMXFP4;
  return std::nullopt;
}

const char* fp8_recipe_name(Fp8Recipe r) {
  switch (r) {
    case Fp8Recipe::kNone: return "none";
    case Fp8Recipe::kDelayed: return "delayed";
    case Fp8Recipe::kTensorwise: return "tensorwise";
    case Fp8Recipe::kBlockwise: return "blockwise";
    case Fp8Recipe::kMxfp8: return "mxfp8";
  }
  return "?";
}

std::optional<Fp8Recipe> parse_fp8_recipe(const std::string& n) {
  for (Fp8Recipe r : {Fp8Recipe::kNone, Fp8Recipe::kDelayed, Fp8Recipe::kTensorwise, Fp8Recipe::kBlockwise,
                      Fp8Recipe::kMxfp8})
    if (n == fp8_recipe_name(r)) return r;
  return std::nullopt;
}

}  // namespace sc
