// Narayanan et al. 2021, Table 1 (docs/hardware.md#calibration-against-narayanan-et-al-2021-table-1):
// the kernel model's step-time estimate for the rows without pipelining
// (cheap to build) against the published throughput, and the full /
// selective recomputation ratio against Korthikanti et al. 2022.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "api/api.h"
#include "job/job.h"

using namespace sc;

namespace {

struct Row { const char* name; int64_t a, h, L, t, gpus, batch; double tflops; };

// The busiest stage's compute per iteration, and its tp / dp bytes.
struct Figures { double compute_s, tp_bytes, dp_bytes; };

Figures figures(const Row& r, const char* recompute, const char* cost_model = "kernel") {
  const int64_t dp = r.gpus / r.t;
  const std::string job =
      R"({"model": {"num_layers": )" + std::to_string(r.L) + R"(, "hidden": )" + std::to_string(r.h) +
      R"(, "num_heads": )" + std::to_string(r.a) + R"(, "vocab": 51200}, "parallel": {"tp": )" + std::to_string(r.t) +
      R"(, "dp": )" + std::to_string(dp) + R"(}, "training": {"seq_len": 2048, "micro_batch_size": 1,
      "global_batch_size": )" + std::to_string(r.batch) + R"(, "recompute": ")" + recompute +
      R"(", "dtype": "fp16", "grad_reduce_dtype": "fp16"}, "hardware": {"preset": "a100", "cost_model": ")" +
      cost_model + R"("}})";
  Result<Job> j = parse_job(job);
  REQUIRE(j.ok());
  Result<Generator> g = Generator::create(*j);
  REQUIRE(g.ok());
  auto s = nlohmann::json::parse(g->summary_json());
  const auto& st = s["stages"][0];
  const auto& axis = st["communication"]["per_rank_bytes_by_axis"];
  return {st["trace"]["compute_micros_per_rank"].get<double>() * 1e-6,
          axis.contains("tp") ? axis["tp"].get<double>() : 0.0, axis.contains("dp") ? axis["dp"].get<double>() : 0.0};
}

// Published seconds per iteration: 96 B s L h^2 (1 + s/6h + V/16Lh) / (GPUs x TFLOP/s).
double published(const Row& r) {
  const double s = 2048, V = 51200, h = static_cast<double>(r.h), L = static_cast<double>(r.L);
  return 96.0 * r.batch * s * L * h * h * (1 + s / (6 * h) + V / (16 * L * h)) / (r.gpus * r.tflops * 1e12);
}

// All-reduces at the measured bus bandwidths (8 x A100 NVSwitch 230 GB/s,
// HDR InfiniBand 24 GB/s per NIC), not overlapped; no pipeline here.
double estimate(const Row& r, const Figures& f) {
  const double t = static_cast<double>(r.t), dp = static_cast<double>(r.gpus / r.t);
  const double tp_s = r.t > 1 ? 2 * (t - 1) / t * f.tp_bytes / 230e9 : 0;
  const double dp_s = dp > 1 ? 2 * (dp - 1) / dp * f.dp_bytes / 24e9 : 0;
  return f.compute_s + tp_s + dp_s;
}

constexpr Row kRows[] = {{"1.7B", 24, 2304, 24, 1, 32, 512, 137}, {"3.6B", 32, 3072, 30, 2, 64, 512, 138},
                         {"7.5B", 32, 4096, 36, 4, 128, 512, 142}, {"18.4B", 48, 6144, 40, 8, 256, 1024, 135}};

}  // namespace

TEST_CASE("Table 1 (Narayanan et al. 2021): rows without pipelining within 10% under the kernel model") {
  for (const Row& r : kRows) {
    CAPTURE(r.name);
    const double est = estimate(r, figures(r, "full")), pub = published(r);
    CHECK(est / pub > 0.90);
    CHECK(est / pub < 1.10);
    // The peak roofline is the 17-22% too fast model issue 11 started from.
    const double roof = estimate(r, figures(r, "full", "roofline"));
    CHECK(roof / pub < 0.85);
  }
}

TEST_CASE("full / selective recomputation time near Korthikanti et al.'s 1.29-1.32") {
  const Row& r = kRows[3];  // 18.4B, tp 8
  const double ratio = figures(r, "full").compute_s / figures(r, "selective").compute_s;
  CHECK(ratio > 1.25);
  CHECK(ratio < 1.35);
}
