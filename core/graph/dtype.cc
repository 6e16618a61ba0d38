#include "graph/dtype.h"

namespace sc {

int64_t dtype_bytes(DType dt) {
  switch (dt) {
    case DType::kFP32: case DType::kTF32: case DType::kInt32: return 4;
    case DType::kBF16: case DType::kFP16: return 2;
    case DType::kFP8: case DType::kUInt8: return 1;
    case DType::kInt64: return 8;
  }
  return 4;
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
  }
  return "?";
}

std::optional<DType> parse_dtype(const std::string& n) {
  if (n == "fp32") return DType::kFP32;
  if (n == "tf32") return DType::kTF32;
  if (n == "bf16") return DType::kBF16;
  if (n == "fp16") return DType::kFP16;
  if (n == "fp8") return DType::kFP8;
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
