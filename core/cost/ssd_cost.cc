#include "cost/ssd_cost.h"

#include <algorithm>
#include <cmath>

namespace sc {

// Sizes (elements) of one rank's scan, with T = seqs x len tokens and
// C = seqs x ceil(len / chunk) chunks:
//   X  = T H P   x, z, out, out_x, dout, dz, dx (activation dtype, e bytes)
//   BC = T G N   B or C, dB or dC             (e bytes)
//   S  = C H P N chunk states                 (FP32 or e bytes, see below)
//   CB = C G Q^2 C B^T per chunk              (FP32)
//   D  = T H     dt, dA_cumsum per head/token (FP32 after chunk_cumsum; dt in: e bytes)
// FLOPs of the matmuls: chunk_state B^T (dt x) per chunk and head:
// 2 T H P N; bmm_chunk C B^T per chunk and group: 2 T G Q N; chunk_scan
// the causal (L o CB)(dt x) (half of the Q x Q block: T H P Q) plus
// C states (2 T H P N). The backward's gradient kernels are the same
// products transposed. Element-wise work (exp of the decays, the
// cumulative sums) rides in the matmul kernels or is negligible.
std::vector<SsdKernel> ssd_kernels(const SsdShape& s, bool backward) {
  const double e = s.elem, t = s.seqs * s.len, chunks = s.seqs * std::ceil(s.len / s.chunk);
  const double x = t * s.heads * s.head_dim, bc = t * s.groups * s.state;
  const double st = chunks * s.heads * s.head_dim * s.state, cb = chunks * s.groups * s.chunk * s.chunk;
  const double d = t * s.heads;
  const double state_mm = 2 * t * s.heads * s.head_dim * s.state;  // 2 T H P N
  const double intra = t * s.heads * s.head_dim * s.chunk;         // causal half of 2 T H P Q
  const double cbmm = 2 * t * s.groups * s.chunk * s.state;        // 2 T G Q N
  // chunk_cumsum: dt in (e), dt and dA_cumsum out (FP32).
  const SsdKernel cumsum{"chunk_cumsum", 0, e * d + 8 * d};
  // chunk_state: x, B, dt, dA_cumsum in; the chunk states out in FP32.
  const SsdKernel state{"chunk_state", state_mm, e * x + e * bc + 8 * d + 4 * st};
  // bmm_chunk: C and B in, CB out (FP32).
  const SsdKernel bmm{"bmm_chunk", cbmm, 2 * e * bc + 4 * cb};
  if (!backward) {
    return {cumsum, state,
            // state_passing: the FP32 states in, the running states out in
            // the activations' dtype (C.dtype).
            {"state_passing", 0, 4 * st + e * st},
            bmm,
            // chunk_scan: CB, x (also for the D skip), z, C, the states,
            // dt, dA_cumsum in; out (gated by silu(z)) and out_x (before
            // the gate, saved for the backward) written.
            {"chunk_scan", intra + state_mm, 4 * cb + 2 * e * x + e * bc + e * st + 8 * d + 2 * e * x}};
  }
  return {cumsum, bmm, state,
          // The backward's state_passing keeps FP32 (no out_dtype given).
          {"state_passing", 0, 8 * st},
          // chunk_scan_bwd_dz: x (the D skip), z, out_x and dout in; dz and
          // the ungated dout out.
          {"chunk_scan_bwd_dz", 0, 6 * e * x},
          // chunk_scan_bwd_dstates: dout, C, dA_cumsum in; dstates out (FP32).
          {"chunk_scan_bwd_dstates", state_mm, e * x + e * bc + 4 * d + 4 * st},
          // state_passing_bwd: dstates and states in (FP32); dstates and
          // states out in the activations' dtype.
          {"state_passing_bwd", 0, 8 * st + 2 * e * st},
          // chunk_scan_chunk_state_bwd_dx: x, B, CB, dout, dstates, dt,
          // dA_cumsum in; dx (e) and ddt (FP32) out.
          {"chunk_scan_chunk_state_bwd_dx", intra + state_mm, 2 * e * x + e * bc + 4 * cb + e * st + 8 * d + e * x + 4 * d},
          // chunk_state_bwd_db: x, dstates, dt, dA_cumsum in; dB out.
          {"chunk_state_bwd_db", state_mm, e * x + e * st + 8 * d + e * bc},
          // chunk_scan_bwd_dC: states, dout in; dC out.
          {"chunk_scan_bwd_dC", state_mm, e * st + e * x + e * bc},
          // chunk_scan_bwd_dcb: x, dout, dt, dA_cumsum in; dCB out (FP32).
          {"chunk_scan_bwd_dcb", intra, 2 * e * x + 8 * d + 4 * cb},
          // bmm_chunk_bwd, twice (dB += dCB C, dC += dCB^T B): the other
          // operand, dCB, the residual in; the sum out.
          {"bmm_chunk_bwd.dB", cbmm, 3 * e * bc + 4 * cb},
          {"bmm_chunk_bwd.dC", cbmm, 3 * e * bc + 4 * cb},
          // chunk_scan_bwd_ddAcs_stable: x, dout, CB, dt, dA_cumsum in;
          // ddA out (FP32).
          {"chunk_scan_bwd_ddAcs_stable", intra, 2 * e * x + 4 * cb + 12 * d}};
}

double ssd_micros(const HardwareProfile& hw, const SsdShape& s, bool backward) {
  const double eff = backward ? hw.attention_bwd_efficiency : hw.attention_efficiency;
  const double rate = hw.peak_flops_bf16 * eff * hw.compute_efficiency;
  // The kernels' measured share of HBM bandwidth (docs/hardware.md, "Mamba-2
  // scan kernels"): the lowerer calls this only for a profile that has it.
  const double hbm = hw.mem_bandwidth * hw.ssd_scan_hbm_efficiency * hw.memory_efficiency;
  double us = 0;
  for (const SsdKernel& k : ssd_kernels(s, backward)) {
    const double t_flops = rate > 0 && k.flops > 0 ? k.flops / rate : 0;
    const double t_bytes = hbm > 0 && k.bytes > 0 ? k.bytes / hbm : 0;
    us += std::max(hw.kernel_floor_micros, std::max(t_flops, t_bytes) * 1e6);
  }
  return us;
}

}  // namespace sc
