// Hardware presets, peak_for and the roofline.
#include <doctest/doctest.h>

#include "api/api.h"
#include "hw/hardware.h"
#include "job/job.h"

using namespace sc;

TEST_CASE("hardware presets") {
  CHECK(hardware_names() == std::vector<std::string>{"a100", "b200", "h100", "h200", "h800"});
  for (const std::string& n : hardware_names()) {
    Result<HardwareProfile> hw = hardware_preset(n);
    REQUIRE(hw.ok());
    CHECK(hw->name == n);
    CHECK(hw->peak_flops_bf16 > hw->peak_flops_tf32);
    CHECK(hw->peak_flops_tf32 > hw->peak_flops_fp32);
    CHECK(hw->mem_bandwidth > 0);
    CHECK(hw->memory_bytes > 0);
    CHECK(hw->intra_node_bw > hw->inter_node_bw);
    CHECK(hw->compute_efficiency == 1.0);
    CHECK(hw->memory_efficiency == 1.0);
  }
  HardwareProfile h100 = *hardware_preset("h100");
  CHECK(h100.peak_flops_bf16 == doctest::Approx(989.5e12));
  CHECK(h100.peak_flops_fp8 == doctest::Approx(1979e12));
  CHECK(h100.mem_bandwidth == doctest::Approx(3.35e12));
  // Memory as CUDA reports it on the lent GPUs (docs/hardware.md).
  CHECK(h100.memory_bytes == 85017493504.0);
  CHECK(hardware_preset("h200")->memory_bytes == 150109880320.0);
  CHECK(hardware_preset("a100")->peak_flops_fp8 == 0);

  Result<HardwareProfile> bad = hardware_preset("v100", "hardware.preset");
  REQUIRE(!bad.ok());
  CHECK(bad.error().path == "hardware.preset");
  CHECK(bad.error().message.find("a100, b200, h100, h200, h800") != std::string::npos);
}

TEST_CASE("the h800 preset is the h100 with NVLink at 200 GB/s a direction") {
  // 400 GB/s total (NVIDIA's restricted-market part; DeepSeek-V3's cluster),
  // the H100's 900 GB/s total = 450 a direction; everything else the h100's.
  HardwareProfile h100 = *hardware_preset("h100"), h800 = *hardware_preset("h800");
  CHECK(h800.name == "h800");
  CHECK(h800.intra_node_bw == 200e9);
  CHECK(h100.intra_node_bw == 450e9);
  for (auto f : {&HardwareProfile::peak_flops_fp32, &HardwareProfile::peak_flops_tf32, &HardwareProfile::peak_flops_bf16,
                 &HardwareProfile::peak_flops_fp8, &HardwareProfile::peak_flops_fp4, &HardwareProfile::mem_bandwidth,
                 &HardwareProfile::memory_bytes, &HardwareProfile::inter_node_bw, &HardwareProfile::gemm_efficiency,
                 &HardwareProfile::attention_efficiency, &HardwareProfile::attention_bwd_efficiency,
                 &HardwareProfile::hbm_efficiency, &HardwareProfile::kernel_floor_micros,
                 &HardwareProfile::fp8_gemm_speedup, &HardwareProfile::skinny_hbm_efficiency,
                 &HardwareProfile::skinny_gemm_micros, &HardwareProfile::attention_startup_micros,
                 &HardwareProfile::ssd_scan_hbm_efficiency, &HardwareProfile::fp8_training_gemm_efficiency,
                 &HardwareProfile::ep_scale_out_efficiency, &HardwareProfile::host_sync_micros,
                 &HardwareProfile::dispatcher_overlap_rate, &HardwareProfile::host_launch_micros})
    CHECK(h800.*f == h100.*f);
  CHECK(h800.sm_count == h100.sm_count);
  CHECK(h800.gpus_per_node == h100.gpus_per_node);
}

TEST_CASE("peak_for maps dtypes; fp8 falls back to bf16 without fp8") {
  HardwareProfile a100 = *hardware_preset("a100");
  CHECK(a100.peak_for(DType::kBF16) == 312e12);
  CHECK(a100.peak_for(DType::kFP16) == 312e12);
  CHECK(a100.peak_for(DType::kFP8) == 312e12);
  CHECK(a100.peak_for(DType::kFP32) == 19.5e12);
  CHECK(a100.peak_for(DType::kTF32) == 156e12);
  HardwareProfile h100 = *hardware_preset("h100");
  CHECK(h100.peak_for(DType::kFP8) == 1979e12);
}

TEST_CASE("roofline: max of compute and memory time, in microseconds") {
  HardwareProfile hw;
  hw.peak_flops_bf16 = 1e12;
  hw.mem_bandwidth = 1e9;
  CHECK(roofline_micros(hw, DType::kBF16, 2e6, 1000) == doctest::Approx(2.0));  // compute-bound
  CHECK(roofline_micros(hw, DType::kBF16, 1e3, 5000) == doctest::Approx(5.0));  // memory-bound
  hw.compute_efficiency = 0.5;
  hw.memory_efficiency = 0.25;
  CHECK(roofline_micros(hw, DType::kBF16, 2e6, 1000) == doctest::Approx(4.0));
  CHECK(roofline_micros(hw, DType::kBF16, 1e3, 5000) == doctest::Approx(20.0));
  CHECK(roofline_micros(hw, DType::kBF16, 0, 0) == 0);

  HardwareProfile h100 = *hardware_preset("h100");
  // A 4096^3 bf16 GEMM: 2*4096^3 FLOPs, 3 matrices of 2-byte elements.
  double flops = 2.0 * 4096 * 4096 * 4096, bytes = 3.0 * 4096 * 4096 * 2;
  CHECK(roofline_micros(h100, DType::kBF16, flops, bytes) == doctest::Approx(flops / 989.5e12 * 1e6));
}

// Issue 13 item 8: an efficiency of 1e-100 used to be accepted and every
// duration overflowed llround into 1 µs, so a slower GPU looked faster.
TEST_CASE("hardware rates and efficiencies are bounded; a slower device is never faster") {
  for (const char* field : {"compute_efficiency", "memory_efficiency"}) {
    std::string json = std::string(R"({"model": {"preset": "gpt3-1.7b", "num_layers": 1}, "hardware": {"preset": "a100", ")") +
                       field + R"(": 1e-100}})";
    Result<Job> j = parse_job(json);
    REQUIRE(!j.ok());
    CHECK(j.error().path == std::string("hardware.") + field);
    CHECK(j.error().message.find("1e-100") != std::string::npos);
  }
  Result<Job> tiny = parse_job(
      R"({"model": "gpt3-1.7b", "hardware": {"preset": "a100", "peak_flops_bf16": 1e-300}})");
  REQUIRE(!tiny.ok());
  CHECK(tiny.error().path == "hardware.peak_flops_bf16");
  Result<Job> fp8 = parse_job(R"({"model": "gpt3-1.7b", "hardware": {"preset": "a100", "peak_flops_fp8": 1e-300}})");
  REQUIRE(!fp8.ok());
  CHECK(fp8.error().path == "hardware.peak_flops_fp8");
  // The same job built programmatically is checked by validate_job too.
  Result<Job> prog = parse_job(R"({"model": {"preset": "gpt3-1.7b", "num_layers": 1}, "hardware": "a100"})");
  REQUIRE(prog.ok());
  Job bad = *prog;
  bad.hardware.compute_efficiency = 1e-100;
  Status st = validate_job(bad);
  REQUIRE(!st.ok());
  CHECK(st.error().path == "hardware.compute_efficiency");

  // At the lowest accepted efficiency every compute node is at least as
  // slow as at full efficiency (and no duration wraps).
  auto durations = [](double eff) {
    Result<Job> j = parse_job(R"({"model": {"preset": "gpt3-175b", "num_layers": 1}, "hardware": "a100",
                                  "training": {"seq_len": 2048}})");
    REQUIRE(j.ok());
    j->hardware.compute_efficiency = eff;
    j->hardware.memory_efficiency = eff;
    Result<Generator> g = Generator::create(*j);
    REQUIRE(g.ok());
    Result<RankTrace> t = g->rank_trace(0);
    REQUIRE(t.ok());
    std::vector<uint64_t> d;
    for (const TraceNode& n : t->nodes)
      if (n.kind == TraceNodeKind::kCompute) d.push_back(n.duration_micros);
    return d;
  };
  std::vector<uint64_t> fast = durations(1.0), slow = durations(0.01);
  REQUIRE(fast.size() == slow.size());
  for (size_t i = 0; i < fast.size(); ++i) {
    CHECK(slow[i] >= fast[i]);
    CHECK(slow[i] < (uint64_t{1} << 62));
  }
}
