// The plan's default memory reserve, derived per GPU profile from its
// parts (docs/plan.md, "The memory reserve"); each figure below is the
// source's, added by hand.
#include <doctest/doctest.h>

#include "api/plan.h"
#include "hw/hardware.h"
#include "job/job.h"
#include "plan/memory_reserve.h"
#include "plan/plan.h"

using namespace sc;

TEST_CASE("memory reserve: the parts of each GPU profile, by hand") {
  // NCCL (src/init.cc defaults): per connection Simple 4 MiB = 4,194,304 B,
  // LL128 120*640*8*8 = 4,915,200 B, LL 8*512*8*16 = 524,288 B: 9,633,792 B;
  // 32 channels x 4 communicators: 1,233,125,376 B on every profile.
  const int64_t nccl = 4 * 32 * (4194304 + 4915200 + 524288);
  CHECK(nccl == 1233125376);
  // Hopper (h100, h200) and Blackwell (b200): PyTorch's sm90 cuBLAS
  // workspace 32 MiB = 33,554,432 B, Transformer Engine's 32 MiB + 1 KiB =
  // 33,555,456 B for its own GEMMs and three more for userbuffers' streams.
  for (const char* name : {"h100", "h200", "b200"}) {
    INFO(name);
    const HardwareProfile hw = hardware_preset(name).value();
    const MemoryReserve r = default_memory_reserve(hw);
    CHECK(r.cuda_context == 536870912);  // 512 MiB
    CHECK(r.cublas_workspaces == 33554432 + 4 * 33555456);
    CHECK(r.nccl_buffers == nccl);
    CHECK(r.total() == 536870912 + 167776256 + 1233125376);  // 1,937,772,544 B = 1.80 GiB
  }
  // A100: PyTorch ":4096:2:16:8" = 2 x 4 MiB + 8 x 16 KiB = 8,519,680 B;
  // Transformer Engine 4 MiB (4 x 4,194,304 B).
  const MemoryReserve a = default_memory_reserve(hardware_preset("a100").value());
  CHECK(a.cublas_workspaces == 8519680 + 4 * 4194304);
  CHECK(a.total() == 536870912 + 25296896 + 1233125376);
}

TEST_CASE("memory reserve: the plan's usable memory is the H100's less the derived reserve; overrides stay") {
  Result<Job> j = parse_job(R"({"model": {"preset": "llama3-8b", "num_layers": 2},
      "training": {"seq_len": 1024, "global_batch_size": 8}, "hardware": "h100"})");
  REQUIRE_MESSAGE(j.ok(), j.error().to_string());
  PlanOptions o;
  o.gpus = 8;
  o.constraints = parse_plan_constraints(nlohmann::json{{"max_mbs", 1}, {"max_cp", 1}, {"top", 1}}).value();
  Result<PlanResult> r = plan(*j, o);
  REQUIRE_MESSAGE(r.ok(), r.error().to_string());
  // 85,017,493,504 B (what CUDA reports on an H100 80GB) - 1,937,772,544 B.
  CHECK(r->memory_capacity_bytes == 85017493504);
  CHECK(r->usable_memory_bytes == 83079720960);
  o.constraints.memory_reserve_fraction = 0.10;  // the former default, as an override
  r = plan(*j, o);
  REQUIRE(r.ok());
  CHECK(r->usable_memory_bytes == 85017493504 - 8501749350);
  o.constraints.memory_reserve_fraction.reset();
  o.constraints.memory_reserve_gib = 2.0;
  r = plan(*j, o);
  REQUIRE(r.ok());
  CHECK(r->usable_memory_bytes == 85017493504 - 2147483648);
}
