// Operator costs like real kernels (issue 11): the duration of one compute
// node from its shape, dtype, bytes and FLOPs under a hardware profile's
// kernel constants (core/hw/hardware.h, docs/hardware.md).
//
//  - GEMMs (kMatmul, including the attention BMMs and the dgrad/wgrad
//    GEMMs): output tiles over the SMs in waves (tile and wave
//    quantisation), a 256 x 128 tile at gemm_efficiency of the per-SM peak
//    and smaller tiles slower in proportion to their arithmetic intensity,
//    the best tile shape chosen; never faster than their bytes at
//    hbm_efficiency. Small and skinny GEMMs fill fewer SMs, short-K ones
//    are bound by their bytes.
//  - Fused (flash) attention: attention_efficiency of peak forward,
//    attention_bwd_efficiency backward, times a factor of the launch's
//    shape (attention_launch_factor: its inner loop's length, its tiles in
//    waves over the SMs, a causal tile's masked half block).
//  - Everything else is memory-bound: bytes at hbm_efficiency of HBM
//    bandwidth (FLOPs at the non-tensor FP32 rate where they dominate).
//  - Fusion (plan_fusion) follows Megatron-LM's fused kernels: bias + GeLU /
//    SwiGLU, bias + dropout + residual add; a fused kernel reads its inputs
//    and writes its outputs once, the intermediates stay on chip.
//  - Every kernel lasts at least kernel_floor_micros (launch floor); a fused
//    group pays it once.
// The job's compute_efficiency / memory_efficiency scale these rates (1 =
// the model as documented). The roofline (hardware.cost_model "roofline")
// stays available in core/hw.
#pragma once

#include <cstdint>
#include <vector>

#include "base/status.h"
#include "graph/graph.h"
#include "hw/hardware.h"
#include "symbolic/expr.h"

namespace sc {

// A GEMM's local problem: `batch` independent M x N x K products.
struct GemmShape {
  int64_t batch = 1, m = 0, n = 0, k = 0;
};

// Local size of dim i of tensor t: the bound global size divided by the
// degree of the mesh axis the dim is sharded over.
Result<int64_t> local_dim(const Graph& g, int t, size_t i, const Bindings& bind);

// Labels of a kMatmul's operands, with sizes bound and sharded dims divided:
// labels on both inputs and the output are batch dims, on both inputs only
// contracted (K), on the first input and the output M, on the second and
// the output N.
Result<GemmShape> gemm_shape(const Graph& g, const Op& op, const Bindings& bind);

// Microseconds, without the launch floor. flops, bytes: the op's own
// (its time is the shape's scaled to flops). skinny: the small-M kernels
// may run a GEMM of at most 256 rows (rows padded to 8, split K; serving
// engines' GEMMs: docs/hardware.md, "Skinny GEMMs").
// A GEMM's FLOP/s in dtype dt before the tile/wave model: the dtype's peak
// times gemm_efficiency and compute_efficiency; FP8 with a measured
// hw.fp8_gemm_speedup (and an FP8 peak): the BF16 peak times that speedup.
double gemm_rate(const HardwareProfile& hw, DType dt);
double gemm_micros(const HardwareProfile& hw, DType dt, const GemmShape& s, double flops, double bytes,
                   bool skinny = false);
// The routed experts' GEMM of `experts` local experts as a training job
// runs it (Transformer Engine's GroupedLinear, Megatron-Core's
// SequentialMLP): one launch per expert, whose tiles gemm_micros times
// together (the experts a batch dimension); each launch after the first
// adds the profile's kernel_floor_micros (docs/hardware.md, "Routed
// experts' GEMM launches"). 0 for one expert.
double expert_gemm_launch_micros(const HardwareProfile& hw, int64_t experts);
// backward: the dQ/dK/dV kernel (attention_bwd_efficiency), else the forward.
// Its bytes' time carries the profile's attention_startup_micros.
double attention_micros(const HardwareProfile& hw, DType dt, double flops, double bytes, bool backward);
double memory_micros(const HardwareProfile& hw, double flops, double bytes);

// Fused attention by shape (docs/hardware.md, "Attention by shape"): the
// factor on attention_efficiency (or attention_bwd_efficiency) for a
// kernel whose queries each visit `kv` keys on average (causal: half the
// keys) with QK head dim `head_dim`. 1 at the reference shape the constants
// were fitted at (4,096 keys visited, head dim 128); never lifts the
// efficiency above 1. Callers divide the kernel's FLOPs by it.
double attention_shape_factor(const HardwareProfile& hw, double kv, double head_dim, bool backward);
// The part of it that is the head dim's below 128 (1 at 128 and above):
// (d / (d + c)) / (128 / (128 + c)), c = kAttentionHeadDimCostFwd or Bwd
// (docs/hardware.md, "Attention by shape").
inline constexpr double kAttentionHeadDimCostFwd = 72, kAttentionHeadDimCostBwd = 36;
double attention_head_dim_factor(double head_dim, bool backward);

// One launch of a fused attention kernel, per (sequence, head) pair:
// `queries` query rows against `keys` key rows, each query row visiting
// `kv` keys on average (the FLOPs' count: causal, half a square block)
// and `kv_max` at most (the last row of a causal block: all its keys).
struct AttentionLaunch {
  double pairs = 0;    // sequences x local query heads
  double queries = 0;  // query rows per pair
  double keys = 0;     // key rows per pair
  double kv = 0;       // keys a query row visits on average
  double kv_max = 0;   // keys the longest query row visits
};
// Tile sizes of the kernels modelled (FlashAttention-3, Hopper, BF16):
// query rows per forward CTA, key rows per backward CTA, by QK head dim.
double attention_fwd_query_tile(double head_dim);
double attention_bwd_key_tile(double head_dim);
// The fraction of the SMs' time a launch keeps busy (docs/hardware.md,
// "Attention by shape"): its tiles (forward: pairs x ceil(queries / query
// tile); backward: pairs x ceil(keys / key tile)), one CTA per SM, run in
// waves of sm_count; the kernel lasts its waves of average tiles or its
// longest tile, whichever is longer. 1 without an SM count.
double attention_occupancy(const HardwareProfile& hw, const AttentionLaunch& l, double head_dim, bool backward);
// The factor on attention_efficiency (attention_bwd_efficiency) for one
// launch: attention_shape_factor of its inner loop (forward: kv keys per
// query row; backward: queries x kv / keys query rows per key row) times
// its occupancy over the reference launch's (FlashAttention-3's
// benchmark: 16 heads, 16k rows, non-causal), times inner / (inner +
// tile / 2) for a causal launch (kv_max > kv: the diagonal block computed
// whole) over its value at the causal reference (4,096, 64 wasted); never
// above 1 / efficiency.
double attention_launch_factor(const HardwareProfile& hw, const AttentionLaunch& l, double head_dim, bool backward);

// Which ops share one fused kernel, and which tensors never touch HBM.
struct FusionPlan {
  std::vector<int> head;                   // per op: first op of its kernel (itself when alone)
  std::vector<std::vector<int>> members;   // per head: the ops of its kernel, in order
  std::vector<std::vector<int>> on_chip;   // per op: tensors it reads or writes on chip only
};
FusionPlan plan_fusion(const Graph& g);

}  // namespace sc
