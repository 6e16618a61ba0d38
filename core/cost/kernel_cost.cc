#include "cost/kernel_cost.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

namespace sc {

Result<int64_t> local_dim(const Graph& g, int t, size_t i, const Bindings& bind) {
  const Tensor& x = g.tensors[t];
  SC_ASSIGN_OR_RETURN(int64_t n, x.dims[i].size.eval(bind, x.name + " dim " + x.dims[i].label));
  if (i < x.sharding.dim_axis.size() && !x.sharding.dim_axis[i].empty()) {
    auto it = bind.find(x.sharding.dim_axis[i]);
    if (it != bind.end() && it->second > 0) n /= it->second;
  }
  return n;
}

namespace {

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

bool pointwise(const Op& o) { return o.kind == OpKind::kElementwise || o.kind == OpKind::kDropout; }

// Megatron-LM's fused element-wise kernels as (producer fn, consumer fn)
// links: bias + GeLU / SwiGLU (fused_bias_gelu, bias_swiglu), bias +
// dropout + residual add (fused_bias_dropout; also without a bias).
bool fuses(const Op& producer, const Op& consumer) {
  const std::string& a = producer.fn;
  const std::string& b = consumer.fn;
  if (a == "bias_add") return b == "gelu" || b == "swiglu" || b == "dropout";
  if (a == "dropout") return b == "add";
  return false;
}

}  // namespace

Result<GemmShape> gemm_shape(const Graph& g, const Op& op, const Bindings& bind) {
  GemmShape s;
  if (op.inputs.size() < 2 || op.outputs.empty()) return s;
  const std::vector<std::string> la = g.labels_in(op, 0), lb = g.labels_in(op, 1), lc = g.labels_out(op, 0);
  s.m = s.n = s.k = 1;
  for (size_t i = 0; i < la.size() && i < g.tensors[op.inputs[0]].dims.size(); ++i) {
    SC_ASSIGN_OR_RETURN(int64_t n, local_dim(g, op.inputs[0], i, bind));
    const bool in_b = has(lb, la[i]), in_c = has(lc, la[i]);
    if (in_b && in_c) s.batch *= n;
    else if (in_b) s.k *= n;
    else if (in_c) s.m *= n;
  }
  for (size_t i = 0; i < lb.size() && i < g.tensors[op.inputs[1]].dims.size(); ++i) {
    if (has(la, lb[i]) || !has(lc, lb[i])) continue;
    SC_ASSIGN_OR_RETURN(int64_t n, local_dim(g, op.inputs[1], i, bind));
    s.n *= n;
  }
  return s;
}

// Skinny GEMMs: at most this many rows (the widest MMA N a swapped tile can
// give them: Hopper's wgmma N <= 256) take the small-M kernels, and each K
// split keeps at least kSplitKMin of K (docs/hardware.md, "Skinny GEMMs").
constexpr int64_t kSkinnyRows = 256;
constexpr double kSplitKMin = 256;

// A GEMM's sustained rate. FP8 on a profile with a measured
// fp8_gemm_speedup (an FP8 GEMM's rate over a BF16 GEMM's of the same
// shape, with Transformer Engine's accumulation settings): the BF16 rate
// times it; otherwise the dtype's peak (FP8: peak_flops_fp8) times the
// same gemm_efficiency (docs/hardware.md, "Measured on a GPU").
double gemm_rate(const HardwareProfile& hw, DType dt) {
  const double eff = hw.gemm_efficiency * hw.compute_efficiency;
  if (dt == DType::kFP8 && hw.fp8_gemm_speedup > 0 && hw.peak_flops_fp8 > 0)
    return hw.peak_flops_bf16 * hw.fp8_gemm_speedup * eff;
  return hw.peak_for(dt) * eff;
}

double gemm_micros(const HardwareProfile& hw, DType dt, const GemmShape& s, double flops, double bytes, bool skinny) {
  const double rate = gemm_rate(hw, dt);
  // A skinny GEMM (serving's small-M kernels) streams its weight at the
  // measured skinny fraction of HBM after a fixed start-up, where the
  // profile has them; every other kernel at hbm_efficiency.
  const bool skinny_measured = skinny && s.m <= kSkinnyRows && hw.skinny_hbm_efficiency > 0;
  const double hbm = hw.mem_bandwidth * hw.memory_efficiency *
                     (skinny_measured ? hw.skinny_hbm_efficiency : hw.hbm_efficiency);
  const double t_bytes = hbm > 0 && bytes > 0
                             ? bytes / hbm + (skinny_measured ? hw.skinny_gemm_micros * 1e-6 : 0)
                             : 0;
  if (rate <= 0 || flops <= 0) return t_bytes * 1e6;
  double t_flops = flops / rate;
  // int4 weights (W4A16): a skinny tile fetches its weight side (Tn) at a
  // quarter of bf16's bytes, so its operand bytes per FLOP, which set its
  // per-SM rate below, shrink on that side; 1 for every other dtype, whose
  // two operands have the same width (docs/hardware.md, "Skinny GEMMs").
  const double wside = dt == DType::kInt4 ? 0.25 : 1.0;
  const double shape_flops = 2.0 * static_cast<double>(s.batch) * static_cast<double>(s.m) *
                             static_cast<double>(s.n) * static_cast<double>(s.k);
  if (hw.sm_count > 0 && shape_flops > 0) {
    // Output tiles run in waves of sm_count (one thread block per SM, as
    // in DU-09799 §3's A100 example); a wave takes one tile's time. The
    // ceiling is measured with 256 x 128 tiles; a smaller tile fetches
    // (Tm + Tn) K operands for 2 Tm Tn K FLOPs, so its per-SM rate is the
    // ceiling times its arithmetic intensity Tm Tn / (Tm + Tn) relative to
    // the 256 x 128 tile's. The fastest of cuBLAS's usual shapes wins; the
    // time is scaled to the op's own FLOPs (a ZeRO flat shard, say).
    static constexpr double kTiles[][2] = {{256, 128}, {128, 256}, {128, 128}, {128, 64}, {64, 128}, {64, 64}};
    const double ref = 256.0 * 128.0 / (256.0 + 128.0);
    double best = 0;
    for (const auto& tile : kTiles) {
      const double tm = tile[0], tn = tile[1];
      const double tiles = static_cast<double>(s.batch) * std::ceil(static_cast<double>(s.m) / tm) *
                           std::ceil(static_cast<double>(s.n) / tn);
      const double waves = std::ceil(tiles / hw.sm_count);
      const double per_sm = rate / hw.sm_count * std::min(1.0, tm * tn / (tm + tn) / ref);
      const double t = waves * 2.0 * tm * tn * static_cast<double>(s.k) / per_sm;
      if (best == 0 || t < best) best = t;
    }
    if (skinny && s.m <= kSkinnyRows) {
      // A skinny GEMM (a decode step's few rows): the small-M kernels
      // swap A and B, so the weight's N rows fill the MMA's wide side and
      // the tokens its narrow one, whose granularity is 8 (mma.m16n8k16's
      // n; Hopper's wgmma N steps by 8): the rows are padded to a multiple
      // of 8, not to a 64-row tile. When the output has fewer tiles than
      // SMs they split K over the idle SMs (split-K). Tiles of Tn x R
      // (R = M rounded up to 8), the same per-SM rate by arithmetic
      // intensity R Tn / (R + Tn), waves over tiles x splits
      // (docs/hardware.md, "Skinny GEMMs").
      const double rows = 8.0 * std::ceil(static_cast<double>(s.m) / 8.0);
      for (const double tn : {64.0, 128.0, 256.0}) {
        const double tiles = static_cast<double>(s.batch) * std::ceil(static_cast<double>(s.n) / tn);
        const double split = std::max(1.0, std::min(std::floor(hw.sm_count / tiles),
                                                     std::floor(static_cast<double>(s.k) / kSplitKMin)));
        const double waves = std::ceil(tiles * split / hw.sm_count);
        const double per_sm = rate / hw.sm_count * std::min(1.0, rows * tn / (rows + wside * tn) / ref);
        const double t = waves * 2.0 * rows * tn * std::ceil(static_cast<double>(s.k) / split) / per_sm;
        if (t < best) best = t;
      }
    }
    t_flops = best * flops / shape_flops;
  }
  return std::max(t_flops, t_bytes) * 1e6;
}

// Measured on an H100 (docs/kernel-measurements.md, "Routed experts'
// GEMMs"): over 54 records of E expert GEMMs on 4 streams against one GEMM
// of the same FLOPs, device time in CUDA graphs, the extra time fits
// 3.0 us per launch after the first (plus 1.7% of the GEMM time, which
// the fitted gemm_efficiency already covers); the floor of a small kernel
// in a CUDA graph measured on the same GPU is 3.5 us. The floor is used:
// no new constant.
double expert_gemm_launch_micros(const HardwareProfile& hw, int64_t experts) {
  return experts > 1 ? static_cast<double>(experts - 1) * hw.kernel_floor_micros : 0;
}

double attention_micros(const HardwareProfile& hw, DType dt, double flops, double bytes, bool backward) {
  const double eff = backward ? hw.attention_bwd_efficiency : hw.attention_efficiency;
  const double rate = hw.peak_for(dt) * eff * hw.compute_efficiency;
  const double hbm = hw.mem_bandwidth * hw.hbm_efficiency * hw.memory_efficiency;
  const double t_flops = rate > 0 && flops > 0 ? flops / rate : 0;
  // A kernel bound by its bytes (decode attention reading the KV cache)
  // streams them after a fixed start-up, where the profile has it measured
  // (docs/hardware.md, "Measured on a GPU"); a compute-bound one (prefill,
  // training) is not changed by it.
  const double t_bytes = hbm > 0 && bytes > 0 ? bytes / hbm + hw.attention_startup_micros * 1e-6 : 0;
  return std::max(t_flops, t_bytes) * 1e6;
}

double memory_micros(const HardwareProfile& hw, double flops, double bytes) {
  // Element-wise math runs on the non-tensor FP32 units.
  const double rate = hw.peak_flops_fp32 * hw.compute_efficiency;
  const double hbm = hw.mem_bandwidth * hw.hbm_efficiency * hw.memory_efficiency;
  const double t_flops = rate > 0 && flops > 0 ? flops / rate : 0;
  const double t_bytes = hbm > 0 && bytes > 0 ? bytes / hbm : 0;
  return std::max(t_flops, t_bytes) * 1e6;
}

// Attention by shape. A fused attention kernel runs a tile of queries
// against the keys block by block; each tile pays a fixed prologue and
// epilogue (Q load, softmax rescale, output write), so its rate rises with
// the keys a query visits as kv / (kv + knee). FlashAttention-3's forward
// on H100 (BF16, non-causal, batch x seq = 16k; kernel-efficiency.md §2.2)
// fits this with one knee per head dim: head dim 128, 430 and 621 TFLOP/s
// at 512 and 16k keys give knee = 238 (and 511, 564, 595, 612 TFLOP/s at
// 1k-8k against the measured 517, 566, 590, 614); head dim 256, 286 and
// 642 at 512 and 16k give knee = 685 (within 7% at 1k-8k). Between 128 and
// 256 the knee is interpolated on a log scale; below 128 it is 128's (no
// measurement) and the rate falls by attention_head_dim_factor; above 256,
// 256's. Triton's FA2 on the same H100 (329 and
// 477 TFLOP/s at 512 and 16k, head dim 128) gives the same knee (243),
// so the curve's shape serves every profile; its level stays the
// profile's attention_efficiency at the reference shape (4,096 keys
// visited: the 8k causal Llama 3 runs it was fitted on; docs/hardware.md).
//
// Below head dim 128 the rate per FLOP falls: a score costs its
// exponential and rescale whatever the head dim, while its matmul FLOPs
// scale with it (FlashAttention-3's "exp bottleneck"), so the rate goes as
// d / (d + c) relative to 128's. c is fitted on this project's own H100
// measurements of cuDNN's Hopper kernels (FlashAttention-3 class), head dim
// 64 against 128 at the same shape, 2K-32K tokens, causal and not
// (docs/kernel-measurements.md; attention_shape_test holds the model within
// 10% of each of those 20 records; at 512 and 1K tokens it misses by up to
// 15%):
// forward 0.67-0.76 of 128's rate (c = 72: 0.735), backward 0.78-0.85
// (c = 36: 0.82).
double attention_head_dim_factor(double head_dim, bool backward) {
  const double c = backward ? kAttentionHeadDimCostBwd : kAttentionHeadDimCostFwd;
  if (!(head_dim > 0) || head_dim >= 128) return 1;
  return (head_dim / (head_dim + c)) / (128.0 / (128.0 + c));
}

double attention_shape_factor(const HardwareProfile& hw, double kv, double head_dim, bool backward) {
  constexpr double kKnee128 = 238, kKnee256 = 685, kRefKeys = 4096;
  if (!(kv > 0)) return 1;
  const double d = std::clamp(head_dim, 128.0, 256.0);
  const double knee = kKnee128 * std::pow(kKnee256 / kKnee128, std::log2(d / 128.0));
  const double ref = kRefKeys / (kRefKeys + kKnee128);
  const double f = kv / (kv + knee) / ref * attention_head_dim_factor(head_dim, backward);
  const double eff = backward ? hw.attention_bwd_efficiency : hw.attention_efficiency;
  return eff > 0 ? std::min(f, 1.0 / eff) : f;
}

// Attention kernels' tiles (FlashAttention-3's Hopper kernels, BF16:
// hopper/tile_size.h tile_size_fwd_sm90 and flash_bwd_launch_template.h;
// docs/hardware.md "Attention by shape"). The forward gives a CTA a tile of
// kBlockM query rows of one (sequence, head) and loops over the keys: 192
// rows at head dim <= 96, 128 above. The backward gives a CTA a tile of
// kBlockN key rows and loops over the queries: 128 keys up to head dim 128,
// 96 at 192, 80 at 256. One CTA per SM (their shared memory is sized to the
// SM's: "128 x 80 hits the limit of smem").
double attention_fwd_query_tile(double head_dim) { return head_dim <= 96 ? 192 : 128; }
double attention_bwd_key_tile(double head_dim) { return head_dim <= 128 ? 128 : head_dim <= 192 ? 96 : 80; }

double attention_occupancy(const HardwareProfile& hw, const AttentionLaunch& l, double head_dim, bool backward) {
  if (hw.sm_count <= 0 || !(l.pairs > 0) || !(l.queries > 0) || !(l.keys > 0) || !(l.kv > 0)) return 1;
  // Tiles, the work (rows of the inner loop) of an average and of the
  // longest tile. Forward: query tiles, each row visiting kv keys on
  // average and kv_max at most. Backward: key tiles, each key row seen by
  // queries x kv / keys query rows on average and by all `queries` at most
  // (the first key of a causal block is seen by every query).
  const double tile = backward ? attention_bwd_key_tile(head_dim) : attention_fwd_query_tile(head_dim);
  const double rows = backward ? l.keys : l.queries;
  const double avg = backward ? l.queries * l.kv / l.keys : l.kv;
  const double longest = backward ? l.queries : std::max(l.kv, l.kv_max);
  const double tiles = l.pairs * std::ceil(rows / tile);
  const double waves = std::ceil(tiles / hw.sm_count);
  // The kernel lasts its waves of average tiles, or its longest tile when
  // that is longer (one partial wave of a causal block); the SMs are busy
  // for the tiles' total work of that time.
  const double span = std::max(waves * avg, std::max(avg, longest));
  return tiles * avg / (hw.sm_count * span);
}

double attention_launch_factor(const HardwareProfile& hw, const AttentionLaunch& l, double head_dim, bool backward) {
  if (!(l.kv > 0)) return 1;
  // The reference launch the profile's efficiencies were measured at:
  // FlashAttention-3's benchmark (batch x sequence = 16k, 16 heads of 128,
  // non-causal): 2,048 tiles both ways, 0.97 of a full machine on an H100.
  AttentionLaunch ref;
  ref.pairs = 16;
  ref.queries = ref.keys = ref.kv = ref.kv_max = 16384;
  const double occ = attention_occupancy(hw, l, head_dim, backward) / attention_occupancy(hw, ref, 128, backward);
  // The inner loop: keys per query row forward, query rows per key row
  // backward (equal for a square block; a short query block's backward
  // loops over few queries).
  const double inner = backward && l.keys > 0 && l.queries > 0 ? l.queries * l.kv / l.keys : l.kv;
  double f = attention_shape_factor(hw, inner, head_dim, backward) * occ;
  // Under a causal mask (rows visiting different numbers of keys) each tile
  // computes the square block its diagonal crosses whole and masks half of
  // it: tile / 2 wasted keys (forward) or queries (backward) per row beside
  // the `inner` the FLOPs count. The reference shape is causal (4,096 keys
  // visited, 128-row tiles: 64 wasted), so the profile's constants keep
  // their meaning there and a non-causal kernel runs 1.6% faster.
  constexpr double kRefInner = 4096, kRefWaste = 64;
  const double tile = backward ? attention_bwd_key_tile(head_dim) : attention_fwd_query_tile(head_dim);
  const double waste = l.kv_max > l.kv ? tile / 2 : 0;
  f *= (inner / (inner + waste)) / (kRefInner / (kRefInner + kRefWaste));
  const double eff = backward ? hw.attention_bwd_efficiency : hw.attention_efficiency;
  return eff > 0 ? std::min(f, 1.0 / eff) : f;
}

FusionPlan plan_fusion(const Graph& g) {
  FusionPlan p;
  const size_t n = g.ops.size();
  p.head.resize(n);
  p.members.resize(n);
  p.on_chip.resize(n);
  for (size_t i = 0; i < n; ++i) p.head[i] = static_cast<int>(i);
  // Readers of each tensor that are not derivative ops: a backward op that
  // reads a fused intermediate is taken to recompute it from the kernel's
  // input (what Megatron's bias_gelu backward does), at the same bytes.
  std::map<int, std::vector<int>> readers;
  for (int id : g.order)
    if (g.ops[id].fwd_op < 0)
      for (int t : g.ops[id].inputs) readers[t].push_back(id);
  for (int id : g.order) {
    const Op& b = g.ops[id];
    if (!pointwise(b) || b.fwd_op >= 0) continue;
    // Join the kernel of the first input's producer that fuses with b (the
    // residual add reads the residual first, the dropout output second).
    for (int x : b.inputs) {
      const int prod = g.tensors[x].producer;
      if (prod < 0) continue;
      const Op& a = g.ops[prod];
      if (!pointwise(a) || a.fwd_op >= 0 || a.phase != b.phase || a.chunk != b.chunk || !fuses(a, b)) continue;
      if (a.outputs.empty() || a.outputs[0] != x) continue;
      const auto& r = readers[x];
      if (r.size() != 1 || r[0] != id) continue;
      p.head[id] = p.head[prod];
      p.on_chip[prod].push_back(x);
      p.on_chip[id].push_back(x);
      break;
    }
  }
  for (int id : g.order) p.members[p.head[id]].push_back(id);
  return p;
}

}  // namespace sc
