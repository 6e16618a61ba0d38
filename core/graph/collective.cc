#include "graph/collective.h"

namespace sc {

// Lower-case names used in node names, logs and summaries; the Chakra enum
// spelling ("ALL_REDUCE") lives in emit/ where the schema is known.
const char* collective_name(CollectiveType t) {
  switch (t) {
    case CollectiveType::kAllReduce: return "all_reduce";
    case CollectiveType::kAllGather: return "all_gather";
    case CollectiveType::kAllToAll: return "all_to_all";
    case CollectiveType::kReduceScatter: return "reduce_scatter";
  }
  return "unknown";
}

}  // namespace sc
