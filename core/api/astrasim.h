// Ready-to-run ASTRA-sim 2.x inputs (analytical network backend) for an
// exported job, the astra-sim/ members of a bundle archive (api/export.h,
// docs/export.md):
// a network .yml whose dimensions multiply to the job's world size, with
// bandwidths from the hardware profile; a system .json; a remote-memory
// .json; and run.sh with the simulator's command line.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "hw/hardware.h"

namespace sc {

struct AstraSimFile {
  std::string name;  // path inside the archive, e.g. "astra-sim/network.yml"
  std::string text;
  int mode = 0644;
};

// Intra-node dimension (gpus_per_node GPUs, NVLink: intra_node_bw) and an
// inter-node dimension (world / gpus_per_node nodes: inter_node_bw). A
// world that fits one node has only the first dimension; a world that is
// not a multiple of gpus_per_node gets one switch dimension at the
// inter-node bandwidth.
std::vector<AstraSimFile> astra_sim_inputs(const HardwareProfile& hw, int64_t world_size, const std::string& prefix,
                                           bool partial);

}  // namespace sc
