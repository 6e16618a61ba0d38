// The Mamba-2 scan's kernels (core/cost/ssd_cost.h, docs/hardware.md
// "Mamba-2 scan kernels"): each Triton kernel's FLOPs and bytes counted by
// hand from the tensors it reads and writes, the forward's FLOPs against
// the SSD algorithm's total, the time per kernel against the H100 and H200
// measurements, and the trace's ssd nodes in a training job on a measured
// profile and on one without the measurement (the generic model, which a
// serving step's scan also keeps: docs/hardware.md).
#include <doctest/doctest.h>

#include <cmath>
#include <map>
#include <string>

#include "api/api.h"
#include "cost/ssd_cost.h"
#include "job/job.h"

using namespace sc;

namespace {

double total_flops(const std::vector<SsdKernel>& ks) {
  double f = 0;
  for (const SsdKernel& k : ks) f += k.flops;
  return f;
}

const SsdKernel& kernel(const std::vector<SsdKernel>& ks, const std::string& name) {
  for (const SsdKernel& k : ks)
    if (k.name == name) return k;
  FAIL("no kernel " << name);
  return ks[0];
}

// One sequence of `len` tokens, `heads` heads of `head_dim`, `groups` B/C
// groups, state `state`, chunk 128, BF16.
SsdShape shape(double len, double heads, double head_dim, double groups, double state) {
  SsdShape s;
  s.len = len;
  s.heads = heads;
  s.head_dim = head_dim;
  s.groups = groups;
  s.state = state;
  return s;
}

// Nemotron-H 56B's scan on one rank of tp 8, one 8,192-token sequence:
// 256 / 8 = 32 heads of 64, 8 / 8 = 1 group, state 256, chunk 128.
SsdShape nemotron_h_56b_tp8() { return shape(8192, 32, 64, 1, 256); }

std::map<std::string, TraceNode> nodes_by_name(const RankTrace& t) {
  std::map<std::string, TraceNode> m;
  for (const TraceNode& n : t.nodes) m[n.name] = n;
  return m;
}

}  // namespace

TEST_CASE("ssd cost: the forward's five kernels and their bytes, by hand") {
  // 1 sequence of 256 tokens, 2 heads of 4, 1 group, state 8, chunk 128, BF16:
  // T = 256, 2 chunks; x: 256 x 2 x 4 = 2,048 elements; B or C: 256 x 8 =
  // 2,048; states: 2 chunks x 2 heads x 4 x 8 = 128; CB: 2 x 128^2 = 32,768;
  // dt / dA_cumsum: 256 x 2 = 512.
  const SsdShape s = shape(256, 2, 4, 1, 8);
  const auto fwd = ssd_kernels(s, false);
  REQUIRE(fwd.size() == 5);
  CHECK(fwd[0].name == "chunk_cumsum");
  CHECK(fwd[4].name == "chunk_scan");
  // chunk_cumsum: dt in at 2 B (1,024), dt and dA_cumsum out at 4 B (4,096).
  CHECK(kernel(fwd, "chunk_cumsum").bytes == 1024 + 4096);
  // chunk_state: x (4,096 B) and B (4,096) in, dt and dA_cumsum (4,096) in,
  // the states out in FP32 (512); 2 x 256 x 2 x 4 x 8 = 32,768 FLOPs.
  CHECK(kernel(fwd, "chunk_state").bytes == 4096 + 4096 + 4096 + 512);
  CHECK(kernel(fwd, "chunk_state").flops == 32768);
  // state_passing: FP32 states in (512), BF16 out (256).
  CHECK(kernel(fwd, "state_passing").bytes == 768);
  CHECK(kernel(fwd, "state_passing").flops == 0);
  // bmm_chunk: C and B in (8,192), CB out in FP32 (131,072);
  // 2 chunks x 2 x 128^2 x 8 = 524,288 FLOPs.
  CHECK(kernel(fwd, "bmm_chunk").bytes == 8192 + 131072);
  CHECK(kernel(fwd, "bmm_chunk").flops == 524288);
  // chunk_scan: CB (131,072), x (4,096), z (4,096: Megatron's path gates
  // inside the scan), C (4,096), states at 2 B (256), dt and dA_cumsum
  // (4,096) in, out and out_x (4,096 each); the causal half of the
  // chunk's (CB)(x): 256 x 2 x 4 x 128 = 262,144, plus C states 32,768.
  CHECK(kernel(fwd, "chunk_scan").bytes == 131072 + 4096 + 4096 + 4096 + 256 + 4096 + 4096 + 4096);
  CHECK(kernel(fwd, "chunk_scan").flops == 262144 + 32768);
}

TEST_CASE("ssd cost: the forward's FLOPs are the SSD algorithm's; the backward's fourteen kernels") {
  // Dao & Gu 2024 (arXiv 2405.21060) section 6: per chunk, the state from
  // the inputs and the output from the states are each 2 Q H P N, the
  // diagonal block (C B^T per group, masked, times x per head) 2 Q^2 G N +
  // the causal half of 2 Q^2 H P. Over T / Q chunks:
  // 4 T H P N + 2 T G Q N + T H P Q.
  const SsdShape s = nemotron_h_56b_tp8();
  const double t = 8192, h = 32, p = 64, g = 1, n = 256, q = 128;
  CHECK(total_flops(ssd_kernels(s, false)) == doctest::Approx(4 * t * h * p * n + 2 * t * g * q * n + t * h * p * q));
  // The backward (mamba_ssm's _mamba_chunk_scan_combined_bwd): the
  // recomputed cumsum, CB, chunk states and state passing, then dz (the
  // gate's), dstates, their passing back, dx (with ddt), dB, dC, dCB, the
  // two CB products into dB and dC, and ddA.
  const auto bwd = ssd_kernels(s, true);
  CHECK(bwd.size() == 14);
  // dz: x, z, out_x, dout in, dz and the ungated dout out, 2 B each:
  // 6 x 2 x 8,192 x 32 x 64 B.
  CHECK(kernel(bwd, "chunk_scan_bwd_dz").bytes == doctest::Approx(12.0 * 8192 * 32 * 64));
  // Its matmuls: the recomputed chunk states (2 T H P N) and CB (2 T G Q N),
  // dstates, dB, dC (2 T H P N each), dx (2 T H P N + T H P Q), dCB and
  // ddA (T H P Q each), the two CB backward products (2 T G Q N each).
  CHECK(total_flops(bwd) == doctest::Approx(10 * t * h * p * n + 3 * t * h * p * q + 6 * t * g * q * n));
  // state_passing_bwd moves the most: FP32 dstates and states in (2 x 4 B x
  // 64 chunks x 32 x 64 x 256), both out at 2 B: 12 B per state element.
  CHECK(kernel(bwd, "state_passing_bwd").bytes == doctest::Approx(12.0 * 64 * 32 * 64 * 256));
}

TEST_CASE("ssd cost: each kernel its FLOPs or its bytes, whichever is longer, at least the floor") {
  HardwareProfile hw = *hardware_preset("h100");
  // The h100's measured share of HBM for these kernels (docs/hardware.md,
  // "Mamba-2 scan kernels"), and its measured small-kernel floor.
  REQUIRE(hw.ssd_scan_hbm_efficiency == 0.60);
  REQUIRE(hw.kernel_floor_micros == 3.5);
  const SsdShape s = nemotron_h_56b_tp8();
  // chunk_state: x 2 x 16,777,216 B, B 2 x 2,097,152, dt and dA_cumsum
  // 8 x 262,144, states 4 x 33,554,432: 174,063,616 B at 3,350 GB/s x 0.60
  // = 86.6 µs; its 8.59 GFLOP at 989.5 TFLOP/s x 0.75 = 11.6 µs: the
  // bytes. chunk_scan: CB 4 x 1,048,576, x and z 2 x 2 x 16,777,216, C
  // 2 x 2,097,152, states 2 x 33,554,432, dt and dA_cumsum 8 x 262,144,
  // out and out_x 2 x 2 x 16,777,216 = 211,812,352 B. state_passing:
  // 6 x 33,554,432 = 201,326,592 B; bmm_chunk: 4 x 2,097,152 + 4 x
  // 1,048,576 x 2 = 12,582,912 B; chunk_cumsum 3.5 µs (the floor).
  const double hbm = 3350e9 * 0.60;
  const auto fwd = ssd_kernels(s, false);
  CHECK(kernel(fwd, "chunk_state").bytes == 174063616.0);
  CHECK(kernel(fwd, "chunk_scan").bytes == 211812352.0);
  double expect = 0;
  for (const SsdKernel& k : fwd)
    expect += std::max(3.5, std::max(k.flops / (989.5e12 * 0.75), k.bytes / hbm) * 1e6);
  CHECK(ssd_micros(hw, s, false) == doctest::Approx(expect));
  CHECK(ssd_micros(hw, s, false) == doctest::Approx(3.5 + 174063616.0 / hbm * 1e6 + 201326592.0 / hbm * 1e6 +
                                                    12582912.0 / hbm * 1e6 + 211812352.0 / hbm * 1e6));
  // A tiny scan is its launches: 5 floors forward, 14 backward.
  const SsdShape tiny = shape(128, 1, 8, 1, 8);
  CHECK(ssd_micros(hw, tiny, false) == doctest::Approx(5 * 3.5));
  CHECK(ssd_micros(hw, tiny, true) == doctest::Approx(14 * 3.5));
  // Compute-bound when the tensor cores are slow enough: at
  // compute_efficiency 0.01, chunk_scan's 10.74 GFLOP take
  // 10.74e9 / (989.5e12 x 0.75 x 0.01) = 1,447 µs, far above its bytes.
  hw.compute_efficiency = 0.01;
  const double scan = kernel(fwd, "chunk_scan").flops / (989.5e12 * 0.75 * 0.01) * 1e6;
  CHECK(scan == doctest::Approx(1447.4).epsilon(0.001));
  CHECK(ssd_micros(hw, s, false) > scan);
}

TEST_CASE("ssd cost: against the scan kernels measured on the lent H100 and H200") {
  // tests/bench/gpu/results/h100-sxm-2026-11-27-ssd-scan.json and
  // h200-2026-11-27-ssd-scan.json (ssd_scan_probe.py; torch.profiler's
  // device time of mamba_ssm's Triton kernels, one forward + backward).
  // Nemotron-H 56B at tp 8 (the fit shape): forward 2.8 + 84.6 + 85.6 + 7.0
  // + 125.1 = 305 µs on the H100, backward 892 µs; H200 267 and 767 µs.
  const SsdShape fit = nemotron_h_56b_tp8();
  const HardwareProfile h100 = *hardware_preset("h100"), h200 = *hardware_preset("h200");
  CHECK(ssd_micros(h100, fit, false) + ssd_micros(h100, fit, true) == doctest::Approx(305.0 + 892.0).epsilon(0.02));
  CHECK(ssd_micros(h200, fit, false) + ssd_micros(h200, fit, true) == doctest::Approx(267.0 + 767.0).epsilon(0.02));
  // Checked, not fitted: Nemotron-H 8B's mixer whole on one GPU (128 heads
  // of 64, 8 groups, state 128, 8,192 tokens): measured 779 + 2,371 µs on
  // the H100 and 681 + 2,022 on the H200; the Mamba-2 paper's 2.7B shape
  // (80 heads of 64, 1 group, state 128, 4,096 tokens): 251 + 756 and
  // 224 + 653 µs. Within 6% each.
  const SsdShape h8 = shape(8192, 128, 64, 8, 128), m27 = shape(4096, 80, 64, 1, 128);
  CHECK(ssd_micros(h100, h8, false) + ssd_micros(h100, h8, true) == doctest::Approx(779.0 + 2371.0).epsilon(0.06));
  CHECK(ssd_micros(h200, h8, false) + ssd_micros(h200, h8, true) == doctest::Approx(681.0 + 2022.0).epsilon(0.06));
  CHECK(ssd_micros(h100, m27, false) + ssd_micros(h100, m27, true) == doctest::Approx(251.0 + 756.0).epsilon(0.06));
  CHECK(ssd_micros(h200, m27, false) + ssd_micros(h200, m27, true) == doctest::Approx(224.0 + 653.0).epsilon(0.06));
}

TEST_CASE("ssd cost: a training job's scan nodes take the kernels' time") {
  // Nemotron-H 8B's mixer (128 heads of 64, 8 groups, state 128) on tp 2,
  // one sequence of 1,024 tokens: 64 heads and 4 groups per rank.
  Result<Job> j = parse_job(R"({"model": {"preset": "nemotron-h-8b", "num_layers": 2, "hybrid_pattern": "M-"},
      "parallel": {"tp": 2}, "training": {"seq_len": 1024, "micro_batch_size": 1, "global_batch_size": 1},
      "hardware": "h100"})");
  REQUIRE(j.ok());
  Result<Generator> gen = Generator::create(*j);
  REQUIRE(gen.ok());
  auto nodes = nodes_by_name(gen->rank_trace(0).value());
  const SsdShape s = shape(1024, 64, 64, 4, 128);
  const HardwareProfile hw = *hardware_preset("h100");
  REQUIRE(nodes.count("mb0.fwd.L0.mamba.ssd"));
  REQUIRE(nodes.count("mb0.bwd.L0.mamba.ssd.bwd"));
  CHECK(nodes["mb0.fwd.L0.mamba.ssd"].duration_micros == static_cast<uint64_t>(std::llround(ssd_micros(hw, s, false))));
  CHECK(nodes["mb0.bwd.L0.mamba.ssd.bwd"].duration_micros ==
        static_cast<uint64_t>(std::llround(ssd_micros(hw, s, true))));
}

TEST_CASE("ssd cost: only a measured profile times the scan by its kernels; the key's canonical form and errors") {
  const std::string mamba = R"({"model": {"preset": "nemotron-h-8b", "num_layers": 2, "hybrid_pattern": "M-"},
      "parallel": {"tp": 2}, "training": {"seq_len": 1024, "micro_batch_size": 1, "global_batch_size": 1},
      "hardware": "HW"})";
  auto with_hw = [&](const std::string& hw) {
    std::string s = mamba;
    s.replace(s.find("HW"), 2, hw);
    return s;
  };
  // The a100 has no measurement: its scan nodes keep the generic model,
  // the builder's 7 x tokens x d_inner x state FLOPs at the FP32 peak:
  // 7 x 1,024 x (64 x 64) x 128 = 3.758 GFLOP at 19.5 TFLOP/s = 192.7 µs
  // (its bytes, about 19 MB at 0.90 x 2,039 GB/s, take 10 µs).
  Result<Job> a = parse_job(with_hw("a100"));
  REQUIRE(a.ok());
  CHECK(a->hardware.ssd_scan_hbm_efficiency == 0);
  CHECK(job_to_canonical_json(*a).find("ssd_scan_hbm_efficiency") == std::string::npos);
  Result<Job> h = parse_job(with_hw("h100"));
  REQUIRE(h.ok());
  CHECK(job_to_canonical_json(*h).find("\"ssd_scan_hbm_efficiency\": 0.6") != std::string::npos);
  Result<Generator> ga = Generator::create(*a);
  REQUIRE(ga.ok());
  auto nodes = nodes_by_name(ga->rank_trace(0).value());
  REQUIRE(nodes.count("mb0.fwd.L0.mamba.ssd"));
  const SsdShape s = shape(1024, 64, 64, 4, 128);
  CHECK(nodes["mb0.fwd.L0.mamba.ssd"].duration_micros == static_cast<uint64_t>(std::llround(7.0 * 1024 * 4096 * 128 / 19.5e12 * 1e6)));
  // With the h100's measured share put on the a100 it would be the kernels'.
  HardwareProfile hw = a->hardware;
  hw.ssd_scan_hbm_efficiency = 0.60;
  CHECK(nodes["mb0.fwd.L0.mamba.ssd"].duration_micros != static_cast<uint64_t>(std::llround(ssd_micros(hw, s, false))));
  // A dense job on the h100 does not carry the key (its hash is unchanged).
  Result<Job> dense = parse_job(R"({"model": "llama3-8b", "training": {"seq_len": 1024, "micro_batch_size": 1,
      "global_batch_size": 1}, "hardware": "h100"})");
  REQUIRE(dense.ok());
  CHECK(job_to_canonical_json(*dense).find("ssd_scan_hbm_efficiency") == std::string::npos);
  // A value out of range is refused, naming the field and the value.
  Result<Job> bad = parse_job(R"({"model": "llama3-8b", "hardware": {"preset": "h100", "ssd_scan_hbm_efficiency": 1.5}})");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message.find("1.5") != std::string::npos);
  CHECK(bad.error().path == "hardware.ssd_scan_hbm_efficiency");
}
