#include "plan/memory_reserve.h"

namespace sc {

MemoryReserve default_memory_reserve(const HardwareProfile& hw) {
  MemoryReserve r;
  r.cuda_context = kCudaContextBytes;
  const bool hopper = hw.peak_flops_fp8 > 0;
  // PyTorch (aten/src/ATen/cuda/CublasHandlePool.cpp): one workspace per
  // handle and stream, 32 MiB on sm90 ("4096:8" KiB), else ":4096:2:16:8",
  // 2·4 MiB + 8·16 KiB. Transformer Engine (transformer_engine/pytorch/
  // cpp_extensions/gemm.py, get_cublas_workspace_size_bytes): 32 MiB +
  // 1 KiB on Hopper, 4 MiB before, and three more for the userbuffers
  // streams of tensor-parallel overlap (_NUM_MAX_UB_STREAMS).
  const int64_t torch_ws = hopper ? int64_t{32} << 20 : (int64_t{8} << 20) + 8 * (int64_t{16} << 10);
  const int64_t te_ws = hopper ? (int64_t{32} << 20) + 1024 : int64_t{4} << 20;
  r.cublas_workspaces = torch_ws + 4 * te_ws;
  // One ring connection per channel receives into a buffer of each protocol.
  r.nccl_buffers = kNcclCommunicators * kNcclChannels * (kNcclSimpleBytes + kNcclLl128Bytes + kNcclLlBytes);
  return r;
}

}  // namespace sc
