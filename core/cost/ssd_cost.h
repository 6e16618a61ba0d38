// The Mamba-2 (SSD) selective scan as mamba_ssm's chunked Triton kernels run
// it in training (docs/hardware.md, "Mamba-2 scan kernels"). Megatron-Core's
// MambaMixer trains through mamba_ssm's mamba_split_conv1d_scan_combined
// without its rmsnorm weight, so the scan gets z and gates its output by
// silu(z) (the norm after it is a plain grouped RMSNorm), with chunk_size
// 128; the scan's forward is five kernels and its backward fourteen
// (state-spaces/mamba, mamba_ssm/ops/triton/ssd_combined.py,
// _mamba_chunk_scan_combined_fwd / _bwd). Each kernel is costed by its own
// FLOPs (the chunk matmuls, on the tensor cores at the profile's fused-
// attention efficiency: the scan's matmuls are attention-like masked
// tiles, forward attention_efficiency, backward attention_bwd_efficiency)
// and its own HBM bytes (inputs read once, intermediates at the dtypes the
// kernels write them: chunk states FP32 from chunk_state, BF16 after
// state passing in the forward, FP32 again in the backward's recompute;
// CB = C B^T per chunk FP32), the longer of the two, at least the launch
// floor. The per-kernel counts are listed in ssd_kernels below and derived
// in docs/hardware.md. BF16 always (Transformer Engine's FP8 covers the
// linear layers only).
#pragma once

#include <string>
#include <vector>

#include "hw/hardware.h"

namespace sc {

// One rank's scan: `seqs` sequences of `len` tokens, `heads` heads of
// `head_dim` channels, `groups` B/C groups (heads / groups share B and C),
// state size `state`, chunk length `chunk`; `elem` bytes per activation
// element (2: BF16).
struct SsdShape {
  double seqs = 1, len = 0, heads = 0, head_dim = 0, groups = 1, state = 0, chunk = 128, elem = 2;
};

// Megatron-Core MambaMixer's chunk_size (megatron/core/ssm/mamba_mixer.py;
// Nemotron-H's config.json has the same chunk_size 128).
constexpr double kSsdChunk = 128;

// One Triton kernel of the scan: tensor-core FLOPs and HBM bytes.
struct SsdKernel {
  std::string name;
  double flops = 0, bytes = 0;
};

// The kernels of the forward (backward = false: chunk_cumsum, chunk_state,
// state_passing, bmm_chunk, chunk_scan) or of the backward (the input
// gradients dz, dx, ddt, dB, dC with the forward recomputation it starts
// with).
std::vector<SsdKernel> ssd_kernels(const SsdShape& s, bool backward);

// Microseconds of the forward or backward scan: each kernel's FLOPs at the
// BF16 peak times the fused-attention efficiency (and compute_efficiency)
// or its bytes at the profile's measured ssd_scan_hbm_efficiency (and
// memory_efficiency) of HBM bandwidth, whichever is longer, at least
// kernel_floor_micros; summed. Only for a profile with that measurement
// (ssd_scan_hbm_efficiency > 0); the others time the scan by the generic
// model.
double ssd_micros(const HardwareProfile& hw, const SsdShape& s, bool backward);

}  // namespace sc
