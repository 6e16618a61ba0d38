// Communicator groups: group-file key (>= 1) -> sorted global ranks. The
// rank layout (parallel/mesh.h) computes them; traces and the group file
// name them by key.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

namespace sc {

using GroupTable = std::map<int64_t, std::vector<int64_t>>;

}  // namespace sc
