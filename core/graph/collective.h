// Collective kinds: the graph's communication ops (inserted by sharding
// propagation) and the traces' collective nodes share this vocabulary.
// Values are Chakra's CollectiveCommType (only those the simulator supports).
#pragma once

namespace sc {

enum class CollectiveType : int {
  kAllReduce = 0,
  kAllGather = 2,
  kAllToAll = 6,
  kReduceScatter = 7,
};
const char* collective_name(CollectiveType t);  // "all_reduce", ...

}  // namespace sc
