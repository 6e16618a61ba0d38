// Hardware presets, peak_for and the roofline.
#include <doctest/doctest.h>

#include "hw/hardware.h"

using namespace sc;

TEST_CASE("hardware presets") {
  CHECK(hardware_names() == std::vector<std::string>{"a100", "b200", "h100", "h200"});
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
  CHECK(hardware_preset("h200")->memory_bytes == doctest::Approx(141e9));
  CHECK(hardware_preset("a100")->peak_flops_fp8 == 0);

  Result<HardwareProfile> bad = hardware_preset("v100", "hardware.preset");
  REQUIRE(!bad.ok());
  CHECK(bad.error().path == "hardware.preset");
  CHECK(bad.error().message.find("a100, b200, h100, h200") != std::string::npos);
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
