// Hardware profile used to give compute nodes a duration. Two models:
//  - "kernel" (default): per-operator kernel costs (core/cost/kernel_cost.h)
//    from the kernel constants below;
//  - "roofline": t = max(flops / (peak[dtype] * compute_efficiency),
//                        bytes / (mem_bw * memory_efficiency)).
// Units: FLOP/s, bytes/s, bytes, µs. Sources for each preset and the
// derivation of every kernel constant are in docs/hardware.md.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/status.h"
#include "graph/dtype.h"

namespace sc {

struct HardwareProfile {
  std::string name;
  double peak_flops_fp32 = 0;   // FLOP/s, dense, non-tensor-core FP32
  double peak_flops_tf32 = 0;   // FLOP/s, dense tensor-core TF32
  double peak_flops_bf16 = 0;   // FLOP/s, dense tensor-core BF16/FP16
  double peak_flops_fp8 = 0;    // FLOP/s, dense FP8 (0: not supported)
  double peak_flops_fp4 = 0;    // FLOP/s, dense FP4 (NVFP4/MXFP4; 0: not supported)
  double mem_bandwidth = 0;     // bytes/s, HBM
  double memory_bytes = 0;      // bytes of device memory (capacity)
  double intra_node_bw = 0;     // bytes/s per GPU, NVLink (one direction)
  double inter_node_bw = 0;     // bytes/s per GPU, network (one direction)
  int gpus_per_node = 8;
  double compute_efficiency = 1.0;  // roofline: fraction of peak; kernel: scales its compute rates [0.01, 1]
  double memory_efficiency = 1.0;   // roofline: fraction of bandwidth; kernel: scales hbm_efficiency [0.01, 1]

  enum class CostModel { kKernel, kRoofline };
  CostModel cost_model = CostModel::kKernel;
  // Kernel-model constants (docs/hardware.md#kernel-cost-model).
  int sm_count = 0;                   // SMs (datasheet); 0: no wave quantisation
  double gemm_efficiency = 0.80;      // fraction of tensor peak of a large, well-shaped GEMM
  double attention_efficiency = 0.70; // fraction of tensor peak of fused (flash) attention, forward
  double attention_bwd_efficiency = 0.70;  // the same for its backward kernel (dQ, dK, dV)
  double hbm_efficiency = 0.90;       // fraction of HBM bandwidth a memory-bound kernel reaches
  double kernel_floor_micros = 2.4;   // shortest kernel (launch floor), µs
  // Measured on one GPU of the kind (docs/hardware.md, "Measured on a GPU";
  // tools/gpu/measure_kernels.py, tests/fidelity/gpu/); 0: not measured,
  // the rule after each field applies.
  double fp8_gemm_speedup = 0;        // FP8 GEMM rate / BF16 GEMM rate, same shape (0: peak_flops_fp8 / peak_flops_bf16)
  double skinny_hbm_efficiency = 0;   // fraction of HBM bandwidth a skinny (decode) GEMM streams its weight at (0: hbm_efficiency)
  double skinny_gemm_micros = 0;      // a skinny GEMM's fixed start-up, µs, added to its streaming time (0: none)
  double attention_startup_micros = 0;  // a fused attention kernel's fixed start-up, µs, added to its bytes' time (0: none)
  double ssd_scan_hbm_efficiency = 0;   // fraction of HBM bandwidth mamba_ssm's chunked Mamba-2 scan kernels reach over their bytes (0: the generic model times the scan)
  // Fitted on published FP8 training runs (docs/hardware.md, "FP8 GEMMs in
  // training iterations"): the share of the FP8 GEMM rate above (measured
  // on isolated GEMMs) a training job's FP8 GEMMs reach in whole
  // iterations; it scales gemm_efficiency for them. 1: the isolated rate.
  double fp8_training_gemm_efficiency = 1;
  // Fitted on published training runs (docs/hardware.md, "Expert exchanges
  // across nodes"): the fraction of the network rate a job's
  // expert-parallel exchange (its dispatch and combine; training and, since
  // session 15, serving) reaches on the part it sends across nodes; 1: the
  // NCCL rate every collective gets.
  double ep_scale_out_efficiency = 1;
  // Derived from a published profile (docs/hardware.md, "The host"): the
  // device's idle time, µs, at each device-to-host sync of a dropless MoE
  // token dispatcher (training, ep > 1): from the sync until the host,
  // done with the dispatch's preprocessing, issues its next kernel.
  // simulate runs a host timeline with it (docs/simulate.md, "The host");
  // 0: none.
  double host_sync_micros = 0;
  // Derived from a published profile (docs/hardware.md, "The dispatcher
  // beside compute"): the share of its own speed at which a training job's
  // DeepEP dispatch or combine (its RDMA and NVLink legs) progresses while a
  // compute kernel runs on the same GPU (the EP all-to-all overlap, the
  // shared experts' stream): the GEMMs keep the SMs and the exchange waits
  // for them. 1: as fast as alone.
  double dispatcher_overlap_rate = 1;
  // The host's time to issue one node of a training step, µs (Python,
  // PyTorch, the launch): the host issues a rank's nodes one after another,
  // each at least this long after the previous, and no node starts before
  // its issue (docs/simulate.md, "The host"). An input, 0 on every preset:
  // with it the device waits wherever its kernels are shorter than their
  // issue. Serving jobs keep their own host costs (docs/inference.md).
  double host_launch_micros = 0;

  double peak_for(DType dt) const;  // FLOP/s for GEMMs in that dtype
};

std::vector<std::string> hardware_names();
Result<HardwareProfile> hardware_preset(const std::string& name,
                                        const std::string& path = "hardware");

// Roofline time in microseconds of one compute op; never returns 0 for a
// node with work (minimum 1 µs resolution is applied by the caller).
double roofline_micros(const HardwareProfile& hw, DType dt, double flops, double bytes);

const char* cost_model_name(HardwareProfile::CostModel m);  // "kernel", "roofline"

}  // namespace sc
