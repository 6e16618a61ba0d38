// The plan's default memory reserve: what a training process holds on the
// GPU beside the tensors summary.json counts, derived per GPU profile from
// its parts (docs/plan.md, "The memory reserve", which gives each source).
#pragma once

#include <cstdint>

#include "hw/hardware.h"

namespace sc {

// Parts of the reserve, in bytes.
struct MemoryReserve {
  int64_t cuda_context = 0;       // the CUDA context and the kernels it loads
  int64_t cublas_workspaces = 0;  // PyTorch's and Transformer Engine's cuBLAS workspaces
  int64_t nccl_buffers = 0;       // NCCL's per-connection protocol buffers
  int64_t total() const { return cuda_context + cublas_workspaces + nccl_buffers; }
};

// The CUDA context of a PyTorch process with lazy module loading (CUDA
// 12.2+ default on Linux): an estimate, not a measurement (docs/plan.md).
inline constexpr int64_t kCudaContextBytes = int64_t{512} << 20;
// NCCL's per-connection buffers at their defaults (NCCL src/init.cc):
// Simple 4 MiB (NCCL_BUFFSIZE), LL128 120·640·8·8 B, LL 8·512·8·16 B.
inline constexpr int64_t kNcclSimpleBytes = int64_t{1} << 22;
inline constexpr int64_t kNcclLl128Bytes = int64_t{120} * 640 * 8 * 8;
inline constexpr int64_t kNcclLlBytes = int64_t{8} * 512 * 8 * 16;
// Channels per communicator (32: NCCL's MAXCHANNELS in older releases;
// current ones define 64, an assumption docs/plan.md states) and the communicators with more than one rank that a
// Megatron-style 3D/4D layout drives at once (dp, tp, cp or pp, and the
// model-parallel group of the loss and the gradient norm).
inline constexpr int64_t kNcclChannels = 32;
inline constexpr int64_t kNcclCommunicators = 4;

// The reserve of a GPU profile. Hopper and later (FP8 tensor cores:
// peak_flops_fp8 > 0 among the presets h100, h200, b200) take cuBLAS's
// 32 MiB workspaces, earlier GPUs (a100) the 4 and 8 MiB ones.
MemoryReserve default_memory_reserve(const HardwareProfile& hw);

}  // namespace sc
