#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace sc {

// kInt4, kNVFP4, kMXFP4: 4-bit weight formats of serving
// (serving.weights_dtype, docs/inference.md "4-bit weights"), appended so
// the values before them keep their numbers. kInt4: AWQ/GPTQ-style int4
// weights in groups of 128 along the input dim, one fp16 scale and one
// 4-bit zero point per group, dequantized to bf16 in the GEMM (W4A16).
// kNVFP4: e2m1 values in blocks of 16 with one fp8 (e4m3) scale per block
// and one fp32 scale per tensor; kMXFP4: e2m1 in blocks of 32 with one
// e8m0 scale per block; both run their GEMMs on FP4 tensor cores (W4A4).
enum class DType { kFP32, kTF32, kBF16, kFP16, kFP8, kInt64, kInt32, kUInt8, kInt4, kNVFP4, kMXFP4 };

int dtype_bits(DType dt);       // bits per element value (4 for the 4-bit formats, scales not counted)
int64_t dtype_bytes(DType dt);  // whole bytes per element (TF32 stored as 4); the 4-bit formats: 1,
                                // use dtype_storage_bytes for their sizes
bool dtype_is_4bit(DType dt);   // kInt4, kNVFP4, kMXFP4
bool dtype_is_fp4(DType dt);    // kNVFP4, kMXFP4: W4A4, FP4 tensor cores (HardwareProfile::peak_flops_fp4)

// The block scales of a 4-bit format: `group` elements share `scale_bits`
// of scale (and zero point), plus `tensor_bytes` once per tensor. Zero
// groups for the whole-byte dtypes.
struct BlockScale {
  int64_t group = 0, scale_bits = 0, tensor_bytes = 0;
};
BlockScale dtype_block_scale(DType dt);
// Bytes of `elements` values stored in `dt`: elements x bytes for the
// whole-byte dtypes; the 4-bit formats: ceil(elements x 4 / 8) packed
// values + ceil(ceil(elements / group) x scale_bits / 8) + tensor_bytes.
int64_t dtype_storage_bytes(DType dt, int64_t elements);
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
